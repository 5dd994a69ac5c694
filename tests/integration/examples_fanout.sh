# The fan-out example (issue 34 item 7, seeds/000's asyncio.gather of tool
# calls): one support agent's turn runs four issue_refund calls at once,
# each on a database connection of its own, and each reads the credit
# balance, then writes it back plus the refund.  For a Python agent
# (threads, psycopg2) and a Node agent (Promise.all over a pg.Pool): the
# lost credit is caught; failing seeds replay step for step by seed and by
# plan; soak minimize reduces a failing plan; soak explore says it cannot be
# complete (the turn's connections overlap); the fix passes; each mutant is
# caught.  Node's decisions are all forced by `arrival` today (V8's timers:
# examples/fanout/README.md#node), and this test says so.  The long
# proof: tests/proofs/fanout.sh.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/fanout
INV='the credit balance matches the ledger'
DUP='at most one settled refund per dispute'
/usr/bin/python3 -c 'import psycopg2' 2>/dev/null ||
    fail "python3-psycopg2 is not installed (make deps)"
[ -f "$EX/node_modules/pg/package.json" ] ||
    fail "examples/fanout/node_modules/pg is not there: make deps installs it"

# run NAME CONFIG SEEDS: soak run into $T/NAME, its status in rc
run() {
	phase "$1: $2, seeds $3"
	soak_rc rc run "$EX/$2" --seeds "$3" --out "$T/$1" >"$T/$1.out" 2>"$T/$1.err"
	tail -n 8 "$T/$1.out"
}

cd "$T"

# ---- Python: threads, a psycopg2 connection each ----
run py soak.yaml 0..5
expect_eq "Python as shipped: exit status" 1 "$rc"
check_report "$T/py" 0 5
expect_eq "Python as shipped: infra verdicts" 0 "$(jq .totals.infra "$T/py/report.json")"
expect_ge "Python as shipped: seeds (of 6) whose lost credit was caught" 5 "$(jq .totals.fail "$T/py/report.json")"
expect_eq "Python: every failure is the lost credit" "" "$(kills "$T/py" | grep -vxF "$INV" || true)"
expect_eq "Python: decisions forced by a timeout" 0 "$(jq .coverage.forced.decisions "$T/py/report.json")"
expect_ge "Python: steps on a lane other than 0 (the turn's other connections)" 1 \
    "$(cat "$T"/py/failures/*/trace.jsonl | jq -s '[.[] | select((.lane // 0) > 0)] | length')"
expect_ge "Python: steps marked overlap (connections open at once)" 1 \
    "$(cat "$T"/py/failures/*/trace.jsonl | jq -s '[.[] | select(.overlap == true)] | length')"
py_caught=$(jq .totals.fail "$T/py/report.json")
replays "$T/py" "$EX/soak.yaml" 2 "$INV"
py_seed=$by_seed py_plan=$by_plan py_tried=$tried

# soak minimize of one failing plan: its own fingerprint, 1-minimal
first=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/py/report.json")
phase "minimize the plan of Python seed $first"
soak_rc rc minimize "$EX/soak.yaml" --plan "$T/py/failures/$first/plan.json" --tries 1 --explain 0 \
    --out "$T/min.json" >"$T/min.out" 2>&1
tail -n 30 "$T/min.out"
expect_eq "minimize exit status (1-minimal)" 0 "$rc"
# True today: minimize's preemptions are a turn passed over while it
# waited, and with one turn a lane passed over is none, so it has nothing
# to take out of a fan-out turn's schedule
# (examples/fanout/README.md#what-soak-says-of-it).
expect_match "minimize: nothing to take out of one turn's lanes" \
    '^turns 1 → 1, faults 0 → 0, preemptions 0 → 0' "$(cat "$T/min.out")"
expect_match "minimize: the plan fails with the lost credit" "^fails: .*$INV" "$(cat "$T/min.out")"
soak_rc rc replay "$EX/soak.yaml" --plan "$T/min.json" --out "$T/rm" >"$T/rm.out" 2>&1
expect_eq "the minimized plan replays to the lost credit" 1 "$rc"
expect_match "the minimized plan: the lost credit" "\"$INV\": BROKEN" "$(cat "$T/rm.out")"
min_steps=$(jq '[.proxies.db.steps // [] | .[]] | length' "$T/min.json")
orig_steps=$(jq '[.proxies.db.steps // [] | .[]] | length' "$T/py/failures/$first/plan.json")

# soak explore: the turn's connections overlap, so no execution of it can
# be exact: it must not say complete
phase "explore Python seed $first"
soak_rc rc explore "$EX/soak.yaml" --seed "$first" --preemptions 1 --out "$T/x" >"$T/x.out" 2>&1
cat "$T/x.out"
expect_eq "explore: exit 2 (incomplete, none failed)" 2 "$rc"
expect_eq "explore: never complete" "" "$(grep -E '^complete' "$T/x.out" || true)"
expect_match "explore: it says the turn's connections were open at once" \
    '^incomplete: .*turn 0 had connections open at once at proxy db' "$(cat "$T/x.out")"

# ---- Node: Promise.all over a pg.Pool ----
run node node.yaml 0..3
expect_eq "Node as shipped: exit status" 1 "$rc"
check_report "$T/node" 0 3
expect_eq "Node as shipped: infra verdicts" 0 "$(jq .totals.infra "$T/node/report.json")"
expect_ge "Node as shipped: seeds (of 4) whose lost credit was caught" 3 "$(jq .totals.fail "$T/node/report.json")"
expect_eq "Node: every failure is the lost credit" "" "$(kills "$T/node" | grep -vxF "$INV" || true)"
# True today, and what the README says: V8's own timers keep Node in a
# timed wait, so every decision is the arrival watchdog's, and the summary
# names it.  When soak sees past them, this changes (and the README with it).
node_forced=$(jq .coverage.forced.decisions "$T/node/report.json")
node_steps=$(jq '[.coverage.proxies.db.steps] | add' "$T/node/report.json")
expect_eq "Node: every decision forced by arrival (V8's timers)" "$node_steps" "$node_forced"
expect_match "Node: the summary says the decisions were forced" \
    'decisions forced by arrival \(50ms\) went without turn 0' "$(cat "$T/node.out")"
node_caught=$(jq .totals.fail "$T/node/report.json")
replays "$T/node" "$EX/node.yaml" 2 "$INV"
node_seed=$by_seed node_plan=$by_plan node_tried=$tried

# ---- the fix, both agents; the mutants ----
run fixed fixed.yaml 0..5
expect_eq "the fix (Python): exit status" 0 "$rc"
expect_eq "the fix (Python): passing seeds" 6 "$(jq .totals.pass "$T/fixed/report.json")"
expect_ge "the fix (Python): lock waits the schedule saw (FOR UPDATE)" 1 \
    "$(jq '[.coverage.proxies.db.lock_waits] | add' "$T/fixed/report.json")"
run fixednode fixed-node.yaml 0..1
expect_eq "the fix (Node): exit status" 0 "$rc"
expect_eq "the fix (Node): passing seeds" 2 "$(jq .totals.pass "$T/fixednode/report.json")"

mutants=
for m in autocommit:"$INV" no-guard:"$DUP" unchecked:"$DUP"; do
	inv=${m#*:} m=${m%%:*}
	run "$m" "mutants/$m.yaml" 0..2
	expect_eq "mutant $m: exit status" 1 "$rc"
	expect_ge "mutant $m: seeds (of 3) that caught it" 2 "$(jq .totals.fail "$T/$m/report.json")"
	expect_eq "mutant $m: every kill is \"$inv\"" "" "$(kills "$T/$m" | grep -vxF "$inv" || true)"
	mutants="$mutants $m $(jq .totals.fail "$T/$m/report.json")/3"
done

echo "figures: Python caught $py_caught of 6, replayed step for step $py_seed of $py_tried by seed and $py_plan of $py_tried by plan, 0 forced; minimized plan $min_steps of $orig_steps steps; Node caught $node_caught of 4, $node_forced of $node_steps decisions forced, replayed step for step $node_seed of $node_tried by seed and $node_plan of $node_tried by plan; mutants:$mutants; explore: $(grep -E '^(complete|incomplete)' "$T/x.out" | head -n 1)"
