# The budget example (issue 35, seeds/001): campaign agents that read a
# budget, ask a model behind a soak proxy with latency: 300ms..1500ms, and
# write the budget back.  Under the database proxy's schedule the model's
# latency is recorded (the trace's latency_ms) and not slept: the lost
# update is caught in (nearly) every seed, by Python agents and by bash
# agents (one psql per statement, the model asked with curl); a failing
# seed replays step for step; the fix passes; a mutant is caught; soak check
# warns of a latency slept past turn.timeout and arrival.  The long proof
# (the fix over 200 seeds, every mutant): tests/proofs/budget.sh.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/budget
INV='the budget adds up'
/usr/bin/python3 -c 'import psycopg2' 2>/dev/null ||
    fail "python3-psycopg2 is not installed (make deps)"
for c in psql curl jq; do command -v $c >/dev/null || fail "$c is not installed (make deps)"; done

# run NAME CONFIG SEEDS: soak run into $T/NAME, its status in rc
run() {
	phase "$1: $2, seeds $3"
	soak_rc rc run "$EX/$2" --seeds "$3" --out "$T/$1" >"$T/$1.out" 2>"$T/$1.err"
	tail -n 12 "$T/$1.out"
}

run py soak.yaml 0..5
expect_eq "as shipped: exit status" 1 "$rc"
check_report "$T/py" 0 5
expect_eq "as shipped: infra verdicts" 0 "$(jq .totals.infra "$T/py/report.json")"
expect_ge "as shipped: seeds (of 6) whose lost spend was caught" 5 "$(jq .totals.fail "$T/py/report.json")"
expect_eq "every failure is the lost spend" "" "$(kills "$T/py" | grep -vxF "$INV" || true)"
expect_eq "as shipped: decisions forced by a timeout" 0 "$(jq .coverage.forced.decisions "$T/py/report.json")"
# every model call went through the proxy and drew its latency, recorded
first=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/py/report.json")
trace=$T/py/failures/$first/trace.jsonl
expect_eq "seed $first: model calls with a latency of 300..1500 ms in the trace" 6 \
    "$(jq -s '[.[] | select(.proxy == "model" and .latency_ms >= 300 and .latency_ms <= 1500)] | length' "$trace")"
# ... and not slept: slept, each call would hold the schedule (its step
# waits for the thinking agent), so a seed would take at least the sum of
# its calls' latencies; recorded, the seeds together take less than that
lat=$(jq -s '[.[] | select(.proxy == "model") | .latency_ms] | add' "$T"/py/failures/*/trace.jsonl)
took=$(jq '[.results[] | select(.verdict == "fail") | .duration_ms] | add' "$T/py/report.json")
[ "$took" -lt "$lat" ] || fail "the failing seeds took $took ms, no less than the $lat ms of model latency they drew: slept"
ok "the failing seeds took $took ms for $lat ms of model latency drawn"
# where the schedule's time went: each seed's waits, and the run's
expect_eq "as shipped: every record says its waits, at proxy db" '["db"]' \
    "$(jq -c '[.results[].waits.max_proxy] | unique' "$T/py/report.json")"
expect_eq "coverage.waits: the seeds and their steps" '[6,true]' \
    "$(jq -c '.coverage.waits | [.seeds, .steps >= 6 * 3]' "$T/py/report.json")"
expect_match "the summary says what the schedules waited" \
    "the schedules waited [0-9.]+m?s for their actors in 6 seeds, [0-9]+ % of those seeds'" \
    "$(cat "$T/py.out")"

phase "replay of seed $first with the run's trace"
cd "$T"
soak_rc rc replay "$EX/soak.yaml" --seed "$first" --out "$T/replay" --trace "$trace" >"$T/replay.out" 2>&1
expect_eq "replay exit status" 1 "$rc"
expect_match "replay names the lost spend" "\"$INV\": BROKEN" "$(cat "$T/replay.out")"
expect_match "replay keeps the run's schedule step for step" \
    "^schedule: the same as the run's, all [0-9]+ steps" "$(cat "$T/replay.out")"

run fixed fixed.yaml 0..5
expect_eq "the fix: exit status" 0 "$rc"
expect_eq "the fix: passing seeds" 6 "$(jq .totals.pass "$T/fixed/report.json")"
expect_eq "the fix: turns that succeeded" 36 "$(jq '[.results[].ok_turns] | add' "$T/fixed/report.json")"

run absolute mutants/absolute.yaml 0..3
expect_eq "mutant absolute: exit status" 1 "$rc"
expect_ge "mutant absolute: seeds (of 4) that caught it" 3 "$(jq .totals.fail "$T/absolute/report.json")"
expect_eq "mutant absolute: killed by the lost spend" "" "$(kills "$T/absolute" | grep -vxF "$INV" || true)"

run bash bash.yaml 0..3
expect_eq "bash agents as shipped: exit status" 1 "$rc"
expect_ge "bash agents: seeds (of 4) whose lost spend was caught" 3 "$(jq .totals.fail "$T/bash/report.json")"
expect_eq "bash agents: every failure is the lost spend" "" "$(kills "$T/bash" | grep -vxF "$INV" || true)"
expect_eq "bash agents: infra verdicts" 0 "$(jq .totals.infra "$T/bash/report.json")"

run bashfixed fixed-bash.yaml 0..3
expect_eq "bash agents, the fix: exit status" 0 "$rc"
expect_eq "bash agents, the fix: passing seeds" 4 "$(jq .totals.pass "$T/bashfixed/report.json")"

# A latency that must stay on the clock (a client timeout that must fire)
# and reaches turn.timeout and the schedule's arrival: check says both.
phase "soak check of a latency slept past turn.timeout and arrival"
cp -r "$EX" "$T/ex"
sed -e 's/^      latency: 300ms..1500ms$/      latency: 6s..25s\n      latency_real: true/' \
    "$EX/soak.yaml" >"$T/ex/real.yaml"
soak_rc rc check "$T/ex/real.yaml" >"$T/check.out" 2>"$T/check.err"
cat "$T/check.err"
expect_eq "check of a slept latency: exit status (warnings only)" 0 "$rc"
expect_match "check warns of turn.timeout" \
    "proxies\[1\]\.faults\.latency: warning: proxy model's latency reaches 25s, turn.timeout is 20s" \
    "$(cat "$T/check.err")"
expect_match "check warns of arrival" \
    "warning: proxy model's latency is slept \(latency_real\) and reaches 25s, proxy db's schedule.arrival is 2s" \
    "$(cat "$T/check.err")"
soak_rc rc check "$EX/soak.yaml" >"$T/check0.out" 2>"$T/check0.err"
expect_eq "check of the example: exit status" 0 "$rc"
expect_eq "check of the example: no warning (its latency is recorded, not slept)" "" \
    "$(grep -F 'warning' "$T/check0.err" || true)"
echo "figures: $(jq .totals.fail "$T/py/report.json") of 6 seeds caught (Python), $(jq .totals.fail "$T/bash/report.json") of 4 (bash); the seeds took $took ms for $lat ms of model latency drawn; $(jq -c .coverage.waits "$T/py/report.json")"
