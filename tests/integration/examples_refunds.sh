# Refunds (seeds/000), the quick half of its proof: the duplicate refund is
# caught by the invariant that names it and its smallest seed replays with
# the same fault trace.  The fixed system's 200 seeds and the mutants are
# tests/proofs/refunds.sh.
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/refunds
DUP='at most one settled refund per dispute'


# The system as shipped: caught in (nearly) every seed.  Mutants run fewer
# seeds than the fixed system: each is caught in most of them.
phase "the refunds as shipped, seeds 0..9"
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
expect_match "summary names the replay command" "replay: ([^ ]*/)?soak replay .*soak.yaml --seed $first" \
    "$(cat "$T/buggy.out")"

# The replay fails the same way, with the same faults.
cd "$T"
phase "replay of seed $first"
soak_rc rc replay "$EX/soak.yaml" --seed "$first" --out "$T/replay" >"$T/replay.out" 2>&1
sed -n '/BROKEN/,/verdict/p' "$T/replay.out"
expect_eq "replay exit status" 1 "$rc"
expect_match "replay names the duplicate refund" "\"$DUP\": BROKEN" "$(cat "$T/replay.out")"
expect_match "replay verdict" 'verdict: fail invariant' "$(cat "$T/replay.out")"
# It prints the exchanges with a fault, and counts the others.
sed -n '/^fault trace (exchanges with a fault):$/,/^$/p' "$T/replay.out" |
    sed -e '1d' -e '/^$/d' >"$T/printed.txt"
grep -v '^(and ' "$T/printed.txt" >"$T/printed.jsonl" || true
grep -vF '"fault":"none"' "$trace" | cmp - "$T/printed.jsonl" ||
    fail "replay printed other faults than the run kept"
expect_eq "and the number of the others" \
    "(and $(grep -cF '"fault":"none"' "$trace") exchanges without a fault, not shown: -v shows every line; the workspace's trace.jsonl has them all)" \
    "$(grep '^(and ' "$T/printed.txt")"
cmp "$trace" "$T/replay/failures/$first/workspace/trace.jsonl" ||
    fail "replay kept another fault trace than the run kept"
ok "seed $first: the same $(wc -l <"$trace") fault decisions in the run and the replay"
