# A seeded schedule at the database seam (docs/faults.md "Schedules"): the
# lost update of examples/reservations with 4 turns reading, thinking and
# writing the same rows through a `protocol: postgres` proxy under `schedule:
# pct`.  Every failing seed (the first 12) replays to the same verdict on the
# first try, with the same schedule: the same exchange at every step, the
# same turns waiting at each.  The decisions a timeout made (`forced`) are
# counted and printed: they are where a replay could diverge.  Then the same
# config without the schedule, for the kill rate beside it.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/reservations
INV='items_reserved matches reservation events'
WANT=12

sed -e 's/^turns: 8$/turns: 4/' -e "s#\./reserve_turn#$EX/reserve_turn#" \
    -e "s#schema: schema.sql#schema: $EX/schema.sql#" \
    -e 's/^      steps: 24 .*/      steps: 12/' \
    "$EX/scheduled.yaml" >"$T/sched.yaml"
grep -q '^turns: 4$' "$T/sched.yaml" || fail "the test config has not 4 turns"

phase "4 turns under schedule: pct, seeds 0..69"
soak_rc rc run "$T/sched.yaml" --seeds 0..69 --out "$T/run" >"$T/run.out" 2>"$T/run.err"
tail -n 6 "$T/run.out"
expect_eq "scheduled run exit status" 1 "$rc"
check_report "$T/run" 0 69
expect_eq "infra verdicts" 0 "$(jq .totals.infra "$T/run/report.json")"
nfail=$(jq .totals.fail "$T/run/report.json")
expect_ge "failing seeds (of 70)" "$WANT" "$nfail"
expect_eq "every failure is the lost update" "" "$(kills "$T/run" | grep -vF "$INV" || true)"
# The confirming re-run (another worker, the same seed) reproduced it.
expect_eq "confirming re-runs that did not reproduce" 0 \
    "$(jq '[.results[] | select(.reproduced == false)] | length' "$T/run/report.json")"

# One line per step: what went, and who was waiting.
steps() { jq -c 'select(.step != null) | [.step, .turn, .conn, .exchange, .cand, .sql, .forced]' "$1" | sort; }
# The replay's schedule of proxy db (lines "  STEP  turn T  SQL..."), read
# in the order printed: each step number one more than the last, and the
# race in it, a turn X's read, then another turn's read, then X's write
# (two interleaved reads before the writes).  Prints "X read at A, Y at B,
# X wrote at C", or a line that says what is wrong.
race_shown() {
	awk '
	/^schedule of proxy db / { on = 1; next }
	on && !/^ +[0-9]+  turn / { on = 0 }
	!on { next }
	{
		n++
		if ($1 != n) { print "step " $1 " printed as line " n; bad = 1; exit }
		t = $3
		if ($4 == "SELECT" && $5 == "items_reserved,") {
			for (x in open)
				if (x != t && !(x in pair)) { pair[x] = open[x] " " t " " $1 }
			open[t] = $1
		} else if ($4 == "UPDATE" && $5 == "orders" && (t in pair) && found == "") {
			split(pair[t], p, " ")
			found = "turn " t " read at " p[1] ", turn " p[2] " at " p[3] ", turn " t " wrote at " $1
		}
		if ($4 == "UPDATE")
			delete open[t]
	}
	END {
		if (bad) exit 1
		if (n == 0) { print "no schedule printed"; exit 1 }
		if (found == "") { print "no two reads before a write in " n " steps"; exit 1 }
		print found
	}' "$1"
}
forced=0 same=0 n=0 shown=0 first_two=0
cd "$T"
for seed in $(jq -r '[.results[] | select(.verdict == "fail") | .seed] | sort | .[]' "$T/run/report.json" | head -n "$WANT"); do
	n=$((n + 1))
	trace=$T/run/failures/$seed/trace.jsonl
	[ -s "$trace" ] || fail "seed $seed: no trace kept"
	[ "$(steps "$trace" | wc -l)" -gt 0 ] || fail "seed $seed: no scheduled step in its trace"
	soak_rc rc replay "$T/sched.yaml" --seed "$seed" --out "$T/r$seed" >"$T/r$seed.out" 2>&1
	[ "$rc" -eq 1 ] || { cat "$T/r$seed.out"; fail "seed $seed: replay exit $rc, not 1 (the lost update)"; }
	grep -qF "\"$INV\": BROKEN" "$T/r$seed.out" || fail "seed $seed: the replay broke another invariant"
	# The interleaving, printed in step order, holds the race.
	race=$(race_shown "$T/r$seed.out") || { sed -n '/^schedule of/,$p' "$T/r$seed.out"; fail "seed $seed: the replay's schedule: $race"; }
	expect_eq "seed $seed: steps in the replay's schedule" "$(steps "$trace" | wc -l)" \
	    "$(grep -cE '^ +[0-9]+  turn [0-9]+ ' "$T/r$seed.out")"
	shown=$((shown + 1))
	# Counted, not asserted: the race may open after another turn's whole
	# read-write (then the first UPDATE comes before the second read).
	first_two=$((first_two + $(awk '/^schedule of proxy db /{on=1; next} on && $4 == "UPDATE" {exit} on && $4 == "SELECT" && !($3 in t) {t[$3] = 1; c++} END {print (c >= 2) ? 1 : 0}' "$T/r$seed.out")))
	if cmp -s <(steps "$trace") <(steps "$T/r$seed/failures/$seed/workspace/trace.jsonl"); then
		same=$((same + 1))
	else
		diff <(steps "$trace") <(steps "$T/r$seed/failures/$seed/workspace/trace.jsonl") | head -n 8
	fi
	forced=$((forced + $(jq -s '[.[] | select(.forced != null)] | length' "$trace")))
done
expect_eq "failing seeds replayed" "$WANT" "$n"
expect_eq "replays whose printed schedule shows the race" "$WANT" "$shown"
echo "figures: the race in each replay's schedule, e.g. seed $seed: $race; $first_two of $n with two turns' reads before the first UPDATE"

# soak replay --trace says the same of the last one, and says where a
# schedule that left the run's did (a doctored run trace: step 3 had only
# turn 0 waiting).
soak_rc rc replay "$T/sched.yaml" --seed "$seed" --out "$T/rt" --trace "$trace" >"$T/rt.out" 2>&1
expect_eq "replay --trace exit status" 1 "$rc"
expect_match "replay --trace: the run's schedule" \
    '^schedule: the same as the run.s, all [0-9]+ steps$' "$(grep '^schedule:' "$T/rt.out")"
jq -c 'if .step == 3 then .cand = "1" else . end' "$trace" >"$T/doctored.jsonl"
soak_rc rc replay "$T/sched.yaml" --seed "$seed" --out "$T/rd" --trace "$T/doctored.jsonl" >"$T/rd.out" 2>&1
expect_match "replay --trace: where it left the run's" \
    '^schedule: left the run.s at step 3 of proxy db: the run admitted turn [0-9]+ .* with turns \{0\} waiting; this replay admitted turn [0-9]+ .* with turns \{[0-9,]+\} waiting' \
    "$(grep '^schedule:' "$T/rd.out")"
expect_eq "replays with the run's schedule, step for step" "$WANT" "$same"
# PCT's k is a bound on the steps of a seed: 4 turns x 3 statements (the
# read, the write, the event; BEGIN/COMMIT are not sent).  Its guarantee,
# 1/(n k^(d-1)) = 1/(4 * 12^2), is a floor far below what the race needs.
maxstep=$(cat "$T"/run/failures/*/trace.jsonl | jq -s '[.[] | .step // 0] | max')
[ "$maxstep" -ge 1 ] && [ "$maxstep" -le 12 ] ||
    fail "k = 12 should bound the steps of a seed, but a failing seed took $maxstep"
ok "the most steps of a failing seed: $maxstep (k = 12)"
echo "figures: $nfail of 70 seeds fail under pct (depth 3, k 12, at most $maxstep steps a seed; PCT's floor 1/(4*12^2) = 0.17 %); $same of $n failing seeds replay to the same verdict and schedule; $forced decisions forced by a timeout in their traces"

phase "the same turns without the schedule, seeds 0..39"
sed '/^proxies:/,/^turn:/{/^turn:/!d}' "$T/sched.yaml" >"$T/plain.yaml"
grep -q '^proxies:' "$T/plain.yaml" && fail "the plain config still has a schedule"
soak_rc rc run "$T/plain.yaml" --seeds 0..39 --out "$T/plain" >"$T/plain.out" 2>&1
check_report "$T/plain" 0 39
echo "figures: unscheduled, $(jq .totals.fail "$T/plain/report.json") of 40 seeds fail; $(jq '[.results[] | select(.reproduced == false)] | length' "$T/plain/report.json") confirming re-runs did not reproduce"

# The fix (SELECT ... FOR UPDATE) under the schedule: a turn's read waits on
# another's row lock.  The proxy asks PostgreSQL (pg_blocking_pids() on a
# connection of its own, the backend's pid from BackendKeyData) and, told
# the exchange waits on a lock, admits the next one (the holder's COMMIT),
# so nothing deadlocks and no clock decided: no exchange is forced by
# `blocked`, and a seed replayed twice takes the same steps with the same
# lock waits.
phase "the --lock fix under the schedule, seeds 0..9"
sed "s#command: \[$EX/reserve_turn\]#command: [$EX/reserve_turn, --lock]#" "$T/sched.yaml" >"$T/lock.yaml"
grep -q -- '--lock' "$T/lock.yaml" || fail "the lock config does not lock"
soak_rc rc run "$T/lock.yaml" --seeds 0..9 --out "$T/lock" -v >"$T/lock.out" 2>"$T/lock.err"
tail -n 3 "$T/lock.out"
expect_eq "the fix under the schedule: exit status (no deadlock, no timeout)" 0 "$rc"
check_report "$T/lock" 0 9
expect_eq "passing seeds of the fix" 10 "$(jq .totals.pass "$T/lock/report.json")"
waits=$(grep -c 'waits on a lock (held by turns {[0-9]' "$T/lock.err" || true)
expect_ge "lock waits PostgreSQL reported" 1 "$waits"
expect_eq "exchanges the blocked timeout decided" 0 "$(grep -c 'taken as waiting on a lock' "$T/lock.err" || true)"
lsteps() { jq -c 'select(.step != null) | [.step, .turn, .conn, .exchange, .cand, .sql, .forced, .waits_on]' "$1" | sort; }
# a seed with a lock wait, replayed twice: the same steps, the same waits
lseed=$(sed -n 's/.*seed \([0-9]*\): db.* waits on a lock .*/\1/p' "$T/lock.err" | head -n 1)
[ -n "$lseed" ] || fail "no seed named in the lock-wait log lines"
for i in 1 2; do
	soak_rc rc replay "$T/lock.yaml" --seed "$lseed" --keep --out "$T/lr$i" >"$T/lr$i.out" 2>&1
	expect_eq "the fix replayed (seed $lseed, try $i)" 0 "$rc"
	kept=$(sed -n 's/^workspace kept: //p' "$T/lr$i.out")
	[ -s "$kept/trace.jsonl" ] || fail "the fix's replay $i kept no trace (workspace '$kept')"
	lsteps "$kept/trace.jsonl" >"$T/lsteps$i"
	case $kept in /dev/shm/soak-replay-*/seed-*) rm -rf "${kept%/seed-*}" ;; esac
done
expect_ge "lock waits in the replay's schedule" 1 "$(grep -c '"[0-9a-f]*"\]$' "$T/lsteps1" || true)"
cmp -s "$T/lsteps1" "$T/lsteps2" || { diff "$T/lsteps1" "$T/lsteps2" | head; fail "two replays of the fix took different schedules"; }
ok "two replays of seed $lseed took the same $(wc -l <"$T/lsteps1") steps, lock waits included"
echo "figures: the --lock fix, 10 of 10 seeds pass under the schedule; $waits lock waits reported by PostgreSQL, none decided by the blocked timeout"

# A confirming re-run that does not reproduce, under a schedule: the report
# says where its schedule left the run's.  Turn 1 reserves and crashes the
# first time a seed runs; in the re-run it touches nothing, so its steps
# are missing and the others' come earlier.
phase "a re-run that does not reproduce: where its schedule left the run's"
sed "s#command: \[$EX/reserve_turn\]#command: [sh, -c, 'm=$T/mark-\$SOAK_SEED-\$SOAK_TURN; if [ -e \$m ]; then [ \$SOAK_TURN = 1 ] \&\& exit 0; exec $EX/reserve_turn; fi; : >\$m; $EX/reserve_turn; [ \$SOAK_TURN = 1 ] \&\& kill -SEGV \$\$; exit 0']#" \
    "$T/sched.yaml" >"$T/flaky.yaml"
grep -q 'kill -SEGV' "$T/flaky.yaml" || fail "the flaky config does not crash"
soak_rc rc run "$T/flaky.yaml" --seeds 0..0 --out "$T/flaky" >"$T/flaky.out" 2>"$T/flaky.err"
cat "$T/flaky.out"
expect_eq "flaky run exit status" 1 "$rc"
expect_eq "flaky re-run did not reproduce" false "$(jq '.results[0].reproduced' "$T/flaky/report.json")"
expect_match "the re-run's schedule, in report.json" \
    '^(left the run.s at step [0-9]+ of proxy db: the run admitted turn [0-9]+ .*; the re-run admitted|the same for [0-9]+ steps, then the run took)' \
    "$(jq -r '.results[0].confirm.schedule' "$T/flaky/report.json")"
expect_match "the summary says where" '^        its schedule: (left the run.s at step|the same for)' \
    "$(grep 'its schedule:' "$T/flaky.out")"

# A second round's turns are new processes: the scheduler waits for each to
# connect (up to arrival) rather than taking the first round's, which have
# closed, as done.  In round 2, turns 1-3 wait at a gate (a FIFO each: the
# open meets turn 0's) until turn 0 has done its work, so turn 0 is alone
# when the round begins: its first step must be a wait for the others that
# arrival ended, not an admission as if they had finished.
phase "two rounds: the second round's first step waits for its turns"
for t in 1 2 3; do mkfifo "$T/gate-$t"; done
cat >"$T/gated.sh" <<GATED
#!/bin/sh
if [ "\$SOAK_ROUND" = 1 ] && [ "\$SOAK_TURN" != 0 ]; then
	cat "$T/gate-\$SOAK_TURN" >/dev/null || exit 75
fi
$EX/reserve_turn
rc=\$?
if [ "\$SOAK_ROUND" = 1 ] && [ "\$SOAK_TURN" = 0 ]; then
	for t in 1 2 3; do
		timeout 4 sh -c ": >$T/gate-\$t" ||
		    echo "turn 0: turn \$t never came to its gate" >&2
	done
fi
exit \$rc
GATED
chmod +x "$T/gated.sh"
# (turns 1-3 wait on turn 0, which waits on the schedule: a circular wait
# the watchdog breaks at each of turn 0's steps, so it is short here)
sed -e 's/^rounds: 1$/rounds: 2/' -e "s#command: \[$EX/reserve_turn\]#command: [$T/gated.sh]#" \
    -e 's/^      blocked: 500ms/      arrival: 250ms\n      blocked: 500ms/' \
    "$T/sched.yaml" >"$T/rounds.yaml"
grep -q '^rounds: 2$' "$T/rounds.yaml" || fail "the two-round config has one round"
grep -q 'gated.sh' "$T/rounds.yaml" || fail "the two-round config's turns have no gate"
grep -q '^      arrival: 250ms$' "$T/rounds.yaml" || fail "the two-round config's watchdog is not 250ms"
soak_rc rc replay "$T/rounds.yaml" --seed 0 --keep --out "$T/rr" >"$T/rr.out" 2>&1
kept=$(sed -n 's/^workspace kept: //p' "$T/rr.out")
[ -s "$kept/trace.jsonl" ] || { tail "$T/rr.out"; fail "the two-round replay kept no trace"; }
first2=$(jq -c 'select(.step != null and .conn == 1) | [.step, .cand, .forced]' "$kept/trace.jsonl" | sort -t, -k1.2n | head -n 1)
[ -f "$kept/r1-t0/stderr.log" ] || fail "round 2's turn 0 left no stderr.log in $kept"
! grep -q 'never came to its gate' "$kept/r1-t0/stderr.log" ||
    fail "a gate of round 2 was never passed: $(cat "$kept/r1-t0/stderr.log")"
case $kept in */soak-replay*/seed-*|*/failures/*/workspace) rm -rf "$kept" ;; esac
expect_match "round 2's first step: turn 0 alone, after a wait for the others forced by arrival" \
    '^\[[0-9]+,"1","arrival"\]$' "$first2"
