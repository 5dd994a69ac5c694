# Refunds (seeds/000), the long half of its proof (make proofs): the fixed
# system passes PROOF_SEEDS seeds (200) doing real work, and each defence of the fix,
# removed alone, is caught.  The buggy system caught and replayed:
# tests/integration/examples_refunds.sh.
. "$SOAK_ROOT/tests/integration/lib.sh"
EX=$ROOT/examples/refunds
PROOF_SEEDS=${PROOF_SEEDS:-200}
LAST=$((PROOF_SEEDS - 1))
DUP='at most one settled refund per dispute'

# The fix holds over PROOF_SEEDS seeds, and the guard shows the refunds
# were made.
phase "the fixed refunds over $PROOF_SEEDS seeds"
soak_rc rc run "$EX/fixed.yaml" --seeds "0..$LAST" --out "$T/fixed" >"$T/fixed.out" 2>"$T/fixed.err"
tail -n 3 "$T/fixed.out"
expect_eq "fixed run exit status" 0 "$rc"
check_report "$T/fixed" 0 "$LAST"
expect_eq "fixed passes" "$PROOF_SEEDS" "$(jq .totals.pass "$T/fixed/report.json")"
expect_eq "fixed infra" 0 "$(jq .totals.infra "$T/fixed/report.json")"
expect_ge "fixed turns that refunded (of $((PROOF_SEEDS * 8)))" $((PROOF_SEEDS * 8 * 39 / 40)) "$(jq '[.results[].ok_turns] | add' "$T/fixed/report.json")"
[ ! -e "$T/fixed/failures" ] || fail "fixed left a failures/ directory"

# Each defence, removed alone, is caught; KILLER is what must catch it.
mutant() {	# name, last seed, killer (a regex over kills)
	local out=$T/mutant-$1
	phase "mutant $1, seeds 0..$2"
	soak_rc rc run "$EX/mutants/$1.yaml" --seeds "0..$2" --out "$out" >"$out.out" 2>"$out.err"
	expect_eq "mutant $1 exit status" 1 "$rc"
	expect_eq "mutant $1 infra" 0 "$(jq .totals.infra "$out/report.json")"
	expect_eq "mutant $1 killed only by /$3/" "" "$(kills "$out" | grep -vE "$3" || true)"
	ok "mutant $1 killed in $(jq .totals.fail "$out/report.json") of $(($2 + 1)) seeds: $(kills "$out" | sort | uniq -c | tr -s ' ' | paste -sd ';')"
}
mutant no-key 4 "^guard$|^every settled refund is in the agent's books$"
mutant no-unique 19 "^$DUP$"
mutant no-reaper 2 '^no job left in_progress with an expired lease$'
mutant racy-credit 19 '^every balance equals the sum of its credit log$'
