#!/usr/bin/env bash
# make bench: runs every area's benchmark script (scripts/bench-*.sh); each
# prints its figures as ratios against a baseline run side by side, and
# records the ratios with goals (issues 13, 36; scripts/benchlib.sh ratio);
# the last table lists them all with their goals.
#
# Issue 36 point 6, the new faces' costs: the client catalog's wall time
# for one client (bench-faces-client.sh) and the GraphQL and JSON-RPC/MCP
# carriers' CPU per request against plain HTTP (bench-carriers.sh); a new
# script records its ratios with benchlib.sh's ratio_rounds and gets smoke
# settings in internal/benchsmoke.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
rm -f "$out/ratios.tsv"
status=0
for s in scripts/bench-*.sh; do
  [ -e "$s" ] || continue
  name=$(basename "$s" .sh)
  echo "== $name"
  if ! bash "$s" "$out" 2>&1 | tee "$out/$name.txt"; then
    echo "!! $name failed"; status=1
  fi
done
echo "== ratios with goals (this run; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg))"
if [ -s "$out/ratios.tsv" ]; then
  awk -F'\t' '{ printf "%-52s %10.3f  goal %-7s %-7s %s\n", $1, $2, $3, $4, $5 }' "$out/ratios.tsv" | tee "$out/ratios.txt"
else
  echo "no ratios recorded"
fi
exit $status
