#!/usr/bin/env bash
# bench/explore.sh — what soak explore costs (the goal: >= 20 executions a
# second on 2 cores for 2 C turns that do not think, one executor; and
# reservations' thinking turns with --workers 2).  Two scenarios, each
# explored whole with no bound (a tree of C(6,3) = 20 executions), RUNS
# times; the median executions per second, and the share of each execution
# the turns took (first start to last end) against soak's own work (the
# schema reset, the setup, spawning the turns, the invariants), with the
# machine's load:
#  - "C, no think": a libpq turn that reads, writes and logs one counter
#    at once (built here);
#  - "reservations": examples/reservations' turn, which thinks 10-50 ms
#    between its read and its write.
# Never fails on timing.
#   RUNS=3 bash bench/explore.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SOAK=${SOAK:-$PWD/build/soak}
EX=$PWD/examples/reservations
T=$(mktemp -d /tmp/soak-bench-explore.XXXXXX)
trap 'rm -rf "$T"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

cat >"$T/turn.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <libpq-fe.h>
static int ok(PGresult *r) { int s = PQresultStatus(r); PQclear(r); return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK; }
int main(void) {
	PGconn *c = PQconnectdb("");	/* PG* from soak: the proxy */
	PGresult *r; char q[128];
	if (PQstatus(c) != CONNECTION_OK) return 75;
	r = PQexec(c, "SELECT n FROM counter WHERE id = 1");
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) return 1;
	snprintf(q, sizeof(q), "UPDATE counter SET n = %d WHERE id = 1", atoi(PQgetvalue(r, 0, 0)) + 1);
	PQclear(r);
	if (!ok(PQexec(c, q)) || !ok(PQexec(c, "INSERT INTO bumps VALUES (1)"))) return 1;
	PQfinish(c);
	return 0;
}
C
cc -O2 -o "$T/turn" "$T/turn.c" $(pkg-config --cflags --libs libpq)
cat >"$T/schema.sql" <<'SQL'
CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO counter VALUES (1, 0);
CREATE TABLE bumps (turn int NOT NULL);
SQL
cat >"$T/c.yaml" <<YAML
name: bench-explore
seeds: 0..0
turns: 2
database:
  schema: $T/schema.sql
  reset: recreate
proxies:
  - name: db
    upstream: database
    protocol: postgres
    schedule:
      mode: random
turn:
  command: [$T/turn]
  timeout: 10s
invariants:
  - name: one bump each
    sql: SELECT n FROM counter WHERE n <> (SELECT count(*) FROM bumps)
YAML
sed -e "s#\./reserve_turn#$EX/reserve_turn#" -e "s#schema: schema.sql#schema: $EX/schema.sql#" \
    -e 's/^turns: 8$/turns: 2/' -e '/^tickets:/,$d' "$EX/soak.yaml" >"$T/res.yaml"

echo "bench/explore.sh: RUNS=$RUNS, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, one executor"
for sc in "C, no think:c.yaml:0:1" "reservations (thinks):res.yaml:1:1" \
    "reservations, --workers 2:res.yaml:1:2"; do
	IFS=: read -r name cfg seed nw <<<"$sc"
	rates=() shares=() n=
	for i in $(seq "$RUNS"); do
		"$SOAK" explore "$T/$cfg" --seed "$seed" --preemptions -1 --workers "$nw" \
		    --out "$T/o" >/dev/null 2>&1 || true
		n=$(jq .executions "$T/o/explore.json")
		# executions per second of wall time (with N executors, the
		# executions overlap: not per executor)
		rates+=("$(jq '.executions / .seconds' "$T/o/explore.json")")
		shares+=("$(jq '100 * .turns_ms / .execution_ms' "$T/o/explore.json")")
	done
	share=$(printf '%s\n' "${shares[@]}" | median)
	printf '%-24s %s executions a tree; median %.1f executions/s (goal >= 20 for C, no think); the turns %.0f %% of an execution, soak %.0f %%\n' \
	    "$name:" "$n" "$(printf '%s\n' "${rates[@]}" | median)" "$share" "$(awk -v s="$share" 'BEGIN { print 100 - s }')"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
