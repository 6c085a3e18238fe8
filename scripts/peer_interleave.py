"""scripts/sdpa_baseline.py --interleave RESULTS.csv: each timed record of a fa-bench results file
timed again, fa-bench's own path (A: `fa-bench sweep` of a one-row sweep that re-expands to the
record's problem, path and G) in alternation with the peers (B: in this process), A B A B ... for
--rounds rounds, each side taking the same fixed count of samples a round; so a peer/fa-bench ratio is
taken under one power state rather than a minute apart. Each side's record is the median of its
rounds' medians, with the clock columns over all its rounds; the table gives the median of the
per-round ratios with their range, and each side's clock. Stdlib only: the runs are callables.
"""
import csv
import math
import os
import statistics
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import peer_telemetry
from peer_problems import COLUMNS, SCHEMA, TimingPolicy, expand, find_fabench, g6

# The record columns that name its problem (the field table's order), which a sweep row of the same
# names reads back to the same problem (harness/problem_fields.cpp: one table writes and reads both).
PROBLEM_COLUMNS = COLUMNS[COLUMNS.index("name"):COLUMNS.index("seed") + 1]
NEEDED = ("schema", "path", "G_req", "status", "median_ms", "flops") + tuple(PROBLEM_COLUMNS)
# fa-bench loops this long at most in a round (--time-cap, --time-limit): the sample count decides.
NO_CAP_S = 3600
# Query rows fa-bench checks each A round (--check-rows): the record was validated when RESULTS.csv
# was written; a round re-checks a sample, so that its CPU reference (seconds for a big problem under
# the default --cpu-budget, every round) leaves the GPU idle no longer than B's set-up does.
CHECK_ROWS = 16
# Untimed launches before each round, on both sides: enough for ~0.2 s of the kernel (by the record's
# median), so that neither side starts its samples from the idle clock that fa-bench's set-up (inputs,
# reference) or the previous round's end leaves; at most WARM_MAX launches.
WARM_S, WARM_MAX = 0.2, 2000


class InputError(Exception):
    """A RESULTS.csv problem, as file:line:field: message (exit 2, before anything runs)."""


@dataclass
class Target:
    where: str  # RESULTS.csv:line
    record: dict
    problem: object  # peer_problems.Problem, re-expanded by fa-bench
    sweep: str  # the one-row sweep file A runs

    @property
    def path(self):
        return self.record["path"]


def timed(r):
    return bool(r and r.get("median_ms"))


def read_records(path, known_paths):
    """The timed records of a results file (pass or fail, with a median) as (line, row), one per
    (problem, path, G_req); InputError naming file:line:field for a missing file, a file without
    fa-bench's columns, a schema this script does not know, a median that is no number, a path that
    `known_paths` lacks, or no timed record at all."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: {'is not a file' if os.path.exists(path) else 'does not exist'}")
    out, seen = [], set()
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        missing = [c for c in NEEDED if c not in (header or [])]
        if missing:
            raise InputError(f"{path}:1: not a fa-bench results file (no column {', '.join(missing[:4])}"
                             f"{' ...' if len(missing) > 4 else ''})")
        for cells in reader:
            line = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise InputError(f"{path}:{line}: {len(cells)} cells under a header of {len(header)}")
            row = dict(zip(header, cells))
            if not row["schema"].isdigit() or not 1 <= int(row["schema"]) <= int(SCHEMA):
                raise InputError(f"{path}:{line}:schema: '{row['schema']}' is not a results schema this script reads "
                                 f"(1 to {SCHEMA})")
            if row["status"] not in ("pass", "fail") or not row["median_ms"]:
                continue
            try:
                float(row["median_ms"])
            except ValueError:
                raise InputError(f"{path}:{line}:median_ms: '{row['median_ms']}' is not a number") from None
            if row["path"] not in known_paths:
                raise InputError(f"{path}:{line}:path: '{row['path']}' is not a path of this fa-bench "
                                 f"(fa-bench list --names all: {', '.join(sorted(known_paths))})")
            key = tuple(row[c] for c in PROBLEM_COLUMNS) + (row["path"], row["G_req"])
            if key not in seen:
                seen.add(key)
                out.append((line, row))
    if not out:
        raise InputError(f"{path}: no timed record (status pass or fail with a median_ms) to interleave")
    return out


def one_row_sweep(row, folder, index):
    """A sweep CSV of the record's problem cells and G_req; its file name."""
    name = os.path.join(folder, f"target-{index}.csv")
    with open(name, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(list(PROBLEM_COLUMNS) + ["G"])
        w.writerow([row[c] for c in PROBLEM_COLUMNS] + [row["G_req"] or "0"])
    return name


def targets(results, binary, known_paths, folder):
    """Target per timed record: its one-row sweep, re-expanded by `fa-bench expand` to the Problem the
    peers run; InputError where expand refuses it or it no longer counts the record's FLOPs."""
    out = []
    for i, (line, row) in enumerate(read_records(results, known_paths)):
        where = f"{results}:{line}"
        sweep = one_row_sweep(row, folder, i)
        try:
            problems = expand(binary, sweep)
        except SystemExit as e:
            raise InputError(f"{where}: fa-bench expand refuses the record's problem: {str(e.code).strip()}") from None
        if len(problems) != 1 or problems[0].invalid:
            raise InputError(f"{where}: the record's problem cells expand to {len(problems)} problems "
                             f"{problems[0].invalid if problems else ''}".strip())
        if g6(problems[0].flops()) != row["flops"]:
            raise InputError(f"{where}:flops: the record has {row['flops']}, its problem re-expanded "
                             f"{g6(problems[0].flops())}: not the same problem")
        out.append(Target(where, row, problems[0], sweep))
    return out


def warmup_launches(record, floor):
    """Launches before each round's samples: WARM_S of the record's median, at least floor."""
    return max(floor, min(WARM_MAX, math.ceil(WARM_S * 1e3 / max(float(record["median_ms"]), 1e-6))))


def fabench_command(binary, target, samples, warmup, spread, timing, out_csv):
    """One A round: the record's one-row sweep on its path, exactly `samples` samples (min = max;
    the spread decides only whether the record calls itself noisy), CHECK_ROWS rows validated."""
    return [binary, "sweep", target.sweep, "--paths", target.path, "--check-rows", str(CHECK_ROWS),
            "--min-samples", str(samples), "--max-samples", str(samples), "--spread", str(spread),
            "--time-cap", str(NO_CAP_S), "--time-limit", str(NO_CAP_S), "--warmup", str(warmup), "--timing", timing,
            "-o", out_csv, "--no-table"]


def run_fabench(cmd, out_csv):
    """The one record of an A round; RuntimeError with fa-bench's last words where it wrote none."""
    res = subprocess.run(cmd, capture_output=True, text=True)
    rows, header = [], None
    if os.path.isfile(out_csv):
        with open(out_csv, newline="") as f:
            reader = csv.DictReader(f)
            rows, header = list(reader), reader.fieldnames
    if header and tuple(header) != tuple(COLUMNS):
        raise RuntimeError(f"{cmd[0]} writes other columns than this script's (schema {SCHEMA}): rebuild one of them")
    if res.returncode not in (0, 1) or len(rows) != 1:
        tail = " | ".join((res.stderr or res.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"{' '.join(cmd)} exited {res.returncode} with {len(rows)} records: {tail}")
    return rows[0]


def schedule(items, backends, rounds, run_a, run_b):
    """A, then each backend's B, `rounds` times an item: run_a(item) and run_b(item, backend) return
    records. A round whose A is untimed (a skip, an error) ends the item; a backend whose record is
    untimed (a refusal) is not run again. Yields (item, A's records, {backend: its records})."""
    for item in items:
        a_recs, b_recs = [], {b: [] for b in backends}
        for _ in range(rounds):
            a_recs.append(run_a(item))
            if not timed(a_recs[-1]):
                break
            for b in backends:
                if not b_recs[b] or timed(b_recs[b][-1]):
                    b_recs[b].append(run_b(item, b))
        yield item, a_recs, b_recs


def combine_clocks(records):
    """The clock columns over rounds: the lowest clock, the median of the rounds' median clocks and
    cycles, the highest power, the throttled samples summed and their reasons' union; all empty
    where no round read a clock."""
    with_clock = [r for r in records if r.get("clock_mhz_median")]
    if not with_clock:
        return dict.fromkeys(peer_telemetry.CLOCK_COLUMNS, "")
    names = {n for r in with_clock for n in r.get("throttle_reasons", "").split("|") if n}
    powers = [float(r["power_w_max"]) for r in with_clock if r.get("power_w_max")]
    return {"clock_mhz_min": g6(min(float(r.get("clock_mhz_min") or r["clock_mhz_median"]) for r in with_clock)),
            "clock_mhz_median": g6(statistics.median(float(r["clock_mhz_median"]) for r in with_clock)),
            "power_w_max": g6(max(powers)) if powers else "",
            "throttled_samples": str(sum(int(r.get("throttled_samples") or 0) for r in with_clock)),
            "throttle_reasons": "|".join(n for _, n in peer_telemetry.THROTTLE_NAMES if n in names),
            "cycles_median": g6(statistics.median(float(r["cycles_median"]) for r in with_clock if r.get("cycles_median")))
            if any(r.get("cycles_median") for r in with_clock) else "",
            "clock_source": "|".join(dict.fromkeys(r.get("clock_source", "") for r in with_clock))}


def combine(records, note):
    """One record of a side's rounds: the first round's problem and metadata; median_ms the median
    of the rounds' medians, min and max over every sample, samples summed, spread that of the
    rounds' medians (the noise between rounds), TFLOP/s, GB/s and %peak from the median; status fail
    if any round failed; the clock columns over the rounds (combine_clocks); `note` and the rounds'
    own notes in timing_note. An untimed last round (a skip, an error) is the record as it is."""
    if not records or not timed(records[-1]):
        return records[-1] if records else None
    first = records[0]
    medians = [float(r["median_ms"]) for r in records]
    med = statistics.median(medians)
    mean = statistics.fmean(medians)
    out = dict(first)
    failed = [r for r in records if r["status"] == "fail"]
    if failed:
        out.update(status="fail", reason=failed[0]["reason"])
    notes = [note] + list(dict.fromkeys(n for r in records for n in r.get("timing_note", "").split("; ") if n))
    out.update(median_ms=g6(med), min_ms=g6(min(float(r["min_ms"]) for r in records)),
               max_ms=g6(max(float(r["max_ms"]) for r in records)), samples=str(sum(int(r["samples"]) for r in records)),
               spread=g6(statistics.stdev(medians) / mean if len(medians) > 1 and mean > 0 else 0.0),
               timing_note="; ".join(notes), tflops=g6(float(first["flops"]) / med / 1e9),
               gbps=g6(float(first["bytes"]) / med / 1e6), **combine_clocks(records))
    if first.get("pct_peak"):  # %peak is inversely proportional to the time, at the record's peak
        out["pct_peak"] = g6(float(first["pct_peak"]) * float(first["median_ms"]) / med)
    return out


def ratios(a_recs, b_recs):
    """peer/fa-bench per round where both sides were timed: (median, min, max), or None."""
    rs = [float(b["median_ms"]) / float(a["median_ms"]) for a, b in zip(a_recs, b_recs) if timed(a) and timed(b)]
    return (statistics.median(rs), min(rs), max(rs)) if rs else None


def clock_cell(r):
    """A side's median clock for the table, '*' where some samples ran throttled (fa-bench's mark)."""
    if not r or not r.get("clock_mhz_median"):
        return "-"
    return f"{float(r['clock_mhz_median']):.0f}" + ("*" if int(r.get("throttled_samples") or 0) else "")


def table_row(target, a, b, ratio):
    p = target.problem
    problem = f"{p.label()}{' causal' if p.causal else ''} {p.dtype}" + \
        (f" G={target.record['G_req']}" if target.record["G_req"] not in ("", "0") else "")
    ms = (lambda r: r["median_ms"] if timed(r) else (r or {}).get("status", "-"))
    rat = f"{ratio[0]:.3f} ({ratio[1]:.3f}..{ratio[2]:.3f})" if ratio else "-"
    return (f"| {problem} | {target.path} | {ms(a)} | {clock_cell(a)} | {b['path'] if b else '-'} | {ms(b) if b else '-'} "
            f"| {clock_cell(b)} | {rat} |")


TABLE_HEADER = ("| problem | fa-bench path | ms | MHz | peer | ms | MHz | peer/fa-bench, median of rounds (min..max) |\n"
                "|---|---|---|---|---|---|---|---|")
TABLE_LEGEND = ("ms: each side's median of its rounds' medians; MHz: its median SM/GFX clock during the samples, "
                "* where some ran throttled (a power, thermal or other clock-event reason)")


def progress(target, rec):
    """A round's line on stderr: where, the path, and its time and clock, or its status and reason."""
    if not timed(rec):
        return f"{target.where} {rec['path']}: {rec['status']} {rec['reason']}"
    clock = f" at {rec['clock_mhz_median']} MHz" if rec.get("clock_mhz_median") else ""
    return f"{target.where} {rec['path']}: {rec['median_ms']} ms{clock}"


def from_results(rec, target):
    """The record with the results file's line as its origin (sweep_file, sweep_line), not the
    one-row sweep that ran it, which is gone after the run."""
    file, line = target.where.rsplit(":", 1)
    return {**rec, "sweep_file": file, "sweep_line": line}


def run(targets_, backends, rounds, run_a, run_b, write, say):
    """Interleaves every target, writes each side's combined record through write(record) as each
    target finishes, and says the table (one row a peer) through say(line). The records' statuses."""
    statuses = set()
    say(TABLE_HEADER)
    for target, a_recs, b_recs in schedule(targets_, backends, rounds, run_a, run_b):
        peers = ", ".join(r[0]["path"] for r in b_recs.values() if r)
        a = combine(a_recs, f"interleaved with {peers or 'no peer'}: {len(a_recs)} rounds; median of round medians")
        write(from_results(a, target))
        statuses.add(a["status"])
        for b, recs in b_recs.items():
            rec = combine(recs, f"interleaved with {target.path}: {len(recs)} rounds; median of round medians")
            if rec:
                write(from_results(rec, target))
                statuses.add(rec["status"])
            say(table_row(target, a, rec, ratios(a_recs, recs)))
        if not any(b_recs.values()):
            say(table_row(target, a, None, None))
    say("\n" + TABLE_LEGEND)
    return statuses


def interleave(ap, args, backends, recorder):
    """--interleave: every input checked (the binary, its paths, each record's problem re-expanded)
    before anything runs (ap.error: exit 2), then the rounds: A a `fa-bench sweep` of the record, B
    each backend through recorder(problems)(problem, backend) (sdpa_baseline's peers, in this
    process), the same sample count and warm-up a side and round. Exit status as a sweep's."""
    binary = find_fabench(args.fabench)
    if not binary:
        ap.error("--interleave runs fa-bench: pass --fa-bench, set FABENCH_BINARY, or build it")
    res = subprocess.run([binary, "list", "--names", "all"], capture_output=True, text=True)
    if res.returncode != 0:
        ap.error(f"--fa-bench: '{binary} list --names all' failed: {res.stderr.strip()}")
    scratch = tempfile.mkdtemp(prefix="sdpa-interleave-")
    try:  # the rounds' CSVs and one-row sweeps go with the scratch folder, whatever ends the run
        try:
            todo = targets(args.interleave, binary, set(res.stdout.split()), scratch)
        except InputError as e:
            ap.error(str(e))
        record = recorder([t.problem for t in todo])
        n = args.round_samples
        counter = iter(range(1 << 62))

        def run_a(t):
            out = os.path.join(scratch, f"round-{next(counter)}.csv")
            cmd = fabench_command(binary, t, n, warmup_launches(t.record, args.warmup), args.spread, args.timing, out)
            rec = run_fabench(cmd, out)
            print(progress(t, rec), file=sys.stderr)
            return rec

        def run_b(t, b):
            args.policy = TimingPolicy(warmup_launches(t.record, args.warmup), n, n, args.spread, NO_CAP_S,
                                       args.timing, args.policy.clocks)
            rec = record(t.problem, b)
            print(progress(t, rec), file=sys.stderr)
            return rec

        with open(args.output, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
            w.writeheader()

            def write(rec):
                w.writerow(rec)
                f.flush()
            try:
                statuses = run(todo, backends, args.rounds, run_a, run_b, write, print)
            except RuntimeError as e:  # fa-bench wrote no record (a crash, a build of other columns): the rest waits
                print(f"sdpa_baseline.py: {e}; the records so far are in {args.output}", file=sys.stderr)
                return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"wrote {args.output}", file=sys.stderr)
    return 1 if statuses & {"fail", "error"} else 0
