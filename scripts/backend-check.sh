#!/usr/bin/env bash
# Configure-only check of FABENCH_GPU=auto (cmake/gpu_backend.cmake): with nvcc present it picks
# cuda; with nvcc hidden (CUDACXX naming nothing) and ROCm present it picks hip with ROCm's clang;
# a local AMD GPU's arch is found and outranks nvcc without an NVIDIA GPU; with ROCm but g++
# forced it builds CPU-only and says why; with neither, CPU-only and why. Each case greps the
# configure output.
# Usage: scripts/backend-check.sh [OUT_DIR]   (default build/backend-check; seconds, no compiling)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/backend-check}
rm -rf "$out"
status=0
expect() {  # name, pattern, env assignments...
  local name=$1 pattern=$2
  shift 2
  local log="$out/$name.log"
  mkdir -p "$out/$name"
  env "$@" cmake -S . -B "$out/$name" -G Ninja >"$log" 2>&1 || true
  if grep -q -- "$pattern" "$log"; then
    echo "ok   $name: $(grep -m1 'fa-bench GPU backend' "$log" | sed 's/^-- //')"
  else
    echo "FAIL $name: expected '$pattern'"; sed 's/^/     /' "$log" | tail -n 15
    status=1
  fi
}
have_nvcc=0
{ command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; } && have_nvcc=1
have_rocm=0
{ [[ -x /opt/rocm/llvm/bin/clang++ ]] ||
  { [[ -f /usr/lib/x86_64-linux-gnu/cmake/hip/hip-config.cmake ]] && command -v clang++-15 >/dev/null; }; } && have_rocm=1
if ((have_nvcc)); then
  expect nvcc "fa-bench GPU backend: cuda (FABENCH_GPU=auto: .*archs 80;90a)"
fi
if ((have_rocm)); then
  expect rocm "fa-bench GPU backend: hip (FABENCH_GPU=auto: ROCm at" CUDACXX=/nonexistent
  # A local AMD GPU (a stand-in amdgpu-arch on PATH) outranks nvcc without an NVIDIA GPU, and its
  # arch replaces the default list.
  mkdir -p "$out/fakebin"
  printf '#!/bin/sh\necho gfx942\n' >"$out/fakebin/amdgpu-arch"
  chmod +x "$out/fakebin/amdgpu-arch"
  expect amd-gpu "fa-bench GPU backend: hip (FABENCH_GPU=auto: an AMD GPU (gfx942) and ROCm at .*archs gfx942)" \
    PATH="$(realpath "$out/fakebin"):$PATH"
  expect rocm-gxx "fa-bench GPU backend: none (FABENCH_GPU=auto: hip needs ROCm's clang" CUDACXX=/nonexistent CXX=g++
fi
expect nothing "fa-bench GPU backend: none (FABENCH_GPU=auto: neither nvcc" CUDACXX=/nonexistent ROCM_PATH=/nonexistent
exit $status
