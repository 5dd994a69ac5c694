# examples/agent minimized (issue 37 item 4): soak minimize reduces the
# agent's failing seed 0 to one turn, the one model reply that matters
# (asking again after the tool timed out) and the one fault that matters
# (the provider's reply lost after it refunded); the minimized plan still
# fails, and the fix passes it.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/agent
[ -f "$EX/node_modules/openai/package.json" ] ||
    fail "examples/agent/node_modules/openai is not there: make deps installs it"
cd "$T"

phase "minimize seed 0"
soak_rc rc minimize "$EX/soak.yaml" --seed 0 --tries 1 --explain 0 --out "$T/min.json" >"$T/min.out" 2>&1
expect_eq "minimize exit status" 0 "$rc"
grep -q '^fails: agent|invariant|at most one settled refund per dispute' "$T/min.out" ||
    { cat "$T/min.out"; fail "seed 0 does not fail with the double refund"; }
expect_eq "turns left" 1 "$(jq '.runs | length' "$T/min.json")"
expect_eq "decisions left: one reply, one fault" 2 "$(jq '[.proxies[].faults[]] | length' "$T/min.json")"
expect_eq "the model's reply that matters" "POST /v1/chat/completions: the refund failed 1" \
    "$(jq -r '.proxies.llm.faults[0] | "\(.what) \(.reply)"' "$T/min.json")"
expect_eq "the fault that matters" "POST /refunds lost_reply" \
    "$(jq -r '.proxies.provider.faults[0] | "\(.what) \(.fault)"' "$T/min.json")"
expect_match "the story says what the model answered" 'llm POST /v1/chat/completions again — ok; the model: "the refund failed", reply 1' "$(cat "$T/min.out")"

phase "the minimized plan"
soak_rc rc replay "$EX/soak.yaml" --plan "$T/min.json" --out "$T/r" >"$T/r.out" 2>&1
expect_eq "replay --plan of the minimized plan" 1 "$rc"
soak_rc rc replay "$EX/fixed.yaml" --plan "$T/min.json" --out "$T/f" >"$T/f.out" 2>&1
expect_eq "the fix passes it" 0 "$rc"
