#!/bin/bash
# A fulfilment agent's turn in bash: two reserve_items calls to the tool
# server over HTTP (through SOAK_PROXY_TOOLS), on orders drawn from
# SOAK_TURN_SEED, and the order read back after each with one psql per
# statement, beside the tool server (no connection held).  A call that
# fails (the tool's 409 or 500) fails the turn.
#
# The request is bash's own /dev/tcp, not curl: curl 7.88 waits for its
# reply in a poll that also holds the wake-up socketpair of its multi
# handle, a unix socket soak does not look into, so soak cannot tell a curl
# waiting on its reply from one doing something else, and every decision
# while it waits is the arrival watchdog's (README.md, "Why not curl").
set -euo pipefail
# the seed's last two digits (it is above bash's 63-bit arithmetic)
d=$((10#${SOAK_TURN_SEED: -2}))
orders="$((d % 2 + 1)) $((d / 2 % 2 + 1))"

call() {	# BODY: POST it to /reserve_items; the reply's body, or fail
	local body=$1 reply
	exec 3<>"/dev/tcp/${SOAK_PROXY_TOOLS%:*}/${SOAK_PROXY_TOOLS##*:}"
	printf 'POST /reserve_items HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
	    "$SOAK_PROXY_TOOLS" "${#body}" "$body" >&3
	reply=$(cat <&3)
	exec 3<&-
	case ${reply%%$'\r'*} in
	"HTTP/1."?" 200 "*) printf '%s\n' "${reply#*$'\r\n\r\n'}" ;;
	*) echo "reserve_items: ${reply%%$'\r'*}: ${reply#*$'\r\n\r\n'}" >&2; return 1 ;;
	esac
}

for order in $orders; do
	call "{\"order\": $order, \"turn\": $SOAK_TURN}" |
	    jq -r '"order \(.order): reserved \(.reserved), \(.items_reserved) in all"'
	echo "order $order: items_reserved now $(psql -XAtqc "SELECT items_reserved FROM orders WHERE id = $order")"
done
