#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME each (go test -fuzz takes one target
# per package per invocation). New crashers land in the package's
# testdata/fuzz/<Target>/ and then run as seeds in `make test`.
# Usage: scripts/fuzz.sh [FUZZTIME]   (default 2m)
set -euo pipefail
fuzztime=${1:-2m}
go=${GO:-go}
# package:target, one line per parser that takes outside input.
targets=(
  ./reference:FuzzParseKey
  ./reference:FuzzCanonicalJSON
  ./target:FuzzParseConfig
  ./scenarios:FuzzProblemShape
  ./load:FuzzParseThreshold
  ./load:FuzzParsePlan
  ./chaos:FuzzParseRule
  ./chaos:FuzzReadHistory
)
failed=()
for t in "${targets[@]}"; do
  pkg=${t%%:*} name=${t#*:}
  echo "== $name ($pkg) for $fuzztime"
  # -parallel 1 by default: the CI boxes have 2 cores shared with other jobs.
  log=$(mktemp)
  # -fuzzminimizetime: each new interesting input is minimized for up to
  # 60s by default, which starves short runs on large inputs (YAML configs).
  if $go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "${FUZZMINTIME:-200x}" \
      -parallel "${FUZZPARALLEL:-1}" "$pkg" >"$log" 2>&1; then
    grep -E '^fuzz: elapsed' "$log" | tail -n 1
  else
    tail -n 30 "$log"
    failed+=("$name")
  fi
  rm -f "$log"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, no crash"
