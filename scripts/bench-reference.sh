#!/usr/bin/env bash
# Reference middleware benchmarks: hit path (replay), miss path (claim, run,
# store) and the bare handler, run side by side; prints ns/op, allocs/op and
# the ratios against the bare handler (median of the runs). Then the same
# over HTTP: `idemcheck serve` replaying (hit) vs running the handler
# without a key (nokey) at a fixed rate, CPU per request and p50.
# Env: BENCH_COUNT (5), REF_BENCHTIME (1s), REF_BENCH_RATE (2000),
#      REF_BENCH_AA_ROUNDS (3: the A/A control's rounds),
#      REF_BENCH_GC_ROUNDS (5: rounds of serve against the floor with both
#      at Go's default collector, beside the goal's),
#      REF_BENCH_DURATION (5s), REF_BENCH_ROUNDS (9), REF_BENCH_MAX_ROUNDS
#      (21: rounds are added while the replay-vs-floor median's interval
#      holds its goal, up to this many).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
mkdir -p "$out"
raw="$out/reference-bench.txt"
go test -run '^$' -bench 'BenchmarkBareHandler|BenchmarkMiddlewareHit|BenchmarkMiddlewareMiss' \
  -benchmem -count "${BENCH_COUNT:-5}" -benchtime "${REF_BENCHTIME:-1s}" ./reference/ | tee "$raw"
# The whole demo app (coding, routes, bearer, middleware) replaying: what
# serve's hit path adds to net/http, allocation by allocation.
go test -run '^$' -bench 'BenchmarkAppReplay' \
  -benchmem -count "${BENCH_COUNT:-5}" -benchtime "${REF_BENCHTIME:-1s}" ./reference/demo/ | tee -a "$raw"
awk '
  /^Benchmark/ {
    name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
    n[name]++; ns[name, n[name]] = $3; allocs[name] = $7
  }
  function median(name,   i, j, t, a, c) {
    c = n[name]
    for (i = 1; i <= c; i++) a[i] = ns[name, i]
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
  }
  END {
    if (!n["BareHandler"] || !n["MiddlewareHit"] || !n["MiddlewareMiss"]) { print "missing benchmark results"; exit 1 }
    bare = median("BareHandler"); hit = median("MiddlewareHit"); miss = median("MiddlewareMiss")
    printf "\n%-16s %10s %10s %8s\n", "path", "ns/op", "allocs/op", "x bare"
    printf "%-16s %10.0f %10s %8.2f\n", "bare handler", bare, allocs["BareHandler"], 1
    printf "%-16s %10.0f %10s %8.2f\n", "middleware hit", hit, allocs["MiddlewareHit"], hit / bare
    printf "%-16s %10.0f %10s %8.2f\n", "middleware miss", miss, allocs["MiddlewareMiss"], miss / bare
    if (n["AppReplay"]) printf "%-16s %10.0f %10s %8.2f\n", "app replay", median("AppReplay"), allocs["AppReplay"], median("AppReplay") / bare
    printf "hit/bare ratio: %.2f (aim: <= 1.00: a replay costs less than the handler)\n", hit / bare
  }' "$raw"

# Over HTTP (issue 13, point 2): `idemcheck serve` answering replays (hit)
# and running the bare handler (nokey) at a fixed rate, alternated round by
# round; CPU per request is the serve process's own. Beside them the floor
# (reference/internal/replayfloor): net/http writing one fixed stored
# response with serve's timeouts and nothing else, the least any replay
# served by net/http can cost; floor/nokey bounds what hit/nokey can reach.
#
# Issue 36, point 4 (replay against the floor) is read from pairs: serve
# replaying and the floor answering over the same window, each driven by
# its own loader. Consecutive windows differ by about 10 % on this machine
# whatever runs in them; the same window cancels that, and an A/A control
# (the floor against a second floor, paired alike) shows what is left.
. scripts/benchlib.sh
rate=${REF_BENCH_RATE:-2000}
dur=${REF_BENCH_DURATION:-5s}
rounds=${REF_BENCH_ROUNDS:-9}
max_rounds=${REF_BENCH_MAX_ROUNDS:-21}
aa_rounds=${REF_BENCH_AA_ROUNDS:-3}
gc_rounds=${REF_BENCH_GC_ROUNDS:-5}
tmp=$(mktemp -d)
spid= fpid= f2pid= sgpid= fgpid=
trap 'for p in $spid $fpid $f2pid $sgpid $fgpid; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/idemcheck" ./cmd/idemcheck
go build -o "$tmp/replayfloor" ./reference/internal/replayfloor
port=$(freeport) fport=$(freeport) f2port=$(freeport) sgport=$(freeport) fgport=$(freeport)
# A TTL of a minute: each hit run replays only the keys it warmed up
# seconds before, and without it every round would leave 200 more records
# for the next rounds' collections to mark (10,000 records cost serve
# about 1 % more CPU per replay), so later rounds would not measure what
# earlier ones did.
"$tmp/idemcheck" serve --addr "127.0.0.1:$port" --key-optional --ttl 1m >"$tmp/serve.log" 2>&1 &
spid=$!
"$tmp/replayfloor" --addr "127.0.0.1:$fport" >"$tmp/floor.log" 2>&1 &
fpid=$!
"$tmp/replayfloor" --addr "127.0.0.1:$f2port" >"$tmp/floor2.log" 2>&1 &
f2pid=$!
# serve and the floor hold the heap goal at 16 MB or more
# (reference/minheap); these two run at Go's default collector instead,
# for the figure a server without that policy would see.
GOGC=100 "$tmp/idemcheck" serve --addr "127.0.0.1:$sgport" --key-optional --ttl 1m >"$tmp/servegc.log" 2>&1 &
sgpid=$!
GOGC=100 "$tmp/replayfloor" --addr "127.0.0.1:$fgport" >"$tmp/floorgc.log" 2>&1 &
fgpid=$!
waitport "$port"; waitport "$fport"; waitport "$f2port"; waitport "$sgport"; waitport "$fgport"
# CPU is read from samples taken every 20 ms, over each run's measured
# window only: the hit run's warm-up executes 100 charges that are not
# replays and would be charged to them.
sample_cpu "$spid" "$tmp/serve.cpu"
sample_cpu "$fpid" "$tmp/floor.cpu"
sample_cpu "$f2pid" "$tmp/floor2.cpu"
sample_cpu "$sgpid" "$tmp/servegc.cpu"
sample_cpu "$fgpid" "$tmp/floorgc.cpu"
declare -A cpu p50 pair port_of=([serve]=$port [floor]=$fport [floor2]=$f2port [servegc]=$sgport [floorgc]=$fgport)

# hit_run NAME JSON: one hit run of `idemcheck load` against server NAME.
# The floors are sent the hit path's requests (key field, warm-up and
# all; they answer every one alike, so the replays check out): serve and
# a floor then parse the same bytes and differ only in how they answer.
hit_run() {
  "$tmp/idemcheck" load --target "http://127.0.0.1:${port_of[$1]}" --mode hit --rate "$rate" --duration "$dur" --json "$2" >/dev/null
}

# paired R A B: A and B driven at once over the same window; appends each
# one's CPU per request to pair[A] and pair[B] (pair[A/B] keys the A/A
# control apart). Which loader starts first alternates by round.
paired() {
  local r=$1 a=$2 b=$3 tag=${4:-} first second pa pb s
  first=$a second=$b
  [ $((r % 2)) = 0 ] && first=$b second=$a
  hit_run "$first" "$tmp/pair$tag-$first-$r.json" &
  pa=$!
  hit_run "$second" "$tmp/pair$tag-$second-$r.json" &
  pb=$!
  wait "$pa"; wait "$pb"
  sleep 0.1 # the windows' last samples
  for s in "$a" "$b"; do
    pair[$tag$s]="${pair[$tag$s]:-} $(window_cpu_per_req "$tmp/$s.cpu" "$tmp/pair$tag-$s-$r.json" hit)"
  done
}

one_round() {
  local r=$1 path mode p samples a b
  for path in nokey hit floor; do
    mode=$path p=$port samples=$tmp/serve.cpu
    [ "$path" = floor ] && mode=hit p=$fport samples=$tmp/floor.cpu
    "$tmp/idemcheck" load --target "http://127.0.0.1:$p" --mode "$mode" --rate "$rate" --duration "$dur" --json "$tmp/$path-$r.json" >/dev/null
    sleep 0.1 # the window's last samples
    a=$(window_cpu_per_req "$samples" "$tmp/$path-$r.json" "$mode")
    b=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["paths"][sys.argv[2]]["latency_ms"]["p50"])' "$tmp/$path-$r.json" "$mode")
    cpu[$path]="${cpu[$path]:-} $a"; p50[$path]="${p50[$path]:-} $b"
  done
  paired "$r" serve floor
}
# The A/A control first: the method's own bias, which the goal's margin
# must exceed to mean anything.
for r in $(seq "$aa_rounds"); do paired "$r" floor floor2 aa; done
# Rounds are added, up to max_rounds, while the median's interval of the
# paired ratio holds the goal.
pair_undecided() { undecided "$(per_round "${pair[serve]}" "${pair[floor]}")" "<=" 1.05; }
run_rounds "$max_rounds" pair_undecided
for r in $(seq "$gc_rounds"); do paired "$r" servegc floorgc; done
hfp=$(per_round "${pair[serve]}" "${pair[floor]}")
hfc=$(per_round "${cpu[hit]}" "${cpu[floor]}")
aa=$(per_round "${pair[aafloor]}" "${pair[aafloor2]}")
hfg=$(per_round "${pair[servegc]}" "${pair[floorgc]}")
cr=$(per_round "${cpu[hit]}" "${cpu[nokey]}" | median)
pr=$(per_round "${p50[hit]}" "${p50[nokey]}" | median)
fcr=$(per_round "${cpu[floor]}" "${cpu[nokey]}" | median)
fpr=$(per_round "${p50[floor]}" "${p50[nokey]}" | median)
printf '\nover HTTP at %s/s for %s, %s alternating rounds (medians)\n' "$rate" "$dur" "$rounds"
printf '%-8s %12s %10s\n' path cpu_us/req p50_ms
for path in nokey hit floor; do
  printf '%-8s %12.1f %10.3f\n' "$path" "$(echo "${cpu[$path]}" | median)" "$(echo "${p50[$path]}" | median)"
done
printf 'hit/nokey: CPU %.2f (aim <= 0.80), p50 %.2f (aim <= 0.90)\n' "$cr" "$pr"
printf 'floor/nokey: CPU %.2f, p50 %.2f (the least hit/nokey can be while net/http serves the replay)\n' "$fcr" "$fpr"
printf 'hit/floor CPU per round, consecutive windows: %s\n' "$hfc"
printf 'hit/floor CPU per round, the same window:     %s(goal: median <= 1.05)\n' "$hfp"
printf 'A/A control, floor/floor in the same window: %s(median %.3f)\n' "$aa" "$(echo "$aa" | median)"
printf 'hit/floor CPU per round, same window, both at GOGC=100: %s\n' "$hfg"
ratio_rounds "replay CPU/req vs net/http floor (HTTP, ${rate}/s, same window)" "$hfp" "<=" 1.05 \
  "A/A control $(echo "$aa" | median | xargs printf '%.3f'); consecutive windows: median $(echo "$hfc" | median | xargs printf '%.3f')"
ratio_rounds "replay CPU/req vs net/http floor, both at Go's default collector (GOGC=100)" "$hfg" "<=" 1.05 \
  "no goal: without reference/minheap's 16 MB heap floor, serve's 1.4 MB of library state is marked every thousand replays"
ratio "replay CPU/req vs nokey (HTTP, ${rate}/s)" "$cr" "<=" 0.8
ratio "replay p50 vs nokey p50 (HTTP, ${rate}/s)" "$pr" "<=" 0.9
ratio "net/http floor CPU/req vs nokey (bound for the above)" "$fcr" "<=" 0.8 "no goal: the least a replay in net/http costs"
ratio "net/http floor p50 vs nokey p50 (bound for the above)" "$fpr" "<=" 0.9 "no goal: the least a replay in net/http costs"
ratio "app replay allocs/op (benchmark: serve's hit path above net/http)" "$(awk '/^BenchmarkAppReplay/ {a=$7} END {print a}' "$raw")" "<=" 0
ratio "middleware hit allocs/op (benchmark)" "$(awk '/^BenchmarkMiddlewareHit/ {a=$7} END {print a}' "$raw")" "<=" 5 "was 30"
