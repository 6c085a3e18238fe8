#!/usr/bin/env bash
# HIP headers check against another ROCm's HIP headers: scripts/isa-check.sh --headers DIR, i.e.
# every HIP source of the hip backend (host pass, and device passes for gfx942, gfx1100 and the
# archs the files name) compiled with clang-19 against DIR/include/hip, every header checked to come
# from there, and the ISA checks applied to the result. DIR is a ROCm root (/usr for Debian's 5.2,
# which CI's ISA step covers; docs/amd.md says how the 6.4 and 7.x trees were assembled).
# Usage: scripts/hip-headers-check.sh DIR [OUT_DIR]   (default OUT_DIR build/hip-headers; JOBS=N)
set -euo pipefail
dir=${1:?usage: scripts/hip-headers-check.sh DIR [OUT_DIR]}
exec "$(dirname "$0")/isa-check.sh" --headers "$dir" "${2:-build/hip-headers}"
