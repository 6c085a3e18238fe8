#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ (clang++-19, ASan + UBSan) and runs each for FUZZ_SECONDS
# (default 30) from its committed seed corpus fuzz/corpus/<target>/. New inputs go to
# build/fuzz/corpus/<target>/, crash inputs to build/fuzz/crashes/; a crash exits non-zero.
# Usage: scripts/fuzz.sh [sweep_csv|sweep_yaml|filter ...]   (JOBS=N, FUZZ_SECONDS=S)
# Reproduce a crash: build/fuzz/fuzz_<target> build/fuzz/crashes/<target>-crash-<sha>
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-30}
cmake -S fuzz -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
cmake --build build/fuzz -j "${JOBS:-$(nproc)}"
targets=("$@")
((${#targets[@]})) || targets=(sweep_csv sweep_yaml filter)
mkdir -p build/fuzz/crashes
for t in "${targets[@]}"; do
  mkdir -p "build/fuzz/corpus/$t"
  echo "fuzz_$t: ${secs} s"
  "build/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/crashes/$t-" "build/fuzz/corpus/$t" "fuzz/corpus/$t" 2>&1 | tail -n 12
done
