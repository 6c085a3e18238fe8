#!/usr/bin/env bash
# Assembles HIP header trees for scripts/hip-headers-check.sh under ROOT/<tree>/include/hip:
#   rocm-6.4  ROCm 6.4.3 (HIP 6.4.43484): Debian sid's libamdhip64-dev 6.4.3-5 (source rocm-hipamd,
#             built from ROCm's rocm-6.4.3 clr + hip release sources; Debian's header patches only fix
#             comment spelling)
#   rocm-7.x  ROCm 7.2.4 (HIP 7.2.53211): Debian experimental's libamdhip64-dev 7.2.4-1~exp2 (same source)
#   rocm-6.2  ROCm 6.2.2, from ROCm's own repositories (fetched mirrors): ROCm/HIP tag rocm-6.2.2
#             include/hip + ROCm/clr tag rocm-6.2.2 hipamd/include/hip; hip_version.h written here
#             (it is generated at build time) with that release's numbers.
# Why Debian for 6.4 and 7.x: the stored snapshots of ROCm/clr and ROCm/HIP stop at rocm-6.3.3 and
# rocm-6.2.2 tags, and the ROCm/rocm-systems snapshot predates its import of clr and hip.
# The .debs are downloaded (never installed) through apt with a private state under /tmp/hiphdr/apt.
# Then: scripts/hip-headers-check.sh ROOT/rocm-6.4 (and rocm-7.x, rocm-6.2).
# Usage: scripts/hip-header-trees.sh [ROOT]   (default /tmp/hiphdr; needs deb.debian.org, and for
# rocm-6.2 clones of ROCm/HIP and ROCm/clr named by HIP_REPO and CLR_REPO, else that tree is left out)
set -euo pipefail
root=$(realpath -m "${1:-/tmp/hiphdr}")
hip_mirror=${HIP_REPO:-}
clr_mirror=${CLR_REPO:-}

# --- Debian packages of ROCm's release sources --------------------------------------------------
apt=$root/apt
mkdir -p "$apt"/{etc,lists/partial,cache/archives/partial,debs}
: >"$apt/status"
cat >"$apt/etc/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian experimental main
SRC
cat >"$apt/etc/apt.conf" <<CONF
Dir::Etc::SourceList "$apt/etc/sources.list";
Dir::Etc::SourceParts "/nonexistent";
Dir::State::Lists "$apt/lists";
Dir::State::status "$apt/status";
Dir::Cache "$apt/cache";
APT::Architecture "amd64";
Acquire::Languages "none";
CONF
export APT_CONFIG=$apt/etc/apt.conf
apt-get -qq update
deb_tree() {  # tree name, libamdhip64-dev version
  local tree=$1 ver=$2
  (cd "$apt/debs" && apt-get -qq download "libamdhip64-dev=$ver")
  local x; x=$(mktemp -d)
  dpkg-deb -x "$apt/debs/libamdhip64-dev_${ver//:/%3a}_amd64.deb" "$x"
  rm -rf "${root:?}/$tree"
  mkdir -p "$root/$tree/include"
  cp -a "$x/usr/include/hip" "$root/$tree/include/hip"
  rm -rf "$x"
  echo "$tree: libamdhip64-dev $ver, $(grep -E 'define HIP_VERSION_(MAJOR|MINOR|PATCH)' "$root/$tree/include/hip/hip_version.h" | awk '{printf "%s ", $3}')"
}
deb_tree rocm-6.4 6.4.3-5
deb_tree rocm-7.x 7.2.4-1~exp2

# --- ROCm's repositories: HIP (API headers) + clr (amd_detail) at one release tag ----------------
repo_tree() {  # tree name, tag, major, minor, patch, githash (hip_version.h's numbers)
  local tree=$1 tag=$2
  rm -rf "${root:?}/$tree"
  mkdir -p "$root/$tree"
  git -C "$hip_mirror" archive "$tag" include/hip | tar -x -C "$root/$tree"
  git -C "$clr_mirror" archive "$tag" hipamd/include/hip | tar -x -C "$root/$tree" --strip-components=1
  cat >"$root/$tree/include/hip/hip_version.h" <<VER
// Written by fa-bench's scripts/hip-header-trees.sh in place of the header ROCm's build generates ($tag).
#ifndef HIP_VERSION_H
#define HIP_VERSION_H
#define HIP_VERSION_MAJOR $3
#define HIP_VERSION_MINOR $4
#define HIP_VERSION_PATCH $5
#define HIP_VERSION_GITHASH "$6"
#define HIP_VERSION_BUILD_ID 0
#define HIP_VERSION_BUILD_NAME ""
#define HIP_VERSION (HIP_VERSION_MAJOR * 10000000 + HIP_VERSION_MINOR * 100000 + HIP_VERSION_PATCH)
#define __HIP_HAS_GET_PCH 1
#endif
VER
  echo "$tree: ROCm/HIP $tag $(git -C "$hip_mirror" rev-parse "$tag^{commit}"), ROCm/clr $tag $(git -C "$clr_mirror" rev-parse "$tag^{commit}")"
}
# 6.2.41134 and the clr hash: the hip_version.h that ROCm 6.2.2's build generated (as vendored by triton).
if [[ -n $hip_mirror && -n $clr_mirror ]]; then
  repo_tree rocm-6.2 rocm-6.2.2 6 2 41134 65d174c3e
else
  echo "rocm-6.2: left out (set HIP_REPO and CLR_REPO to clones of ROCm/HIP and ROCm/clr)"
fi
