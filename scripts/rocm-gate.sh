#!/usr/bin/env bash
# The ROCm gate workflow's steps (.github/workflows/rocm-gate.yml runs each as `scripts/rocm-gate.sh
# STEP`, and tests/scripts/test_rocm_gate.sh runs them with a stand-in build, so what CI proves is what
# the runner runs):
#   build  configure and build fa-bench for ROCM_ARCH with /opt/rocm's clang (the runner only)
#   sweep  run SWEEP (default sweeps/ci.yaml) into ci-results.csv; exit 1 (a wrong record) is the gate's
#   gate   gate ci-results.csv against BASELINE_DIR/<arch>.csv; with no baseline for the arch, bootstrap:
#          write baseline-candidate-<arch>.csv, print how to commit it, and pass
#   fit    time the heuristic sweeps at G 0..16 on PATHS and fit results/heuristics/<arch>.json
# Environment: ROCM_ARCH (gfx942), FA_BENCH (build/hip/fa-bench), SWEEP, BASELINE_DIR (results/baselines),
# FIT_SWEEPS (sweeps/heuristic-d64.yaml sweeps/heuristic-d128.yaml), FIT_PATHS (mfma), OUT (.: outputs).
# Usage: scripts/rocm-gate.sh build|sweep|gate|fit
set -euo pipefail
arch=${ROCM_ARCH:-gfx942}
bin=${FA_BENCH:-build/hip/fa-bench}
out=${OUT:-.}
baselines=${BASELINE_DIR:-results/baselines}
step=${1:?usage: scripts/rocm-gate.sh build|sweep|gate|fit}
[[ $arch =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "rocm-gate: ROCM_ARCH '$arch' is not a plain arch name" >&2; exit 2; }
case $step in
  build)
    cmake -S . -B build/hip -G Ninja -DFABENCH_GPU=hip "-DFABENCH_HIP_ARCHS=$arch" \
      -DFABENCH_ROCM_PATH=/opt/rocm -DFABENCH_ROCM_DEVICE_LIBS=/opt/rocm/amdgcn/bitcode \
      -DCMAKE_CXX_COMPILER=/opt/rocm/llvm/bin/clang++ -DCMAKE_PREFIX_PATH=/opt/rocm \
      -DFABENCH_NATIVE=OFF -DFABENCH_TESTS=OFF
    cmake --build build/hip --target fa-bench
    "$bin" info
    ;;
  sweep)
    # Exit 1 (a fail or error record) is the gate's to judge; exit 2 (bad input) stops here.
    "$bin" sweep "${SWEEP:-sweeps/ci.yaml}" -o "$out/ci-results.csv" --no-table || test $? -eq 1
    ;;
  gate)
    base="$baselines/$arch.csv"
    if [[ ! -f $base ]]; then
      cp "$out/ci-results.csv" "$out/baseline-candidate-$arch.csv"
      msg="no baseline for $arch ($base): this run's results are the artifact baseline-candidate-$arch.csv; on an idle runner, commit it as $base to gate later runs against it"
      echo "::notice title=rocm-gate bootstrap::$msg"
      echo "rocm-gate: $msg" >"$out/gate.md"
      exit 0
    fi
    "$bin" gate --baseline "$base" "$out/ci-results.csv" | tee "$out/gate.md"
    ;;
  fit)
    # shellcheck disable=SC2086  # FIT_SWEEPS is a list of files
    "$bin" sweep ${FIT_SWEEPS:-sweeps/heuristic-d64.yaml sweeps/heuristic-d128.yaml} --paths "${FIT_PATHS:-mfma}" \
      --G 0,2,4,8,16 --check-rows 32 -o "$out/heuristic-results.csv" --no-table
    mkdir -p "$out/heuristics"
    "$bin" fit "$out/heuristic-results.csv" -o "$out/fit-data.csv" --report "$out/fit.md" --params "$out/heuristics/$arch.json"
    echo "::notice title=rocm-gate fit::heuristics/$arch.json written: commit it as results/heuristics/$arch.json"
    ;;
  *) echo "usage: scripts/rocm-gate.sh build|sweep|gate|fit" >&2; exit 2 ;;
esac
