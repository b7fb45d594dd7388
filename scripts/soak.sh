#!/usr/bin/env bash
# make soak: long-running memory check. Runs `idemcheck serve` under
# `load --mode mix` at a fixed rate, then `idemcheck proxy` under repeated
# `chaos` runs, each for SOAK_TIME, sampling the server's (then the proxy's)
# VmRSS from /proc/PID/status every SOAK_EVERY seconds. The first half of
# each run is warm-up (records, the oracle's window and the ledger fill up
# to their bounds); over the second half the least-squares RSS slope must be
# flat: projected growth over that half within max(SOAK_NOISE_KB, 5% of
# the mean). Exits 1 when either grows.
# Usage: scripts/soak.sh BIN OUT   (env: SOAK_TIME=10m SOAK_RATE=500 SOAK_EVERY=5,
#        SOAK_ONLY=serve|proxy to run one of the two)
set -euo pipefail
bin=${1:-bin/idemcheck}
out=${2:-out/soak}
soak=${SOAK_TIME:-10m}
rate=${SOAK_RATE:-500}
every=${SOAK_EVERY:-5}
noise=${SOAK_NOISE_KB:-4096}
mkdir -p "$out"
secs=$(awk -v d="$soak" 'BEGIN{n=d+0; u=substr(d,length(n "")+1); if(u=="m")n*=60; else if(u=="h")n*=3600; print int(n)}')
[ "$secs" -ge 20 ] || { echo "soak: SOAK_TIME $soak: want at least 20s"; exit 2; }

pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done' EXIT

# start LOG PATTERN ARGS...: starts the binary, waits for its address line.
start() {
  local log=$1 pattern=$2; shift 2
  "$bin" "$@" >"$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  addr=
  for _ in $(seq 1 100); do
    addr=$(sed -n "$pattern" "$log" | head -n 1)
    [ -n "$addr" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "soak: $* did not start:"; cat "$log"; exit 1
}

# sample PID FILE: one "seconds rss_kb" line every $every s while PID lives.
sample() {
  local p=$1 f=$2 t0
  t0=$(date +%s)
  : >"$f"
  while kill -0 "$p" 2>/dev/null; do
    awk -v t=$(($(date +%s) - t0)) '/^VmRSS:/{print t, $2}' "/proc/$p/status" >>"$f" 2>/dev/null || true
    sleep "$every"
  done
}

# judge NAME FILE: least-squares slope over the second half of the samples.
judge() {
  awk -v name="$1" -v noise="$noise" '
    { t[NR]=$1; r[NR]=$2 }
    END {
      if (NR < 6) { printf "soak %s: only %d samples\n", name, NR; exit 1 }
      from = int(NR/2) + 1; n = NR - from + 1
      for (i = from; i <= NR; i++) { st += t[i]; sr += r[i] }
      mt = st/n; mr = sr/n
      for (i = from; i <= NR; i++) { num += (t[i]-mt)*(r[i]-mr); den += (t[i]-mt)^2 }
      slope = den > 0 ? num/den : 0          # KB per second
      span = t[NR] - t[from]
      growth = slope * span
      limit = noise > 0.05*mr ? noise : 0.05*mr
      printf "soak %s: %d samples over %ds; RSS first %d KB, warm-up end %d KB, last %d KB, mean (2nd half) %d KB; slope %.1f KB/min, projected growth over the 2nd half %d KB (limit %d KB): %s\n",
        name, NR, t[NR], r[1], r[from], r[NR], mr, slope*60, growth, limit, (growth <= limit ? "flat" : "GROWING")
      exit (growth <= limit ? 0 : 1)
    }' "$2"
}

# soak_serve: serve under load --mode mix. A short TTL makes records expire
# during the run, so the store, the oracle's window and the ledger reach
# their bounds inside the warm-up half (TTL 10s + lease 5s + 1 min slack).
soak_serve() {
  start "$out/serve.log" 's/^idemcheck: listening on //p' serve --addr 127.0.0.1:0 --ttl 10s --lease 5s
  local serve_pid=$pid url=$addr
  sample "$serve_pid" "$out/serve-rss.txt" &
  pids+=($!)
  echo "== soak serve ($url) under load --mode mix --rate $rate for $soak"
  # Pool keys outlive the 10s TTL, so late hits re-execute and load
  # reports replay violations; only the RSS is judged here.
  "$bin" load --target "$url" --mode mix --hit-ratio 0.9 --rate "$rate" --duration "$soak" \
    --json "$out/load.json" >"$out/load.txt" 2>&1 || echo "(load exit $? — see $out/load.txt; not judged by the soak)"
  kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
  sleep "$every"
  judge serve "$out/serve-rss.txt"
}

# soak_proxy: a standalone proxy with a fault of its own in front of a
# fresh serve; chaos runs back to back through it until SOAK_TIME.
# --max-keys 5000: its attempt table rotates (about every minute here)
# inside the warm-up, as the default 262,144 would after hours.
soak_proxy() {
  start "$out/serve2.log" 's/^idemcheck: listening on //p' serve --addr 127.0.0.1:0 --ttl 10s --lease 5s
  local upstream=$addr
  start "$out/proxy.log" 's/^idemcheck proxy: \([^ ]*\) -> .*/\1/p' proxy --listen 127.0.0.1:0 \
    --upstream "$upstream" --fault drop-response:0.05 --max-keys 5000
  local proxy_pid=$pid end=$(($(date +%s) + secs)) runs=0
  sample "$proxy_pid" "$out/proxy-rss.txt" &
  pids+=($!)
  echo "== soak proxy ($addr -> $upstream) under chaos for $soak"
  while [ "$(date +%s)" -lt "$end" ] && [ "$runs" -lt 100000 ]; do
    runs=$((runs + 1))
    "$bin" chaos --target "http://$addr" --ops 500 --concurrency 16 --fault drop-response:0.1 \
      --seed "$runs" --deadline 2m >"$out/chaos-last.txt" 2>&1 ||
      echo "(chaos run $runs exit $? — see $out/chaos-last.txt; not judged by the soak)"
  done
  echo "   $runs chaos runs"
  kill "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true
  sleep "$every"
  judge proxy "$out/proxy-rss.txt"
}

status=0
only=${SOAK_ONLY:-}
if [ "$only" != proxy ]; then soak_serve || status=1; fi
if [ "$only" != serve ]; then soak_proxy || status=1; fi
exit $status
