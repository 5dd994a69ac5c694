# A regression means "this bug stays fixed" (docs/plan.md "When a
# regression's plan diverges"): a failing seed of the reservations race
# (two turns) is pinned; under the compare-and-set fix (cas.yaml's turn)
# its plan diverges, and the regression is judged by exploring its turns
# within its plan's preemptions: complete and clean, it passes with its
# divergence named in the summary, report.json, junit, and the run exits 0.
# The --lock fix follows the plan (lock deferrals): judged as before, a
# pass.  soak pin --refresh pins the explored schedule; the fix reverted,
# the refreshed plan diverges the other way and the exploration finds the
# race again: it fails, with a failing schedule that replays, and that
# soak pin --refresh pins.  A budget too small for the tree is neither
# pass nor fail: infra/diverged, exit 2, said, not retried.
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/reservations
INV='items_reserved matches reservation events'

sed -e "s#\./reserve_turn#$EX/reserve_turn#" -e "s#schema: schema.sql#schema: $EX/schema.sql#" \
    -e 's/^turns: 8$/turns: 2/' -e '/^tickets:/,$d' "$EX/soak.yaml" >"$T/res.yaml"
grep -q '^turns: 2$' "$T/res.yaml" || fail "the test config has not 2 turns"
sed "s#command: \[$EX/reserve_turn\]#command: [$EX/reserve_turn, --cas]#" "$T/res.yaml" >"$T/cas.yaml"
sed "s#command: \[$EX/reserve_turn\]#command: [$EX/reserve_turn, --lock]#" "$T/res.yaml" >"$T/lock.yaml"
grep -q -- '--cas\]' "$T/cas.yaml" && grep -q -- '--lock\]' "$T/lock.yaml" ||
    fail "the fixed configs do not run the fixed turns"
reg() { jq -r ".regressions[0] | $2" "$1/report.json"; }

phase "the race, pinned"
soak_rc rc run "$T/res.yaml" --seeds 0..9 --workers 2 --out "$T/run" >"$T/run.out" 2>&1
expect_eq "the race's run" 1 "$rc"
seed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/run/report.json")
soak_rc rc pin "$T/run" --seed "$seed" --name lost >"$T/pin.out" 2>&1
expect_eq "soak pin" 0 "$rc"
R=$T/regressions/lost.json
cp "$R" "$T/lost.orig.json"

phase "the cas fix: its plan diverges, the exploration passes it"
soak_rc rc run "$T/cas.yaml" --seeds 0..0 --workers 1 --out "$T/cas" >"$T/cas.out" 2>&1
cat "$T/cas.out"
expect_eq "the cas fix: exit status" 0 "$rc"
expect_match "the summary line names the exploration" \
    'regressions: 1 pass, 0 fail, 0 diverged; 1 whose plan diverged, judged by exploring' "$(cat "$T/cas.out")"
expect_match "the summary names the divergence and what was explored" \
    "PASS +lost — its plan diverged: turn [01]'s statements changed at step [0-9]+.*; [0-9]+ schedules of turns 0,1 with ≤ [0-9]+ preemptions? explored, none fails" \
    "$(cat "$T/cas.out")"
expect_eq "report.json: a pass" "pass null" "$(reg "$T/cas" '"\(.verdict) \(.reason)"')"
expect_eq "report.json: regression_totals" '{"count":1,"pass":1,"fail":0,"diverged":0,"infra":0,"missing":0,"explored":1}' \
    "$(jq -c .regression_totals "$T/cas/report.json")"
expect_eq "report.json: explored, complete and clean" "true 0 changed 0,1" \
    "$(reg "$T/cas" '.explored | "\(.complete) \(.failing) \(.kind) \(.turns)"')"
expect_ge "report.json: executions explored" 2 "$(reg "$T/cas" .explored.executions)"
# the bound is the plan's own preemptions (its cand)
want=$(jq '[.proxies.db.steps as $s | range(1; $s | length) as $i | $s[$i - 1].turn as $a |
    select($a != $s[$i].turn and ([$s[$i:][] | select(.turn == $a)] | length) > 0 and
    ($s[$i].cand | index($a)) != null)] | length' "$R")
expect_eq "the bound: the plan's preemptions" "$want cand" "$(reg "$T/cas" '.explored | "\(.preemptions) \(.preemptions_from)"')"
grep -A2 'name="regression lost"' "$T/cas/junit.xml" | grep -q '<system-out>its plan diverged: turn' ||
    fail "junit: the pass does not name its divergence"
expect_eq "the new schedule is written" "refresh/lost.json" "$(reg "$T/cas" .refresh_plan)"
[ "$(jq -c '[.proxies.db.steps[].key] | unique' "$T/cas/refresh/lost.json")" != \
    "$(jq -c '[.proxies.db.steps[].key] | unique' "$R")" ] || fail "the new schedule names the old statements"
ok "the new schedule names the fix's statements"

phase "the --lock fix follows the plan: judged as before"
soak_rc rc run "$T/lock.yaml" --seeds 0..0 --workers 1 --out "$T/lock" >"$T/lock.out" 2>&1
expect_eq "the --lock fix: exit status" 0 "$rc"
expect_eq "the --lock fix: a pass" pass "$(reg "$T/lock" .verdict)"
expect_eq "the --lock fix: its plan followed (lock deferrals), nothing explored" 0 \
    "$(jq .regression_totals.explored "$T/lock/report.json")"

phase "soak pin --refresh: the new schedule"
soak_rc rc pin "$T/lock" --refresh lost >"$T/refresh0.out" 2>&1
expect_eq "a regression that did not diverge has none" 65 "$rc"
soak_rc rc pin "$T/cas" --refresh lost >"$T/refresh.out" 2>&1
cat "$T/refresh.out"
expect_eq "soak pin --refresh" 0 "$rc"
expect_eq "it keeps what the regression is about" "reservations|invariant|$INV" "$(jq -r .failure.fingerprint "$R")"
expect_eq "and says what it replaced" "$(sha256sum "$T/lost.orig.json" | cut -c1-64)" "$(jq -r .pinned.replaced "$R")"
soak_rc rc pin "$T/cas" --refresh lost >"$T/refresh2.out" 2>&1
expect_eq "refreshing again a file changed since that run" 73 "$rc"
soak_rc rc run "$T/cas.yaml" --seeds 0..0 --workers 1 --out "$T/cas2" >"$T/cas2.out" 2>&1
expect_eq "the refreshed plan under the fix: exit status" 0 "$rc"
expect_eq "it follows its plan now" "pass 0" "$(jq -r '"\(.regressions[0].verdict) \(.regression_totals.explored)"' "$T/cas2/report.json")"

phase "the fix reverted: the race is found again"
soak_rc rc run "$T/res.yaml" --seeds 0..0 --workers 1 --out "$T/rev" >"$T/rev.out" 2>&1
cat "$T/rev.out"
expect_eq "reverted: the run fails" 1 "$rc"
expect_eq "reverted: the regression fails on its invariant" "fail invariant" "$(reg "$T/rev" '"\(.verdict) \(.reason)"')"
expect_match "reverted: the failure names the divergence" "its plan diverged: turn [01]'s statements changed at step [0-9]+.*schedule [0-9]+ \([0-9 ]+\) fails" \
    "$(reg "$T/rev" .message)"
expect_eq "report.json: regression_totals" '{"count":1,"pass":0,"fail":1,"diverged":0,"infra":0,"missing":0,"explored":1}' \
    "$(jq -c .regression_totals "$T/rev/report.json")"
F=$T/rev/failures/regression-lost/plan.json
[ -s "$F" ] || fail "no failing schedule at $F"
expect_match "the summary's replay is the failing schedule's" "replay: .*soak replay .*res.yaml --plan .*failures/regression-lost/plan.json" "$(cat "$T/rev.out")"
soak_rc rc replay "$T/res.yaml" --plan "$F" --out "$T/rp" >"$T/rp.out" 2>&1
expect_eq "the failing schedule replays to the failure" 1 "$rc"
grep -qF "\"$INV\": BROKEN" "$T/rp.out" || fail "the failing schedule's replay broke another invariant"
ran=$(sha256sum "$R" | cut -c1-64)
soak_rc rc pin "$T/rev" --refresh lost >"$T/refresh3.out" 2>&1
expect_eq "soak pin --refresh of a failing exploration" 0 "$rc"
expect_eq "it pins the failing schedule" "$(jq -c '.proxies.db.steps | map([.turn, .key, .occ])' "$F")" \
    "$(jq -c '.proxies.db.steps | map([.turn, .key, .occ])' "$R")"
expect_eq "with the failure it found, and the hash it replaced" "reservations|invariant|$INV invariant $ran" \
    "$(jq -r '"\(.failure.fingerprint) \(.failure.reason) \(.pinned.replaced)"' "$R")"

phase "a budget too small: neither pass nor fail"
cp "$T/lost.orig.json" "$R"
printf 'regressions_explore_budget: 1\nretries: 2\n' >>"$T/cas.yaml"
soak_rc rc run "$T/cas.yaml" --seeds 0..0 --workers 1 --out "$T/small" >"$T/small.out" 2>&1
cat "$T/small.out"
expect_eq "an incomplete exploration: incomplete (2)" 2 "$rc"
expect_eq "report.json: infra diverged" "infra diverged" "$(reg "$T/small" '"\(.verdict) \(.reason)"')"
expect_match "it says why" 'the exploration of turns 0,1 with ≤ [0-9]+ preemptions? is incomplete, none of 1 schedules failing: the budget of 1 execution \(regressions_explore_budget\) ran out' \
    "$(reg "$T/small" .message)"
expect_eq "another worker would find the same: not retried" 1 "$(reg "$T/small" '.attempts | length')"
expect_eq "report.json: regression_totals" '{"count":1,"pass":0,"fail":0,"diverged":1,"infra":0,"missing":0,"explored":1}' \
    "$(jq -c .regression_totals "$T/small/report.json")"
grep -A1 'name="regression lost"' "$T/small/junit.xml" | grep -q '<error type="diverged" message="its plan diverged: turn' ||
    fail "junit: the incomplete exploration is not an error naming the divergence"
expect_match "the summary says why it is not a pass" 'INCOMPLETE: a regression whose plan diverged was not judged by a complete exploration' "$(cat "$T/small.out")"
echo "figures: regressions_fixed.sh took ${SECONDS} s; the cas fix explored $(reg "$T/cas" .explored.executions) schedules"
