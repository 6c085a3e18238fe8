#!/usr/bin/env python3
"""scripts/sdpa_baseline.py --interleave without a GPU: a results file's errors exit 2 naming
file:line:field before anything runs; rounds alternate A, B, A, B with a stand-in peer; each side's
record is the median of its rounds' medians with the clock columns over its rounds, and the ratio the
median of per-round ratios; and, with the fa-bench binary, a record re-expands to its own problem and
an A round is a real `fa-bench sweep` taking exactly the samples asked for (a CPU path here).
Run: FABENCH_BINARY=build/cpu/fa-bench python3 tests/scripts/test_peer_interleave.py (ctest does this)."""
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("FABENCH_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import peer_interleave as pi  # noqa: E402
import peer_problems  # noqa: E402

BINARY = os.environ.get("FABENCH_BINARY") or peer_problems.find_fabench()
KNOWN = {"cpu-ref", "cpu-flash", "mma", "auto"}


def record(**cells):
    """A results row with the problem (1,2,2,8,8,16) fp16 on mma, timed, and `cells` over it."""
    r = dict.fromkeys(peer_problems.COLUMNS, "")
    r.update(schema="10", name="p", B="1", H="2", Hk="2", S="8", Sk="8", D="16", causal="0", dtype="fp16",
             layout="bshd", kv_cache="0", scale="0", page_size="0", alibi="0", softcap="0", seed="1", path="mma",
             ran_path="mma", G_req="0", G_used="0", status="pass", median_ms="1", min_ms="1", max_ms="1", samples="5",
             spread="0", flops="8192", bytes="2176")
    r.update(cells)
    return r


def write_csv(rows, header=peer_problems.COLUMNS):
    fd, path = tempfile.mkstemp(suffix=".csv", prefix="interleave-test-")
    with os.fdopen(fd, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


class ResultsFileErrors(unittest.TestCase):
    def error(self, path):
        with self.assertRaises(pi.InputError) as e:
            pi.read_records(path, KNOWN)
        return str(e.exception)

    def test_a_missing_file_is_named(self):
        self.assertEqual(self.error("/nonexistent/r.csv"), "/nonexistent/r.csv: does not exist")

    def test_a_sweep_is_not_a_results_file(self):
        path = write_csv([{"name": "a", "B": "1", "H": "2", "S": "8", "D": "16"}], header=["name", "B", "H", "S", "D"])
        self.assertRegex(self.error(path), rf"^{path}:1: not a fa-bench results file \(no column schema, path, G_req")

    def test_a_path_fa_bench_lacks_names_its_line_and_field(self):
        path = write_csv([record(), record(S="16", path="torch-flash")])
        self.assertRegex(self.error(path), rf"^{path}:3:path: 'torch-flash' is not a path of this fa-bench")

    def test_an_unknown_schema_and_a_median_that_is_no_number_name_their_field(self):
        self.assertRegex(self.error(write_csv([record(schema="11")])), r":2:schema: '11' is not a results schema")
        self.assertRegex(self.error(write_csv([record(median_ms="fast")])), r":2:median_ms: 'fast' is not a number")

    def test_untimed_records_are_passed_over_and_a_file_of_none_is_an_error(self):
        path = write_csv([record(status="skip", median_ms="", path="nope"), record(status="error", median_ms="")])
        self.assertRegex(self.error(path), r": no timed record")
        rows = pi.read_records(write_csv([record(status="skip", median_ms="", path="nope"), record(), record()]), KNOWN)
        self.assertEqual([line for line, _ in rows], [3], "the skip passed over, the repeat of line 3 once")


class Rounds(unittest.TestCase):
    def test_rounds_alternate_fa_bench_and_each_peer_and_a_refusal_is_not_retried(self):
        log = []

        def run_a(item):
            log.append(("A", item))
            return {"median_ms": "1", "path": "mma"}

        def run_b(item, b):
            log.append((b, item))
            return {"median_ms": "" if b == "cudnn" else "2", "path": b, "status": "skip" if b == "cudnn" else "pass"}
        out = list(pi.schedule(["x"], ["flash", "cudnn"], 3, run_a, run_b))
        self.assertEqual(log, [("A", "x"), ("flash", "x"), ("cudnn", "x"), ("A", "x"), ("flash", "x"), ("A", "x"),
                               ("flash", "x")])
        _, a_recs, b_recs = out[0]
        self.assertEqual((len(a_recs), len(b_recs["flash"]), len(b_recs["cudnn"])), (3, 3, 1))

    def test_an_untimed_fa_bench_round_ends_the_item(self):
        answers = iter([{"median_ms": "1"}, {"median_ms": "", "status": "error"}])
        log = []
        list(pi.schedule(["x"], ["flash"], 5, lambda i: log.append("A") or next(answers),
                         lambda i, b: log.append(b) or {"median_ms": "2"}))
        self.assertEqual(log, ["A", "flash", "A"])


def timed_round(median, mn, mx, samples, mhz=None, mhz_min=None, throttled=0, reasons="", cycles=None, power=None):
    r = record(median_ms=str(median), min_ms=str(mn), max_ms=str(mx), samples=str(samples), flops="1e9", bytes="1e6",
               pct_peak="10")
    if mhz is not None:
        r.update(clock_mhz_median=str(mhz), clock_mhz_min=str(mhz_min or mhz), throttled_samples=str(throttled),
                 throttle_reasons=reasons, cycles_median=str(cycles), power_w_max=str(power), clock_source="nvml")
    return r


class Combines(unittest.TestCase):
    def test_a_sides_record_is_the_median_of_its_round_medians_with_clocks_over_its_rounds(self):
        rounds = [timed_round(2.0, 1.9, 2.5, 50, 1800, 1700, 0, "", 3.6e6, 400),
                  timed_round(2.2, 2.0, 2.4, 50, 1500, 1400, 7, "sw_power_cap", 3.3e6, 690),
                  timed_round(2.1, 1.8, 2.2, 50, 1700, 1650, 2, "sw_thermal|sw_power_cap", 3.57e6, 650)]
        rec = pi.combine(rounds, "interleaved with torch-flash: 3 rounds")
        self.assertEqual((rec["median_ms"], rec["min_ms"], rec["max_ms"], rec["samples"]), ("2.1", "1.8", "2.5", "150"))
        medians = [2.0, 2.2, 2.1]
        self.assertEqual(rec["spread"], peer_problems.g6(statistics.stdev(medians) / statistics.mean(medians)))
        self.assertEqual(rec["tflops"], peer_problems.g6(1e9 / 2.1e-3 / 1e12))
        self.assertEqual(rec["gbps"], peer_problems.g6(1e6 / 2.1e-3 / 1e9))
        self.assertEqual(rec["pct_peak"], peer_problems.g6(10 * 2.0 / 2.1), "%peak scales as 1 / time")
        self.assertEqual((rec["clock_mhz_min"], rec["clock_mhz_median"], rec["power_w_max"]), ("1400", "1700", "690"))
        self.assertEqual((rec["throttled_samples"], rec["throttle_reasons"]), ("9", "sw_power_cap|sw_thermal"))
        self.assertEqual((rec["cycles_median"], rec["clock_source"]), ("3.57e+06", "nvml"))
        self.assertTrue(rec["timing_note"].startswith("interleaved with torch-flash: 3 rounds"))

    def test_rounds_without_clocks_leave_the_columns_empty_and_a_failed_round_fails_the_record(self):
        rounds = [timed_round(1.0, 1.0, 1.0, 5), dict(timed_round(1.2, 1.0, 1.4, 5), status="fail", reason="max err")]
        rec = pi.combine(rounds, "n")
        self.assertEqual((rec["clock_mhz_median"], rec["clock_source"]), ("", ""))
        self.assertEqual((rec["status"], rec["reason"]), ("fail", "max err"))

    def test_an_untimed_last_round_is_the_record_as_it_came(self):
        skip = record(status="skip", median_ms="", reason="no kernel")
        self.assertIs(pi.combine([skip], "n"), skip)

    def test_the_ratio_is_the_median_of_per_round_ratios_with_their_range(self):
        a = [{"median_ms": m} for m in ("1.0", "2.0", "1.0")]
        b = [{"median_ms": m} for m in ("1.5", "2.0", "1.2")]
        self.assertEqual(pi.ratios(a, b), (1.2, 1.0, 1.5))
        self.assertIsNone(pi.ratios(a, [{"median_ms": ""}]))

    def test_the_table_shows_both_sides_clocks_and_marks_a_throttled_side(self):
        lines = []
        target = pi.Target("r.csv:2", record(), peer_problems.Problem(name="p", S=8, Sk=8, D=16), "s.csv")
        answers = iter([timed_round(1.0, 1, 1, 5, 1980, cycles=1, power=1), timed_round(1.0, 1, 1, 5, 1980, cycles=1, power=1)])
        peer = dict(timed_round(1.5, 1, 2, 5, 1700, throttled=3, reasons="sw_power_cap", cycles=1, power=1),
                    path="torch-flash")
        written = []
        statuses = pi.run([target], ["flash"], 2, lambda t: next(answers), lambda t, b: peer, written.append, lines.append)
        self.assertEqual([r["path"] for r in written], ["mma", "torch-flash"])
        self.assertEqual({(r["sweep_file"], r["sweep_line"]) for r in written}, {("r.csv", "2")},
                         "both records point at the results file's line, not the one-row sweep that ran them")
        self.assertEqual(statuses, {"pass"})
        row = [x for x in lines if x.startswith("| p fp16")][0]
        self.assertEqual(row, "| p fp16 | mma | 1 | 1980 | torch-flash | 1.5 | 1700* | 1.500 (1.500..1.500) |")


@unittest.skipUnless(BINARY, "no fa-bench binary (set FABENCH_BINARY)")
class WithFaBench(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="interleave-fa-")
        cls.results = os.path.join(cls.tmp, "r.csv")
        res = subprocess.run([BINARY, "run", "--B", "1", "--H", "4", "--Hk", "2", "--S", "24", "--Sk", "40", "--D", "32",
                              "--causal", "--paths", "cpu-flash", "--min-samples", "3", "--max-samples", "3", "-o",
                              cls.results, "--no-table"], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        cls.paths = set(subprocess.run([BINARY, "list", "--names", "all"], capture_output=True, text=True).stdout.split())

    def test_a_record_re_expands_to_its_own_problem(self):
        (t,) = pi.targets(self.results, BINARY, self.paths, self.tmp)
        p = t.problem
        self.assertEqual((p.B, p.H, p.Hk, p.S, p.Sk, p.D, p.causal, t.path), (1, 4, 2, 24, 40, 32, True, "cpu-flash"))
        self.assertEqual(t.where, f"{self.results}:2")

    def test_a_round_is_a_fa_bench_sweep_of_exactly_the_samples_asked_for(self):
        (t,) = pi.targets(self.results, BINARY, self.paths, self.tmp)
        out = os.path.join(self.tmp, "round.csv")
        rec = pi.run_fabench(pi.fabench_command(BINARY, t, 7, 2, 0.005, "hot", out), out)
        self.assertEqual((rec["path"], rec["samples"], rec["status"], rec["S"], rec["Sk"]), ("cpu-flash", "7", "pass", "24", "40"))
        self.assertEqual(rec["flops"], t.record["flops"])

    def test_a_path_this_fa_bench_lacks_exits_2_naming_the_line_before_anything_runs(self):
        bad = os.path.join(self.tmp, "bad.csv")
        with open(self.results) as f, open(bad, "w") as g:
            g.write(f.read().replace(",cpu-flash,cpu-flash,", ",flashinfer,flashinfer,", 1))
        res = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "sdpa_baseline.py"), "--interleave", bad,
                              "--fa-bench", BINARY, "-o", os.path.join(self.tmp, "o.csv")], capture_output=True, text=True)
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn(f"{bad}:2:path: 'flashinfer' is not a path of this fa-bench", res.stderr)
        self.assertNotIn("Traceback", res.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "o.csv")), "nothing written")

    def test_a_whole_interleave_writes_both_sides_records_and_prints_the_table(self):
        import contextlib
        import io
        import sdpa_baseline as sb
        calls = []

        def recorder(problems):  # a stand-in peer: 3 ms, at 1600 MHz, noting the policy it was given
            def record(p, b):
                calls.append((b, sb_args.policy.min_samples, sb_args.policy.max_samples))
                stats = {"median_ms": 3.0, "min_ms": 2.9, "max_ms": 3.1, "spread": 0.01, "samples": 4, "mode": "hot",
                         "stopped_by": "max-samples", "clocks": {"mhz_min": 1600, "mhz_median": 1600,
                                                                 "power_w_max": 500, "throttled_samples": 0,
                                                                 "throttle_reasons": "", "cycles_median": 4.8e6,
                                                                 "source": "nvml", "samples": 4}}
                return sb.record_fields(p, sb.record_path(b), "pass", "timed only", {
                    "run_id": "t", "device": "d", "arch": "sm_90", "git_commit": "c"}, stats)
            return record
        out = os.path.join(self.tmp, "side.csv")
        ap = sb.argparse.ArgumentParser()
        sb_args = sb.argparse.Namespace(fabench=BINARY, interleave=self.results, output=out, round_samples=4, rounds=3,
                                        warmup=1, spread=0.005, timing="hot",
                                        policy=sb.TimingPolicy(1, 4, 4, 0.005, 0.5, "hot"))
        said = io.StringIO()
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(io.StringIO()):
            code = pi.interleave(ap, sb_args, ["flash"], recorder)
        self.assertEqual(code, 0)
        self.assertEqual([c[1:] for c in calls], [(4, 4)] * 3, "B: the round's sample count, exactly, each round")
        with open(out, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
        self.assertEqual(tuple(reader.fieldnames), tuple(peer_problems.COLUMNS))
        self.assertEqual([r["path"] for r in rows], ["cpu-flash", "torch-flash"])
        self.assertEqual([r["samples"] for r in rows], ["12", "12"], "3 rounds of 4 samples a side")
        self.assertEqual({r["sweep_file"] for r in rows}, {self.results})
        self.assertIn("interleaved with torch-flash: 3 rounds", rows[0]["timing_note"])
        table = [x for x in said.getvalue().splitlines() if "| cpu-flash |" in x]
        self.assertEqual(len(table), 1, said.getvalue())
        self.assertIn("| torch-flash | 3 | 1600 |", table[0])

    def test_flag_and_file_errors_exit_2_naming_them(self):
        script = [sys.executable, os.path.join(SOURCE, "scripts", "sdpa_baseline.py")]
        out = os.path.join(self.tmp, "o2.csv")
        for args, said in (
                (["--interleave", os.path.join(self.tmp, "none.csv"), "-o", out], "none.csv: does not exist"),
                (["--interleave", os.path.join(SOURCE, "sweeps", "whisper.csv"), "-o", out],
                 "whisper.csv:1: not a fa-bench results file"),
                (["--interleave", self.results, "--rounds", "0", "-o", out], "--rounds 0"),
                (["--interleave", self.results, "--round-samples", "0", "-o", out], "--round-samples 0"),
                (["--interleave", self.results, os.path.join(SOURCE, "sweeps", "whisper.csv"), "-o", out],
                 "give no sweep file"),
                (["--interleave", self.results, "-o", self.results], "refusing to overwrite"),
                (["--interleave", self.results, "--check", self.tmp, "-o", out], "--check and --interleave")):
            res = subprocess.run(script + args + ["--fa-bench", BINARY], capture_output=True, text=True)
            self.assertEqual(res.returncode, 2, (args, res.stderr))
            self.assertIn(said, res.stderr, args)
            self.assertNotIn("Traceback", res.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
