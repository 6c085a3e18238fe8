#!/usr/bin/env bash
# ISA check: compiles every kernel file for gfx942 (MI300, CDNA3, wave64) and gfx1100 (RDNA3,
# wave32) to device assembly with Debian's clang-19 (no device libraries, no link), then reports
# per file and arch the kernels emitted, their VGPR count and scratch (spill) bytes.
# Fails if a file does not compile or a kernel file emits no kernel.
# Usage: scripts/isa-check.sh [OUT_DIR]   (default build/isa)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/isa}
mkdir -p "$out"
cxx=${CLANG19:-clang++-19}
status=0
printf '%-22s %-8s %7s %9s %9s\n' file arch kernels max_vgpr scratch_B
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
    printf '%-22s %-8s %7s %9s %9s\n' "$base" "$arch" "$kernels" "${vgpr:--}" "${scratch:--}"
    if grep -q '__global__' "$f" && [[ "$kernels" -eq 0 ]]; then
      echo "FAIL $f ($arch): defines kernels but none was emitted"; status=1
    fi
  done
done
exit $status
