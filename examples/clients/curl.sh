#!/bin/sh
# A client harness for `idemcheck client` in shell + curl (docs/clients.md):
#   idemcheck client --strict -- sh examples/clients/curl.sh
# One key per logical call, minted before the retry loop; the body built
# once; 409, 429, 5xx and lost answers retried with the same key and body,
# waiting Retry-After or a doubling back-off; 400 and 422 not retried.
set -u
calls=${IDEMCHECK_CALLS:-1}
parallel=${IDEMCHECK_PARALLEL:-1}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

call() { # $1: a scratch name
	key=$(cat /proc/sys/kernel/random/uuid)
	body='{"amount":1000,"currency":"usd","description":"curl harness"}'
	wait=0.1
	for attempt in 1 2 3 4 5; do
		code=$(curl -s -o "$tmp/$1.body" -D "$tmp/$1.head" -w '%{http_code}' --max-time 1 \
			-X POST "$IDEMCHECK_BASE_URL/v1/charges" \
			-H "Authorization: Bearer $IDEMCHECK_TOKEN" \
			-H 'Content-Type: application/json' \
			-H "Idempotency-Key: \"$key\"" \
			--data-binary "$body")
		case $code in
		2??)
			sed -n 's/.*"id":"\([^"]*\)".*/\1/p' "$tmp/$1.body"
			return 0 ;;
		000|409|429|5??) ;; # no answer, in flight, rate limited, transient: retry
		*) return 1 ;;      # 400, 422, ...: correct the request, do not resend it
		esac
		[ "$attempt" = 5 ] && return 1
		after=$(tr -d '\r' <"$tmp/$1.head" | sed -n 's/^[Rr]etry-[Aa]fter: *\([0-9][0-9]*\)$/\1/p')
		if [ -n "$after" ]; then sleep "$after"; else sleep "$wait"; fi
		wait=$(awk "BEGIN { print $wait * 2 }")
	done
}

worker() { # $1: worker number
	i=0
	while [ "$i" -lt "$calls" ]; do
		call "w$1c$i" || echo fail >>"$tmp/failed"
		i=$((i + 1))
	done
}

w=0
while [ "$w" -lt "$parallel" ]; do
	worker "$w" &
	w=$((w + 1))
done
wait
[ ! -e "$tmp/failed" ]
