#!/usr/bin/env bash
# The ROCm gate workflow's steps on this machine, with this build's fa-bench standing in for the
# runner's hip build (its GPU paths skip here; the CPU paths run): every `run:` of the workflow calls
# scripts/rocm-gate.sh; with no baseline the gate step writes the candidate, says so and passes; with
# that candidate committed as the baseline the gate runs on those results and passes; and `fa-bench gate` with a
# missing baseline exits 2 saying how to make one. Usage: test_rocm_gate.sh REPO FA_BENCH
set -euo pipefail
repo=${1:?usage: test_rocm_gate.sh REPO FA_BENCH}
bin=$(realpath "${2:?usage: test_rocm_gate.sh REPO FA_BENCH}")
cd "$repo"
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The workflow holds no shell logic: each run step is one call of the script.
runs=$(grep -E '^\s+run: ' .github/workflows/rocm-gate.yml | sed -E 's/^\s+run: //')
[[ -n $runs ]] || fail "no run steps found in rocm-gate.yml"
while IFS= read -r r; do
  [[ $r =~ ^scripts/rocm-gate\.sh\ (build|sweep|gate|fit)$ ]] || fail "rocm-gate.yml runs '$r', not a scripts/rocm-gate.sh step"
done <<<"$runs"

# A small sweep, quick on the CPU paths.
cat >"$work/small.csv" <<'CSV'
name,B,H,S,D,causal,dtype
tiny,1,2,32,64,1,fp16
tiny-bf16,1,2,48,64,0,bf16
CSV
# One OpenMP thread: the sweep is quick and leaves the other tests their cores.
export OMP_NUM_THREADS=1
export ROCM_ARCH=gfx942 FA_BENCH=$bin SWEEP=$work/small.csv BASELINE_DIR=$work/baselines OUT=$work
mkdir -p "$work/baselines"
scripts/rocm-gate.sh sweep >"$work/sweep.log" 2>&1 || fail "sweep step: $(tail -5 "$work/sweep.log")"
[[ -s $work/ci-results.csv ]] || fail "the sweep step wrote no ci-results.csv"
set +e
scripts/rocm-gate.sh gate >"$work/boot.log" 2>&1
rc=$?
set -e
[[ $rc -eq 0 ]] || fail "bootstrap gate exited $rc: $(cat "$work/boot.log")"
[[ -s $work/baseline-candidate-gfx942.csv ]] || fail "no baseline-candidate-gfx942.csv written"
cmp -s "$work/ci-results.csv" "$work/baseline-candidate-gfx942.csv" || fail "the candidate is not the run's results"
grep -q '^::notice' "$work/boot.log" || fail "no ::notice:: line: $(cat "$work/boot.log")"
echo "ok: no baseline: candidate written, notice printed, exit 0"

# The committed candidate gates the run it came from: a second sweep of microsecond CPU rows on a
# machine busy with other tests differs from the first by 1.4-1.7x (seen in CI even at one thread),
# and how the gate judges speed is test_gate's and test_cmd_gate's to prove, on recorded CSVs.
cp "$work/baseline-candidate-gfx942.csv" "$work/baselines/gfx942.csv"
set +e
scripts/rocm-gate.sh gate >"$work/gate.log" 2>&1
rc=$?
set -e
[[ $rc -eq 0 ]] || fail "gate against the committed candidate exited $rc: $(tail -5 "$work/gate.log")"
grep -q 'gate: PASS' "$work/gate.md" || fail "gate.md has no PASS verdict: $(tail -3 "$work/gate.md")"
echo "ok: with the baseline committed, the gate runs and passes"

set +e
"$bin" gate --baseline "$work/baselines/gfx1201.csv" "$work/ci-results.csv" >"$work/missing.log" 2>&1
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "gate with a missing baseline exited $rc, not 2"
grep -q 'make one' "$work/missing.log" || fail "the missing-baseline message says not how to make one: $(cat "$work/missing.log")"
[[ $(grep -c . "$work/missing.log") -eq 1 ]] || fail "the missing-baseline error is not one line: $(cat "$work/missing.log")"
echo "ok: gate with a missing baseline exits 2 with how to make one"
echo "1 passed, 0 failed"
