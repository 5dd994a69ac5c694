#!/usr/bin/env bash
# Through the seam by default (docs/turns.md "The database, through the
# proxy by default"), on a PostgreSQL of the
# test's own reached over TCP (SOAK_DATABASE_URL), with turns nobody wrote
# for soak: they use the libpq defaults only.
#  - a bash turn, one `psql -c` per statement, behind a scheduled
#    `upstream: database` proxy with a lost update: every statement of
#    every turn is a step of the proxy's schedule, the lost update is
#    caught, and its environment names the turn's own listener (PGHOST,
#    PGPORT, DATABASE_URL, JDBC_DATABASE_URL; SOAK_DIRECT_* the database;
#    never SOAK_DATABASE_URL), while setup and a service with seam: false
#    stay direct (a service through the seam: services_seam.sh);
#    `database.proxy: none` (the bypass, what every turn got before) leaves
#    the proxy's trace empty;
#  - a Python psycopg2 turn with psycopg2.connect(""), one transaction:
#    the same, its BEGIN and COMMIT in the schedule too;
#  - two proxies in front of the database: the first by default,
#    database.proxy picks the other, the first is still at SOAK_PROXY_DB,
#    and soak check says which it chose; an unknown name is refused with
#    the ones there are;
#  - a database that requires TLS (hostssl only, a self-signed
#    certificate): soak check says so and what to do (exit 78), and a run
#    stops early as infra/proxy (exit 2) instead of failing every turn.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/pglib.sh" seam
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
	-keyout "$dir/data/server.key" -out "$dir/data/server.crt" 2>/dev/null
chown postgres "$dir/data/server.key" "$dir/data/server.crt"; chmod 600 "$dir/data/server.key"
hba() { printf 'local all all trust\n%s all all 127.0.0.1/32 trust\n' "$1" >"$dir/data/pg_hba.conf"; }
hba host
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$dir/data" -w -t 30 -l "$dir/data/pg.log" \
	-o "-k $dir -p $port -c listen_addresses=127.0.0.1 -c fsync=off -c ssl=on -c max_connections=200" \
	start >/dev/null
reload() { runuser -u postgres -- "$PGBIN/pg_ctl" -D "$dir/data" reload >/dev/null; }
export SOAK_DATABASE_URL="host=127.0.0.1 port=$port user=postgres dbname=postgres"

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO counter VALUES (1, 0);
CREATE TABLE events (turn int NOT NULL);
SQL
# The lost update of seeds/001 as a shell script: read, then write what it
# read plus one, each statement its own psql, every setting libpq's default.
cat >"$T/turn.sh" <<'SH'
#!/bin/bash
set -e
env | sort >"$SOAK_CONFIG_DIR/env/turn-$SOAK_SEED-$SOAK_TURN"
q() { psql -X -qtA -v ON_ERROR_STOP=1 -c "$1"; }
n=$(q "SELECT n FROM counter WHERE id = 1")
q "UPDATE counter SET n = $((n + 1)) WHERE id = 1" >/dev/null
q "INSERT INTO events (turn) VALUES ($SOAK_TURN)" >/dev/null
SH
cat >"$T/setup.sh" <<'SH'
#!/bin/sh
env | sort >"$SOAK_CONFIG_DIR/env/setup-$SOAK_SEED"
SH
cat >"$T/turn.py" <<'PY'
#!/usr/bin/python3
import os, psycopg2
c = psycopg2.connect("")            # PGHOST, PGPORT, PGOPTIONS... as libpq reads them
cur = c.cursor()
cur.execute("SELECT n FROM counter WHERE id = 1")
n = cur.fetchone()[0]
cur.execute("UPDATE counter SET n = %s WHERE id = 1", (n + 1,))
cur.execute("INSERT INTO events (turn) VALUES (%s)", (int(os.environ["SOAK_TURN"]),))
c.commit()
PY
chmod +x "$T/turn.sh" "$T/setup.sh" "$T/turn.py"
mkdir "$T/env"

cfg() {	# name, turn command, database.proxy line or "", proxies
	cat >"$T/$1.yaml" <<YAML
name: $1
seeds: 0..${SEEDS:-7}
turns: 4
seed_timeout: 60s
database:
  schema: schema.sql
$3
services:
  - name: svc
    command: [sh, -c, 'env | sort >"\$SOAK_CONFIG_DIR/env/service"; exec sleep 600']
    ready: none
    seam: false
proxies:
$4
setup: [./setup.sh]
turn:
  command: [$2]
  timeout: 20s
invariants:
  - name: the counter counts every event
    sql: |
      SELECT c.n, (SELECT count(*) FROM events) AS events FROM counter c
      WHERE c.n <> (SELECT count(*) FROM events)
YAML
}
DB='  - name: db
    upstream: database
    schedule:
      mode: random'
DB2='  - name: db2
    upstream: database
    schedule:
      mode: random'
run() {	# name -> rc, R
	soak_rc rc run "$T/$1.yaml" --workers 2 --out "$T/out-$1" >"$T/$1.out" 2>"$T/$1.err"
	R=$T/out-$1/report.json
	grep 'seeds in' "$T/$1.out" || { cat "$T/$1.out" "$T/$1.err"; fail "$1: no summary"; }
}
fails() { jq '[.results[] | select(.verdict == "fail")] | length' "$R"; }
# expect_lines WHAT EXPECTED ACTUAL: the same lines, or the difference shown.
expect_lines() {
	diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") >"$T/diff" ||
	    { cat "$T/diff"; fail "$1: not the lines expected (< expected, > got)"; }
	ok "$1 ($(printf '%s\n' "$3" | wc -l) lines)"
}
# steps NAME PROXY: "turn:sql" of every scheduled step of every failing
# seed's trace, one a line, sorted and counted per seed; "" when none.
steps() {
	local f
	for f in "$T/out-$1"/failures/*/trace.jsonl; do
		[ -f "$f" ] || continue
		jq -r --arg p "$2" 'select(.proxy == $p and .step != null) | "\(.turn):\(.sql)"' "$f"
	done
}

phase "a bash turn, one psql -c per statement, behind a scheduled proxy"
cfg psql ./turn.sh "" "$DB"
soak_rc rc check "$T/psql.yaml" >"$T/check-psql.out" 2>&1
expect_eq "soak check psql.yaml" 0 "$rc"
expect_match "soak check says the defaults go through proxy db" \
    "psql\.yaml:[0-9]+:[0-9]+: proxies\[0\]: note: a turn's PGHOST, PGPORT, DATABASE_URL and JDBC_DATABASE_URL name its own listener of proxy db" \
    "$(cat "$T/check-psql.out")"
run psql
expect_eq "psql: exit status" 1 "$rc"
expect_eq "psql: no infra" 0 "$(jq .totals.infra "$R")"
nf=$(fails)
expect_ge "psql: seeds that caught the lost update (of 8)" 6 "$nf"
# Every statement of every turn of every failing seed went through the
# schedule: 4 turns x 3 statements.
expect_eq "psql: scheduled steps per failing seed" "$((nf * 12))" "$(steps psql db | wc -l)"
expect_lines "psql: each turn's statements, in every failing seed" \
    "$(for ((s = 0; s < nf; s++)); do for t in 0 1 2 3; do
        printf '%s\n' "$t:SELECT n FROM counter WHERE id = …" "$t:UPDATE counter SET n = …" \
            "$t:INSERT INTO events (turn) VALUES (…"; done; done | sort)" \
    "$(steps psql db | sort)"

phase "what the turn, the setup and the service saw"
seed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$R")
e=$T/env/turn-$seed-2
v() { sed -n "s/^$1=//p" "$2"; }
px=$(v SOAK_PROXY_DB "$e")
expect_match "turn: SOAK_PROXY_DB is a loopback listener" '^127\.0\.0\.1:[0-9]+$' "$px"
expect_eq "turn: PGHOST" 127.0.0.1 "$(v PGHOST "$e")"
expect_eq "turn: PGPORT is its own listener of db" "${px#*:}" "$(v PGPORT "$e")"
schema=$(v SOAK_SCHEMA "$e")
expect_eq "turn: PGOPTIONS" "-c search_path=$schema" "$(v PGOPTIONS "$e")"
expect_eq "turn: PGUSER, PGDATABASE" "postgres postgres" "$(v PGUSER "$e") $(v PGDATABASE "$e")"
expect_eq "turn: DATABASE_URL" "postgresql://postgres@$px/postgres?options=-c%20search_path%3D$schema" \
    "$(v DATABASE_URL "$e")"
expect_eq "turn: JDBC_DATABASE_URL" \
    "jdbc:postgresql://$px/postgres?user=postgres&options=-c%20search_path%3D$schema" \
    "$(v JDBC_DATABASE_URL "$e")"
expect_eq "turn: SOAK_DIRECT_PGHOST, SOAK_DIRECT_PGPORT" "127.0.0.1 $port" \
    "$(v SOAK_DIRECT_PGHOST "$e") $(v SOAK_DIRECT_PGPORT "$e")"
expect_eq "turn: SOAK_DIRECT_DATABASE_URL" \
    "postgresql://postgres@127.0.0.1:$port/postgres?options=-c%20search_path%3D$schema" \
    "$(v SOAK_DIRECT_DATABASE_URL "$e")"
grep -q '^SOAK_DATABASE_URL=' "$e" && fail "turn: SOAK_DATABASE_URL reached a turn"
ok "turn: no SOAK_DATABASE_URL"
# A turn that wants the database itself reaches it by SOAK_DIRECT_*.
[ "$(psql -X -qtA -d "$(v SOAK_DIRECT_DATABASE_URL "$e")" -c 'SHOW search_path')" = "$schema" ] ||
    fail "SOAK_DIRECT_DATABASE_URL does not land in the worker's schema"
ok "SOAK_DIRECT_DATABASE_URL lands in the worker's schema"
s=$T/env/setup-$seed
expect_eq "setup: PGHOST, PGPORT are the database itself" "127.0.0.1 $port" \
    "$(v PGHOST "$s") $(v PGPORT "$s")"
grep -q '^SOAK_PROXY_' "$s" && fail "setup saw a proxy's listener"
expect_eq "service: PGHOST, PGPORT are the database itself" "127.0.0.1 $port" \
    "$(v PGHOST "$T/env/service") $(v PGPORT "$T/env/service")"

phase "the bypass: database.proxy: none"
cfg bypass ./turn.sh "  proxy: none" "$DB"
run bypass
expect_eq "bypass: no infra" 0 "$(jq .totals.infra "$R")"
expect_eq "bypass: no step of the proxy's schedule in any failing seed" 0 "$(steps bypass db | wc -l)"
expect_eq "bypass: turn PGPORT is the database's" "$port" "$(v PGPORT "$T/env/turn-0-0")"
echo "bypass: $(fails) of 8 seeds failed, through the proxy $nf (timing decides the bypass's)"

phase "a psycopg2 turn with the libpq defaults"
cfg python ./turn.py "" "$DB"
run python
expect_eq "python: exit status" 1 "$rc"
expect_eq "python: no infra" 0 "$(jq .totals.infra "$R")"
nf=$(fails)
expect_ge "python: seeds that caught the lost update (of 8)" 4 "$nf"
expect_lines "python: each turn's transaction went through the schedule" \
    "$(for ((s = 0; s < nf; s++)); do for t in 0 1 2 3; do
        printf '%s\n' "$t:BEGIN" "$t:SELECT n FROM counter WHERE id = …" \
            "$t:UPDATE counter SET n = …" "$t:INSERT INTO events (turn) VALUES (…" "$t:COMMIT"
        done; done | sort)" "$(steps python db | sort)"

phase "two proxies in front of the database"
# The turn also makes one call through SOAK_PROXY_DB by name.
cat >"$T/both.sh" <<'SH'
#!/bin/bash
set -e
"$SOAK_CONFIG_DIR/turn.sh"
psql -X -qtA -h "${SOAK_PROXY_DB%:*}" -p "${SOAK_PROXY_DB#*:}" -c "SELECT 'by name'" >/dev/null
SH
chmod +x "$T/both.sh"
SEEDS=1 cfg first ./both.sh "" "$DB
$DB2"
soak_rc rc check "$T/first.yaml" >"$T/check-first.out" 2>&1
expect_eq "soak check first.yaml" 0 "$rc"
expect_match "soak check: the first proxy, and the other by name" \
    "first\.yaml:[0-9]+:[0-9]+: proxies\[0\]: note: .* of proxy db, the first in front of the database .*; proxy db2 \(SOAK_PROXY_DB2\) is reached only at that variable; database.proxy chooses another, or none" \
    "$(cat "$T/check-first.out")"
run first
nf=$(fails)
expect_ge "first: failing seeds (of 2)" 1 "$nf"
expect_eq "first: the turns' statements through db (4 turns x 4 a failing seed)" \
    "$((nf * 16))" "$(steps first db | wc -l)"
expect_eq "first: nothing through db2" 0 "$(steps first db2 | wc -l)"
SEEDS=1 cfg second ./both.sh "  proxy: db2" "$DB
$DB2"
soak_rc rc check "$T/second.yaml" >"$T/check-second.out" 2>&1
expect_match "soak check: database.proxy's choice" \
    "second\.yaml:7:10: database\.proxy: note: .* of proxy db2 \(SOAK_DIRECT_\* the database itself\); proxy db \(SOAK_PROXY_DB\) is reached only at that variable" \
    "$(cat "$T/check-second.out")"
run second
nf=$(fails)
expect_ge "second: failing seeds (of 2)" 1 "$nf"
expect_eq "second: the defaults through db2 (4 turns x 3 a failing seed)" \
    "$((nf * 12))" "$(steps second db2 | wc -l)"
expect_eq "second: only the call by name through db" "$((nf * 4))" "$(steps second db | wc -l)"
expect_eq "second: and that call is the one by name" "SELECT …" "$(steps second db | cut -d: -f2 | sort -u)"
SEEDS=1 cfg third ./both.sh "  proxy: db3" "$DB
$DB2"
soak_rc rc check "$T/third.yaml" >/dev/null 2>"$T/check-third.err"
expect_eq "soak check of an unknown database.proxy" 78 "$rc"
expect_eq "the unknown name refused, the valid ones listed" \
    "$T/third.yaml:7:10: database.proxy: \"db3\" names no proxy in front of the database: use db or db2, or none for the database itself" \
    "$(head -n 1 "$T/check-third.err")"

phase "a database that requires TLS"
hba hostssl
reload
soak_rc rc check "$T/psql.yaml" >"$T/check-tls.out" 2>"$T/check-tls.err"
expect_eq "soak check against a TLS-only database" 78 "$rc"
expect_match "soak check says it requires TLS, and what to do" \
    "psql\.yaml:[0-9]+:[0-9]+: proxies\[0\]\.upstream: the database at 127\.0\.0\.1:$port \(SOAK_DATABASE_URL\) requires TLS: it refused a plain connection such as the proxy makes \(SQLSTATE 28000 from pg_hba\.conf: .*\) and lets a TLS one in; .* Let plain connections in for user postgres and database postgres from this machine \(a host line in pg_hba\.conf, before the hostssl one\)" \
    "$(cat "$T/check-tls.err")"
soak_rc rc run "$T/psql.yaml" --out "$T/out-tls" >"$T/tls.out" 2>"$T/tls.err"
cat "$T/tls.out"
expect_eq "a run against a TLS-only database: exit status" 2 "$rc"
expect_eq "its first seed: infra/proxy" 'infra/proxy' \
    "$(jq -r '.results[0] | "\(.verdict)/\(.reason)"' "$T/out-tls/report.json")"
expect_match "the run stopped early, saying why" \
    "the run stopped early: .*proxies\[0\]\.upstream: proxy db cannot reach the database at 127\.0\.0\.1:$port: it requires TLS \(pg_hba\.conf, SQLSTATE 28000\)" \
    "$(cat "$T/tls.out")"
# Without the proxy nothing needs a plain connection: the run goes on.
cfg tlsnone ./turn.sh "" '  - name: api
    upstream: 127.0.0.1:9'
soak_rc rc check "$T/tlsnone.yaml" >/dev/null 2>&1
expect_eq "soak check without a database proxy, TLS-only database" 0 "$rc"
