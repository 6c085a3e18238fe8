#!/usr/bin/env bash
# Instruction check for the NVIDIA tensor-core paths: compiles kernels/mma.hip and
# kernels/mma_decode.hip for sm_90a and fails if a file's code lacks its matrix instruction:
# mma.sync for both, and for mma.hip also the sm_90 kernel's warpgroup MMA.
# With cuobjdump (the full CUDA toolkit; the device machines have it) it checks the SASS for HMMA
# and HGMMA; without it (this repo's CI machine ships nvcc and ptxas only) it checks the PTX for
# mma.sync.aligned.m16n8k16 and wgmma.mma_async, which ptxas lowers to HMMA and HGMMA.
# Usage: scripts/ptx-check.sh [OUT_DIR]   (default build/ptx; NVCC=path to override)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/ptx}
mkdir -p "$out"
nvcc=${NVCC:-nvcc}
flags=(-x cu -arch=sm_90a -std=c++17 -O3 -I. -I/usr/include/eigen3 --expt-relaxed-constexpr -DFABENCH_HAS_GPU=1
       -DSPDLOG_FMT_EXTERNAL)
status=0
check() {  # file, count, what
  printf '%-24s %6d  %s\n' "$1" "$2" "$3"
  if [[ $2 -eq 0 ]]; then
    echo "FAIL $1: no $3"
    status=1
  fi
}
for base in mma mma_decode; do
  f=kernels/$base.hip
  if command -v cuobjdump >/dev/null; then
    "$nvcc" "${flags[@]}" -cubin -o "$out/$base.cubin" "$f"
    cuobjdump -sass "$out/$base.cubin" > "$out/$base.sass"
    check "$f" "$(grep -c 'HMMA' "$out/$base.sass" || true)" "HMMA in the sm_90a SASS"
    [[ $base == mma ]] && check "$f" "$(grep -c 'HGMMA' "$out/$base.sass" || true)" "HGMMA in the sm_90a SASS"
  else
    "$nvcc" "${flags[@]}" -ptx -o "$out/$base.ptx" "$f"
    check "$f" "$(grep -c 'mma\.sync\.aligned\.m16n8k16' "$out/$base.ptx" || true)" "mma.sync.aligned.m16n8k16 in the sm_90a PTX"
    [[ $base == mma ]] && check "$f" "$(grep -c 'wgmma\.mma_async' "$out/$base.ptx" || true)" "wgmma.mma_async in the sm_90a PTX"
  fi
done
exit $status
