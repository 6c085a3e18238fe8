#!/usr/bin/env bash
# Instruction check for the NVIDIA paths: every kernel file under kernels/ that names what its
# code must hold, in lines of the form
#   // fa-bench-isa: sm_90a: mma.sync.aligned.m16n8k16 wgmma.mma_async     (PTX instructions)
#   // fa-bench-isa: sm_90a.sass: HMMA HGMMA                              (SASS, with cuobjdump)
# is compiled for that arch, and the check fails if an instruction is missing. The list lives in
# the kernel file; this script names no file. The PTX lines are always checked; the .sass lines
# where cuobjdump exists (the full CUDA toolkit: the device machines have it; this repo's CI
# machine ships nvcc and ptxas only). AMD archs (gfx*) are scripts/isa-check.sh's.
# Usage: scripts/ptx-check.sh [OUT_DIR]   (default build/ptx; NVCC=path to override)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/ptx}
mkdir -p "$out"
nvcc=${NVCC:-nvcc}
flags=(-x cu -std=c++17 -O3 -I. -Iinclude -I/usr/include/eigen3 --expt-relaxed-constexpr -DFABENCH_HAS_GPU=1
       -DSPDLOG_FMT_EXTERNAL)
status=0
# Counts lines of the listing where a word starts with the instruction (after a tab, a space or
# a SASS address comment): mma.sync.aligned.m16n8k16 counts mma.sync.aligned.m16n8k16.row.col.f32.
count() {  # listing, instruction
  local re
  re=$(printf '%s' "$2" | sed 's/[.[\*^$]/\\&/g')
  grep -cE "(^|[[:space:]]|/)${re}" "$1" || true
}
declare -A made  # listings compiled in this run (never a stale one from an earlier run)
check() {  # file, count, what
  printf '%-28s %6d  %s\n' "$1" "$2" "$3"
  if [[ $2 -eq 0 ]]; then
    echo "FAIL $1: no $3"
    status=1
  fi
}
found=0
while IFS= read -r f; do
  base=${f#kernels/}
  base=${base%.hip}
  base=${base//\//_}
  # Each "// fa-bench-isa: TARGET: INSTR..." line whose target is an NVIDIA arch (sm_*).
  while IFS= read -r line; do
    target=$(sed -E 's|^// fa-bench-isa: ([^:]+):.*|\1|' <<<"$line")
    instrs=$(sed -E 's|^// fa-bench-isa: [^:]+:(.*)|\1|' <<<"$line")
    arch=${target%.sass}
    [[ $arch == sm_* ]] || continue
    found=1
    if [[ $target == *.sass ]]; then
      command -v cuobjdump >/dev/null || continue
      listing=$out/$base-$arch.sass
      if [[ -z ${made[$listing]:-} ]]; then
        "$nvcc" "${flags[@]}" -arch="$arch" -cubin -o "$out/$base-$arch.cubin" "$f"
        cuobjdump -sass "$out/$base-$arch.cubin" >"$listing"
        made[$listing]=1
      fi
      what="in the $arch SASS"
    else
      listing=$out/$base-$arch.ptx
      if [[ -z ${made[$listing]:-} ]]; then
        "$nvcc" "${flags[@]}" -arch="$arch" -ptx -o "$listing" "$f"
        made[$listing]=1
      fi
      what="in the $arch PTX"
    fi
    for i in $instrs; do check "$f" "$(count "$listing" "$i")" "$i $what"; done
  done < <(grep -E '^// fa-bench-isa: sm_' "$f" || true)
done < <(grep -rlE --include='*.hip' '^// fa-bench-isa: sm_' kernels | sort)
if [[ $found -eq 0 ]]; then
  echo "FAIL: no kernel file under kernels/ names an NVIDIA instruction (// fa-bench-isa: sm_...)"
  status=1
fi
exit $status
