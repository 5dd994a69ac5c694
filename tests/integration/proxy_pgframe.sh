#!/usr/bin/env bash
# PostgreSQL framing in the fault proxy, against a real PostgreSQL and libpq:
#  - with no faults, a session of every shape (simple, extended, a failing
#    statement in a transaction, a named prepared statement, COPY in and
#    out, a 2 MB result, a notification, a pipeline of three Syncs, a COPY
#    the client aborts with CopyFail and a statement after it) gets
#    exactly what it gets directly, through `protocol: postgres` and `auto`;
#    the trace has one exchange per statement with its first words, no
#    literal values, and the transaction state after it; a raw client gets
#    the very same bytes back directly and through the proxy;
#  - `--match '^COMMIT'` with lost_reply at rate 1 faults the COMMIT only:
#    the row is committed, the client saw an error;
#  - a duplicated INSERT lands twice (start-up replayed on a new session);
#  - a database that requires TLS is refused with the proxy's own
#    ErrorResponse naming the reason, and a log line, never a hang;
#  - garbage from the client is refused and logged escaped.
. "$(dirname "$0")/pglib.sh" proxy-pgframe
# TLS on, and TCP connections only with TLS: the proxy dials the unix
# socket for the framing tests and 127.0.0.1 for the TLS refusal.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
	-keyout "$dir/data/server.key" -out "$dir/data/server.crt" 2>/dev/null
chown postgres "$dir/data/server.key" "$dir/data/server.crt"; chmod 600 "$dir/data/server.key"
printf 'local all all trust\nhostssl all all 127.0.0.1/32 trust\n' >"$dir/data/pg_hba.conf"
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$dir/data" -w -t 30 -l "$dir/data/pg.log" \
	-o "-k $dir -p $port -c listen_addresses=127.0.0.1 -c fsync=off -c ssl=on" start >/dev/null
sql() { psql -X -q -t -A -h "$dir" -p "$port" -U postgres -d postgres -c "$1"; }
sql "CREATE TABLE t (id int primary key, v text)"

run_proxy() {	# NAME UPSTREAM ARGS... -> $px
	local name=$1 up=$2; shift 2
	"$SOAK_BIN" proxy --name pg --listen 127.0.0.1:0 --upstream "$up" --seed 7 \
		--trace "$dir/$name.jsonl" "$@" >"$dir/$name.out" 2>"$dir/$name.err" & pids+=($!)
	ppid_=$!
	wait_line "$dir/$name.out" '^listening on' 10 "proxy $name listening" >/dev/null
	px=$(awk '/^listening on/{print $3}' "$dir/$name.out")
}
unix="unix:$dir/.s.PGSQL.$port"
ci() { echo "host=127.0.0.1 port=${px#*:} user=postgres dbname=postgres sslmode=${1:-prefer} gssencmode=disable connect_timeout=5"; }

# the reference: directly over the unix socket
"$H/proxy_pgframe" "host=$dir port=$port user=postgres dbname=postgres" >"$dir/direct.txt" ||
    { cat "$dir/direct.txt"; die "direct session failed"; }
grep -q '^done$' "$dir/direct.txt" || die "direct session did not finish"
# The COPY the client aborted (CopyFail) failed with 57014, and the same
# count of rows before and after it: none of its rows landed.
grep -q '^copy_fail: PGRES_FATAL_ERROR .* sqlstate=57014 ' "$dir/direct.txt" ||
    die "the aborted COPY did not fail as aborted: $(grep copy_fail "$dir/direct.txt")"
[ "$(grep '^count:' "$dir/direct.txt" | cut -d' ' -f2-6)" = \
    "$(grep '^count_after_copy_fail:' "$dir/direct.txt" | cut -d' ' -f2-6)" ] ||
    die "the aborted COPY changed the table: $(grep '^count' "$dir/direct.txt")"

for proto in postgres auto; do
	sql "TRUNCATE t"
	# sslmode=prefer: libpq asks for TLS first; the proxy says N
	run_proxy "$proto" "$unix" --protocol "$proto"
	# a watchdog: a proxy that loses track of an exchange (a CopyFail
	# taken for a new one) leaves the client waiting for a reply
	rc=0; timeout 60 "$H/proxy_pgframe" "$(ci prefer)" >"$dir/$proto.txt" || rc=$?
	[ $rc = 124 ] && { cat "$dir/$proto.txt" "$dir/$proto.err"
	    die "watchdog: $proto: the session through the proxy still running after 60 s (last: $(tail -n 1 "$dir/$proto.txt"))"; }
	[ $rc = 0 ] || { cat "$dir/$proto.txt" "$dir/$proto.err"; die "$proto: session through the proxy failed (exit $rc)"; }
	stop_proxy
	diff "$dir/direct.txt" "$dir/$proto.txt" ||
	    die "$proto: the session through the proxy differs from the direct one"
	python3 - "$dir/$proto.jsonl" <<'EOF' || die "$proto: trace not as expected"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
got = [(r["exchange"], r.get("pg"), r.get("sql"), r.get("tx"), r.get("note")) for r in recs]
want = [
    (0, "startup", None, "I", None),
    (1, "simple", "SELECT \u2026", "I", None),
    (2, "extended", "SELECT $1::int + \u2026", "I", None),
    (3, "simple", "BEGIN", "T", None),
    (4, "simple", "INSERT INTO t VALUES (\u2026", "T", None),
    (5, "simple", "SELECT \u2026", "E", None),
    (6, "simple", "ROLLBACK", "I", None),
    (7, "extended", "INSERT INTO t VALUES ($1, $2)", "I", None),
    (8, "extended", "INSERT INTO t VALUES ($1, $2)", "I", None),
    (9, "simple", "COPY t FROM STDIN", "I", "copy passed through unframed"),
    (10, "simple", "COPY (SELECT * FROM t ORDER BY id) \u2026", "I", "copy passed through unframed"),
    (11, "simple", "SELECT i, repeat(md5(i::text), \u2026", "I", None),
    (12, "simple", "LISTEN soak_ch", "I", None),
    (13, "simple", "NOTIFY soak_ch, \u2026", "I", "notification passed through unframed"),
    (14, "extended", "SELECT $1::int * \u2026", "I", None),
    (15, "extended", "SELECT $1::int * \u2026", "I", None),
    (16, "extended", "SELECT $1::int * \u2026", "I", None),
    (17, "simple", "SELECT count(*) FROM t", "I", None),
    (18, "simple", "COPY t FROM STDIN", "I", "copy passed through unframed"),
    (19, "simple", "SELECT count(*) FROM t", "I", None),
    (20, "terminate", None, None, None),
]
if got != want:
    for g, w in zip(got + [None] * 20, want + [None] * 20):
        if g or w:
            print("got ", g, "\nwant", w, "" if g == w else "   <<<")
    sys.exit(1)
for r in recs:
    assert r["fault"] == "none" and r["conn"] == 0, r
big = recs[11]
assert big["bytes_down"] > 2 * 1000 * 1000, big
assert all(r["upstream_saw"] for r in recs), recs
EOF
	# no secret or value reaches the trace: the literals are cut
	! grep -Eq "'lit'|hello|copied-" "$dir/$proto.jsonl" || die "$proto: a literal value in the trace"
done
echo "framing: ok"

# byte for byte: what a raw client gets back after its start-up, directly
# and through the proxy, is the same (a 2 MB result, two pipelined extended
# batches, an error), however the kernel cut the reads
run_proxy raw "$unix" --protocol postgres
python3 - "$dir/.s.PGSQL.$port" "${px#*:}" <<'PY' || die "raw: the proxy changed the bytes"
import socket, struct, sys
def msg(t, body): return t + struct.pack("!I", len(body) + 4) + body
def session(sock):
    body = b"\x00\x03\x00\x00user\x00postgres\x00database\x00postgres\x00\x00"
    sock.sendall(struct.pack("!I", len(body) + 4) + body)
    got = b""
    while not got.endswith(b"Z\x00\x00\x00\x05I"):
        c = sock.recv(65536); assert c, "closed in start-up"; got += c
    q = msg(b"Q", b"SELECT i, repeat('x', 100000) FROM generate_series(1, 20) i\x00")
    ext = (msg(b"P", b"\x00SELECT $1::int * 3\x00\x00\x00") +
           msg(b"B", b"\x00\x00\x00\x00\x00\x01\x00\x00\x00\x0214\x00\x00") +
           msg(b"E", b"\x00\x00\x00\x00\x00") + msg(b"S", b""))
    bad = msg(b"Q", b"SELECT 1/0\x00")
    sock.sendall(q + ext + ext + bad)		# all in flight at once
    got = b""
    while got.count(b"Z\x00\x00\x00\x05") < 4 or got[-6:-1] != b"Z\x00\x00\x00\x05":
        c = sock.recv(65536); assert c, "closed"; got += c
    sock.sendall(msg(b"X", b""))
    return got
d = socket.socket(socket.AF_UNIX); d.connect(sys.argv[1])
p = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
a, b = session(d), session(p)
assert len(a) > 2000000, len(a)
assert a == b, (len(a), len(b))
PY
stop_proxy
echo "bytes: ok"

# match: lost_reply on every exchange the regex picks, here only the COMMIT
sql "TRUNCATE t"
run_proxy match "$unix" --protocol postgres --rate 1 --lost-reply 1 --hold 20ms --match '^COMMIT'
if "$H/proxy_pgclient" "$(ci disable)" "BEGIN" "INSERT INTO t VALUES (3, 'c')" "COMMIT" >"$dir/match.txt"; then
	cat "$dir/match.txt"; die "match: the client saw the COMMIT succeed"; fi
[ "$(grep -c '^ok' "$dir/match.txt")" = 2 ] || { cat "$dir/match.txt"; die "match: BEGIN and INSERT did not both succeed"; }
stop_proxy
[ "$(sql 'SELECT count(*) FROM t WHERE id = 3')" = 1 ] || die "match: the COMMIT did not land"
python3 - "$dir/match.jsonl" <<'EOF' || die "match: trace not as expected"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
faulted = [(r["exchange"], r.get("sql")) for r in recs if r["fault"] != "none"]
assert faulted == [(3, "COMMIT")], faulted
c = recs[3]
assert c["fault"] == "lost_reply" and c["upstream_saw"] and not c["client_got_reply"], c
assert all(r["latency_ms"] == 0 for r in recs), recs
EOF
echo "match: ok"

# duplicate: the statement runs again on a session of its own (exchange 0's
# start-up replayed first; trust authentication here)
sql "CREATE TABLE d (v int)"
run_proxy dup "$unix" --protocol postgres --rate 1 --duplicate 1 --match '^INSERT'
"$H/proxy_pgclient" "$(ci disable)" "INSERT INTO d VALUES (1)" >"$dir/dup.txt" ||
    { cat "$dir/dup.txt"; die "dup: the client saw an error"; }
deadline=$((SECONDS + 10))
until [ "$(sql 'SELECT count(*) FROM d')" = 2 ]; do
	[ $SECONDS -lt $deadline ] || die "watchdog: the duplicate INSERT did not land within 10 s"
	read -rt 0.02 <> <(:) || true
done
stop_proxy
grep -q '"exchange":1,"fault":"duplicate".*"sql":"INSERT INTO d VALUES (' "$dir/dup.jsonl" ||
    { cat "$dir/dup.jsonl"; die "dup: no trace line for the duplicated INSERT"; }
echo "duplicate: ok"

# a database that requires TLS (hostssl only over TCP): refused, named, no hang
run_proxy tls "127.0.0.1:$port" --protocol postgres
if timeout 10 "$H/proxy_pgclient" "$(ci prefer)" "SELECT 1" >"$dir/tls.txt"; then
	cat "$dir/tls.txt"; die "tls: the session went through"; fi
grep -q 'requires TLS' "$dir/tls.txt" || { cat "$dir/tls.txt"; die "tls: the client's error does not name TLS"; }
wait_line "$dir/tls.err" 'requires TLS' 10 "the proxy's log line about TLS" >/dev/null
stop_proxy
grep -q '"note":"refused: the database requires TLS"' "$dir/tls.jsonl" || { cat "$dir/tls.jsonl"; die "tls: no trace note"; }
# a client that requires TLS hangs up on the proxy's N: refused, said why
run_proxy tlsclient "$unix" --protocol postgres
if "$H/proxy_pgclient" "$(ci require)" "SELECT 1" >"$dir/tlsclient.txt"; then
	cat "$dir/tlsclient.txt"; die "tls: an sslmode=require client got through"; fi
wait_line "$dir/tlsclient.err" 'asked for TLS and hung up' 10 "the proxy's log line about the client's TLS" >/dev/null
stop_proxy
echo "tls: ok"

# garbage from the client: refused, logged escaped, the proxy lives on
run_proxy junk "$unix" --protocol postgres
python3 - "${px#*:}" <<'EOF' || die "junk: the proxy did not close the connection"
import socket, sys
import struct
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
body = b"\x00\x03\x00\x00user\x00postgres\x00database\x00postgres\x00\x00"
s.sendall(struct.pack("!I", len(body) + 4) + body)
got = b""
while b"Z\x00\x00\x00\x05I" not in got:	# the start-up's ReadyForQuery
    chunk = s.recv(4096)
    assert chunk, "closed during start-up"
    got += chunk
s.sendall(b"Q\xff\xff\xff\xffSELECT\x01")
try:
    while s.recv(4096):
        pass
except ConnectionResetError:
    pass
EOF
wait_line "$dir/junk.err" 'not PostgreSQL v3 from the client' 10 "the refusal's log line" >/dev/null
"$H/proxy_pgclient" "$(ci disable)" "SELECT 1" >/dev/null || die "junk: the proxy refused the next, good client"
stop_proxy
echo "proxy_pgframe: ok"
