"""The problems and records of scripts/sdpa_baseline.py's peers: a sweep's problems (a CSV sweep read
here, or any sweep through `fa-bench expand`), fa-bench's conventions for them (bottom-right causal,
exact FLOPs and bytes), the timing statistics and stopping rule of harness/timing.cpp, and one
results record in fa-bench's schema, so that `fa-bench compare`, `gate`, `table` and scripts/plot.py
read the peers' records like fa-bench's own. Stdlib only.
"""
import csv
import datetime
import glob
import io
import math
import os
import random
import shutil
import statistics
import subprocess
from dataclasses import dataclass

import peer_serving as ps  # the serving fields' names and lengths (beside this script)
import peer_telemetry  # the clock columns (beside this script)

SCHEMA = "10"  # harness/results/results.hpp's kSchemaVersion: 10 added the clock columns
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# harness/results/results.cpp's columns, in its order (schema 10; tests check them against the binary).
COLUMNS = (
    "schema run_id time name B H Hk S Sk D causal dtype layout kv_cache scale seqlens_q seqlens_k page_size window alibi "
    "softcap seed path ran_path plugin plugin_version "
    "G_req G_used "
    "split_rule units tile_m tile_n resident tile_heads "
    "status reason rule tol max_abs_err mean_abs_err rel_l2 cosine lse_max_err nan_inf unwritten cache_mismatch "
    "rows_checked rows_total lowprec_max_err bias_ulp bias_bound repeat_runs repeat_diffs timed_check "
    "median_ms min_ms max_ms spread samples timing_mode flush_bytes stopped_by "
    "batch timing_note clock_mhz_min clock_mhz_median power_w_max throttled_samples throttle_reasons cycles_median "
    "clock_source tflops gbps pct_peak bound flops bytes device arch sm_clock_mhz mem_clock_mhz shard "
    "device_index git_commit sweep_file sweep_line"
).split()


def is_fp8(dtype):
    """fa-bench's FP8 input dtypes (OCP fp8_e4m3, fp8_e5m2; FNUZ fp8_e4m3fnuz, fp8_e5m2fnuz): Q, K, V in
    FP8 with per-tensor descales."""
    return dtype.startswith("fp8")


# What every peer record of an FP8 row says: no peer here takes fa-bench's FP8 problem (FP8 Q, K, V
# with per-tensor descales and a bf16 O): torch's SDPA backends and FlexAttention take fp16, bf16 and
# fp32 tensors; flash_attn_func's FP8 is FA3's (flash_attn_interface), not installed with FA2.
FP8_SKIP = ("no peer kernel takes FP8 Q/K/V with descales here (torch SDPA and Flex take fp16/bf16/fp32); "
            "compare against the same shape's bf16 row")


@dataclass
class Problem:
    name: str = ""
    B: int = 1
    H: int = 1
    Hk: int = 1
    S: int = 1
    Sk: int = 1
    D: int = 64
    causal: bool = False
    dtype: str = "fp16"
    layout: str = "bshd"
    kv_cache: bool = False
    scale: float = 0.0  # 0: 1/sqrt(D)
    seed: int = 1
    sweep_file: str = ""
    sweep_line: int = 0
    invalid: str = ""  # "field: reason" when the row cannot run
    # Serving fields as the results write them (peer_serving.py runs them), and what expand resolved:
    # each sequence's lengths (S and Sk each without them) and the exact FLOPs and bytes.
    seqlens_q: str = ""
    seqlens_k: str = ""
    page_size: int = 0
    window: str = ""
    alibi: str = "0"
    softcap: float = 0.0
    q_lens: list = None
    k_lens: list = None
    flops_given: float = None
    bytes_given: float = None

    def __post_init__(self):
        if self.q_lens is None:
            self.q_lens, self.k_lens = [self.S] * self.B, [self.Sk] * self.B

    def softmax_scale(self):
        return self.scale if self.scale > 0 else 1.0 / math.sqrt(self.D)

    def visible_keys(self, row):
        """Keys [0, n) that query row `row` sees: bottom-right causal, 0 for rows past Sk."""
        if not self.causal:
            return self.Sk
        return min(max(row + (self.Sk - self.S) + 1, 0), self.Sk)

    def unmasked_pairs(self):
        """Closed form of sum(visible_keys(i) for i in range(S)), as harness/problem.cpp has it."""
        if not self.causal:
            return self.S * self.Sk
        off = self.Sk - self.S
        first = max(0, -off)
        full = min(max(self.Sk - off - 1, 0), self.S)
        pairs = 0
        if full > first:
            pairs += (first + off + 1 + full + off) * (full - first) // 2
        return pairs + (self.S - max(full, first)) * self.Sk

    def flops(self):
        if self.flops_given is not None:
            return self.flops_given
        return 4.0 * self.B * self.H * self.D * self.unmasked_pairs()

    def bytes(self):
        """Q, K, V read once, O written once in the dtype (bf16 for FP8 inputs); LSE once in fp32."""
        if self.bytes_given is not None:
            return self.bytes_given
        e = 4 if self.dtype == "fp32" else 1 if is_fp8(self.dtype) else 2
        eo = 2 if is_fp8(self.dtype) else e
        q = self.B * self.S * self.H * self.D
        kv = self.B * self.Sk * self.Hk * self.D
        return float((e + eo) * q + 2 * e * kv + 4 * self.B * self.H * self.S)

    def label(self):
        return self.name or f"B{self.B} H{self.H}/{self.Hk} S{self.S} Sk{self.Sk} D{self.D}"


def validate(p):
    """harness/problem.cpp's validate(): the reason a problem cannot run, or ''."""
    for field in ("B", "H", "Hk", "S", "Sk", "D"):
        if getattr(p, field) <= 0:
            return f"{field}: must be positive, got {getattr(p, field)}"
    if p.H % p.Hk:
        return f"Hk: H % Hk must be 0 (H={p.H}, Hk={p.Hk})"
    if p.D > 256:
        return f"D: head dimension {p.D} exceeds 256"
    if p.kv_cache and p.S > p.Sk:
        return "kv_cache: needs S <= Sk (the new tokens are the last S keys)"
    return ""


def parse_flag(text):
    if text in ("1", "true", "yes"):
        return True
    if text in ("0", "false", "no"):
        return False
    raise ValueError(f"'{text}' is not 0/1/true/false")


def problems_from_cells(cells, where_file, where_line):
    """One dense sweep row (column -> text) to problems, one per dtype: harness/sweep/sweep.cpp's
    defaults. A serving column is refused: its lengths and counts are fa-bench expand's to resolve."""
    def get(k):
        v = cells.get(k, "").strip()
        return v or None

    serving = [k for k in ps.SERVING_FIELDS if get(k) not in (None, "0", "0.0")] + (["layout thd"] * (get("layout") == "thd"))
    if serving:
        raise ValueError(f"{where_file}:{where_line}: {', '.join(serving)}: serving problems are read through "
                         "`fa-bench expand` (seeded lengths, exact FLOPs): pass --fa-bench or set FABENCH_BINARY")
    try:
        base = Problem(name=get("name") or "", B=int(get("B")), H=int(get("H")), S=int(get("S")), D=int(get("D")),
                       sweep_file=where_file, sweep_line=where_line)
        base.Hk = int(get("Hk")) if get("Hk") else base.H
        base.Sk = int(get("Sk")) if get("Sk") else base.S
        base.causal = parse_flag(get("causal")) if get("causal") else False
        base.kv_cache = parse_flag(get("kv_cache")) if get("kv_cache") else False
        base.scale = float(get("scale")) if get("scale") else 0.0
        base.seed = int(get("seed")) if get("seed") else 1
        base.layout = (get("layout") or "bshd").lower()
        base.q_lens, base.k_lens = [base.S] * base.B, [base.Sk] * base.B
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where_file}:{where_line}: {e}") from None
    out = []
    for dt in dict.fromkeys(d.strip() for d in (get("dtype") or "fp16").split("|")):
        p = Problem(**{**base.__dict__, "dtype": dt})
        p.invalid = validate(p)
        out.append(p)
    return out


def load_csv_sweep(path):
    """A dense CSV sweep read here (without a binary): header-named columns, `#` comments and blank
    lines skipped, lists as a|b."""
    header, problems = None, []
    with open(path, newline="") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cells = next(csv.reader([line]))
            if header is None:
                header = [c.strip() for c in cells]
                continue
            problems += problems_from_cells(dict(zip(header, cells)), path, n)
    return problems


def parse_expand_output(text):
    """`fa-bench expand` CSV to problems, with the serving fields as expand writes them (so records
    key like fa-bench's), each sequence's lengths (q_lens, k_lens) and the exact FLOPs and bytes."""
    out = []
    for row in csv.DictReader(io.StringIO(text)):
        p = Problem(name=row["name"], B=int(row["B"]), H=int(row["H"]), Hk=int(row["Hk"]), S=int(row["S"]),
                    Sk=int(row["Sk"]), D=int(row["D"]), causal=row["causal"] == "1", dtype=row["dtype"],
                    layout=row["layout"], kv_cache=row["kv_cache"] == "1", scale=float(row["scale"]),
                    seed=int(row["seed"]), sweep_file=row["sweep_file"], sweep_line=int(row["sweep_line"]),
                    invalid=row["invalid"], seqlens_q=row.get("seqlens_q", ""), seqlens_k=row.get("seqlens_k", ""),
                    page_size=int(row.get("page_size") or 0), window=row.get("window", ""),
                    alibi=row.get("alibi") or "0", softcap=float(row.get("softcap") or 0),
                    flops_given=float(row["flops"]), bytes_given=float(row["bytes"]))
        if row.get("q_lens"):
            p.q_lens, p.k_lens = ps.lengths(row["q_lens"]), ps.lengths(row["k_lens"])
        elif ps.is_serving(p) and not p.invalid:
            raise SystemExit(f"{p.sweep_file}:{p.sweep_line}: this fa-bench's expand prints no q_lens/k_lens "
                             "(each sequence's lengths): rebuild it")
        out.append(p)
    return out


def find_fabench(explicit=None):
    for cand in [explicit, os.environ.get("FABENCH_BINARY"), shutil.which("fa-bench"),
                 *sorted(glob.glob(os.path.join(REPO, "build", "*", "fa-bench")))]:
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def expand(binary, path):
    res = subprocess.run([binary, "expand", path], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"fa-bench expand {path} failed:\n{res.stderr}")
    return parse_expand_output(res.stdout)


def load_sweep(path, fabench=None):
    """The sweep's problems through `fa-bench expand` where a binary is found (every format; serving
    rows need it), else a CSV sweep read here (dense rows only)."""
    if not path.endswith((".csv", ".yaml", ".yml")):
        raise SystemExit(f"{path}: unknown sweep format (expected .csv, .yaml or .yml)")
    binary = find_fabench(fabench)
    if binary:
        return expand(binary, path)
    if path.endswith(".csv"):
        try:
            return load_csv_sweep(path)
        except ValueError as e:
            raise SystemExit(str(e)) from None
    raise SystemExit("YAML sweeps are expanded by `fa-bench expand`: build fa-bench or pass --fa-bench")


@dataclass
class TimingPolicy:
    warmup: int = 1
    min_samples: int = 10
    max_samples: int = 1000
    target_spread: float = 0.005
    time_cap_s: float = 0.5
    mode: str = "cold"
    clocks: object = None  # a peer_telemetry reader polled during the samples, or None


def timing_stats(samples_ms):
    """median, min, max, mean and spread (sample stddev / mean), as harness/timing.cpp reports."""
    n = len(samples_ms)
    mean = sum(samples_ms) / n
    spread = statistics.stdev(samples_ms) / mean if n > 1 and mean > 0 else 0.0
    return {"median_ms": statistics.median(samples_ms), "min_ms": min(samples_ms), "max_ms": max(samples_ms),
            "mean_ms": mean, "spread": spread, "samples": n}


def stop_reason(samples_ms, elapsed_s, policy):
    """Why sampling stops now ('spread', 'max-samples', 'cap'), or None to take another sample."""
    n = len(samples_ms)
    if n >= policy.min_samples and timing_stats(samples_ms)["spread"] <= policy.target_spread:
        return "spread"
    if n >= policy.max_samples:
        return "max-samples"
    if elapsed_s >= policy.time_cap_s:
        return "cap"
    return None


def g6(x):
    return format(x, ".6g")


def no_device_meta():
    """Run metadata where no device was probed (every backend asked for failed to import)."""
    started = utc_now()
    return {"run_id": f"{started}-{random.getrandbits(24):06x}", "device": "", "arch": "", "git_commit": git_commit()}


def record_fields(p, path, status, reason, meta, stats=None, metrics=None):
    """One fa-bench results row (column -> text) for a problem run on a backend; stats may carry
    "clocks" (peer_telemetry.clock_stats), whose throttling goes to timing_note as fa-bench writes it."""
    r = dict.fromkeys(COLUMNS, "")
    r.update(schema=SCHEMA, run_id=meta["run_id"], time=utc_now(), name=p.name, B=p.B, H=p.H, Hk=p.Hk, S=p.S, Sk=p.Sk,
             D=p.D, causal=int(p.causal), dtype=p.dtype, layout=p.layout, kv_cache=int(p.kv_cache),
             scale=format(p.scale, ".9g"), seqlens_q=p.seqlens_q, seqlens_k=p.seqlens_k, page_size=p.page_size,
             window=p.window, alibi=p.alibi, softcap=format(p.softcap, ".9g"), seed=p.seed, path=path, ran_path=path,
             G_req="0", G_used="0",
             status=status, reason=" ".join(reason.split()), flops=g6(p.flops()), bytes=g6(p.bytes()),
             device=meta["device"], arch=meta["arch"], git_commit=meta["git_commit"], sweep_file=p.sweep_file,
             sweep_line=p.sweep_line)
    if metrics:
        r.update(rule="fixed", tol=g6(metrics["tol"]), max_abs_err=g6(metrics["max_abs"]),
                 mean_abs_err=g6(metrics["mean_abs"]), rel_l2=g6(metrics["rel_l2"]),
                 cosine=format(metrics["cosine"], ".9f"), nan_inf=metrics["nan_inf"], rows_checked=p.S, rows_total=p.S)
    if stats:
        s = stats["median_ms"] * 1e-3
        r.update(median_ms=g6(stats["median_ms"]), min_ms=g6(stats["min_ms"]), max_ms=g6(stats["max_ms"]),
                 spread=g6(stats["spread"]), samples=stats["samples"], timing_mode=stats["mode"],
                 stopped_by=stats["stopped_by"], timing_note=peer_telemetry.throttle_note(stats.get("clocks")),
                 **peer_telemetry.clock_columns(stats.get("clocks"), g6), tflops=g6(p.flops() / s / 1e12 if s > 0 else 0),
                 gbps=g6(p.bytes() / s / 1e9 if s > 0 else 0))
    return {k: str(v) for k, v in r.items()}


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_commit():
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
