#!/usr/bin/env bash
# Load runner ceiling: `idemcheck load` at max rate vs a bare vegeta library
# attack with the same settings, alternated round by round in one run, in
# nokey mode (trivial server) and hit mode (the reference server replaying).
# Prints both and the ratios (targets: rate >= 0.95, CPU per request <= 1.2).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
. scripts/benchlib.sh
go run ./load/internal/benchrunner -duration "${BENCH_LOAD_DURATION:-2s}" -rounds "${BENCH_LOAD_ROUNDS:-9}" -workers "${BENCH_LOAD_WORKERS:-32}" |
  tee "$out/bench-load.raw.txt" | grep -v '^RATIO'
while read -r _ mode what v; do
  case $what in
  rate) ratio "load runner $mode saturation rate vs bare vegeta" "$v" ">=" 0.95 ;;
  cpu) ratio "load runner $mode CPU/req vs bare vegeta" "$v" "<=" 1.2 ;;
  esac
done < <(grep '^RATIO' "$out/bench-load.raw.txt")
