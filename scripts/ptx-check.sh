#!/usr/bin/env bash
# Instruction check for the NVIDIA paths: every kernel file under kernels/ that names what its
# code must hold, in lines of the form
#   // fa-bench-isa: sm_90a: mma.sync.aligned.m16n8k16 wgmma.mma_async     (PTX instructions)
#   // fa-bench-isa: sm_90a.sass: HMMA HGMMA                              (SASS, with cuobjdump)
#   // fa-bench-isa-each: sm_90a: mma_ws_fwd: wgmma.mma_async             (in every PTX kernel
#                                                   whose name holds mma_ws_fwd, each instance)
# is compiled for that arch, and the check fails if an instruction is missing. The per-kernel form
# catches an instance compiled to nothing while the others keep the file's count up (an edit to
# mma_ws_fwd's wave loop once left its single-item instances with their barrier setup alone). The
# list lives in the kernel file; this script names no file. The PTX lines are always checked; the .sass lines
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
escaped() { printf '%s' "$1" | sed 's/[.[\*^$]/\\&/g'; }  # an instruction as an extended regex
count() {  # listing, instruction
  grep -cE "(^|[[:space:]]|/)$(escaped "$2")" "$1" || true
}
declare -A made  # listings compiled in this run (never a stale one from an earlier run)
check() {  # file, count, what
  printf '%-28s %6d  %s\n' "$1" "$2" "$3"
  if [[ $2 -eq 0 ]]; then
    echo "FAIL $1: no $3"
    status=1
  fi
}
# The PTX kernels (.entry) whose name holds `pattern`, and how many of them lack the instruction:
# prints "kernels lacking".
each() {  # listing, pattern, instruction
  awk -v pat="$2" -v re="(^|[[:space:]])$(escaped "$3")" '
    /^[.a-z ]*\.(entry|func)[[:space:]]/ {
      cur = ($0 ~ /\.entry/ && index($0, pat)) ? $0 : ""
      if (cur != "") { n++; has[cur] = 0 }
      next
    }
    cur != "" && $0 ~ re { has[cur] = 1 }
    END { lack = 0; for (e in has) if (!has[e]) lack++; print n + 0, lack }' "$1"
}
# each() on a listing of two kernels, one without the instruction: it must count 2 and 1.
printf '.visible .entry a_k(\n\twgmma.mma_async.sync x;\n}\n.entry b_k(\n\tret;\n}\n.func c_k(\n\twgmma.mma_async.sync y;\n}\n' \
  >"$out/each-selftest.ptx"
if [[ $(each "$out/each-selftest.ptx" _k wgmma.mma_async) != "2 1" ]]; then
  echo "FAIL: the per-kernel check miscounts its self-test listing ($out/each-selftest.ptx)"
  status=1
fi
ptx_of() {  # kernel file, arch, listing base: sets `listing`, compiled once a run (no subshell: made[] stays)
  listing=$out/$3-$2.ptx
  if [[ -z ${made[$listing]:-} ]]; then
    "$nvcc" "${flags[@]}" -arch="$2" -ptx -o "$listing" "$1"
    made[$listing]=1
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
      ptx_of "$f" "$arch" "$base"
      what="in the $arch PTX"
    fi
    for i in $instrs; do check "$f" "$(count "$listing" "$i")" "$i $what"; done
  done < <(grep -E '^// fa-bench-isa: sm_' "$f" || true)
  # Each "// fa-bench-isa-each: ARCH: KERNEL: INSTR..." line: every instance of the kernel.
  while IFS= read -r line; do
    arch=$(sed -E 's|^// fa-bench-isa-each: ([^:]+):.*|\1|' <<<"$line")
    kernel=$(sed -E 's|^// fa-bench-isa-each: [^:]+: *([^:]+):.*|\1|' <<<"$line")
    instrs=$(sed -E 's|^// fa-bench-isa-each: [^:]+:[^:]+:(.*)|\1|' <<<"$line")
    [[ $arch == sm_* ]] || continue
    ptx_of "$f" "$arch" "$base"
    for i in $instrs; do
      read -r n lack < <(each "$listing" "$kernel" "$i")
      printf '%-28s %6d  %s kernels, %d without %s in the %s PTX\n' "$f" "$n" "$kernel" "$lack" "$i" "$arch"
      if [[ $n -eq 0 || $lack -ne 0 ]]; then
        echo "FAIL $f: $((n == 0 ? 1 : lack)) $kernel kernel(s) without $i (of $n) in the $arch PTX"
        status=1
      fi
    done
  done < <(grep -E '^// fa-bench-isa-each: sm_' "$f" || true)
done < <(grep -rlE --include='*.hip' '^// fa-bench-isa: sm_' kernels | sort)
if [[ $found -eq 0 ]]; then
  echo "FAIL: no kernel file under kernels/ names an NVIDIA instruction (// fa-bench-isa: sm_...)"
  status=1
fi
exit $status
