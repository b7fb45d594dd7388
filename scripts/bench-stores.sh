#!/usr/bin/env bash
# Store benchmarks (make bench): per store, the store operations of a miss
# (claim+complete) and a replay, and the demo app over loopback HTTP (miss,
# hit), serially; then `idemcheck serve` at a fixed rate on each store (see
# below). Real PostgreSQL and Redis come from internal/testenv. Prints each
# figure beside the memory store's, as a ratio (higher = slower).
# Env: BENCHTIME, STORES_BENCH_RATE (1000), STORES_BENCH_DURATION (5s),
#      STORES_BENCH_ROUNDS (3).
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

# Over HTTP at a fixed rate (issue 13, point 3): `idemcheck serve` on the
# memory store and on PostgreSQL with fsync off and on, alternated round by
# round; p50/p99 of the miss (claim, run, store) and hit paths, and CPU per
# request of serve plus the database server's processes.
. scripts/benchlib.sh
rate=${STORES_BENCH_RATE:-1000}
dur=${STORES_BENCH_DURATION:-5s}
rounds=${STORES_BENCH_ROUNDS:-3}
tmp=$(mktemp -d)
spid=
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  exec 9>&- 2>/dev/null # closing pgserver's stdin stops the database
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/idemcheck" ./cmd/idemcheck
go build -o "$tmp/pgserver" ./scripts/pgserver
mkfifo "$tmp/pgin"
"$tmp/pgserver" <"$tmp/pgin" >"$tmp/pg.out" 2>"$tmp/pg.err" &
exec 9>"$tmp/pgin"
for _ in $(seq 600); do [ -s "$tmp/pg.out" ] && break; sleep 0.1; done
read -r dsn pgpid <"$tmp/pg.out" || { echo "bench-stores: no PostgreSQL: $(cat "$tmp/pg.err")"; exit 1; }
configs=(memory postgres-fsync-off postgres-fsync-on)
db_cpu_us() { if [ "$1" = memory ] || [ "$pgpid" = 0 ]; then echo 0; else group_cpu_us "$pgpid"; fi; }
[ "$pgpid" = 0 ] && echo "bench-stores: the database runs elsewhere; its CPU is not counted"
declare -A cpu p50 p99
for r in $(seq "$rounds"); do
  for cfg in "${configs[@]}"; do
    args=(--store memory)
    if [ "$cfg" != memory ]; then
      "$tmp/pgserver" -dsn "$dsn" -fsync "${cfg##*-}"
      args=(--store postgres --dsn "$dsn")
    fi
    port=$(freeport)
    "$tmp/idemcheck" serve --addr "127.0.0.1:$port" "${args[@]}" >"$tmp/serve.log" 2>&1 &
    spid=$!
    waitport "$port"
    # Not measured: the first second opens connections on every side.
    "$tmp/idemcheck" load --target "http://127.0.0.1:$port" --mode miss --rate "$rate" --duration 1s >/dev/null
    for mode in miss hit; do
      c0=$(( $(cpu_us "$spid") + $(db_cpu_us "$cfg") ))
      "$tmp/idemcheck" load --target "http://127.0.0.1:$port" --mode "$mode" --rate "$rate" --duration "$dur" --json "$tmp/$cfg-$mode-$r.json" >/dev/null
      c1=$(( $(cpu_us "$spid") + $(db_cpu_us "$cfg") ))
      read -r a b c < <(python3 - "$tmp/$cfg-$mode-$r.json" "$((c1 - c0))" "$mode" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["paths"][sys.argv[3]]
print(int(sys.argv[2]) * 1.0 / p["requests"], p["latency_ms"]["p50"], p["latency_ms"]["p99"])
PY
)
      cpu[$cfg-$mode]="${cpu[$cfg-$mode]:-} $a"; p50[$cfg-$mode]="${p50[$cfg-$mode]:-} $b"; p99[$cfg-$mode]="${p99[$cfg-$mode]:-} $c"
    done
    kill "$spid"; wait "$spid" 2>/dev/null || true; spid=
  done
done
printf '\nover HTTP at %s/s for %s per path, %s alternating rounds (medians); cpu = serve + database\n' "$rate" "$dur" "$rounds"
printf '%-20s %-5s %10s %10s %12s %8s %8s\n' store path p50_ms p99_ms cpu_us/req x_p99 x_cpu
for cfg in "${configs[@]}"; do
  for mode in miss hit; do
    printf '%-20s %-5s %10.3f %10.3f %12.1f %8.2f %8.2f\n' "$cfg" "$mode" \
      "$(echo "${p50[$cfg-$mode]}" | median)" "$(echo "${p99[$cfg-$mode]}" | median)" "$(echo "${cpu[$cfg-$mode]}" | median)" \
      "$(per_round "${p99[$cfg-$mode]}" "${p99[memory-$mode]}" | median)" "$(per_round "${cpu[$cfg-$mode]}" "${cpu[memory-$mode]}" | median)"
  done
done
for cfg in postgres-fsync-off postgres-fsync-on; do
  ratio "$cfg miss p99 vs memory (HTTP, ${rate}/s)" "$(per_round "${p99[$cfg-miss]}" "${p99[memory-miss]}" | median)" "<=" 5
  ratio "$cfg miss CPU/req vs memory (serve+db)" "$(per_round "${cpu[$cfg-miss]}" "${cpu[memory-miss]}" | median)" "<=" 2.5
  ratio "$cfg hit CPU/req vs memory (serve+db)" "$(per_round "${cpu[$cfg-hit]}" "${cpu[memory-hit]}" | median)" "<=" 2.5 "no goal in the issue; shown"
done
