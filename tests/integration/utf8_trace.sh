# Bytes a system under test sends that are not UTF-8, or a character the
# trace's 95-byte cut of a request line would split (issue 38 item 1), reach
# the trace, the plan, the coverage and explore as valid UTF-8:
#  - each turn sends, through a real HTTP proxy, GET /caf<0xe9>/zzz…é
#    (a Latin-1 byte, then "é" at bytes 94..95 of the request line, which
#    the 95 bytes of "req" end inside), and one statement through a
#    scheduled PostgreSQL proxy whose summary has a name in UTF-8 at its cut;
#  - the seed fails (an invariant that always breaks), so the run writes
#    failures/0/plan.json; the trace reads back (every line JSON), coverage
#    counts the HTTP exchanges, and no seed's trace went unread;
#  - soak explore branches on that seed (not "nothing to explore");
#  - a trace soak cannot read back all the same (here a turn scribbles on
#    it) is soak's own error: infra, reason trace, said as such, and the
#    coverage counts the seed apart, never as one whose proxies saw nothing.
. "$(dirname "$0")/lib.sh"

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE t (turn int NOT NULL);
SQL
# an HTTP server that answers anything
cat >"$T/web.py" <<'PY'
#!/usr/bin/python3
import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["SOAK_PORT"])), H).serve_forever()
PY
# the request line, byte by byte: "GET /" (5) "caf\xe9" (4) "/" (1), 84
# 'z's (10..93), then "é" (\xc3\xa9) at 94..95
cat >"$T/get.py" <<'PY'
#!/usr/bin/python3
import os, socket
host, port = os.environ["SOAK_PROXY_API"].rsplit(":", 1)
path = b"/caf\xe9/" + b"z" * 84 + b"\xc3\xa9"
assert len(b"GET " + path) == 96
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
reply = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    reply += b
assert reply.startswith(b"HTTP/1.") and reply.endswith(b"ok"), reply
PY
# a statement whose summary is cut at a UTF-8 character: "SELECT now() AS
# \"" is 17 bytes, 71 'z's take it to 88, and "€" would end past the 91
# bytes a summary keeps before its "…"
NAME="$(printf 'z%.0s' $(seq 71))€€"
cat >"$T/turn.sh" <<SH
#!/bin/bash
set -e
$T/get.py
psql -Xq -c "INSERT INTO t VALUES (\$SOAK_TURN)"
psql -XAtq -c 'SELECT now() AS "$NAME"' >/dev/null
SH
chmod +x "$T/web.py" "$T/get.py" "$T/turn.sh"
cat >"$T/u.yaml" <<YAML
name: utf8-trace
seeds: 0..0
turns: 2
database:
  schema: $T/schema.sql
  reset: recreate
services:
  - name: web
    command: [$T/web.py]
proxies:
  - name: db
    upstream: database
    protocol: postgres
    schedule:
      mode: random
  - name: api
    upstream: service:web
    protocol: http
turn:
  command: [$T/turn.sh]
  timeout: 20s
invariants:
  - name: never a row
    sql: SELECT turn FROM t
YAML

phase "a run: the seed fails, its plan is written, its exchanges counted"
soak_rc rc run "$T/u.yaml" --out "$T/run" >"$T/run.out" 2>"$T/run.err"
sed -n '/coverage of/,/report:/p' "$T/run.out"
expect_eq "run exit status (the invariant broke)" 1 "$rc"
expect_eq "seed 0's verdict" "fail invariant" \
    "$(jq -r '.results[0] | "\(.verdict) \(.reason)"' "$T/run/report.json")"
[ -f "$T/run/failures/0/plan.json" ] || { cat "$T/run.err"; fail "no failures/0/plan.json"; }
ok "failures/0/plan.json written"
grep -q 'no plan of its trace\|cannot read its own fault trace' "$T/run.err" &&
    fail "the worker could not read its trace: $(grep -m1 'trace' "$T/run.err")"
expect_eq "coverage: the HTTP exchanges counted (one a turn)" 2 \
    "$(jq .coverage.proxies.api.exchanges "$T/run/report.json")"
expect_eq "coverage: no trace unread" 0 "$(jq .coverage.unread_traces "$T/run/report.json")"
expect_eq "coverage: the statements' steps counted" 4 "$(jq .coverage.proxies.db.steps "$T/run/report.json")"
grep -q 'saw no exchange' "$T/run.out" && fail "the summary says a proxy saw no exchange"
# the plan's steps name the statement by its summary, cut between characters
jq -e '[.proxies[] | .steps[]? | .what] | map(select(test("^SELECT now\\(\\) AS \"z{71}…$"))) | length == 2' \
    "$T/run/failures/0/plan.json" >/dev/null ||
    fail "the plan's summaries: $(jq -c '[.proxies[] | .steps[]? | .what]' "$T/run/failures/0/plan.json")"
ok "the plan's summaries cut before the character that does not fit"

phase "the whole trace: each line JSON, the request line cut between characters"
for tr in "$T/run/failures/0/trace.jsonl" "$T/run/failures/0/workspace/trace.jsonl"; do
	[ -f "$tr" ] || fail "no $tr: $(ls -R "$T/run/failures/0" | head -20)"
	jq -c . "$tr" >/dev/null || fail "$tr is not JSON lines"
done
expect_eq "the request line as the trace says it (a Latin-1 byte as ?, é left out whole)" \
    "GET /caf?/$(printf 'z%.0s' $(seq 84))" \
    "$(jq -r 'select(.proxy == "api") | .req' "$tr" | sort -u)"

phase "explore branches on the seed"
soak_rc rc explore "$T/u.yaml" --seed 0 --preemptions -1 --no-reduce --out "$T/x" >"$T/x.out" 2>&1
cat "$T/x.out"
expect_eq "explore exit status (every schedule fails)" 1 "$rc"
expect_eq "explore: C(4,2) executions" 6 "$(jq .executions "$T/x/explore.json")"
expect_eq "explore: complete" true "$(jq .complete "$T/x/explore.json")"
phase "a trace soak cannot read: infra, reason trace"
# the turn appends more than the proxy will write over at its close (the
# trace is opened before the turns, written after them, from offset 0)
cat >"$T/scribble.sh" <<'SH'
#!/bin/bash
set -e
psql -Xq -c "SELECT 1" >/dev/null
head -c 65536 /dev/zero | tr '\0' '\377' >>"$SOAK_WORKSPACE/../trace.jsonl"
echo >>"$SOAK_WORKSPACE/../trace.jsonl"
SH
chmod +x "$T/scribble.sh"
sed -e "s#command: \[$T/turn.sh\]#command: [$T/scribble.sh]#" -e 's/^turns: 2$/turns: 1/' \
    -e '/^invariants:/,$d' "$T/u.yaml" >"$T/s.yaml"
printf 'retries: 0\ninvariants:\n  - name: never\n    sql: SELECT 1 WHERE false\n' >>"$T/s.yaml"
grep -q scribble "$T/s.yaml" || fail "the scribbling config runs no scribble.sh"
soak_rc rc run "$T/s.yaml" --out "$T/srun" >"$T/srun.out" 2>"$T/srun.err"
sed -n '/coverage of/,/report:/p' "$T/srun.out"
expect_eq "seed 0's verdict" "infra trace" \
    "$(jq -r '.results[0] | "\(.verdict) \(.reason)"' "$T/srun/report.json")"
expect_match "its message says whose error it is" \
    "^soak could not read its own fault trace of the seed .*line [0-9]+ is not a JSON object.*soak's error, not the system's" \
    "$(jq -r '.results[0].message' "$T/srun/report.json")"
expect_eq "coverage: the seed counted, its trace unread" "1 1" \
    "$(jq -r '"\(.coverage.seeds) \(.coverage.unread_traces)"' "$T/srun/report.json")"
grep -q 'saw no exchange' "$T/srun.out" && fail "the summary says a proxy saw no exchange"
expect_match "the summary says the trace went unread" \
    'coverage of 1 seed \(1 whose fault trace soak could not read' "$(cat "$T/srun.out")"
ok "utf8_trace"
