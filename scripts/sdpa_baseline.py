#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention backends, FlexAttention, and flash_attn's and aiter's
flash_attn_func where they import, timed on a fa-bench sweep, written as fa-bench results records
(path torch-flash, torch-efficient, torch-cudnn, torch-math, torch-flex, fa2, aiter) that `fa-bench
compare`, `gate` and `table` read like any other. fa-bench's conventions: BSHD, scale 1/sqrt(D)
unless given, bottom-right causal, GQA, exact FLOPs/bytes (`fa-bench expand`'s); cold L2; CUDA
events around the call only. A library that does not import makes every record of its backend a
`skip` naming the import error.

  scripts/sdpa_baseline.py sweeps/whisper.csv [--backends flash,efficient,cudnn,math,flex,fa2,aiter] [-o out.csv] [--verify]
  scripts/sdpa_baseline.py sweeps/serving.yaml --backends flash,cudnn,flex -o peers.csv
  scripts/sdpa_baseline.py --check SAVED_DIR... [--backends flex,math] [--callable mod:fn] [--check-out DIR]
  scripts/sdpa_baseline.py --interleave fa-results.csv --backends flash,cudnn [--rounds 5] [--round-samples 50] -o side.csv

Sweeps are expanded by `fa-bench expand` (--fa-bench, $FABENCH_BINARY, PATH or build/*/fa-bench);
without a binary a dense CSV sweep is read here. Inputs are seeded standard normals from torch's
generator, not fa-bench's Philox: same distribution, different values. Serving problems (per-sequence
lengths, paged KV, window, ALiBi, softcap: peer_serving.py) run on packed rows: flex in one batch
(a document mask where lengths differ; window and causal in the block mask, softcap then ALiBi in
score_mod; compiled once a problem, before timing), fa2 and aiter through flash_attn_varlen_func,
torch SDPA one call a sequence (timed as one) and a `skip` naming the window, ALiBi or softcap it
has no kernel for; paged K/V is gathered to dense before the call, and the record says so.
Without --verify a record is `pass` "timed only"; with it the output is checked against an fp32
reference under a fixed tolerance. --check judges instead by fa-bench's own rule: each backend (or
any --callable) runs on the tensors `fa-bench sweep --save-tensors DIR` wrote, its O goes beside
them as o.npy, and `fa-bench check` applies exactly what a built-in path gets (low-precision
reference, cosine, NaN, rounding bias). Every timed record carries schema 10's clock columns (SM/GFX
clock, power, throttling, cycles) read during its samples, as fa-bench's own (peer_telemetry.py).
--interleave times a results file's records on fa-bench's path and the peers in alternation, A B A
B, so that their ratio is taken under one power state (peer_interleave.py). Beside it also:
peer_problems.py (sweeps, problems, records; stdlib), peer_backends.py (how each peer is called),
peer_serving.py (the serving fields) and peer_check.py (the --check flow).
Exit status as fa-bench's: 0, 1 a fail or error record, 2 a usage or input error (a flag, a file,
an invalid row; the records are still written), `--check` check's worst.
"""
import argparse
import csv
import math
import os
import random
import sys
import time

import peer_check
import peer_interleave as pi  # --interleave's rounds, records and table (beside this script)
import peer_telemetry
import peer_serving as ps  # serving fields: lengths, pages, window, ALiBi, softcap (beside this script)
from peer_check import import_callable
# The problems and records live in peer_problems.py; the names tests and plot.py read stay here too.
from peer_problems import (COLUMNS, FP8_SKIP, Problem, TimingPolicy, find_fabench, g6, git_commit, is_fp8,  # noqa: F401
                           load_csv_sweep,
                           load_sweep, no_device_meta, problems_from_cells, record_fields, stop_reason, timing_stats,
                           utc_now)
# How each peer is called (the backend tables, SDPA's conventions, refusals) lives in peer_backends.py.
from peer_backends import (BACKENDS, EXTERNAL_BACKENDS, EXTERNAL_VARLEN, FLEX, TORCH_BACKENDS, TORCH_DTYPES,  # noqa: F401
                           attention_call, backend_context, causal_mask, external_call, external_refusal, first_try,
                           import_external, import_torch, record_path, sdpa_kind, serving_call, serving_refusal,
                           signature_params, torch_dtype)


# --verify's fixed rule (max |o - ref32|, min cosine): a few ulps of O near |o| = 1, plus the
# rounding of P to the dtype before PV that fused kernels do.
VERIFY_TOLERANCE = {"fp16": (5e-3, 0.9999), "bf16": (4e-2, 0.999), "fp32": (1e-4, 0.999999)}


def check_arguments(ap, args):
    """fa-bench's flag rules (cli/flag_checks.hpp) and output policy (harness/results/output_file.hpp),
    before any work: finite, non-negative numbers; min samples <= max; --interleave without a sweep,
    with whole --rounds and --round-samples; -o not a folder, in a folder that exists, and not the
    sweep or results file it reads; the sweep a file of a known format; --check's folders
    hold records; --callable imports; --check-out a folder (new, or existing), not a file and not a
    record folder being checked. ap.error exits 2 naming the flag (a usage error is 2, as in fa-bench)."""
    if args.check and args.interleave is not None:
        ap.error("--check and --interleave are two runs: give one")
    for flag, v in (("--time-cap", args.time_cap), ("--spread", args.spread)):
        if not math.isfinite(v) or v < 0:
            ap.error(f"{flag} {v}: not a finite number >= 0")
    for flag, v, lo in (("--warmup", args.warmup, 0), ("--min-samples", args.min_samples, 1),
                        ("--max-samples", args.max_samples, 1)):
        if v < lo:
            ap.error(f"{flag} {v}: must be a whole number >= {lo}")
    if args.min_samples > args.max_samples:
        ap.error(f"--min-samples {args.min_samples} is more than --max-samples {args.max_samples}")
    if args.accumulate_keys is not None and not 0 <= args.accumulate_keys <= 1 << 20:
        ap.error(f"--accumulate-keys {args.accumulate_keys}: must be in [0, {1 << 20}]")
    if args.fabench is not None and not (os.path.isfile(args.fabench) and os.access(args.fabench, os.X_OK)):
        ap.error(f"--fa-bench: '{args.fabench}' is not an executable file")  # else another binary was used silently
    if args.check:
        co = args.check_out
        if co is not None:  # --check stages into it: a folder, new or existing, never a file or a record
            if not co:
                ap.error("--check-out: an empty value is not allowed")
            if os.path.exists(co) and not os.path.isdir(co):
                ap.error(f"--check-out: '{co}' exists and is not a folder")
            parent = os.path.dirname(os.path.abspath(co))
            if not os.path.isdir(parent):
                ap.error(f"--check-out: cannot make '{co}': folder '{parent}' does not exist")
            for d in args.check:
                if os.path.isdir(co) and os.path.isdir(d) and os.path.samefile(co, d):
                    ap.error(f"--check-out: '{co}' is the saved record folder '{d}'; refusing to stage into it")
        for d in args.check:  # peer_check.record_dirs' rule, found here: a usage error exits 2, not 1 later
            if not os.path.isdir(d):
                ap.error(f"--check: '{d}' is not a folder")
            if not os.path.isfile(os.path.join(d, "problem.json")) and \
                    not any(os.path.isfile(os.path.join(d, e, "problem.json")) for e in os.listdir(d)):
                ap.error(f"--check: '{d}' has no problem.json in it or its sub-folders "
                         "(write them with fa-bench --save-tensors)")
        if args.callable is not None:  # imported now: a bad spec or module is the flag's error, not a traceback
            try:
                args.callable_fn = import_callable(args.callable)
            except SystemExit as e:
                ap.error(str(e.code))
            except Exception as e:  # the user's module: ImportError, SyntaxError, AttributeError, its own raise
                ap.error(f"--callable '{args.callable}': {type(e).__name__}: {e}")
        return
    if args.interleave is not None:
        if args.sweep:
            ap.error(f"--interleave reads its problems from '{args.interleave}': give no sweep file ('{args.sweep}')")
        for flag, v in (("--rounds", args.rounds), ("--round-samples", args.round_samples)):
            if v < 1:
                ap.error(f"{flag} {v}: must be a whole number >= 1")
    if args.sweep and not os.path.isfile(args.sweep):
        ap.error(f"'{args.sweep}' is not a file" if os.path.exists(args.sweep) else f"'{args.sweep}' does not exist")
    if args.sweep and os.path.splitext(args.sweep)[1] not in (".csv", ".yaml", ".yml"):
        ap.error(f"'{args.sweep}': unknown sweep format (expected .csv, .yaml or .yml)")
    out = args.output
    if not out:
        ap.error("-o: an empty value is not allowed")
    if os.path.isdir(out):
        ap.error(f"-o: '{out}' is a directory, not a file")
    folder = os.path.dirname(out) or "."
    if not os.path.isdir(folder):
        ap.error(f"-o: cannot write '{out}': directory '{folder}' does not exist")
    for given in (args.sweep, args.interleave):
        if given and os.path.exists(out) and os.path.exists(given) and os.path.samefile(out, given):
            ap.error(f"-o: '{out}' is the input '{given}'; refusing to overwrite it")


# ---------------------------------------------------------------------------------------------
# Everything below needs torch (imported inside the functions, so the above imports without it).


def make_inputs(torch, p, device):
    """Q, K, V as (B, H, S, D) views over tensors stored in the problem's layout."""
    gen = torch.Generator(device=device).manual_seed(p.seed)
    dt = torch_dtype(torch, p.dtype)

    def tensor(seq, heads):
        shape = (p.B, seq, heads, p.D) if p.layout == "bshd" else (p.B, heads, seq, p.D)
        t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dt)
        return t.transpose(1, 2) if p.layout == "bshd" else t

    return tensor(p.S, p.H), tensor(p.Sk, p.Hk), tensor(p.Sk, p.Hk)


def reference_fp32(torch, p, q, k, v):
    """fp32 attention from the definition; rows that see no key are 0 (fa-bench's convention)."""
    g = p.H // p.Hk
    k32 = k.float().repeat_interleave(g, dim=1)
    v32 = v.float().repeat_interleave(g, dim=1)
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    mask = causal_mask(torch, p, q.device) if p.causal else None
    for b in range(p.B):  # one batch at a time bounds the (H, S, Sk) score memory
        s = (q[b].float() @ k32[b].transpose(-1, -2)) * p.softmax_scale()
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        w = torch.softmax(s, dim=-1).nan_to_num(0.0)
        out[b] = w @ v32[b]
    return out


def error_metrics(torch, p, o, ref):
    o = o.float()
    d = (o - ref).abs()
    finite = torch.isfinite(o)
    tol, cos_min = VERIFY_TOLERANCE[p.dtype]
    cos = torch.nn.functional.cosine_similarity(o.flatten().nan_to_num(0.0), ref.flatten(), dim=0).item()
    m = {"max_abs": d.max().item(), "mean_abs": d.mean().item(),
         "rel_l2": ((o - ref).norm() / ref.norm().clamp_min(1e-30)).item(), "cosine": cos,
         "nan_inf": int((~finite).sum().item()), "tol": tol}
    if m["nan_inf"]:
        m["why"] = f"{m['nan_inf']} NaN/Inf output elements"
    elif not m["max_abs"] <= tol:
        m["why"] = f"max |err| {m['max_abs']:.3g} > tolerance {tol:.3g}"
    elif not cos >= cos_min:
        m["why"] = f"cosine {cos:.6f} < {cos_min:.6f}"
    return m


class ColdL2:
    """A 2x-L2 buffer read before each sample (outside the events) so every sample starts cold. Read,
    not written, as fa-bench's flush: a write leaves L2 full of dirty lines whose write-back the timed
    call pays (~10 us of a 190 us decode on the H100)."""

    def __init__(self, torch, device, mode):
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 0) or (64 << 20)
        self.buf = torch.zeros(2 * l2 // 4, dtype=torch.int32, device=device) if mode == "cold" else None

    def __call__(self):
        if self.buf is not None:
            self.buf.max()


# GPU clock cycles slept after the flush, before the start event: Python's launch of the call (tens
# of microseconds for SDPA's cuDNN graph lookup) then happens while the GPU is busy, so the events
# time the GPU's work only, as fa-bench's do (its C++ launch hides behind the flush). Without it,
# torch cuDNN's decode on (1,32,8,1,32768,128) measured 55-107 us across H100 calls.
LAUNCH_COVER_CYCLES = 1 << 20


def time_call(torch, fn, flush, policy):
    """Samples of fn under the policy; with policy.clocks, its reader polls from before the warm-up
    to the last sample, and each sample's host window (from its launch to its synchronize, which
    holds the GPU's work) is joined to the readings (peer_telemetry.clock_stats)."""
    monitor = policy.clocks.start() if policy.clocks else None
    try:
        for _ in range(policy.warmup):
            fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples, windows, t0 = [], [], time.perf_counter()
        while True:
            flush()
            if hasattr(torch.cuda, "_sleep"):
                torch.cuda._sleep(LAUNCH_COVER_CYCLES)
            w0 = time.time()
            start.record()
            fn()
            end.record()
            end.synchronize()
            windows.append((w0, time.time()))
            samples.append(start.elapsed_time(end))
            why = stop_reason(samples, time.perf_counter() - t0, policy)
            if why:
                break
    finally:  # an out-of-memory error too: the poller's thread or nvidia-smi ends with the loop
        readings = monitor.stop() if monitor else None
    clocks = monitor and peer_telemetry.clock_stats(windows, samples, readings, monitor.name)
    return {**timing_stats(samples), "mode": policy.mode, "stopped_by": why, "clocks": clocks}


def run_backend(torch, p, backend, args, flush, meta):
    from torch.nn.attention import sdpa_kernel

    kind = sdpa_kind(backend)
    path = record_path(backend)
    notes = ["kv-cache append not included"] if p.kv_cache else []
    try:
        q, k, v = make_inputs(torch, p, "cuda")
        with sdpa_kernel(kind):
            fn = attention_call(torch, p, q, k, v, repeat_kv=False)
            out, refusal = first_try(fn)
            if refusal and p.H != p.Hk:  # a backend without enable_gqa: repeat K/V to H heads
                fn = attention_call(torch, p, q, k, v, repeat_kv=True)
                out, again = first_try(fn)
                if not again:
                    notes.append(f"K/V repeated to H heads (enable_gqa refused: {refusal})")
                refusal = again
            if refusal:
                return record_fields(p, path, "skip", refusal, meta)
            stats = time_call(torch, fn, flush, args.policy)
        return timed_record(torch, p, path, out, lambda: reference_fp32(torch, p, q, k, v), stats, notes, args, meta)
    except torch.cuda.OutOfMemoryError as e:
        return record_fields(p, path, "oom", str(e).splitlines()[0], meta)
    finally:
        torch.cuda.empty_cache()


def timed_record(torch, p, path, out, reference, stats, notes, args, meta):
    """The record of a timed run: `pass` timed only, or with --verify judged by the fixed rule
    against reference(), an fp32 output of out's shape."""
    metrics, status = None, "pass"
    if args.verify:
        metrics = error_metrics(torch, p, out, reference())
        status = "fail" if "why" in metrics else "pass"
        notes.insert(0, metrics.get("why", "checked against an fp32 reference, fixed rule"))
    else:
        notes.insert(0, "timed only (not validated)")
    return record_fields(p, path, status, "; ".join(notes), meta, stats, metrics)


def run_external(torch, p, backend, fn, args, flush, meta):
    """An EXTERNAL_BACKENDS function timed on the problem; a refusal (no kernel for the dtype or head
    dim, say) is a `skip` with its message."""
    notes = ["kv-cache append not included"] if p.kv_cache else []
    if why := external_refusal(p, backend):
        return record_fields(p, backend, "skip", why, meta)
    try:
        q, k, v = make_inputs(torch, p, "cuda")
        bshd = [x.transpose(1, 2) for x in (q, k, v)]  # views made before the events, not between them

        def fn_bshd():
            return external_call(fn, p, *bshd)

        out, refusal = first_try(fn_bshd)
        if refusal:
            return record_fields(p, backend, "skip", refusal, meta)
        stats = time_call(torch, fn_bshd, flush, args.policy)
        return timed_record(torch, p, backend, out.transpose(1, 2), lambda: reference_fp32(torch, p, q, k, v), stats,
                            notes, args, meta)
    except torch.cuda.OutOfMemoryError as e:
        return record_fields(p, backend, "oom", str(e).splitlines()[0], meta)
    finally:
        torch.cuda.empty_cache()


def run_serving(torch, p, backend, lib, args, flush, meta):
    """A serving problem (any problem under flex) timed on packed inputs: flex on one (packed or
    dense) batch, fa2/aiter through flash_attn_varlen_func (lib: (function, import error)), torch
    SDPA in one dense call or one call a sequence. A field the backend has no kernel for is a `skip`
    naming it (peer_serving.refusal); so is a refusal at the first call."""
    path = record_path(backend)
    if why := serving_refusal(p, backend, lib):
        return record_fields(p, path, "skip", why, meta)
    fn = lib[0] if lib else None
    notes = ps.timing_notes(p, backend) + (["kv-cache append not included"] if p.kv_cache else [])
    try:
        q, k, v = ps.packed_inputs(torch, p, "cuda", torch_dtype(torch, p.dtype))
        with backend_context(backend):
            call, unpack, refusal = serving_call(torch, p, backend, fn, q, k, v)
            if refusal:
                return record_fields(p, path, "skip", refusal, meta)
            out, refusal = first_try(call, compile_errors=backend == FLEX)  # flex compiles here, before timing
            if refusal:
                return record_fields(p, path, "skip", refusal, meta)
            stats = time_call(torch, call, flush, args.policy)
        return timed_record(torch, p, path, unpack(out)[0], lambda: ps.reference_packed(torch, p, q, k, v), stats, notes,
                            args, meta)
    except torch.cuda.OutOfMemoryError as e:
        return record_fields(p, path, "oom", str(e).splitlines()[0], meta)
    finally:
        torch.cuda.empty_cache()


def device_meta(torch):
    props = torch.cuda.get_device_properties(0)
    # gcnArchName names the gfx target on ROCm only: PyTorch 2.11 on CUDA fills it with the device's
    # name ("NVIDIA H100 80GB HBM3"), which is no arch and split one H100's results in two for plot.py.
    hip = getattr(torch.version, "hip", None)
    arch = (getattr(props, "gcnArchName", "").split(":")[0] if hip else "") or f"sm_{props.major}{props.minor}"
    started = utc_now()
    return {"run_id": f"{started}-{random.getrandbits(24):06x}", "device": torch.cuda.get_device_name(0),
            "arch": arch, "git_commit": git_commit()}


def external_output(torch, p, backend, fn, q, k, v):
    """An EXTERNAL_BACKENDS function on BSHD float32 arrays: O as BSHD float32 on the host; a refusal raises."""
    why = external_refusal(p, backend)
    if not why:
        dt = torch_dtype(torch, p.dtype)
        qt, kt, vt = (torch.from_numpy(x).to("cuda").to(dt) for x in (q, k, v))
        out, why = first_try(lambda: external_call(fn, p, qt, kt, vt))
    if why:
        raise RuntimeError(f"{backend} refused {p.label()}: {why}")
    return out.float().cpu()


def torch_output(torch, p, backend, q, k, v):
    """One SDPA backend on BSHD float32 arrays: the output as BSHD float32 (on the host). A backend
    that refuses enable_gqa gets K/V repeated to H heads, as when timing; a refusal raises."""
    from torch.nn.attention import sdpa_kernel
    dt = torch_dtype(torch, p.dtype)
    qt, kt, vt = (torch.from_numpy(x).to("cuda").to(dt).transpose(1, 2) for x in (q, k, v))
    with sdpa_kernel(sdpa_kind(backend)):
        out, refusal = first_try(attention_call(torch, p, qt, kt, vt, repeat_kv=False))
        if refusal and p.H != p.Hk:
            out, refusal = first_try(attention_call(torch, p, qt, kt, vt, repeat_kv=True))
    if refusal:
        raise RuntimeError(f"torch-{backend} refused {p.label()}: {refusal}")
    return out.transpose(1, 2).float().cpu()


def check_runners(args, backends):
    """--check's runners, record path -> peer_check.Runner, or the reason nothing runs: torch SDPA
    dense (a serving problem a sequence at a time, window, ALiBi and softcap refused by name), flex
    on packed rows with its LSE, fa2 and aiter dense through flash_attn_func and packed through
    flash_attn_varlen_func, a --callable dense."""
    if args.callable:
        fn = args.callable_fn  # check_arguments imported it
        name = args.callable_name or "callable-" + args.callable.split(":")[-1]
        return {name: peer_check.Runner(dense=lambda p, q, k, v: fn(q, k, v, causal=p.causal, scale=p.softmax_scale()),
                                        refuse=lambda p: ps.refusal(p, "callable"))}
    external = {b: import_external(b) for b in backends if b in EXTERNAL_BACKENDS}
    varlen = {b: import_external(b, EXTERNAL_VARLEN) for b in external}
    torch = None
    if any(b in TORCH_BACKENDS + (FLEX,) for b in backends) or any(fn for fn, _ in [*external.values(), *varlen.values()]):
        torch = import_torch()
    runners = {}
    for b in backends:
        if b == FLEX:
            runners[record_path(b)] = peer_check.Runner(
                packed=lambda p, q, k, v: packed_output(torch, p, FLEX, None, q, k, v), lse=True)
        elif b in external:
            (fn, why), (vfn, vwhy) = external[b], varlen[b]
            runners[b] = why if why and vwhy else peer_check.Runner(
                dense=None if why else (lambda b, fn: lambda p, q, k, v: external_output(torch, p, b, fn, q, k, v))(b, fn),
                packed=None if vwhy else (lambda b, fn: lambda p, q, k, v: packed_output(torch, p, b, fn, q, k, v))(b, vfn),
                refuse=(lambda b: lambda p: serving_refusal(p, b, varlen[b]))(b))
        else:
            runners[record_path(b)] = peer_check.Runner(
                dense=(lambda b: lambda p, q, k, v: torch_output(torch, p, b, q, k, v))(b),
                refuse=(lambda b: lambda p: ps.refusal(p, b))(b))
    return runners


def packed_output(torch, p, backend, fn, q, k, v):
    """flex, or a library's flash_attn_varlen_func (fn), on packed float32 numpy rows: (O, LSE or
    None) as float32 numpy on the host; a refusal raises."""
    dt = torch_dtype(torch, p.dtype)
    qt, kt, vt = (torch.from_numpy(x).to("cuda").to(dt) for x in (q, k, v))
    if backend == FLEX:
        call, unpack = ps.flex_call(torch, p, qt, kt, vt, with_lse=True)
    else:
        call, unpack = ps.varlen_call(torch, p, fn, qt, kt, vt)
    out, why = first_try(call, compile_errors=backend == FLEX)
    if why:
        raise RuntimeError(f"{record_path(backend)} refused {p.label()}: {why}")
    o, lse = unpack(out)
    return o.float().cpu().numpy(), None if lse is None else lse.float().cpu().numpy()


def peer_recorder(args, backends, problems):
    """record(p, backend) for the problems: torch, the device's metadata, the cold-L2 flush and the
    clock reader set up where some backend will run; without them (every backend a library that does
    not import, every problem invalid or FP8) the records are skips that need no device."""
    external = {b: import_external(b) for b in backends if b in EXTERNAL_BACKENDS}
    varlen = {b: import_external(b, EXTERNAL_VARLEN) for b in external if any(map(ps.is_serving, problems))}
    torch = flush = None
    runnable = any(not p.invalid and not is_fp8(p.dtype) for p in problems)  # else every record is a skip
    if runnable and (any(b in TORCH_BACKENDS + (FLEX,) for b in backends) or
                     any(fn for fn, _ in [*external.values(), *varlen.values()])):
        torch = import_torch()
        meta = device_meta(torch)
        flush = ColdL2(torch, 0, args.timing)
        args.policy.clocks = peer_telemetry.open_reader(torch, args.clocks)
    else:
        meta = no_device_meta()

    def record(p, b):
        if p.invalid:
            return record_fields(p, record_path(b), "invalid", p.invalid, meta)
        if is_fp8(p.dtype):
            return record_fields(p, record_path(b), "skip", FP8_SKIP, meta)
        if b == FLEX or ps.is_serving(p):
            return run_serving(torch, p, b, varlen.get(b), args, flush, meta)
        if b not in external:
            return run_backend(torch, p, b, args, flush, meta)
        fn, why = external[b]
        return record_fields(p, b, "skip", why, meta) if why else run_external(torch, p, b, fn, args, flush, meta)
    return record


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep", nargs="?", help="sweep file (.csv, .yaml) to time the backends on")
    ap.add_argument("--interleave", metavar="RESULTS.csv",
                    help="instead of a sweep: for each timed record of a fa-bench results file, time its path "
                         "(fa-bench, the record's problem and G) and the backends in alternation, A B A B ..., "
                         "and write both sides' records (median of round medians) and a ratio table")
    ap.add_argument("--rounds", type=int, default=5, help="with --interleave: rounds a side (default 5)")
    ap.add_argument("--round-samples", type=int, default=50,
                    help="with --interleave: samples each side takes a round, exactly (default 50)")
    ap.add_argument("--check", nargs="+", metavar="DIR",
                    help="instead of timing: run the backends (or --callable) on the q/k/v that fa-bench "
                         "--save-tensors wrote under each DIR, and judge every output with `fa-bench check` "
                         "(fa-bench's rule, not a fixed tolerance); exit with check's status")
    ap.add_argument("--check-out", help="where --check stages its outputs and CSVs (default: a new temp folder)")
    ap.add_argument("--callable", help="with --check: module:function (or file.py:function) called as "
                    "f(q, k, v, causal=bool, scale=float) on BSHD float32 numpy arrays, causal bottom-right; "
                    "returns O (BSHD) or (O, LSE), numpy or torch")
    ap.add_argument("--accumulate-keys", type=int,
                    help="with --check: keys one truncating fp32 accumulate step folds in, for the bias check's "
                         "drift allowance (default 16 for the k16 tensor-core backends flash, efficient, cudnn, "
                         "flex and fa2; 0 for math, aiter (MFMA, as fa-bench's own mfma path) and a --callable)")
    ap.add_argument("--callable-name", help="the path name its records carry (default callable-<function>)")
    ap.add_argument("--backends", default=",".join(BACKENDS),
                    help="comma-separated: torch's SDPA flash,efficient,cudnn,math; flex (FlexAttention, "
                         "compiled); fa2 (flash_attn.flash_attn_func, flash_attn_varlen_func on serving rows) "
                         "and aiter (aiter's), each a `skip` naming the import error where its library does "
                         "not import (default: all)")
    ap.add_argument("-o", "--output", default="sdpa-results.csv", help="results CSV (fa-bench schema)")
    ap.add_argument("--verify", action="store_true", help="check each output against an fp32 reference")
    ap.add_argument("--fa-bench", dest="fabench", help="fa-bench binary: YAML expansion, --interleave's fa-bench side")
    ap.add_argument("--timing", choices=("cold", "hot"), default="cold")
    ap.add_argument("--time-cap", type=float, default=0.5, help="seconds of samples per record (default 0.5)")
    ap.add_argument("--spread", type=float, default=0.005, help="stop at this relative spread (default 0.005)")
    ap.add_argument("--min-samples", type=int, default=10)
    ap.add_argument("--max-samples", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--clocks", choices=("auto",) + peer_telemetry.READERS + ("off",), default="auto",
                    help="reader of the clock, power and throttle reasons during the samples (schema 10's clock "
                         "columns): auto is NVML (libnvidia-ml, no package needed), else nvidia-smi on NVIDIA, the "
                         "amdsmi package on AMD; off (or FABENCH_CLOCKS=off) reads none (default auto)")
    args = ap.parse_args(argv)
    check_arguments(ap, args)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not backends:
        ap.error(f"--backends '{args.backends}' names no backend (known: {', '.join(BACKENDS)})")
    for b in backends:
        if b not in BACKENDS:
            ap.error(f"unknown backend '{b}' (known: {', '.join(BACKENDS)})")
    if args.check:
        sys.exit(peer_check.check_saved(args, check_runners(args, backends)))
    if not args.sweep and not args.interleave:
        ap.error("a sweep file is needed unless --check or --interleave is given")
    args.policy = TimingPolicy(args.warmup, args.min_samples, args.max_samples, args.spread, args.time_cap, args.timing)
    if args.interleave:
        return pi.interleave(ap, args, backends, lambda problems: peer_recorder(args, backends, problems))
    try:
        problems = load_sweep(args.sweep, args.fabench)
    except SystemExit as e:  # the sweep's own error (fa-bench expand's file:line: field, a bad cell): an input error
        if not isinstance(e.code, str):
            raise
        ap.error(e.code)
    record = peer_recorder(args, backends, problems)

    statuses = set()
    with open(args.output, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for i, p in enumerate(problems, 1):
            for b in backends:
                rec = record(p, b)
                statuses.add(rec["status"])
                w.writerow(rec)
                f.flush()
                print(f"[{i}/{len(problems)}] {p.label()} {p.dtype} {rec['path']}: {rec['status']} "
                      f"{rec['median_ms'] and rec['median_ms'] + ' ms'} {rec['reason']}", file=sys.stderr)
    print(f"wrote {len(problems) * len(backends)} records to {args.output}", file=sys.stderr)
    # fa-bench's exit status (harness/run/runner.cpp's exit_status): 1 for a fail or error record,
    # else 2 for an invalid row (an input error, as the sweep reader's), else 0.
    return 1 if statuses & {"fail", "error"} else 2 if "invalid" in statuses else 0


if __name__ == "__main__":
    sys.exit(main())
