#!/usr/bin/env bash
# bench/service_seam.sh — what a service through the seam costs a seed
# (docs/turns.md "What a service gets"): such a service lives for one seed,
# started once the seed's proxies are open and stopped before its last
# check.  The service is the tool server of tests/integration/
# services_seam.sh (a Python ThreadingHTTPServer with psycopg2, /usr/bin/
# python3), 2 turns of one curl each through the proxy in front of it.
#  1. REPLAYS replays of one seed (`soak replay --seed r`): the timeline's
#     own figures, "services through the seam: 1 started in N ms" and
#     "stopped in N ms", their medians;
#  2. `soak run` of SEEDS seeds with one worker, the service through the
#     seam and with seam: false (once per worker), taking turns RUNS times:
#     the seeds' own durations from report.json (duration_ms, so the
#     embedded database's start is not in it), the median of each run's
#     mean, and their difference: the cost a seed pays.
# Prints the machine's load; never fails on timing.
#   REPLAYS=10 SEEDS=40 RUNS=3 bash bench/service_seam.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPLAYS=${REPLAYS:-10}
SEEDS=${SEEDS:-40}
RUNS=${RUNS:-3}
SOAK=${SOAK:-$PWD/${BUILD:-build}/soak}
T=$(mktemp -d /tmp/soak-bench-seam.XXXXXX)
trap 'rm -rf "$T"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE seats (id int PRIMARY KEY, free int NOT NULL);
INSERT INTO seats VALUES (1, 100);
SQL
cat >"$T/tools.py" <<'PY'
#!/usr/bin/python3
import http.server, os, psycopg2
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        db = psycopg2.connect("")
        db.autocommit = True
        cur = db.cursor()
        cur.execute("SELECT free FROM seats WHERE id = 1")
        cur.execute("UPDATE seats SET free = %s WHERE id = 1", (cur.fetchone()[0] - 1,))
        db.close()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["SOAK_PORT"])), H).serve_forever()
PY
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
exec curl -fsS -X POST -d '{}' "http://$SOAK_PROXY_API/reserve_seat" >/dev/null
SH
chmod +x "$T/tools.py" "$T/turn.sh"
cfg() {	# NAME SEAM-LINE
	cat >"$T/$1.yaml" <<YAML
name: $1
turns: 2
database:
  schema: schema.sql
services:
  - name: tools
    command: [./tools.py]
$2
proxies:
  - name: db
    upstream: database
    protocol: postgres
  - name: api
    upstream: service:tools
    protocol: http
turn:
  command: [./turn.sh]
  timeout: 10s
invariants:
  - name: seats never negative
    sql: SELECT free FROM seats WHERE free < 0
YAML
}
cfg seam ""
cfg direct "    seam: false"

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$REPLAYS"); do
	"$SOAK" replay "$T/seam.yaml" --seed "$r" --out "$T/o" 2>/dev/null |
	    sed -n 's/.*services through the seam: \(1 started\|stopped\) in \([0-9]*\) ms.*/\1 \2/p'
	rm -rf "$T/o"
done >"$T/replays"
start=$(awk '$1 == 1 { print $3 }' "$T/replays" | median)
stop=$(awk '$1 == "stopped" { print $2 }' "$T/replays" | median)
echo "replays: $REPLAYS; the service's start (spawn to ready) median $start ms, its stop median $stop ms"

for i in $(seq 1 "$RUNS"); do
	for k in seam direct; do
		"$SOAK" run "$T/$k.yaml" --seeds "0..$((SEEDS - 1))" --workers 1 --out "$T/run-$k" \
		    >/dev/null 2>&1 || echo "bench/service_seam.sh: $k run exited $?" >&2
		jq '[.results[].duration_ms] | add / length' "$T/run-$k/report.json" >>"$T/$k.means"
		rm -rf "$T/run-$k"
	done
done
s=$(median <"$T/seam.means")
d=$(median <"$T/direct.means")
printf 'runs: %d x %d seeds, 1 worker: a seed %.1f ms through the seam, %.1f ms with seam: false: %+.1f ms a seed\n' \
    "$RUNS" "$SEEDS" "$s" "$d" "$(echo "$s - $d" | bc -l)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
