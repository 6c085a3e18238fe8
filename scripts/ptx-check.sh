#!/usr/bin/env bash
# Instruction check for the NVIDIA tensor-core paths: compiles kernels/mma.hip and
# kernels/mma_decode.hip for sm_90a and fails if a file's code lacks its matrix instruction.
# With cuobjdump (the full CUDA toolkit; the device machines have it) it checks the SASS for HMMA;
# without it (this repo's CI machine ships nvcc and ptxas only) it checks the PTX for
# mma.sync.aligned.m16n8k16, which ptxas lowers to HMMA on sm_80 and later.
# Usage: scripts/ptx-check.sh [OUT_DIR]   (default build/ptx; NVCC=path to override)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/ptx}
mkdir -p "$out"
nvcc=${NVCC:-nvcc}
flags=(-x cu -arch=sm_90a -std=c++17 -O3 -I. -I/usr/include/eigen3 --expt-relaxed-constexpr -DFABENCH_HAS_GPU=1
       -DSPDLOG_FMT_EXTERNAL)
status=0
for base in mma mma_decode; do
  f=kernels/$base.hip
  if command -v cuobjdump >/dev/null; then
    "$nvcc" "${flags[@]}" -cubin -o "$out/$base.cubin" "$f"
    n=$(cuobjdump -sass "$out/$base.cubin" | grep -c 'HMMA' || true)
    what="HMMA in the sm_90a SASS"
  else
    "$nvcc" "${flags[@]}" -ptx -o "$out/$base.ptx" "$f"
    n=$(grep -c 'mma\.sync\.aligned\.m16n8k16' "$out/$base.ptx" || true)
    what="mma.sync.aligned.m16n8k16 in the sm_90a PTX (no cuobjdump here for the SASS)"
  fi
  printf '%-24s %6d  %s\n' "$f" "$n" "$what"
  if [[ $n -eq 0 ]]; then
    echo "FAIL $f: no tensor-core instruction"
    status=1
  fi
done
exit $status
