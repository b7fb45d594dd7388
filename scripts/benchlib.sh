# Shared helpers of the bench-*.sh scripts (sourced, not run: its name
# does not match bench-*.sh, so scripts/bench.sh skips it).

freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }

waitport() {
  for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "port $1 did not open" >&2; return 1
}

# cpu_ms PID...: user+system CPU the processes used so far (all threads),
# in milliseconds; a process that is gone counts 0.
cpu_ms() {
  local tck total=0 p f
  tck=$(getconf CLK_TCK)
  for p in "$@"; do
    f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    f=${f##*) } # fields after the command name (which may hold spaces)
    set -- $f
    total=$((total + ${12} + ${13}))
  done
  echo $((total * 1000 / tck))
}

# group_cpu_ms PGID: CPU of every live process of a process group plus
# what its leader's exited children used (a PostgreSQL server: postmaster,
# backends, background workers), in milliseconds.
group_cpu_ms() {
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
  echo $((total * 1000 / tck))
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else print (NR%2)? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# ratio NAME VALUE OP GOAL [NOTE]: records one ratio of issue 13 for the
# table scripts/bench.sh prints (OP is <= or >=).
ratio() {
  local met
  met=$(awk -v v="$2" -v op="$3" -v g="$4" 'BEGIN { if (v == "nan" || v == "") print "n/a"; else if ((op == "<=" && v <= g) || (op == ">=" && v >= g)) print "met"; else print "MISSED" }')
  printf '%s\t%s\t%s %s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$met" "${5:-}" >>"$out/ratios.tsv"
}
