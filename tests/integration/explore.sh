# Every interleaving up to a bound (docs/explore.md): soak explore on 2 turns
# of reservations whose read, write and event touch the same order (seed 1):
# with no bound exactly C(6,3) = 20 executions, all distinct; with at most 2
# preemptions exactly 14, 1 gives 6, 0 gives 2; the lost update is found, and
# a failing schedule's plan replays to the same fingerprint.  The --lock fix:
# complete, 0 fail, with lock waits.  A budget says incomplete (exit 2, never
# a pass).  A bash turn of one `psql -c` per statement, the least convenient
# kind (no connection between statements), explored the same way: 20
# schedules, its lost update found, and every execution exact (its
# connections never overlap).
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/reservations
INV='items_reserved matches reservation events'

sed -e "s#\./reserve_turn#$EX/reserve_turn#" -e "s#schema: schema.sql#schema: $EX/schema.sql#" \
    -e 's/^turns: 8$/turns: 2/' "$EX/soak.yaml" >"$T/res.yaml"
grep -q '^turns: 2$' "$T/res.yaml" || fail "the test config has not 2 turns"
sed "s#command: \[$EX/reserve_turn\]#command: [$EX/reserve_turn, --lock]#" "$T/res.yaml" >"$T/lock.yaml"
grep -q -- '--lock' "$T/lock.yaml" || fail "the lock config runs no --lock"

x() { jq -r "$2" "$T/$1/explore.json"; }
xc() { jq -c "$2" "$T/$1/explore.json"; }

phase "no bound: every interleaving, C(6,3) = 20"
soak_rc rc explore "$T/res.yaml" --seed 1 --preemptions -1 --no-reduce --out "$T/all" >"$T/all.out" 2>&1
cat "$T/all.out"
expect_eq "exit status (a failing schedule found)" 1 "$rc"
expect_eq "executions" 20 "$(x all .executions)"
expect_eq "distinct schedules" 20 "$(x all .distinct_schedules)"
expect_eq "complete" true "$(x all .complete)"
expect_eq "steps per execution (3 a turn)" "6 6" "$(x all '"\(.steps.min) \(.steps.max)"')"
expect_ge "failing schedules (the lost update)" 1 "$(x all .failing)"
expect_eq "failing + passing = executions" 20 "$(( $(x all .failing) + $(x all .passing) ))"
expect_match "the result says its bound and that it is complete" \
    '^complete: all schedules of turns all — 20 explored, [0-9]+ fail$' "$(cat "$T/all.out")"
expect_eq "nothing forced by a timeout" 0 "$(x all .inexact.forced)"
expect_eq "nothing diverged" 0 "$(x all .inexact.diverged)"
expect_eq "every failing schedule written as a plan" "$(x all .failing)" "$(x all '.failing_schedules | length')"

phase "a failing schedule replays by its plan to the same fingerprint"
P=$(x all '.failing_schedules[0].plan')
fp=$(x all '.failing_schedules[0].fingerprint')
expect_match "its fingerprint is the lost update's" "$INV" "$fp"
expect_eq "the plan file carries it" "$fp" "$(jq -r .failure.fingerprint "$P")"
soak_rc rc replay "$T/res.yaml" --plan "$P" --out "$T/r1" >"$T/r1.out" 2>&1
expect_eq "replay --plan of the failing schedule" 1 "$rc"
grep -qF "\"$INV\": BROKEN" "$T/r1.out" || { tail -20 "$T/r1.out"; fail "the plan's replay broke another invariant"; }
expect_match "the replay followed the plan" '^plan: followed; 0 unplanned' "$(grep '^plan:' "$T/r1.out")"
# the command explore printed, run as printed
printed=$(grep -A 1 '^  failing schedule 1:' "$T/all.out" | tail -n 1 | sed 's/^ *//')
expect_match "the printed command names this soak" "^$SOAK replay " "$printed"
soak_printed() { eval "$printed --out $T/r2"; }
rc=0; soak_printed >"$T/r2.out" 2>&1 || rc=$?
expect_eq "the printed replay command, run as printed: the failure again" 1 "$rc"

phase "reduction: sleep sets find the same failing classes in fewer executions"
soak_rc rc explore "$T/res.yaml" --seed 1 --preemptions -1 --out "$T/red" >"$T/red.out" 2>&1
cat "$T/red.out"
expect_eq "reduced: exit status" 1 "$rc"
expect_eq "reduced: the mode" "sleep sets" "$(x red .reduction)"
expect_eq "reduced: complete" true "$(x red .complete)"
expect_eq "without reduction: 20 schedules in 14 classes (the two reads commute)" 14 "$(x all .classes)"
expect_eq "reduced: one execution a class" "14 14" "$(x red '"\(.executions) \(.classes)"')"
expect_eq "reduced: the same failing classes as without" "$(xc all .failing_classes)" "$(xc red .failing_classes)"
expect_eq "no class held both verdicts (the rule held), without reduction" 0 "$(x all .classes_mixed)"
expect_eq "no class held both verdicts, reduced" 0 "$(x red .classes_mixed)"
expect_ge "reduced: branches pruned as equivalent" 1 "$(x red .pruned_equivalent)"
expect_match "it says the bound as classes" '^complete: all schedules up to equivalence of turns all — 14 explored' "$(cat "$T/red.out")"

phase "--workers 2: two executors, the same tree"
soak_rc rc explore "$T/res.yaml" --seed 1 --preemptions -1 --no-reduce --workers 2 --out "$T/w2" >"$T/w2.out" 2>&1
expect_eq "two executors: exit status" 1 "$rc"
expect_match "two executors said" '^  2 executors at work$' "$(cat "$T/w2.out")"
expect_eq "two executors: the same counts as one" "$(x all '"\(.executions) \(.failing) \(.classes)"')" \
    "$(x w2 '"\(.executions) \(.failing) \(.classes)"')"
expect_eq "two executors: the same failing classes" "$(xc all .failing_classes)" "$(xc w2 .failing_classes)"
soak_rc rc explore "$T/res.yaml" --seed 1 --preemptions -1 --workers 2 --out "$T/w2r" >"$T/w2r.out" 2>&1
expect_eq "two executors, reduced: one execution a class" "14 14" "$(x w2r '"\(.executions) \(.classes)"')"
expect_eq "two executors, reduced: the same failing classes" "$(xc all .failing_classes)" "$(xc w2r .failing_classes)"
echo "figures: one executor $(x all .seconds) s, two $(x w2 .seconds) s for the same 20 executions"

phase "bounded: at most 2, 1, 0 preemptions"
# symlinks planted in the output folder are replaced, never followed
echo "not explore's" >"$T/victim"
mkdir "$T/p1" "$T/victimdir"
for f in explore.json explore.json.tmp explore.jsonl; do ln -s "$T/victim" "$T/p1/$f"; done
ln -s "$T/victimdir" "$T/p1/failing"
for pc in "2 14" "1 6" "0 2"; do
	set -- $pc
	soak_rc rc explore "$T/res.yaml" --seed 1 --preemptions "$1" --out "$T/p$1" >"$T/p$1.out" 2>&1
	[ "$(x "p$1" .executions)" = "$2" ] && [ "$(x "p$1" .complete)" = true ] || cat "$T/p$1.out"
	expect_eq "P=$1: executions" "$2" "$(x "p$1" .executions)"
	expect_eq "P=$1: complete" true "$(x "p$1" .complete)"
	expect_ge "P=$1: branches beyond the bound counted" 1 "$(x "p$1" .beyond_bound)"
	[ "$1" != 0 ] || expect_eq "P=0: exit 0 (complete, none failed)" 0 "$rc"
	echo "figures: P=$1: $(grep -E '^complete' "$T/p$1.out")"
done
expect_ge "P=2 still finds the lost update" 1 "$(x p2 .failing)"
expect_eq "planted symlinks: what they pointed to is untouched" "not explore's" "$(cat "$T/victim")"
expect_eq "planted symlinks: the folder they pointed to is empty" "" "$(ls "$T/victimdir")"
[ -f "$T/p1/explore.json" ] && [ ! -L "$T/p1/explore.json" ] && [ ! -L "$T/p1/explore.jsonl" ] &&
    [ -d "$T/p1/failing" ] && [ ! -L "$T/p1/failing" ] || fail "explore wrote through a planted symlink"
expect_ge "P=1: failing plans written in its own failing/" 1 "$(ls "$T/p1/failing" | wc -l)"
expect_eq "P=0 runs each turn to its end: no lost update" 0 "$(x p0 .failing)"

phase "the --lock fix: complete, 0 fail"
soak_rc rc explore "$T/lock.yaml" --seed 1 --preemptions -1 --out "$T/lock" >"$T/lock.out" 2>&1
cat "$T/lock.out"
expect_eq "the fix: exit status" 0 "$rc"
expect_eq "the fix: complete" true "$(x lock .complete)"
expect_eq "the fix: failing" 0 "$(x lock .failing)"
expect_ge "the fix: executions" 2 "$(x lock .executions)"
expect_eq "the fix: 5 steps a turn" 10 "$(x lock .steps.max)"
expect_eq "the fix, reduced (the default without a bound)" "sleep sets" "$(x lock .reduction)"
soak_rc rc explore "$T/lock.yaml" --seed 1 --preemptions -1 --no-reduce --out "$T/lockn" >"$T/lockn.out" 2>&1
[ "$rc" = 0 ] || cat "$T/lockn.out"
expect_eq "the fix without reduction: exit status" 0 "$rc"
expect_eq "the fix: the same classes either way" "$(x lockn .classes)" "$(x lock .classes)"
[ "$(x lock .executions)" -lt "$(x lockn .executions)" ] ||
    fail "the reduction ran $(x lock .executions) executions of the fix, not fewer than $(x lockn .executions)"
ok "the fix: $(x lock .executions) executions reduced, $(x lockn .executions) without, $(x lock .classes) classes"

phase "ledger: the share-lock mutant on the two turns that race, one round"
# seed 1's round 0: turn 2 cancels lesson 2 while turn 4 marks it; without
# the share lock the mark's charge escapes the cancellation's reversal
LG=$ROOT/examples/ledger
soak_rc rc explore "$LG/mutants/no-share-lock.yaml" --seed 1 --turns 2,4 --rounds 0 --preemptions 0 --out "$T/lg0" >"$T/lg0.out" 2>&1
expect_eq "the mutant, P=0: complete, none fails (the race needs a preemption)" "0 true 0" "$rc $(x lg0 .complete) $(x lg0 .failing)"
soak_rc rc explore "$LG/mutants/no-share-lock.yaml" --seed 1 --turns 2,4 --rounds 0 --preemptions 1 --out "$T/lg1" >"$T/lg1.out" 2>&1
cat "$T/lg1.out"
expect_eq "the mutant, P=1: found" 1 "$rc"
expect_ge "the mutant, P=1: failing schedules" 1 "$(x lg1 .failing)"
expect_match "the mutant, P=1: its fingerprint" 'a cancelled lesson nets to zero' "$(x lg1 '.failing_schedules[0].fingerprint')"
expect_eq "the mutant, P=1: 2 x 7 steps of round 0, 2 + 12 schedules" 14 "$(x lg1 .executions)"
expect_eq "one round: its rounds are said" 0 "$(x lg1 .round)"
soak_rc rc explore "$LG/fixed.yaml" --seed 1 --turns 2,4 --rounds 0 --preemptions 2 --out "$T/lgf" >"$T/lgf.out" 2>&1
[ "$rc" = 0 ] || cat "$T/lgf.out"
expect_eq "the fixed ledger, P=2: exit 0" 0 "$rc"
expect_eq "the fixed ledger, P=2: complete, 0 fail" "true 0" "$(x lgf .complete) $(x lgf .failing)"
echo "figures: ledger: $(grep -E '^complete' "$T/lg1.out"); fixed: $(grep -E '^complete' "$T/lgf.out")"

phase "a budget: incomplete, never a pass"
soak_rc rc explore "$T/lock.yaml" --seed 1 --preemptions -1 --budget 3 --out "$T/bud" >"$T/bud.out" 2>&1
expect_eq "budget of 3: exit 2 (incomplete, none failed)" 2 "$rc"
expect_eq "budget of 3: executions" 3 "$(x bud .executions)"
expect_eq "budget of 3: not complete" false "$(x bud .complete)"
expect_ge "budget of 3: branches left" 1 "$(x bud .unexplored)"
expect_match "it says why and how deep" '^incomplete: the budget after 3 executions .* unexplored, the deepest at step [0-9]+' "$(cat "$T/bud.out")"

phase "a bash turn, one psql -c per statement"
cat >"$T/schema.sql" <<'SQL'
CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO counter VALUES (1, 0);
CREATE TABLE bumps (turn int NOT NULL);
SQL
cat >"$T/bump.sh" <<'SH'
#!/bin/bash
# read, write, log: three connections, one statement each, nothing held between
set -e
n=$(psql -XAtq -c "SELECT n FROM counter WHERE id = 1")
psql -Xq -c "UPDATE counter SET n = $((n + 1)) WHERE id = 1"
psql -Xq -c "INSERT INTO bumps VALUES ($SOAK_TURN)"
SH
chmod +x "$T/bump.sh"
cat >"$T/bash.yaml" <<YAML
name: bash-counter
seeds: 0..0
turns: 2
database:
  schema: $T/schema.sql
  reset: recreate
proxies:
  - name: db
    upstream: database
    protocol: postgres
    schedule:
      mode: random
turn:
  command: [$T/bump.sh]
  timeout: 20s
invariants:
  - name: one bump each
    sql: SELECT n, (SELECT count(*) FROM bumps) AS bumps FROM counter WHERE n <> (SELECT count(*) FROM bumps)
YAML
soak_rc rc explore "$T/bash.yaml" --seed 0 --preemptions -1 --out "$T/bash" >"$T/bash.out" 2>&1
cat "$T/bash.out"
expect_eq "bash: exit status (the lost update)" 1 "$rc"
expect_eq "bash: executions (reduced: 20 schedules, 14 classes)" 14 "$(x bash .executions)"
expect_eq "bash: complete" true "$(x bash .complete)"
expect_eq "bash: failing classes (a read of each before the other's write), as reservations'" \
    "$(x red '.failing_classes | length')" "$(x bash .failing)"
expect_eq "bash: no class held both verdicts" 0 "$(x bash .classes_mixed)"
# a connection per statement, one at a time: nothing the turn orders
# itself (issue 33: counted as "several connections" before, 14 of 14)
expect_eq "bash: no turn's connections open at once" 0 "$(x bash .inexact.overlapping_connections)"
expect_eq "bash: every execution exact" 0 "$(x bash .inexact_executions)"

phase "soak run: symlinks planted in --out are replaced, never followed"
echo "not the run's" >"$T/victim2"
mkdir -p "$T/run/failures/0"
for f in report.json report.json.tmp junit.xml junit.xml.tmp report.html \
    failures/0/result.json failures/0/plan.json failures/0/trace.jsonl; do
	ln -s "$T/victim2" "$T/run/$f"
done
# an invariant that always breaks: seed 0 fails, and its failures/0/ is written
sed -e '/^invariants:/,$d' "$T/bash.yaml" >"$T/always.yaml"
printf 'invariants:\n  - name: always broken\n    sql: SELECT 1\n' >>"$T/always.yaml"
soak_rc rc run "$T/always.yaml" --seeds 0..0 --out "$T/run" >"$T/run.out" 2>&1
[ "$rc" -eq 1 ] || { cat "$T/run.out"; fail "soak run with planted symlinks: exit $rc, not 1"; }
expect_eq "run: what the symlinks pointed to is untouched" "not the run's" "$(cat "$T/victim2")"
for f in report.json junit.xml report.html failures/0/result.json failures/0/plan.json \
    failures/0/trace.jsonl; do
	[ -f "$T/run/$f" ] && [ ! -L "$T/run/$f" ] || fail "run: $f was written through a planted symlink"
done
ok "run: report.json, junit.xml, report.html and failures/0/'s files written as files of their own"

phase "passing over a turn that has exited is no preemption"
# 3 turns of one statement each: no order preempts anyone, so P=0 runs 3! = 6
cat >"$T/one.sh" <<'SH'
#!/bin/bash
exec psql -Xq -c "INSERT INTO bumps VALUES ($SOAK_TURN)"
SH
chmod +x "$T/one.sh"
sed -e "s#command: \[$T/bump.sh\]#command: [$T/one.sh]#" -e 's/^turns: 2$/turns: 3/' \
    -e '/^invariants:/,$d' "$T/bash.yaml" >"$T/one.yaml"
printf 'invariants:\n  - name: three bumps\n    sql: SELECT 1 WHERE (SELECT count(*) FROM bumps) <> 3\n' >>"$T/one.yaml"
soak_rc rc explore "$T/one.yaml" --seed 0 --preemptions 0 --out "$T/one" >"$T/one.out" 2>&1
expect_eq "one statement a turn, P=0: exit 0" 0 "$rc"
expect_eq "one statement a turn, P=0: 3! executions" 6 "$(x one .executions)"
expect_eq "one statement a turn, P=0: nothing beyond the bound" 0 "$(x one .beyond_bound)"

phase "a scenario that does not do again what it did: diverged, incomplete"
# turn 0 sends an extra statement first on every other start: a prefix
# recorded from one execution names a step the next does not make
echo 0 >"$T/starts"
cat >"$T/fickle.sh" <<SH
#!/bin/bash
set -e
if [ "\$SOAK_TURN" = 0 ]; then
	k=\$((\$(cat $T/starts) + 1)); echo \$k >$T/starts
	[ \$((k % 2)) = 1 ] || psql -XAtq -c "SELECT 'odd one out'" >/dev/null
fi
exec $T/bump.sh
SH
chmod +x "$T/fickle.sh"
sed "s#command: \[$T/bump.sh\]#command: [$T/fickle.sh]#" "$T/bash.yaml" >"$T/fickle.yaml"
grep -q fickle.sh "$T/fickle.yaml" || fail "the fickle config runs no fickle.sh"
soak_rc rc explore "$T/fickle.yaml" --seed 0 --preemptions 1 --out "$T/fickle" >"$T/fickle.out" 2>&1
cat "$T/fickle.out"
expect_ge "fickle: executions that diverged" 1 "$(x fickle .inexact.diverged)"
expect_eq "fickle: not complete" false "$(x fickle .complete)"
expect_match "fickle: it says so" '^incomplete: executions diverged' "$(cat "$T/fickle.out")"
[ "$rc" = 1 ] || expect_eq "fickle: exit 2 when none failed" 2 "$rc"

phase "a config without a schedule"
sed '/schedule:/,/mode: random/d' "$T/bash.yaml" >"$T/nosched.yaml"
soak_rc rc explore "$T/nosched.yaml" --seed 0 --out "$T/ns" >"$T/ns.out" 2>&1
expect_eq "no scheduled proxy: exit 78" 78 "$rc"
expect_match "it says why" 'no proxy has a schedule' "$(cat "$T/ns.out")"
ok "explore"
