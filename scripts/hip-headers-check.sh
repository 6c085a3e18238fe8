#!/usr/bin/env bash
# HIP headers check: compiles every HIP source of the hip backend (the kernels/ .hip files that
# CMakeLists.txt's gpu_sources lists) with clang-19 against the HIP headers in DIR/include/hip: the
# host pass and the device passes for gfx942 (CDNA3, wave64) and gfx1100 (RDNA3, wave32). Compile
# only: no device libraries (-nogpulib), no link. Prints a table (file, pass, ok/FAIL) and the first
# errors of each failure, and exits 1 on any. DIR is a ROCm root (/usr for Debian's ROCm 5.2).
# Usage: scripts/hip-headers-check.sh DIR [OUT_DIR]   (default OUT_DIR build/hip-headers; JOBS=N)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/hip-headers-check.sh DIR [OUT_DIR]}
dir=$(realpath "$dir")
out=${2:-build/hip-headers}
cxx=${CLANG19:-clang++-19}
jobs=${JOBS:-2}
ver_h=$dir/include/hip/hip_version.h
[[ -f $dir/include/hip/hip_runtime.h && -f $ver_h ]] || {
  echo "hip-headers-check: $dir/include/hip has no hip_runtime.h or hip_version.h" >&2
  exit 2
}
field() { sed -nE "s/^#define HIP_VERSION_$1 +([0-9]+).*/\1/p" "$ver_h"; }
version="$(field MAJOR).$(field MINOR).$(field PATCH)"

# What CMake's gpu_sources compiles: kernels/fa_<path>.hip, kernels/device/*.hip and
# kernels/runtime/*.hip, i.e. every .hip file under kernels/ (a tarball without .git: find).
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
# The hip build's flags (CMakeLists.txt, hip::host), at -O1: codegen runs, so a builtin the arch
# lacks fails here as in the real build, while the ISA check (scripts/isa-check.sh) is the one at -O3.
flags=(-x hip -std=c++17 -O1 -nogpulib "${hip[@]}" -D__HIP_PLATFORM_AMD__=1 -DFABENCH_HAS_GPU=1
       -DSPDLOG_FMT_EXTERNAL -DFMT_HEADER_ONLY=1 -I. -Iinclude -isystem /usr/include/eigen3
       -Wno-unused-result -Wno-pass-failed)
cache=()  # ccache where installed (scripts/setup.sh): a rerun on unchanged sources and headers is read back
command -v ccache >/dev/null && cache=(ccache)
mkdir -p "$out"
rm -f "$out"/*.status

# One compile: file, pass (host | an AMD arch). Writes OUT/<name>-<pass>.{o|s,log,status}.
compile() {
  local f=$1 pass=$2 base
  base=${f#kernels/}
  base=${base%.hip}
  base=${base//\//_}-$pass
  local mode=(--offload-arch=gfx942 --offload-arch=gfx1100 --cuda-host-only -c -o "$out/$base.o")
  [[ $pass == host ]] || mode=(--offload-arch="$pass" --cuda-device-only -S -o "$out/$base.s")
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
  for pass in host gfx942 gfx1100; do
    compile "$f" "$pass" &
    if (( ++running >= jobs )); then
      wait -n
      running=$((running - 1))
    fi
  done
done
wait

echo "HIP $version headers from $dir/include/hip ($cxx)"
printf '%-28s %-8s %s\n' file pass result
status=0
for f in "${files[@]}"; do
  base=${f#kernels/}
  base=${base%.hip}
  base=${base//\//_}
  for pass in host gfx942 gfx1100; do
    r=$(cat "$out/$base-$pass.status" 2>/dev/null || echo FAIL)
    printf '%-28s %-8s %s\n' "$base" "$pass" "$r"
    [[ $r == ok ]] || status=1
  done
done
for f in "${files[@]}"; do
  base=${f#kernels/}
  base=${base%.hip}
  base=${base//\//_}
  for pass in host gfx942 gfx1100; do
    if [[ $(cat "$out/$base-$pass.status" 2>/dev/null) != ok ]]; then
      echo "== FAIL $f ($pass):"
      grep -m 8 -A 4 -E 'error|headers from outside' "$out/$base-$pass.log" | head -40
    fi
  done
done
exit $status
