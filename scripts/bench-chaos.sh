#!/usr/bin/env bash
# bench-chaos: the chaos proxy's added latency (p50, p99) and its throughput,
# against going direct and against toxiproxy (a TCP byte pump), measured side
# by side in one run. Toxiproxy is installed from the Go module proxy into a
# temporary GOBIN for the measurement only. Usage: bench-chaos.sh [OUTDIR]
# Env: CHAOS_BENCH_RATE (2000), CHAOS_BENCH_DURATION (5s), CHAOS_BENCH_ROUNDS (2),
#      TOXIPROXY_VERSION (v2.5.0; set to "none" to skip toxiproxy),
#      CHAOS_BENCH_BASELINE (an older idemcheck binary: its proxy is measured
#      too, as "baseline-proxy", for before/after ratios in one run).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
rate=${CHAOS_BENCH_RATE:-2000}
dur=${CHAOS_BENCH_DURATION:-5s}
rounds=${CHAOS_BENCH_ROUNDS:-2}
toxi_version=${TOXIPROXY_VERSION:-v2.5.0}

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }
waitport() {
  for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "port $1 did not open" >&2; return 1
}

go build -o "$tmp/idemcheck" ./cmd/idemcheck
up=$(freeport); via=$(freeport)
"$tmp/idemcheck" serve --addr "127.0.0.1:$up" >"$tmp/serve.log" 2>&1 & pids+=($!)
"$tmp/idemcheck" proxy --listen "127.0.0.1:$via" --upstream "http://127.0.0.1:$up" >"$tmp/proxy.log" 2>&1 & pids+=($!)
waitport "$up"; waitport "$via"
paths=("direct=$up" "idemcheck-proxy=$via")
if [ -n "${CHAOS_BENCH_BASELINE:-}" ]; then
  base=$(freeport)
  "$CHAOS_BENCH_BASELINE" proxy --listen "127.0.0.1:$base" --upstream "http://127.0.0.1:$up" >"$tmp/baseline.log" 2>&1 & pids+=($!)
  waitport "$base"
  paths+=("baseline-proxy=$base")
fi

if [ "$toxi_version" != none ]; then
  echo "installing toxiproxy $toxi_version into a temporary GOBIN (not kept)"
  if GOBIN="$tmp/bin" GOFLAGS=-mod=mod go install "github.com/Shopify/toxiproxy/v2/cmd/server@$toxi_version" >"$tmp/toxi-install.log" 2>&1; then
    api=$(freeport); tox=$(freeport)
    "$tmp/bin/server" -host 127.0.0.1 -port "$api" >"$tmp/toxi.log" 2>&1 & pids+=($!)
    waitport "$api"
    curl -fsS -X POST "http://127.0.0.1:$api/proxies" \
      -d "{\"name\":\"bench\",\"listen\":\"127.0.0.1:$tox\",\"upstream\":\"127.0.0.1:$up\",\"enabled\":true}" >/dev/null
    waitport "$tox"
    paths+=("toxiproxy=$tox")
  else
    echo "toxiproxy install failed (see below); measuring without it"; tail -3 "$tmp/toxi-install.log"
  fi
fi

# One measurement: replays (hit mode) at a fixed rate, then max throughput.
measure() { # name port round
  local j="$tmp/$1-$3.json" m="$tmp/$1-$3-max.json"
  "$tmp/idemcheck" load --target "http://127.0.0.1:$2" --mode hit --rate "$rate" --duration "$dur" --json "$j" >/dev/null
  "$tmp/idemcheck" load --target "http://127.0.0.1:$2" --mode hit --plan "max@3s" --max-workers 64 --json "$m" >/dev/null
  python3 - "$j" "$m" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["paths"]["hit"]; b = json.load(open(sys.argv[2]))["paths"]["hit"]
print(a["latency_ms"]["p50"], a["latency_ms"]["p99"], a["rate"], b["throughput"])
PY
}

# Alternate the paths round by round so machine noise hits all alike.
declare -A p50 p99 rt tp
for r in $(seq "$rounds"); do
  for entry in "${paths[@]}"; do
    name=${entry%%=*}; port=${entry#*=}
    read -r a b c d < <(measure "$name" "$port" "$r")
    p50[$name]="${p50[$name]:-} $a"; p99[$name]="${p99[$name]:-} $b"; rt[$name]="${rt[$name]:-} $c"; tp[$name]="${tp[$name]:-} $d"
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print (NR%2)? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
{
  echo "chaos proxy overhead: hit-mode POSTs at ${rate}/s for ${dur}, ${rounds} alternating rounds (median), then max throughput (64 workers, 3s)"
  printf '%-16s %10s %10s %10s %12s %10s %10s %10s\n' path p50_ms p99_ms +p50_ms +p99_ms max_req_s tput_ratio p50_ratio
  d50=$(echo "${p50[direct]}" | median); d99=$(echo "${p99[direct]}" | median); dtp=$(echo "${tp[direct]}" | median)
  for entry in "${paths[@]}"; do
    name=${entry%%=*}
    m50=$(echo "${p50[$name]}" | median); m99=$(echo "${p99[$name]}" | median); mtp=$(echo "${tp[$name]}" | median)
    awk -v n="$name" -v a="$m50" -v b="$m99" -v t="$mtp" -v da="$d50" -v db="$d99" -v dt="$dtp" 'BEGIN {
      printf "%-16s %10.3f %10.3f %10.3f %12.3f %10.0f %10.2f %10.2f\n", n, a, b, a-da, b-db, t, t/dt, a/da }'
  done
} | tee "$out/bench-chaos.summary.txt"
