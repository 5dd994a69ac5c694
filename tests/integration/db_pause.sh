# seed_timeout bounds the whole seed, the database's calls included
# (docs/results.md "One deadline per seed").  A PostgreSQL of the test's own
# is paused (SIGSTOP, postmaster and backends) while a seed runs: the worker
# used to wait in libpq forever, heartbeating, and the seed passed 80 s
# late.  Now the seed ends at its deadline plus the 2 s probe as infra/db,
# the run goes on once the database is back, and the retried seed passes on
# the same worker.  With the database answering, a hung turn and an invariant
# stuck on a lock are still fail/hang, and the stuck backend is ended.
. "$(dirname "$0")/lib.sh"

PGBIN=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
PROBE_MS=2000			# WRK_PROBE_MS, worker/wrk.h
MARGIN_MS=$((PROBE_MS + 1500))	# the probe, killing turns, keeping a workspace
pgdir=$(mktemp -d /tmp/soak-dbpause-pg.XXXXXX)
chmod 755 "$pgdir"
chown postgres "$pgdir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
runuser -u postgres -- "$PGBIN/initdb" -D "$pgdir/data" -U postgres --auth=trust >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$pgdir/data" -w -t 30 -l "$pgdir/pg.log" \
    -o "-k $pgdir -p $port -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
pm=$(head -n 1 "$pgdir/data/postmaster.pid")
# The postmaster first, so it forks nobody while its children stop.
pause_db() { kill -STOP "$pm"; pkill -STOP -P "$pm"; }
resume_db() { pkill -CONT -P "$pm" || true; kill -CONT "$pm"; }
cleanup_hooks+=("resume_db; runuser -u postgres -- '$PGBIN/pg_ctl' -D '$pgdir/data' -m immediate stop >/dev/null 2>&1; rm -rf '$pgdir'")
sql() { psql -X -q -t -A -h "$pgdir" -p "$port" -U postgres -d postgres -c "$1"; }
export SOAK_DATABASE_URL="host=127.0.0.1 port=$port user=postgres dbname=postgres sslmode=disable"

printf 'CREATE TABLE t (a int);\n' >"$T/schema.sql"
cfg() {	# name, seeds, seed_timeout, extra yaml
	cat >"$T/$1.yaml" <<YAML
name: $1
seeds: $2
turns: 2
seed_timeout: $3
confirm: false
database:
  schema: schema.sql
$4
YAML
}
attempts() { jq -c "[.results[] | select(.seed==$2) | .attempts[] | \"\(.verdict)/\(.reason)\"]" "$1"; }

# --- 1. the database pauses while seed 2 runs ---
# The first attempt of seed 2, turn 0, says the seed is running, then waits
# at the gate while the test pauses the database; the worker then meets the
# paused database in its invariant check.
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
if [ "$SOAK_SEED" = 2 ] && [ "$SOAK_TURN" = 0 ] && mkdir "$SOAK_CONFIG_DIR/once" 2>/dev/null; then
	echo running >"$SOAK_CONFIG_DIR/running.fifo"
	timeout 120 dd if="$SOAK_CONFIG_DIR/gate" bs=1 count=1 status=none
fi
exit 0
SH
chmod +x "$T/turn.sh"
cfg pause 0..4 5s 'turn: {command: [./turn.sh]}
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false'
mkfifo "$T/running.fifo"
gate_new
"$SOAK" run "$T/pause.yaml" --workers 1 --out "$T/out-pause" >"$T/pause.out" 2>"$T/pause.err" &
run_pid=$!
cleanup_hooks+=("kill $run_pid 2>/dev/null")
timeout 60 cat "$T/running.fifo" >/dev/null || fail "watchdog: seed 2 never started within 60 s"
pause_db
ok "paused PostgreSQL (postmaster $pm and its backends) in the middle of seed 2"
gate_open
# 5 s of seed_timeout and the 2 s probe, with room for a loaded machine.
wait_line "$T/pause.err" 'seed 2: seed_timeout \(5000 ms\) passed' 30 \
    "the worker giving seed 2 up at its deadline"
resume_db
ok "resumed PostgreSQL"
wait_exit rc "$run_pid" 120 "soak run after the database came back"
cat "$T/pause.out"
R=$T/out-pause/report.json
expect_eq "run exit status (the retry passed)" 0 "$rc"
check_report "$T/out-pause" 0 4
expect_eq "seed 2 history" '["infra/db","pass/"]' "$(attempts "$R" 2)"
expect_eq "no other seed was retried" 0 \
    "$(jq '[.results[] | select(.seed != 2 and (.attempts|length) != 1)] | length' "$R")"
d=$(jq '.results[] | select(.seed==2) | .attempts[0].duration_ms' "$R")
[ "$d" -ge 5000 ] && [ "$d" -le $((5000 + MARGIN_MS)) ] ||
    fail "seed 2's first attempt took $d ms; seed_timeout is 5000 ms (+ $MARGIN_MS ms margin)"
ok "seed 2's first attempt ended after $d ms (seed_timeout 5000 ms)"
expect_match "it says why" \
    'seed_timeout \(5000 ms\) passed in the check after round 0, and the database at 127\.0\.0\.1:[0-9]+/postgres did not answer within 2\.0 s' \
    "$(jq -r '.results[] | select(.seed==2) | .attempts[0].message' "$R")"
# The worker recovered (dropped the stuck connection, reconnected, reset)
# rather than hanging or being replaced: it ran everything.
expect_eq "one worker ran every attempt" '[1]' "$(jq -c '[.results[].attempts[].worker] | unique' "$R")"

# --- 2. the database answers, a turn hangs: still fail/hang ---
cfg hang 0..0 2s 'turn: {command: [sh, -c, "[ $SOAK_TURN = 1 ] && exec tail -f /dev/null; exit 0"], timeout: 60s}
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false'
soak_rc rc run "$T/hang.yaml" --workers 1 --out "$T/out-hang" >"$T/hang.out" 2>"$T/hang.err"
R=$T/out-hang/report.json
expect_eq "hung turn: exit status" 1 "$rc"
expect_eq "hung turn: verdict" '["fail/hang"]' "$(attempts "$R" 0)"
expect_match "hung turn: message" 'still running at seed_timeout \(2000 ms\) in round 0' \
    "$(jq -r '.results[0].message' "$R")"
d=$(jq '.results[0].duration_ms' "$R")
[ "$d" -le $((2000 + MARGIN_MS)) ] || fail "the hung seed took $d ms (seed_timeout 2000 ms)"
ok "the hung seed ended after $d ms"

# --- 3. the database answers, an invariant waits on a lock: fail/hang ---
# The test holds an advisory lock the invariant wants; invariant_timeout is
# longer than the seed, so only the seed's deadline can stop the check.
mkfifo "$T/holder.in"
psql -X -q -t -A -h "$pgdir" -p "$port" -U postgres -d postgres <"$T/holder.in" >"$T/holder.out" 2>&1 &
holder_pid=$!
exec {HOLD}>"$T/holder.in"
cleanup_hooks+=("kill $holder_pid 2>/dev/null")
echo "SELECT pg_advisory_lock(4242); SELECT 'locked';" >&"$HOLD"
wait_line "$T/holder.out" '^locked$' 30 "the test's session holding advisory lock 4242" >/dev/null
cfg lock 0..0 3s 'invariant_timeout: 60s
turn: {command: [/bin/true]}
invariants:
  - name: waits for the lock
    sql: SELECT 1 WHERE length(pg_advisory_lock_shared(4242)::text) < 0'
soak_rc rc run "$T/lock.yaml" --workers 1 --out "$T/out-lock" >"$T/lock.out" 2>"$T/lock.err"
R=$T/out-lock/report.json
expect_eq "stuck invariant: exit status" 1 "$rc"
expect_eq "stuck invariant: verdict" '["fail/hang"]' "$(attempts "$R" 0)"
expect_match "stuck invariant: message" 'still running at seed_timeout \(3000 ms\) in the check after round 0' \
    "$(jq -r '.results[0].message' "$R")"
d=$(jq '.results[0].duration_ms' "$R")
[ "$d" -le $((3000 + MARGIN_MS)) ] || fail "the stuck check took $d ms (seed_timeout 3000 ms)"
ok "the stuck check ended after $d ms"
# The probe ended the stuck backend: nobody waits on the lock any more,
# though the test still holds it.
expect_eq "backends still waiting for lock 4242" 0 \
    "$(sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted")"
echo '\q' >&"$HOLD"
exec {HOLD}>&-
