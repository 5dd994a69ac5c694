# A schedule's actors are connections, judged from what /proc shows
# (fault-proxy/gate.h "Actors", docs/faults.md "Actors"): shapes soak's
# examples are not.
#  1. One Python turn fans three tool calls out at once (seeds/000's
#     asyncio.gather), in threads, a psycopg2 connection each, read then
#     write: the lost update is caught, and every failing seed replays by
#     seed and by plan step for step with the run's schedule — each thread's
#     connection keeps its lane though every one starts with the same BEGIN
#     and they race to connect; passing seeds pass again.
#  2. A turn that asks a model between its read and its write, the model
#     (a service) slower than the schedule's `arrival`: behind a proxy, the
#     turn is busy, not late (no decision forced, though the HTTP client
#     waits with a timeout of its own); called directly, the decisions are
#     forced and the summary names the turns and what to do.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c 'import psycopg2' 2>/dev/null ||
    fail "python3-psycopg2 is not installed (make deps)"

phase "fan-out: one turn, three threads, a connection each"
cat >"$T/fan.sql" <<'SQL'
CREATE TABLE customers (id int PRIMARY KEY, points int NOT NULL);
INSERT INTO customers SELECT g, 0 FROM generate_series(1, 2) g;
CREATE TABLE awards (customer int NOT NULL, points int NOT NULL, turn int NOT NULL);
SQL
cat >"$T/fan.py" <<'PY'
#!/usr/bin/python3
# One agent turn fanning three tool calls out at once, each its own
# psycopg2 connection: read the points, write them back plus the award.
import os, random, threading, psycopg2
turn = int(os.environ["SOAK_TURN"])
rng = random.Random(int(os.environ["SOAK_TURN_SEED"]))
calls = [(rng.randint(1, 2), rng.randint(1, 9)) for _ in range(3)]
def add_points(cust, pts):
    conn = psycopg2.connect("")
    with conn, conn.cursor() as cur:
        cur.execute("SELECT points FROM customers WHERE id = %s", (cust,))
        (have,) = cur.fetchone()
        cur.execute("UPDATE customers SET points = %s WHERE id = %s", (have + pts, cust))
        cur.execute("INSERT INTO awards VALUES (%s, %s, %s)", (cust, pts, turn))
    conn.close()
ts = [threading.Thread(target=add_points, args=c) for c in calls]
[t.start() for t in ts]
[t.join() for t in ts]
PY
chmod +x "$T/fan.py"
cat >"$T/fan.yaml" <<YAML
name: fanout
turns: 1
seed_timeout: 60s
database:
  schema: $T/fan.sql
proxies:
  - name: db
    upstream: database
    protocol: postgres
    # generous watchdogs: a loaded CI machine must not decide for the
    # schedule; what is asserted is that nothing needed them
    schedule: {mode: random, arrival: 10s, blocked: 5s}
turn:
  command: [$T/fan.py]
  timeout: 30s
invariants:
  - name: points match the awards
    sql: |
      SELECT c.id, c.points, coalesce(sum(a.points), 0) AS awarded
      FROM customers c LEFT JOIN awards a ON a.customer = c.id
      GROUP BY c.id, c.points HAVING c.points <> coalesce(sum(a.points), 0)
YAML
soak_rc rc run "$T/fan.yaml" --seeds 0..9 --out "$T/fan" >"$T/fan.out" 2>&1
expect_eq "fan-out: run exit status" 1 "$rc"
nfail=$(jq '[.results[] | select(.verdict == "fail")] | length' "$T/fan/report.json")
expect_ge "fan-out: seeds whose lost update was caught (of 10)" 3 "$nfail"
expect_eq "fan-out: infra verdicts" 0 \
    "$(jq '[.results[] | select(.verdict == "infra")] | length' "$T/fan/report.json")"
expect_eq "fan-out: decisions forced by a timeout" 0 \
    "$(cat "$T"/fan/failures/*/trace.jsonl | jq -s '[.[] | select(.forced != null)] | length')"
lanes=$(cat "$T"/fan/failures/*/trace.jsonl | jq -s '[.[] | select(.lane != null)] | length')
expect_ge "fan-out: steps on a lane other than 0 (the turn's second and third connections)" 1 "$lanes"
expect_eq "fan-out: lanes given by arrival (a tie nothing told apart)" 0 \
    "$(cat "$T"/fan/failures/*/trace.jsonl | jq -s '[.[] | select(.lane_tie != null)] | length')"
n=0
for seed in $(jq -r '[.results[] | select(.verdict == "fail") | .seed] | .[0:3] | .[]' "$T/fan/report.json"); do
	tr=$T/fan/failures/$seed/trace.jsonl
	soak_rc rc replay "$T/fan.yaml" --seed "$seed" --trace "$tr" --out "$T/r" >"$T/r.out" 2>&1
	expect_eq "fan-out: seed $seed replayed" 1 "$rc"
	expect_match "fan-out: seed $seed's replay kept the run's schedule" \
	    '^schedule: the same as the run.s, all [0-9]+ steps$' "$(grep '^schedule:' "$T/r.out")"
	soak_rc rc replay "$T/fan.yaml" --plan "$T/fan/failures/$seed/plan.json" --trace "$tr" \
	    --out "$T/p" >"$T/p.out" 2>&1
	expect_eq "fan-out: seed $seed's plan replayed" 1 "$rc"
	expect_match "fan-out: seed $seed's plan kept the run's schedule" \
	    '^schedule: the same as the run.s, all [0-9]+ steps$' "$(grep '^schedule:' "$T/p.out")"
	rm -rf "$T/r" "$T/p"
	n=$((n + 1))
done
expect_ge "fan-out: failing seeds replayed step for step, by seed and by plan" 3 "$n"
for seed in $(jq -r '[.results[] | select(.verdict == "pass") | .seed] | .[0:2] | .[]' "$T/fan/report.json"); do
	soak_rc rc replay "$T/fan.yaml" --seed "$seed" --out "$T/r" >"$T/r.out" 2>&1
	expect_eq "fan-out: passing seed $seed passes again" 0 "$rc"
	rm -rf "$T/r"
done

phase "a model slower than arrival, behind a proxy and called directly"
cat >"$T/budget.sql" <<'SQL'
CREATE TABLE budget (id int PRIMARY KEY, remaining int NOT NULL);
INSERT INTO budget VALUES (1, 100);
CREATE TABLE spends (turn int NOT NULL, amount int NOT NULL);
SQL
cat >"$T/model.py" <<'PY'
#!/usr/bin/python3
# A fake model: answers after 0.8..1.0 s, as a model takes its seconds.
# The sleep is the system under test's (a model's latency is what this
# phase is about), not the test's coordination: nothing waits on it.
import os, random, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(random.uniform(0.8, 1.0))
        body = b'{"spend": 7}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("127.0.0.1", int(os.environ["SOAK_PORT"])), H).serve_forever()
PY
cat >"$T/agent.py" <<'PY'
#!/usr/bin/python3
# Read the budget, ask the model what to spend (urllib, a 10 s timeout of
# its own), write the budget back: the lost update seeds/001 tells.
import json, os, sys, urllib.request, psycopg2
where = os.environ["SOAK_PROXY_MODEL" if sys.argv[1] == "proxy" else "SOAK_SERVICE_MODEL"]
conn = psycopg2.connect("")
conn.autocommit = True
cur = conn.cursor()
cur.execute("SELECT remaining FROM budget WHERE id = 1")
(left,) = cur.fetchone()
req = urllib.request.Request("http://%s/v1/plan" % where, data=b"{}", method="POST")
spend = json.load(urllib.request.urlopen(req, timeout=10))["spend"]
cur.execute("UPDATE budget SET remaining = %s WHERE id = 1", (left - spend,))
cur.execute("INSERT INTO spends VALUES (%s, %s)", (int(os.environ["SOAK_TURN"]), spend))
PY
chmod +x "$T/model.py" "$T/agent.py"
for how in proxy direct; do
	cat >"$T/$how.yaml" <<YAML
name: model-$how
turns: 3
seed_timeout: 60s
database:
  schema: $T/budget.sql
services:
  - name: model
    command: [$T/model.py]
proxies:
  - name: db
    upstream: database
    protocol: postgres
    schedule: {mode: random, arrival: 400ms}
  - name: model
    upstream: service:model
    protocol: http
turn:
  command: [$T/agent.py, $how]
  timeout: 30s
invariants:
  - name: the budget adds up
    sql: SELECT b.remaining, s.spent FROM budget b, (SELECT coalesce(sum(amount), 0) AS spent FROM spends) s WHERE b.remaining + s.spent <> 100
YAML
	soak_rc rc run "$T/$how.yaml" --seeds 0..3 --out "$T/$how" >"$T/$how.out" 2>&1
	[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || { tail -n 20 "$T/$how.out"; fail "model $how: run exit $rc"; }
	expect_eq "model $how: infra verdicts" 0 \
	    "$(jq '[.results[] | select(.verdict == "infra")] | length' "$T/$how/report.json")"
done
expect_eq "model behind a proxy: decisions forced by arrival" 0 \
    "$(jq '[.coverage.proxies.db.forced.arrival // 0] | add' "$T/proxy/report.json")"
forced=$(jq '[.coverage.proxies.db.forced.arrival // 0] | add' "$T/direct/report.json")
expect_ge "model called directly: decisions forced by arrival" 1 "$forced"
expect_match "model called directly: the summary names the turns and what to do" \
    'decisions forced by arrival .* went without turn' "$(cat "$T/direct.out")"
echo "figures: fan-out $nfail of 10 seeds fail, $n replayed step for step by seed and plan; model behind a proxy 0 forced, called directly $forced forced"
