#!/usr/bin/env bash
# Installs fa-bench's build and test dependencies on Debian 12 / Ubuntu 22.04+ (apt).
# Usage: scripts/setup.sh [--amd] [--slurm]   (apt-get as root, or through sudo when not root)
#   clang-19 + libclang-rt-19-dev: libFuzzer for scripts/fuzz.sh.
#   --amd: also Debian's hipcc/libamdhip64-dev + clang-15 (+ its OpenMP) / clang-19 for the AMD
#          build and the ISA check; clang-15 also builds scripts/test.sh's ASan + UBSan step.
#   --slurm: also Slurm 22.05 (slurmctld, slurmd, slurmdbd, clients), munge and MariaDB's server
#          for scripts/slurm-local.sh's one-node cluster (scripts/slurm-test.sh calls this).
# CUDA is not a Debian package here: install NVIDIA's toolkit for the cuda build.
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config git
      libcli11-dev libeigen3-dev libspdlog-dev libfmt-dev libyaml-cpp-dev libfccp-dev
      nlohmann-json3-dev libgtest-dev clang-19 libclang-rt-19-dev
      python3-matplotlib  # scripts/plot.py and the .npy cross-checks in the tests (brings numpy)
      ccache)  # compiler-output cache (cmake/ccache.cmake): rebuilds in a fresh clone compile what changed
for opt in "$@"; do
  case $opt in
    --amd) pkgs+=(hipcc libamdhip64-dev clang-15 libomp-15-dev) ;;
    # slurm-client: sbatch, squeue, sacct; MariaDB without its service scripts: slurm-local.sh
    # runs its own mariadbd for slurmdbd.
    --slurm) pkgs+=(slurmctld slurmd slurmdbd slurm-client munge mariadb-server-core mariadb-client-core) ;;
    *) echo "usage: scripts/setup.sh [--amd] [--slurm]" >&2; exit 2 ;;
  esac
done
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "setup: dependencies present (${#pkgs[@]} packages)"
