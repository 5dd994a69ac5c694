# A seed whose turns failed because the database went away under it is
# infra/db, not fail/guard (docs/fleet.md "When soak's own ground gives way")
# -- but only when soak itself saw the outage: its watch (isolation/watch.c)
# got no answer during the seed, or its probe at the seed's end finds the
# server gone or restarted.  A turn that fails with the database up stays
# fail/guard.  A PostgreSQL of the test's own is paused (SIGSTOP) and
# restarted while a turn waits at a gate; the turn then exits 1, as
# examples/reservations' turns do when a statement fails.  A pause leaves
# soak's own connection intact, so the invariants run and pass after it: only
# the watch can tell.
. "$(dirname "$0")/lib.sh"

PGBIN=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
pgdir=$(mktemp -d /tmp/soak-dboutage-pg.XXXXXX)
chmod 755 "$pgdir"
chown postgres "$pgdir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pgctl() { runuser -u postgres -- "$PGBIN/pg_ctl" -D "$pgdir/data" -w -t 30 -l "$pgdir/pg.log" "$@" >/dev/null; }
runuser -u postgres -- "$PGBIN/initdb" -D "$pgdir/data" -U postgres --auth=trust >/dev/null
pgctl -o "-k $pgdir -p $port -c listen_addresses=127.0.0.1 -c fsync=off" start
cleanup_hooks+=("runuser -u postgres -- '$PGBIN/pg_ctl' -D '$pgdir/data' -m immediate stop >/dev/null 2>&1; rm -rf '$pgdir'")
export SOAK_DATABASE_URL="host=127.0.0.1 port=$port user=postgres dbname=postgres sslmode=disable"

printf 'CREATE TABLE t (a int);\n' >"$T/schema.sql"
# Seed 2's first attempt: turn 0 says it runs and waits at the gate while
# the test does its harm, then exits 1 (its statement "failed").  Seed 4's
# turn 1 exits 1 every time, the database up: a domain failure.
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
if [ "$SOAK_SEED" = 2 ] && [ "$SOAK_TURN" = 0 ] && mkdir "$SOAK_CONFIG_DIR/once" 2>/dev/null; then
	echo running >"$SOAK_CONFIG_DIR/running.fifo"
	timeout 120 dd if="$SOAK_CONFIG_DIR/gate" bs=1 count=1 status=none
	echo "statement failed: server closed the connection unexpectedly" >&2
	exit 1
fi
[ "$SOAK_SEED" = 4 ] && [ "$SOAK_TURN" = 1 ] && exit 1
exit 0
SH
chmod +x "$T/turn.sh"
cat >"$T/outage.yaml" <<'YAML'
name: outage
seeds: 0..5
turns: 2
seed_timeout: 60s
confirm: false
database:
  schema: schema.sql
turn: {command: [./turn.sh]}
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
guard:
  min_ok_turns: 100%
YAML
attempts() { jq -c "[.results[] | select(.seed==$2) | .attempts[] | \"\(.verdict)/\(.reason)\"]" "$1"; }
mkfifo "$T/running.fifo"

# --- 1. the database pauses while seed 2 runs, and is back by its end ---
pm=$(head -n 1 "$pgdir/data/postmaster.pid")
pause_db() { kill -STOP "$pm"; pkill -STOP -P "$pm"; }
resume_db() { pkill -CONT -P "$pm" || true; kill -CONT "$pm"; }
gate_new
"$SOAK" run "$T/outage.yaml" --workers 1 --out "$T/out-pause" >"$T/pause.out" 2>"$T/pause.err" &
run_pid=$!
cleanup_hooks+=("kill $run_pid 2>/dev/null" "resume_db")
timeout 60 cat "$T/running.fifo" >/dev/null || fail "watchdog: seed 2 never started within 60 s"
pause_db
ok "paused PostgreSQL (postmaster $pm and its backends) in the middle of seed 2"
wait_line "$T/pause.err" "worker 1: the database at 127\.0\.0\.1:$port/postgres did not answer soak's watch" 30 \
    "the watch seeing the paused database" >/dev/null
resume_db
wait_line "$T/pause.err" "worker 1: the database at .* answers soak's watch again, after [0-9.]+ s" 30 \
    "the watch seeing the database answer again" >/dev/null
ok "resumed PostgreSQL; the watch saw it go and come back"
gate_open
wait_exit rc "$run_pid" 120 "soak run after the pause"
R=$T/out-pause/report.json
expect_eq "pause: exit status (seed 4's domain failure)" 1 "$rc"
check_report "$T/out-pause" 0 5
expect_eq "pause: seed 2 history" '["infra/db","pass/"]' "$(attempts "$R" 2)"
expect_match "pause: seed 2's first attempt says why" \
    "^only 1 of 2 turns succeeded; the guard wants at least 2, and soak's watch of the database at 127\.0\.0\.1:$port/postgres had no answer for [0-9.]+ s, from [0-9.]+ s after the seed began: no answer within 2\.0 s" \
    "$(jq -r '.results[] | select(.seed==2) | .attempts[0].message' "$R")"
expect_eq "pause: seed 4, a turn failing with the database up, stays" '["fail/guard"]' "$(attempts "$R" 4)"
expect_eq "pause: the other seeds passed at once" 4 \
    "$(jq '[.results[] | select(.seed != 2 and .seed != 4 and .verdict == "pass" and (.attempts | length) == 1)] | length' "$R")"

# --- 2. the database restarts while seed 2 runs ---
# soak's own connection goes with the old server: the invariants cannot
# run (infra/db, as before), and the next reset waits for the new server.
rm -rf "$T/once"
gate_new
"$SOAK" run "$T/outage.yaml" --workers 1 --out "$T/out-restart" >"$T/restart.out" 2>"$T/restart.err" &
run_pid=$!
cleanup_hooks+=("kill $run_pid 2>/dev/null")
timeout 60 cat "$T/running.fifo" >/dev/null || fail "watchdog: seed 2 never started within 60 s"
pgctl -m fast restart
ok "restarted PostgreSQL (postmaster $pm, now $(head -n 1 "$pgdir/data/postmaster.pid")) in the middle of seed 2"
# the outage ends for soak when its watch has seen the new server: a seed
# that fails before then is infra/db by rule, so seed 4 must start after
wait_line "$T/restart.err" "worker 1: the database at .* restarted \\(soak's watch\\)" 30 \
    "the watch seeing the restarted database" >/dev/null
gate_open
wait_exit rc "$run_pid" 120 "soak run after the restart"
R=$T/out-restart/report.json
expect_eq "restart: exit status (seed 4's domain failure)" 1 "$rc"
check_report "$T/out-restart" 0 5
expect_eq "restart: seed 2 history" '["infra/db","pass/"]' "$(attempts "$R" 2)"
expect_eq "restart: seed 4 stays" '["fail/guard"]' "$(attempts "$R" 4)"
expect_eq "restart: no other seed failed or was retried" 4 \
    "$(jq '[.results[] | select(.seed != 2 and .seed != 4 and .verdict == "pass" and (.attempts | length) == 1)] | length' "$R")"

# --- 3. the database is away when the worker first connects ---
# A worker started beside a restart (a replacement for one that died, a
# new host) waits for the server, within 5 s, as a reset does: without it
# every seed it is given fails at once, infra/db, and the run's seeds go
# by in a second (tests/chaos saw 79-132 of 200).
pgctl -m fast stop
ok "stopped PostgreSQL before the run"
"$SOAK" run "$T/outage.yaml" --workers 1 --out "$T/out-away" >"$T/away.out" 2>"$T/away.err" &
run_pid=$!
cleanup_hooks+=("kill $run_pid 2>/dev/null")
wait_line "$T/away.err" "worker 1: warning: cannot connect to PostgreSQL at .*; waiting for it, for up to 5 s" 30 \
    "the worker waiting for the database" >/dev/null
pgctl -o "-k $pgdir -p $port -c listen_addresses=127.0.0.1 -c fsync=off" start
ok "started PostgreSQL while the worker waits"
wait_exit rc "$run_pid" 120 "soak run with the database away at its start"
R=$T/out-away/report.json
expect_eq "away: exit status (seed 4's domain failure)" 1 "$rc"
check_report "$T/out-away" 0 5
expect_eq "away: attempts that were infra" "" \
    "$(jq -c '.results[] | .attempts[] | select(.verdict == "infra") | .message' "$R")"
expect_eq "away: every other seed passed at once" 5 \
    "$(jq '[.results[] | select(.seed != 4 and .verdict == "pass" and (.attempts | length) == 1)] | length' "$R")"
expect_match "away: the worker said the database answers" "worker 1: warning: the database answers" "$(cat "$T/away.err")"
