# Ledger (seeds/002), the quick half of its proof: the double refund (mark,
# cancel, clear) is caught by the invariant that names it and replays.  The
# fixed system's 200 seeds and the mutants are tests/proofs/ledger.sh.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/ledger
NETS='a cancelled lesson nets to zero for every student'
OPS='operations fail only on cancelled lessons'


# The system as shipped.
phase "the ledger as shipped, seeds 0..19"
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
phase "replay of seed $first"
soak_rc rc replay "$EX/soak.yaml" --seed "$first" --out "$T/replay" >"$T/replay.out" 2>&1
grep -A4 'BROKEN' "$T/replay.out" | head -n 12
expect_eq "replay exit status" 1 "$rc"
expect_match "replay names the double refund" "\"$NETS\": BROKEN" "$(cat "$T/replay.out")"
expect_match "replay verdict" 'verdict: fail invariant' "$(cat "$T/replay.out")"
