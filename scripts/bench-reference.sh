#!/usr/bin/env bash
# Reference middleware benchmarks: hit path (replay), miss path (claim, run,
# store) and the bare handler, run side by side; prints ns/op, allocs/op and
# the ratios against the bare handler (median of the runs).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
raw="$out/reference-bench.txt"
go test -run '^$' -bench 'BenchmarkBareHandler|BenchmarkMiddlewareHit|BenchmarkMiddlewareMiss' \
  -benchmem -count "${BENCH_COUNT:-5}" ./reference/ | tee "$raw"
awk '
  /^Benchmark/ {
    name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
    n[name]++; ns[name, n[name]] = $3; allocs[name] = $7
  }
  function median(name,   i, j, t, a, c) {
    c = n[name]
    for (i = 1; i <= c; i++) a[i] = ns[name, i]
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
  }
  END {
    if (!n["BareHandler"] || !n["MiddlewareHit"] || !n["MiddlewareMiss"]) { print "missing benchmark results"; exit 1 }
    bare = median("BareHandler"); hit = median("MiddlewareHit"); miss = median("MiddlewareMiss")
    printf "\n%-16s %10s %10s %8s\n", "path", "ns/op", "allocs/op", "x bare"
    printf "%-16s %10.0f %10s %8.2f\n", "bare handler", bare, allocs["BareHandler"], 1
    printf "%-16s %10.0f %10s %8.2f\n", "middleware hit", hit, allocs["MiddlewareHit"], hit / bare
    printf "%-16s %10.0f %10s %8.2f\n", "middleware miss", miss, allocs["MiddlewareMiss"], miss / bare
    printf "hit/bare ratio: %.2f (aim: <= 2.00)\n", hit / bare
  }' "$raw"
