#!/usr/bin/env bash
# bench-grpc: `idemcheck load` over gRPC (the paced client, hit mode, at
# saturation) against ghz on the reference gRPC service (`idemcheck serve
# --grpc`), alternated round by round: calls per second and CPU per call
# of each client process (getrusage of the child: the kernel's exact
# runtime, not clock ticks). Both replay one key (ghz's call data is one
# fixed message), on one connection, with the same workers. ghz is
# installed from the Go module proxy into a temporary GOBIN for the
# measurement only, as bench-chaos installs toxiproxy. (bench-load
# compares the same client with a bare grpc-go loop in one process.)
# Usage: bench-grpc.sh [OUTDIR]
# Env: GRPC_BENCH_DURATION (3s), GRPC_BENCH_ROUNDS (5), GRPC_BENCH_WORKERS (32),
#      GRPC_BENCH_MAX_ROUNDS (11: rounds are added while the rate ratio's
#      median interval holds its goal, up to this many),
#      GHZ_VERSION (v0.93.0, the one the module proxy serves; "none" skips ghz).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
. scripts/benchlib.sh
dur=${GRPC_BENCH_DURATION:-3s}
rounds=${GRPC_BENCH_ROUNDS:-5}
max_rounds=${GRPC_BENCH_MAX_ROUNDS:-11}
workers=${GRPC_BENCH_WORKERS:-32}
ghz_version=${GHZ_VERSION:-v0.93.0}
tmp=$(mktemp -d)
spid=
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

if [ "$ghz_version" = none ]; then
  echo "bench-grpc: ghz not installed (GHZ_VERSION=none)"
  ratio "gRPC load rate vs ghz (saturation)" nan ">=" 0.95 "ghz not run"
  exit 0
fi
echo "installing ghz $ghz_version into a temporary GOBIN (not kept)"
if ! GOBIN="$tmp/bin" GOFLAGS=-mod=mod go install "github.com/bojand/ghz/cmd/ghz@$ghz_version" >"$tmp/ghz-install.log" 2>&1; then
  echo "ghz install failed; see below"; tail -3 "$tmp/ghz-install.log"
  ratio "gRPC load rate vs ghz (saturation)" nan ">=" 0.95 "ghz not run: install failed"
  exit 0
fi

go build -o "$tmp/idemcheck" ./cmd/idemcheck
port=$(freeport) gport=$(freeport)
"$tmp/idemcheck" serve --addr "127.0.0.1:$port" --grpc "127.0.0.1:$gport" >"$tmp/serve.log" 2>&1 &
spid=$!
waitport "$port"; waitport "$gport"
cat >"$tmp/grpc.yaml" <<YAML
base_url: grpc://127.0.0.1:$gport
key: {field: request_id}
principals: [{name: alice, metadata: {authorization: Bearer alice}}]
operations:
  - name: payments
    rpc: idemcheck.reference.v1.PaymentService/CreatePayment
    body: {parent: accounts/a1, payment: {amount: 1000, currency: USD}}
    id_pointer: /name
YAML

# measure NAME ROUND: one client run as a child; prints calls/s and CPU
# µs per call (the child's user+system time over its calls).
measure() {
  python3 - "$1" "$tmp" "$2" "$dur" "$workers" "$gport" <<'PY'
import json, resource, subprocess, sys
name, tmp, rnd, dur, workers, gport = sys.argv[1:]
out = f"{tmp}/{name}-{rnd}.json"
if name == "idemcheck":
    cmd = [f"{tmp}/idemcheck", "load", "--config", f"{tmp}/grpc.yaml", "--mode", "hit", "--pool", "1",
           "--plan", f"max@{dur}", "--workers", workers, "--max-workers", workers, "--json", out]
else:
    cmd = [f"{tmp}/bin/ghz", "--insecure", "--call", "idemcheck.reference.v1.PaymentService/CreatePayment",
           "-d", '{"parent":"accounts/a1","payment":{"amount":1000,"currency":"USD"},"request_id":"ghz-1"}',
           "-m", '{"authorization":"Bearer ghz"}', "-c", workers, "-z", dur, "--connections", "1", "-O", "json", "-o", out,
           f"127.0.0.1:{gport}"]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu_us = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e6
r = json.load(open(out))
if name == "idemcheck":
    p = r["paths"]["hit"]
    if r.get("violations", 0):
        sys.exit("idemcheck load reported violations on the reference")
    rate, calls = p["rate"], p["requests"]
else:
    rate, calls = r["rps"], r["count"]
print(rate, cpu_us / calls)
PY
}

declare -A rt cpu
one_round() {
  local r=$1 order="idemcheck ghz" name a b
  [ $((r % 2)) = 0 ] && order="ghz idemcheck"
  for name in $order; do
    read -r a b < <(measure "$name" "$r")
    rt[$name]="${rt[$name]:-} $a"; cpu[$name]="${cpu[$name]:-} $b"
  done
}
# Rounds are added, up to max_rounds, while the rate's median interval
# holds the goal: one round's noise at saturation is about 10 %.
rate_undecided() { undecided "$(per_round "${rt[idemcheck]}" "${rt[ghz]}")" ">=" 0.95; }
run_rounds "$max_rounds" rate_undecided
printf '\ngRPC hit calls at saturation (%s workers, one connection, %s), %s alternating rounds (medians)\n' "$workers" "$dur" "$rounds"
printf '%-10s %12s %14s\n' client calls_per_s cpu_us_per_call
for name in idemcheck ghz; do
  printf '%-10s %12.0f %14.1f\n' "$name" "$(echo "${rt[$name]}" | median)" "$(echo "${cpu[$name]}" | median)"
done
ratio_rounds "gRPC load rate vs ghz (saturation)" "$(per_round "${rt[idemcheck]}" "${rt[ghz]}")" ">=" 0.95
ratio_rounds "gRPC load CPU/call vs ghz (saturation)" "$(per_round "${cpu[idemcheck]}" "${cpu[ghz]}")" "<=" 1.2 "no goal in the issue; shown"
