#!/usr/bin/env bash
# make demo: the main job on the embedded default. Starts the reference
# server (memory store) on a free loopback port, runs the conformance
# catalog, a short load run and a short chaos run against it, and writes
# every report under OUT. Exits non-zero if any face fails.
set -euo pipefail
bin=${1:-bin/idemcheck}
out=${2:-out}
mkdir -p "$out"

servers=()
trap 'for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done' EXIT

# start_server LOG ARGS...: starts the reference server on a free loopback
# port and sets $url once it prints its listening line.
start_server() {
  local log=$1; shift
  # Created here: the background job's redirect may come after the first
  # read below, and a missing file would end the demo (set -e).
  : >"$log"
  "$bin" serve --addr 127.0.0.1:0 "$@" >"$log" 2>&1 &
  local pid=$!
  servers+=("$pid")
  url=
  for _ in $(seq 1 100); do
    url=$(sed -n 's/^idemcheck: listening on //p' "$log")
    [ -n "$url" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "demo: reference server did not start:"; cat "$log"; exit 1
}

# Conformance gets a short TTL so the expiry cases can run; load and chaos
# get the default 24h TTL so that replayed keys never expire mid-run.
# 3s is the least TTL with which every case runs (a shorter one skips
# concurrent/conflict-not-poisoned, naming the TTL it needs).
start_server "$out/serve-conformance.log" --ttl 3s --lease 5s
echo "== reference server (memory store, ttl 3s) at $url"
echo "== conformance: idemcheck run --target $url --ttl 3s"
"$bin" run --target "$url" --ttl 3s \
  --junit "$out/conformance.junit.xml" --json "$out/conformance.json" --markdown "$out/conformance.md" \
  --html "$out/conformance.html"

start_server "$out/serve-load.log"
echo "== reference server (memory store, ttl 24h) at $url"

echo "== load: hit vs miss (mix 90% hits, 500 req/s for 3s)"
"$bin" load --target "$url" --mode mix --hit-ratio 0.9 --rate 500 --duration 3s \
  --body-patch '{"delay_ms":20}' \
  --threshold 'violations==0' --threshold 'hit.p50/miss.p50<0.5' \
  --json "$out/load.json" --html "$out/load.html" --hdr "$out/load-hdr.svg"

echo "== chaos: 500 operations, 30% of responses dropped after the upstream committed"
"$bin" chaos --target "$url" --ops 500 --concurrency 16 \
  --fault drop-response:0.3 --fault duplicate:0.1 \
  --history "$out/chaos.history.jsonl" --json "$out/chaos.json" --html "$out/chaos.html"

echo "== reports in $out/: conformance.{junit.xml,json,md,html} load.{json,html} load-hdr.svg chaos.{json,html,history.jsonl}"
