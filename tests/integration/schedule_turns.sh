# Schedules for turns nobody here wrote (docs/faults.md "Schedules"): a lost
# update in bash + psql with one `psql -c` per statement (a connection per
# statement: the turn is between connections at every step), the same with
# one psql held open as a coprocess, and a Python psycopg2 wallet with
# think times whose transfers deadlock.  The schedule waits for every live
# turn process, whatever its connections, so each failing seed replays to
# the same verdict and the run's schedule step for step — up to where a
# transaction's end woke several lock waiters at once (PostgreSQL's order,
# which no schedule decides: such a replay is counted, and may pass, since
# its schedule left the run's; any other departure fails); a deadlock among
# the turns is found by soak and its victim cancelled, the same victim in
# every replay, before PostgreSQL's own clock; and a circular wait through
# a service's own database connection is decided without the watchdog.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
command -v psql >/dev/null || fail "psql is not installed (make deps)"
/usr/bin/python3 -c 'import psycopg2' 2>/dev/null ||
    fail "python3-psycopg2 is not installed (make deps)"

# [step, turn, conn, exchange, cand, sql, forced, waits_on, deadlock] per step
steps() { jq -c 'select(.step != null) | [.step, .turn, .conn, .exchange, .cand, .sql, .forced, .waits_on, .deadlock]' "$1" | sort -t, -k1.2n; }
forced_in() { jq -s '[.[] | select(.forced != null)] | length' "$@"; }

# The first step at which two traces' schedules decided differently (the
# exchange admitted, who was waiting, what forced it; empty: none).  A lock
# wait or a deadlock is an outcome, which a later step can change (the
# step that closes a cycle makes an earlier one its victim).
decisions() { jq -c 'select(.step != null) | [.step, .turn, .conn, .exchange, .cand, .sql, .forced]' "$1" | sort -t, -k1.2n; }
first_diff() {
	diff <(decisions "$1") <(decisions "$2") | sed -n 's/^< \[\([0-9]*\),.*/\1/p' | head -n 1  || true
}
# Whether a step of trace $1 before step $2 ended a transaction that woke
# several lock waiters at once ("wakes": PostgreSQL's order, gate.h).
woke_before() {
	[ "$(jq -s --argjson k "$2" '[.[] | select(.step != null and .step < $k and .wakes != null)] | length' "$1")" -gt 0 ]
}
# replays WANT CONFIG RUNDIR INVARIANT: replays the first WANT failing seeds
# of RUNDIR; sets same (schedules kept step for step), nrep, forced
# (decisions a timeout made, in the run's traces and the replays') and
# woke (replays that left the run's schedule after a transaction's end
# woke several lock waiters: the one thing the schedule does not decide).
replays() {
	local want=$1 cfg=$2 run=$3 inv=$4 seed rc kept k
	same=0 nrep=0 forced=0 woke=0 passed_woke=0
	for seed in $(jq -r '[.results[] | select(.verdict == "fail") | .seed] | sort | .[]' "$run/report.json" | head -n "$want"); do
		nrep=$((nrep + 1))
		soak_rc rc replay "$cfg" --seed "$seed" --keep --out "$T/rp" >"$T/rp.out" 2>&1
		[ "$rc" -eq 1 ] || [ "$rc" -eq 0 ] || { tail -n 20 "$T/rp.out"; fail "seed $seed: replay exit $rc, not a verdict"; }
		[ "$rc" -eq 0 ] || grep -qF "\"$inv\": BROKEN" "$T/rp.out" || fail "seed $seed: the replay broke another invariant"
		kept=$(sed -n 's/^workspace kept: //p' "$T/rp.out")
		[ -s "$kept/trace.jsonl" ] || fail "seed $seed: the replay kept no trace"
		forced=$((forced + $(forced_in "$run/failures/$seed/trace.jsonl" "$kept/trace.jsonl")))
		if cmp -s <(steps "$run/failures/$seed/trace.jsonl") <(steps "$kept/trace.jsonl"); then
			same=$((same + 1))
			# the run's schedule step for step, and not its verdict: a bug of soak's
			[ "$rc" -eq 1 ] || { tail -n 20 "$T/rp.out"; fail "seed $seed: the run's schedule step for step, yet the replay passed"; }
		else
			echo "seed $seed: the replay left the run's schedule:"
			cp "$kept/trace.jsonl" "$T/diverged-$(basename "$cfg" .yaml)-$seed.jsonl"
			k=$(first_diff "$run/failures/$seed/trace.jsonl" "$kept/trace.jsonl")
			# the same decisions, another outcome (who held the lock):
			# where the outcome first differs
			[ -n "$k" ] || k=$(diff <(steps "$run/failures/$seed/trace.jsonl") \
			    <(steps "$kept/trace.jsonl") | sed -n 's/^< \[\([0-9]*\),.*/\1/p' | head -n 1 || true)
			if [ -n "$k" ] && woke_before "$run/failures/$seed/trace.jsonl" "$k"; then
				woke=$((woke + 1))
				echo "  (at step $k, after a transaction's end woke several lock waiters: PostgreSQL's order)"
				[ "$rc" -eq 1 ] || passed_woke=$((passed_woke + 1))
			else
				# left the schedule with no reason: the verdict must hold
				[ "$rc" -eq 1 ] || { tail -n 20 "$T/rp.out"; fail "seed $seed: replay exit $rc, not 1, and its schedule left the run's with no reason in its trace"; }
			fi
			diff <(steps "$run/failures/$seed/trace.jsonl") <(steps "$kept/trace.jsonl") | head -n 6 || true
		fi
		rm -rf "$T/rp"
		case $kept in */soak-replay*/seed-*) rm -rf "$kept" ;; esac
	done
}

counter_schema "$T/counter.sql"
# A job-queue's claim counter, as a new user writes it: read, then write
# back what was read plus one, then log the event; psql with the libpq
# defaults soak sets (through the proxy in front of the database).
cat >"$T/percmd.sh" <<'SH'
#!/bin/bash
set -eu
n=$(psql -XAtqc "SELECT n FROM counter WHERE id = 1")
psql -Xqc "UPDATE counter SET n = $((n + 1)) WHERE id = 1"
psql -Xqc "INSERT INTO events (turn) VALUES ($SOAK_TURN)"
SH
# The same through one psql held open: a coprocess fed one statement at a
# time, each answer read up to a marker.
cat >"$T/held.sh" <<'SH'
#!/bin/bash
set -eu
coproc PSQL { psql -XAtq 2>&1; }
ask() {
	local line out=
	printf '%s\n\\echo __done__\n' "$1" >&"${PSQL[1]}"
	while read -r line <&"${PSQL[0]}"; do
		[ "$line" = __done__ ] && break
		out=$line
	done
	printf '%s' "$out"
}
n=$(ask "SELECT n FROM counter WHERE id = 1;")
ask "UPDATE counter SET n = $((n + 1)) WHERE id = 1;" >/dev/null
ask "INSERT INTO events (turn) VALUES ($SOAK_TURN);" >/dev/null
exec {PSQL[1]}>&-
wait
SH
chmod +x "$T/percmd.sh" "$T/held.sh"
INV=$COUNTER_INV
counter_cfg() {	# NAME TURN-SCRIPT
	sched_cfg "$T/$1.yaml" "$1" 4 "$T/counter.sql" "[$2]"
}

for style in percmd held; do
	phase "bash + psql ($style), 4 turns under schedule: random with its defaults, seeds 0..19"
	counter_cfg "$style" "$T/$style.sh"
	soak_rc rc run "$T/$style.yaml" --seeds 0..19 --out "$T/$style" >"$T/$style.out" 2>&1
	tail -n 4 "$T/$style.out"
	check_report "$T/$style" 0 19
	nfail=$(jq .totals.fail "$T/$style/report.json")
	expect_eq "$style: infra verdicts" 0 "$(jq .totals.infra "$T/$style/report.json")"
	expect_ge "$style: seeds whose lost update was caught (of 20)" 10 "$nfail"
	expect_eq "$style: every failure is the lost update" "" "$(kills "$T/$style" | grep -vF "$INV" || true)"
	# every statement went through the schedule: three steps a turn
	expect_eq "$style: steps of the smallest failing seed" 12 \
	    "$(steps "$T/$style/failures/$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/$style/report.json")/trace.jsonl" | wc -l)"
	replays 4 "$T/$style.yaml" "$T/$style" "$INV"
	echo "figures: $style: $nfail of 20 seeds fail; $same of $nrep failing seeds replay to the same verdict and the run's schedule step for step; $forced decisions forced by a timeout in their traces and replays"
	expect_eq "$style: decisions forced by a timeout" 0 "$forced"
	expect_eq "$style: replays with the run's schedule, step for step" "$nrep" "$same"
done

# A wallet in Python (psycopg2, one connection per turn, transactions,
# think times), as such agents are written: read the balance, think, write
# back what was read minus the amount, credit the other account.  Two
# transfers in opposite directions deadlock; the turn retries a deadlock,
# as production code does on SQLSTATE 40P01.
cat >"$T/wallet.sql" <<'SQL'
CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL);
INSERT INTO acct VALUES (1, 100), (2, 100), (3, 100);
SQL
cat >"$T/wallet.py" <<'PY'
#!/usr/bin/python3
import os, random, sys, time
import psycopg2, psycopg2.errors

rng = random.Random(int(os.environ["SOAK_TURN_SEED"]))
conn = psycopg2.connect("")     # libpq's defaults: the proxy, by soak
for _ in range(2):
    src, dst = rng.sample([1, 2, 3], 2)
    amount = rng.randint(1, 9)
    think = rng.uniform(0.002, 0.01)
    for attempt in range(4):
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT bal FROM acct WHERE id = %s", (src,))
                bal = cur.fetchone()[0]
                # the agent's think time: what the schedule must wait
                # through (a turn between statements), never what orders
                # the turns; "0 decisions forced by a timeout" below shows
                # no outcome rested on it
                time.sleep(think)
                cur.execute("UPDATE acct SET bal = %s WHERE id = %s", (bal - amount, src))
                cur.execute("UPDATE acct SET bal = bal + %s WHERE id = %s", (amount, dst))
            conn.commit()
            break
        except psycopg2.errors.DeadlockDetected:
            conn.rollback()
            print("deadlock, retrying", file=sys.stderr)
conn.close()
PY
chmod +x "$T/wallet.py"
WINV='money is neither made nor lost'
wallet_cfg() {	# NAME MODE-LINES
	cat >"$T/$1.yaml" <<YAML
name: wallet
turns: 4
seed_timeout: 60s
database:
  schema: $T/wallet.sql
proxies:
  - name: db
    upstream: database
    protocol: postgres
    schedule:
$2
turn:
  command: [$T/wallet.py]
  timeout: 20s
invariants:
  - name: $WINV
    sql: SELECT sum(bal) AS total FROM acct HAVING sum(bal) <> 300
YAML
}
wallet_cfg wrandom "      mode: random"
wallet_cfg wpct "      mode: pct
      depth: 3
      steps: 40"
for mode in wrandom wpct; do
	phase "the Python wallet ($mode), 4 turns, seeds 0..19"
	soak_rc rc run "$T/$mode.yaml" --seeds 0..19 --out "$T/$mode" -v >"$T/$mode.out" 2>"$T/$mode.err"
	tail -n 4 "$T/$mode.out"
	check_report "$T/$mode" 0 19
	expect_eq "$mode: infra verdicts" 0 "$(jq .totals.infra "$T/$mode/report.json")"
	nfail=$(jq .totals.fail "$T/$mode/report.json")
	expect_ge "$mode: seeds whose lost debit was caught (of 20)" 3 "$nfail"
	replays 4 "$T/$mode.yaml" "$T/$mode" "$WINV"
	dl=$(grep -c ': a deadlock (step' "$T/$mode.err" || true)
	echo "figures: $mode: $nfail of 20 seeds fail; $same of $nrep failing seeds replay step for step, $woke more leave it where a transaction's end woke several lock waiters ($passed_woke of those then passed); $forced decisions forced by a timeout; $dl deadlocks broken by soak in the run"
	expect_eq "$mode: decisions forced by a timeout" 0 "$forced"
	# Every replay keeps the run's schedule up to PostgreSQL's own order --
	# but for a departure seen about once in six runs of this test on a
	# loaded machine (a Python wallet's seed whose candidates differed at a
	# step with no timeout and no several-waiter wake before it: a gap in
	# what the trace explains, open in the notes).  One of the four
	# replays may leave so, and says so above; two may not.
	unexplained=$((nrep - same - woke))
	echo "figures: $mode: replays that left the run's schedule with no reason in its trace: $unexplained of $nrep"
	[ "$unexplained" -le 1 ] ||
	    fail "$mode: $unexplained of $nrep replays left the run's schedule with no reason in their traces"
	ok "$mode: at most one replay left the run's schedule with no reason ($unexplained)"
done

# A deadlock, replayed twice: the same victim, marked in the trace and
# the interleaving, and the turn saw PostgreSQL's own error (40P01) and
# retried.
phase "a deadlock among two turns, replayed twice"
# a failing seed whose first deadlock comes before any end that woke
# several lock waiters (after one, the victim may be PostgreSQL's order's)
dseed= dcfg=
for mode in wrandom wpct; do
	for tr in "$T"/$mode/failures/*/trace.jsonl; do
		v=$(jq -s '[.[] | select(.deadlock == "soak") | .step] | min // 0' "$tr")
		[ "$v" -gt 0 ] || continue
		woke_before "$tr" "$v" && continue
		dseed=$(basename "$(dirname "$tr")") dcfg=$T/$mode.yaml
		break 2
	done
done
[ -n "$dseed" ] || fail "no failing seed of the wallet runs deadlocked before a wake race (40 seeds)"
victims=() vsteps=()
for i in 1 2; do
	soak_rc rc replay "$dcfg" --seed "$dseed" --keep --out "$T/dl$i" -v >"$T/dl$i.out" 2>&1
	kept=$(sed -n 's/^workspace kept: //p' "$T/dl$i.out")
	[ -s "$kept/trace.jsonl" ] || fail "deadlock replay $i kept no trace"
	v=$(jq -c 'select(.deadlock == "soak") | [.step, .turn, .conn, .exchange]' "$kept/trace.jsonl")
	[ -n "$v" ] || { grep -i deadlock "$T/dl$i.out" | head; fail "replay $i of seed $dseed: no victim of soak's in its trace"; }
	expect_ge "replay $i: turns that saw 40P01 and retried" 1 \
	    "$(grep -l "deadlock, retrying" "$kept"/r0-t*/stderr.log | wc -l)"
	expect_match "replay $i: the interleaving marks the victim" '\[deadlock' "$(sed -n '/^schedule of proxy db/,$p' "$T/dl$i.out")"
	expect_eq "replay $i: deadlocks PostgreSQL's clock broke" "" "$(jq -c 'select(.deadlock == "postgres")' "$kept/trace.jsonl")"
	victims+=("$(head -n 1 <<<"$v")") vsteps+=("$(jq -r '.[0]' <<<"$(head -n 1 <<<"$v")")")
	cp "$kept/trace.jsonl" "$T/dl$i.jsonl"
	case $kept in */soak-replay*/seed-*) rm -rf "$kept" ;; esac
done
# The same decisions up to the later first victim give the same victim
# (a cycle's victim is its exchange admitted first; the step that closes
# the cycle comes after it).  Two replays that parted before it must have
# parted where PostgreSQL's wake order decided (a transaction's end that
# woke several lock waiters), nowhere else; their victims may differ.
upto=$(( ${vsteps[0]} > ${vsteps[1]} ? ${vsteps[0]} : ${vsteps[1]} ))
k=$(diff <(decisions "$T/dl1.jsonl" | jq -c --argjson u "$upto" 'select(.[0] < $u)') \
    <(decisions "$T/dl2.jsonl" | jq -c --argjson u "$upto" 'select(.[0] < $u)') |
    sed -n 's/^< \[\([0-9]*\),.*/\1/p' | head -n 1 || true)
if [ "${victims[0]}" = "${victims[1]}" ]; then
	ok "the same victim in both replays of seed $dseed: ${victims[0]}"
elif [ -n "$k" ] && woke_before "$T/dl1.jsonl" "$k"; then
	echo "figures: the two replays of seed $dseed parted at step $k, after a transaction's end woke several lock waiters; victims ${victims[0]} and ${victims[1]}"
else
	fail "the two replays of seed $dseed had different victims (${victims[0]}, ${victims[1]}), parting at step ${k:-none} with no wake before it"
fi

# Two turns wait on the row a third holds; its COMMIT wakes them both.
# On soak's own server the woken backends are stopped and let go one at a
# time in the schedule's order (docs/faults.md "Wake-ups"): no end is
# marked, and a replay keeps the run's schedule step for step.  On a
# server soak did not start, which takes the row first is PostgreSQL's
# order: the COMMIT's trace line says so ("wakes", two turns), so a reader
# of a replay that parts from the run's there knows why.  (An invariant
# that always breaks keeps every seed's trace.)
phase "one COMMIT, two lock waiters woken: soak's order on its own server, marked on another"
cat >"$T/wake.py" <<'PY'
#!/usr/bin/python3
import os, psycopg2
conn = psycopg2.connect("")
cur = conn.cursor()
if os.environ["SOAK_TURN"] == "0":
    cur.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
    for _ in range(4):
        cur.execute("INSERT INTO events (turn) VALUES (0)")
    conn.commit()
else:
    conn.autocommit = True
    for _ in range(2):
        cur.execute("SELECT 1")
    cur.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
    cur.execute("INSERT INTO events (turn) VALUES (%s)", (int(os.environ["SOAK_TURN"]),))
PY
chmod +x "$T/wake.py"
sed -e 's/^turns: 4$/turns: 3/' -e "s#command: \[$T/percmd.sh\]#command: [$T/wake.py]#" \
    -e 's/WHERE c.n <> e.n/WHERE true/' "$T/percmd.yaml" >"$T/wake.yaml"
grep -q 'wake.py' "$T/wake.yaml" || fail "the wake config runs no wake.py"
soak_rc rc run "$T/wake.yaml" --seeds 0..11 --out "$T/wake" >"$T/wake.out" 2>&1
expect_eq "the wake run: every seed kept (the invariant always breaks)" 12 "$(jq .totals.fail "$T/wake/report.json")"
nwait=$(cat "$T"/wake/failures/*/trace.jsonl | jq -s '[.[] | select(.waits_on != null and .turn > 0)] | length')
expect_ge "soak's server: turns 1 and 2 waited on turn 0's row" 6 "$nwait"
expect_eq "soak's server: no end marked as PostgreSQL's order" "" \
    "$(cat "$T"/wake/failures/*/trace.jsonl | jq -c 'select(.wakes != null)')"
same=0
for seed in 0 1 2 3; do
	soak_rc rc replay "$T/wake.yaml" --seed "$seed" --trace "$T/wake/failures/$seed/trace.jsonl" \
	    --out "$T/wr" >"$T/wr.out" 2>&1
	grep -q '^schedule: the same as the run.s' "$T/wr.out" && same=$((same + 1))
	rm -rf "$T/wr"
done
expect_eq "soak's server: replays that kept the run's schedule step for step (of 4)" 4 "$same"
shared_pg wake
soak_rc rc run "$T/wake.yaml" --seeds 0..11 --out "$T/wake2" >"$T/wake2.out" 2>&1
unset SOAK_DATABASE_URL
expect_eq "another server: every seed kept" 12 "$(jq .totals.fail "$T/wake2/report.json")"
woken=$(cat "$T"/wake2/failures/*/trace.jsonl | jq -c 'select(.wakes != null) | [.turn, .sql, .wakes]' | sort | uniq -c)
echo "figures: soak's server: $nwait lock waits, none marked, $same of 4 replays step for step; another server, COMMITs that woke several lock waiters over 12 seeds: ${woken:-none}"
expect_match "another server: turn 0's COMMIT woke turns 1 and 2 in some seed" '\[0,"COMMIT","6"\]' "$woken"
expect_eq "another server: ends marked that woke fewer than two" "" "$(cat "$T"/wake2/failures/*/trace.jsonl | jq -c 'select(.wakes != null and .wakes != "6")')"

# A circular wait through a service: turn 0 holds a row lock with its
# COMMIT held by the schedule while turn 1 waits on a service whose own
# database connection (not the proxy's) waits on that lock.  PostgreSQL
# shows it, and the schedule goes on without waiting out `arrival`.
phase "a wait outside the proxy on a held turn's lock"
cat >"$T/svc.py" <<'PY'
#!/usr/bin/python3
import os, http.server, psycopg2
db = psycopg2.connect()
db.autocommit = True
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        with db.cursor() as cur:
            cur.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(os.environ["SOAK_PORT"])), H).serve_forever()
PY
cat >"$T/out.py" <<'PY'
#!/usr/bin/python3
import os, time, urllib.request, psycopg2
host, port = os.environ["SOAK_PROXY_DB"].rsplit(":", 1)
conn = psycopg2.connect(host=host, port=port)
cur = conn.cursor()
if os.environ["SOAK_TURN"] == "0":
    cur.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
    cur.execute("INSERT INTO events (turn) VALUES (0)")
    conn.commit()
else:
    cur.execute("SELECT 1"); conn.commit()
    urllib.request.urlopen(urllib.request.Request("http://" + os.environ["SOAK_SERVICE_SVC"], data=b"", method="POST"), timeout=10)
    cur.execute("INSERT INTO events (turn) VALUES (1)"); conn.commit()
PY
chmod +x "$T/svc.py" "$T/out.py"
cat >"$T/outside.yaml" <<YAML
name: outside
turns: 2
seed_timeout: 60s
database:
  schema: $T/counter.sql
services:
  - name: svc
    command: [$T/svc.py]
    ready: tcp
proxies:
  - name: db
    upstream: database
    protocol: postgres
    schedule:
      mode: random
      arrival: 10s
turn:
  command: [$T/out.py]
  timeout: 30s
invariants:
  - name: the counter counts every event
    sql: SELECT 1 WHERE false
YAML
soak_rc rc run "$T/outside.yaml" --seeds 0..9 --workers 1 --out "$T/outside" -v >"$T/outside.out" 2>"$T/outside.err"
tail -n 3 "$T/outside.out"
expect_eq "the outside-wait run: exit status" 0 "$rc"
out=$(grep -c 'forced by outside' "$T/outside.err" || true)
arr=$(grep -c 'forced by arrival' "$T/outside.err" || true)
echo "figures: outside waits: $out decisions made on PostgreSQL's word of a wait outside the proxy, $arr left to the 10 s watchdog, in 10 seeds"
expect_ge "decisions made on a wait outside the proxy" 1 "$out"
expect_eq "decisions left to the watchdog" 0 "$arr"
