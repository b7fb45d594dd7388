#!/usr/bin/env bash
# Store benchmarks (make bench): per store, the store operations of a miss
# (claim+complete) and a replay, and the demo app over loopback HTTP (miss,
# hit). Real PostgreSQL and Redis come from internal/testenv. Prints each
# figure beside the memory store's, as a ratio (higher = slower).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
raw="$out/bench-stores.raw.txt"
go test -count=1 -run '^$' -bench '^Benchmark(Store|HTTP)$' -benchtime "${BENCHTIME:-2000x}" \
  ./reference/storetest 2>/dev/null | tee "$raw" | grep -E '^(Benchmark|ok|FAIL)' >&2 || true
grep -q '^ok' "$raw" || { echo "bench-stores: benchmarks failed, see $raw"; exit 1; }
awk '
  /^Benchmark/ {
    split($1, p, "/"); sub(/-[0-9]+$/, "", p[3])
    kind = p[1]; sub(/^Benchmark/, "", kind)
    row = kind "/" p[3]; ns[row, p[2]] = $3
    if (!(row in seen)) { seen[row] = 1; rows[++n] = row }
  }
  END {
    printf "%-22s %12s %12s %8s %12s %8s\n", "operation", "memory", "postgres", "x mem", "redis", "x mem"
    for (i = 1; i <= n; i++) {
      r = rows[i]; m = ns[r, "memory"]
      printf "%-22s %10.1fus %10.1fus %7.0fx %10.1fus %7.0fx\n", r, m / 1000,
        ns[r, "postgres"] / 1000, (m > 0 ? ns[r, "postgres"] / m : 0),
        ns[r, "redis"] / 1000, (m > 0 ? ns[r, "redis"] / m : 0)
    }
  }' "$raw"
