#!/usr/bin/env python3
"""scripts/peer_serving.py without a GPU: the serving fields read as fa-bench reads them, the mask and
score FlexAttention runs (on numbers, against hand-computed values), which peer refuses which field,
and the --save-tensors unpacking: a numpy attention built from the same mask and score, on sequences
unpacked from real folders (thd, paged, padded), packed back and judged by `fa-bench check`, passes,
and fails when the score's order or the mask's alignment is changed.
Run: FABENCH_BINARY=build/cpu/fa-bench python3 tests/scripts/test_peer_serving.py (ctest does this)."""
import glob
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from types import SimpleNamespace

SOURCE = os.environ.get("FABENCH_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import peer_serving as ps  # noqa: E402

BINARY = next((c for c in [os.environ.get("FABENCH_BINARY"), shutil.which("fa-bench"),
                           *sorted(glob.glob(os.path.join(SOURCE, "build", "*", "fa-bench")))]
               if c and os.access(c, os.X_OK)), None)
try:
    import numpy as np
except ImportError:  # Debian's python3-numpy (scripts/setup.sh); the folder tests need it
    np = None


def problem(**kw):
    """The fields peer_serving reads, with sdpa_baseline.Problem's defaults."""
    base = dict(B=1, H=1, Hk=1, S=1, Sk=1, D=16, causal=False, dtype="fp16", layout="bshd", kv_cache=False, scale=0.0,
                seqlens_q="", seqlens_k="", page_size=0, window="", alibi="0", softcap=0.0)
    base.update(kw)
    p = SimpleNamespace(**base)
    p.q_lens = kw.get("q_lens", [p.S] * p.B)
    p.k_lens = kw.get("k_lens", [p.Sk] * p.B)
    p.softmax_scale = lambda: p.scale or 1 / math.sqrt(p.D)
    return p


def mask(sq, sk, left, right):
    return [[int(ps.key_visible(i, j, sk - sq, left, right)) for j in range(sk)] for i in range(sq)]


class FieldsAsFaBenchReadsThem(unittest.TestCase):
    def test_a_window_cell_reads_as_left_right_and_causal_makes_right_zero(self):
        self.assertEqual(ps.window_bounds("4096,0", False), (4096, 0))
        self.assertEqual(ps.window_bounds("3|2", False), (3, 2), "a YAML list's cell")
        self.assertEqual(ps.window_bounds("3,2", True), (3, 0))
        self.assertEqual(ps.window_bounds("", True), (-1, 0), "causal alone: right 0, left unbounded")
        self.assertEqual(ps.window_bounds("", False), (-1, -1))

    def test_a_window_counts_only_where_it_masks_more_than_causal(self):
        self.assertTrue(ps.windowed(problem(window="4096,0", causal=True)))
        self.assertFalse(ps.windowed(problem(window="-1,5", causal=True)), "causal already cuts right")
        self.assertTrue(ps.windowed(problem(window="-1,5")))
        self.assertFalse(ps.windowed(problem(window="")))

    def test_the_fields_a_problem_sets_are_named_in_the_field_tables_order(self):
        p = problem(seqlens_k="uniform:1:9", page_size=16, window="8,0", causal=True, alibi="1", softcap=50.0)
        self.assertEqual(ps.fields_set(p), ["seqlens_k", "page_size", "window", "alibi", "softcap"])
        self.assertTrue(ps.is_serving(problem(layout="thd")), "thd alone is a packed problem")
        self.assertFalse(ps.is_serving(problem(causal=True, layout="bhsd")))
        self.assertEqual(ps.lengths("3|0|17"), [3, 0, 17])

    def test_standard_alibi_slopes_are_powers_of_two_with_the_interleave_past_one(self):
        self.assertEqual(ps.standard_alibi_slopes(8), [2.0 ** -k for k in range(1, 9)])
        # 12 heads: the 8 slopes of 8, then slopes 1, 3, 5, 7 of 16 (2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5).
        self.assertEqual(ps.standard_alibi_slopes(12), [2.0 ** -k for k in range(1, 9)] + [2.0 ** -(k + 0.5) for k in range(4)])
        self.assertEqual(len(ps.standard_alibi_slopes(112)), 112)
        self.assertEqual(ps.alibi_slopes("0.5|0.25", 4), [0.5, 0.25, 0.0, 0.0], "given slopes pad with 0 as fa-bench's")
        self.assertIsNone(ps.alibi_slopes("0", 4))


class MaskAndScoreOnNumbers(unittest.TestCase):
    def test_causal_is_bottom_right_as_flash_attentions_docstring_draws_it(self):
        self.assertEqual(mask(2, 5, -1, 0), [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
        self.assertEqual(mask(5, 2, -1, 0), [[0, 0], [0, 0], [0, 0], [1, 0], [1, 1]], "rows past Sk see nothing")

    def test_a_window_keeps_left_keys_before_and_right_keys_after_the_rows_position(self):
        # sq 3, sk 6: rows sit at keys 3, 4, 5; window (1, 1) keeps [at - 1, at + 1] within the keys.
        self.assertEqual(mask(3, 6, 1, 1), [[0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1]])
        self.assertEqual(mask(1, 5, 2, 0), [[0, 0, 1, 1, 1]], "Mistral's decode: the last left + 1 keys")
        self.assertEqual(mask(2, 2, -1, -1), [[1, 1], [1, 1]])

    def test_the_score_is_softcapped_first_then_alibi_biased(self):
        # score 100, cap 50: 50 tanh(2) = 48.201379; slope 0.5 at distance |0 + 3 - 1| = 2 adds -1.
        got = ps.modified_score(100.0, 0, 1, 3, softcap=50.0, slope=0.5)
        self.assertAlmostEqual(got, 50 * math.tanh(2.0) - 1.0, places=12)
        self.assertAlmostEqual(got, 47.201379, places=6)
        self.assertNotAlmostEqual(got, 50 * math.tanh(99.0 / 50), places=3, msg="bias before the cap is another number")

    def test_alibi_is_minus_slope_times_distance_from_the_rows_position_either_side(self):
        self.assertEqual(ps.alibi_bias(0.25, 0, 7, 3), -1.0)  # row at key 3, key 7: distance 4
        self.assertEqual(ps.alibi_bias(0.25, 2, 1, 3), -1.0)  # row at key 5, key 1: distance 4
        self.assertEqual(ps.modified_score(1.5, 0, 0, 0), 1.5, "no cap, no slope: the score as it is")


class WhoRunsWhat(unittest.TestCase):
    WINDOW = problem(window="4096,0", causal=True, S=64, Sk=8192)

    def test_torch_sdpa_names_the_field_it_has_no_kernel_for(self):
        self.assertEqual(ps.refusal(self.WINDOW, "flash"),
                         "torch SDPA has no sliding window (window 4096,0); --backends flex runs it")
        self.assertEqual(ps.refusal(problem(alibi="1"), "math"), "torch SDPA has no ALiBi (alibi 1); --backends flex runs it")
        self.assertEqual(ps.refusal(problem(softcap=50.0), "cudnn"),
                         "torch SDPA has no softcap (softcap 50); --backends flex runs it")
        self.assertIn("--callable f(q, k, v, causal, scale) has no softcap", ps.refusal(problem(softcap=30.0), "callable"))

    def test_lengths_and_pages_alone_run_everywhere_and_flex_runs_every_field(self):
        varlen = problem(B=2, layout="thd", seqlens_q="3|1", seqlens_k="9|4", page_size=16, q_lens=[3, 1], k_lens=[9, 4])
        for b in ("flash", "efficient", "cudnn", "math", "flex", "callable"):
            self.assertIsNone(ps.refusal(varlen, b), b)
        self.assertIsNone(ps.refusal(problem(window="8,0", alibi="1", softcap=5.0), "flex"))

    def test_a_varlen_library_refuses_a_field_its_function_has_no_keyword_for(self):
        old = {"q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k", "causal", "window_size",
               "alibi_slopes", "softmax_scale", "dropout_p"}  # flash-attn 2.5: no softcap
        name = "flash_attn.flash_attn_varlen_func"
        self.assertEqual(ps.refusal(problem(softcap=50.0), "fa2", old, name),
                         "flash_attn.flash_attn_varlen_func has no softcap keyword (softcap 50)")
        self.assertIsNone(ps.refusal(self.WINDOW, "fa2", old, name))
        self.assertIsNone(ps.refusal(problem(softcap=50.0), "fa2", None, name), "unknown parameters: the call decides")

    def test_timing_notes_say_how_the_call_was_shaped_and_that_pages_were_gathered(self):
        p = problem(B=3, S=4, Sk=9, q_lens=[4, 1, 2], k_lens=[9, 0, 5], page_size=16, layout="thd")
        self.assertEqual(ps.timing_notes(p, "flash"), ["per sequence (2 calls timed as one)",
                                                       "paged KV gathered to dense before the call (page_size 16)"])
        self.assertEqual(ps.timing_notes(p, "flex")[0], "one packed batch, document mask over 3 sequences")
        self.assertEqual(ps.timing_notes(p, "fa2")[0], "flash_attn_varlen_func over 3 packed sequences")
        self.assertEqual(ps.timing_notes(problem(B=2, S=4, Sk=9, window="2,0"), "flex"), [], "a dense batch")


def attend(p, q, k, v, softcap_last=False, top_left=False):
    """Attention on one sequence (q [sq, H, D], k, v [sk, Hk, D]) from key_visible and modified_score,
    in float64 numpy: what FlexAttention's mask_mod and score_mod compute. softcap_last and top_left
    are the two mistakes the tests plant. Returns (O [sq, H, D], LSE [H, sq])."""
    sq, sk = q.shape[0], k.shape[0]
    g = p.H // p.Hk
    left, right = ps.window_bounds(p.window, p.causal)
    slopes = ps.alibi_slopes(p.alibi, p.H)
    slope = None if slopes is None else np.array(slopes)[:, None, None]
    qh = q.astype(np.float64).transpose(1, 0, 2)
    kh, vh = (np.repeat(x.astype(np.float64).transpose(1, 0, 2), g, axis=0) for x in (k, v))
    q_pos, k_pos = np.arange(sq)[:, None], np.arange(sk)[None, :]
    off = 0 if top_left else sk - sq
    s = np.einsum("hsd,htd->hst", qh, kh) * p.softmax_scale()
    if softcap_last:
        s = ps.modified_score(s, q_pos, k_pos, off, 0.0, slope, np.tanh)
        s = ps.modified_score(s, q_pos, k_pos, off, p.softcap, None, np.tanh)
    else:
        s = ps.modified_score(s, q_pos, k_pos, off, p.softcap, slope, np.tanh)
    s = np.where(np.broadcast_to(ps.key_visible(q_pos, k_pos, off, left, right), s.shape), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    w = np.exp(s - m)
    lsum = w.sum(axis=-1, keepdims=True)
    o = np.where(lsum > 0, (w @ vh) / np.where(lsum > 0, lsum, 1), 0.0)
    lse = np.where(lsum[..., 0] > 0, np.log(np.where(lsum[..., 0] > 0, lsum[..., 0], 1)) + m[..., 0], -np.inf)
    return o.transpose(1, 0, 2), lse


def run_fa_bench(*args):
    res = subprocess.run([BINARY, *args], capture_output=True, text=True)
    return res.returncode, res.stdout + res.stderr


def saved_problem(folder):
    import json
    with open(os.path.join(folder, "problem.json")) as f:
        c = json.load(f)["problem"]
    return problem(B=int(c["B"]), H=int(c["H"]), Hk=int(c["Hk"]), S=int(c["S"]), Sk=int(c["Sk"]), D=int(c["D"]),
                   causal=c["causal"] == "1", dtype=c["dtype"], layout=c["layout"], kv_cache=c["kv_cache"] == "1",
                   scale=float(c["scale"]), seqlens_q=c["seqlens_q"], seqlens_k=c["seqlens_k"],
                   page_size=int(c["page_size"]), window=c["window"], alibi=c["alibi"], softcap=float(c["softcap"]))


# Problems from `fa-bench run` flags: every field at once (thd, zero-length sequence, paged with
# a shuffled table, window, ALiBi on GQA with 6 heads, softcap, kv_cache), padded bshd with key
# lengths and a page pool, and bhsd with a non-causal two-sided window and given slopes.
RUNS = {
    "thd-paged-all": ["--B", "3", "--H", "6", "--Hk", "2", "--S", "9", "--Sk", "40", "--D", "16", "--layout", "thd",
                      "--seqlens-q", "9|0|4", "--seqlens-k", "40|5|4", "--page-size", "8", "--window", "6,0", "--causal",
                      "--alibi", "1", "--softcap", "4", "--kv-cache", "--dtype", "fp16"],
    "bshd-keys-paged": ["--B", "3", "--H", "4", "--Hk", "4", "--S", "5", "--Sk", "30", "--D", "32",
                        "--seqlens-k", "30|0|7", "--page-size", "4", "--causal", "--softcap", "2", "--dtype", "bf16"],
    "bhsd-window": ["--B", "2", "--H", "3", "--Hk", "1", "--S", "7", "--Sk", "11", "--D", "16", "--layout", "bhsd",
                    "--window", "3,2", "--alibi", "0.5|0.25|2", "--dtype", "fp16"],
}


@unittest.skipUnless(BINARY and np is not None, "no fa-bench binary or no numpy")
class SavedFolders(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="peer-serving-")
        cls.folders = {}
        for name, flags in RUNS.items():
            saved = os.path.join(cls.tmp, name)
            code, out = run_fa_bench("run", *flags, "--name", name, "--paths", "cpu-flash", "--no-timing", "--no-table",
                                     "--save-tensors", saved, "-o", os.path.join(cls.tmp, name + ".csv"))
            assert code == 0, out
            (cls.folders[name],) = glob.glob(os.path.join(saved, "*"))

    def sequences(self, name):
        folder = self.folders[name]
        p = saved_problem(folder)
        p.q_lens, p.k_lens = ps.saved_lengths(folder, p)
        return folder, p, ps.saved_sequences(folder, p, p.q_lens, p.k_lens)

    def test_lengths_come_from_cu_seqlens_and_seqused_k(self):
        _, p, seqs = self.sequences("thd-paged-all")
        self.assertEqual((p.q_lens, p.k_lens), ([9, 0, 4], [40, 5, 4]))
        self.assertEqual([(q.shape, k.shape) for q, k, _ in seqs],
                         [((9, 6, 16), (40, 2, 16)), ((0, 6, 16), (5, 2, 16)), ((4, 6, 16), (4, 2, 16))])
        _, p, _ = self.sequences("bhsd-window")
        self.assertEqual((p.q_lens, p.k_lens), ([7, 7], [11, 11]), "a dense folder has no cu_seqlens: S and Sk")

    def test_paged_keys_are_gathered_page_by_page_through_the_shuffled_table(self):
        folder, p, seqs = self.sequences("thd-paged-all")
        pool = np.load(os.path.join(folder, "k.npy"))
        table = np.load(os.path.join(folder, "block_table.npy"))
        self.assertNotEqual(table[0].tolist(), sorted(table[0].tolist()), "the seed shuffles the pool")
        for b, (_, k, _) in enumerate(seqs):  # key j of sequence b: page table[b, j // 8], slot j % 8
            want = np.stack([pool[table[b, j // 8], j % 8] for j in range(p.k_lens[b])]) if p.k_lens[b] else k
            self.assertTrue(np.array_equal(k, want.astype(np.float32)), b)
        self.assertEqual(table[1, 1:].tolist(), [-1] * (table.shape[1] - 1), "-1 past a sequence's pages")

    def test_outputs_unpack_and_pack_back_to_the_storage_they_came_from(self):
        for name in RUNS:
            folder, p, _ = self.sequences(name)
            o = np.load(os.path.join(folder, "o.npy")).astype(np.float32)
            cu = np.concatenate([[0], np.cumsum(p.q_lens)])
            rows = [ps.rows_of(o, p.layout, b, int(cu[b]), n) for b, n in enumerate(p.q_lens)]
            back = ps.storage_output(p, p.q_lens, rows)
            self.assertEqual(back.shape, o.shape, name)
            live = np.zeros(o.shape, bool)  # rows that exist; padding comes back as zeros
            for b, n in enumerate(p.q_lens):
                if p.layout == "thd":
                    live[cu[b]:cu[b] + n] = True
                elif p.layout == "bshd":
                    live[b, :n] = True
                else:
                    live[b, :, :n] = True
            self.assertTrue(np.array_equal(back[live], o[live]), name)
            self.assertFalse(back[~live].any(), name)

    def judge(self, name, **mistake):
        """The numpy attention on the folder's unpacked sequences, packed into o.npy and lse.npy in
        a copy of the folder, judged by `fa-bench check`. Returns (exit status, the check's output)."""
        folder, p, seqs = self.sequences(name)
        dst = tempfile.mkdtemp(prefix="judge-", dir=self.tmp)
        for f in os.listdir(folder):
            if f not in ("o.npy", "lse.npy"):
                os.symlink(os.path.join(folder, f), os.path.join(dst, f))
        results = [attend(p, *s, **mistake) for s in seqs]
        o = ps.storage_output(p, p.q_lens, [r[0] for r in results])
        np.save(os.path.join(dst, "o.npy"), o.astype(np.float16 if p.dtype == "fp16" else np.float32))
        np.save(os.path.join(dst, "lse.npy"), ps.storage_lse(p, p.q_lens, [r[1] for r in results]))
        return run_fa_bench("check", dst, "--path", "numpy-flex-math", "--no-table", "-o", os.path.join(dst, "c.csv"))

    def test_the_flex_mask_and_score_on_unpacked_sequences_pass_fa_benchs_check(self):
        for name in RUNS:
            code, out = self.judge(name)
            self.assertEqual(code, 0, f"{name}: {out}")

    def test_the_bias_before_the_cap_or_a_top_left_mask_fails_it(self):
        code, out = self.judge("thd-paged-all", softcap_last=True)
        self.assertEqual(code, 1, out)
        code, out = self.judge("bshd-keys-paged", top_left=True)
        self.assertEqual(code, 1, out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
