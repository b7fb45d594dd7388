#!/usr/bin/env bash
# Downstream double benchmarks (make bench): the calls per second the
# double serves with exact per-token counts (BenchmarkDoubleCalls: loopback
# HTTP, the clients in the same process, 10,000 tracked tokens or keys),
# then the conformance catalog's wall time against one knob-less API
# (internal/knobless: its provider is the double) counted three ways:
# a per-key HTTP oracle (its effects endpoint), the per-key double, and a
# global HTTP counter (the same endpoint without ?key: a serial run).
# The variants are the double's in all three, so only the evidence differs.
# Env: DOUBLE_BENCHTIME (3s), DOUBLE_BENCH_ROUNDS (1), DOUBLE_BENCH_RUN (a --run
#      glob: only those cases; default the whole catalog).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
. scripts/benchlib.sh
raw="$out/bench-double.raw.txt"
go test -count=1 -run '^$' -bench '^BenchmarkDoubleCalls$' -benchtime "${DOUBLE_BENCHTIME:-3s}" \
  ./evidence/double 2>&1 | tee "$raw" | grep -E '^(Benchmark|ok|FAIL)' >&2 || true
grep -q '^ok' "$raw" || { echo "bench-double: benchmark failed, see $raw"; exit 1; }
calls=$(awk '/^BenchmarkDoubleCalls\/token/ { for (i = 1; i <= NF; i++) if ($i == "calls/s") print $(i-1) }' "$raw")
kcalls=$(awk '/^BenchmarkDoubleCalls\/key/ { for (i = 1; i <= NF; i++) if ($i == "calls/s") print $(i-1) }' "$raw")
printf 'double calls/s with exact counts: %s (marker tokens), %s (forwarded keys)\n' "$calls" "$kcalls"
ratio "double: calls/s with exact counts (x1000)" "$(awk -v c="$calls" 'BEGIN { printf "%.1f", c / 1000 }')" ">=" 5 "thousands of calls per second, marker tokens"

tmp=$(mktemp -d)
spid=
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/idemcheck" ./cmd/idemcheck
go build -o "$tmp/knobless" ./internal/knobless/cmd/knobless
# catalog ORACLE [SHOP FLAGS...]: the catalog's wall time in seconds, one
# run against a fresh shop and double.
catalog() {
  local oracle=$1; shift
  local port dport t0 t1 code=0
  port=$(freeport) dport=$(freeport)
  "$tmp/knobless" --addr "127.0.0.1:$port" --provider "http://127.0.0.1:$dport" "$@" >"$tmp/shop.log" 2>&1 &
  spid=$!
  waitport "$port"
  "$tmp/knobless" --addr "127.0.0.1:$port" --provider "http://127.0.0.1:$dport" --print-config "$oracle" >"$tmp/cfg.yaml"
  t0=$(date +%s.%N)
  "$tmp/idemcheck" run --config "$tmp/cfg.yaml" ${DOUBLE_BENCH_RUN:+--run "$DOUBLE_BENCH_RUN"} >"$tmp/run.log" 2>&1 || code=$?
  t1=$(date +%s.%N)
  kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null || true; spid=
  if [ "$code" != 0 ]; then echo "catalog with oracle $oracle: exit $code" >&2; tail -5 "$tmp/run.log" >&2; fi
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
rounds=${DOUBLE_BENCH_ROUNDS:-1}
declare -A wall
for r in $(seq "$rounds"); do
  wall[http]="${wall[http]:-} $(catalog '{url: "/v1/effects?key={key}", pointer: /executions}' --effects)"
  wall[double]="${wall[double]:-} $(catalog '{downstream: payments}')"
  wall[global]="${wall[global]:-} $(catalog '{url: /v1/effects, pointer: /executions}' --effects)"
done
h=$(echo "${wall[http]}" | median) d=$(echo "${wall[double]}" | median) g=$(echo "${wall[global]}" | median)
printf '\ncatalog wall time, %s round(s), medians: per-key HTTP oracle %ss, per-key double %ss, global HTTP counter (serial) %ss\n' "$rounds" "$h" "$d" "$g"
dr=$(awk -v d="$d" -v h="$h" 'BEGIN { printf "%.2f", d / h }')
gr=$(awk -v g="$g" -v h="$h" 'BEGIN { printf "%.2f", g / h }')
printf 'per-key double / per-key HTTP oracle: %s (goal <= 1.5); global counter / per-key HTTP oracle: %s\n' "$dr" "$gr"
ratio "double: catalog wall, per-key double / HTTP oracle" "$dr" "<=" 1.5 "global counter (serial): ${gr}x"
