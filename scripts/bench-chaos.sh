#!/usr/bin/env bash
# bench-chaos: the chaos proxy's added latency (p50, p99), its CPU per
# request (at the fixed rate and at saturation) and its throughput, against
# going direct and against toxiproxy (a TCP byte pump), measured side by
# side in one run. Toxiproxy is installed from the Go module proxy into a
# temporary GOBIN for the measurement only. Usage: bench-chaos.sh [OUTDIR]
# Env: CHAOS_BENCH_RATE (2000), CHAOS_BENCH_DURATION (5s), CHAOS_BENCH_ROUNDS (3),
#      CHAOS_BENCH_MAX_ROUNDS (9: rounds are added while a ratio against
#      toxiproxy has its goal inside its median's interval, up to this many),
#      CHAOS_BENCH_MAX (3s: the saturation phase),
#      TOXIPROXY_VERSION (v2.5.0; set to "none" to skip toxiproxy),
#      CHAOS_BENCH_BASELINE (an older idemcheck binary: its proxy is measured
#      too, as "baseline-proxy", for before/after ratios in one run).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
rate=${CHAOS_BENCH_RATE:-2000}
dur=${CHAOS_BENCH_DURATION:-5s}
rounds=${CHAOS_BENCH_ROUNDS:-3}
max_rounds=${CHAOS_BENCH_MAX_ROUNDS:-9}
maxdur=${CHAOS_BENCH_MAX:-3s}
toxi_version=${TOXIPROXY_VERSION:-v2.5.0}

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

. scripts/benchlib.sh

go build -o "$tmp/idemcheck" ./cmd/idemcheck
up=$(freeport); via=$(freeport)
"$tmp/idemcheck" serve --addr "127.0.0.1:$up" >"$tmp/serve.log" 2>&1 & pids+=($!)
"$tmp/idemcheck" proxy --listen "127.0.0.1:$via" --upstream "http://127.0.0.1:$up" >"$tmp/proxy.log" 2>&1 & pids+=($!)
waitport "$up"; waitport "$via"
# name=port=pid: pid is the process whose CPU is measured (none when direct).
paths=("direct=$up=" "idemcheck-proxy=$via=$!")
if [ -n "${CHAOS_BENCH_BASELINE:-}" ]; then
  base=$(freeport)
  "$CHAOS_BENCH_BASELINE" proxy --listen "127.0.0.1:$base" --upstream "http://127.0.0.1:$up" >"$tmp/baseline.log" 2>&1 & pids+=($!)
  waitport "$base"
  paths+=("baseline-proxy=$base=${pids[-1]}")
fi

if [ "$toxi_version" != none ]; then
  echo "installing toxiproxy $toxi_version into a temporary GOBIN (not kept)"
  if GOBIN="$tmp/bin" GOFLAGS=-mod=mod go install "github.com/Shopify/toxiproxy/v2/cmd/server@$toxi_version" >"$tmp/toxi-install.log" 2>&1; then
    api=$(freeport); tox=$(freeport)
    "$tmp/bin/server" -host 127.0.0.1 -port "$api" >"$tmp/toxi.log" 2>&1 & pids+=($!)
    toxi_pid=$!
    waitport "$api"
    curl -fsS -X POST "http://127.0.0.1:$api/proxies" \
      -d "{\"name\":\"bench\",\"listen\":\"127.0.0.1:$tox\",\"upstream\":\"127.0.0.1:$up\",\"enabled\":true}" >/dev/null
    waitport "$tox"
    paths+=("toxiproxy=$tox=$toxi_pid")
  else
    echo "toxiproxy install failed (see below); measuring without it"; tail -3 "$tmp/toxi-install.log"
  fi
fi

# One measurement: replays (hit mode) at a fixed rate, then max
# throughput; CPU per request (us) of the path's own process in each.
measure() { # name port pid round
  local j="$tmp/$1-$4.json" m="$tmp/$1-$4-max.json" c0 c1 c2
  c0=$(cpu_us $3)
  "$tmp/idemcheck" load --target "http://127.0.0.1:$2" --mode hit --rate "$rate" --duration "$dur" --json "$j" >/dev/null
  c1=$(cpu_us $3)
  "$tmp/idemcheck" load --target "http://127.0.0.1:$2" --mode hit --plan "max@$maxdur" --max-workers 64 --json "$m" >/dev/null
  c2=$(cpu_us $3)
  python3 - "$j" "$m" "$((c1 - c0))" "$((c2 - c1))" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["paths"]["hit"]; b = json.load(open(sys.argv[2]))["paths"]["hit"]
cpu = lambda us, n: us * 1.0 / n if n else float("nan")
print(a["latency_ms"]["p50"], a["latency_ms"]["p99"], a["rate"], b["throughput"],
      cpu(int(sys.argv[3]), a["requests"]), cpu(int(sys.argv[4]), b["requests"]))
PY
}

# Alternate the paths round by round so machine noise hits all alike, and
# rotate their order so that no path always runs first (or right after the
# same neighbour).
declare -A p50 p99 rt tp cr cm
n=${#paths[@]}
one_round() {
  local r=$1 i entry name port pid a b c d e f
  for i in $(seq 0 $((n - 1))); do
    entry=${paths[$(((i + r - 1) % n))]}
    IFS== read -r name port pid <<<"$entry"
    read -r a b c d e f < <(measure "$name" "$port" "$pid" "$r")
    p50[$name]="${p50[$name]:-} $a"; p99[$name]="${p99[$name]:-} $b"; rt[$name]="${rt[$name]:-} $c"; tp[$name]="${tp[$name]:-} $d"
    cr[$name]="${cr[$name]:-} $e"; cm[$name]="${cm[$name]:-} $f"
  done
}
# undecided_vs_toxiproxy: true while one of the three ratios below still
# has its goal inside its median's interval.
undecided_vs_toxiproxy() {
  [ -n "${tp[toxiproxy]:-}" ] || return 1
  undecided "$(per_round "${cr[idemcheck-proxy]}" "${cr[toxiproxy]}")" "<=" 1.0 ||
    undecided "$(per_round "${cm[idemcheck-proxy]}" "${cm[toxiproxy]}")" "<=" 1.0 ||
    undecided "$(per_round "${tp[idemcheck-proxy]}" "${tp[toxiproxy]}")" ">=" 1.0
}
run_rounds "$max_rounds" undecided_vs_toxiproxy

{
  echo "chaos proxy overhead: hit-mode POSTs at ${rate}/s for ${dur}, ${rounds} alternating rounds (median), then max throughput (64 workers, ${maxdur})"
  echo "cpu_us: CPU per request of the path's own process (at ${rate}/s; at saturation)"
  printf '%-16s %10s %10s %10s %12s %10s %10s %10s %10s %10s\n' path p50_ms p99_ms +p50_ms +p99_ms max_req_s tput_ratio p50_ratio cpu_us cpu_us_max
  d50=$(echo "${p50[direct]}" | median); d99=$(echo "${p99[direct]}" | median); dtp=$(echo "${tp[direct]}" | median)
  for entry in "${paths[@]}"; do
    name=${entry%%=*}
    m50=$(echo "${p50[$name]}" | median); m99=$(echo "${p99[$name]}" | median); mtp=$(echo "${tp[$name]}" | median)
    mcr=$(echo "${cr[$name]}" | median); mcm=$(echo "${cm[$name]}" | median)
    awk -v n="$name" -v a="$m50" -v b="$m99" -v t="$mtp" -v da="$d50" -v db="$d99" -v dt="$dtp" -v c="$mcr" -v cm="$mcm" 'BEGIN {
      printf "%-16s %10.3f %10.3f %10.3f %12.3f %10.0f %10.2f %10.2f %10.1f %10.1f\n", n, a, b, a-da, b-db, t, t/dt, a/da, c, cm }'
  done
} | tee "$out/bench-chaos.summary.txt"

# Issue 13, point 1: medians of the per-round ratios against toxiproxy,
# with their spread and the median's interval.
if [ -n "${tp[toxiproxy]:-}" ]; then
  ratio_rounds "proxy CPU/req vs toxiproxy at ${rate}/s" "$(per_round "${cr[idemcheck-proxy]}" "${cr[toxiproxy]}")" "<=" 1.0
  ratio_rounds "proxy CPU/req vs toxiproxy at saturation" "$(per_round "${cm[idemcheck-proxy]}" "${cm[toxiproxy]}")" "<=" 1.0
  ratio_rounds "proxy max throughput vs toxiproxy" "$(per_round "${tp[idemcheck-proxy]}" "${tp[toxiproxy]}")" ">=" 1.0
else
  ratio "proxy vs toxiproxy" nan "<=" 1.0 "toxiproxy not run"
fi
