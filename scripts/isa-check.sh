#!/usr/bin/env bash
# ISA check: compiles every .hip file under kernels/ for gfx942 (MI300, CDNA3, wave64) and gfx1100
# (RDNA3, wave32) to device assembly with Debian's clang-19 (no device libraries, no link), then
# reports per file and arch the kernels emitted, their VGPR count, scratch (spill) bytes and matrix
# instructions (v_mfma, v_wmma). Fails if a file does not compile, a file that defines kernels
# emits none, or a file lacks an instruction it names for an AMD arch, in lines of the form
#   // fa-bench-isa: gfx942: v_mfma
# (a word of the assembly that starts with it). The list lives in the kernel file; this script
# names no file. NVIDIA lines (sm_*) are scripts/ptx-check.sh's.
# Without device libraries, threadIdx, __syncthreads and log2f stay out-of-line calls whose ABI
# inflates VGPRs and scratch (mfma D=256: 272 B here, 0 with the ROCm bitcode linked).
# Usage: scripts/isa-check.sh [OUT_DIR]   (default build/isa)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/isa}
mkdir -p "$out"
cxx=${CLANG19:-clang++-19}
cache=()  # ccache where installed (scripts/setup.sh): a rerun on unchanged sources reads the assembly back
command -v ccache >/dev/null && cache=(ccache)
status=0
printf '%-28s %-8s %7s %9s %9s %6s %6s\n' file arch kernels max_vgpr scratch_B v_mfma v_wmma
while IFS= read -r f; do
  base=${f#kernels/}
  base=${base%.hip}
  base=${base//\//_}
  # The archs: the two this check always covers, plus any AMD arch a line of the file names.
  archs=$( (printf 'gfx942\ngfx1100\n'; grep -oE '^// fa-bench-isa: gfx[0-9a-z]+:' "$f" | sed -E 's|^// fa-bench-isa: (gfx[0-9a-z]+):|\1|' || true) | awk '!seen[$0]++')
  for arch in $archs; do
    s="$out/$base-$arch.s"
    if ! "${cache[@]}" "$cxx" -x hip --offload-arch="$arch" -nogpulib --cuda-device-only -S -O3 -std=c++17 \
         --rocm-path=/usr -I. -Iinclude -Wno-unused-result -Wno-pass-failed -o "$s" "$f" 2>"$out/$base-$arch.log"; then
      echo "FAIL $f ($arch):"; cat "$out/$base-$arch.log"; status=1; continue
    fi
    kernels=$(grep -c '^\s*\.amdhsa_kernel ' "$s" || true)
    vgpr=$(grep -oP '\.amdhsa_next_free_vgpr \K[0-9]+' "$s" | sort -n | tail -1 || true)
    scratch=$(grep -oP '\.amdhsa_private_segment_fixed_size \K[0-9]+' "$s" | sort -n | tail -1 || true)
    n_mfma=$(grep -c '^\s*v_mfma' "$s" || true)
    n_wmma=$(grep -c '^\s*v_wmma' "$s" || true)
    printf '%-28s %-8s %7s %9s %9s %6s %6s\n' "$base" "$arch" "$kernels" "${vgpr:--}" "${scratch:--}" "$n_mfma" "$n_wmma"
    for need in $(grep -E "^// fa-bench-isa: $arch:" "$f" | sed -E 's|^// fa-bench-isa: [^:]+:||' || true); do
      if ! grep -qE "^\s*${need//./\\.}" "$s"; then
        echo "FAIL $f ($arch): no $need instruction in the assembly"; status=1
      fi
    done
    if grep -q '__global__' "$f" && [[ "$kernels" -eq 0 ]]; then
      echo "FAIL $f ($arch): defines kernels but none was emitted"; status=1
    fi
  done
done < <(find kernels -name '*.hip' | sort)
exit $status
