#!/usr/bin/env bash
# Runs README command N (1: set up, build, main job; 2: set up, build, tests) exactly as the
# README's "Two commands" section writes it, timing it; CI (.ci/run) proves both this way.
# Usage: scripts/readme-command.sh 1|2   (from any directory; runs in the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: scripts/readme-command.sh 1|2}
# The Nth ```sh block after the "## Two commands" heading, up to the next heading.
cmd=$(awk -v n="$n" '
  /^## / { in_sec = ($0 ~ /^## Two commands/) }
  in_sec && /^```sh$/ { blk++; inb = 1; next }
  inb && /^```$/ { inb = 0; next }
  in_sec && inb && blk == n { print }' README.md)
if [[ -z "$cmd" ]]; then
  echo "readme-command: README.md has no command $n under '## Two commands'" >&2
  exit 2
fi
printf '\n== README command %s, as written:\n%s\n' "$n" "$cmd"
start=$SECONDS
bash -euo pipefail -c "$cmd"
printf '\n== README command %s passed in %d s\n' "$n" "$((SECONDS - start))"
