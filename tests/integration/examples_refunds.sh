# The proof of issue 4, refunds (seeds/000): the duplicate refund is caught
# by the invariant that names it, its smallest seed replays with the same
# fault trace, the fixed system passes 200 seeds doing real work, and each
# defence of the fix, removed alone, is caught.
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/refunds
DUP='at most one settled refund per dispute'


# The system as shipped: caught in (nearly) every seed.  Mutants run fewer
# seeds than the fixed system: each is caught in most of them.
soak_rc rc run "$EX/soak.yaml" --seeds 0..9 --out "$T/buggy" >"$T/buggy.out" 2>"$T/buggy.err"
tail -n 5 "$T/buggy.out"
expect_eq "buggy run exit status" 1 "$rc"
check_report "$T/buggy" 0 9
expect_eq "infra verdicts in the buggy run" 0 "$(jq .totals.infra "$T/buggy/report.json")"
expect_ge "seeds (of 10) that caught the duplicate refund" 8 "$(jq .totals.fail "$T/buggy/report.json")"
expect_eq "every failure names the duplicate refund" "" "$(kills "$T/buggy" | grep -vF "$DUP" || true)"
first=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/buggy/report.json")
trace=$T/buggy/failures/$first/trace.jsonl
[ -s "$trace" ] || fail "no fault trace kept for seed $first"
expect_match "summary names the replay command" "replay: soak replay .*soak.yaml --seed $first" \
    "$(cat "$T/buggy.out")"

# The replay fails the same way, with the same faults.
cd "$T"
soak_rc rc replay "$EX/soak.yaml" --seed "$first" --out "$T/replay" >"$T/replay.out" 2>&1
sed -n '/BROKEN/,/verdict/p' "$T/replay.out"
expect_eq "replay exit status" 1 "$rc"
expect_match "replay names the duplicate refund" "\"$DUP\": BROKEN" "$(cat "$T/replay.out")"
expect_match "replay verdict" 'verdict: fail invariant' "$(cat "$T/replay.out")"
sed -n '/^fault trace:$/,/^$/p' "$T/replay.out" | sed -e '1d' -e '/^$/d' >"$T/printed.jsonl"
cmp "$trace" "$T/printed.jsonl" || fail "replay printed another fault trace than the run kept"
cmp "$trace" "$T/replay/failures/$first/workspace/trace.jsonl" ||
    fail "replay kept another fault trace than the run kept"
ok "seed $first: the same $(wc -l <"$trace") fault decisions in the run and the replay"

# The fix holds over 200 seeds, and the guard shows the refunds were made.
soak_rc rc run "$EX/fixed.yaml" --out "$T/fixed" >"$T/fixed.out" 2>"$T/fixed.err"
tail -n 3 "$T/fixed.out"
expect_eq "fixed run exit status" 0 "$rc"
check_report "$T/fixed" 0 199
expect_eq "fixed passes" 200 "$(jq .totals.pass "$T/fixed/report.json")"
expect_eq "fixed infra" 0 "$(jq .totals.infra "$T/fixed/report.json")"
expect_ge "fixed turns that refunded (of 1600)" 1560 "$(jq '[.results[].ok_turns] | add' "$T/fixed/report.json")"
[ ! -e "$T/fixed/failures" ] || fail "fixed left a failures/ directory"

# Each defence, removed alone, is caught; KILLER is what must catch it.
mutant() {	# name, last seed, killer (a regex over kills)
	local out=$T/mutant-$1
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
