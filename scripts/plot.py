#!/usr/bin/env python3
"""Plots from fa-bench results CSVs (matplotlib; scripts/setup.sh --plots installs it).

  scripts/plot.py RESULTS.csv [MORE.csv ...] [-o DIR] [--baseline PATH]
  scripts/plot.py FIT.csv [-o DIR]            (the fit data `fa-bench fit` writes)

Writes into DIR (default plots/):
  throughput.png  TFLOP/s per path across the sweep's problems (GB/s for S == 1 problems), G=0 records
  speedup.png     each path's time against the baseline path's, per problem (bars; > 1 is faster)
  splits.png      median time per G for every (problem, path) timed at more than one G
  regret.png      from fit data: each rule's per-problem regret t(G_pick)/t(G_best) - 1, sorted
                  (fa2, aiter, and the model's k-fold and leave-one-family-out held-out picks)
Only records with a time and status pass are drawn; a plot with nothing to draw is not written.
"""
import argparse
import csv
import os
import sys
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(paths):
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            rows += [r for r in csv.DictReader(f) if r.get("median_ms") and r["status"] == "pass"]
    return rows


def problem(r):
    label = r["name"] or f"B{r['B']} H{r['H']} S{r['S']} Sk{r['Sk']} D{r['D']}" + (" c" if r["causal"] == "1" else "")
    return f"{label} {r['dtype']}"


def throughput(rows, out):
    series, problems = defaultdict(dict), OrderedDict()
    for r in rows:
        if r["G_req"] != "0":
            continue
        memory = r["bound"] == "memory" if r.get("bound") else r["S"] == "1"
        problems[problem(r)] = memory
        series[r["path"]][problem(r)] = float(r["gbps"] if memory else r["tflops"])
    if not series:
        return None
    names = list(problems)
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(names)), 4))
    for path, vals in series.items():
        xs = [i for i, n in enumerate(names) if n in vals]
        ax.plot(xs, [vals[names[i]] for i in xs], marker="o", label=path)
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("TFLOP/s (GB/s where memory-bound)")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    return save(fig, out, "throughput.png")


def speedup(rows, out, baseline):
    base = {problem(r): float(r["median_ms"]) for r in rows if r["path"] == baseline and r["G_req"] == "0"}
    bars = defaultdict(dict)
    for r in rows:
        if r["path"] != baseline and r["G_req"] == "0" and problem(r) in base:
            bars[r["path"]][problem(r)] = base[problem(r)] / float(r["median_ms"])
    if not bars:
        return None
    names = [n for n in base if any(n in v for v in bars.values())]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(names)), 4))
    width = 0.8 / len(bars)
    for k, (path, vals) in enumerate(bars.items()):
        ax.bar([i + k * width for i, n in enumerate(names)], [vals.get(n, 0) for n in names], width, label=path)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel(f"speedup over {baseline}")
    ax.legend(fontsize=7)
    return save(fig, out, "speedup.png")


def splits(rows, out):
    curves = defaultdict(dict)
    for r in rows:
        if r["G_req"] != "auto":
            curves[(problem(r), r["path"])][int(r["G_req"])] = float(r["median_ms"])
    curves = {k: v for k, v in curves.items() if len(v) > 1}
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for (prob, path), pts in curves.items():
        gs = sorted(pts)
        ax.plot([max(g, 1) for g in gs], [pts[g] for g in gs], marker="o", label=f"{prob} {path}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("G (splits; 0 drawn at 1)")
    ax.set_ylabel("median ms")
    ax.legend(fontsize=6)
    return save(fig, out, "splits.png")


def regret(fits, out):
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


def save(fig, out, name):
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
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    fits, results = [], []  # fit data (it has best_G) goes to the regret plot; results files to the rest
    for p in a.csv:
        with open(p, newline="") as f:
            reader = csv.DictReader(f)
            if "best_G" in (reader.fieldnames or []):
                fits += list(reader)
            else:
                results.append(p)
    if fits:
        print(regret(fits, a.out))
    rows = read(results)
    paths = {r["path"] for r in rows}
    baseline = a.baseline or ("naive" if "naive" in paths else "cpu-ref")
    for p in (throughput(rows, a.out), speedup(rows, a.out, baseline), splits(rows, a.out)):
        if p:
            print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
