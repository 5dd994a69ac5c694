# soak replay --keep --shell (docs/results.md "Replaying a seed"): the kept
# schema can be reached.  With the embedded database, replay prints a psql
# command (no password in it), keeps the database up while someone looks, and
# stops and removes it at Enter or Ctrl-C.  stdin is a fifo this test holds
# open, so replay sees no end of input until the test says so.
. "$(dirname "$0")/lib.sh"

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE items (id serial PRIMARY KEY, who text NOT NULL);
INSERT INTO items (who) VALUES ('fixture a'), ('fixture b');
SQL
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO items (who) VALUES ('turn $SOAK_TURN')"
SH
chmod +x "$T/turn.sh"
cat >"$T/shell.yaml" <<'YAML'
name: replay-shell
seeds: 0..0
turns: 3
database:
  schema: schema.sql
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML

# start_replay NAME: replay in the background with stdin from the fifo
# $T/NAME.in (held open on $in_fd); sets $pid, $cmd (the psql command),
# $host (the embedded cluster's socket directory) and $pm (its postmaster).
start_replay() {
	local t0
	rm -f "$T/$1.in"
	mkfifo "$T/$1.in"
	exec {in_fd}<>"$T/$1.in"
	"$SOAK" replay "$T/shell.yaml" --seed 0 --keep --shell --out "$T/$1" \
	    <"$T/$1.in" >"$T/$1.out" 2>"$T/$1.err" &
	pid=$!
	cleanup_hooks+=("kill -KILL $pid 2>/dev/null" "forget_workspace $1")
	cmd=$(wait_line "$T/$1.out" '^    psql ' 60 "replay $1's psql command" | sed 's/^ *//')
	ok "replay $1 printed: $cmd"
	host=$(grep -oE 'host=[^ ]+' <<<"$cmd" | cut -d= -f2)
	[ -S "$host/.s.PGSQL.5432" ] || fail "no socket at $host/.s.PGSQL.5432 while replay $1 holds the database"
	pm=$(head -n 1 "$host/data/postmaster.pid")
	kill -0 "$pm" || fail "postmaster $pm of replay $1 is not running"
}
# --keep leaves the workspace in the scratch root (the seed passed): the
# test removes it when it ends.
forget_workspace() {
	local ws
	ws=$(sed -n 's/^workspace kept: //p' "$T/$1.out" 2>/dev/null)
	if [[ $ws == */soak-replay-[0-9]*/seed-0 ]]; then rm -rf "$(dirname "$ws")"; fi
}
# gone NAME: the cluster replay NAME held is stopped and its files removed.
gone() {
	[ ! -e "$host/.s.PGSQL.5432" ] || fail "replay $1 left the socket $host/.s.PGSQL.5432"
	[ ! -e "$host" ] || fail "replay $1 left $host: $(ls -A "$host")"
	! kill -0 "$pm" 2>/dev/null || fail "replay $1 left postmaster $pm running"
	ok "replay $1: postmaster $pm gone, $host removed"
}

# --- Enter ---
start_replay enter
expect_match "the command opens the kept schema on the search_path" \
    "^psql 'user=postgres dbname=postgres host=/[^ ]+ port=5432 options=-csearch_path=soak_replay[0-9]+_w1'$" "$cmd"
schema=$(grep -oE 'search_path=[a-z0-9_]+' <<<"$cmd" | cut -d= -f2)
expect_match "replay names the kept schema" "^schema kept: $schema; open it with:" "$(cat "$T/enter.out")"
expect_eq "psql lands in the kept schema" "$schema" "$(eval "$cmd -XAt -c 'SHOW search_path'")"
expect_eq "rows of the kept schema: the fixtures and one per turn" \
    "fixture a,fixture b,turn 0,turn 1,turn 2" \
    "$(eval "$cmd -XAt -c 'SELECT string_agg(who, '\'','\'' ORDER BY who) FROM items'")"
expect_eq "count(*) of items" 5 "$(eval "$cmd -XAt -c 'SELECT count(*) FROM items'")"
grep -qi password "$T/enter.out" && fail "replay mentions a password for a cluster that has none: $(cat "$T/enter.out")"
kill -0 "$pid" || fail "replay exited before Enter"
ok "replay still holds the database after psql came and went"
echo >&"$in_fd"
wait_exit rc "$pid" 60 "replay after Enter"
cat "$T/enter.out"
expect_eq "replay exit status (the seed passed)" 0 "$rc"
expect_match "replay says why it stopped" '^Enter: stopping the embedded database$' "$(cat "$T/enter.out")"
gone enter
exec {in_fd}>&-

# --- Ctrl-C: SIGINT to replay alone, as a terminal's would also reach it ---
start_replay sigint
kill -INT "$pid"
wait_exit rc "$pid" 60 "replay after SIGINT"
expect_eq "replay exit status after SIGINT" 0 "$rc"
expect_match "replay says why it stopped" '^SIGINT: stopping the embedded database$' "$(cat "$T/sigint.out")"
gone sigint
exec {in_fd}>&-

# --- without --shell nothing waits: the database goes when replay exits ---
soak_rc rc replay "$T/shell.yaml" --seed 0 --keep --out "$T/plain" </dev/null >"$T/plain.out" 2>&1
cleanup_hooks+=("forget_workspace plain")
expect_eq "replay --keep exit status" 0 "$rc"
expect_match "--keep says how to keep the database up" 'add --shell' "$(cat "$T/plain.out")"
