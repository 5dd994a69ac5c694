# "Yes twice": a duplicating proxy in front of a slow service that writes.
# The turn gets its reply from the first delivery and exits; the duplicate
# delivery is still in the service when the round ends.  The invariants
# must wait for it (proxy_set_settle) and see both writes — checked too
# early, every seed would pass with the duplicate not yet landed.
. "$(dirname "$0")/lib.sh"

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE refunds (turn int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
SQL
# The service: each POST is a refund that takes 300 ms at the bank (in the
# database: pg_sleep inside the INSERT), then the reply.
cat >"$T/bank.py" <<'PY'
#!/usr/bin/env python3
import http.server, os, subprocess
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        turn = int(self.rfile.read(int(self.headers["Content-Length"])))
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c",
            "INSERT INTO refunds (turn) SELECT %d FROM pg_sleep(0.3)" % turn], check=True)
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["SOAK_PORT"])), H).serve_forever()
PY
chmod +x "$T/bank.py"
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
exec curl -sf -m 10 -o /dev/null -d "$SOAK_TURN" "http://$SOAK_PROXY_BANK/refund"
SH
chmod +x "$T/turn.sh"
cat >"$T/settle.yaml" <<'YAML'
name: settle
seeds: 0..3
turns: 2
confirm: false
database:
  schema: schema.sql
services:
  - name: bank
    command: [./bank.py]
proxies:
  - name: bank
    upstream: service:bank
    protocol: http
    faults:
      rate: 100%
      duplicate: 1
turn:
  command: [./turn.sh]
invariants:
  - name: at most one refund per turn
    sql: SELECT turn, count(*) AS n FROM refunds GROUP BY turn HAVING count(*) > 1 ORDER BY turn
guard:
  min_ok_turns: 100%
YAML

soak_rc rc run "$T/settle.yaml" --workers 2 --out "$T/out" >"$T/run.out" 2>"$T/run.err"
cat "$T/run.out"
expect_eq "run exit status" 1 "$rc"
check_report "$T/out" 0 3
R=$T/out/report.json
expect_eq "every seed caught the duplicate refund" 4 "$(jq .totals.fail "$R")"
expect_eq "what broke" '["at most one refund per turn"]' \
    "$(jq -c '[.results[].invariants[]?.name] | unique' "$R")"
expect_eq "rows: both turns refunded twice, in every seed" '[[["0","2"],["1","2"]]]' \
    "$(jq -c '[.results[].invariants[0].rows] | unique' "$R")"
expect_eq "every turn got its reply" 8 "$(jq '[.results[].ok_turns] | add' "$R")"
