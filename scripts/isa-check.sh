#!/usr/bin/env bash
# ISA check: compiles every kernel file for gfx942 (MI300, CDNA3, wave64) and gfx1100 (RDNA3,
# wave32) to device assembly with Debian's clang-19 (no device libraries, no link), then reports
# per file and arch the kernels emitted, their VGPR count, scratch (spill) bytes and matrix
# instructions (v_mfma, v_wmma). Fails if a file does not compile, a kernel file emits no kernel,
# or a matrix-core path lacks its instruction (mfma on gfx942, wmma on gfx1100).
# Without device libraries, threadIdx, __syncthreads and log2f stay out-of-line calls whose ABI
# inflates VGPRs and scratch (mfma D=256: 272 B here, 0 with the ROCm bitcode linked).
# Usage: scripts/isa-check.sh [OUT_DIR]   (default build/isa)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/isa}
mkdir -p "$out"
cxx=${CLANG19:-clang++-19}
# The instruction each matrix-core path must contain on the arch it is written for.
declare -A needs=([mfma:gfx942]=v_mfma [wmma:gfx1100]=v_wmma)
status=0
printf '%-22s %-8s %7s %9s %9s %6s %6s\n' file arch kernels max_vgpr scratch_B v_mfma v_wmma
for f in kernels/*.hip; do
  base=$(basename "$f" .hip)
  for arch in gfx942 gfx1100; do
    s="$out/$base-$arch.s"
    if ! "$cxx" -x hip --offload-arch="$arch" -nogpulib --cuda-device-only -S -O3 -std=c++17 \
         --rocm-path=/usr -I. -Wno-unused-result -Wno-pass-failed -o "$s" "$f" 2>"$out/$base-$arch.log"; then
      echo "FAIL $f ($arch):"; cat "$out/$base-$arch.log"; status=1; continue
    fi
    kernels=$(grep -c '^\s*\.amdhsa_kernel ' "$s" || true)
    vgpr=$(grep -oP '\.amdhsa_next_free_vgpr \K[0-9]+' "$s" | sort -n | tail -1 || true)
    scratch=$(grep -oP '\.amdhsa_private_segment_fixed_size \K[0-9]+' "$s" | sort -n | tail -1 || true)
    n_mfma=$(grep -c '^\s*v_mfma' "$s" || true)
    n_wmma=$(grep -c '^\s*v_wmma' "$s" || true)
    printf '%-22s %-8s %7s %9s %9s %6s %6s\n' "$base" "$arch" "$kernels" "${vgpr:--}" "${scratch:--}" "$n_mfma" "$n_wmma"
    need=${needs[$base:$arch]:-}
    if [[ -n "$need" ]] && ! grep -q "^\s*$need" "$s"; then
      echo "FAIL $f ($arch): no $need instruction in the assembly"; status=1
    fi
    if grep -q '__global__' "$f" && [[ "$kernels" -eq 0 ]]; then
      echo "FAIL $f ($arch): defines kernels but none was emitted"; status=1
    fi
  done
done
exit $status
