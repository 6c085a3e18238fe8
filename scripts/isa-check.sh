#!/usr/bin/env bash
# ISA and HIP headers check, one compile of each HIP source: every .hip file under kernels/ (what
# CMakeLists.txt's gpu_sources compiles) with clang-19 against the HIP headers of a ROCm root
# (--headers DIR; default /usr, Debian's ROCm 5.2): the device passes for gfx942 (MI300, CDNA3, wave64),
# gfx1100 (RDNA3, wave32) and any AMD arch a file names, to assembly at -O3, and the host pass
# (-O1, compile only). No device libraries (-nogpulib), no link.
# It fails if a pass does not compile, a HIP header comes from outside DIR, a file that defines
# kernels emits none for an arch, or a file lacks an instruction it names for an AMD arch, in lines
#   // fa-bench-isa: gfx942: v_mfma
# (a word of the assembly that starts with it). The list lives in the kernel file; this script
# names no file. NVIDIA lines (sm_*) are scripts/ptx-check.sh's. It prints, per file and arch, the
# kernels emitted, their VGPR count, scratch (spill) bytes and matrix instructions (v_mfma, v_wmma).
# Without device libraries, threadIdx, __syncthreads and log2f stay out-of-line calls whose ABI
# inflates VGPRs and scratch (mfma D=256: 272 B here, 0 with the ROCm bitcode linked).
# scripts/hip-headers-check.sh DIR is this with --headers DIR (the ROCm 6.4 / 7.x header trees).
# Usage: scripts/isa-check.sh [--headers DIR] [OUT_DIR]   (default OUT_DIR build/isa; JOBS=N, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=/usr
if [[ ${1:-} == --headers ]]; then
  dir=${2:?usage: scripts/isa-check.sh [--headers DIR] [OUT_DIR]}
  shift 2
fi
dir=$(realpath "$dir")
out=${1:-build/isa}
cxx=${CLANG19:-clang++-19}
jobs=${JOBS:-2}
ver_h=$dir/include/hip/hip_version.h
[[ -f $dir/include/hip/hip_runtime.h && -f $ver_h ]] || {
  echo "isa-check: $dir/include/hip has no hip_runtime.h or hip_version.h (--headers takes a ROCm root)" >&2
  exit 2
}
field() { sed -nE "s/^#define HIP_VERSION_$1 +([0-9]+).*/\1/p" "$ver_h"; }
version="$(field MAJOR).$(field MINOR).$(field PATCH)"

# Every .hip file under kernels/ (a tarball without .git: find).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files 'kernels/*.hip' | sort)
else
  mapfile -t files < <(find kernels -name '*.hip' | sort)
fi
# clang finds HIP's version in DIR/share/hip/version, which a header tree lacks; without it, it
# takes HIP for older than 3.6 and leaves out its runtime wrapper, so hip_version.h says it here.
# DIR/include goes in front of /usr/include: clang itself adds it after the system directories
# (-idirafter), where Debian's /usr/include/hip (5.2) would shadow it. /usr/include itself must not
# be repeated (libstdc++'s #include_next <math.h> would then miss it).
hip=(--rocm-path="$dir" --hip-version="$version")
[[ $dir == /usr ]] || hip+=(-isystem "$dir/include")
# The hip build's flags (CMakeLists.txt, hip::host).
flags=(-x hip -std=c++17 -nogpulib "${hip[@]}" -D__HIP_PLATFORM_AMD__=1 -DFABENCH_HAS_GPU=1
       -DSPDLOG_FMT_EXTERNAL -DSPDLOG_COMPILED_LIB -DFMT_HEADER_ONLY=1 -I. -Iinclude -isystem /usr/include/eigen3
       -Wno-unused-result -Wno-pass-failed)
cache=()  # ccache where installed (scripts/setup.sh): a rerun on unchanged sources and headers is read back
command -v ccache >/dev/null && cache=(ccache)
mkdir -p "$out"
rm -f "$out"/*.status

name_of() {  # kernels/amd/fa_mfma.hip -> amd_fa_mfma
  local b=${1#kernels/}
  b=${b%.hip}
  echo "${b//\//_}"
}
# The passes of a file: host, the two archs always covered, and any AMD arch a line of it names.
passes_of() {
  (printf 'host\ngfx942\ngfx1100\n'
   grep -oE '^// fa-bench-isa: gfx[0-9a-z]+:' "$1" | sed -E 's|^// fa-bench-isa: (gfx[0-9a-z]+):|\1|' || true) |
    awk '!seen[$0]++'
}
# One compile: file, pass. Writes OUT/<name>-<pass>.{o|s,d,log,status}.
compile() {
  local f=$1 pass=$2 base
  base=$(name_of "$f")-$pass
  local mode=(-O1 --offload-arch=gfx942 --offload-arch=gfx1100 --cuda-host-only -c -o "$out/$base.o")
  [[ $pass == host ]] || mode=(-O3 --offload-arch="$pass" --cuda-device-only -S -o "$out/$base.s")
  if "${cache[@]}" "$cxx" "${flags[@]}" "${mode[@]}" -MD -MF "$out/$base.d" "$f" >"$out/$base.log" 2>&1; then
    # Every HIP header must come from DIR: one from another tree would test the wrong headers.
    if grep -oE '[^ ]*/include/hip/[^ ]*' "$out/$base.d" | grep -v "^$dir/include/hip/" >"$out/$base.foreign"; then
      { echo "headers from outside $dir:"; head -3 "$out/$base.foreign"; } >>"$out/$base.log"
      echo FAIL >"$out/$base.status"
    else
      echo ok >"$out/$base.status"
    fi
  else
    echo FAIL >"$out/$base.status"
  fi
}
running=0
for f in "${files[@]}"; do
  for pass in $(passes_of "$f"); do
    compile "$f" "$pass" &
    if (( ++running >= jobs )); then
      wait -n || true
      running=$((running - 1))
    fi
  done
done
wait

echo "HIP $version headers from $dir/include/hip ($cxx)"
printf '%-28s %-8s %-6s %7s %9s %9s %6s %6s\n' file pass result kernels max_vgpr scratch_B v_mfma v_wmma
status=0
failures=()
for f in "${files[@]}"; do
  base=$(name_of "$f")
  for pass in $(passes_of "$f"); do
    r=$(cat "$out/$base-$pass.status" 2>/dev/null || echo FAIL)
    if [[ $r != ok ]]; then
      printf '%-28s %-8s %s\n' "$base" "$pass" FAIL
      failures+=("$f $pass")
      status=1
      continue
    fi
    if [[ $pass == host ]]; then
      printf '%-28s %-8s %s\n' "$base" host ok
      continue
    fi
    s=$out/$base-$pass.s
    kernels=$(grep -c '^\s*\.amdhsa_kernel ' "$s" || true)
    vgpr=$(grep -oP '\.amdhsa_next_free_vgpr \K[0-9]+' "$s" | sort -n | tail -1 || true)
    scratch=$(grep -oP '\.amdhsa_private_segment_fixed_size \K[0-9]+' "$s" | sort -n | tail -1 || true)
    n_mfma=$(grep -c '^\s*v_mfma' "$s" || true)
    n_wmma=$(grep -c '^\s*v_wmma' "$s" || true)
    printf '%-28s %-8s %-6s %7s %9s %9s %6s %6s\n' "$base" "$pass" ok "$kernels" "${vgpr:--}" "${scratch:--}" "$n_mfma" "$n_wmma"
    for need in $(grep -E "^// fa-bench-isa: $pass:" "$f" | sed -E 's|^// fa-bench-isa: [^:]+:||' || true); do
      if ! grep -qE "^\s*${need//./\\.}" "$s"; then
        echo "FAIL $f ($pass): no $need instruction in the assembly"
        status=1
      fi
    done
    if grep -q '__global__' "$f" && [[ "$kernels" -eq 0 ]]; then
      echo "FAIL $f ($pass): defines kernels but none was emitted"
      status=1
    fi
  done
done
for fp in "${failures[@]}"; do
  read -r f pass <<<"$fp"
  echo "== FAIL $f ($pass):"
  grep -m 8 -A 4 -E 'error|headers from outside' "$out/$(name_of "$f")-$pass.log" | head -40
done
exit $status
