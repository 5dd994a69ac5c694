# A frozen PostgreSQL (SIGSTOP, postmaster and backends) at the end of a
# run does not hold the run's teardown for long (isolation/iso.h
# ISO_TEARDOWN_MS), and what it leaves is said:
#  - `soak run` on the embedded cluster: the last seed's turn freezes it;
#    the seed is infra/db, the run ends, and the cluster is stopped and
#    removed (its postmaster continued so it can act on the stop) -- no
#    postgres process and no folder of it left;
#  - `soak run` on a PostgreSQL of the test's own, frozen the same way: the
#    run ends, and its log names the schemas left in that database and how
#    to remove them; once the database is continued, they are there.
# The time from start to exit is printed (it was about 45 s for the
# second case before the bound); a watchdog of 60 s names what it waited
# for, and the assertions are on what was left, never on time.
. "$(dirname "$0")/lib.sh"

PGBIN=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
# freeze.sh: seed 1's turn stops the cluster named by $PGHOST (the
# embedded one: PGHOST is its folder) or by the data directory in
# freeze.data beside the config (turns get no variable of the test's).
cat >"$T/freeze.sh" <<'SH'
#!/bin/sh
set -e
[ "$SOAK_SEED" = 1 ] || exit 0
data=$PGHOST/data
[ -f "$SOAK_CONFIG_DIR/freeze.data" ] && data=$(cat "$SOAK_CONFIG_DIR/freeze.data")
pm=$(head -n 1 "$data/postmaster.pid")
kids=$(pgrep -P "$pm" || true)
echo "$pm" >"$SOAK_CONFIG_DIR/frozen.pid"
echo $kids >"$SOAK_CONFIG_DIR/frozen.kids"
echo "$data" >"$SOAK_CONFIG_DIR/frozen.dir"
kill -STOP "$pm" $kids
exit 0
SH
chmod +x "$T/freeze.sh"
cat >"$T/frozen.yaml" <<'YAML'
name: frozen
seeds: 0..1
turns: 1
retries: 0
confirm: false
seed_timeout: 3s
turn:
  command: [./freeze.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
ms() { date +%s%3N; }
# Whatever ends the test, a postmaster its turn froze is continued and
# stopped (the embedded one too: a watchdog's SIGKILL of soak run would
# leave it frozen), and waited for.
unfreeze() {
	local pm kids
	kids=$(cat "$T/frozen.kids" 2>/dev/null || true)
	kill -CONT $kids 2>/dev/null || true
	pm=$(cat "$T/frozen.pid" 2>/dev/null || true)
	[[ $pm =~ ^[0-9]+$ ]] && kill -0 "$pm" 2>/dev/null || return 0
	kids=$(pgrep -P "$pm" || true)
	kill -CONT "$pm" $kids 2>/dev/null || true
	kill -QUIT "$pm" 2>/dev/null || true
	timeout 10 tail -s 0.1 --pid="$pm" -f /dev/null || kill -KILL "$pm" $kids 2>/dev/null || true
}
cleanup_hooks+=(unfreeze)
# frozen_run NAME: soak run of frozen.yaml under the watchdog; sets $rc, $took.
frozen_run() {
	local t0
	t0=$(ms)
	"$SOAK" run "$T/frozen.yaml" --workers 1 --out "$T/$1" >"$T/$1.out" 2>"$T/$1.err" &
	wait_exit rc $! 60 "soak run's teardown with its database frozen ($1)"
	took=$(($(ms) - t0))
	echo "$1: the run with its database frozen ended after $took ms (exit $rc)"
}

# --- the embedded cluster ---
frozen_run embedded
expect_eq "embedded: exit status (seed 1 infra)" 2 "$rc"
expect_eq "embedded: seed 1" "infra db" "$(jq -r '.results[] | select(.seed == 1) | "\(.verdict) \(.reason)"' "$T/embedded/report.json")"
pm=$(cat "$T/frozen.pid")
if kill -0 "$pm" 2>/dev/null; then
	kill -CONT "$pm" $(pgrep -P "$pm") 2>/dev/null || true
	fail "the frozen embedded postmaster $pm outlived the run"
fi
ok "the frozen embedded postmaster is gone"
for k in $(cat "$T/frozen.kids"); do
	if kill -0 "$k" 2>/dev/null; then
		kill -CONT "$k" 2>/dev/null || true
		fail "the frozen embedded cluster's process $k ($(cat /proc/$k/comm 2>/dev/null)) outlived the run"
	fi
done
ok "the frozen embedded cluster's $(wc -w <"$T/frozen.kids") other processes are gone"
[ ! -e "$(dirname "$(cat "$T/frozen.dir")")" ] || fail "the embedded cluster's folder $(cat "$T/frozen.dir") outlived the run"
ok "the embedded cluster's folder is gone"
expect_match "the worker said what it left" 'the schemas soak_.*_w1 and soak_.*_w1_tpl are left in the database at .* \(it did not answer within 5 s\); remove them with DROP SCHEMA IF EXISTS' \
    "$(cat "$T/embedded.err")"

# --- a PostgreSQL of the test's own ---
pgdir=$(mktemp -d /tmp/soak-frozen-pg.XXXXXX)
chmod 755 "$pgdir"
mkdir "$pgdir/data"
chown postgres "$pgdir" "$pgdir/data"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
runuser -u postgres -- "$PGBIN/initdb" -D "$pgdir/data" -U postgres --auth=trust >/dev/null
own_pg_start "$pgdir" "$port"
export SOAK_DATABASE_URL="host=127.0.0.1 port=$port user=postgres dbname=postgres sslmode=disable"
echo "$pgdir/data" >"$T/freeze.data"
frozen_run external
expect_eq "external: exit status (seed 1 infra)" 2 "$rc"
expect_match "the worker said what it left, and how to remove it" \
    'the schemas (soak_[a-z0-9_]+_w1) and soak_[a-z0-9_]+_w1_tpl are left in the database at 127\.0\.0\.1:[0-9]+/postgres \(it did not answer within 5 s\); remove them with DROP SCHEMA IF EXISTS' \
    "$(cat "$T/external.err")"
schema=$(grep -m 1 -oE 'the schemas soak_[a-z0-9_]+_w1 ' "$T/external.err" | head -n 1 | awk '{ print $3 }')
pm=$(cat "$T/frozen.pid")
kill -CONT "$pm" $(pgrep -P "$pm")
expect_eq "the schema the log named is in the database" "$schema" \
    "$(psql -X -q -t -A -h "$pgdir" -p "$port" -U postgres -d postgres \
    -c "SELECT nspname FROM pg_namespace WHERE nspname = '$schema'")"
