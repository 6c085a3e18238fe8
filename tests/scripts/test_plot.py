#!/usr/bin/env python3
"""scripts/plot.py's logic on small synthetic results: each problem is classified once by flops/bytes
against the device's ridge point (whatever unit its paths' numbers are larger in), a path's bar is its
G=auto record, else G=0, else its fastest G, fa-bench's paths come before sdpa_baseline.py's peers
(torch-*, fa2, aiter), the peers are named in the title, and each CSV is read once. The rendering runs under the first python3 that
imports matplotlib.
Run: python3 tests/scripts/test_plot.py (ctest does this)."""
import builtins
import csv
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

SOURCE = os.environ.get("FABENCH_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import plot  # noqa: E402
import sdpa_baseline as sb  # noqa: E402


def python_with(module):
    """An interpreter that imports `module`: this one, then the system's (as tests/helpers.hpp looks)."""
    for py in (sys.executable, "/usr/bin/python3"):
        if py and subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0:
            return py
    return None


PLOT_PYTHON = python_with("matplotlib")

META = {"run_id": "test", "device": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "git_commit": "abc"}
H100_RIDGE = 989e12 / 3350e9  # harness/check/peaks.cpp's sm_90 row


def record(dims, path, ms, G="0", G_used="0", status="pass", name="", arch="sm_90"):
    B, H, Hk, S, Sk, D, causal = dims
    p = sb.Problem(name=name, B=B, H=H, Hk=Hk, S=S, Sk=Sk, D=D, causal=bool(causal), dtype="bf16")
    stats = {"median_ms": ms, "min_ms": ms, "max_ms": ms, "spread": 0.001, "samples": 10, "mode": "cold",
             "stopped_by": "spread"}
    r = sb.record_fields(p, path, status, "", dict(META, arch=arch), stats=stats if status == "pass" else None)
    r.update(G_req=G, G_used=G_used)
    return r


def write(rows, columns=sb.COLUMNS):
    fd, path = tempfile.mkstemp(suffix=".csv", prefix="plot-test-")
    with os.fdopen(fd, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


PREFILL = (2, 16, 16, 8192, 8192, 128, 0)  # thousands of FLOP a byte: compute-bound
DECODE = (1, 32, 8, 1, 32768, 128, 0)      # about 8 FLOP a byte: memory-bound


def near_ridge():
    """A problem just over the H100's ridge: its flops/bytes is >= 295 but under 1.1x that."""
    for S in range(64, 4096, 8):
        dims = (1, 16, 16, S, 65536, 64, 0)
        r = record(dims, "mma", 1.0)
        if H100_RIDGE <= plot.intensity(r) < 1.1 * H100_RIDGE:
            return dims
    raise AssertionError("no near-ridge shape")


class Classification(unittest.TestCase):
    def test_the_ridge_point_comes_from_harness_peaks_cpp_for_the_results_arch(self):
        table = plot.peaks_table()
        self.assertEqual(table["sm_90"], ("H100 SXM", 989.0, 3350.0))  # the arch's first row, not the H200's
        self.assertEqual(table["gfx942"][0], "MI300X")
        self.assertEqual(set(table), {"sm_90", "sm_80", "gfx942", "gfx950", "gfx90a", "gfx1100", "gfx1201"})
        ridge, source = plot.ridge_point([record(PREFILL, "mma", 1.0)])
        self.assertAlmostEqual(ridge, H100_RIDGE)
        self.assertIn("989", source)
        gfx, _ = plot.ridge_point([record(PREFILL, "mma", 1.0, arch="gfx942:sramecc+:xnack-")])
        self.assertAlmostEqual(gfx, 1307.4e12 / 5300e9)

    def test_an_unknown_arch_takes_the_documented_h100_default_and_ridge_overrides(self):
        ridge, source = plot.ridge_point([record(PREFILL, "cpu-flash", 1.0, arch="")])
        self.assertAlmostEqual(ridge, H100_RIDGE)
        self.assertIn("default", source)
        self.assertEqual(plot.ridge_point([record(PREFILL, "mma", 1.0)], ridge=10.0)[0], 10.0)
        with self.assertRaises(SystemExit):
            plot.ridge_point([record(PREFILL, "mma", 1.0), record(PREFILL, "mma", 1.0, arch="gfx942")])

    def test_each_problem_is_classified_once_by_flops_per_byte_whatever_its_paths_measured(self):
        near = near_ridge()
        rows = [record(PREFILL, "mma", 1.0), record(PREFILL, "torch-flash", 1.2),
                record(DECODE, "mma-decode", 0.05), record(DECODE, "torch-flash", 0.08),
                # Slow enough that this path's GB/s number is larger than its TFLOP/s one, and fast
                # enough that the peer's is not: still one class, by the problem's intensity.
                record(near, "mma", 2.0), record(near, "torch-cudnn", 0.1)]
        self.assertGreater(float(rows[4]["gbps"]), float(rows[4]["tflops"]))
        grouped = plot.groups(rows)
        bound = plot.classify(grouped, H100_RIDGE)
        self.assertEqual(list(bound.values()), ["compute", "memory", "compute"])
        self.assertEqual([list(paths) for paths in grouped.values()],
                         [["mma", "torch-flash"], ["mma-decode", "torch-flash"], ["mma", "torch-cudnn"]])


class Grouping(unittest.TestCase):
    def test_a_paths_bar_is_g_auto_else_g0_else_its_fastest_g_and_only_passing_timed_records_count(self):
        rows = [record(PREFILL, "mma", 1.0, G="0"), record(PREFILL, "mma", 0.9, G="4", G_used="4"),
                record(PREFILL, "mma", 0.95, G="auto", G_used="8"),
                record(PREFILL, "splitk", 0.7, G="4", G_used="4"), record(PREFILL, "splitk", 0.6, G="8", G_used="8"),
                record(PREFILL, "tiled", 0.1, G="0", status="fail"), record(PREFILL, "naive", 0, status="skip")]
        bars = plot.groups(rows)[plot.problem_key(rows[0])]
        self.assertEqual(list(bars), ["mma", "splitk"])
        self.assertEqual((bars["mma"]["G_req"], bars["splitk"]["G_req"]), ("auto", "8"))
        self.assertEqual(plot.bar_note(bars["mma"]), "\nG=8")

    def test_sdpa_baselines_libraries_are_peers_too(self):
        self.assertEqual([plot.is_peer(p) for p in ("torch-flash", "fa2", "aiter", "mma", "auto")],
                         [True, True, True, False, False])

    def test_fa_bench_paths_come_first_then_the_peers_who_are_named_in_the_title(self):
        rows = [record(PREFILL, "torch-flash", 1.2), record(PREFILL, "mma", 1.0),
                record(DECODE, "torch-cudnn", 0.06), record(DECODE, "mma-decode", 0.05)]
        grouped = plot.groups(rows)
        self.assertEqual(plot.series(grouped), ["mma", "mma-decode", "torch-flash", "torch-cudnn"])
        self.assertTrue(plot.title(rows, grouped).startswith("fa-bench vs torch-flash, torch-cudnn on NVIDIA H100"))
        self.assertTrue(plot.title(rows[1:2], plot.groups(rows[1:2])).startswith("fa-bench paths on"))

    def test_fa_bench_and_torch_rows_of_one_problem_share_a_group(self):
        a, b = record(PREFILL, "mma", 1.0, name="p"), record(PREFILL, "torch-flash", 1.0, name="p")
        a["bound"], a["pct_peak"] = "compute", "40"  # fa-bench fills these; sdpa_baseline.py does not
        self.assertEqual(len(plot.groups([a, b])), 1)
        self.assertEqual(plot.problem_label(a), "p\n(2,16,16,8192,8192,128)\nbf16")

    def test_bar_labels_keep_at_least_three_significant_digits_and_no_exponent(self):
        self.assertEqual([plot.sig3(v) for v in (0.00123, 6.72e-05, 45.6, 9.99, 0, 1234.5, 2695.0)],
                         ["0.00123", "0.0000672", "45.6", "9.99", "0", "1234", "2695"])


class Files(unittest.TestCase):
    def test_each_csv_is_read_once_and_fit_data_is_told_from_results(self):
        results = write([record(PREFILL, "mma", 1.0)])
        fit = write([{"best_G": "16", "fa2_regret": "0.1"}], columns=["best_G", "fa2_regret"])
        opened = []
        real_open = builtins.open

        def counting_open(path, *a, **k):
            opened.append(path)
            return real_open(path, *a, **k)

        try:
            with mock.patch("builtins.open", counting_open):
                fits, records = plot.load([results, fit])
            self.assertEqual(sorted(opened), sorted([results, fit]))
            self.assertEqual((len(fits), len(records)), (1, 1))
        finally:
            os.remove(results)
            os.remove(fit)

    def test_a_file_without_results_columns_is_refused_by_name(self):
        other = write([{"x": "1"}], columns=["x"])
        try:
            with self.assertRaises(SystemExit) as e:
                plot.load([other])
            self.assertIn(other, str(e.exception))
        finally:
            os.remove(other)

    @unittest.skipUnless(PLOT_PYTHON, "no python3 with matplotlib (scripts/setup.sh installs Debian's python3-matplotlib)")
    def test_a_results_file_with_peers_renders_both_panels(self):
        rows = [record(PREFILL, "mma", 1.0), record(PREFILL, "torch-flash", 1.2),
                record(DECODE, "mma-decode", 0.05), record(DECODE, "torch-flash", 0.08)]
        path = write(rows)
        out = tempfile.mkdtemp(prefix="plot-test-")
        try:
            res = subprocess.run([PLOT_PYTHON, os.path.join(SOURCE, "scripts", "plot.py"), path, "-o", out],
                                 capture_output=True, text=True)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
            with open(os.path.join(out, "throughput.png"), "rb") as f:
                png = f.read()
            self.assertEqual(png[1:4], b"PNG")
            self.assertGreater(len(png), 10000)
        finally:
            os.remove(path)
            for f in os.listdir(out):
                os.remove(os.path.join(out, f))
            os.rmdir(out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
