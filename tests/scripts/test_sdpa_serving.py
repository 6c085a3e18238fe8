#!/usr/bin/env python3
"""scripts/sdpa_baseline.py on serving rows, without a GPU: they come through `fa-bench expand` with
each sequence's lengths and exact counts and key like fa-bench's own records; torch SDPA skips the
fields it has no kernel for by name, a varlen library gets packed rows by keyword; --check runs
serving folders per sequence or packed, judged by fa-bench check. Dense rows: test_sdpa_baseline.py.
Run: FABENCH_BINARY=build/cpu/fa-bench python3 tests/scripts/test_sdpa_serving.py (ctest does this)."""
import csv
import importlib.util
import os
import subprocess
import sys
import unittest
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_common import (BINARY, META, NO_EXTERNAL, NUMPY_PYTHON, SOURCE,  # noqa: E402
                         Shaped, fa_bench, ps, saved_sweep, sb, stub_module, temp_path, write_records)


# Small serving problems (every field, cpu-flash runs them in a blink) as a YAML sweep.
SERVING_YAML = """
defaults: {dtype: [fp16, bf16]}
problems:
  - {name: mixed-step, B: 3, H: 4, Hk: 2, S: 6, Sk: 40, D: 16, layout: thd, seqlens_q: "6|1|0",
     seqlens_k: "uniform:1:40", page_size: 8, causal: 1, kv_cache: 1}
  - {name: window-cap, B: 2, H: 4, Hk: 1, S: 3, Sk: 30, D: 32, causal: 1, window: "4,0", softcap: 30, page_size: 4}
  - {name: alibi12, B: 1, H: 12, Hk: 12, S: 9, Sk: 9, D: 16, causal: 1, alibi: 1}
"""


def serving_sweep():
    path = temp_path(".yaml")
    with open(path, "w") as f:
        f.write(SERVING_YAML)
    return path


@unittest.skipUnless(BINARY, "no fa-bench binary (set FABENCH_BINARY)")
class ServingProblemsThroughExpand(unittest.TestCase):
    def test_the_shipped_serving_sweep_reads_each_sequences_lengths_and_expands_counts(self):
        path = os.path.join(SOURCE, "sweeps", "serving.yaml")
        ours = sb.load_sweep(path, BINARY)
        code, out = fa_bench("expand", path)
        self.assertEqual(code, 0, out)
        theirs = list(csv.DictReader(out.splitlines()))
        self.assertEqual(len(ours), len(theirs))
        for p, t in zip(ours, theirs):
            where = f"serving.yaml:{p.sweep_line} {p.name}"
            self.assertEqual(("|".join(map(str, p.q_lens)), "|".join(map(str, p.k_lens))), (t["q_lens"], t["k_lens"]), where)
            self.assertEqual((sb.g6(p.flops()), sb.g6(p.bytes())), (t["flops"], t["bytes"]), where + ": expand's counts")
            self.assertEqual((p.seqlens_q, p.seqlens_k, str(p.page_size), p.window, p.alibi, format(p.softcap, ".9g")),
                             (t["seqlens_q"], t["seqlens_k"], t["page_size"], t["window"], t["alibi"], t["softcap"]), where)
            self.assertEqual(p.invalid, "", where)
        step = ours[0]
        self.assertEqual((step.name, step.layout, step.page_size, step.kv_cache), ("step-llama-gqa8", "thd", 16, True))
        self.assertEqual((step.q_lens, step.k_lens), ([256, 64, 1, 1, 1, 1, 1, 1], [768, 4096, 700, 2048, 3001, 4096, 1, 513]))
        decode = [p for p in ours if p.name == "decode-paged-gqa8"][0]
        self.assertEqual((decode.seqlens_k, decode.q_lens), ("uniform:256:8192", [1] * 8))
        self.assertTrue(all(256 <= n <= 8192 for n in decode.k_lens) and len(set(decode.k_lens)) > 1, decode.k_lens)
        by_name = {p.name: p for p in ours}
        self.assertEqual(by_name["mistral-chunk-window"].window, "4096,0")
        self.assertEqual((by_name["gemma2-chunk-softcap-window"].softcap, by_name["gemma2-chunk-softcap-window"].D), (50.0, 256))
        self.assertEqual((by_name["bloom176-decode-alibi"].alibi, by_name["bloom176-decode-alibi"].H), ("1", 112))
        self.assertNotEqual(step.flops(), 4.0 * step.B * step.H * step.D * step.unmasked_pairs(),
                            "the padded dense count is not the varlen problem's: expand's is used")

    def test_serving_records_key_like_fa_benchs_own_so_a_table_puts_them_side_by_side(self):
        sweep = serving_sweep()
        fa_csv = temp_path(".csv")
        code, out = fa_bench("sweep", sweep, "--paths", "cpu-flash", "--no-timing", "--no-table", "-o", fa_csv)
        self.assertEqual(code, 0, out)
        with open(fa_csv, newline="") as f:
            records = list(csv.DictReader(f))
        ours = sb.load_sweep(sweep, BINARY)
        self.assertEqual(len(ours), len(records))
        problem_columns = sb.COLUMNS[sb.COLUMNS.index("name"):sb.COLUMNS.index("seed") + 1] + ["flops", "bytes"]
        peers = [sb.record_fields(p, "torch-flex", "skip", "no device here", META) for p in ours]
        for r, mine in zip(records, peers):
            self.assertEqual({c: mine[c] for c in problem_columns}, {c: r[c] for c in problem_columns}, r["name"])
        code, out = fa_bench("table", fa_csv, write_records(peers))
        self.assertEqual(code, 0, out)
        self.assertIn("| problem | unit | cpu-flash | torch-flex |", out)
        self.assertIn("| window-cap bf16 | TFLOP/s | pass | skip |", out)
        self.assertEqual(out.count("| pass | skip |"), 6, "one row per problem, both paths in it")

    def test_a_csv_sweep_with_serving_columns_goes_through_expand(self):
        cells = {"B": "2", "H": "2", "S": "3", "Sk": "9", "D": "16", "seqlens_k": "9|4", "window": "2,0"}
        with self.assertRaisesRegex(ValueError, r"f.csv:7: seqlens_k, window: serving problems are read through "
                                                r"`fa-bench expand`"):
            sb.problems_from_cells(cells, "f.csv", 7)
        sweep = temp_path(".csv")
        with open(sweep, "w") as f:
            f.write('name,B,H,S,Sk,D,causal,seqlens_k,window\nvar,2,2,3,9,16,1,9|4,"2,0"\n')
        (p,) = sb.load_sweep(sweep, BINARY)
        self.assertEqual((p.q_lens, p.k_lens, p.window, p.sweep_line), ([3, 3], [9, 4], "2,0", 2))
        code, out = fa_bench("expand", sweep)
        self.assertIn("," + sb.g6(p.flops()) + ",", out)


# flash_attn_varlen_func as flash-attention 2.6 declares it (flash_attn/flash_attn_interface.py), and as
# 2.5 did, without softcap; each records its call.
VARLEN_STUB = """
def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), {softcap}alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None):
    calls.append(dict(q=q.shape, k=k.shape, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                      max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, dropout_p=dropout_p,
                      softmax_scale=softmax_scale, causal=causal, window_size=window_size,
                      {softcap_seen}alibi_slopes=alibi_slopes))
    return "O packed"
"""


class FakeTorch:
    """What peer_serving.varlen_call asks of torch: dtypes and tensor(list) (kept as the list)."""
    int32, float32 = "int32", "float32"

    @staticmethod
    def tensor(data, dtype=None, device=None):
        return (list(data), dtype)


class DeviceShaped(Shaped):
    device = "cuda"


@unittest.skipUnless(BINARY, "no fa-bench binary (set FABENCH_BINARY)")
class ServingPeers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rows = {p.name + " " + p.dtype + " " + str(p.page_size): p
                    for p in sb.load_sweep(os.path.join(SOURCE, "sweeps", "serving.yaml"), BINARY)}
        cls.by_name = {p.name: p for p in cls.rows.values()}

    def test_torch_sdpa_skips_each_serving_row_naming_the_field_it_has_no_kernel_for(self):
        want = {"step-llama-gqa8": None, "decode-paged-gqa8": None,
                "mistral-chunk-window": "torch SDPA has no sliding window (window 4096,0); --backends flex runs it",
                "mistral-decode-window": "torch SDPA has no sliding window (window 4096,0); --backends flex runs it",
                "gemma2-chunk-softcap-window": "torch SDPA has no sliding window (window 4096,0); --backends flex runs it",
                "gemma2-chunk-softcap-global": "torch SDPA has no softcap (softcap 50); --backends flex runs it",
                "gemma2-decode-softcap": "torch SDPA has no sliding window (window 4096,0); --backends flex runs it",
                "bloom-prefill-alibi": "torch SDPA has no ALiBi (alibi 1); --backends flex runs it",
                "bloom176-decode-alibi": "torch SDPA has no ALiBi (alibi 1); --backends flex runs it"}
        self.assertEqual(set(want), set(self.by_name))
        for name, p in self.by_name.items():
            for b in sb.TORCH_BACKENDS:
                self.assertEqual(sb.serving_refusal(p, b), want[name], f"{name} {b}")
            self.assertIsNone(sb.serving_refusal(p, "flex"), f"{name}: flex runs every field")

    def test_the_records_say_how_each_peer_shaped_the_call_and_that_pages_were_gathered(self):
        step = self.rows["step-llama-gqa8 fp16 16"]
        self.assertEqual(ps.timing_notes(step, "flash"), ["per sequence (8 calls timed as one)",
                                                          "paged KV gathered to dense before the call (page_size 16)"])
        self.assertEqual(ps.timing_notes(step, "flex")[0], "one packed batch, document mask over 8 sequences")
        self.assertEqual(ps.timing_notes(self.by_name["mistral-chunk-window"], "flex"), [])

    def test_a_varlen_library_gets_packed_rows_by_keyword_and_only_the_fields_the_problem_sets(self):
        stub_module(self, "flash_attn", extra="calls = []\n" + VARLEN_STUB.format(
            softcap="softcap=0.0, ", softcap_seen="softcap=softcap, "))
        fn, why = sb.import_external("fa2", sb.EXTERNAL_VARLEN)
        self.assertIsNone(why)
        calls = sys.modules["flash_attn"].calls
        step = self.by_name["step-llama-gqa8"]
        self.assertIsNone(sb.serving_refusal(step, "fa2", (fn, why)))
        call, unpack = ps.varlen_call(FakeTorch, step, fn, DeviceShaped(326, 32, 128), DeviceShaped(15223, 4, 128), None)
        self.assertEqual(unpack(call()), ("O packed", None))
        c = calls[-1]
        self.assertEqual((c["q"], c["k"]), ((326, 32, 128), (15223, 4, 128)))
        self.assertEqual(c["cu_seqlens_q"], ([0, 256, 320, 321, 322, 323, 324, 325, 326], "int32"))
        self.assertEqual(c["cu_seqlens_k"][0][-1], 15223)
        self.assertEqual((c["max_seqlen_q"], c["max_seqlen_k"], c["causal"], c["dropout_p"]), (256, 4096, True, 0.0))
        self.assertEqual((c["window_size"], c["softcap"], c["alibi_slopes"]), ((-1, -1), 0.0, None), "defaults: none set")
        for name, want in (("gemma2-chunk-softcap-window", dict(window_size=(4096, 0), softcap=50.0)),
                           ("bloom-prefill-alibi", dict(alibi_slopes=([2.0 ** -(k / 4) for k in range(1, 33)], "float32")))):
            p = self.by_name[name]
            call, _ = ps.varlen_call(FakeTorch, p, fn, DeviceShaped(p.S, p.H, p.D), DeviceShaped(p.Sk, p.Hk, p.D), None)
            call()
            self.assertEqual({k: calls[-1][k] for k in want}, want, name)
            self.assertEqual(calls[-1]["softmax_scale"], 1 / p.D ** 0.5)

    def test_a_flash_attn_without_softcap_skips_the_softcap_rows_by_name(self):
        stub_module(self, "flash_attn", extra="calls = []\n" + VARLEN_STUB.format(softcap="", softcap_seen=""))
        lib = sb.import_external("fa2", sb.EXTERNAL_VARLEN)
        self.assertEqual(sb.serving_refusal(self.by_name["gemma2-chunk-softcap-global"], "fa2", lib),
                         "flash_attn.flash_attn_varlen_func has no softcap keyword (softcap 50)")
        self.assertIsNone(sb.serving_refusal(self.by_name["mistral-chunk-window"], "fa2", lib))

    @unittest.skipUnless(NO_EXTERNAL, "flash_attn or aiter is importable here")
    def test_timing_skips_serving_rows_naming_the_varlen_functions_import_error_with_expands_counts(self):
        out = temp_path(".csv")
        res = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "sdpa_baseline.py"),
                              os.path.join(SOURCE, "sweeps", "serving.yaml"), "--backends", "fa2,aiter", "-o", out,
                              "--fa-bench", BINARY], capture_output=True, text=True)
        self.assertEqual(res.returncode, 0, res.stderr)
        with open(out, newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 2 * len(self.rows))
        self.assertEqual({(r["path"], r["status"], r["reason"]) for r in rows},
                         {("fa2", "skip", "flash_attn.flash_attn_varlen_func does not import: ModuleNotFoundError: "
                                          "No module named 'flash_attn'"),
                          ("aiter", "skip", "aiter.flash_attn_varlen_func does not import: ModuleNotFoundError: "
                                            "No module named 'aiter'")})
        code, text = fa_bench("expand", os.path.join(SOURCE, "sweeps", "serving.yaml"))
        expanded = list(csv.DictReader(text.splitlines()))
        self.assertEqual([(r["flops"], r["bytes"], r["window"], r["page_size"]) for r in rows[::2]],
                         [(t["flops"], t["bytes"], t["window"], t["page_size"]) for t in expanded])


# Serving folders for --check: what a per-sequence dense kernel runs (lengths, pages, kv_cache) and
# what it has no way to express (window, ALiBi, softcap).
CHECK_SERVING_YAML = """
problems:
  - {name: thd-paged-kv, B: 3, H: 4, Hk: 2, S: 6, Sk: 40, D: 32, layout: thd, seqlens_q: "6|1|0",
     seqlens_k: "40|9|3", page_size: 8, causal: 1, kv_cache: 1, dtype: fp16}
  - {name: keys-paged, B: 2, H: 2, S: 3, Sk: 30, D: 16, seqlens_k: "uniform:0:30", page_size: 4, causal: 1, dtype: bf16}
  - {name: dense-kv, B: 2, H: 4, Hk: 1, S: 1, Sk: 33, D: 16, causal: 1, kv_cache: 1, dtype: fp16}
  - {name: window, B: 1, H: 2, S: 4, Sk: 20, D: 16, causal: 1, window: "5,0", dtype: fp16}
  - {name: alibi, B: 1, H: 6, S: 5, Sk: 5, D: 16, causal: 1, alibi: 1, layout: bhsd, dtype: fp16}
  - {name: softcap, B: 1, H: 2, S: 3, Sk: 7, D: 16, softcap: 2, page_size: 4, dtype: bf16}
"""


@unittest.skipUnless(BINARY and NUMPY_PYTHON, "no fa-bench binary or no python3 with numpy")
class CheckServingFolders(unittest.TestCase):
    """--check on serving folders: unpacked, run, packed back into Q's storage, judged by fa-bench check."""

    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.saved, cls.module = saved_sweep("sdpa-check-serving-", "s.yaml", CHECK_SERVING_YAML)

    def test_a_dense_callable_runs_each_sequence_and_skips_the_fields_it_cannot_express(self):
        out = os.path.join(self.tmp, "callable")
        res = subprocess.run([NUMPY_PYTHON, os.path.join(SOURCE, "scripts", "sdpa_baseline.py"), "--check", self.saved,
                              "--callable", f"{self.module}:right", "--check-out", out, "--fa-bench", BINARY],
                             capture_output=True, text=True)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        with open(os.path.join(out, "callable-right.csv"), newline="") as f:
            rows = {r["name"]: r for r in csv.DictReader(f)}
        self.assertEqual({n: rows[n]["status"] for n in rows},
                         {"thd-paged-kv": "pass", "keys-paged": "pass", "dense-kv": "pass", "window": "skip",
                          "alibi": "skip", "softcap": "skip"}, "a kv_cache record's saved K/V hold the appended keys")
        self.assertEqual(rows["window"]["reason"], "--callable f(q, k, v, causal, scale) has no sliding window "
                                                   "(window 5,0); --backends flex runs it")
        self.assertEqual(rows["alibi"]["reason"], "--callable f(q, k, v, causal, scale) has no ALiBi (alibi 1); "
                                                  "--backends flex runs it")
        self.assertEqual((rows["softcap"]["page_size"], rows["thd-paged-kv"]["seqlens_q"]), ("4", "6|1|0"))
        self.assertTrue(all(r["rule"] for n, r in rows.items() if r["status"] == "pass"), "judged by a rule")

    def check_packed(self, name, lse_shift=0.0):
        """peer_check with a packed runner: numpy attention over the packed rows from the same mask
        and score as FlexAttention (tests/scripts/test_peer_serving.py's), O and LSE."""
        import numpy as np
        import peer_check
        import test_peer_serving as tps

        def packed(p, q, k, v):
            out = [tps.attend(p, *seq) for seq in zip(ps.split_rows(q, p.q_lens), ps.split_rows(k, p.k_lens),
                                                       ps.split_rows(v, p.k_lens))]
            return np.concatenate([o for o, _ in out]), np.concatenate([lse for _, lse in out], axis=1) + lse_shift

        out = os.path.join(self.tmp, name)
        args = SimpleNamespace(fabench=BINARY, check=[self.saved], check_out=out, accumulate_keys=None)
        code = peer_check.check_saved(args, {name: peer_check.Runner(packed=packed, lse=True)})
        with open(os.path.join(out, name + ".csv"), newline="") as f:
            return code, {r["name"]: r for r in csv.DictReader(f)}

    @unittest.skipUnless(importlib.util.find_spec("numpy"), "this python3 has no numpy")
    def test_a_packed_runner_takes_every_field_and_its_lse_is_judged(self):
        code, rows = self.check_packed("numpy-packed")
        self.assertEqual(code, 0, rows)
        self.assertEqual({r["status"] for r in rows.values()}, {"pass"}, rows)
        self.assertEqual(len(rows), 6)
        self.assertTrue(all(r["lse_max_err"] and float(r["lse_max_err"]) < 1e-3 for r in rows.values()), rows)
        code, rows = self.check_packed("numpy-packed-lse-off", lse_shift=0.1)
        self.assertEqual(code, 1, "an LSE 0.1 off fails: --no-lse is not passed for a runner that gives it")
        self.assertTrue(all(r["status"] == "fail" and "lse" in r["reason"].lower() for r in rows.values()), rows)

if __name__ == "__main__":
    unittest.main(verbosity=2)
