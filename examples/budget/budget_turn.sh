#!/bin/bash
# One campaign agent's turn in bash, as people write one: one psql per
# statement (no connection held between them), the model asked with curl.
# The same agent as budget_turn.py (see there).
#   budget_turn.sh           as shipped: read, ask, write back read - spend
#   budget_turn.sh --fixed   the conditional update and the spend in one
#                            statement; read and ask again when it took no row
set -euo pipefail
campaign="c$SOAK_TURN-$((SOAK_TURN_SEED % 1000))"

ask_model() {	# LEFT: how much the campaign should spend of it
	local q
	q=$(jq -cn --arg c "$campaign" --argjson left "$1" '{model: "planner",
	    messages: [{role: "system", content: "You plan marketing spend. Answer in JSON: {\"spend\": N}."},
	               {role: "user", content: "Campaign \($c): the budget has \($left) left. How much should it spend?"}]}')
	curl -sS --fail -m 30 -H 'Content-Type: application/json' -d "$q" \
	    "http://$SOAK_PROXY_MODEL/v1/chat/completions" |
	    jq -r '.choices[0].message.content | fromjson | .spend'
}

case "${1:-}" in
"")
	left=$(psql -XAtqc "SELECT remaining FROM budgets WHERE id = 1")
	spend=$(ask_model "$left")
	[ "$spend" -gt 0 ] || { echo "$campaign: nothing left to spend"; exit 0; }
	psql -Xqc "UPDATE budgets SET remaining = $((left - spend)) WHERE id = 1"
	psql -Xqc "INSERT INTO spends (budget_id, campaign, amount, turn)
	    VALUES (1, '$campaign', $spend, $SOAK_TURN)"
	echo "$campaign: spent $spend of $left"
	;;
--fixed)
	for _ in 1 2 3; do
		left=$(psql -XAtqc "SELECT remaining FROM budgets WHERE id = 1")
		spend=$(ask_model "$left")
		[ "$spend" -gt 0 ] || { echo "$campaign: nothing left to spend"; exit 0; }
		took=$(psql -XAtqc "WITH s AS (UPDATE budgets
		        SET remaining = remaining - $spend
		        WHERE id = 1 AND remaining >= $spend RETURNING id)
		    INSERT INTO spends (budget_id, campaign, amount, turn)
		    SELECT s.id, '$campaign', $spend, $SOAK_TURN FROM s RETURNING id")
		[ -z "$took" ] || { echo "$campaign: spent $spend"; exit 0; }
	done
	echo "$campaign: gave up: the budget kept moving"
	;;
*)
	echo "usage: budget_turn.sh [--fixed]" >&2
	exit 2
	;;
esac
