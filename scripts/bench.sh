#!/usr/bin/env bash
# make bench: runs every area's benchmark script (scripts/bench-*.sh); each
# prints its figures as ratios against a baseline run side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
status=0
for s in scripts/bench-*.sh; do
  [ -e "$s" ] || continue
  name=$(basename "$s" .sh)
  echo "== $name"
  if ! bash "$s" "$out" 2>&1 | tee "$out/$name.txt"; then
    echo "!! $name failed"; status=1
  fi
done
exit $status
