#!/usr/bin/env bash
# bench-carriers: what the GraphQL and MCP (JSON-RPC) carriers cost the
# load runner per request against plain HTTP (issue 36 point 6). One
# `idemcheck load --mode hit` at a fixed rate per carrier, alternated round
# by round: plain HTTP (the key in a header) on `idemcheck serve`, GraphQL
# (Shopify's @idempotent directive) on examples/gqlshop, MCP tools/call on
# examples/adcpagent. The figure is the loader's own marginal CPU per
# request: its threads' schedstat nanoseconds in a long run less a short
# run's, over the requests the long run sent more (start-up, preflight and
# the warm-up's pool cost both the same and drop out), so the three
# servers' costs stay out of it; what differs is how each carrier builds a
# request and reads an answer (a GraphQL document with the key spliced in,
# data/errors/userErrors; a JSON-RPC envelope, a tool result).
# Usage: bench-carriers.sh [OUTDIR]
# Env: CARRIER_BENCH_RATE (1000/s), CARRIER_BENCH_DURATION (4s, the long
#      run; the short one is a quarter of it), CARRIER_BENCH_ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
. scripts/benchlib.sh
rate=${CARRIER_BENCH_RATE:-1000}
dur=${CARRIER_BENCH_DURATION:-4s}
short=$(awk -v d="${dur%s}" 'BEGIN { printf "%gs", d / 4 }')
rounds=${CARRIER_BENCH_ROUNDS:-3}
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT

go build -o "$tmp/idemcheck" ./cmd/idemcheck
go build -o "$tmp/gqlshop" ./examples/gqlshop
go build -o "$tmp/adcpagent" ./examples/adcpagent

# Keys outlive the run, so every hit is judged as a replay.
hp=$(freeport) gp=$(freeport) mp=$(freeport)
"$tmp/idemcheck" serve --addr "127.0.0.1:$hp" --ttl 1h >"$tmp/serve.log" 2>&1 &
pids+=($!)
"$tmp/gqlshop" -addr "127.0.0.1:$gp" -ttl 1h >"$tmp/gqlshop.log" 2>&1 &
pids+=($!)
"$tmp/adcpagent" -addr "127.0.0.1:$mp" -ttl 1h >"$tmp/adcpagent.log" 2>&1 &
pids+=($!)
waitport "$hp" && waitport "$gp" && waitport "$mp"
sed "s|^base_url: .*|base_url: http://127.0.0.1:$gp|; s|^ttl: .*|ttl: 1h|" examples/gqlshop/idemcheck.yaml >"$tmp/graphql.yaml"
sed "s|^base_url: .*|base_url: http://127.0.0.1:$mp|" examples/adcpagent/idemcheck.yaml >"$tmp/mcp.yaml"
export IDEMCHECK_TOKEN_1=alice IDEMCHECK_TOKEN_2=bob

# run CARRIER DURATION: one measured load; prints "requests cpu_us".
run() {
  local args
  case $1 in
  http) args=(--target "http://127.0.0.1:$hp" --ttl 1h) ;;
  graphql) args=(--config "$tmp/graphql.yaml") ;;
  mcp) args=(--config "$tmp/mcp.yaml" --ttl 1h) ;;
  esac
  "$tmp/idemcheck" load "${args[@]}" --mode hit --rate "$rate" --duration "$2" --json "$tmp/$1.json" >"$tmp/$1.txt" 2>&1 &
  local lp=$! cpu=0 c
  # The loader's threads are read while it runs: its last reading is the
  # figure (the process is gone once it exits).
  while kill -0 "$lp" 2>/dev/null; do
    c=$(cpu_us "$lp")
    [ "$c" -gt 0 ] && cpu=$c
    sleep 0.05
  done
  wait "$lp" || { tail -5 "$tmp/$1.txt" >&2; echo "bench-carriers: load over $1 failed" >&2; return 1; }
  python3 - "$tmp/$1.json" "$cpu" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1]))
n = sum(p.get("requests", 0) for p in rep.get("paths", {}).values()) if isinstance(rep.get("paths"), dict) else 0
if n == 0:
    n = rep.get("requests") or sum(m.get("requests", 0) for m in rep.get("metrics", {}).values())
print(n, sys.argv[2])
EOF
}

declare -A per
for r in $(seq "$rounds"); do
  order="http graphql mcp"
  [ $((r % 2)) = 0 ] && order="mcp graphql http"
  for c in $order; do
    read -r n0 cpu0 < <(run "$c" "$short")
    read -r n cpu < <(run "$c" "$dur")
    [ "$n" -gt "$n0" ] || { echo "bench-carriers: over $c the long run sent $n requests, the short one $n0" >&2; exit 1; }
    per[$c]="${per[$c]:-} $(awk -v c="$((cpu - cpu0))" -v n="$((n - n0))" 'BEGIN { printf "%.2f", c / n }')"
  done
done
printf '\nload runner marginal CPU per request by carrier, hit mode at %s/s, %s less %s; %s alternating rounds (medians); %s cores, load average %s\n' \
  "$rate" "$dur" "$short" "$rounds" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %12s\n' carrier "µs/request"
for c in http graphql mcp; do printf '%-34s %12.2f\n' "$c" "$(echo "${per[$c]}" | median)"; done
ratio_rounds "load CPU/req, GraphQL vs plain HTTP" "$(per_round "${per[graphql]}" "${per[http]}")" "<=" 2 "the issue sets no goal: 2 is ours"
ratio_rounds "load CPU/req, MCP vs plain HTTP" "$(per_round "${per[mcp]}" "${per[http]}")" "<=" 2 "the issue sets no goal: 2 is ours"
