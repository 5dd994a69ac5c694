# The proof of issue 4, ledger (seeds/002): the double refund (mark, cancel,
# clear) is caught by the invariant that names it and replays, the fixed
# system passes 200 seeds of rounds of concurrent operations while doing
# real work, and each defence of the fix, removed alone, is caught.
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/ledger
NETS='a cancelled lesson nets to zero for every student'
OPS='operations fail only on cancelled lessons'


# The system as shipped.
soak_rc rc run "$EX/soak.yaml" --seeds 0..19 --out "$T/buggy" >"$T/buggy.out" 2>"$T/buggy.err"
tail -n 5 "$T/buggy.out"
expect_eq "buggy run exit status" 1 "$rc"
check_report "$T/buggy" 0 19
expect_eq "infra verdicts in the buggy run" 0 "$(jq .totals.infra "$T/buggy/report.json")"
expect_ge "seeds (of 20) that caught the double refund" 2 "$(jq .totals.fail "$T/buggy/report.json")"
expect_eq "every failure breaks \"$NETS\"" "" "$(kills "$T/buggy" | grep -vF "$NETS" || true)"
first=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/buggy/report.json")
jq -e --arg n "$NETS" '.invariants[] | select(.name == $n) | .rows | length > 0' \
    "$T/buggy/failures/$first/result.json" >/dev/null || fail "no violating rows kept for seed $first"

# The replay fails the same way.
cd "$T"
soak_rc rc replay "$EX/soak.yaml" --seed "$first" --out "$T/replay" >"$T/replay.out" 2>&1
grep -A4 'BROKEN' "$T/replay.out" | head -n 12
expect_eq "replay exit status" 1 "$rc"
expect_match "replay names the double refund" "\"$NETS\": BROKEN" "$(cat "$T/replay.out")"
expect_match "replay verdict" 'verdict: fail invariant' "$(cat "$T/replay.out")"

# The fix holds over 200 seeds; most operations did something.
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
