"""scripts/sdpa_baseline.py --check: outputs computed here, judged by `fa-bench check` under fa-bench's
own rule. Each runner (a torch SDPA backend, a library, a --callable) runs on the q/k/v that `fa-bench
sweep --save-tensors DIR` wrote; its O goes beside links to them in a staged folder as o.npy, and
`fa-bench check` applies exactly what a built-in path gets (low-precision reference, cosine, NaN,
rounding bias). What could not run joins the check's CSV as a `skip` with the reason.
"""
import csv
import glob
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile

from peer_problems import COLUMNS, expand, find_fabench, no_device_meta, record_fields


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


def stage_output(folder, out_root, path, o_bshd, dtype):
    """out_root/<path>/<folder's name>: q, k, v and problem.json linked, o.npy written in the
    problem's layout (fp16 as '<f2'; bf16 and fp32 as '<f4', which `check` rounds to the dtype as a
    store would). Returns the staged folder."""
    import numpy as np
    dst = os.path.join(out_root, path, os.path.basename(os.path.normpath(folder)))
    os.makedirs(dst, exist_ok=True)
    for name in ("q.npy", "k.npy", "v.npy", "problem.json"):
        link = os.path.join(dst, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(os.path.join(folder, name)), link)
    o = np.asarray(o_bshd, dtype=np.float16 if dtype == "fp16" else np.float32)
    np.save(os.path.join(dst, "o.npy"), o)
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
    """Each runner (record path -> run(p, q, k, v) returning O (BSHD), or the reason nothing runs) on
    every saved record's q/k/v; `fa-bench check` then judges each output by the rule a built-in path
    gets, and what could not run (a library that does not import, a refusal, a kv_cache record) joins
    its CSV as a `skip` with the reason. Returns check's worst exit status."""
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
            elif p.kv_cache:
                skips.append((p, "a kv_cache record's inputs are the cache before the append"))
            else:
                try:
                    staged.append(stage_output(folder, out_root, path, saved_output(run, p, folder), p.dtype))
                except RuntimeError as e:  # a backend that has no kernel for the problem: nothing to judge
                    skips.append((p, str(e).splitlines()[0][:300]))
        csv_out = os.path.join(out_root, path + ".csv")
        if staged:
            keys = args.accumulate_keys
            if keys is None:
                keys = 16 if path in ("torch-flash", "torch-efficient", "torch-cudnn", "fa2") else 0
            res = subprocess.run([binary, "check", *staged, "--path", path, "--no-lse", "--no-table",
                                  "--accumulate-keys", str(keys), "-o", csv_out])
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


def saved_output(run, p, folder):
    """run's O on a --save-tensors folder's q/k/v (BSHD float32 in, the problem's layout out)."""
    import numpy as np
    q, k, v = (np.load(os.path.join(folder, n + ".npy")).astype(np.float32) for n in ("q", "k", "v"))
    if p.layout == "bhsd":  # the convention hands every callable BSHD
        q, k, v = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
    o = run(p, q, k, v)
    o = o[0] if isinstance(o, tuple) else o
    o = o.float().cpu().numpy() if hasattr(o, "cpu") else np.asarray(o, dtype=np.float32)
    return o.transpose(0, 2, 1, 3) if p.layout == "bhsd" else o
