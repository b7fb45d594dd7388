#!/usr/bin/env bash
# bench-faces-client: the client catalog's wall time for one client (issue
# 36 point 6), the reference client under --strict, through both faces,
# alternated round by round: `idemcheck client -- idemcheck refclient` (a
# process per case run, the driving contract) and the go-test face's
# in-process driver (clientcheck's BenchmarkCatalog, the same client
# code, no processes). The catalog is dominated by the cases' own waits
# (Retry-After, back-off, the held answer), so the figure is seconds, and
# the ratio is what the driving contract's processes add to them.
# Usage: bench-faces-client.sh [OUTDIR]
# Env: CLIENT_BENCH_ROUNDS (3), CLIENT_BENCH_RUN (every case; a glob
#      narrows both faces to its cases, as --run does).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
. scripts/benchlib.sh
rounds=${CLIENT_BENCH_ROUNDS:-3}
run=${CLIENT_BENCH_RUN:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/idemcheck" ./cmd/idemcheck
go test -c -o "$tmp/clientcheck.test" ./clientcheck/
cli_args=(client --strict)
bench_args=()
if [ -n "$run" ]; then cli_args+=(--run "$run"); bench_args=(-catalog.run "$run"); fi

# seconds of one CLI run (it must pass: a failing catalog is no figure).
cli() {
  local t0 t1
  t0=$(date +%s%N)
  "$tmp/idemcheck" "${cli_args[@]}" -- "$tmp/idemcheck" refclient >"$tmp/cli.txt" 2>&1 ||
    { tail -5 "$tmp/cli.txt" >&2; echo "idemcheck client failed on the reference client" >&2; return 1; }
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}

# seconds of one in-process catalog (BenchmarkCatalog's ns/op).
inproc() {
  (cd clientcheck && "$tmp/clientcheck.test" -test.run '^$' -test.bench Catalog -test.benchtime 1x "${bench_args[@]}") >"$tmp/bench.txt" 2>&1 ||
    { tail -5 "$tmp/bench.txt" >&2; return 1; }
  awk '/^BenchmarkCatalog/ { printf "%.3f", $3 / 1e9 }' "$tmp/bench.txt"
}

cli_s="" in_s="" per=""
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then a=$(cli); b=$(inproc); else b=$(inproc); a=$(cli); fi
  cli_s="$cli_s $a" in_s="$in_s $b"
  per="$per $(awk -v a="$a" -v b="$b" 'BEGIN { print (b > 0 ? a / b : "nan") }')"
done
printf '\nclient catalog wall time, reference client, --strict%s; %s alternating rounds (medians); %s cores, load average %s\n' \
  "${run:+ (--run $run)}" "$rounds" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %10s\n' face seconds
printf '%-28s %10.3f\n' "CLI (process per case run)" "$(echo "$cli_s" | median)"
printf '%-28s %10.3f\n' "go test (in-process)" "$(echo "$in_s" | median)"
ratio_rounds "client catalog wall time, CLI vs in-process" "$per" "<=" 1.5 \
  "no goal in the issue; the CLI's median $(echo "$cli_s" | median)s"
