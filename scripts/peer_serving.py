"""Serving problems for scripts/sdpa_baseline.py's peers: per-sequence lengths (varlen, `thd`),
paged K/V, FlashAttention's sliding window, ALiBi and softcap, under fa-bench's conventions
(harness/conventions.hpp). Query row i of a sequence with sq queries and sk keys sits at key
position i + off, off = sk - sq, and sees keys j with i + off - left <= j <= i + off + right (-1
unbounded; causal is right = 0); the scaled score s becomes c*tanh(s/c) (softcap c), then gets
ALiBi's -slope*|i + off - j|, then the mask. What each peer does with each field is `refusal`'s and
`timing_notes`' business; the torch half builds the calls (FlexAttention, a varlen library).
Stdlib at import; numpy and torch are imported inside the functions that need them.
"""
import dataclasses
import math
import os
import re

SERVING_FIELDS = ("seqlens_q", "seqlens_k", "page_size", "window", "alibi", "softcap")
SDPA_BACKENDS = ("flash", "efficient", "cudnn", "math")  # torch's SDPA: sdpa_baseline.TORCH_BACKENDS
# What torch SDPA (and a --callable, which gets f(q, k, v, causal, scale)) cannot express, by field.
DENSE_LACKS = {"window": "sliding window", "alibi": "ALiBi", "softcap": "softcap"}
# The keyword of flash-attention 2's flash_attn_varlen_func that carries each field
# (Dao-AILab/flash-attention, flash_attn/flash_attn_interface.py: flash_attn_varlen_func(q, k, v,
# cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0, softmax_scale=None,
# causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
# return_attn_probs=False, block_table=None); window_size since 2.3, alibi_slopes 2.4, softcap 2.6).
VARLEN_KEYWORDS = {"window": "window_size", "alibi": "alibi_slopes", "softcap": "softcap"}


# ---- the fields -----------------------------------------------------------------------------

def lengths(text):
    """`a|b|c` (expand's q_lens, k_lens) as ints; '' as []."""
    return [int(x) for x in text.split("|")] if text else []


def window_bounds(window, causal):
    """(left, right) of a `window` cell ('left,right' or ''), -1 unbounded, as row_keys reads it:
    causal makes right 0."""
    left = right = -1
    if window:
        left, right = (int(x) for x in re.split(r"[,|]", window, maxsplit=1))
    return left, 0 if causal else right


def windowed(p):
    """A window that masks something causal does not (Problem::windowed)."""
    left, right = window_bounds(p.window, False)
    return left >= 0 or (right >= 0 and not p.causal)


def fields_set(p):
    """The serving fields p sets, in the field table's order (Problem::serving_fields)."""
    on = {"seqlens_q": bool(p.seqlens_q), "seqlens_k": bool(p.seqlens_k), "page_size": p.page_size > 0,
          "window": windowed(p), "alibi": p.alibi not in ("", "0"), "softcap": p.softcap > 0}
    return [f for f in SERVING_FIELDS if on[f]]


def is_serving(p):
    return bool(fields_set(p)) or p.layout == "thd"


def uniform(p):
    """Every sequence has S queries and Sk keys: one dense batch holds them (any storage layout)."""
    return all(n == p.S for n in p.q_lens) and all(n == p.Sk for n in p.k_lens)


def standard_alibi_slopes(heads):
    """2^(-8i/n), i = 1..n, for the largest power of two n <= heads, then every other slope of 2n
    (Press et al.; harness/serving.cpp's standard_alibi_slopes)."""
    n = 1
    while n * 2 <= heads:
        n *= 2
    slopes = [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]
    more = [2.0 ** (-8.0 * (i + 1) / (2 * n)) for i in range(2 * n)]
    slopes += more[0::2][:heads - n]
    return slopes


def alibi_slopes(spec, heads):
    """An `alibi` cell's slope per query head: None for 0, the standard ones for 1, else the list
    (padded with 0 to H heads, as harness/serving.cpp resolves it)."""
    if spec in ("", "0"):
        return None
    if spec == "1":
        return standard_alibi_slopes(heads)
    given = [float(x) for x in spec.split("|")][:heads]
    return given + [0.0] * (heads - len(given))


def sequence_problem(p, sq, sk):
    """The dense problem one sequence of p is (B 1, S sq, Sk sk, BSHD, no lengths or pages), for a
    backend that runs sequences one by one. Window, ALiBi and softcap stay: refusal says no first."""
    return dataclasses.replace(p, B=1, S=sq, Sk=sk, layout="bshd", seqlens_q="", seqlens_k="", page_size=0,
                               q_lens=[sq], k_lens=[sk], flops_given=None, bytes_given=None)


# ---- the mask and the score: one definition for scalars, numpy arrays and torch tensors ------
# FlexAttention calls these inside its mask_mod and score_mod (on tensors), the tests on numbers.

def key_visible(q_pos, k_pos, off, left, right):
    """Key k_pos is visible to query q_pos (both sequence-local): off = sk - sq (bottom-right),
    left/right from window_bounds (plain ints; -1 unbounded)."""
    at = q_pos + off
    ok = k_pos >= 0
    if left >= 0:
        ok = ok & (k_pos >= at - left)
    if right >= 0:
        ok = ok & (k_pos <= at + right)
    return ok


def alibi_bias(slope, q_pos, k_pos, off):
    return -slope * abs(q_pos + off - k_pos)


def modified_score(score, q_pos, k_pos, off, softcap=0.0, slope=None, tanh=math.tanh):
    """The scaled score after softcap, then ALiBi (the mask comes after both)."""
    if softcap > 0:
        score = softcap * tanh(score / softcap)
    if slope is not None:
        score = score + alibi_bias(slope, q_pos, k_pos, off)
    return score


# ---- which peer runs which field --------------------------------------------------------------

def refusal(p, backend, varlen_params=None, varlen_name=""):
    """Why `backend` cannot run serving problem p, or None. torch SDPA and a --callable ('callable')
    have no window, ALiBi or softcap; a varlen library (fa2, aiter) lacks a field where its
    flash_attn_varlen_func has no keyword for it (varlen_params: its parameter names)."""
    fields = fields_set(p)
    if backend in SDPA_BACKENDS or backend == "callable":
        who = "torch SDPA" if backend in SDPA_BACKENDS else "--callable f(q, k, v, causal, scale)"
        for f in fields:
            if f in DENSE_LACKS:
                return f"{who} has no {DENSE_LACKS[f]} ({f} {field_text(p, f)}); --backends flex runs it"
    elif varlen_params is not None:
        for f in fields:
            if f in VARLEN_KEYWORDS and VARLEN_KEYWORDS[f] not in varlen_params:
                return f"{varlen_name} has no {VARLEN_KEYWORDS[f]} keyword ({f} {field_text(p, f)})"
    return None


def field_text(p, field):
    return format(p.softcap, "g") if field == "softcap" else str(getattr(p, field))


def timing_notes(p, backend):
    """How a peer ran a serving problem, for the record's reason: the shape of the call, pages gathered."""
    notes = []
    if not uniform(p):
        n = len(p.q_lens)
        if backend == "flex":
            notes.append(f"one packed batch, document mask over {n} sequences")
        elif backend in ("fa2", "aiter"):
            notes.append(f"flash_attn_varlen_func over {n} packed sequences")
        else:
            calls = sum(1 for q, k in zip(p.q_lens, p.k_lens) if q > 0 and k > 0)
            notes.append(f"per sequence ({calls} calls timed as one)")
    if p.page_size > 0:
        notes.append(f"paged KV gathered to dense before the call (page_size {p.page_size})")
    return notes


# ---- --save-tensors folders (numpy) ---------------------------------------------------------

def saved_lengths(folder, p):
    """(q_lens, k_lens) of a --save-tensors folder: cu_seqlens_q.npy and seqused_k.npy where fa-bench
    wrote them (varlen, thd, paged), else S and Sk for every sequence."""
    import numpy as np
    cu = os.path.join(folder, "cu_seqlens_q.npy")
    if not os.path.isfile(cu):
        return [p.S] * p.B, [p.Sk] * p.B
    q_lens = np.diff(np.load(cu)).tolist()
    return q_lens, np.load(os.path.join(folder, "seqused_k.npy")).tolist()


def saved_sequences(folder, p, q_lens, k_lens):
    """Each sequence's (q [sq, H, D], k [sk, Hk, D], v) as float32, from Q's storage (bshd, bhsd
    padded to S; thd packed through cu_seqlens_q) and K/V's (padded, packed through cu_seqlens_k,
    or a page pool [pages, page_size, Hk, D] gathered through block_table)."""
    import numpy as np
    q, k, v = (np.load(os.path.join(folder, n + ".npy")).astype(np.float32) for n in ("q", "k", "v"))
    table = np.load(os.path.join(folder, "block_table.npy")) if p.page_size > 0 else None
    cu_k = np.load(os.path.join(folder, "cu_seqlens_k.npy")) if p.layout == "thd" else None
    cu_q = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int64)
    out = []
    for b, (sq, sk) in enumerate(zip(q_lens, k_lens)):
        out.append((rows_of(q, p.layout, b, int(cu_q[b]), sq),
                    *(keys_of(x, p, b, sk, table, cu_k) for x in (k, v))))
    return out


def rows_of(x, layout, b, start, n):
    """n rows [n, heads, D] of sequence b from a dense or packed tensor."""
    if layout == "thd":
        return x[start:start + n]
    return x[b, :n] if layout == "bshd" else x[b, :, :n].transpose(1, 0, 2)


def keys_of(x, p, b, sk, table, cu_k):
    """Sequence b's first sk keys (or values) [sk, Hk, D]: through the page table, packed, or padded."""
    if table is not None:
        pages = table[b, :(sk + p.page_size - 1) // p.page_size]
        return x[pages].reshape(-1, x.shape[2], x.shape[3])[:sk]
    return rows_of(x, p.layout, b, int(cu_k[b]) if cu_k is not None else 0, sk)


def storage_output(p, q_lens, outs):
    """Per-sequence O [sq, H, D] into Q's storage shape (thd packed; bshd, bhsd with zeros past a
    sequence's rows, where `fa-bench check` counts NaN but compares nothing)."""
    import numpy as np
    if p.layout == "thd":
        return np.concatenate(outs, axis=0) if outs else np.zeros((0, p.H, p.D), np.float32)
    shape = (p.B, p.S, p.H, p.D) if p.layout == "bshd" else (p.B, p.H, p.S, p.D)
    o = np.zeros(shape, np.float32)
    for b, (sq, ob) in enumerate(zip(q_lens, outs)):
        if p.layout == "bshd":
            o[b, :sq] = ob
        else:
            o[b, :, :sq] = ob.transpose(1, 0, 2)
    return o


def storage_lse(p, q_lens, lses):
    """Per-sequence LSE [H, sq] into [B, H, S] (-inf past a sequence's rows: no row there)."""
    import numpy as np
    out = np.full((p.B, p.H, p.S), -np.inf, np.float32)
    for b, (sq, lb) in enumerate(zip(q_lens, lses)):
        out[b, :, :sq] = lb
    return out


def split_rows(x, n_list, axis=0):
    """A packed array (numpy or torch) cut into consecutive pieces of n_list rows along axis."""
    out, at = [], 0
    for n in n_list:
        out.append(x[at:at + n] if axis == 0 else x[:, at:at + n])
        at += n
    return out


# ---- torch: inputs and calls on packed rows -----------------------------------------------------
# Every call here takes packed q [sum sq, H, D] and k, v [sum sk, Hk, D] (the varlen layout) and
# returns (fn, unpack): fn() is what is timed; unpack(fn()) is (O packed [sum sq, H, D], LSE
# [H, sum sq] or None), outside the timed region.

def packed_inputs(torch, p, device, dtype):
    """Seeded standard normals in the packed layout (torch's generator: same distribution as
    fa-bench's Philox, other values). A paged problem's K/V are the gathered dense rows."""
    gen = torch.Generator(device=device).manual_seed(p.seed)

    def tensor(rows, heads):
        return torch.randn((rows, heads, p.D), generator=gen, device=device, dtype=torch.float32).to(dtype)

    return tensor(sum(p.q_lens), p.H), tensor(sum(p.k_lens), p.Hk), tensor(sum(p.k_lens), p.Hk)


_FLEX = {}


def compiled_flex(torch):
    """flex_attention under torch.compile (its fused kernel; eager runs an unfused reference). The
    compile cache is reset per problem by flex_call, so each problem compiles once (its first call,
    before any timing) and guards never scan earlier problems' graphs."""
    if "fn" not in _FLEX:
        from torch.nn.attention.flex_attention import flex_attention
        _FLEX["fn"] = torch.compile(flex_attention, dynamic=False)
    return _FLEX["fn"]


def flex_call(torch, p, q, k, v, with_lse=False):
    """FlexAttention on packed rows. Uniform lengths: one dense batch [B, H, S, D]; otherwise one
    packed batch of 1 with a document mask (the jagged recipe: a sequence id per packed row and
    key, each sequence's first row and key). The window and causal go in the block mask (mask_mod),
    softcap and ALiBi in score_mod, GQA through enable_gqa."""
    import torch._dynamo
    from torch.nn.attention.flex_attention import create_block_mask
    torch._dynamo.reset()
    flex = compiled_flex(torch)
    dev, H, Hk, D = q.device, p.H, p.Hk, p.D
    left, right = window_bounds(p.window, p.causal)
    if uniform(p):
        B, S, Sk, doc = p.B, p.S, p.Sk, None
        qd, kd, vd = (x.view(B, -1, x.shape[1], D).transpose(1, 2).contiguous() for x in (q, k, v))

        def where(q_idx, kv_idx):
            return q_idx, kv_idx, Sk - S
    else:
        B, S, Sk = 1, q.shape[0], k.shape[0]
        qd, kd, vd = (x.transpose(0, 1).unsqueeze(0).contiguous() for x in (q, k, v))
        # Sequence ids per row and key, padded with ids of two empty sequences that never match
        # (n for rows, n + 1 for keys) to a multiple of 1024: a kernel that evaluates the mods on a
        # last, partial tile's indices past the end then reads the pad, never past the buffer.
        n = len(p.q_lens)
        q_doc, k_doc = (doc_ids(torch, ns, pad, dev) for ns, pad in ((p.q_lens, n), (p.k_lens, n + 1)))
        ints = dict(dtype=torch.int64, device=dev)  # int64: an index tensor on any torch
        q_first = torch.tensor(prefix_sums(p.q_lens + [0, 0])[:-1], **ints)
        k_first = torch.tensor(prefix_sums(p.k_lens + [0, 0])[:-1], **ints)
        offs = torch.tensor([sk - sq for sq, sk in zip(p.q_lens, p.k_lens)] + [0, 0], **ints)
        doc = (q_doc, k_doc)

        def where(q_idx, kv_idx):
            d = q_doc[q_idx]
            return q_idx - q_first[d], kv_idx - k_first[d], offs[d]

    def mask_mod(b, h, q_idx, kv_idx):
        ok = key_visible(*where(q_idx, kv_idx), left, right)
        return ok if doc is None else ok & (doc[0][q_idx] == doc[1][kv_idx])

    masked = doc is not None or left >= 0 or right >= 0
    block_mask = create_block_mask(mask_mod, None, None, S, Sk, device=dev) if masked else None
    slopes = alibi_slopes(p.alibi, H)
    slope_t = torch.tensor(slopes, dtype=torch.float32, device=dev) if slopes else None
    score_mod = None
    if p.softcap > 0 or slopes:
        def score_mod(score, b, h, q_idx, kv_idx):
            q_pos, k_pos, off = where(q_idx, kv_idx)
            return modified_score(score, q_pos, k_pos, off, p.softcap, None if slope_t is None else slope_t[h],
                                  torch.tanh)

    def fn():
        return flex(qd, kd, vd, score_mod=score_mod, block_mask=block_mask, scale=p.softmax_scale(),
                    enable_gqa=H != Hk, return_lse=with_lse)

    def unpack(out):
        o, lse = out if with_lse else (out, None)
        o = o.transpose(1, 2).reshape(-1, H, D)  # [B, H, S, D] -> packed rows
        return o, None if lse is None else lse.transpose(0, 1).reshape(H, -1)
    return fn, unpack


def prefix_sums(ns):
    out = [0]
    for n in ns:
        out.append(out[-1] + n)
    return out


def doc_ids(torch, ns, pad_id, device, multiple=1024):
    """Sequence id of each packed position (sequence b has ns[b]), then pad_id up to a multiple."""
    ids = [b for b, n in enumerate(ns) for _ in range(n)]
    ids += [pad_id] * (-len(ids) % multiple)
    return torch.tensor(ids, dtype=torch.int64, device=device)


def varlen_call(torch, p, fn, q, k, v):
    """A library's flash_attn_varlen_func (fa2, aiter) on packed rows, every argument by keyword:
    the window, softcap and ALiBi keywords only where the problem sets them (refusal has checked
    that the function takes them)."""
    dev = q.device
    ints = dict(dtype=torch.int32, device=dev)
    kw = dict(cu_seqlens_q=torch.tensor(prefix_sums(p.q_lens), **ints),
              cu_seqlens_k=torch.tensor(prefix_sums(p.k_lens), **ints), max_seqlen_q=max(p.q_lens),
              max_seqlen_k=max(p.k_lens), dropout_p=0.0, softmax_scale=p.softmax_scale(), causal=p.causal)
    if windowed(p):
        kw["window_size"] = window_bounds(p.window, p.causal)
    if p.softcap > 0:
        kw["softcap"] = p.softcap
    if slopes := alibi_slopes(p.alibi, p.H):
        kw["alibi_slopes"] = torch.tensor(slopes, dtype=torch.float32, device=dev)

    def call():
        return fn(q=q, k=k, v=v, **kw)

    def unpack(out):
        return (out[0] if isinstance(out, (tuple, list)) else out), None
    return call, unpack


def reference_packed(torch, p, q, k, v):
    """fp32 attention from the definition, a sequence at a time, on packed rows (--verify): the
    same key_visible and modified_score FlexAttention runs; rows that see no key are 0."""
    left, right = window_bounds(p.window, p.causal)
    slopes = alibi_slopes(p.alibi, p.H)
    slope = None if slopes is None else torch.tensor(slopes, device=q.device)[:, None, None]
    g = p.H // p.Hk
    outs = []
    for qs, ks, vs in zip(split_rows(q, p.q_lens), split_rows(k, p.k_lens), split_rows(v, p.k_lens)):
        sq, sk = qs.shape[0], ks.shape[0]
        qh = qs.float().transpose(0, 1)
        kh, vh = (x.float().transpose(0, 1).repeat_interleave(g, dim=0) for x in (ks, vs))
        q_pos = torch.arange(sq, device=q.device)[:, None]
        k_pos = torch.arange(sk, device=q.device)[None, :]
        s = modified_score((qh @ kh.transpose(1, 2)) * p.softmax_scale(), q_pos, k_pos, sk - sq, p.softcap, slope,
                           torch.tanh)
        s = s.masked_fill(~key_visible(q_pos, k_pos, sk - sq, left, right), float("-inf"))
        outs.append((torch.softmax(s, dim=-1).nan_to_num(0.0) @ vh).transpose(0, 1))
    return torch.cat(outs, dim=0)
