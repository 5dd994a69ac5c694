# examples/agent (issue 37 item 4): a refund agent written against the
# openai SDK (npm, pinned in examples/agent/package.json, installed by make
# deps), its model the stand-in of agent.model.yaml, its tool calling the
# refunds provider through a proxy that loses replies.  The bug (a tool
# that timed out after the refund landed, a model that asks again, no
# idempotency key) is caught; its smallest failing seed replays to the same
# conversation -- the model's replies and the faults, exchange by exchange
# -- by seed and by plan; the fix passes the bug's plan and the seeds.
# (Minimizing it: examples_agent_min; its cassette: examples_agent_cassette.)
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/agent
[ -f "$EX/node_modules/openai/package.json" ] ||
    fail "examples/agent/node_modules/openai is not there: make deps installs it"
command -v node >/dev/null || fail "no node here: make deps"
cd "$T"

# The conversation of a seed, from its trace: each exchange's proxy, turn,
# occurrence, fault and the model's reply, in a fixed order.
story() {
	jq -c '[.proxy, .turn, .occ, .fault, .model, .alt]' "$1" | sort | tr -d '\n'
}

phase "the bug, caught"
soak_rc rc run "$EX/soak.yaml" --seeds 0..3 --out "$T/run" >"$T/run.out" 2>&1
expect_eq "run exit status" 1 "$rc"
expect_eq "no infra" 0 "$(jq '[.results[] | select(.verdict == "infra")] | length' "$T/run/report.json")"
expect_ge "failing seeds" 1 "$(jq '[.results[] | select(.verdict == "fail")] | length' "$T/run/report.json")"
expect_eq "every failure is the double refund" "" "$(jq -r '.results[] | select(.verdict == "fail") | .invariants[].name' "$T/run/report.json" | grep -v 'at most one settled refund per dispute' || true)"
seed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/run/report.json")
want=$(story "$T/run/failures/$seed/trace.jsonl")
expect_match "seed $seed: the model, told the refund failed, asked again" '"the refund failed",1' "$want"
expect_match "seed $seed: a reply the provider sent was lost" '"provider",[0-9]+,[0-9]+,"lost_reply"' "$want"

phase "replayed by seed"
soak_rc rc replay "$EX/soak.yaml" --seed "$seed" --keep --out "$T/rs" >"$T/rs.out" 2>&1
expect_eq "replay of seed $seed" 1 "$rc"
kept=$(sed -n 's/^workspace kept: //p' "$T/rs.out")
expect_eq "the same conversation, exchange by exchange" "$want" "$(story "$kept/trace.jsonl")"

phase "replayed by plan"
P=$T/run/failures/$seed/plan.json
expect_ge "the plan keeps the model's reply" 1 "$(jq '[.proxies.llm.faults[] | select(.reply > 0)] | length' "$P")"
soak_rc rc replay "$EX/soak.yaml" --plan "$P" --out "$T/rp" >"$T/rp.out" 2>&1
expect_eq "replay --plan of seed $seed" 1 "$rc"
grep -q '"at most one settled refund per dispute": BROKEN' "$T/rp.out" || fail "replay --plan broke something else"

phase "the fix"
soak_rc rc replay "$EX/fixed.yaml" --plan "$P" --out "$T/fp" >"$T/fp.out" 2>&1
expect_eq "the fix passes the bug's plan" 0 "$rc"
soak_rc rc run "$EX/fixed.yaml" --seeds 0..3 --out "$T/fix" >"$T/fix.out" 2>&1
expect_eq "the fix passes seeds 0..3" 0 "$rc"
expect_ge "lost replies the fix met, and survived" 1 "$(jq .coverage.proxies.provider.faults.lost_reply "$T/fix/report.json")"
