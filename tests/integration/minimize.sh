# soak minimize (docs/minimize.md) on a test system of its own whose failure
# needs two particular faults together: four turns each insert items a, b, c,
# retrying a statement whose reply was lost (no idempotency key), and the
# invariant breaks only when turn 0's b AND turn 1's c are both doubled.  A
# plan with eight faults over four turns (two lost replies that matter; lost
# replies, resets, a duplicate and latencies that do not) minimizes to those
# two faults and turns 0 and 1, every other removed; removing either fault or
# either turn passes (1-minimality, checked by replaying each).  The explain
# phase says a reset would not do for either lost reply, and no latency
# matters.  A bash/psql turn (one `psql -c` per statement) and a Python
# psycopg2 turn (one connection held, reconnected after a lost reply) reach
# the same plan.  A candidate without the peer a turn waits on ends at about
# twice the seed's time, not at turn.timeout.  A seed that does not fail: its
# own exit status, a clear message, no plan written.  --budget and SIGTERM
# stop it with the smallest failing plan so far, said first.  Usage and
# config errors.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"

cat >"$T/pair.sql" <<'SQL'
CREATE TABLE log (id serial PRIMARY KEY, turn int NOT NULL, item text NOT NULL);
SQL
cat >"$T/pair.sh" <<'SH'
#!/bin/bash
# one psql -c per statement; a statement that failed (its reply lost, its
# connection reset) is sent again, up to three times: no idempotency key
for item in a b c; do
	for try in 1 2 3; do
		psql -XAtqc "INSERT INTO log (turn, item) VALUES ($SOAK_TURN, '$item')" >/dev/null 2>&1 && break
	done
	echo "turn $SOAK_TURN: $item after $try tries"
done
SH
cat >"$T/pair.py" <<'PY'
#!/usr/bin/python3
# The same turn holding one connection (libpq's defaults: the proxy), made
# again after a statement failed, which is then sent again.
import os
import psycopg2

turn = int(os.environ["SOAK_TURN"])
conn = None
for item in "abc":
    for attempt in (1, 2, 3):
        try:
            if conn is None:
                conn = psycopg2.connect("")
                conn.autocommit = True
            conn.cursor().execute("INSERT INTO log (turn, item) VALUES (%s, %s)", (turn, item))
            break
        except psycopg2.Error:
            conn = None
    print("turn %d: %s after %d tries" % (turn, item, attempt))
PY
chmod +x "$T/pair.sh" "$T/pair.py"
INV="turn 0's b and turn 1's c are never both doubled"
INV2="turn 2's a is never doubled"
cfg() {	# NAME COMMAND [more invariants]
	cat >"$T/$1.yaml" <<YAML
name: pair
turns: 4
seed_timeout: 60s
database:
  schema: $T/pair.sql
proxies:
  - name: db
    upstream: database
    protocol: postgres
    faults:
      hold: 10ms
turn:
  command: [$2]
  timeout: 20s
invariants:
  - name: $INV
    sql: |
      SELECT b.n AS turn0_b, c.n AS turn1_c
      FROM (SELECT count(*) AS n FROM log WHERE turn = 0 AND item = 'b') b,
           (SELECT count(*) AS n FROM log WHERE turn = 1 AND item = 'c') c
      WHERE b.n > 1 AND c.n > 1
${3:-}
guard:
  min_ok_turns: 100%
YAML
}
cfg sh "$T/pair.sh"
cfg py "$T/pair.py"
# the same, and a second rule that turn 2's lost reply on a breaks
cfg two "$T/pair.sh" "  - name: $INV2
    sql: SELECT count(*) AS n FROM log WHERE turn = 2 AND item = 'a' HAVING count(*) > 1"

phase "a seed that does not fail"
# in $T: the default --out of a seed is ./soak-minimize/seed-N.plan.json
set +e
(cd "$T" && exec "$SOAK" minimize "$T/sh.yaml" --seed 0 --tries 2) >"$T/pass.out" 2>&1
rc=$?
set -e
expect_eq "a passing seed: exit 3, never 1" 3 "$rc"
expect_match "it says so" '^seed 0 does not fail \(2 tries\): pass' "$(cat "$T/pass.out")"
expect_match "and that nothing was written" 'no plan written' "$(cat "$T/pass.out")"
[ ! -e "$T/soak-minimize/seed-0.plan.json" ] || fail "a passing seed left a plan"

phase "the statement's key, from a replay's trace"
soak_rc rc replay "$T/sh.yaml" --seed 0 --keep --out "$T/r0" >"$T/r0.out" 2>&1
expect_eq "the clean replay" 0 "$rc"
kept=$(sed -n 's/^workspace kept: //p' "$T/r0.out")
key=$(jq -r 'select(.sql != null and (.sql | startswith("INSERT"))) | .key' "$kept/trace.jsonl" | sort -u)
expect_eq "one key for every INSERT (literals are one placeholder)" 1 "$(wc -l <<<"$key")"
# turn 0's b is its INSERT occurrence 1; turn 1's c its occurrence 2 (its a
# and b go once); the others do not touch those two
jq -n --arg k "$key" '{soak_plan: 1, config: "pair", seed: 0, turns: 4, rounds: 1,
  proxies: {db: {faults: [
    {round: 0, turn: 2, key: $k, occ: 0, fault: "lost_reply", what: "turn 2 a"},
    {round: 0, turn: 0, key: $k, occ: 1, fault: "lost_reply", what: "turn 0 b"},
    {round: 0, turn: 3, key: $k, occ: 1, fault: "reset", what: "turn 3 b"},
    {round: 0, turn: 1, key: $k, occ: 0, latency_ms: 5, what: "turn 1 a"},
    {round: 0, turn: 0, key: $k, occ: 2, latency_ms: 5, what: "turn 0 b again"},
    {round: 0, turn: 2, key: $k, occ: 2, fault: "duplicate", what: "turn 2 c"},
    {round: 0, turn: 1, key: $k, occ: 2, fault: "lost_reply", what: "turn 1 c"},
    {round: 0, turn: 3, key: $k, occ: 2, fault: "lost_reply", what: "turn 3 b again"}],
  steps: []}}}' >"$T/plan.json"
soak_rc rc replay "$T/sh.yaml" --plan "$T/plan.json" --out "$T/r1" >"$T/r1.out" 2>&1
expect_eq "the eight-fault plan fails" 1 "$rc"
grep -qF "\"$INV\": BROKEN" "$T/r1.out" || fail "the plan broke another invariant"

phase "minimize a bash/psql turn's plan"
soak_rc rc minimize "$T/sh.yaml" --plan "$T/plan.json" --tries 1 >"$T/m1.out" 2>&1
cat "$T/m1.out"
expect_eq "minimize exit status (1-minimal)" 0 "$rc"
M=$T/plan.min.json
[ -s "$M" ] || fail "no plan.min.json beside the plan"
expect_eq "turns kept" '[[0,0],[0,1]]' "$(jq -c .runs "$M")"
expect_eq "faults kept: the two that matter" '["turn 0 b","turn 1 c"]' "$(jq -c '[.proxies.db.faults[].what] | sort' "$M")"
expect_eq "both lost replies" '["lost_reply","lost_reply"]' "$(jq -c '[.proxies.db.faults[].fault]' "$M")"
expect_match "the plan keeps the fingerprint" "pair\|invariant\|$INV" "$(jq -r .failure.fingerprint "$M")"
expect_match "a progress line per reduction" '^turns 4 → [0-9]+, faults 8 → [0-9]+, preemptions 0 → 0, [0-9]+ replays, [0-9]+ s$' "$(grep '^turns ' "$T/m1.out" | head -n 1)"
expect_match "the end: 1-minimal, and how to replay it" "^    $SOAK replay $T/sh.yaml --plan $M\$" "$(grep -A1 '^1-minimal: ' "$T/m1.out")"
expect_match "the last counts" '^turns 4 → 2, faults 8 → 2, preemptions 0 → 0' "$(grep -A2 '^1-minimal: ' "$T/m1.out" | tail -n 1)"
expect_match "the tries that disagreed are counted" '^tries that disagreed: 0' "$(cat "$T/m1.out")"
expect_match "the story: turn 0's retried INSERT after its lost reply" \
    'db INSERT INTO log .* again — ok' "$(sed -n '/^  round 0 turn 0:/,/^  round 0 turn 1:/p' "$T/m1.out")"
expect_match "the story: a reply lost" 'db INSERT INTO log .* — reply lost \(the upstream had done it\)' "$(cat "$T/m1.out")"
expect_match "the story: a turn's own output" '\| turn 1: c after 2 tries' "$(cat "$T/m1.out")"
expect_match "the story: the broken invariant and its rows" "^  broken: \"$INV\" \\(1 row\\)" "$(cat "$T/m1.out")"
expect_match "its row" '^    2 \| 2$' "$(cat "$T/m1.out")"
# A duplicate doubles the row as the retry after a lost reply does: it
# still fails (a plan's duplicate is sent though the config draws none:
# the session's start-up is kept under any plan, fault-proxy/conn.c)
expect_match "explain: the lost reply on b as a reset passes, as a duplicate still fails, and its latency does not matter" \
    "^  db round 0 turn 0 turn 0 b \(lost_reply\): as reset — passes; as duplicate — still fails; latency: any value \(4 tried, [0-9]+\.\.[0-9]+ ms\) — still fails$" \
    "$(cat "$T/m1.out")"
expect_match "explain: the same of turn 1's c" "^  db round 0 turn 1 turn 1 c \(lost_reply\): as reset — passes; " "$(cat "$T/m1.out")"
replays=$(sed -n 's/^replays: \([0-9]*\), of.*/\1/p' "$T/m1.out")
echo "figures: bash/psql: 8 faults, 4 turns -> 2, 2 in $replays replays, $(grep -A2 '^1-minimal: ' "$T/m1.out" | tail -n 1)"

phase "1-minimal: without any one element it passes"
soak_rc rc replay "$T/sh.yaml" --plan "$M" --out "$T/v" >"$T/v.out" 2>&1
expect_eq "the minimal plan fails" 1 "$rc"
for i in 0 1; do
	jq "del(.proxies.db.faults[$i])" "$M" >"$T/less.json"
	soak_rc rc replay "$T/sh.yaml" --plan "$T/less.json" --out "$T/v" >"$T/v.out" 2>&1
	expect_eq "without fault $i ($(jq -r ".proxies.db.faults[$i].what" "$M"))" 0 "$rc"
	jq "del(.runs[$i])" "$M" >"$T/less.json"
	soak_rc rc replay "$T/sh.yaml" --plan "$T/less.json" --out "$T/v" >"$T/v.out" 2>&1
	expect_eq "without turn $(jq -r ".runs[$i][1]" "$M")" 0 "$rc"
done

phase "only the original's fingerprint: two rules broken, both kept"
# the faults of both failures and two that matter to neither, on three turns
jq '.turns = 3 | .proxies.db.faults |= map(select(.turn != 3))' "$T/plan.json" >"$T/two.json"
expect_eq "the two-rule plan's faults" 6 "$(jq '.proxies.db.faults | length' "$T/two.json")"
soak_rc rc minimize "$T/two.yaml" --plan "$T/two.json" --tries 1 --explain 0 >"$T/m3.out" 2>&1
expect_eq "minimize with two rules broken" 0 "$rc" || { cat "$T/m3.out"; exit 1; }
expect_match "it fails with both" "^fails: pair\|invariant\|$INV\|$INV2 " "$(cat "$T/m3.out")"
expect_eq "the turns of both failures" '[[0,0],[0,1],[0,2]]' "$(jq -c .runs "$T/two.min.json")"
expect_eq "the faults of both failures" '["turn 0 b","turn 1 c","turn 2 a"]' "$(jq -c '[.proxies.db.faults[].what] | sort' "$T/two.min.json")"
expect_match "a candidate that broke one rule only failed otherwise" '; 0 diverged, [1-9][0-9]* failed otherwise$' "$(grep '^replays: ' "$T/m3.out")"

phase "minimize a Python turn's plan (one connection, held)"
if /usr/bin/python3 -c 'import psycopg2' 2>/dev/null; then
	soak_rc rc minimize "$T/py.yaml" --plan "$T/plan.json" --tries 1 --explain 0 --out "$T/py.min.json" >"$T/m2.out" 2>&1
	expect_eq "minimize the Python turn's plan" 0 "$rc" || { cat "$T/m2.out"; exit 1; }
	expect_eq "its turns" '[[0,0],[0,1]]' "$(jq -c .runs "$T/py.min.json")"
	expect_eq "its faults" '["turn 0 b","turn 1 c"]' "$(jq -c '[.proxies.db.faults[].what] | sort' "$T/py.min.json")"
	echo "figures: Python: $(grep -A2 '^1-minimal: ' "$T/m2.out" | tail -n 1)"

	phase "a turn that waits on a removed peer: the candidate ends at twice the seed's time"
	# turn 1 waits for turn 0's NOTIFY (LISTEN, then select() on the
	# connection: no timeout of its own), then inserts x; without turn 0 it
	# waits until soak kills it.  turn.timeout and seed_timeout are 600 s;
	# a candidate gets about twice the original's time (at least 3 s), so
	# minimize ends in seconds, and the watchdog (120 s) names what it
	# waited for if a candidate is given the config's time instead.
	cat >"$T/wait.py" <<'PY'
#!/usr/bin/python3
import os, select
import psycopg2

turn = int(os.environ["SOAK_TURN"])
conn = psycopg2.connect("")
conn.autocommit = True
if turn == 0:
    conn.cursor().execute("INSERT INTO log (turn, item) VALUES (0, 'go')")
    conn.cursor().execute("NOTIFY go")
    raise SystemExit(0)
cur = conn.cursor()
cur.execute("LISTEN go")
cur.execute("SELECT count(*) FROM log WHERE item = 'go'")
if cur.fetchone()[0] == 0:
    while not conn.notifies:
        select.select([conn], [], [])
        conn.poll()
for attempt in (1, 2, 3):
    try:
        conn.cursor().execute("INSERT INTO log (turn, item) VALUES (1, 'x')")
        break
    except psycopg2.Error:
        conn = psycopg2.connect("")
        conn.autocommit = True
print("turn 1: x after %d tries" % attempt)
PY
	chmod +x "$T/wait.py"
	cat >"$T/wait.yaml" <<YAML
name: wait
turns: 2
seed_timeout: 600s
database:
  schema: $T/pair.sql
proxies:
  - name: db
    upstream: database
    protocol: postgres
    faults:
      hold: 10ms
turn:
  command: [$T/wait.py]
  timeout: 600s
invariants:
  - name: turn 1's x is never doubled
    sql: SELECT count(*) AS n FROM log WHERE turn = 1 AND item = 'x' HAVING count(*) > 1
YAML
	jq -n --arg k "$key" '{soak_plan: 1, config: "wait", seed: 0, turns: 2, rounds: 1,
	  proxies: {db: {faults: [
	    {round: 0, turn: 0, key: $k, occ: 0, latency_ms: 5, what: "turn 0 go"},
	    {round: 0, turn: 1, key: $k, occ: 0, fault: "lost_reply", what: "turn 1 x"}],
	  steps: []}}}' >"$T/wait.json"
	cleanup_hooks+=("pkill -f '$T/wait.py' 2>/dev/null")	# a killed minimize leaves its turns
	"$SOAK" minimize "$T/wait.yaml" --plan "$T/wait.json" --tries 1 --explain 0 >"$T/m4.out" 2>&1 &
	wait_exit rc $! 120 "minimize with a candidate that waits on a removed peer (it must end at twice the seed's time, not at turn.timeout, 600 s)"
	expect_eq "minimize with a waiting turn" 0 "$rc" || { cat "$T/m4.out"; exit 1; }
	expect_eq "the turn it waits on is kept" '[[0,0],[0,1]]' "$(jq -c .runs "$T/wait.min.json")"
	expect_eq "the one fault" '["turn 1 x"]' "$(jq -c '[.proxies.db.faults[].what]' "$T/wait.min.json")"
	expect_match "the candidate without turn 0 hung (it failed otherwise)" '; 0 diverged, [1-9][0-9]* failed otherwise$' "$(grep '^replays: ' "$T/m4.out")"
	echo "figures: a waiting turn: $(grep -A2 '^1-minimal: ' "$T/m4.out" | tail -n 1) (turn.timeout 600 s)"
else
	fail "/usr/bin/python3 has no psycopg2 (make deps installs python3-psycopg2)"
fi

phase "--budget and SIGTERM: the smallest failing plan so far, first"
soak_rc rc minimize "$T/sh.yaml" --plan "$T/plan.json" --tries 1 --budget 1ms --out "$T/b.json" >"$T/b.out" 2>&1
expect_eq "a budget reached: exit 2" 2 "$rc"
expect_match "said first, with its replay command" '^stopped \(--budget\): the smallest failing plan so far, not shown 1-minimal: '"$T/b.json" \
    "$(grep -A1 '^stopped' "$T/b.out")"
expect_eq "the plan written is a plan" 2 "$(jq .soak_plan "$T/b.json")"
"$SOAK" minimize "$T/sh.yaml" --plan "$T/plan.json" --tries 1 --out "$T/s.json" >"$T/s.out" 2>&1 &
pid=$!
wait_line "$T/s.out" '^failing plan written: ' 60 "minimize's first plan" >/dev/null
kill -TERM "$pid"
wait_exit rc "$pid" 60 "minimize after SIGTERM"
expect_eq "SIGTERM: exit 2" 2 "$rc"
expect_match "SIGTERM: said" '^stopped \(SIGTERM\)' "$(cat "$T/s.out")"
expect_eq "the plan written is a plan" 2 "$(jq .soak_plan "$T/s.json")"

phase "usage and config errors"
soak_rc rc minimize "$T/sh.yaml" --plan "$T/plan.json" --tries 0
expect_eq "--tries 0" 64 "$rc"
soak_rc rc minimize "$T/sh.yaml"
expect_eq "neither --seed nor --plan" 64 "$rc"
printf 'name: bad\nturns: two\n' >"$T/bad.yaml"
soak_rc rc minimize "$T/bad.yaml" --seed 1 2>"$T/bad.err"
expect_eq "a config error" 78 "$rc"
expect_match "named by file:line:col" "bad.yaml:2:8" "$(cat "$T/bad.err")"
