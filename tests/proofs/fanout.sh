# The fan-out example (issue 34 item 7), the long half of its proof (make
# proofs): the lost credit caught in at least 19 of 20 seeds by each agent
# (Python threads, Node Promise.all over a pg.Pool); 10 failing seeds of
# each replayed by seed and by plan, each to the lost credit with the run's
# schedule step for step (at least 9 of 10 each way); the fix passes
# PROOF_SEEDS seeds (200: the default seeds) with the Python agent and a
# quarter as many with the Node one, no infra verdict, every agent ok; each
# mutant is caught by the invariant that names it (autocommit in at least 12
# of 20 seeds, the others 18).  The quick half:
# tests/integration/examples_fanout.sh.
. "$SOAK_ROOT/tests/integration/lib.sh"
EX=$ROOT/examples/fanout
PROOF_SEEDS=${PROOF_SEEDS:-200}
INV='the credit balance matches the ledger'
DUP='at most one settled refund per dispute'
cd "$T"

for a in py:soak node:node; do
	cfg=${a#*:}.yaml a=${a%%:*}
	phase "$a as shipped ($cfg), seeds 0..19"
	soak_rc rc run "$EX/$cfg" --seeds 0..19 --out "$T/$a" >"$T/$a.out" 2>"$T/$a.err"
	tail -n 8 "$T/$a.out"
	expect_eq "$a as shipped: exit status" 1 "$rc"
	check_report "$T/$a" 0 19
	expect_eq "$a as shipped: infra verdicts" 0 "$(jq .totals.infra "$T/$a/report.json")"
	expect_ge "$a as shipped: seeds (of 20) whose lost credit was caught" 19 "$(jq .totals.fail "$T/$a/report.json")"
	expect_eq "$a as shipped: every failure is the lost credit" "" "$(kills "$T/$a" | grep -vxF "$INV" || true)"
	same_seed=0 same_plan=0 n=0
	for seed in $(jq -r '[.results[] | select(.verdict == "fail") | .seed] | .[0:10] | .[]' "$T/$a/report.json"); do
		tr=$T/$a/failures/$seed/trace.jsonl
		n=$((n + 1))
		soak_rc rc replay "$EX/$cfg" --seed "$seed" --trace "$tr" --out "$T/r" >"$T/r.out" 2>&1
		if [ "$rc" = 1 ] && grep -q "\"$INV\": BROKEN" "$T/r.out" &&
		    grep -qE '^schedule: the same as the run.s, all [0-9]+ steps' "$T/r.out"; then
			same_seed=$((same_seed + 1))
		else
			echo "$a seed $seed by seed: exit $rc, $(grep -E '^schedule:' "$T/r.out")"
		fi
		rm -rf "$T/r"
		soak_rc rc replay "$EX/$cfg" --plan "$T/$a/failures/$seed/plan.json" --trace "$tr" \
		    --out "$T/r" >"$T/r.out" 2>&1
		if [ "$rc" = 1 ] && grep -q "\"$INV\": BROKEN" "$T/r.out" &&
		    grep -qE '^schedule: the same as the run.s, all [0-9]+ steps' "$T/r.out"; then
			same_plan=$((same_plan + 1))
		else
			echo "$a seed $seed by plan: exit $rc, $(grep -E '^schedule:' "$T/r.out")"
		fi
		rm -rf "$T/r"
	done
	expect_eq "$a: failing seeds replayed" 10 "$n"
	expect_ge "$a: replays by seed (of 10) failing again step for step" 9 "$same_seed"
	expect_ge "$a: replays by plan (of 10) failing again step for step" 9 "$same_plan"
	echo "figures: $a as shipped, $(jq .totals.fail "$T/$a/report.json") of 20 seeds caught in $(jq .wall_ms "$T/$a/report.json") ms, $(jq .coverage.forced.decisions "$T/$a/report.json") of $(jq .coverage.proxies.db.steps "$T/$a/report.json") decisions forced; replayed step for step $same_seed of 10 by seed, $same_plan of 10 by plan"
done

for v in fixed:$((PROOF_SEEDS - 1)) fixed-node:$((PROOF_SEEDS / 4 - 1)); do
	last=${v#*:} v=${v%:*}
	phase "$v over seeds 0..$last"
	soak_rc rc run "$EX/$v.yaml" --seeds 0..$last --out "$T/$v" >"$T/$v.out" 2>"$T/$v.err"
	tail -n 6 "$T/$v.out"
	expect_eq "$v run exit status" 0 "$rc"
	check_report "$T/$v" 0 "$last"
	expect_eq "$v passes" $((last + 1)) "$(jq .totals.pass "$T/$v/report.json")"
	expect_eq "$v agents that succeeded" $((last + 1)) "$(jq '[.results[].ok_turns] | add' "$T/$v/report.json")"
	echo "figures: $v, $(jq .totals.pass "$T/$v/report.json") of $((last + 1)) seeds pass in $(jq .wall_ms "$T/$v/report.json") ms; $(jq .coverage.proxies.db.lock_waits "$T/$v/report.json") lock waits"
done

# autocommit's window is one call's read and write, its own statements
# (the row lock ends with each): 13 of 20 seeds catch it; every batch has a
# repeated call, so the claim's mutants are caught in every seed.
for m in autocommit:12:"$INV" no-guard:18:"$DUP" unchecked:18:"$DUP"; do
	inv=${m#*:*:} least=${m#*:} least=${least%%:*} m=${m%%:*}
	phase "mutant $m, seeds 0..19"
	soak_rc rc run "$EX/mutants/$m.yaml" --seeds 0..19 --out "$T/$m" >"$T/$m.out" 2>"$T/$m.err"
	expect_eq "mutant $m: exit status" 1 "$rc"
	expect_ge "mutant $m: seeds (of 20) that caught it" "$least" "$(jq .totals.fail "$T/$m/report.json")"
	expect_eq "mutant $m: every kill is \"$inv\"" "" "$(kills "$T/$m" | grep -vxF "$inv" || true)"
	echo "figures: mutant $m killed in $(jq .totals.fail "$T/$m/report.json") of 20 seeds"
done
