#!/usr/bin/env bash
# One batch on a GPU machine, for binaries built elsewhere (BIN, default build/dev): the gpu test
# label, the edge and Whisper sweeps and llm-d64 TFLOP/s over every GPU path (the rows `fa-bench
# list --names gpu` names, auto included), the fp8, serving and fa-ck sweeps validated on every GPU
# path, decode bandwidth next to a device copy, and compute-sanitizer memcheck, racecheck and
# synccheck over SAN_ROWS (default sweeps/edge.csv; a sweep of the changed kernels' rows, say). Writes
# CSVs and logs under OUT (default /tmp/fa-bench-device) and prints a short table last.
# Usage: BIN=build/dev OUT=/tmp/x [SAN_ROWS=rows.csv] scripts/device-check.sh [steps...]
#   (BIN and SAN_ROWS relative to the repository root, where the script runs)
#   steps: tests edge whisper llm fp8 serving fa-ck bandwidth memcheck racecheck synccheck
#   (default: all)
set -uo pipefail
cd "$(dirname "$0")/.." || exit
bin=${BIN:-build/dev}
out=${OUT:-/tmp/fa-bench-device}
san_rows=${SAN_ROWS:-sweeps/edge.csv}
known=(tests edge whisper llm fp8 serving fa-ck bandwidth memcheck racecheck synccheck)
steps=("$@")
((${#steps[@]})) || steps=("${known[@]}")
# Every step named is known, and what the steps need is there, before any runs.
for s in "${steps[@]}"; do
  [[ " ${known[*]} " == *" $s "* ]] || { echo "device-check: unknown step '$s' (steps: ${known[*]})" >&2; exit 2; }
  if [[ $s == *check && ! -f $san_rows ]]; then echo "device-check: SAN_ROWS: no file $san_rows" >&2; exit 2; fi
done
[[ -x $bin/fa-bench ]] || { echo "device-check: BIN: no $bin/fa-bench" >&2; exit 2; }
mkdir -p "$out"
export FABENCH_SOURCE_DIR=$PWD
gpu_paths=$("$bin/fa-bench" list --names gpu | paste -sd, -)
declare -A result

run_step() {  # name, timeout seconds, command...
  local name=$1 limit=$2
  shift 2
  echo "== $name: $*"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  result[$name]="rc=$rc $((SECONDS - t0))s"
  tail -n 4 "$out/$name.log"
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
"$bin/fa-bench" info
for s in "${steps[@]}"; do
  case $s in
    tests) run_step tests 300 "$bin/tests/test_gpu_paths" ;;
    edge) run_step edge 300 "$bin/fa-bench" sweep sweeps/edge.csv --paths "$gpu_paths" --time-cap 0.05 \
            -o "$out/edge.csv" --no-table ;;
    whisper) run_step whisper 300 "$bin/fa-bench" sweep sweeps/whisper.csv --paths "$gpu_paths" --time-cap 0.1 \
               -o "$out/whisper.csv" ;;
    llm) run_step llm 420 "$bin/fa-bench" sweep sweeps/llm-d64.csv --paths "$gpu_paths" --time-cap 0.3 \
           --min-samples 5 -o "$out/llm.csv" ;;
    bandwidth) run_step bandwidth 300 "$bin/bench-decode" ;;
    fp8 | serving) run_step "$s" 420 "$bin/fa-bench" sweep "sweeps/$s.yaml" --paths "$gpu_paths" --no-timing \
                     -o "$out/$s.csv" --no-table ;;  # validated only: every record checked, no timing
    fa-ck) run_step fa-ck 420 "$bin/fa-bench" sweep sweeps/fa-ck.yaml --paths "$gpu_paths" --no-timing \
             --repeat-check 3 -o "$out/fa-ck.csv" --no-table ;;  # as the file says: deterministic reruns
    # racecheck and synccheck instrument every shared-memory access and barrier, the GPU reference
    # kernel's too where it checks the records: in session 46 racecheck did not finish a 4096 x 4096 FP8
    # record in 80 s that way, and smaller problems of the same instances took 10 s with it off. The
    # paths' kernels are what these tools check; each record's rows are checked on the CPU, 8 a problem.
    # memcheck keeps the GPU reference.
    memcheck | racecheck | synccheck)
      cpu_check=()
      [[ $s == memcheck ]] || cpu_check=(--gpu-reference off --check-rows 8)
      run_step "$s" 420 compute-sanitizer --tool "$s" --error-exitcode 9 "$bin/fa-bench" sweep "$san_rows" \
        --paths "$gpu_paths" --no-timing "${cpu_check[@]}" -o "$out/$s.csv" --no-table ;;
  esac
done

echo
echo "| step | result | last line |"
echo "|---|---|---|"
for s in "${steps[@]}"; do
  echo "| $s | ${result[$s]:-not run} | $(grep -v '^\s*$' "$out/$s.log" 2>/dev/null | tail -n 1 | cut -c1-110) |"
done
