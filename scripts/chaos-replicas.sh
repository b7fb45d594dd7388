#!/usr/bin/env bash
# Exactly-once across replicas under crashes: `idemcheck chaos` starts
# CHAOS_REPLICAS `idemcheck serve` replicas on one PostgreSQL, SIGKILLs a
# random one every CHAOS_KILL_EVERY and restarts it, while CHAOS_OPS
# operations run through the fault proxy with 30% of responses dropped
# (and 5% of requests duplicated, the copy going to the next replica).
# Exit status is chaos's: 0 when no exactly-once violation was found.
# Usage: scripts/chaos-replicas.sh BIN DSN [OUT]
#   env: CHAOS_OPS=5000 CHAOS_REPLICAS=3 CHAOS_KILL_EVERY=2s CHAOS_CONCURRENCY=32
#        CHAOS_DEFECT=process-local-lock (to watch it being caught)
set -euo pipefail
bin=${1:?usage: chaos-replicas.sh BIN DSN [OUT]}
dsn=${2:?usage: chaos-replicas.sh BIN DSN [OUT]}
out=${3:-out/chaos-replicas}
mkdir -p "$out"
serve="$bin serve --addr 127.0.0.1:{port} --store postgres --dsn $dsn --lease 2s"
if [ -n "${CHAOS_DEFECT:-}" ]; then
  serve="$serve --defect $CHAOS_DEFECT"
fi
exec "$bin" chaos --target-cmd "$serve" \
  --replicas "${CHAOS_REPLICAS:-3}" --kill-every "${CHAOS_KILL_EVERY:-2s}" \
  --ops "${CHAOS_OPS:-5000}" --concurrency "${CHAOS_CONCURRENCY:-32}" \
  --fault drop-response:0.3 --fault duplicate:0.05 --seed "${CHAOS_SEED:-1}" \
  --deadline 15m --history "$out/history.jsonl" --json "$out/chaos.json"
