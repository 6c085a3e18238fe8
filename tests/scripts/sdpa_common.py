"""What tests/scripts/test_sdpa_baseline.py and test_sdpa_serving.py share: the fa-bench binary and
the source tree (FABENCH_BINARY, FABENCH_SOURCE_DIR), records written as scripts/sdpa_baseline.py
writes them, a stand-in tensor and a stub flash_attn module, and numpy callables under --callable's
convention, and a sweep saved for --check. Not a test itself."""
import csv
import importlib.util
import os
import subprocess
import sys
import tempfile

SOURCE = os.environ.get("FABENCH_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import peer_serving as ps  # noqa: E402,F401
import sdpa_baseline as sb  # noqa: E402

BINARY = os.environ.get("FABENCH_BINARY") or sb.find_fabench()

HAS_TORCH = importlib.util.find_spec("torch") is not None

NO_EXTERNAL = all(importlib.util.find_spec(m) is None for m, _ in sb.EXTERNAL_BACKENDS.values())

META = {"run_id": "test", "device": "test device", "arch": "sm_90", "git_commit": "abc"}

def fa_bench(*args):
    res = subprocess.run([BINARY, *args], capture_output=True, text=True)
    return res.returncode, res.stdout + res.stderr

def temp_path(suffix):
    fd, path = tempfile.mkstemp(suffix=suffix, prefix="sdpa-test-")
    os.close(fd)
    return path

def write_records(rows):
    path = temp_path(".csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=sb.COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return path

# A stand-in for a tensor: the call is checked by what it receives, not by what it computes.
class Shaped:
    def __init__(self, *shape):
        self.shape = shape

# flash-attention 2's flash_attn_func signature (flash_attn/flash_attn_interface.py), recording each
# call; with RETURNS_TUPLE it answers (out, lse) as aiter's older versions do without return_lse.
STUB = """
calls = []
RETURNS_TUPLE = {tuple}

def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                    softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    calls.append({{"q": q.shape, "k": k.shape, "v": v.shape, "dropout_p": dropout_p,
                  "softmax_scale": softmax_scale, "causal": causal, "window_size": window_size,
                  "return_attn_probs": return_attn_probs}})
    return ("O from {name}", "lse") if RETURNS_TUPLE else "O from {name}"
"""


def stub_module(test, module, returns_tuple=False, extra=""):
    """module on sys.path as a stub flash_attn_func (and `extra` source); removed again when `test` ends."""
    root = tempfile.mkdtemp(prefix="sdpa-stub-")
    os.makedirs(os.path.join(root, module))
    with open(os.path.join(root, module, "__init__.py"), "w") as f:
        f.write(STUB.format(tuple=returns_tuple, name=module) + extra)
    sys.path.insert(0, root)
    sys.modules.pop(module, None)
    test.addCleanup(sys.modules.pop, module, None)
    test.addCleanup(sys.path.remove, root)
    return root

def python_with_numpy():
    """This interpreter if it has numpy, else Debian's (scripts/setup.sh installs python3-numpy)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and subprocess.run([exe, "-c", "import numpy"], capture_output=True).returncode == 0:
            return exe
    return None

NUMPY_PYTHON = python_with_numpy()

# A correct attention under the --callable convention (BSHD float32 numpy, causal bottom-right,
# GQA), and the same with causal top-left aligned: wrong wherever S != Sk.
CALLABLES = """
import numpy as np

def attend(q, k, v, causal, scale, top_left=False):
    B, S, H, D = q.shape
    Sk, Hk = k.shape[1], k.shape[2]
    k = np.repeat(k, H // Hk, axis=2)
    v = np.repeat(v, H // Hk, axis=2)
    s = np.einsum("bshd,bthd->bhst", q.astype(np.float64), k.astype(np.float64)) * scale
    if causal:
        shift = 0 if top_left else Sk - S
        seen = np.arange(Sk)[None, :] <= np.arange(S)[:, None] + shift
        s = np.where(seen, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    w = np.exp(s - np.where(np.isfinite(m), m, 0))
    l = np.sum(w, axis=-1, keepdims=True)
    w = np.where(l > 0, w / np.where(l > 0, l, 1), 0)
    return np.einsum("bhst,bthd->bshd", w, v.astype(np.float64)).astype(np.float32)

def right(q, k, v, causal, scale):
    return attend(q, k, v, causal, scale)

def top_left(q, k, v, causal, scale):
    return attend(q, k, v, causal, scale, top_left=True)
"""


def saved_sweep(prefix, sweep_name, sweep_text):
    """A sweep run on cpu-flash with --save-tensors into a fresh folder, and CALLABLES written beside
    it: (folder, the saved tensors' folder, the callables' module)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    sweep = os.path.join(tmp, sweep_name)
    with open(sweep, "w") as f:
        f.write(sweep_text)
    saved = os.path.join(tmp, "saved")
    code, out = fa_bench("sweep", sweep, "--paths", "cpu-flash", "--no-timing", "--no-table",
                         "--save-tensors", saved, "-o", os.path.join(tmp, "r.csv"))
    assert code == 0, out
    module = os.path.join(tmp, "kernels.py")
    with open(module, "w") as f:
        f.write(CALLABLES)
    return tmp, saved, module
