# The ambiguous commit (examples/commit; docs/faults.md, match): `match:
# '^COMMIT'` with lost_reply in front of the database.  The client as shipped
# retries the whole transaction as a new payment and pays twice, caught by
# the invariant that names it; the faults hit COMMITs only; the smallest
# failing seed replays with the same trace; the fixed client (one idempotency
# key, ON CONFLICT DO NOTHING) passes.
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/commit
INV='each turn pays once'

phase "the commit example as shipped, seeds 0..7"
soak_rc rc run "$EX/soak.yaml" --seeds 0..7 --out "$T/buggy" >"$T/buggy.out" 2>"$T/buggy.err"
tail -n 5 "$T/buggy.out"
expect_eq "buggy run exit status" 1 "$rc"
check_report "$T/buggy" 0 7
expect_eq "infra verdicts in the buggy run" 0 "$(jq .totals.infra "$T/buggy/report.json")"
expect_ge "seeds (of 8) that caught the double payment" 7 "$(jq .totals.fail "$T/buggy/report.json")"
expect_eq "every failure names the double payment" "" "$(kills "$T/buggy" | grep -vF "$INV" || true)"
first=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/buggy/report.json")
trace=$T/buggy/failures/$first/trace.jsonl
[ -s "$trace" ] || fail "no fault trace kept for seed $first"
# the faults landed on COMMITs only, each with the COMMIT forwarded and its
# reply withheld: the server committed, the client never heard
expect_eq "faulted exchanges that are not a COMMIT" 0 \
    "$(jq -s '[.[] | select(.fault != "none" and .sql != "COMMIT")] | length' "$trace")"
expect_ge "lost COMMIT replies in seed $first" 1 \
    "$(jq -s '[.[] | select(.fault == "lost_reply" and .sql == "COMMIT" and .upstream_saw and (.client_got_reply | not))] | length' "$trace")"
expect_eq "statements with a literal value in the trace" 0 \
    "$(jq -s '[.[] | select((.sql // "") | test("r[0-9]+-t"))] | length' "$trace")"

cd "$T"
phase "replay of seed $first"
soak_rc rc replay "$EX/soak.yaml" --seed "$first" --out "$T/replay" >"$T/replay.out" 2>&1
expect_eq "replay exit status" 1 "$rc"
expect_match "replay names the double payment" "\"$INV\": BROKEN" "$(cat "$T/replay.out")"
# the start-up's byte counts carry the run's own role and schema names
strip() { jq -c 'if .pg == "startup" then del(.bytes_up, .bytes_down) else . end' "$1"; }
cmp <(strip "$trace") <(strip "$T/replay/failures/$first/workspace/trace.jsonl") ||
    fail "replay kept another fault trace than the run kept"
ok "seed $first: the same $(wc -l <"$trace") exchanges in the run and the replay"

phase "the fixed client, seeds 0..15"
soak_rc rc run "$EX/fixed.yaml" --seeds 0..15 --out "$T/fixed" >"$T/fixed.out" 2>"$T/fixed.err"
tail -n 3 "$T/fixed.out"
expect_eq "fixed run exit status" 0 "$rc"
check_report "$T/fixed" 0 15
expect_eq "passing seeds of the fix" 16 "$(jq .totals.pass "$T/fixed/report.json")"
