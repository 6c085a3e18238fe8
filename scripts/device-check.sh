#!/usr/bin/env bash
# One batch on a GPU machine, for binaries built elsewhere (BIN, default build/dev): the gpu test
# label, the edge and Whisper sweeps and llm-d64 TFLOP/s over every GPU path (the rows `fa-bench
# list --names gpu` names, auto included), decode bandwidth next to a device copy, and
# compute-sanitizer memcheck + racecheck over sweeps/edge.csv. Writes CSVs and logs under OUT
# (default /tmp/fa-bench-device) and prints a short table last.
# Usage: BIN=build/dev OUT=/tmp/x scripts/device-check.sh [steps...]
#   steps: tests edge whisper llm bandwidth memcheck racecheck (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-build/dev}
out=${OUT:-/tmp/fa-bench-device}
mkdir -p "$out"
export FABENCH_SOURCE_DIR=$PWD
gpu_paths=$("$bin/fa-bench" list --names gpu | paste -sd, -)
steps=${*:-tests edge whisper llm bandwidth memcheck racecheck}
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
for s in $steps; do
  case $s in
    tests) run_step tests 300 "$bin/tests/test_gpu_paths" ;;
    edge) run_step edge 300 "$bin/fa-bench" sweep sweeps/edge.csv --paths "$gpu_paths" --time-cap 0.05 \
            -o "$out/edge.csv" --no-table ;;
    whisper) run_step whisper 300 "$bin/fa-bench" sweep sweeps/whisper.csv --paths "$gpu_paths" --time-cap 0.1 \
               -o "$out/whisper.csv" ;;
    llm) run_step llm 420 "$bin/fa-bench" sweep sweeps/llm-d64.csv --paths "$gpu_paths" --time-cap 0.3 \
           --min-samples 5 -o "$out/llm.csv" ;;
    bandwidth) run_step bandwidth 300 "$bin/bench-decode" ;;
    memcheck) run_step memcheck 420 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/fa-bench" sweep \
                sweeps/edge.csv --paths "$gpu_paths" --no-timing -o "$out/memcheck.csv" --no-table ;;
    racecheck) run_step racecheck 420 compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/fa-bench" sweep \
                 sweeps/edge.csv --paths "$gpu_paths" --no-timing -o "$out/racecheck.csv" --no-table ;;
  esac
done

echo
echo "| step | result | last line |"
echo "|---|---|---|"
for s in $steps; do
  echo "| $s | ${result[$s]:-not run} | $(grep -v '^\s*$' "$out/$s.log" 2>/dev/null | tail -n 1 | cut -c1-110) |"
done
