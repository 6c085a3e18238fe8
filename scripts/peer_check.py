"""scripts/sdpa_baseline.py --check: outputs computed here, judged by `fa-bench check` under fa-bench's
own rule. Each runner (a torch SDPA backend, FlexAttention, a library, a --callable) runs on the
q/k/v that `fa-bench sweep --save-tensors DIR` wrote; its O (and LSE, where it gives one) goes
beside links to them in a staged folder as o.npy (lse.npy), and `fa-bench check` applies exactly
what a built-in path gets (low-precision reference, cosine, NaN, rounding bias, LSE). A serving
folder is unpacked first (thd rows through cu_seqlens, paged K/V through block_table, each
sequence's keys by seqused_k: peer_serving.py) and the output packed back into Q's storage. What
could not run joins the check's CSV as a `skip` with the reason.
"""
import csv
import glob
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import peer_serving as ps
from peer_problems import COLUMNS, FP8_SKIP, expand, find_fabench, is_fp8, no_device_meta, record_fields


@dataclass
class Runner:
    """How --check runs one record path. dense(p, q, k, v): BSHD float32 arrays of a dense problem to
    O (torch SDPA, a library's flash_attn_func, a --callable); a serving problem reaches it one
    sequence at a time. packed(p, q, k, v): packed rows ([sum sq, H, D], [sum sk, Hk, D]) of any
    problem to (O packed, LSE [H, sum sq] or None) (FlexAttention, a library's
    flash_attn_varlen_func); it takes every serving problem, and every problem where dense is None.
    refuse(p): why a serving problem cannot run, or None. lse: packed gives the LSE, to be judged."""
    dense: object = None
    packed: object = None
    refuse: object = None
    lse: bool = False


# The record paths that run on NVIDIA tensor cores' k16 steps (--accumulate-keys' default 16).
K16_PATHS = ("torch-flash", "torch-efficient", "torch-cudnn", "torch-flex", "fa2")


def record_dirs(roots):
    """--save-tensors record folders (those holding problem.json) under each root, or the root itself."""
    out = []
    for root in roots:
        if os.path.isfile(os.path.join(root, "problem.json")):
            out.append(root)
            continue
        subs = sorted(d for d in glob.glob(os.path.join(root, "*")) if os.path.isfile(os.path.join(d, "problem.json")))
        if not subs:
            raise SystemExit(f"{root}: no problem.json in it or its sub-folders (write them with fa-bench --save-tensors)")
        out += subs
    return out


def saved_problems(binary, folders):
    """The Problems the folders' problem.json describe (harness/tensor_files.cpp), read as a sweep's
    rows are: their cells through `fa-bench expand` (one CSV), so each carries its resolved lengths
    and exact FLOPs and bytes; the scale as problem.json has it, to the last bit."""
    import json
    cells = []
    for folder in folders:
        with open(os.path.join(folder, "problem.json")) as f:
            cells.append({k: str(v) for k, v in json.load(f)["problem"].items()})
    fd, sweep = tempfile.mkstemp(suffix=".csv", prefix="fa-bench-saved-")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for c in cells for k in c)), lineterminator="\n")
            w.writeheader()
            w.writerows(cells)
        problems = expand(binary, sweep)
    finally:
        os.remove(sweep)
    if len(problems) != len(folders):
        raise SystemExit(f"fa-bench expand read {len(problems)} problems from {len(folders)} problem.json files")
    for p, c, folder in zip(problems, cells, folders):
        p.scale, p.sweep_file, p.sweep_line = float(c["scale"]), os.path.join(folder, "problem.json"), 0
    return problems


def stage_output(folder, out_root, path, o, dtype, lse=None):
    """out_root/<path>/<folder's name>: the folder's inputs linked (q, k, v, problem.json and the
    serving arrays), o.npy written in Q's storage shape (fp16 as '<f2'; bf16 and fp32 as '<f4', which
    `check` rounds to the dtype as a store would), lse.npy [B, H, S] where given. Returns the folder."""
    import numpy as np
    dst = os.path.join(out_root, path, os.path.basename(os.path.normpath(folder)))
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(folder)):
        if name in ("o.npy", "lse.npy") or not os.path.isfile(os.path.join(folder, name)):
            continue
        link = os.path.join(dst, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(os.path.join(folder, name)), link)
    np.save(os.path.join(dst, "o.npy"), np.asarray(o, dtype=np.float16 if dtype == "fp16" else np.float32))
    if lse is not None:
        np.save(os.path.join(dst, "lse.npy"), np.asarray(lse, dtype=np.float32))
    elif os.path.lexists(os.path.join(dst, "lse.npy")):
        os.remove(os.path.join(dst, "lse.npy"))
    return dst


def import_callable(spec):
    """`module:function` (module importable from PYTHONPATH or a file path ending in .py)."""
    mod, _, fn = spec.partition(":")
    if not fn:
        raise SystemExit(f"--callable '{spec}': expected module:function")
    if mod.endswith(".py"):
        sp = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(mod))[0], mod)
        m = importlib.util.module_from_spec(sp)
        sp.loader.exec_module(m)
    else:
        m = importlib.import_module(mod)
    return getattr(m, fn)


def check_saved(args, runners):
    """Each runner (record path -> Runner, or the reason nothing runs) on every saved record's inputs;
    `fa-bench check` then judges each output by the rule a built-in path gets (the LSE too where the
    runner gives it), and what could not run (a library that does not import, a field it has no
    kernel for, a refusal) joins its CSV as a `skip` with the reason. A kv_cache record runs like any
    other: its saved K/V hold the appended keys (the append is the saved path's work, which `check`
    does not judge here). Returns check's worst exit status."""
    binary = find_fabench(args.fabench)
    if not binary:
        raise SystemExit("--check needs the fa-bench binary: pass --fa-bench, set FABENCH_BINARY or build it")
    folders = record_dirs(args.check)
    problems = saved_problems(binary, folders)
    out_root = args.check_out or tempfile.mkdtemp(prefix="fa-bench-check-")
    os.makedirs(out_root, exist_ok=True)
    meta = no_device_meta()
    worst = 0
    for path, run in runners.items():
        staged, skips = [], []
        for folder, p in zip(folders, problems):
            if isinstance(run, str):
                skips.append((p, run))
                continue
            if is_fp8(p.dtype):  # saved as FP8 bits with descale.npy: no runner here takes them
                skips.append((p, FP8_SKIP))
                continue
            try:
                o, lse = record_output(run, p, folder)
                staged.append(stage_output(folder, out_root, path, o, p.dtype, lse))
            except RuntimeError as e:  # a backend that has no kernel for the problem: nothing to judge
                skips.append((p, str(e).splitlines()[0][:300]))
        csv_out = os.path.join(out_root, path + ".csv")
        if staged:
            keys = args.accumulate_keys
            if keys is None:
                keys = 16 if path in K16_PATHS else 0
            res = subprocess.run([binary, "check", *staged, "--path", path, *([] if run.lse else ["--no-lse"]),
                                  "--no-table", "--accumulate-keys", str(keys), "-o", csv_out])
            print(f"{path}: fa-bench check on {len(staged)} records exited {res.returncode}; records in {csv_out}",
                  file=sys.stderr)
            worst = max(worst, res.returncode)
        if skips:
            with open(csv_out, "a" if staged else "w", newline="") as f:  # check wrote COLUMNS' header
                w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
                if not staged:
                    w.writeheader()
                for p, why in skips:
                    w.writerow(record_fields(p, path, "skip", why, meta))
            print(f"{path}: {len(skips)} records skipped ({skips[0][1]}{'; ...' if len(skips) > 1 else ''}); "
                  f"in {csv_out}", file=sys.stderr)
    return worst


def record_output(run, p, folder):
    """run on a folder's inputs: (O in Q's storage shape, LSE [B, H, S] or None). A dense problem
    goes to `dense` as it is; a serving one is unpacked into sequences and goes to `packed` in one
    call, or to `dense` a sequence at a time. A refusal raises RuntimeError."""
    import numpy as np
    if run.dense and not ps.is_serving(p):
        return saved_output(run.dense, p, folder), None
    why = run.refuse(p) if run.refuse else None
    if why:
        raise RuntimeError(why)
    if ps.saved_lengths(folder, p) != (p.q_lens, p.k_lens):
        raise SystemExit(f"{folder}: cu_seqlens_q.npy/seqused_k.npy disagree with problem.json's lengths "
                         f"{p.q_lens}, {p.k_lens}")
    seqs = ps.saved_sequences(folder, p, p.q_lens, p.k_lens)
    if run.packed:
        o, lse = run.packed(p, *(np.concatenate([s[i] for s in seqs]) for i in range(3)))
        outs = ps.split_rows(to_numpy(o), p.q_lens)
        lses = None if lse is None else ps.split_rows(to_numpy(lse), p.q_lens, axis=1)
    else:
        outs, lses = [sequence_output(run.dense, p, *s) for s in seqs], None
    return ps.storage_output(p, p.q_lens, outs), None if lses is None else ps.storage_lse(p, p.q_lens, lses)


def sequence_output(dense, p, q, k, v):
    """A dense runner on one sequence (q [sq, H, D], k, v [sk, Hk, D]): O [sq, H, D]. A sequence
    without queries or keys makes no call: its rows see no key and are 0."""
    import numpy as np
    sq, sk = q.shape[0], k.shape[0]
    if sq == 0 or sk == 0:
        return np.zeros((sq, p.H, p.D), np.float32)
    return to_numpy(dense(ps.sequence_problem(p, sq, sk), q[None], k[None], v[None]))[0]


def saved_output(run, p, folder):
    """run's O on a --save-tensors folder's q/k/v (BSHD float32 in, the problem's layout out)."""
    import numpy as np
    q, k, v = (np.load(os.path.join(folder, n + ".npy")).astype(np.float32) for n in ("q", "k", "v"))
    if p.layout == "bhsd":  # the convention hands every callable BSHD
        q, k, v = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
    o = to_numpy(run(p, q, k, v))
    return o.transpose(0, 2, 1, 3) if p.layout == "bhsd" else o


def to_numpy(o):
    """A runner's answer as float32 numpy: O alone from an (O, LSE) tuple; torch tensors brought to the host."""
    import numpy as np
    o = o[0] if isinstance(o, tuple) else o
    return o.float().cpu().numpy() if hasattr(o, "cpu") else np.asarray(o, dtype=np.float32)
