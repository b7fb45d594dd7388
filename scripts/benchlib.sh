# Shared helpers of the bench-*.sh scripts (sourced, not run: its name
# does not match bench-*.sh, so scripts/bench.sh skips it).

freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }

waitport() {
  for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "port $1 did not open" >&2; return 1
}

# cpu_us PID...: CPU the processes used so far, in microseconds, read in
# nanoseconds from the scheduler (/proc/PID/task/*/schedstat: the time
# each thread ran, exact, not sampled at clock ticks); a process that is
# gone counts 0. Threads that exited are not counted: Go's runtime keeps
# its threads, so for the Go processes measured here none is lost.
cpu_us() {
  local p ns=0 t
  for p in "$@"; do
    t=$(cat /proc/"$p"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }') || t=0
    ns=$((ns + ${t:-0}))
  done
  echo $((ns / 1000))
}

# group_cpu_us PGID: CPU of every live process of a process group plus
# what its leader's exited children used (a PostgreSQL server: postmaster,
# backends, background workers), in microseconds. Exited children are
# only known in clock ticks (/proc/PID/stat cutime, cstime), so this one
# is tick-precise.
group_cpu_us() {
  local tck total=0 pg=$1 s f
  tck=$(getconf CLK_TCK)
  for s in /proc/[0-9]*/stat; do
    f=$(cat "$s" 2>/dev/null) || continue
    f=${f##*) }
    set -- $f
    if [ "$3" = "$pg" ]; then total=$((total + ${12} + ${13})); fi
  done
  if f=$(cat "/proc/$pg/stat" 2>/dev/null); then
    f=${f##*) }
    set -- $f
    total=$((total + ${14} + ${15}))
  fi
  echo $((total * 1000000 / tck))
}

# sample_cpu PID FILE: in the background, until PID exits, appends
# "unix_ns cpu_ns" to FILE every 20 ms (PID's CPU read as cpu_us does), so
# that window_cpu_per_req can take the CPU of the measured window alone,
# not of the load's preflight, warm-up and oracle probes around it.
sample_cpu() {
  python3 - "$1" "$2" <<'PY' &
import glob, os, sys, time
pid, out = sys.argv[1], sys.argv[2]
with open(out, "w", buffering=1) as f:
    while os.path.exists(f"/proc/{pid}"):
        ns = 0
        for p in glob.glob(f"/proc/{pid}/task/*/schedstat"):
            try:
                ns += int(open(p).read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        f.write(f"{time.time_ns()} {ns}\n")
        time.sleep(0.02)
PY
}

# window_cpu_per_req FILE JSON PATH: CPU per request (µs) of the process
# sample_cpu watched, over the measured window of the load report JSON:
# from the first sample after the window opened + 0.1 s to the last one
# before it closed − 0.1 s, divided by the requests sent in that span
# (the open model sends at the planned rate, so the window's requests
# times the span's share of it).
window_cpu_per_req() {
  python3 - "$1" "$2" "$3" <<'PY'
import datetime, json, sys
d = json.load(open(sys.argv[2]))
st = d["started"]
whole, frac = st.rstrip("Z").split(".")
t0 = int(datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.timezone.utc).timestamp()) * 10**9 + int(frac.ljust(9, "0")[:9])
t1 = t0 + int(d["duration_s"] * 1e9)
s = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 2]
inside = [x for x in s if t0 + 10**8 <= x[0] <= t1 - 10**8]
if len(inside) < 2:
    print("nan"); sys.exit()
(a, ca), (b, cb) = inside[0], inside[-1]
reqs = d["paths"][sys.argv[3]]["requests"] * (b - a) / (t1 - t0)
print((cb - ca) / 1000 / reqs if reqs > 0 else "nan")
PY
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else print (NR%2)? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# ratio NAME VALUE OP GOAL [NOTE]: records one ratio with a goal for the
# table scripts/bench.sh prints (OP is <= or >=); the sixth column names
# the script that measured it (internal/benchsmoke counts them).
ratio() {
  local met
  met=$(awk -v v="$2" -v op="$3" -v g="$4" 'BEGIN { if (v == "nan" || v == "") print "n/a"; else if ((op == "<=" && v <= g) || (op == ">=" && v >= g)) print "met"; else print "MISSED" }')
  printf '%s\t%s\t%s %s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$met" "${5:-}" "$(basename "$0" .sh)" >>"$out/ratios.tsv"
}

# per_round "A-VALUES" "B-VALUES": the ratios A/B of values paired by
# round ("nan" where B is not positive), space-separated.
per_round() { paste <(echo "$1" | tr ' ' '\n' | grep -v '^$') <(echo "$2" | tr ' ' '\n' | grep -v '^$') | awk '{ printf "%s ", ($2 > 0 ? $1 / $2 : "nan") }'; }

# median_interval "VALUES": the distribution-free interval of the median
# from order statistics, "LO HI CONFIDENCE": the narrowest pair x(k),
# x(n+1-k) whose coverage is still at least 95 % (a binomial(n, 1/2)
# tail), or min and max with their own coverage when fewer than 6 values
# allow no 95 % pair.
median_interval() {
  tr ' ' '\n' | grep -v '^$' | sort -g | awk '
    { v[NR] = $1 }
    END {
      n = NR; k = 1; cover = 1 - 2 * 0.5 ^ n; tail = 0.5 ^ n; c = 1; below = 0
      # below: P(B < j), j = 1, 2, ...; k: the largest j with 2 P(B < j) <= 0.05.
      for (j = 1; j <= n / 2; j++) {
        below += c * tail            # adds P(B = j-1)
        if (2 * below > 0.05) break
        k = j; cover = 1 - 2 * below
        c = c * (n - j + 1) / j
      }
      printf "%s %s %.3f\n", v[k], v[n + 1 - k], cover
    }'
}

# ratio_rounds NAME "PER-ROUND VALUES" OP GOAL [NOTE]: records the median of
# per-round ratios like ratio, with their spread (min-max) and the median's
# interval (median_interval) in the note. When that interval holds the
# goal, one run cannot tell met from missed, and the note says the run
# does not decide (more rounds or a quieter machine do).
ratio_rounds() {
  local m sp note
  m=$(echo "$2" | median)
  sp=$( (echo "$2" | tr ' ' '\n' | grep -v '^$' | sort -g; echo "$2" | median_interval) | awk '
    NR == 1 { lo = $1 } NF == 1 { hi = $1; n++ } NF == 3 { a = $1; b = $2; c = $3 }
    END { printf "%d rounds %.3f-%.3f, median in %.3f-%.3f (%.0f %%)", n, lo, hi, a, b, 100 * c }')
  undecided "$2" "$3" "$4" && sp="$sp; the goal is inside: undecided"
  note=$sp
  [ -n "${5:-}" ] && note="$sp; $5"
  ratio "$1" "$m" "$3" "$4" "$note"
}

# run_rounds MAX CHECK...: the script's one_round for rounds 1..$rounds,
# then for one more at a time while the command CHECK succeeds (a goal
# still inside its interval), up to MAX; $rounds ends as the count run.
run_rounds() {
  local max=$1 r
  shift
  for r in $(seq "$rounds"); do one_round "$r"; done
  while [ "$rounds" -lt "$max" ] && "$@"; do
    rounds=$((rounds + 1))
    one_round "$rounds"
  done
}

# undecided "VALUES" OP GOAL: true while the median's interval holds the
# goal (a script may then add rounds, up to its bound).
undecided() {
  echo "$1" | median_interval | awk -v op="$2" -v g="$3" '
    { open = (op == "<=") ? ($1 <= g && $2 > g) : ($1 < g && $2 >= g); exit !open }'
}
