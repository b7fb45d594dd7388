#!/usr/bin/env bash
# bench-shards: N load processes with --shard I/N on loopback, each at 1/N
# of the rate, their results files merged by `idemcheck load report`,
# against one process at the whole rate, on one `idemcheck serve`: what a
# Kubernetes Indexed Job of N pods delivers (docs/load.md). Mix mode, so
# hits and misses both run. Stated bounds (per round, median over rounds):
# merged rate within 10% of the single process's, hit and miss p50 and
# p99 within 1.5x of its (or 0.5 ms: loopback latencies are fractions of a
# millisecond, where one scheduler tick is a large share), and the same
# violations (none, on the reference).
# Env: SHARDS_N (3), SHARDS_RATE (600: the total), SHARDS_DURATION (3s),
#      SHARDS_ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
. scripts/benchlib.sh
n=${SHARDS_N:-3}
rate=${SHARDS_RATE:-600}
dur=${SHARDS_DURATION:-3s}
rounds=${SHARDS_ROUNDS:-3}
tmp=$(mktemp -d)
spid=
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/idemcheck" ./cmd/idemcheck
port=$(freeport)
"$tmp/idemcheck" serve --addr "127.0.0.1:$port" >"$tmp/serve.log" 2>&1 &
spid=$!
waitport "$port"
common=(--target "http://127.0.0.1:$port" --mode mix --duration "$dur")
declare -A rr p50h p99h p50m p99m viol
for r in $(seq "$rounds"); do
  "$tmp/idemcheck" load "${common[@]}" --rate "$rate" --json "$tmp/one-$r.json" >/dev/null
  pids=()
  for i in $(seq 0 $((n - 1))); do
    "$tmp/idemcheck" load "${common[@]}" --rate $((rate / n)) --shard "$i/$n" --results "$tmp/shard-$r-$i.bin" >/dev/null &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  "$tmp/idemcheck" load report "$tmp"/shard-"$r"-*.bin --json "$tmp/merged-$r.json" >/dev/null
  read -r a b c d e f < <(python3 - "$tmp/one-$r.json" "$tmp/merged-$r.json" <<'PY'
import json, sys
one, mer = (json.load(open(f)) for f in sys.argv[1:3])
def rate(r): return sum(p["rate"] for p in r["paths"].values())
def lat(r, path, q):
    return r["paths"][path]["latency_ms"][q]
def bound(m, o):  # merged vs one: a ratio, where 0.5 ms of slack counts as parity
    return 1.0 if m <= o + 0.5 else m / o
print(rate(mer) / rate(one), bound(lat(mer, "hit", "p50"), lat(one, "hit", "p50")), bound(lat(mer, "hit", "p99"), lat(one, "hit", "p99")),
      bound(lat(mer, "miss", "p50"), lat(one, "miss", "p50")), bound(lat(mer, "miss", "p99"), lat(one, "miss", "p99")),
      mer.get("violations", 0) - one.get("violations", 0))
PY
)
  rr[x]="${rr[x]:-} $a"; p50h[x]="${p50h[x]:-} $b"; p99h[x]="${p99h[x]:-} $c"; p50m[x]="${p50m[x]:-} $d"; p99m[x]="${p99m[x]:-} $e"; viol[x]="${viol[x]:-} $f"
  echo "round $r: merged/one rate $a; hit p50 $b p99 $c; miss p50 $d p99 $e (merged/one, 0.5 ms slack); violations merged-one $f"
done
# The rate bound is two-sided: record the distance from parity.
dist=$(echo "${rr[x]}" | tr ' ' '\n' | grep -v '^$' | awk '{ d = $1 - 1; if (d < 0) d = -d; printf "%s ", d }')
ratio_rounds "shards ($n x 1/$n rate) merged rate, |merged/one - 1|" "$dist" "<=" 0.1 "rates/round:${rr[x]}"
ratio_rounds "shards merged hit p50 vs one process" "${p50h[x]}" "<=" 1.5
ratio_rounds "shards merged hit p99 vs one process" "${p99h[x]}" "<=" 1.5
ratio_rounds "shards merged miss p50 vs one process" "${p50m[x]}" "<=" 1.5
ratio_rounds "shards merged miss p99 vs one process" "${p99m[x]}" "<=" 1.5
ratio_rounds "shards merged violations minus one process's" "${viol[x]}" "<=" 0
