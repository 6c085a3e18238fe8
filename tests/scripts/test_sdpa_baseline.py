#!/usr/bin/env python3
"""scripts/sdpa_baseline.py without a GPU, on dense rows: its sweep reading, FLOP and byte counts,
causal rule, timing statistics and records agree with the fa-bench binary (FABENCH_BINARY) and read
back in `fa-bench compare`/`gate`/`table`; the fa2 and aiter backends are skips naming the import
error where their library does not import (timing and --check), and call a stub flash_attn_func with
BSHD tensors, the scale and causal; --check with a callable is judged by fa-bench check; its flags
and outputs follow fa-bench's. Serving rows: test_sdpa_serving.py. The torch half (mask, reference)
runs only where torch imports.
Run: FABENCH_BINARY=build/cpu/fa-bench python3 tests/scripts/test_sdpa_baseline.py (ctest does this)."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_common import (BINARY, HAS_TORCH, META, NO_EXTERNAL, NUMPY_PYTHON, SOURCE,  # noqa: E402
                         Shaped, fa_bench, saved_sweep, sb, stub_module, temp_path, write_records)


@unittest.skipUnless(BINARY, "no fa-bench binary (set FABENCH_BINARY)")
class AgreesWithFaBench(unittest.TestCase):
    def test_csv_sweeps_read_like_fa_bench_expand_reads_them_with_the_same_flops_and_bytes(self):
        for name in ("edge.csv", "whisper.csv", "llm-d64.csv", "flydsl.csv"):
            path = os.path.join(SOURCE, "sweeps", name)
            ours = sb.load_csv_sweep(path)
            code, out = fa_bench("expand", path)
            self.assertEqual(code, 0, out)
            theirs = list(csv.DictReader(out.splitlines()))
            self.assertEqual(len(ours), len(theirs), name)
            for p, t in zip(ours, theirs):
                where = f"{name}:{p.sweep_line}"
                for field in ("B", "H", "Hk", "S", "Sk", "D", "seed"):
                    self.assertEqual(str(getattr(p, field)), t[field], f"{where} {field}")
                self.assertEqual((int(p.causal), p.dtype, p.layout, int(p.kv_cache)),
                                 (int(t["causal"]), t["dtype"], t["layout"], int(t["kv_cache"])), where)
                self.assertEqual(format(p.scale, ".9g"), t["scale"], where)
                self.assertEqual(sb.g6(p.flops()), t["flops"], where)
                self.assertEqual(sb.g6(p.bytes()), t["bytes"], where)
                self.assertEqual(p.sweep_line, int(t["sweep_line"]), where)

    def test_yaml_sweeps_expand_through_fa_bench(self):
        ps = sb.load_sweep(os.path.join(SOURCE, "sweeps", "ci.yaml"), BINARY)
        self.assertEqual(len(ps), 12)
        self.assertEqual([p.dtype for p in ps[:2]], ["fp16", "bf16"])
        chunk = [p for p in ps if p.name == "chunk-512-of-2k"][0]
        self.assertEqual((chunk.S, chunk.Sk, chunk.causal), (512, 2048, True))
        self.assertTrue(all(not p.invalid for p in ps))

    def test_flops_and_bytes_match_the_records_of_a_real_sweep_and_the_columns_match_its_header(self):
        sweep = temp_path(".csv")
        with open(sweep, "w") as f:
            f.write("name,B,H,Hk,S,Sk,D,causal,dtype\nwide,2,4,2,9,3,16,1,fp16|fp32\nnarrow,1,2,1,3,70,24,1,bf16\n")
        out_csv = temp_path(".csv")
        code, out = fa_bench("sweep", sweep, "--paths", "cpu-flash", "--no-timing", "--no-table", "-o", out_csv)
        self.assertEqual(code, 0, out)
        with open(out_csv, newline="") as f:
            reader = csv.DictReader(f)
            self.assertEqual(tuple(reader.fieldnames), tuple(sb.COLUMNS), "the script must write fa-bench's schema")
            records = list(reader)
        ours = sb.load_csv_sweep(sweep)
        self.assertEqual(len(records), len(ours))
        for p, r in zip(ours, records):
            self.assertEqual((sb.g6(p.flops()), sb.g6(p.bytes())), (r["flops"], r["bytes"]), r["name"])

    def test_torch_records_read_in_compare_and_a_slower_one_fails_the_gate(self):
        p = sb.load_csv_sweep(os.path.join(SOURCE, "sweeps", "whisper.csv"))[0]
        stats = {"median_ms": 1.0, "min_ms": 0.99, "max_ms": 1.02, "spread": 0.004, "samples": 40,
                 "mode": "cold", "stopped_by": "spread"}
        old = write_records([sb.record_fields(p, "torch-flash", "pass", "timed only (not validated)", META, stats),
                             sb.record_fields(p, "torch-math", "skip", "No available kernel, really", META)])
        new = write_records([sb.record_fields(p, "torch-flash", "pass", "timed only", META, {**stats, "median_ms": 1.2}),
                             sb.record_fields(p, "torch-math", "skip", "No available kernel, really", META)])
        code, out = fa_bench("compare", old, new)
        self.assertEqual(code, 0, out)
        self.assertIn("| whisper-enc-b1 fp16 | torch-flash | 0 |", out)
        self.assertIn("0 same, 1 slow, 0 fast, 0 ambiguous, 1 untimed", out)
        code, out = fa_bench("gate", "--baseline", old, new)
        self.assertEqual(code, 1, out)
        self.assertTrue(out.rstrip().endswith("gate: FAIL 1 slow, 0 missing, 0 wrong, 0 ambiguous of 2 records"), out)


class ConventionsWithoutTorch(unittest.TestCase):
    def test_causal_is_bottom_right_and_rows_past_sk_see_nothing(self):
        p = sb.Problem(S=5, Sk=3, causal=True)
        self.assertEqual([p.visible_keys(i) for i in range(5)], [0, 0, 1, 2, 3])
        self.assertEqual(p.unmasked_pairs(), 6)
        q = sb.Problem(S=2, Sk=6, causal=True)  # decode-like chunk: rows see 5 and 6 keys
        self.assertEqual([q.visible_keys(i) for i in range(2)], [5, 6])

    def test_the_closed_form_pair_count_equals_the_row_sum(self):
        for S in (1, 2, 7, 64, 65):
            for Sk in (1, 3, 64, 100):
                p = sb.Problem(S=S, Sk=Sk, causal=True)
                self.assertEqual(p.unmasked_pairs(), sum(p.visible_keys(i) for i in range(S)), (S, Sk))

    def test_a_dense_problem_has_s_and_sk_for_every_sequence(self):
        p = sb.Problem(B=3, S=5, Sk=7)
        self.assertEqual((p.q_lens, p.k_lens), ([5] * 3, [7] * 3))
        (q,) = sb.problems_from_cells({"B": "2", "H": "2", "S": "4", "Sk": "6", "D": "16"}, "f.csv", 2)
        self.assertEqual((q.q_lens, q.k_lens), ([4, 4], [6, 6]))

    def test_flops_count_query_heads_and_bytes_count_kv_heads_once(self):
        p = sb.Problem(B=2, H=8, Hk=2, S=4, Sk=10, D=64, dtype="bf16")
        self.assertEqual(p.flops(), 4 * 2 * 8 * 64 * 40)
        self.assertEqual(p.bytes(), 2 * (2 * 2 * 4 * 8 * 64 + 2 * 2 * 10 * 2 * 64) + 4 * 2 * 8 * 4)

    def test_invalid_rows_carry_the_field_and_reason(self):
        (p,) = sb.problems_from_cells({"B": "1", "H": "6", "Hk": "4", "S": "2", "D": "16"}, "f.csv", 3)
        self.assertEqual(p.invalid, "Hk: H % Hk must be 0 (H=6, Hk=4)")
        with self.assertRaisesRegex(ValueError, "f.csv:4"):
            sb.problems_from_cells({"B": "1", "H": "x", "S": "2", "D": "16"}, "f.csv", 4)

    def test_timing_statistics_and_stopping_follow_the_harness(self):
        st = sb.timing_stats([1.0, 2.0, 3.0, 10.0])
        self.assertEqual((st["median_ms"], st["min_ms"], st["max_ms"], st["samples"]), (2.5, 1.0, 10.0, 4))
        self.assertAlmostEqual(st["spread"], 4.0825 / 4.0, places=4)  # sample stddev / mean
        pol = sb.TimingPolicy(min_samples=10, max_samples=12, target_spread=0.005, time_cap_s=0.5)
        self.assertIsNone(sb.stop_reason([1.0] * 9, 0.1, pol), "9 identical samples are still too few")
        self.assertEqual(sb.stop_reason([1.0] * 10, 0.1, pol), "spread")
        self.assertEqual(sb.stop_reason([1.0, 2.0] * 6, 0.1, pol), "max-samples")
        self.assertEqual(sb.stop_reason([1.0, 2.0], 0.6, pol), "cap")

    def test_a_sample_reads_l2_away_and_covers_the_launch_before_its_start_event(self):
        log = []

        class Buf:  # the flush buffer: what the flush does to it
            def max(self):
                log.append("read flush")

            def fill_(self, v):
                log.append("write flush")

        class Event:
            def __init__(self, enable_timing):
                self.name = "start" if not any(e == "start made" for e in log) else "end"
                log.append(self.name + " made")

            def record(self):
                log.append(self.name)

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return 1.0

        cuda = SimpleNamespace(Event=Event, _sleep=lambda cycles: log.append(("sleep", cycles)))
        flush = sb.ColdL2.__new__(sb.ColdL2)
        flush.buf = Buf()
        pol = sb.TimingPolicy(min_samples=2, max_samples=2, target_spread=0.005, time_cap_s=0.5, warmup=0)
        st = sb.time_call(SimpleNamespace(cuda=cuda), lambda: log.append("call"), flush, pol)
        self.assertEqual(st["samples"], 2)
        one = ["read flush", ("sleep", sb.LAUNCH_COVER_CYCLES), "start", "call", "end"]
        self.assertEqual(log, ["start made", "end made"] + one + one)
        self.assertGreaterEqual(sb.LAUNCH_COVER_CYCLES, 200_000, "at ~2 GHz, >= 100 us: longer than SDPA's launch")

    def test_records_fill_metrics_and_timing_columns_only_when_measured(self):
        p = sb.Problem(name="x", S=8, Sk=8)
        skip = sb.record_fields(p, "torch-flash", "skip", "Flash attention\nrequires fp16", META)
        self.assertEqual(skip["reason"], "Flash attention requires fp16", "one line per record")
        self.assertEqual((skip["median_ms"], skip["max_abs_err"]), ("", ""))
        m = {"max_abs": 1e-3, "mean_abs": 1e-4, "rel_l2": 1e-3, "cosine": 0.99999, "nan_inf": 0, "tol": 5e-3}
        st = {"median_ms": 0.002, "min_ms": 0.002, "max_ms": 0.003, "spread": 0.01, "samples": 12,
              "mode": "cold", "stopped_by": "cap"}
        rec = sb.record_fields(p, "torch-efficient", "pass", "ok", META, st, m)
        self.assertEqual(rec["tflops"], sb.g6(p.flops() / 2e-6 / 1e12))
        self.assertEqual((rec["rule"], rec["tol"], rec["rows_checked"]), ("fixed", "0.005", "8"))


class ExternalBackends(unittest.TestCase):
    def test_fa2_and_aiter_are_backends_whose_records_carry_their_own_names(self):
        self.assertEqual(sb.BACKENDS, ("flash", "efficient", "cudnn", "math", "flex", "fa2", "aiter"))
        self.assertEqual([sb.record_path(b) for b in sb.BACKENDS],
                         ["torch-flash", "torch-efficient", "torch-cudnn", "torch-math", "torch-flex", "fa2", "aiter"])

    @unittest.skipUnless(NO_EXTERNAL, "flash_attn or aiter is importable here")
    def test_a_library_that_does_not_import_is_named_with_its_error(self):
        self.assertEqual(sb.import_external("fa2"),
                         (None, "flash_attn.flash_attn_func does not import: ModuleNotFoundError: No module named 'flash_attn'"))
        self.assertEqual(sb.import_external("aiter"),
                         (None, "aiter.flash_attn_func does not import: ModuleNotFoundError: No module named 'aiter'"))

    def stub(self, module, returns_tuple=False, extra=""):
        return stub_module(self, module, returns_tuple, extra)

    def test_a_stub_flash_attn_gets_bshd_tensors_the_scale_and_causal_and_no_dropout(self):
        self.stub("flash_attn")
        fn, why = sb.import_external("fa2")
        self.assertIsNone(why)
        p = sb.Problem(B=2, H=8, Hk=2, S=5, Sk=9, D=32, causal=True)
        out = sb.external_call(fn, p, Shaped(2, 5, 8, 32), Shaped(2, 9, 2, 32), Shaped(2, 9, 2, 32))
        self.assertEqual(out, "O from flash_attn")
        (call,) = sys.modules["flash_attn"].calls
        self.assertEqual((call["q"], call["k"], call["v"]), ((2, 5, 8, 32), (2, 9, 2, 32), (2, 9, 2, 32)))
        self.assertEqual((call["dropout_p"], call["causal"]), (0.0, True))
        self.assertAlmostEqual(call["softmax_scale"], 1 / 32 ** 0.5)
        self.assertEqual((call["window_size"], call["return_attn_probs"]), ((-1, -1), False), "defaults: no window, O alone")
        sb.external_call(fn, sb.Problem(S=4, Sk=4, D=16, scale=0.3), Shaped(1, 4, 1, 16), Shaped(1, 4, 1, 16),
                         Shaped(1, 4, 1, 16))
        self.assertEqual((sys.modules["flash_attn"].calls[1]["softmax_scale"], sys.modules["flash_attn"].calls[1]["causal"]),
                         (0.3, False), "a given scale is passed as it is")

    def test_an_aiter_that_answers_a_tuple_gives_its_first_element_as_o(self):
        self.stub("aiter", returns_tuple=True)
        fn, why = sb.import_external("aiter")
        self.assertIsNone(why)
        self.assertEqual(sb.external_call(fn, sb.Problem(), Shaped(1, 1, 1, 64), Shaped(1, 1, 1, 64), Shaped(1, 1, 1, 64)),
                         "O from aiter")

    def time_sweep(self, sweep_text, backends, status=0):
        """scripts/sdpa_baseline.py over a CSV sweep of this text: (the sweep's path, the records'
        path, the records), checked to exit `status` (2 with an invalid row, as fa-bench) and to
        write fa-bench's columns."""
        sweep, out = temp_path(".csv"), temp_path(".csv")
        with open(sweep, "w") as f:
            f.write(sweep_text)
        res = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "sdpa_baseline.py"), sweep,
                              "--backends", backends, "-o", out], capture_output=True, text=True)
        self.assertEqual(res.returncode, status, res.stderr)
        with open(out, newline="") as f:
            reader = csv.DictReader(f)
            self.assertEqual(tuple(reader.fieldnames), tuple(sb.COLUMNS))
            return sweep, out, list(reader)

    def test_fp32_is_refused_before_the_library_is_called(self):
        self.assertEqual(sb.external_refusal(sb.Problem(dtype="fp32"), "aiter"), "aiter.flash_attn_func takes fp16 and bf16 only")
        self.assertIsNone(sb.external_refusal(sb.Problem(dtype="bf16"), "fa2"))

    def test_fp8_rows_are_skips_naming_why_for_every_backend_with_no_device_needed(self):
        sweep, _, rows = self.time_sweep("name,B,H,Hk,S,Sk,D,causal,dtype\nf8,1,4,2,9,17,64,1,fp8_e4m3|fp8_e5m2\n",
                                      "flash,cudnn,flex,fa2")
        self.assertEqual(len(rows), 8)
        self.assertEqual({r["status"] for r in rows}, {"skip"})
        self.assertEqual({r["reason"] for r in rows}, {sb.FP8_SKIP})
        p = sb.Problem(B=1, H=4, Hk=2, S=9, Sk=17, D=64, dtype="fp8_e4m3")
        q, kv, lse = 9 * 4 * 64, 17 * 2 * 64, 4 * 9 * 4
        self.assertEqual(p.bytes(), q * 1 + 2 * kv * 1 + q * 2 + lse, "1-byte inputs, a bf16 O")
        if BINARY:  # the same count as the binary's
            code, text = fa_bench("expand", sweep)
            self.assertEqual(code, 0, text)
            for t in csv.DictReader(text.splitlines()):
                self.assertEqual(sb.g6(p.bytes()), t["bytes"], t["dtype"])

    def test_every_fa_bench_dtype_maps_to_its_torch_dtype_fnuz_included(self):
        fake = SimpleNamespace(**{n: "torch." + n for n in ("float16", "bfloat16", "float32", "float8_e4m3fn",
                                                            "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")})
        self.assertEqual(sb.torch_dtype(fake, "fp8_e4m3fnuz"), "torch.float8_e4m3fnuz")
        self.assertEqual(sb.torch_dtype(fake, "fp8_e5m2fnuz"), "torch.float8_e5m2fnuz")
        self.assertEqual(sb.torch_dtype(fake, "fp8_e4m3"), "torch.float8_e4m3fn")
        self.assertEqual(sb.torch_dtype(fake, "bf16"), "torch.bfloat16")
        self.assertTrue(sb.is_fp8("fp8_e5m2fnuz"))
        if BINARY:  # every name fa-bench lists in its unknown-dtype error has a torch dtype
            with tempfile.TemporaryDirectory() as d:
                sweep = os.path.join(d, "bad.csv")
                with open(sweep, "w") as f:
                    f.write("name,B,H,Hk,S,Sk,D,causal,dtype\nx,1,1,1,1,1,64,0,fp8_e4m3fnz\n")
                code, text = fa_bench("expand", sweep)
            self.assertEqual(code, 2, text)
            self.assertIn("bad.csv:2: field 'dtype'", text)
            names = text[text.index("unknown dtype 'fp8_e4m3fnz' (") + len("unknown dtype 'fp8_e4m3fnz' ("):].split(")")[0]
            self.assertEqual(set(names.split(", ")), set(sb.TORCH_DTYPES))

    @unittest.skipUnless(NO_EXTERNAL, "flash_attn or aiter is importable here")
    def test_timing_writes_a_skip_naming_the_import_error_for_every_record_of_each_backend(self):
        _, out, rows = self.time_sweep("name,B,H,Hk,S,Sk,D,causal,dtype\nboth,1,4,2,9,17,64,1,fp16|bf16\nbad,1,6,4,2,2,16,0,fp16\n",
                                  "fa2,aiter", status=2)
        self.assertEqual([(r["name"], r["dtype"], r["path"], r["status"]) for r in rows],
                         [("both", "fp16", "fa2", "skip"), ("both", "fp16", "aiter", "skip"),
                          ("both", "bf16", "fa2", "skip"), ("both", "bf16", "aiter", "skip"),
                          ("bad", "fp16", "fa2", "invalid"), ("bad", "fp16", "aiter", "invalid")])
        self.assertEqual(rows[0]["reason"], "flash_attn.flash_attn_func does not import: ModuleNotFoundError: "
                                            "No module named 'flash_attn'")
        self.assertEqual(rows[1]["reason"], "aiter.flash_attn_func does not import: ModuleNotFoundError: "
                                            "No module named 'aiter'")
        if BINARY:
            code, text = fa_bench("compare", out, out)
            self.assertEqual(code, 0, text)
            self.assertIn("0 same, 0 slow, 0 fast, 0 ambiguous, 6 untimed", text)

    @unittest.skipUnless(NO_EXTERNAL and BINARY, "flash_attn or aiter is importable here, or no fa-bench binary")
    def test_check_writes_a_skip_naming_the_import_error_for_every_saved_record(self):
        tmp = tempfile.mkdtemp(prefix="sdpa-check-skip-")
        sweep = os.path.join(tmp, "s.csv")
        with open(sweep, "w") as f:
            f.write("name,B,H,Hk,S,Sk,D,causal,dtype,kv_cache\nplain,1,2,2,7,7,16,0,fp16,0\n"
                    "kv,1,2,1,1,40,32,1,bf16,1\n")
        saved = os.path.join(tmp, "saved")
        code, text = fa_bench("sweep", sweep, "--paths", "cpu-flash", "--no-timing", "--no-table",
                              "--save-tensors", saved, "-o", os.path.join(tmp, "r.csv"))
        self.assertEqual(code, 0, text)
        out = os.path.join(tmp, "out")
        res = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "sdpa_baseline.py"), "--check", saved,
                              "--backends", "fa2", "--check-out", out, "--fa-bench", BINARY],
                             capture_output=True, text=True)
        self.assertEqual(res.returncode, 0, res.stderr)
        with open(os.path.join(out, "fa2.csv"), newline="") as f:
            reader = csv.DictReader(f)
            self.assertEqual(tuple(reader.fieldnames), tuple(sb.COLUMNS))
            rows = list(reader)
        self.assertEqual(sorted((r["name"], r["path"], r["status"]) for r in rows),
                         [("kv", "fa2", "skip"), ("plain", "fa2", "skip")])
        for r in rows:
            self.assertEqual(r["reason"], "flash_attn.flash_attn_func does not import: ModuleNotFoundError: "
                                          "No module named 'flash_attn'")
        code, text = fa_bench("compare", os.path.join(out, "fa2.csv"), os.path.join(out, "fa2.csv"))
        self.assertEqual(code, 0, text)


@unittest.skipUnless(HAS_TORCH, "torch is not importable")
class TorchHalfOnTheCpu(unittest.TestCase):
    def test_the_mask_follows_visible_keys(self):
        import torch
        p = sb.Problem(S=7, Sk=4, causal=True)
        mask = sb.causal_mask(torch, p, "cpu")
        self.assertEqual(mask.sum(dim=1).tolist(), [p.visible_keys(i) for i in range(7)])

    def test_the_reference_is_zero_on_rows_that_see_nothing_and_matches_gqa_by_repetition(self):
        import torch
        p = sb.Problem(B=1, H=4, Hk=2, S=5, Sk=3, D=8, causal=True, dtype="fp32")
        q, k, v = sb.make_inputs(torch, p, "cpu")
        ref = sb.reference_fp32(torch, p, q, k, v)
        self.assertEqual(ref[:, :, :2].abs().max().item(), 0.0)
        self.assertTrue(torch.isfinite(ref).all().item())
        rows = sb.reference_fp32(torch, sb.Problem(B=1, H=4, Hk=4, S=5, Sk=3, D=8, causal=True, dtype="fp32"), q,
                                 k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1))
        self.assertTrue(torch.allclose(ref, rows))


@unittest.skipUnless(BINARY and NUMPY_PYTHON, "no fa-bench binary or no python3 with numpy")
class CheckRoute(unittest.TestCase):
    """--check with --callable: a kernel outside fa-bench, judged by `fa-bench check`'s rule."""

    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.saved, cls.module = saved_sweep("sdpa-check-", "s.csv", "name,B,H,Hk,S,Sk,D,causal,dtype,layout\n"
                                                     "gqa-causal,1,4,2,5,9,32,1,fp16|bf16,bshd\n"
                                                     "bhsd-plain,2,2,2,7,7,16,0,fp16,bhsd\n")

    def check(self, fn, out):
        res = subprocess.run([NUMPY_PYTHON, os.path.join(SOURCE, "scripts", "sdpa_baseline.py"), "--check", self.saved,
                              "--callable", f"{self.module}:{fn}", "--check-out", out, "--fa-bench", BINARY],
                             capture_output=True, text=True)
        rows = list(csv.DictReader(open(os.path.join(out, f"callable-{fn}.csv")))) if res.returncode in (0, 1) else []
        return res.returncode, rows, res.stdout + res.stderr

    def test_a_correct_callable_passes_every_saved_record_under_fa_benchs_rule(self):
        code, rows, out = self.check("right", os.path.join(self.tmp, "right"))
        self.assertEqual(code, 0, out)
        self.assertEqual(len(rows), 3, out)
        self.assertEqual({r["status"] for r in rows}, {"pass"}, out)
        self.assertEqual({r["path"] for r in rows}, {"callable-right"})
        self.assertTrue(all(r["rule"] for r in rows), "judged by a rule, not waved through")

    def test_a_top_left_causal_callable_fails_the_causal_records_and_the_exit_status(self):
        code, rows, out = self.check("top_left", os.path.join(self.tmp, "top_left"))
        self.assertEqual(code, 1, out)
        by_name = {(r["name"], r["dtype"]): r["status"] for r in rows}
        self.assertEqual(by_name[("gqa-causal", "fp16")], "fail", out)
        self.assertEqual(by_name[("gqa-causal", "bf16")], "fail", out)
        self.assertEqual(by_name[("bhsd-plain", "fp16")], "pass", "S == Sk and no mask: both alignments agree")


class ArgumentsAndOutputs(unittest.TestCase):
    """fa-bench's flag rules and output policy, before any work, with a message and exit 2, never a
    traceback: -o equal to the sweep, -o in a missing folder, NaN and negative numbers, min above
    max samples; and torch missing is said in a line."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sdpa-args-")
        self.sweep = os.path.join(self.tmp, "s.csv")
        self.text = "name,B,H,S,D\na,1,2,8,16\n"
        with open(self.sweep, "w") as f:
            f.write(self.text)

    def script(self, *args, env=None):
        res = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "sdpa_baseline.py"), *args],
                             capture_output=True, text=True, env=env)
        return res.returncode, res.stderr

    def test_an_output_that_is_the_sweep_is_refused_and_the_sweep_kept(self):
        for out in (self.sweep, os.path.join(self.tmp, ".", "s.csv")):
            code, err = self.script(self.sweep, "-o", out, "--backends", "math")
            self.assertEqual(code, 2, err)
            self.assertIn("refusing to overwrite", err)
            self.assertNotIn("Traceback", err)
            with open(self.sweep) as f:
                self.assertEqual(f.read(), self.text)

    def test_an_output_in_a_missing_folder_or_a_folder_is_refused_before_any_work(self):
        for out, why in ((os.path.join(self.tmp, "no", "such", "out.csv"), "does not exist"), (self.tmp, "is a directory")):
            code, err = self.script(self.sweep, "-o", out, "--backends", "math")
            self.assertEqual(code, 2, err)
            self.assertIn(why, err)
            self.assertNotIn("Traceback", err)

    def test_nan_negative_and_crossed_timing_flags_are_refused_naming_the_flag(self):
        out = os.path.join(self.tmp, "out.csv")
        for flags, named in ((["--time-cap", "nan"], "--time-cap"), (["--time-cap", "-1"], "--time-cap"),
                             (["--spread", "inf"], "--spread"), (["--warmup", "-1"], "--warmup"),
                             (["--min-samples", "0"], "--min-samples"),
                             (["--min-samples", "20", "--max-samples", "10"], "--max-samples")):
            code, err = self.script(self.sweep, "-o", out, "--backends", "math", *flags)
            self.assertEqual(code, 2, (flags, err))
            self.assertIn(named, err)
            self.assertNotIn("Traceback", err)
            self.assertFalse(os.path.exists(out), flags)

    def test_a_check_out_that_is_a_file_a_record_or_in_a_missing_folder_is_refused_before_any_work(self):
        rec = os.path.join(self.tmp, "rec")
        os.makedirs(rec)
        for out, why in ((self.sweep, "exists and is not a folder"),
                         (os.path.join(self.tmp, "no", "such", "stage"), "does not exist"),
                         (rec, "refusing to stage into it")):
            code, err = self.script("--check", rec, "--check-out", out, "--backends", "math")
            self.assertEqual(code, 2, (out, err))
            self.assertIn("--check-out", err)
            self.assertIn(why, err)
            self.assertNotIn("Traceback", err)
        with open(self.sweep) as f:
            self.assertEqual(f.read(), self.text)

    def test_a_backends_list_that_names_none_is_refused_not_an_empty_results_file(self):
        out = os.path.join(self.tmp, "out.csv")
        for value in ("", ",", " , "):
            code, err = self.script(self.sweep, "-o", out, "--backends", value)
            self.assertEqual(code, 2, (value, err))
            self.assertIn("names no backend", err)
            self.assertFalse(os.path.exists(out), value)

    def test_usage_errors_exit_2_before_any_work_as_in_fa_bench(self):
        empty, rec = os.path.join(self.tmp, "empty-rec"), os.path.join(self.tmp, "rec")
        os.makedirs(empty)
        os.makedirs(rec)
        with open(os.path.join(rec, "problem.json"), "w") as f:
            f.write("{}\n")
        with open(os.path.join(self.tmp, "mod_ok.py"), "w") as f:
            f.write("def fn(q, k, v, causal, scale):\n    return q\n")
        txt = os.path.join(self.tmp, "s.txt")
        with open(txt, "w") as f:
            f.write(self.text)
        bad = os.path.join(self.tmp, "bad.csv")
        with open(bad, "w") as f:
            f.write("name,B,H,S,D\na,1,2,8,abc\n")
        out = os.path.join(self.tmp, "out.csv")
        for args, named in (
                (["--check", os.path.join(self.tmp, "no-such-folder"), "--backends", "fa2"], "is not a folder"),
                (["--check", self.sweep, "--backends", "fa2"], "is not a folder"),
                (["--check", empty, "--backends", "fa2"], "no problem.json"),
                (["--check", rec, "--callable", "no_colon"], "--callable 'no_colon': expected module:function"),
                (["--check", rec, "--callable", "no_such_module_xyz:fn"], "ModuleNotFoundError"),
                (["--check", rec, "--callable", os.path.join(self.tmp, "mod_ok.py") + ":missing"], "AttributeError"),
                ([os.path.join(self.tmp, "no-such.csv"), "-o", out, "--backends", "fa2"], "does not exist"),
                ([txt, "-o", out, "--backends", "fa2"], "unknown sweep format"),
                ([self.sweep, "-o", out, "--backends", "fa2", "--fa-bench", os.path.join(self.tmp, "no-fa-bench")],
                 "--fa-bench"),
                ([bad, "-o", out, "--backends", "fa2"], ":2: field 'D'")):
            code, err = self.script(*args)
            self.assertEqual(code, 2, (args, err))
            said = err[err.find("sdpa_baseline.py: error:"):]  # not the usage text, which names every flag
            self.assertIn("error:", said, (args, err))
            self.assertIn(named, said, (args, err))
            self.assertNotIn("Traceback", err, args)
            self.assertFalse(os.path.exists(out), args)

    @unittest.skipUnless(NO_EXTERNAL, "flash_attn imports here: row b would run on a device")
    def test_an_invalid_row_makes_the_exit_status_2_as_fa_bench_sweep_does(self):
        bad = os.path.join(self.tmp, "bad.csv")
        with open(bad, "w") as f:
            f.write("name,B,H,S,D\na,1,2,8,300\nb,1,2,8,16\n")
        out = os.path.join(self.tmp, "out.csv")
        want, _ = fa_bench("sweep", bad, "--paths", "cpu-flash", "--no-timing", "--no-table", "-o",
                           os.path.join(self.tmp, "fa.csv"))
        code, err = self.script(bad, "-o", out, "--backends", "fa2")  # fa2 absent here: b is a skip, a invalid
        self.assertEqual(want, 2)
        self.assertEqual(code, want, err)
        with open(out) as f:
            self.assertEqual([r["status"] for r in csv.DictReader(f)], ["invalid", "skip"], "every record is written")

    def test_torch_missing_is_one_line_not_a_traceback(self):
        fake = os.path.join(self.tmp, "fake")
        os.makedirs(os.path.join(fake, "torch"))
        with open(os.path.join(fake, "torch", "__init__.py"), "w") as f:
            f.write("raise ImportError('No module named torch (planted by the test)')\n")
        env = dict(os.environ, PYTHONPATH=fake + os.pathsep + os.environ.get("PYTHONPATH", ""))
        code, err = self.script(self.sweep, "-o", os.path.join(self.tmp, "out.csv"), "--backends", "math", env=env)
        self.assertNotEqual(code, 0, err)
        self.assertIn("torch does not import", err)
        self.assertNotIn("Traceback", err)

if __name__ == "__main__":
    unittest.main(verbosity=2)
