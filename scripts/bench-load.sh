#!/usr/bin/env bash
# Load runner ceiling: `idemcheck load --mode nokey` at max rate against a
# trivial server vs a bare vegeta library attack with the same settings,
# alternated round by round in one run. Prints both and the ratio (target >= 0.95).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
go run ./load/internal/benchrunner -duration "${BENCH_LOAD_DURATION:-2s}" -rounds "${BENCH_LOAD_ROUNDS:-9}" -workers "${BENCH_LOAD_WORKERS:-32}"
