# A fix that changes a statement (docs/plan.md "When a regression's plan
# diverges"): a bash turn of one psql -c per statement reads a counter and
# writes it back (UPDATE counter SET n = <read + 1>); a failing seed's plan
# is pinned; the fix writes UPDATE counter SET n = n + 1 instead, another
# statement (its key), so the plan's next step never comes.  The regression
# is judged by exploring its two turns within its plan's preemptions: it
# passes, naming the turn whose statements changed and at which step, and
# the run exits 0.  soak pin --refresh pins the explored schedule; the fix
# reverted, that plan diverges the other way and the race is found again
# (fail, exit 1), and so does the original plan (followed, fail).
. "$(dirname "$0")/lib.sh"

counter_schema "$T/counter.sql"
cat >"$T/turn.sh" <<'SH'
#!/bin/bash
set -eu
n=$(psql -XAtqc "SELECT n FROM counter WHERE id = 1")
if [ "${FIXED:-}" ]; then
	psql -Xqc "UPDATE counter SET n = n + 1 WHERE id = 1"
else
	psql -Xqc "UPDATE counter SET n = $((n + 1)) WHERE id = 1"
fi
psql -Xqc "INSERT INTO events (turn) VALUES ($SOAK_TURN)"
SH
chmod +x "$T/turn.sh"
printf '#!/bin/bash\nFIXED=1 exec "%s"\n' "$T/turn.sh" >"$T/fixed.sh"
chmod +x "$T/fixed.sh"
sched_cfg "$T/soak.yaml" counter 2 counter.sql "[./turn.sh]"
sched_cfg "$T/fixed.yaml" counter 2 counter.sql "[./fixed.sh]"
reg() { jq -r ".regressions[0] | $2" "$1/report.json"; }

phase "the lost count, pinned"
soak_rc rc run "$T/soak.yaml" --seeds 0..9 --workers 2 --out "$T/run" >"$T/run.out" 2>&1
expect_eq "the race's run" 1 "$rc"
seed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/run/report.json")
soak_rc rc pin "$T/run" --seed "$seed" --name lost-count >"$T/pin.out" 2>&1
expect_eq "soak pin" 0 "$rc"
R=$T/regressions/lost-count.json
cp "$R" "$T/orig.json"
# the plan's UPDATE: turn U's, step K (1-based)
read -r K U <<<"$(jq -r '.proxies.db.steps | to_entries | map(select(.value.what | startswith("UPDATE"))) |
    first | "\(.key + 1) \(.value.turn)"' "$R")"

phase "the fix changes the UPDATE: explored, a pass"
soak_rc rc run "$T/fixed.yaml" --seeds 0..0 --workers 1 --out "$T/fix" >"$T/fix.out" 2>&1
cat "$T/fix.out"
expect_eq "the fix: exit status" 0 "$rc"
expect_eq "report.json: a pass, judged by exploring" "pass 1" \
    "$(jq -r '"\(.regressions[0].verdict) \(.regression_totals.explored)"' "$T/fix/report.json")"
# Two turns of 3 statements each have 2, 6, 14, 18 and 20 schedules with at
# most 0..4 preemptions (docs/explore.md "How it works"): the exploration
# ran exactly those within the plan's own bound, no more.
read -r P X B <<<"$(reg "$T/fix" '.explored | "\(.preemptions) \(.executions) \(.complete)"')"
expect_eq "the schedules explored: all of those within the plan's $P preemptions" \
    "$(jq -n --argjson p "$P" '[2, 6, 14, 18, 20][$p]') true" "$X $B"
expect_match "the divergence names the turn and the plan's step of its first changed statement" \
    "^turn $U's statements changed at step $K( \(turn [01]'s too\))?\$" "$(reg "$T/fix" .explored.divergence)"
expect_match "the summary says it" \
    "PASS +lost-count — its plan diverged: turn $U's statements changed at step $K.*; [0-9]+ schedules? of turns 0,1 with ≤ [0-9]+ preemptions? explored, none fails" \
    "$(cat "$T/fix.out")"
expect_match "the proxy's account says what came instead" \
    "it wanted turn [01]'s UPDATE counter SET n = .*; instead turn [01] (sent|is at) its UPDATE counter SET n = n \+ [^;]*\(occurrence 0, no step of the plan\)" \
    "$(reg "$T/fix" .diverged)"

phase "the fix reverted: the race is found again"
soak_rc rc pin "$T/fix" --refresh lost-count >"$T/refresh.out" 2>&1
expect_eq "soak pin --refresh" 0 "$rc"
soak_rc rc run "$T/soak.yaml" --seeds 0..0 --workers 1 --out "$T/rev" >"$T/rev.out" 2>&1
expect_eq "reverted, the refreshed plan: the run fails" 1 "$rc"
expect_eq "the regression fails, judged by exploring" "fail invariant 1" \
    "$(jq -r '"\(.regressions[0].verdict) \(.regressions[0].reason) \(.regression_totals.explored)"' "$T/rev/report.json")"
expect_match "naming the divergence" "^its plan diverged: turn [01]'s statements changed at step [0-9]+" "$(reg "$T/rev" .message)"
cp "$T/orig.json" "$R"
soak_rc rc run "$T/soak.yaml" --seeds 0..0 --workers 1 --out "$T/rev2" >"$T/rev2.out" 2>&1
expect_eq "reverted, the original plan: it follows, and fails" "1 fail 0" \
    "$rc $(jq -r '"\(.regressions[0].verdict) \(.regression_totals.explored)"' "$T/rev2/report.json")"
echo "figures: regressions_changed.sh took ${SECONDS} s; the fix explored $(reg "$T/fix" .explored.executions) schedules of ≤ $(reg "$T/fix" .explored.preemptions) preemptions"
