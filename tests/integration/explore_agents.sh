# soak explore on systems in the shapes agents are built (issue 33): it
# says complete only when it is, and the same thing every time.
#  - a tool server (a Python ThreadingHTTPServer with psycopg2, started by
#    soak as a service) that agents (Python; bash reading its reply with
#    cat to the close) call over HTTP through a proxy, with the
#    proxy in front of the database scheduled: the service's statements are
#    held as the turns' whose requests they serve (docs/faults.md
#    "Services under a schedule"), so its race is explored: complete, the
#    failing schedules found, the same answer each time;
#  - the same with the schedule on the HTTP proxy in front of the tool
#    server: the schedule holds each request until the one before has its
#    reply, so the service never runs two at once and its race cannot
#    happen: no execution can be exact, exit 2, said; --inexact explores
#    anyway and says incomplete;
#  - one turn fanning out to three threads, a psycopg2 connection each,
#    through the scheduled proxy: the turn orders its own connections, not
#    the schedule: exit 2, said.
# Each explored three times, the same headline each time.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"

mkdir "$T/sys"
cat >"$T/sys/schema.sql" <<'SQL'
CREATE TABLE seats (id int PRIMARY KEY, free int NOT NULL);
INSERT INTO seats VALUES (1, 3);
CREATE TABLE sold (turn int NOT NULL);
SQL
# the tool: reads the seats left, then writes them back less one (the race)
cat >"$T/sys/tools.py" <<'PY'
#!/usr/bin/python3
import http.server, json, os, psycopg2
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        db = psycopg2.connect("")
        db.autocommit = True
        cur = db.cursor()
        cur.execute("SELECT free FROM seats WHERE id = 1")
        free = cur.fetchone()[0]
        if free > 0:
            cur.execute("UPDATE seats SET free = %s WHERE id = 1", (free - 1,))
            cur.execute("INSERT INTO sold (turn) VALUES (%s)", (body["turn"],))
        db.close()
        out = json.dumps({"ok": free > 0}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["SOAK_PORT"])), H).serve_forever()
PY
# an agent: two tool calls
cat >"$T/sys/agent.py" <<'PY'
#!/usr/bin/python3
import json, os, urllib.request
url = "http://" + os.environ["SOAK_PROXY_API"] + "/reserve_seat"
for _ in range(2):
    req = urllib.request.Request(url, data=json.dumps({"turn": int(os.environ["SOAK_TURN"])}).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()
PY
# the same agent in bash: its request by bash's own /dev/tcp, its reply
# read by cat to the connection's end (the tool server answers HTTP/1.0
# and closes): it is woken by the close the proxy passes on, not by
# anything a gate admits (docs/faults.md "Busy, not late")
cat >"$T/sys/agent.sh" <<'SH'
#!/bin/bash
set -euo pipefail
for _ in 1 2; do
	body="{\"turn\": $SOAK_TURN}"
	exec 3<>"/dev/tcp/${SOAK_PROXY_API%:*}/${SOAK_PROXY_API##*:}"
	printf 'POST /reserve_seat HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
	    "${#body}" "$body" >&3
	reply=$(cat <&3)
	exec 3<&-
	case $reply in "HTTP/1."?" 200 "*) ;; *) echo "reserve_seat: ${reply%%$'\r'*}" >&2; exit 1 ;; esac
done
SH
# turn 0 in Python, turn 1 in bash
cat >"$T/sys/turn.sh" <<'SH'
#!/bin/sh
[ "$SOAK_TURN" = 0 ] && exec "$SOAK_CONFIG_DIR/agent.py"
exec "$SOAK_CONFIG_DIR/agent.sh"
SH
# one turn, three tool calls at once in threads, a connection each
cat >"$T/sys/fanout.py" <<'PY'
#!/usr/bin/python3
import os, psycopg2, threading
def call(k):
    db = psycopg2.connect("")
    db.autocommit = True
    cur = db.cursor()
    cur.execute("SELECT free FROM seats WHERE id = 1")
    free = cur.fetchone()[0]
    if free > 0:
        cur.execute("UPDATE seats SET free = %s WHERE id = 1", (free - 1,))
        cur.execute("INSERT INTO sold (turn) VALUES (%s)", (k,))
    db.close()
threads = [threading.Thread(target=call, args=(k,)) for k in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
PY
chmod +x "$T/sys/tools.py" "$T/sys/agent.py" "$T/sys/agent.sh" "$T/sys/turn.sh" "$T/sys/fanout.py"
INV='SELECT s.free, count(*) AS sold FROM seats s, sold GROUP BY s.free HAVING s.free + count(*) <> 3'
# cfg FILE TURNS COMMAND DB-SCHEDULE API-SCHEDULE
cfg() {
	cat >"$1" <<YAML
name: $(basename "$1" .yaml)
turns: $2
seed_timeout: 60s
database:
  schema: schema.sql
services:
  - name: tools
    command: [./tools.py]
proxies:
  - name: db
    upstream: database
    protocol: postgres
$4
  - name: api
    upstream: service:tools
    protocol: http
$5
turn:
  command: [$3]
  timeout: 20s
invariants:
  - name: every seat sold once
    sql: $INV
YAML
}
SCHED='    schedule:
      mode: random'
cfg "$T/sys/tools.yaml" 2 ./turn.sh "$SCHED" ""
cfg "$T/sys/serial.yaml" 2 ./agent.py "" "$SCHED"
cfg "$T/sys/fanout.yaml" 1 ./fanout.py "$SCHED" ""

# explore_thrice NAME: three explorations of seed 0; each exit status and
# headline (the line after the blank one) kept in $T/NAME.N.{rc,head};
# WANT_RC and WANT_HEAD (default 2 and ^incomplete:) what each must say
explore_thrice() {
	local i rc want_rc=${WANT_RC:-2} want_head=${WANT_HEAD:-^incomplete:}
	for i in 1 2 3; do
		soak_rc rc explore "$T/sys/$1.yaml" --seed 0 --preemptions 1 --out "$T/$1.$i" \
		    "${@:2}" >"$T/$1.$i.out" 2>&1
		echo "$rc" >"$T/$1.$i.rc"
		grep -E '^(complete|incomplete):' "$T/$1.$i.out" | head -n 1 >"$T/$1.$i.head"
	done
	cat "$T/$1.1.out"
	for i in 1 2 3; do
		expect_eq "$1, try $i: exit $want_rc" "$want_rc" "$(cat "$T/$1.$i.rc")"
		expect_match "$1, try $i: the headline" "$want_head" "$(cat "$T/$1.$i.head")"
		expect_eq "$1, try $i: the same headline as the first" "$(cat "$T/$1.1.head")" \
		    "$(cat "$T/$1.$i.head")"
	done
	echo "figures: $1: $(cat "$T/$1.1.head")"
}

phase "a tool server with the database proxy scheduled: its statements held as the turns'"
WANT_RC=1 WANT_HEAD='^complete: all schedules with ≤ 1 preemption of turns all — [0-9]+ explored, [1-9][0-9]* fail$' \
    explore_thrice tools
expect_ge "tools: executions" 2 "$(jq .executions "$T/tools.1/explore.json")"
f=$(ls "$T"/tools.1/failing/*.plan.json | head -n 1)
[ -n "$f" ] || fail "tools: no failing schedule's plan"
soak_rc rc replay "$T/sys/tools.yaml" --plan "$f" >"$T/tools.replay" 2>&1
expect_eq "tools: a failing schedule replays to the failure" 1 "$rc"
expect_match "tools: ... the seats oversold" 'every seat sold once' "$(cat "$T/tools.replay")"

phase "the schedule on the HTTP proxy in front of the tool server: serialized"
explore_thrice serial
expect_match "serial: it says the schedule serialized the service" \
    'proxy api fronts a service, and the schedule held a request until another.s reply' \
    "$(cat "$T/serial.1.head")"
soak_rc rc explore "$T/sys/serial.yaml" --seed 0 --preemptions 1 --budget 4 --inexact \
    --out "$T/serial.x" >"$T/serial.x.out" 2>&1
cat "$T/serial.x.out"
[ "$rc" = 1 ] || expect_eq "serial --inexact: exit 2 when none failed" 2 "$rc"
expect_eq "serial --inexact: not complete" false "$(jq .complete "$T/serial.x/explore.json")"
expect_ge "serial --inexact: executions a service's requests were serialized in" 1 \
    "$(jq .inexact.serialized "$T/serial.x/explore.json")"
expect_match "serial --inexact: the headline says so" '^incomplete: .*(not exact|budget)' \
    "$(grep -E '^incomplete:' "$T/serial.x.out")"

phase "one turn, three threads with a connection each"
explore_thrice fanout
expect_match "fanout: it says the turn orders its own connections" \
    'turn 0 had connections open at once at proxy db' "$(cat "$T/fanout.1.head")"
ok "explore_agents"
