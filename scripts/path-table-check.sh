#!/usr/bin/env bash
# The README's path table is `fa-bench list --markdown` of a GPU build (the kernels' rows exist only
# there): this compares the block between the README's markers with that output and prints the
# difference; --write replaces the block instead. scripts/test.sh runs it on the cuda build.
# Usage: scripts/path-table-check.sh FA_BENCH_BINARY [--write]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: scripts/path-table-check.sh FA_BENCH_BINARY [--write]}
begin='<!-- BEGIN fa-bench list --markdown -->'
end='<!-- END fa-bench list --markdown -->'
if ! grep -qxF -- "$begin" README.md || ! grep -qxF -- "$end" README.md; then
  echo "path-table-check: README.md lacks the lines '$begin' and '$end'" >&2
  exit 2
fi
want=$(mktemp)
have=$(mktemp)
trap 'rm -f "$want" "$have"' EXIT
"$bin" list --markdown >"$want"
awk -v b="$begin" -v e="$end" '$0 == e { inb = 0 } inb { print } $0 == b { inb = 1 }' README.md >"$have"
if [[ ${2:-} == --write ]]; then
  awk -v b="$begin" -v e="$end" -v f="$want" '
    $0 == b { print; while ((getline l < f) > 0) print l; skip = 1; next }
    $0 == e { skip = 0 }
    !skip { print }' README.md >README.md.new
  mv README.md.new README.md
  echo "path-table-check: README.md's path table rewritten from $bin list --markdown"
  exit 0
fi
if ! diff -u --label "README.md (path table)" --label "$bin list --markdown" "$have" "$want"; then
  echo "path-table-check: README.md's path table differs from list --markdown: rerun with --write" >&2
  exit 1
fi
echo "path-table-check: README.md's path table is list --markdown's output ($(wc -l <"$want") lines)"
