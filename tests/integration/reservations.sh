# Reservations (seeds/001), the quick half of its proof: the lost update is
# caught by its invariant in (nearly) every one of the first 30 seeds (the
# turns' statements go through a seeded schedule, mode random: 100 of 100
# seeds failed here), a confirming re-run fails the same way, and each of
# six failing seeds replays to the same verdict on the first try, with the
# run's schedule.  The fixed variants: tests/proofs/reservations.sh.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/reservations

soak_rc rc run "$EX/soak.yaml" --seeds 0..29 --out "$T/buggy" >"$T/buggy.out" 2>"$T/buggy.err"
cat "$T/buggy.out"
expect_eq "buggy run exit status" 1 "$rc"
check_report "$T/buggy" 0 29
fails=$(jq '.totals.fail' "$T/buggy/report.json")
# 50 of 50 in every run of 50 here, with two CPU burners too; 49 once at a
# load average of 12.  27 of 30 leaves room for a machine busier than
# that, and no room for a check that catches the bug only now and then.
expect_ge "seeds (of 30) that caught the lost update" 27 "$fails"
expect_eq "every failure is the invariant" \
    '["items_reserved matches reservation events"]' \
    "$(jq -c '[.results[] | select(.verdict=="fail") | .invariants[].name] | unique' "$T/buggy/report.json")"
expect_eq "fingerprint" '["reservations|invariant|items_reserved matches reservation events"]' \
    "$(jq -c '[.results[] | select(.verdict=="fail") | .fingerprint] | unique' "$T/buggy/report.json")"
expect_eq "infra verdicts in the buggy run" 0 "$(jq .totals.infra "$T/buggy/report.json")"
first=$(jq '[.results[] | select(.verdict=="fail") | .seed] | min' "$T/buggy/report.json")
[ -f "$T/buggy/failures/$first/result.json" ] || fail "failures/$first/result.json missing"
expect_eq "turn outcomes kept for seed $first" 8 \
    "$(jq '.turns | length' "$T/buggy/failures/$first/result.json")"
[ -d "$T/buggy/failures/$first/workspace/r0-t0" ] || fail "workspace of seed $first not kept"
jq -e '.invariants[0].rows | length > 0' "$T/buggy/failures/$first/result.json" >/dev/null ||
    fail "no violating rows kept"
expect_match "summary names the replay command" "replay: ([^ ]*/)?soak replay .*soak.yaml --seed $first" \
    "$(cat "$T/buggy.out")"

# One ticket for the one bug, titled with the smallest seed.
expect_eq "ticket files" 1 "$(ls "$T/buggy/tickets"/*.md | wc -l)"
expect_match "ticket title" "soak: \"items_reserved matches reservation events\" broken — seed $first" \
    "$(cat "$T/buggy/tickets"/*.md)"
# The smallest seed was re-run once, and the bug came back; the report, the
# summary and the ticket say so.
expect_eq "re-run of seed $first reproduced it" true \
    "$(jq ".results[] | select(.seed == $first) | .reproduced" "$T/buggy/report.json")"
expect_match "summary says the re-run reproduced it" "a confirming re-run reproduced it" "$(cat "$T/buggy.out")"
expect_match "ticket says the re-run reproduced it" \
    "Confirming re-run of seed $first: \*\*reproduced\*\* \(worker [0-9]+\)" \
    "$(cat "$T/buggy/tickets"/*.md)"

# One replay fails the same way.  The seed fixes everything soak decides
# (which order each turn reserves, its think time); the think time keeps
# the windows open wide enough that the overlap is not left to the kernel.
cd "$T"
soak_rc rc replay "$EX/soak.yaml" --seed "$first" >"$T/replay.out" 2>&1
cat "$T/replay.out"
expect_eq "replay exit status" 1 "$rc"
expect_match "replay names the broken invariant" \
    '"items_reserved matches reservation events": BROKEN' "$(cat "$T/replay.out")"
expect_match "replay verdict" 'verdict: fail invariant' "$(cat "$T/replay.out")"

# Six more failing seeds, each replayed once: the same verdict, and the
# same schedule as the run's (soak replay --trace says so).
same=0 n=0
for seed in $(jq -r '[.results[] | select(.verdict == "fail") | .seed] | sort | .[1:7] | .[]' "$T/buggy/report.json"); do
	n=$((n + 1))
	soak_rc rc replay "$EX/soak.yaml" --seed "$seed" --out "$T/r$seed" \
	    --trace "$T/buggy/failures/$seed/trace.jsonl" >"$T/r$seed.out" 2>&1
	[ "$rc" -eq 1 ] || { tail -n 20 "$T/r$seed.out"; fail "seed $seed: replay exit $rc, not 1 (the lost update)"; }
	grep -q '^schedule: the same as the run.s' "$T/r$seed.out" && same=$((same + 1))
done
expect_eq "failing seeds replayed" 6 "$n"
expect_eq "replays with the run's schedule" 6 "$same"
echo "figures: $fails of 30 seeds fail under the random schedule; $n of $n failing seeds replayed fail on the first try, $same with the run's schedule"
