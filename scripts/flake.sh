#!/usr/bin/env bash
# make flake: are the verdicts load-proof? FLAKE_RUNS whole-catalog runs
# (default 20) against each of: the correct reference (must never fail or
# warn), the reference with --defect no-inflight-lock and the lock-lapses
# variant of examples/variants (each must fail every time, on the cases
# that name the defect), while FLAKE_BURNERS CPU burners (default 3 per
# core) and, with FLAKE_RACE=1 (default), a loop of `go test -race ./load/`
# run beside them. Inconclusive cases are counted and printed: they are
# honest under a stall, never a pass or a fail. Exits 1 on any false
# verdict, 0 otherwise.
# Usage: scripts/flake.sh BIN OUT   (env: FLAKE_RUNS=20 FLAKE_PARALLEL=4
#        FLAKE_BURNERS=6 FLAKE_RACE=1 FLAKE_TTL=12s)
set -uo pipefail
bin=${1:-bin/idemcheck}
out=${2:-out/flake}
runs=${FLAKE_RUNS:-20}
par=${FLAKE_PARALLEL:-4}
burners=${FLAKE_BURNERS:-$((3 * $(nproc)))}
ttl=${FLAKE_TTL:-12s}
lease=5s
case $runs in '' | *[!0-9]* | 0) echo "flake: FLAKE_RUNS $runs: want a whole number ≥ 1"; exit 2 ;; esac
mkdir -p "$out"

pids=()
cleanup() { for p in "${pids[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
for _ in $(seq 1 "$burners"); do
  timeout 3600 sh -c 'while :; do :; done' &
  pids+=($!)
done
if [ "${FLAKE_RACE:-1}" = 1 ]; then
  (end=$((SECONDS + 3600)); while [ $SECONDS -lt $end ]; do go test -race -count=1 ./load/ >/dev/null 2>&1; done) &
  pids+=($!)
fi
echo "flake: $runs runs each, $par at a time, beside $burners CPU burners on $(nproc) cores (race loop: ${FLAKE_RACE:-1})"

# one NAME I DEFECT: a catalog run against a fresh reference server.
one() {
  local name=$1 i=$2 defect=$3 args=""
  [ -n "$defect" ] && args="--defect $defect"
  "$bin" run --target-cmd "$bin serve --addr 127.0.0.1:{port} --ttl $ttl --lease $lease $args" --ttl "$ttl" --lease "$lease" \
    >"$out/$name-$i.txt" 2>&1
  echo $? >"$out/$name-$i.rc"
}
export -f one
export bin out ttl lease

for name in reference no-inflight-lock; do
  defect=""
  [ "$name" = no-inflight-lock ] && defect=no-inflight-lock
  seq 1 "$runs" | xargs -P "$par" -I{} bash -c "one $name {} '$defect'"
done

bad=0
tally() { # NAME: lines of verdict marks over the runs
  local name=$1
  printf '%s: fail %s, warn %s, inconclusive or unverifiable %s (instances over %s runs); exit codes %s\n' "$name" \
    "$(cat "$out/$name"-*.txt | grep -c '^      ✗')" "$(cat "$out/$name"-*.txt | grep -c '^      !')" \
    "$(cat "$out/$name"-*.txt | grep -c '^      ?')" "$runs" "$(cat "$out/$name"-*.rc | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
}
tally reference
for i in $(seq 1 "$runs"); do
  if grep -q '^      [✗!]' "$out/reference-$i.txt" || ! grep -qx '[05]' "$out/reference-$i.rc"; then
    echo "flake: reference run $i: a false verdict (exit $(cat "$out/reference-$i.rc")):"
    grep -B1 '^      [✗!]' "$out/reference-$i.txt" | head -20
    bad=1
  fi
done
tally no-inflight-lock
caught=0
for i in $(seq 1 "$runs"); do
  if [ "$(cat "$out/no-inflight-lock-$i.rc")" = 1 ] && grep -A2 -E '^  ✗ concurrent/(in-flight-conflict|in-flight-offsets|same-key-burst) ' "$out/no-inflight-lock-$i.txt" | grep -q '^      ✗'; then
    caught=$((caught + 1))
  else
    echo "flake: no-inflight-lock run $i was not caught (exit $(cat "$out/no-inflight-lock-$i.rc")): $out/no-inflight-lock-$i.txt"
    bad=1
  fi
done
echo "no-inflight-lock: caught in $caught of $runs runs"

# The lock-lapses variant is a Go server (examples/variants): its test
# serves it and asserts concurrent/in-flight-offsets fails, once per -count.
if go test -count="$runs" -run '^TestVariants$/^lock-lapses$' ./examples/variants/ >"$out/lock-lapses.txt" 2>&1; then
  echo "lock-lapses: caught in $runs of $runs runs (go test -count=$runs -run TestVariants/lock-lapses)"
else
  echo "flake: lock-lapses was not caught in every run: $out/lock-lapses.txt"
  grep -E 'must fail|passed' "$out/lock-lapses.txt" | head -5
  bad=1
fi
exit $bad
