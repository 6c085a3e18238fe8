#!/usr/bin/env python3
"""How scripts/sdpa_baseline.py calls each peer: torch SDPA's backends (flash, efficient, cuDNN,
math) under fa-bench's conventions (scale, bottom-right causal, GQA or K/V repeated to H heads),
FlexAttention, flash_attn's and aiter's flash_attn_func / flash_attn_varlen_func where they import,
the refusals known before a call, and a first call that turns a backend's refusal into a reason.
No timing and no records here: sdpa_baseline.py times these calls, peer_check.py judges them.
Imported beside sdpa_baseline.py (not run): `python3 -c 'import peer_backends'` from scripts/."""
import contextlib
import importlib
import inspect
import warnings

import peer_serving as ps  # serving fields: lengths, pages, window, ALiBi, softcap (beside this script)


TORCH_BACKENDS = ("flash", "efficient", "cudnn", "math")  # torch's SDPA backends; records torch-<backend>


# Flash-attention libraries called directly, backend (and record path) -> (module, function). Both
# functions take flash-attention 2's arguments, read from their sources (not copied):
# - Dao-AILab/flash-attention, flash_attn/flash_attn_interface.py: flash_attn_func(q, k, v,
#   dropout_p=0.0, softmax_scale=None, causal=False, window_size, softcap, alibi_slopes,
#   deterministic, return_attn_probs=False); q (batch, seqlen_q, nheads, headdim), k and v
#   (batch, seqlen_k, nheads_k, headdim) with GQA by head groups (query head h reads kv head
#   h // (H / Hk), as fa-bench); returns out, or (out, softmax_lse, S_dmask) with return_attn_probs.
#   Since 2.1 its causal mask is aligned to the bottom right (its docstring; before 2.1 top-left), as
#   fa-bench's, and a row that sees no key is 0: a pre-2.1 build fails --check's causal S != Sk rows.
# - ROCm/aiter, aiter/ops/mha.py: flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None,
#   causal=False, window_size, bias, alibi_slopes, deterministic, return_lse=False,
#   return_attn_probs=False), the same layouts and bottom-right mask over CK's fmha; returns out, or
#   a tuple with return_lse (older versions return a tuple even without it).
EXTERNAL_BACKENDS = {"fa2": ("flash_attn", "flash_attn_func"), "aiter": ("aiter", "flash_attn_func")}


# Serving problems go to each library's flash_attn_varlen_func on packed rows (peer_serving.py).
EXTERNAL_VARLEN = {b: (module, "flash_attn_varlen_func") for b, (module, _) in EXTERNAL_BACKENDS.items()}


# torch.nn.attention.flex_attention (record path torch-flex), compiled: every problem, serving fields included.
FLEX = "flex"


BACKENDS = TORCH_BACKENDS + (FLEX,) + tuple(EXTERNAL_BACKENDS)


def record_path(backend):
    """The path a backend's records carry: torch-<backend> for torch's SDPA and flex, the name itself otherwise."""
    return "torch-" + backend if backend in TORCH_BACKENDS + (FLEX,) else backend


def import_external(backend, table=EXTERNAL_BACKENDS):
    """(the library's function, None) where its module imports, else (None, why: the import error by
    type and message). Any exception counts: a broken install raises OSError or RuntimeError (a CUDA
    library missing, an ABI mismatch with torch) as often as ImportError."""
    module, name = table[backend]
    try:
        return getattr(importlib.import_module(module), name), None
    except Exception as e:  # any exception, as above
        return None, f"{module}.{name} does not import: {type(e).__name__}: {e}"


def external_call(fn, p, q, k, v):
    """An EXTERNAL_BACKENDS function on BSHD q, k, v under fa-bench's conventions (scale, causal
    bottom-right, no dropout); returns O alone, whether the library returns it bare or in a tuple."""
    out = fn(q, k, v, dropout_p=0.0, softmax_scale=p.softmax_scale(), causal=p.causal)
    return out[0] if isinstance(out, (tuple, list)) else out


def external_refusal(p, backend):
    """Why an EXTERNAL_BACKENDS function cannot take the problem before it is called, or None."""
    if p.dtype not in ("fp16", "bf16"):  # both libraries' kernels; refused before a JIT build is tried
        return "{}.{} takes fp16 and bf16 only".format(*EXTERNAL_BACKENDS[backend])
    return None


def import_torch():
    """torch, or an exit naming what is missing (a clear message, not a traceback)."""
    try:
        import torch
    except ImportError as e:
        raise SystemExit(f"sdpa_baseline.py: torch does not import ({e}); install PyTorch with CUDA or ROCm, "
                         "or ask only for backends whose library is missing (their records are skips)") from None
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA/ROCm device visible to torch")
    return torch


# fa-bench's dtypes as torch names them (harness/dtype.cpp's torch column): the OCP FP8 formats are
# float8_e4m3fn / float8_e5m2, MI300's (gfx942) FNUZ ones float8_e4m3fnuz / float8_e5m2fnuz.
TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp8_e4m3": "float8_e4m3fn",
                "fp8_e5m2": "float8_e5m2", "fp8_e4m3fnuz": "float8_e4m3fnuz", "fp8_e5m2fnuz": "float8_e5m2fnuz"}


def torch_dtype(torch, name):
    return getattr(torch, TORCH_DTYPES[name])


def causal_mask(torch, p, device):
    """(S, Sk) boolean, True where row i sees key j: j <= i + Sk - S (bottom-right)."""
    rows = torch.arange(p.S, device=device)[:, None]
    return torch.arange(p.Sk, device=device)[None, :] <= rows + (p.Sk - p.S)


def attention_call(torch, p, q, k, v, repeat_kv):
    """The SDPA call under fa-bench's conventions. torch's is_causal is top-left aligned, so it is
    used only where S == Sk; one query row (a decode) sees every key, so it needs no mask; elsewhere
    causal is torch's lower-right CausalBias, which the flash and efficient kernels run natively
    (a serving batch's prefill chunks; an explicit boolean mask, which they refuse, made them skip)
    and other backends get materialized; a torch without it gets the bottom-right boolean mask."""
    F = torch.nn.functional
    kw = {"scale": p.softmax_scale()}
    if p.causal and p.S == p.Sk:
        kw["is_causal"] = True
    elif p.causal and p.S > 1:
        try:
            from torch.nn.attention.bias import causal_lower_right
            kw["attn_mask"] = causal_lower_right(p.S, p.Sk)
        except ImportError:
            kw["attn_mask"] = causal_mask(torch, p, q.device)
    if p.H != p.Hk:
        if repeat_kv:
            k, v = k.repeat_interleave(p.H // p.Hk, dim=1), v.repeat_interleave(p.H // p.Hk, dim=1)
        else:
            kw["enable_gqa"] = True
    return lambda: F.scaled_dot_product_attention(q, k, v, **kw)


def first_try(fn, compile_errors=False):
    """Runs fn once; returns (output, None) or (None, the refusal with torch's warnings). With
    compile_errors any exception but running out of memory is a refusal (torch.compile raises its own)."""
    refusals = Exception if compile_errors else (RuntimeError, ValueError, TypeError, AssertionError)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return fn(), None
        except refusals as e:  # TypeError: a torch without enable_gqa
            if type(e).__name__ == "OutOfMemoryError":
                raise
            notes = [str(w.message).splitlines()[0] for w in caught]
            return None, "; ".join([str(e).splitlines()[0]] + notes)[:400]


def serving_refusal(p, backend, lib=None):
    """Why a backend cannot take a serving problem, known before any call: a library's varlen
    function that does not import or has no keyword for a field, a dtype it lacks, a field torch
    SDPA has no kernel for. None for flex, which runs every field."""
    if backend in EXTERNAL_VARLEN:
        fn, why = lib
        name = "{}.{}".format(*EXTERNAL_VARLEN[backend])
        return why or external_refusal(p, backend) or ps.refusal(p, backend, signature_params(fn), name)
    return ps.refusal(p, backend)


def backend_context(backend):
    """torch SDPA's backend selection around the calls; nothing for the others."""
    if backend not in TORCH_BACKENDS:
        return contextlib.nullcontext()
    from torch.nn.attention import sdpa_kernel
    return sdpa_kernel(sdpa_kind(backend))


def serving_call(torch, p, backend, fn, q, k, v):
    """(call, unpack, None) for a backend on packed rows (peer_serving's contract), or (None, None,
    why) where torch SDPA refuses both enable_gqa and K/V repeated to H heads."""
    if backend == FLEX:
        return (*ps.flex_call(torch, p, q, k, v), None)
    if backend in EXTERNAL_VARLEN:
        return (*ps.varlen_call(torch, p, fn, q, k, v), None)
    call, unpack = sdpa_serving_call(torch, p, q, k, v, repeat_kv=False)
    _, refusal = first_try(call)
    if refusal and p.H != p.Hk:  # a backend without enable_gqa: repeat K/V to H heads
        call, unpack = sdpa_serving_call(torch, p, q, k, v, repeat_kv=True)
        _, refusal = first_try(call)
    return call, unpack, refusal


def sdpa_serving_call(torch, p, q, k, v, repeat_kv):
    """torch SDPA on packed rows: one call over the dense batch where every sequence has S queries
    and Sk keys, else one call a sequence with its own bottom-right causal mask (a sequence with
    queries and no keys gets zeros, without a call)."""
    if ps.uniform(p):
        views = [(p, *(x.view(p.B, -1, x.shape[1], p.D).transpose(1, 2) for x in (q, k, v)))]
    else:
        seqs = zip(p.q_lens, p.k_lens, ps.split_rows(q, p.q_lens), ps.split_rows(k, p.k_lens), ps.split_rows(v, p.k_lens))
        views = [(ps.sequence_problem(p, sq, sk), *(x.transpose(0, 1).unsqueeze(0) for x in (qs, ks, vs)))
                 for sq, sk, qs, ks, vs in seqs if sq > 0 and sk > 0]
    calls = [attention_call(torch, sp, qs, ks, vs, repeat_kv) for sp, qs, ks, vs in views]

    def call():
        return [c() for c in calls]

    def unpack(outs):  # (B, H, S, D) outputs -> packed rows
        if ps.uniform(p):
            return outs[0].transpose(1, 2).reshape(-1, p.H, p.D), None
        it, rows = iter(outs), []
        for sq, sk in zip(p.q_lens, p.k_lens):
            if sq > 0:
                rows.append(next(it)[0].transpose(0, 1) if sk > 0 else q.new_zeros((sq, p.H, p.D)))
        return torch.cat(rows, dim=0), None
    return call, unpack


def signature_params(fn):
    """A library function's parameter names, or None where they are unknown (no signature, **kwargs):
    then the call itself says what it refuses."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    return None if any(x.kind == x.VAR_KEYWORD for x in params.values()) else set(params)


def sdpa_kind(backend):
    from torch.nn.attention import SDPBackend
    return {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}[backend]
