#!/bin/bash
# A fulfilment agent's turn in bash: two reserve_items calls to the tool
# server with curl (through SOAK_PROXY_TOOLS), on orders drawn from
# SOAK_TURN_SEED, and the order read back after each with one psql per
# statement, beside the tool server (no connection held).  A call that
# fails (the tool's 409 or 500) fails the turn.
set -euo pipefail
# the seed's last two digits (it is above bash's 63-bit arithmetic)
d=$((10#${SOAK_TURN_SEED: -2}))
orders="$((d % 2 + 1)) $((d / 2 % 2 + 1))"

for order in $orders; do
	curl -fsS -H 'Content-Type: application/json' \
	    -d "{\"order\": $order, \"turn\": $SOAK_TURN}" \
	    "http://$SOAK_PROXY_TOOLS/reserve_items" |
	    jq -r '"order \(.order): reserved \(.reserved), \(.items_reserved) in all"'
	echo "order $order: items_reserved now $(psql -XAtqc "SELECT items_reserved FROM orders WHERE id = $order")"
done
