#!/usr/bin/env python3
"""Plots from fa-bench results CSVs (matplotlib; scripts/setup.sh installs Debian's python3-matplotlib).

  scripts/plot.py RESULTS.csv [MORE.csv ...] [-o DIR] [--baseline PATH] [--ridge FLOP_PER_BYTE]
  scripts/plot.py FIT.csv [-o DIR]            (the fit data `fa-bench fit` writes)

Results files are fa-bench's and scripts/sdpa_baseline.py's (paths torch-*, fa2, aiter): one schema,
read once. Writes into DIR (default plots/):
  throughput.png  grouped bars, one group per problem, every path and peer (sdpa_baseline.py's, hatched) side by
                  side: a TFLOP/s panel for the compute-bound problems and a GB/s panel for the
                  memory-bound ones. A problem is classified once, by its arithmetic intensity
                  flops/bytes against the device's ridge point (peak FLOP/s / peak bytes/s from
                  harness/check/peaks.cpp's first datasheet row for the results' arch, else the H100 SXM's 989 TFLOP/s and
                  3350 GB/s: 295 FLOP/byte; --ridge overrides). A path's bar is its G=auto record,
                  else G=0, else its fastest G (the bar's label names any G it used).
  speedup.png     each path's time against the baseline path's, per problem (bars; > 1 is faster)
  splits.png      median time per G, over that curve's fastest G, for every (problem, path) timed at several G
  regret.png      from fit data: each rule's per-problem regret t(G_pick)/t(G_best) - 1, sorted
                  (fa2, aiter, and the model's k-fold and leave-one-family-out held-out picks)
Only records with a time and status pass are drawn; a plot with nothing to draw is not written.
"""
import argparse
import csv
import math
import os
import re
import sys
from collections import OrderedDict, defaultdict

import sdpa_baseline  # the peers' path names (beside this script; stdlib only at import)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEAKS_CPP = os.path.join(REPO, "harness", "check", "peaks.cpp")
# Where harness/check/peaks.cpp has no row for the results' arch (or is not beside this script): its sm_90
# row, the H100 SXM datasheet's dense bf16 TFLOP/s and HBM3 GB/s.
DEFAULT_PEAK = ("sm_90", "H100 SXM", 989.0, 3350.0)
PROBLEM_FIELDS = ("name", "B", "H", "Hk", "S", "Sk", "D", "causal", "dtype", "layout", "kv_cache", "scale")


def load(paths):
    """Each CSV read once: fit data (it has best_G) and results records, every status."""
    fits, records = [], []
    for p in paths:
        with open(p, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
        if "best_G" in (reader.fieldnames or []):
            fits += rows
        else:
            missing = [c for c in ("path", "status", "median_ms", "flops", "bytes") if c not in (reader.fieldnames or [])]
            if missing:
                raise SystemExit(f"{p}: not a fa-bench results file (no {', '.join(missing)} column)")
            records += rows
    return fits, records


def timed(records):
    return [r for r in records if r.get("median_ms") and r["status"] == "pass"]


def peaks_table(path=PEAKS_CPP):
    """harness/check/peaks.cpp's datasheet rows, arch -> (part, 16-bit TFLOP/s, GB/s): the one place the
    peaks are written. Each row is {arch, part, units, clock, TFLOP/s 16-bit, FP8, bus bits, memory
    clock, GB/s}; an arch with several SKUs takes its first row (the flagship: H100 SXM, MI300X)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return {}
    num = r",\s*([0-9.]+)"
    row = re.compile(r'\{\s*"([^"]+)",\s*"([^"]+)"' + num * 7 + r"\s*\}")
    table = {}
    for m in row.findall(text):
        table.setdefault(m[0], (m[1], float(m[4]), float(m[8])))
    return table


def ridge_point(records, ridge=None, table=None):
    """(FLOP per byte, what it comes from) for the device the records were measured on."""
    if ridge is not None:
        return ridge, f"--ridge {ridge:g}"
    archs = sorted({r["arch"].split(":")[0] for r in records if r.get("arch")})
    if len(archs) > 1:
        raise SystemExit(f"results from several archs ({', '.join(archs)}): plot one device at a time, or pass --ridge")
    table = peaks_table() if table is None else table
    arch = archs[0] if archs else ""
    if arch in table:
        part, tflops, gbps = table[arch]
        note = part
    else:
        _, part, tflops, gbps = DEFAULT_PEAK
        note = f"{part} default: no peak for arch '{arch}'" if arch else f"{part} default: no arch in the results"
    return tflops * 1e12 / (gbps * 1e9), f"{note}: {tflops:g} TFLOP/s / {gbps:g} GB/s"


def problem_key(r):
    return tuple(r.get(f, "") for f in PROBLEM_FIELDS)


def problem_label(r, sep="\n"):
    """name / (B,H,Hk,S,Sk,D) / [causal] dtype, as the README's tables name a row."""
    lines = [r["name"]] if r["name"] else []
    lines += [f"({r['B']},{r['H']},{r['Hk']},{r['S']},{r['Sk']},{r['D']})",
              ("causal " if r["causal"] == "1" else "") + r["dtype"]]
    return sep.join(lines)


def sig3(v):
    """At least 3 significant digits and never an exponent: 0.00123, 45.6, 2695."""
    if v == 0 or abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.{max(0, 2 - math.floor(math.log10(abs(v))))}f}"


def intensity(r):
    return float(r["flops"]) / float(r["bytes"])


def is_peer(path):
    """A path of scripts/sdpa_baseline.py's records: torch-<backend>, or a library called directly."""
    return path.startswith("torch-") or path in sdpa_baseline.EXTERNAL_BACKENDS


def groups(records):
    """problem key -> path -> the one record that path's bar shows (G=auto, else G=0, else fastest),
    problems and paths in order of first appearance."""
    by = OrderedDict()
    for r in timed(records):
        by.setdefault(problem_key(r), OrderedDict()).setdefault(r["path"], []).append(r)
    rank = {"auto": 0, "0": 1}
    return OrderedDict((k, OrderedDict((path, min(rs, key=lambda r: (rank.get(r["G_req"], 2), float(r["median_ms"]))))
                                       for path, rs in paths.items())) for k, paths in by.items())


def classify(grouped, ridge):
    """problem key -> 'compute' | 'memory', by the problem's flops/bytes against the ridge point; one
    answer per problem whatever its paths measured."""
    return OrderedDict((k, "compute" if intensity(next(iter(paths.values()))) >= ridge else "memory")
                       for k, paths in grouped.items())


def series(grouped):
    """Every path drawn, fa-bench's first, then the peers, each in order of first appearance."""
    seen = OrderedDict((p, None) for paths in grouped.values() for p in paths)
    return [p for p in seen if not is_peer(p)] + [p for p in seen if is_peer(p)]


def bar_value(r, bound):
    return float(r["tflops"] if bound == "compute" else r["gbps"])


def bar_note(r):
    g = r.get("G_used", "")
    return f"\nG={g}" if g not in ("", "0") else ""


def title(records, grouped):
    peers = [p for p in series(grouped) if is_peer(p)]
    devices = sorted({r["device"] for r in records if r.get("device")})
    archs = sorted({r["arch"] for r in records if r.get("arch")})
    on = f" on {', '.join(devices)}" + (f" ({', '.join(archs)})" if archs else "") if devices else ""
    return (f"fa-bench vs {', '.join(peers)}" if peers else "fa-bench paths") + on


def throughput(records, out, ridge=None):
    grouped = groups(records)
    if not grouped:
        return None
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    point, source = ridge_point(records, ridge)
    bound = classify(grouped, point)
    names = series(grouped)
    colors = {p: plt.get_cmap("tab10")(i % 10) for i, p in enumerate(names)}
    panels = [(b, [k for k in grouped if bound[k] == b]) for b in ("compute", "memory")]
    panels = [(b, ks) for b, ks in panels if ks]
    # Inches: a bar 0.3, a gap 0.5 between groups, at least 1.6 a group so that its label fits.
    width = max(7.0, min(40.0, 1.0 + max(sum(max(0.3 * len(grouped[k]) + 0.5, 1.6) for k in ks) for _, ks in panels)))
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, 4.2 * len(panels)), squeeze=False)
    for ax, (b, keys) in zip(axes[:, 0], panels):
        x, centres, labels = 0.0, [], []
        for k in keys:
            paths = [p for p in names if p in grouped[k]]
            for i, p in enumerate(paths):
                r = grouped[k][p]
                v = bar_value(r, b)
                ax.bar(x + i, v, 0.9, color=colors[p], hatch="//" if is_peer(p) else None, edgecolor="white", linewidth=0)
                ax.annotate(f"{sig3(v)}{bar_note(r)}", (x + i, v), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=6.5)
            centres.append(x + (len(paths) - 1) / 2)
            labels.append(problem_label(grouped[k][paths[0]]))
            x += len(paths) + 1.2
        crowded = len(keys) > 10
        ax.set_xticks(centres, labels, fontsize=7, rotation=30 if crowded else 0, ha="right" if crowded else "center")
        ax.set_xlim(-1, x - 1.2)
        ax.margins(y=0.18)
        ax.set_ylabel("TFLOP/s" if b == "compute" else "GB/s")
        cmp = "≥" if b == "compute" else "<"
        ax.set_title(f"{b}-bound problems (flops/byte {cmp} {point:.0f})", fontsize=9)
        ax.grid(axis="y", linewidth=0.3)
        ax.set_axisbelow(True)
    handles = [Patch(facecolor=colors[p], hatch="//" if is_peer(p) else None, edgecolor="white", label=p) for p in names]
    top = 1 - 0.3 / fig.get_figheight()  # the title's and the legend's lines (tight_layout pads below them)
    fig.suptitle(title(records, grouped), y=0.995, fontsize=11)
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.3 / fig.get_figheight()), fontsize=8,
               ncol=min(len(names), 8), frameon=False)
    fig.text(0.005, 0.005, f"ridge point {point:.0f} FLOP/byte: {source}", fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.02, 1, top))
    return save(fig, out, "throughput.png", layout=False)


def speedup(rows, out, baseline):
    base = {problem_key(r): float(r["median_ms"]) for r in rows if r["path"] == baseline and r["G_req"] == "0"}
    bars, labels = defaultdict(dict), {}
    for r in rows:
        if r["path"] != baseline and r["G_req"] == "0" and problem_key(r) in base:
            bars[r["path"]][problem_key(r)] = base[problem_key(r)] / float(r["median_ms"])
            labels[problem_key(r)] = problem_label(r)
    if not bars:
        return None
    import matplotlib.pyplot as plt

    keys = [k for k in base if k in labels]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(keys)), 4))
    width = 0.8 / len(bars)
    for j, (path, vals) in enumerate(bars.items()):
        ax.bar([i + j * width for i in range(len(keys))], [vals.get(k, 0) for k in keys], width, label=path)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(keys))], [labels[k] for k in keys], rotation=60, ha="right",
                  fontsize=7)
    ax.set_ylabel(f"speedup over {baseline}")
    ax.legend(fontsize=7)
    return save(fig, out, "speedup.png")


def splits(rows, out):
    curves = defaultdict(dict)
    for r in rows:
        if r["G_req"] != "auto":
            curves[(problem_key(r), r["path"])][int(r["G_req"])] = (float(r["median_ms"]), r)
    curves = {k: v for k, v in curves.items() if len(v) > 1}
    if not curves:
        return None
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for (_, path), pts in curves.items():  # each curve against its own fastest G: curves of unlike problems compare
        gs = sorted(pts)
        best = min(t for t, _ in pts.values())
        label = problem_label(pts[gs[0]][1], sep=" ")
        ax.plot([max(g, 1) for g in gs], [pts[g][0] / best for g in gs], marker="o", label=f"{label} {path}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("G (splits; 0 drawn at 1)")
    ax.set_ylabel("median time / the fastest G's")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    return save(fig, out, "splits.png")


def regret(fits, out):
    import matplotlib.pyplot as plt

    rules = [("fa2", "fa2"), ("aiter", "aiter"), ("model", "model (k-fold held out)"),
             ("model_lofo", "model (leave-one-family-out)")]
    fig, ax = plt.subplots(figsize=(7, 4))
    for col, label in rules:
        vals = sorted(100 * float(r[f"{col}_regret"]) for r in fits)
        within5 = sum(v <= 5 for v in vals) / len(vals)
        ax.plot(range(1, len(vals) + 1), vals, marker=".", label=f"{label}: {100 * within5:.0f}% within 5%")
    ax.axhline(5, color="grey", linestyle=":", linewidth=1)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(f"problems, sorted by regret ({len(fits)})")
    ax.set_ylabel("regret, % over the best G")
    ax.set_title("G rules: per-problem regret")
    ax.legend(fontsize=7)
    return save(fig, out, "regret.png")


def save(fig, out, name, layout=True):
    import matplotlib.pyplot as plt

    if layout:
        fig.tight_layout()
    path = os.path.join(out, name)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("-o", "--out", default="plots")
    ap.add_argument("--baseline", default=None, help="path the speedups divide by (default: naive if present, else cpu-ref)")
    ap.add_argument("--ridge", type=float, default=None,
                    help="FLOP/byte that splits compute- from memory-bound problems (default: the results' arch's peaks)")
    a = ap.parse_args(argv)
    if a.ridge is not None and not a.ridge > 0:
        ap.error(f"--ridge must be a positive number of FLOP per byte (got {a.ridge})")
    fits, records = load(a.csv)
    import matplotlib

    matplotlib.use("Agg")
    os.makedirs(a.out, exist_ok=True)
    if fits:
        print(regret(fits, a.out))
    rows = timed(records)
    paths = {r["path"] for r in rows}
    baseline = a.baseline or ("naive" if "naive" in paths else "cpu-ref")
    for p in (throughput(records, a.out, a.ridge), speedup(rows, a.out, baseline), splits(rows, a.out)):
        if p:
            print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
