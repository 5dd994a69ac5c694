# soak minimize on the examples (make proofs): every failing refunds seed of
# 0..7 minimizes to at most 2 turns and 1 fault (two agents on one dispute
# with no fault, or one agent with its lost reply or duplicate), one that
# keeps the lost reply to 1 turn, and each minimal plan replays to the
# fingerprint; every failing scheduled reservations seed of 0..3 to 2 turns
# and 1 preemption (two reads before two writes), and one by --seed N as
# well; the ledger's seed 9, whose mark and cancellation share a teaching
# round and whose clear is in the evening, to at most 3 (round, turn) pairs
# in at most 2 rounds, its story listing mark, cancel, clear in that order.
# Each with the default 3 tries a candidate.  The small test system (two
# faults together, bash and Python turns): tests/integration/minimize.sh.
. "$SOAK_ROOT/tests/integration/lib.sh"

# minimize CONFIG PLAN NAME: soak minimize, its output in $T/NAME.out; the
# plan at $T/NAME.min.json
minimize() {
	soak_rc rc minimize "$1" --plan "$2" --out "$T/$3.min.json" >"$T/$3.out" 2>"$T/$3.err"
	[ "$rc" -eq 0 ] || { tail -n 20 "$T/$3.out" "$T/$3.err"; fail "$3: minimize exit $rc"; }
	echo "figures: $3: $(grep -A2 '^1-minimal' "$T/$3.out" | tail -n 1)"
}

phase "refunds: every failing seed of 0..7"
RF=$ROOT/examples/refunds
DUP='at most one settled refund per dispute'
soak_rc rc run "$RF/soak.yaml" --seeds 0..7 --out "$T/rf" >"$T/rf.out" 2>&1
expect_eq "refunds run exit status" 1 "$rc"
n=0 lost=0
for f in "$T"/rf/failures/*/plan.json; do
	s=$(basename "$(dirname "$f")")
	minimize "$RF/soak.yaml" "$f" "rf$s"
	M=$T/rf$s.min.json
	turns=$(jq '.runs | length' "$M") faults=$(jq '[.proxies[].faults[]] | length' "$M")
	[ "$turns" -le 2 ] || fail "refunds seed $s: $turns turns kept"
	[ "$faults" -le 1 ] || fail "refunds seed $s: $faults faults kept"
	if [ "$(jq '[.proxies[].faults[] | select(.fault == "lost_reply")] | length' "$M")" -eq 1 ]; then
		expect_eq "refunds seed $s keeps its lost reply: its turns" 1 "$turns"
		lost=$((lost + 1))
	fi
	soak_rc rc replay "$RF/soak.yaml" --plan "$M" --out "$T/rfr" >"$T/rfr.out" 2>&1
	expect_eq "refunds seed $s: its minimal plan fails" 1 "$rc"
	grep -qF "\"$DUP\": BROKEN" "$T/rfr.out" || fail "refunds seed $s: the minimal plan broke another invariant"
	n=$((n + 1))
done
expect_ge "refunds seeds minimized" 1 "$n"
expect_ge "of them, ending at the lost reply" 1 "$lost"

phase "reservations (scheduled): every failing seed of 0..3"
RS=$ROOT/examples/reservations
soak_rc rc run "$RS/soak.yaml" --seeds 0..3 --out "$T/rs" >"$T/rs.out" 2>&1
expect_eq "reservations run exit status" 1 "$rc"
n=0
for f in "$T"/rs/failures/*/plan.json; do
	s=$(basename "$(dirname "$f")")
	minimize "$RS/soak.yaml" "$f" "rs$s"
	expect_match "reservations seed $s: 2 turns, 1 preemption" '^turns 8 → 2, faults 0 → 0, preemptions [0-9]+ → 1,' \
	    "$(grep -A2 '^1-minimal' "$T/rs$s.out" | tail -n 1)"
	expect_ge "explain: a step whose place matters (a read after the other's write passes)" 1 \
	    "$(grep -cE "^  step [0-9]+ of db, turn [0-9]+'s SELECT .* later \(after turn [0-9]+'s UPDATE .* — passes \(its place matters\)$" "$T/rs$s.out")"
	expect_eq "its story marks the preemption" 1 "$(grep -cE '^  \*  +[0-9]+\. round 0 turn [0-9]+ .*— preempts turn [0-9]+$' "$T/rs$s.out")"
	n=$((n + 1))
done
expect_ge "reservations seeds minimized" 1 "$n"
# --seed N: the plan made of the seed's own run, under ./soak-minimize/
set +e
(cd "$T" && exec "$SOAK" minimize "$RS/soak.yaml" --seed 1 --explain 0) >"$T/rss.out" 2>&1
rc=$?
set -e
expect_eq "reservations --seed 1: exit status" 0 "$rc"
expect_match "it names the seed" '^minimize seed 1 of reservations ' "$(head -n 1 "$T/rss.out")"
expect_eq "its plan beside, 2 turns" 2 "$(jq '.runs | length' "$T/soak-minimize/seed-1.plan.json")"

phase "ledger: seed 9, mark and cancel in a teaching hour, the clear in the evening"
LG=$ROOT/examples/ledger
soak_rc rc run "$LG/soak.yaml" --seeds 9..9 --out "$T/lg" >"$T/lg.out" 2>&1
expect_eq "ledger seed 9 fails" 1 "$rc"
minimize "$LG/soak.yaml" "$T/lg/failures/9/plan.json" lg9
M=$T/lg9.min.json
pairs=$(jq '.runs | length' "$M") rounds=$(jq '[.runs[][0]] | unique | length' "$M")
[ "$pairs" -le 3 ] || fail "ledger seed 9: $pairs (round, turn) pairs kept"
[ "$rounds" -le 2 ] || fail "ledger seed 9: $rounds rounds kept"
ops=$(sed -n 's/^      | r\([0-9]\)t[0-9] \([a-z]*\) .*: done$/\1 \2/p' "$T/lg9.out" | tr '\n' ' ')
echo "figures: ledger seed 9: the kept turns' operations, by round: $ops"
expect_match "the story: mark, cancel in one teaching round, clear in the evening" \
    '^([0-2]) mark \1 cancel [34] clear $' "$ops"
