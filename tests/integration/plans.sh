# A failure you can keep (docs/plan.md): a failing seed's decisions as a plan
# (failures/N/plan.json), replayed when the code around them changed.  A
# turn that now sends one more, unrelated statement leaves the seed's
# schedule, but its plan still fails on the first try, the new statement
# unplanned; the fix that adds a lock passes the plan of the race it
# fixes, its reads deferred behind the lock holder.  On refunds, a plan
# keeps its lost reply on POST /refunds when every turn first makes one
# more request, and the idempotency-key fix passes it.  A doctored plan
# (a step whose turn never sends that statement) diverges: exit 125 and a
# report, or with --then seed the seed's scheduler goes on.  And a Python
# (psycopg2) counter's plan fails on the first try when every turn first
# sends one more statement, which goes unplanned.
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/reservations
RF=$ROOT/examples/refunds
INV='items_reserved matches reservation events'

steps() { jq -c 'select(.step != null) | [.turn, .key, .occ]' "$1" | sort -t, -k1; }
# the scheduled steps of a trace in step order: [turn, key, occ]
order() { jq -c 'select(.step != null) | [.step, .turn, .key, .occ]' "$1" | sort -t, -k1.2n | jq -c '.[1:]'; }
plan_order() { jq -c '.proxies.db.steps[] | [.turn, .key, .occ]' "$1"; }

sed -e "s#\./reserve_turn#$EX/reserve_turn#" -e "s#schema: schema.sql#schema: $EX/schema.sql#" \
    -e 's/^turns: 8$/turns: 4/' "$EX/soak.yaml" >"$T/res.yaml"
grep -q '^turns: 4$' "$T/res.yaml" || fail "the test config has not 4 turns"

phase "a failing seed's plan"
soak_rc rc run "$T/res.yaml" --seeds 0..5 --out "$T/run" >"$T/run.out" 2>&1
expect_eq "run exit status" 1 "$rc"
seed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/run/report.json")
P=$T/run/failures/$seed/plan.json
[ -s "$P" ] || fail "seed $seed: no failures/$seed/plan.json"
expect_eq "the plan's version" 2 "$(jq .soak_plan "$P")"
expect_eq "the plan's seed" "$seed" "$(jq .seed "$P")"
expect_eq "the plan's steps: the run's, in its order" "$(order "$T/run/failures/$seed/trace.jsonl")" "$(plan_order "$P")"
expect_match "the plan says what it failed with" "$INV" "$(jq -r .failure.fingerprint "$P")"

phase "replay --plan: the same decisions"
soak_rc rc replay "$T/res.yaml" --plan "$P" --keep --out "$T/r1" >"$T/r1.out" 2>&1
expect_eq "replay --plan exit status" 1 "$rc"
grep -qF "\"$INV\": BROKEN" "$T/r1.out" || { tail -20 "$T/r1.out"; fail "replay --plan broke another invariant"; }
expect_match "the plan was followed" '^plan: followed; 0 unplanned exchanges, 0 lock deferrals$' "$(grep '^plan:' "$T/r1.out")"
kept=$(sed -n 's/^workspace kept: //p' "$T/r1.out")
expect_eq "replay --plan took the plan's steps" "$(plan_order "$P")" "$(order "$kept/trace.jsonl")"

phase "one more statement in every turn: the seed leaves, the plan holds"
cat >"$T/chatty.sh" <<SH
#!/bin/bash
psql -XAtqc "SELECT count(*) FROM orders" >/dev/null || exit 1
exec $EX/reserve_turn "\$@"
SH
chmod +x "$T/chatty.sh"
sed "s#command: \[$EX/reserve_turn\]#command: [$T/chatty.sh]#" "$T/res.yaml" >"$T/chatty.yaml"
grep -q chatty.sh "$T/chatty.yaml" || fail "the chatty config runs no chatty.sh"
soak_rc rc replay "$T/chatty.yaml" --seed "$seed" --out "$T/c1" --trace "$T/run/failures/$seed/trace.jsonl" >"$T/c1.out" 2>&1
sched=$(grep '^schedule:' "$T/c1.out" || true)
expect_match "under --seed its schedule leaves the run's, and says where" '^schedule: (left the run.s at step [0-9]+|the same for)' "$sched"
echo "figures: the chatty turn under --seed $seed: exit $rc ($(grep -c BROKEN "$T/c1.out" || true) broken invariants); $sched"
soak_rc rc replay "$T/chatty.yaml" --plan "$P" --out "$T/c2" >"$T/c2.out" 2>&1
expect_eq "the chatty turn under --plan: fails on the first try" 1 "$rc"
grep -qF "\"$INV\": BROKEN" "$T/c2.out" || fail "the chatty turn under --plan broke another invariant"
expect_match "its new statements went unplanned" '^plan: followed; 4 unplanned exchanges, 0 lock deferrals$' "$(grep '^plan:' "$T/c2.out")"

phase "the fix that adds a lock, against the plan of the race it fixes"
sed "s#command: \[$EX/reserve_turn\]#command: [$EX/reserve_turn, --lock]#" "$T/res.yaml" >"$T/lock.yaml"
defer=0
for f in "$T"/run/failures/*/plan.json; do
	soak_rc rc replay "$T/lock.yaml" --plan "$f" --out "$T/l1" >"$T/l1.out" 2>&1
	expect_eq "the --lock fix passes plan $(basename "$(dirname "$f")")" 0 "$rc"
	d=$(sed -n 's/^plan: followed; [0-9]* unplanned exchanges\{0,1\}, \([0-9]*\) lock deferral.*/\1/p' "$T/l1.out")
	[ -n "$d" ] || { grep '^plan:' "$T/l1.out"; fail "the fix's replay did not follow the plan"; }
	defer=$((defer + d))
done
expect_ge "lock deferrals over the fix's replays of the failing plans" 1 "$defer"
echo "figures: the --lock fix passes every failing plan of seeds 0..5, with $defer lock deferrals"

phase "a doctored plan diverges"
jq '.proxies.db.steps[1].key = "00000000deadbeef"' "$P" >"$T/doctored.json"
soak_rc rc replay "$T/res.yaml" --plan "$T/doctored.json" --out "$T/d1" >"$T/d1.out" 2>&1
expect_eq "a doctored plan: exit 125 (cannot test this)" 125 "$rc"
expect_match "the divergence says the step, what was wanted and what waited" \
    'the plan diverged at step 2 of proxy db: it wanted turn [0-9]+.s .*key 00000000deadbeef.*waiting:' \
    "$(grep 'the plan diverged at step' "$T/d1.out" | head -n 1)"
expect_match "and the verdict" '^.*verdict: infra diverged' "$(grep 'verdict:' "$T/d1.out")"
soak_rc rc replay "$T/res.yaml" --plan "$T/doctored.json" --then seed --out "$T/d2" >"$T/d2.out" 2>&1
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || { tail "$T/d2.out"; fail "--then seed: exit $rc, not a verdict of the invariants"; }
expect_match "--then seed goes on under the seed's scheduler" \
    '^plan: diverged; .*step.* after the divergence under the seed.s scheduler' "$(grep '^plan:' "$T/d2.out")"

phase "refunds: a lost reply kept on POST /refunds"
sed -e "s#\./refund_turn#$RF/refund_turn#" -e "s#\./provider#$RF/provider#" \
    -e "s#schema: schema-no-unique.sql#schema: $RF/schema-no-unique.sql#" "$RF/soak.yaml" >"$T/rf.yaml"
soak_rc rc run "$T/rf.yaml" --seeds 0..3 --out "$T/rf" >"$T/rf.out" 2>&1
expect_eq "refunds run exit status" 1 "$rc"
rseed=
for f in "$T"/rf/failures/*/plan.json; do
	if [ "$(jq '[.proxies.provider.faults[] | select(.fault == "lost_reply" and (.what | startswith("POST /refunds")))] | length' "$f")" -gt 0 ]; then
		rseed=$(basename "$(dirname "$f")")
		break
	fi
done
[ -n "$rseed" ] || fail "no failing refunds seed of 0..3 lost a reply to POST /refunds"
RP=$T/rf/failures/$rseed/plan.json
cat >"$T/rfchatty.sh" <<SH
#!/bin/bash
curl -s -o /dev/null "http://\$SOAK_PROXY_PROVIDER/status/\$SOAK_TURN" || true
exec $RF/refund_turn "\$@"
SH
chmod +x "$T/rfchatty.sh"
sed "s#command: \[$RF/refund_turn\]#command: [$T/rfchatty.sh]#" "$T/rf.yaml" >"$T/rfchatty.yaml"
soak_rc rc replay "$T/rfchatty.yaml" --plan "$RP" --keep --out "$T/rc" >"$T/rc.out" 2>&1
expect_eq "refunds with one more request a turn, under the plan: fails" 1 "$rc"
kept=$(sed -n 's/^workspace kept: //p' "$T/rc.out")
expect_ge "the plan's lost replies fell on POST /refunds" 1 \
    "$(jq -c 'select(.fault == "lost_reply" and .req == "POST /refunds")' "$kept/trace.jsonl" | wc -l)"
expect_eq "no fault on the new requests" "" "$(jq -c 'select(.req != null and (.req | startswith("GET /status")) and .fault != "none")' "$kept/trace.jsonl")"
sed -e "s#command: \[$RF/refund_turn\]#command: [$T/rfchatty.sh, --key]#" \
    -e "s#schema-no-unique.sql#schema.sql#" "$T/rf.yaml" >"$T/rffixed.yaml"
soak_rc rc replay "$T/rffixed.yaml" --plan "$RP" --out "$T/rx" >"$T/rx.out" 2>&1
expect_eq "the idempotency-key fix passes the plan" 0 "$rc"

phase "a Python turn (psycopg2, libpq's defaults): its plan holds with one more statement"
counter_schema "$T/counter.sql"
cat >"$T/counter.py" <<'PY'
#!/usr/bin/python3
# A claim counter as people write it: read, write back what was read plus
# one, log the event; autocommit, one connection (the proxy, by soak).  The
# schedule makes the race: no think time is needed for it.
import os, sys
import psycopg2

conn = psycopg2.connect("")
conn.autocommit = True
cur = conn.cursor()
if "--chatty" in sys.argv:
    cur.execute("SELECT count(*) FROM events")
cur.execute("SELECT n FROM counter WHERE id = 1")
n = cur.fetchone()[0]
cur.execute("UPDATE counter SET n = %s WHERE id = 1", (n + 1,))
cur.execute("INSERT INTO events (turn) VALUES (%s)", (int(os.environ["SOAK_TURN"]),))
conn.close()
PY
chmod +x "$T/counter.py"
PINV=$COUNTER_INV
py_cfg() {	# NAME COMMAND
	sched_cfg "$T/$1.yaml" pycounter 4 "$T/counter.sql" "$2"
}
py_cfg py "[$T/counter.py]"
py_cfg pychatty "[$T/counter.py, --chatty]"
soak_rc rc run "$T/py.yaml" --seeds 0..5 --out "$T/py" >"$T/py.out" 2>&1
expect_eq "the Python counter: exit status" 1 "$rc"
pseed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/py/report.json")
PP=$T/py/failures/$pseed/plan.json
[ -s "$PP" ] || fail "the Python counter's seed $pseed: no plan.json"
expect_eq "its plan: three statements a turn, scheduled" 12 \
    "$(jq '[.proxies.db.steps[] | select(.what != null and (.what | test("^(SELECT|UPDATE|INSERT)")))] | length' "$PP")"
soak_rc rc replay "$T/pychatty.yaml" --plan "$PP" --out "$T/pc" >"$T/pc.out" 2>&1
expect_eq "one more statement a turn, under the plan: fails on the first try" 1 "$rc"
grep -qF "\"$PINV\": BROKEN" "$T/pc.out" || fail "the chatty Python turn under --plan broke another invariant"
expect_match "its new statements went unplanned" '^plan: followed; 4 unplanned exchanges, 0 lock deferrals$' "$(grep '^plan:' "$T/pc.out")"
