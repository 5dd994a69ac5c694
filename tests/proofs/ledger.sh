# Ledger (seeds/002), the long half of its proof (make proofs): the fixed
# system passes 200 seeds of rounds of concurrent operations while doing
# real work, and each defence of the fix, removed alone, is caught.  The
# buggy system caught and replayed: tests/integration/examples_ledger.sh.
. "$SOAK_ROOT/tests/integration/lib.sh"
EX=$ROOT/examples/ledger
NETS='a cancelled lesson nets to zero for every student'
OPS='operations fail only on cancelled lessons'

# The fix holds over 200 seeds; most operations did something.
phase "the fixed ledger over 200 seeds"
soak_rc rc run "$EX/fixed.yaml" --out "$T/fixed" >"$T/fixed.out" 2>"$T/fixed.err"
tail -n 3 "$T/fixed.out"
expect_eq "fixed run exit status" 0 "$rc"
check_report "$T/fixed" 0 199
expect_eq "fixed passes" 200 "$(jq .totals.pass "$T/fixed/report.json")"
expect_eq "fixed infra" 0 "$(jq .totals.infra "$T/fixed/report.json")"
total=$(jq '[.results[].total_turns // 40] | add' "$T/fixed/report.json")
expect_ge "fixed operations that succeeded (of $total)" $((total * 3 / 4)) \
    "$(jq '[.results[].ok_turns] | add' "$T/fixed/report.json")"
[ ! -e "$T/fixed/failures" ] || fail "fixed left a failures/ directory"

# Each defence, removed alone, is caught; the regex says by what.
mutant() {	# name, last seed, killer
	local out=$T/mutant-$1
	phase "mutant $1, seeds 0..$2"
	soak_rc rc run "$EX/mutants/$1.yaml" --seeds "0..$2" --out "$out" >"$out.out" 2>"$out.err"
	expect_eq "mutant $1 exit status" 1 "$rc"
	expect_eq "mutant $1 infra" 0 "$(jq .totals.infra "$out/report.json")"
	expect_eq "mutant $1 killed only by /$3/" "" "$(kills "$out" | grep -vE "$3" || true)"
	ok "mutant $1 killed in $(jq .totals.fail "$out/report.json") of $(($2 + 1)) seeds: $(kills "$out" | sort | uniq -c | tr -s ' ' | paste -sd ';')"
}
mutant no-cancel-guard 19 "^$OPS$"
mutant no-unique 19 "^$NETS"
mutant no-share-lock 39 "^$NETS|$OPS"
mutant no-pay-check 2 '^each provider payment is credited at most once$'
mutant no-freeze-check 4 '^a frozen student is never charged$'
