#!/usr/bin/env bash
# Load runner ceiling: `idemcheck load` at max rate vs a bare vegeta library
# attack with the same settings, alternated round by round in one run, in
# nokey mode (trivial server) and hit mode (the reference server
# replaying); then over gRPC, the paced client against a bare grpc-go loop
# (the generated client, same workers, one connection) on the reference
# gRPC service. Prints both and the per-round ratios; records their
# medians and spread against the goals (issue 36: hit rate >= 1.0 and CPU
# per request <= 1.05; nokey 0.95 and 1.2; gRPC rate >= 0.95).
# Env: BENCH_LOAD_DURATION (2s), BENCH_LOAD_ROUNDS (9), BENCH_LOAD_WORKERS (32),
#      BENCH_GRPC_DURATION (2s), BENCH_GRPC_ROUNDS (5).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
. scripts/benchlib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/benchrunner" ./load/internal/benchrunner
workers=${BENCH_LOAD_WORKERS:-32}
"$tmp/benchrunner" -duration "${BENCH_LOAD_DURATION:-2s}" -rounds "${BENCH_LOAD_ROUNDS:-9}" -workers "$workers" |
  tee "$out/bench-load.raw.txt" | grep -v '^RATIO'
"$tmp/benchrunner" -grpc -duration "${BENCH_GRPC_DURATION:-2s}" -rounds "${BENCH_GRPC_ROUNDS:-5}" -workers "$workers" |
  tee -a "$out/bench-load.raw.txt" | grep -v '^RATIO'
while read -r _ mode what vs; do
  case $mode/$what in
  hit/rate) ratio_rounds "load runner hit saturation rate vs bare vegeta" "$vs" ">=" 1.0 ;;
  hit/cpu) ratio_rounds "load runner hit CPU/req vs bare vegeta" "$vs" "<=" 1.05 ;;
  nokey/rate) ratio_rounds "load runner nokey saturation rate vs bare vegeta" "$vs" ">=" 0.95 ;;
  nokey/cpu) ratio_rounds "load runner nokey CPU/req vs bare vegeta" "$vs" "<=" 1.2 ;;
  grpc/rate) ratio_rounds "gRPC load rate vs bare grpc-go loop (saturation)" "$vs" ">=" 0.95 ;;
  grpc/cpu) ratio_rounds "gRPC load CPU/call vs bare grpc-go loop" "$vs" "<=" 1.2 "no goal in the issue; shown" ;;
  esac
done < <(grep '^RATIO' "$out/bench-load.raw.txt")
