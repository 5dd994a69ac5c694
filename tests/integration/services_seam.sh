#!/usr/bin/env bash
# Services through the seam (issue 34 item 1; docs/turns.md "What a service
# gets"), with a tool server nobody wrote for soak between the agents and
# the database:
#  - tools: a Python ThreadingHTTPServer with psycopg2.connect("") per
#    request, started by soak as a service, that reads the seats left and
#    writes them back less one (the oversell); agents in Python (urllib) and
#    in bash + curl call it over HTTP through the soak proxy api;
#  - pool: a Node http server with a pg.Pool of one connection, which every
#    request takes in turn (a pool handing one connection to successive
#    requests), behind the proxy napi.
# Shown: each service's statements reach trace.jsonl through the proxy in
# front of the database, with its name, on its own listener; its
# environment names that listener (PGHOST, PGPORT, DATABASE_URL) and its
# own listener of every proxy (SOAK_PROXY_*); it is started per seed (a
# pid a seed) and its pool's connection never crosses a seed; `seam:
# false` keeps one direct and once per worker; with the database proxy
# scheduled its statements bypass the schedule and the summary,
# report.json's warnings and report.html count them; with the schedule on
# the HTTP proxy in front of the tool server instead, soak check, the
# summary, report.json and report.html say that it serialized the service,
# and replay lists that schedule's steps by request line.
. "$(dirname "$0")/lib.sh"
NODE_DIR=$ROOT/tests/integration/node
[ -f "$NODE_DIR/node_modules/pg/package.json" ] ||
    fail "tests/integration/node/node_modules/pg is not there: make deps installs it"

mkdir "$T/sys" "$T/sys/env"
cat >"$T/sys/schema.sql" <<'SQL'
CREATE TABLE seats (id int PRIMARY KEY, free int NOT NULL);
INSERT INTO seats VALUES (1, 3);
CREATE TABLE sold (turn int NOT NULL, via text NOT NULL);
CREATE TABLE hits (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO hits VALUES (1, 0);
SQL
# The tool: its environment and pid written once it starts, then per
# request a connection of its own, a read, and a write of what it read.
cat >"$T/sys/tools.py" <<'PY'
#!/usr/bin/python3
import http.server, json, os, psycopg2
with open("%s/env/tools-%s-%d" % (os.environ["SOAK_CONFIG_DIR"],
          os.environ.get("SOAK_SEED", "worker"), os.getpid()), "w") as f:
    f.write("".join("%s=%s\n" % kv for kv in sorted(os.environ.items())))
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
            cur.execute("INSERT INTO sold (turn, via) VALUES (%s, %s)",
                        (body["turn"], body["via"]))
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
# The pool: one connection (max 1), taken by each request in turn.
cat >"$T/sys/pool.js" <<JS
const http = require("http"), fs = require("fs");
const pg = require("$NODE_DIR/node_modules/pg");
const e = process.env;
fs.writeFileSync(e.SOAK_CONFIG_DIR + "/env/pool-" + (e.SOAK_SEED || "worker") + "-" +
    process.pid, Object.keys(e).sort().map(k => k + "=" + e[k] + "\n").join(""));
const pool = new pg.Pool({ max: 1 });
http.createServer(async (req, res) => {
	const c = await pool.connect();
	try {
		const r = await c.query("SELECT n FROM hits WHERE id = 1");
		await c.query("UPDATE hits SET n = \$1 WHERE id = 1", [r.rows[0].n + 1]);
	} finally {
		c.release();
	}
	res.writeHead(200, { "Content-Type": "text/plain" });
	res.end("ok\n");
}).listen(Number(e.SOAK_PORT), "127.0.0.1");
JS
cat >"$T/sys/agent.py" <<'PY'
#!/usr/bin/python3
import json, os, urllib.request
def post(addr, path, body):
    req = urllib.request.Request("http://" + addr + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=10).read()
# DIRECT=1: the tool server on its own port, not through its proxy
api = os.environ["SOAK_SERVICE_TOOLS" if os.environ.get("DIRECT") else "SOAK_PROXY_API"]
for _ in range(2):
    post(api, "/reserve_seat",
         {"turn": int(os.environ["SOAK_TURN"]), "via": "python"})
post(os.environ["SOAK_PROXY_NAPI"], "/hit", {})
PY
cat >"$T/sys/agent.sh" <<'SH'
#!/bin/bash
set -euo pipefail
api=$SOAK_PROXY_API
[ -z "${DIRECT:-}" ] || api=$SOAK_SERVICE_TOOLS
for _ in 1 2; do
	curl -fsS -X POST -H 'Content-Type: application/json' \
	    -d "{\"turn\": $SOAK_TURN, \"via\": \"curl\"}" "http://$api/reserve_seat" >/dev/null
done
curl -fsS -X POST "http://$SOAK_PROXY_NAPI/hit" >/dev/null
SH
# turn 0 in Python, turn 1 in bash
cat >"$T/sys/turn.sh" <<'SH'
#!/bin/bash
[ "$SOAK_TURN" = 0 ] && exec "$SOAK_CONFIG_DIR/agent.py"
exec "$SOAK_CONFIG_DIR/agent.sh"
SH
chmod +x "$T/sys/tools.py" "$T/sys/agent.py" "$T/sys/agent.sh" "$T/sys/turn.sh"

# cfg NAME SEEDS DB-EXTRA API-EXTRA TOOLS-EXTRA [TURN-COMMAND]
cfg() {
	cat >"$T/sys/$1.yaml" <<YAML
name: $1
seeds: $2
turns: 2
seed_timeout: 30s
database:
  schema: schema.sql
services:
  - name: tools
    command: [./tools.py]
$5
  - name: pool
    command: [node, $T/sys/pool.js]
proxies:
  - name: db
    upstream: database
    protocol: postgres
$3
  - name: api
    upstream: service:tools
    protocol: http
$4
  - name: napi
    upstream: service:pool
    protocol: http
turn:
  command: [${6:-./turn.sh}]
  timeout: 20s
invariants:
  - name: no seat sold twice
    sql: SELECT s.free, count(*) AS sold FROM seats s, sold GROUP BY s.free HAVING s.free + count(*) <> 3
YAML
}
SCHED='    schedule:
      mode: random'
cfg seam 0..2 "" "" ""
cfg direct 0..2 "" "" "    seam: false"
# a service's lives are counted a seed each: no confirming re-run of a
# failing seed (the race is caught in some seeds) adds one
for c in seam direct; do printf 'confirm: false\n' >>"$T/sys/$c.yaml"; done
# arrival short: the pool is a Node service, whose timers soak cannot
# prove idle (docs/faults.md "Services under a schedule")
cfg dbsched 0..3 "$SCHED
      arrival: 100ms" "" ""
cfg bycall 0..3 "$SCHED
      arrival: 100ms" "" "" "env, DIRECT=1, $T/sys/turn.sh"
# arrival short: a turn's HTTP client waits with a timeout (urllib's,
# curl's), which soak cannot prove idle (gate.h "Actors")
cfg apisched 0..3 "" "$SCHED
      arrival: 100ms" ""
envv() { sed -n "s/^$1=//p" "$2"; }
# the envs one service wrote in a run, one file a life
lives() { ls "$T/sys/env" | grep -c "^$1-" || true; }

phase "through the seam by default: one seed replayed, its trace kept"
soak_rc rc replay "$T/sys/seam.yaml" --seed 1 --keep --out "$T/rep" -v \
    >"$T/rep.out" 2>"$T/rep.err"
cat "$T/rep.out"
ws=$(sed -n 's/^workspace kept: //p' "$T/rep.out")
cleanup_hooks+=("rm -rf '$ws'")
tr=$ws/trace.jsonl
[ -f "$tr" ] || { cat "$T/rep.err"; fail "replay --keep: no trace.jsonl in $ws"; }
expect_match "replay's timeline: the services started, with what it cost" \
    'services through the seam: 2 started in [0-9]+ ms' "$(cat "$T/rep.out")"
expect_match "replay's timeline: and were stopped" \
    'services through the seam: stopped in [0-9]+ ms' "$(cat "$T/rep.out")"
echo "figures: $(grep -oE 'services through the seam: (2 started|stopped) in [0-9]+ ms' "$T/rep.out" | tr '\n' ' ')"
expect_ge "tools: its statements in the trace through proxy db, with its name" 6 \
    "$(jq -c 'select(.proxy == "db" and .service == "tools" and .sql != null)' "$tr" | wc -l)"
expect_match "tools: its read and its write" 'SELECT free FROM seats.*UPDATE seats' \
    "$(jq -r 'select(.proxy == "db" and .service == "tools") | .sql // empty' "$tr" | tr '\n' ' ')"
expect_eq "tools: on its own actor, after the 2 turns" 2 \
    "$(jq -r 'select(.service == "tools") | .turn' "$tr" | sort -u | tr -d '\n')"
expect_eq "pool: its actor" 3 "$(jq -r 'select(.service == "pool") | .turn' "$tr" | sort -u | tr -d '\n')"
expect_eq "pool: its two requests' statements on its one connection" \
    "0 4" "$(jq -r 'select(.proxy == "db" and .service == "pool" and .sql != null) | .conn' "$tr" | sort -u | tr -d '\n') $(jq -c 'select(.proxy == "db" and .service == "pool" and .sql != null)' "$tr" | wc -l)"
expect_eq "no bypass where nothing is scheduled" 0 "$(jq -c 'select(.bypass)' "$tr" | wc -l)"
expect_eq "the turns' requests at api are the turns' own" "0 1" \
    "$(jq -r 'select(.proxy == "api") | .turn' "$tr" | sort -u | tr '\n' ' ' | sed 's/ $//')"

phase "what the seam services saw"
f=$(ls "$T/sys/env"/tools-1-* | head -n 1)
port=$(envv PGPORT "$f")
expect_eq "tools: PGHOST is the loopback" 127.0.0.1 "$(envv PGHOST "$f")"
expect_eq "tools: PGPORT is its own listener of db" "127.0.0.1:$port" "$(envv SOAK_PROXY_DB "$f")"
expect_match "tools: DATABASE_URL names it too" "@127\.0\.0\.1:$port/" "$(envv DATABASE_URL "$f")"
expect_match "tools: SOAK_DIRECT_PGPORT is not it" '^.+$' "$(envv SOAK_DIRECT_PGHOST "$f")"
[ "$(envv SOAK_DIRECT_PGPORT "$f")" != "$port" ] || fail "tools: SOAK_DIRECT_PGPORT is the proxy's"
for p in DB API NAPI; do
	expect_match "tools: SOAK_PROXY_$p is a listener" '^127\.0\.0\.1:[0-9]+$' \
	    "$(envv SOAK_PROXY_$p "$f")"
done
expect_eq "tools: SOAK_SEED" 1 "$(envv SOAK_SEED "$f")"
g=$(ls "$T/sys/env"/pool-1-* | head -n 1)
[ "$(envv SOAK_PROXY_DB "$g")" != "$(envv SOAK_PROXY_DB "$f")" ] ||
    fail "pool and tools share a listener of db"
ok "pool: a listener of db of its own"
expect_eq "tools' listeners were those its statements went through" \
    "$(envv SOAK_PROXY_API "$f")" "$(envv SOAK_PROXY_API "$f")"

phase "a run: each seed starts its own service, seam: false once per worker"
rm -f "$T/sys/env"/*
soak_rc rc run "$T/sys/seam.yaml" --workers 1 --out "$T/out-seam" >"$T/seam.out" 2>"$T/seam.err"
grep 'seeds in' "$T/seam.out" || { cat "$T/seam.out" "$T/seam.err"; fail "seam: no summary"; }
expect_eq "seam: a tools life a seed" 3 "$(lives tools)"
expect_eq "seam: a pool life a seed" 3 "$(lives pool)"
expect_eq "seam: each seed's tools knew its seed" "0 1 2" \
    "$(ls "$T/sys/env" | sed -n 's/^tools-\([0-9]*\)-.*/\1/p' | sort -n | tr '\n' ' ' | sed 's/ $//')"
expect_eq "seam: no warning of a bypass" 0 \
    "$(jq '[.coverage.warnings[] | select(test("bypassed"))] | length' "$T/out-seam/report.json")"
rm -f "$T/sys/env"/*
soak_rc rc run "$T/sys/direct.yaml" --workers 1 --out "$T/out-direct" >"$T/direct.out" 2>"$T/direct.err"
grep 'seeds in' "$T/direct.out" || { cat "$T/direct.out" "$T/direct.err"; fail "direct: no summary"; }
expect_eq "seam: false: one tools life for the worker's 3 seeds" 1 "$(lives tools)"
f=$(ls "$T/sys/env"/tools-worker-* | head -n 1)
expect_eq "seam: false: PGPORT is the database's" "$(envv SOAK_DIRECT_PGPORT "$f")" "$(envv PGPORT "$f")"
expect_eq "seam: false: PGHOST is the database's" "$(envv SOAK_DIRECT_PGHOST "$f")" "$(envv PGHOST "$f")"
expect_eq "seam: false: no SOAK_PROXY_*" "" "$(grep '^SOAK_PROXY_' "$f" || true)"
expect_eq "seam: false: pool through the seam still, a life a seed" 3 "$(lives pool)"

phase "the database proxy scheduled: the services' statements held as the turns' they serve"
soak_rc rc run "$T/sys/dbsched.yaml" --workers 1 --out "$T/out-db" >"$T/db.out" 2>"$T/db.err"
cat "$T/db.out"
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || { cat "$T/db.err"; fail "dbsched: run exit $rc"; }
R=$T/out-db/report.json
expect_eq "dbsched: no infra verdict" 0 "$(jq .totals.infra "$R")"
# a schedule that loses track of when the service is quiet stalls a turn
# until its client's own timeout (urllib's, curl's): a failed turn
expect_eq "dbsched: every turn ended well" 0 \
    "$(jq '[.results[] | select(.reason == "guard")] | length' "$R")"
expect_eq "dbsched: no statement of tools bypassed the schedule" 0 \
    "$(jq '.coverage.proxies.db.bypassed.tools.exchanges // 0' "$R")"
expect_eq "dbsched: nor is one said to" "" "$(grep 'statements of service tools bypassed' "$T/db.out" || true)"
expect_ge "dbsched: the schedule took steps in every seed" 4 \
    "$(jq '[.results[] | select(.verdict != "infra")] | length' "$R")"
soak_rc rc replay "$T/sys/dbsched.yaml" --seed 0 --keep --out "$T/rep-db" >"$T/rep-db.out" 2>&1
ws=$(sed -n 's/^workspace kept: //p' "$T/rep-db.out")
cleanup_hooks+=("rm -rf '$ws'")
tr=$ws/trace.jsonl
[ -f "$tr" ] || { cat "$T/rep-db.out"; fail "dbsched: replay --keep kept no trace"; }
expect_ge "dbsched: tools' statements are steps of the schedule" 6 \
    "$(jq -c 'select(.proxy == "db" and .service == "tools" and .sql != null and .step != null)' "$tr" | wc -l)"
expect_eq "dbsched: ... none unheld" 0 \
    "$(jq -c 'select(.service == "tools" and .bypass)' "$tr" | wc -l)"
expect_eq "dbsched: ... each the turn's whose request it served" "0 1" \
    "$(jq -r 'select(.proxy == "db" and .service == "tools" and .step != null) | .turn' "$tr" | sort -u | tr '\n' ' ' | sed 's/ $//')"
# each turn's reads and writes at db: turn 0 (Python) and turn 1 (curl)
# made two calls each, each call a read and (seats left) a write
expect_ge "dbsched: turn 0's calls' reads, held as its own" 2 \
    "$(jq -c 'select(.proxy == "db" and .service == "tools" and .turn == 0 and (.sql // "" | startswith("SELECT free")))' "$tr" | wc -l)"
expect_ge "dbsched: turn 1's (curl) likewise" 2 \
    "$(jq -c 'select(.proxy == "db" and .service == "tools" and .turn == 1 and (.sql // "" | startswith("SELECT free")))' "$tr" | wc -l)"
expect_ge "dbsched: the front let each request go once the service was quiet" 4 \
    "$(jq -c 'select(.proxy == "api" and .served == "quiet")' "$tr" | wc -l)"
expect_eq "dbsched: the front, with no schedule of its own, took no step" 0 \
    "$(jq -c 'select(.proxy == "api" and .step != null)' "$tr" | wc -l)"

phase "the tool server called on its own port: whose request cannot be told, counted"
soak_rc rc run "$T/sys/bycall.yaml" --workers 1 --out "$T/out-by" >"$T/by.out" 2>"$T/by.err"
cat "$T/by.out"
R=$T/out-by/report.json
expect_match "bycall: the summary counts the tool server's statements" \
    'warning: proxy db: [0-9]+ statements of service tools bypassed the schedule \(random\), in 4 of the 4 seeds' \
    "$(cat "$T/by.out")"
expect_ge "bycall: report.json counts tools' bypassed statements" 16 \
    "$(jq '.coverage.proxies.db.bypassed.tools.exchanges' "$R")"
expect_match "bycall: report.json's warnings say it" 'statements of service tools bypassed the schedule' \
    "$(jq -r '.coverage.warnings[]' "$R")"
expect_match "bycall: the page shows it" 'statements of service tools bypassed the schedule' \
    "$(cat "$T/out-by/report.html")"

phase "the schedule on the HTTP proxy in front of the tool server: serialized, said"
soak_rc rc check "$T/sys/apisched.yaml" >"$T/check.out" 2>"$T/check.err"
cat "$T/check.out" "$T/check.err"
expect_eq "check: exit 0 (a warning)" 0 "$rc"
expect_match "check: the schedule serializes the service, by name" \
    'apisched.yaml:[0-9]+:[0-9]+: proxies\[1\]\.schedule: warning: a schedule on proxy api serializes service tools' \
    "$(cat "$T/check.err")"
expect_match "check: what the services get" 'services\[0\]: note: service tools goes through the seam' \
    "$(cat "$T/check.out")"
soak_rc rc run "$T/sys/apisched.yaml" --workers 1 --out "$T/out-api" >"$T/api.out" 2>"$T/api.err"
cat "$T/api.out"
R=$T/out-api/report.json
expect_match "apisched: the summary says it serialized the service" \
    'warning: proxy api: its schedule \(random\) serialized service tools in [1-4] of the 4 seeds' \
    "$(cat "$T/api.out")"
expect_ge "apisched: report.json counts the steps" 1 "$(jq '.coverage.proxies.api.serialized.steps' "$R")"
expect_match "apisched: report.json's warnings say it" 'serialized service tools' \
    "$(jq -r '.coverage.warnings[]' "$R")"
expect_match "apisched: the page shows it" 'serialized service tools' "$(cat "$T/out-api/report.html")"
soak_rc rc replay "$T/sys/apisched.yaml" --seed 0 --keep --out "$T/rep-api" >"$T/rep-api.out" 2>&1
ws=$(sed -n 's/^workspace kept: //p' "$T/rep-api.out")
cleanup_hooks+=("rm -rf '$ws'")
expect_match "replay: the HTTP schedule's steps by request line" \
    'turn [01] +POST /reserve_seat' "$(cat "$T/rep-api.out")"
expect_eq "replay: none without its statement" "" "$(grep -F '(no statement)' "$T/rep-api.out" || true)"
ok "services_seam"
