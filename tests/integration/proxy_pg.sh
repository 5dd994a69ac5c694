#!/usr/bin/env bash
# The fault proxy in front of a real PostgreSQL (upstream over its unix
# socket), driven by libpq: a reset in mid-session never reaches the
# server; a lost reply to COMMIT leaves the row committed while the client
# sees an error.  Seeds are chosen through the real roll (proxy_seedfind).
. "$(dirname "$0")/pglib.sh" proxy-pg
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$dir/data" -w -t 30 -l "$dir/data/pg.log" \
	-o "-k $dir -p $port -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
sql() { psql -X -q -t -A -h "$dir" -p "$port" -U postgres -d postgres -c "$1"; }
sql "CREATE TABLE t (id int primary key)"

run_proxy() {	# NAME SEED -> $px
	"$SOAK_BIN" proxy --name pg --listen 127.0.0.1:0 --upstream "unix:$dir/.s.PGSQL.$port" \
		--seed "$2" --rate 0.5 --lost-reply 0.4 --reset 0.3 --duplicate 0.3 --hold 20ms \
		--protocol tcp --trace "$dir/$1.jsonl" >"$dir/$1.out" 2>"$dir/$1.err" & pids+=($!)
	ppid_=$!
	wait_line "$dir/$1.out" '^listening on' 10 "proxy $1 listening" >/dev/null
	px=$(awk '/^listening on/{print $3}' "$dir/$1.out")
}
ci() { echo "host=127.0.0.1 port=${px#*:} user=postgres dbname=postgres sslmode=disable gssencmode=disable connect_timeout=5"; }

# reset on exchange 2 (0 = startup, 1 = first INSERT)
seed=$("$H/proxy_seedfind" pg 0.5 0.4 0.3 0.3 none,none,reset)
run_proxy reset "$seed"
if "$H/proxy_pgclient" "$(ci)" "INSERT INTO t VALUES (1)" "INSERT INTO t VALUES (2)" >"$dir/c1.out"; then
	echo "reset: client succeeded"; cat "$dir/c1.out"; exit 1; fi
[ "$(grep -c '^ok' "$dir/c1.out")" = 1 ] || { cat "$dir/c1.out"; die "reset: the first INSERT did not succeed exactly once"; }
[ "$(grep -c '^error' "$dir/c1.out")" = 1 ] || { cat "$dir/c1.out"; die "reset: the second INSERT did not fail"; }
stop_proxy
[ "$(sql "SELECT string_agg(id::text, ',' ORDER BY id) FROM t")" = "1" ] || { echo "reset: wrong rows"; sql "SELECT * FROM t"; exit 1; }
grep -q '"exchange":2,"fault":"reset","latency_ms":0,"bytes_up":0,"bytes_down":0,"upstream_saw":false' "$dir/reset.jsonl" ||
    die "reset: no trace line for the reset of exchange 2"

# lost reply to COMMIT: exchange 3 (startup, BEGIN, INSERT, COMMIT)
seed=$("$H/proxy_seedfind" pg 0.5 0.4 0.3 0.3 none,none,none,lost_reply)
run_proxy lost "$seed"
if "$H/proxy_pgclient" "$(ci)" "BEGIN" "INSERT INTO t VALUES (3)" "COMMIT" >"$dir/c2.out"; then
	echo "lost: client succeeded"; cat "$dir/c2.out"; exit 1; fi
[ "$(grep -c '^ok' "$dir/c2.out")" = 2 ] || { cat "$dir/c2.out"; die "lost: BEGIN and INSERT did not both succeed"; }
[ "$(grep -c '^error' "$dir/c2.out")" = 1 ] || { cat "$dir/c2.out"; die "lost: the client did not see the COMMIT fail"; }
stop_proxy
[ "$(sql 'SELECT count(*) FROM t WHERE id = 3')" = "1" ] || { echo "lost: the COMMIT did not land"; exit 1; }
grep -q '"exchange":3,"fault":"lost_reply".*"upstream_saw":true,"client_got_reply":false' "$dir/lost.jsonl" ||
    die "lost: no trace line for the lost reply of exchange 3"
echo "proxy_pg: ok"
