#!/usr/bin/env bash
# The fault proxy in front of PostgreSQL, no faults: statements per second
# and the latency each statement gains, direct vs through `soak proxy
# --protocol tcp` (byte-level) vs `--protocol postgres` (framed).  pgbench
# -S (one SELECT per transaction) and -N (simple updates, five statements
# in a BEGIN..END), one client, against a throwaway database; the modes
# take turns inside each round so drift in the machine's load hits them
# alike.  Medians of RUNS rounds; ratios are against the baselines of this
# same run.  Goal: framed costs at most 10 % over byte-level.
#
# Then the price of determinism: 8 turns of one soak seed, each `pgbench
# -S -t TX` through the seed's `protocol: postgres` proxy, with `schedule:
# pct` (one statement at a time, in the seeded order) and without;
# statements per second over the window from the first turn's start to the
# last one's exit, as the replay's timeline reports them.  A schedule only
# exists inside a seed (its turns are the scheduler's), so this runs `soak
# replay` of a seed against the same throwaway database (SOAK_DATABASE_URL):
# one seed, in-process, no coordinator (--keep, so the whole fault trace
# says the scheduled one was); the two configs take turns inside each round.
#   RUNS=5 SECS=4 TX=2000 bench/pg_proxy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SOAK=$PWD/$BUILD/soak
RUNS=${RUNS:-5}
SECS=${SECS:-4}
TX=${TX:-2000}
PGBIN=/usr/lib/postgresql/15/bin
dir=$(mktemp -d /tmp/soak-bench-pgproxy.XXXXXX)
chmod 755 "$dir"
pids=()
as_pg() { if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir" "$dir"/* 2>/dev/null || true; runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_line() {
	local deadline=$((SECONDS + 10))
	until grep -Eq "$2" "$1" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || { echo "watchdog: no \"$3\" after 10s"; exit 1; }
		read -rt 0.02 <> <(:) || true
	done
}

port=$(freeport)
mkdir "$dir/data"
as_pg "$PGBIN/initdb" -D "$dir/data" --auth=trust -U postgres >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$dir/data" -w -t 30 -l "$dir/data/pg.log" \
	-o "-k $dir -p $port -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off" start >/dev/null
pgbench -h 127.0.0.1 -p "$port" -U postgres -i -s 1 -q postgres >/dev/null 2>&1

proxy() {	# PROTOCOL (not in a subshell: pids must see it)
	"$SOAK" proxy --listen 127.0.0.1:0 --upstream "127.0.0.1:$port" --seed 1 \
		--protocol "$1" >"$dir/px.$1" 2>&1 & pids+=($!)
	wait_line "$dir/px.$1" '^listening on' "proxy $1"
}
listened() { awk '/^listening on/{print $3}' "$dir/px.$1" | sed 's/.*://'; }
proxy tcp
pid_tcp=${pids[-1]}
proxy postgres
pid_postgres=${pids[-1]}
p_tcp=$(listened tcp)
p_pg=$(listened postgres)
# a proxy's CPU time so far (utime + stime, clock ticks): unlike wall time,
# it does not care how loaded the machine is
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), $(nproc) cpus"
declare -A tps lat cpu stmts
for r in $(seq 1 "$RUNS"); do
	for w in S N; do
		for via in direct tcp postgres; do
			case $via in direct) p=$port ;; tcp) p=$p_tcp ;; postgres) p=$p_pg ;; esac
			pid=; [ $via = direct ] || { v=pid_$via; pid=${!v}; t0=$(ticks "$pid"); }
			out=$(pgbench -h 127.0.0.1 -p "$p" -U postgres -n -c 1 -j 1 -T "$SECS" -"$w" postgres 2>&1) ||
			    { echo "$out"; exit 1; }
			if [ -n "$pid" ]; then
				cpu[$w.$via]=$(( ${cpu[$w.$via]:-0} + $(ticks "$pid") - t0 ))
				n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
				stmts[$w.$via]=$(( ${stmts[$w.$via]:-0} + n * $([ $w = S ] && echo 1 || echo 5) ))
			fi
			tps[$w.$via]+="$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out") "
			lat[$w.$via]+="$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out") "
		done
	done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

printf '%-4s %-9s %10s %12s %16s %10s %16s\n' test via "tps" "latency ms" "added us/stmt" "vs tcp" "proxy CPU us/stmt"
for w in S N; do
	# statements per transaction: -S one SELECT; -N BEGIN, 3 statements, END
	spt=$([ $w = S ] && echo 1 || echo 5)
	d=$(median <<<"${lat[$w.direct]}")
	t=$(median <<<"${tps[$w.tcp]}")
	for via in direct tcp postgres; do
		m=$(median <<<"${tps[$w.$via]}")
		l=$(median <<<"${lat[$w.$via]}")
		c=-; [ $via = direct ] || c=$(awk -v t="${cpu[$w.$via]}" -v n="${stmts[$w.$via]}" -v hz="$hz" \
		    'BEGIN {printf "%.1f", n ? t * 1e6 / hz / n : 0}')
		printf '%-4s %-9s %10.0f %12.3f %16.1f %9.3fx %16s\n' "-$w" "$via" "$m" "$l" \
		    "$(awk -v l="$l" -v d="$d" -v s="$spt" 'BEGIN {print (l - d) * 1000 / s}')" \
		    "$(awk -v m="$m" -v t="$t" 'BEGIN {print m / t}')" "$c"
	done
done
echo "(medians of $RUNS rounds of ${SECS}s, one client; 'vs tcp' is tps over the byte-level"
echo " proxy's; proxy CPU is the proxy process's user+system time over every round)"

# -- the price of determinism: 8 clients, scheduled vs not ----------------
cat >"$dir/schema.sql" <<'SQL'
-- What pgbench -S reads (pgbench -i -s 1, without tellers and history):
-- the scale from pgbench_branches, one account by primary key.
CREATE TABLE pgbench_branches (bid int PRIMARY KEY, bbalance int NOT NULL, filler char(88));
CREATE TABLE pgbench_accounts (aid int PRIMARY KEY, bid int NOT NULL, abalance int NOT NULL, filler char(84));
INSERT INTO pgbench_branches VALUES (1, 0, NULL);
INSERT INTO pgbench_accounts SELECT a, 1, 0, '' FROM generate_series(1, 100000) a;
SQL
sched_cfg() {	# NAME, then the schedule's lines (none: unscheduled)
	local name=$1; shift
	{
		printf 'name: %s\nturns: 8\nrounds: 1\nseed_timeout: 120s\n' "$name"
		printf 'database:\n  schema: schema.sql\n  reset: recreate\n'
		printf 'proxies:\n  - name: db\n    upstream: database\n    protocol: postgres\n'
		for l in "$@"; do printf '    %s\n' "$l"; done
		printf 'turn:\n  command: [sh, -c, %s]\n  timeout: 60s\n' \
		    "'exec pgbench -n -S -t $TX -h \"\${SOAK_PROXY_DB%:*}\" -p \"\${SOAK_PROXY_DB##*:}\"'"
		printf 'invariants:\n  - name: -S writes nothing\n    sql: SELECT bid FROM pgbench_branches WHERE bbalance <> 0\n'
	} >"$dir/$name.yaml"
}
sched_cfg plain
# k: the statements of a seed (8 x TX, and pgbench's few at start-up)
sched_cfg pct "schedule:" "  mode: pct" "  depth: 3" "  steps: $((8 * TX + 64))" \
    "  arrival: 250ms" "  blocked: 500ms"
export SOAK_DATABASE_URL="host=127.0.0.1 port=$port user=postgres dbname=postgres"
# "round 0 turn 3: ok (started at 0.012s, 212 ms)" -> "0.012 212"; the
# window from the first start to the last exit, in seconds
window() {
	sed -n 's/.* turn [0-9]*: ok (started at \([0-9.]*\)s, \([0-9]*\) ms).*/\1 \2/p' "$1" |
	    awk 'NR == 1 || $1 < a {a = $1} NR == 1 || $1 + $2 / 1000 > b {b = $1 + $2 / 1000}
		END {if (NR == 8) printf "%.4f", b - a; else print "turns-ok=" NR}'
}
echo
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), $(nproc) cpus"
declare -A sps nforced
for r in $(seq 1 "$RUNS"); do
	for m in plain pct; do
		o=$dir/replay.$m.$r
		# --keep: the workspace stays, with the whole fault trace
		(cd "$dir" && "$SOAK" replay "$m.yaml" --seed "$r" --keep --out "$dir/rp" >"$o" 2>&1) ||
		    { tail -n 20 "$o"; echo "soak replay $m.yaml --seed $r: not a pass"; exit 1; }
		ws=$(sed -n 's/^workspace kept: //p' "$o")
		[ -s "$ws/trace.jsonl" ] || { echo "seed $r, $m: no trace kept"; exit 1; }
		# the scheduled one was scheduled, the other not
		read -r steps forced < <(jq -rs '[([.[] | select(.step != null)] | length),
		    ([.[] | select(.forced != null)] | length)] | @tsv' "$ws/trace.jsonl")
		nforced[$m]+="$forced "
		# the workspace and the replay's folder around it, now empty
		rm -rf "$ws"
		rmdir "$(dirname "$ws")" 2>/dev/null || true
		case $m in
		pct) [ "$steps" -ge $((8 * TX)) ] ||
			{ echo "seed $r under pct: $steps scheduled steps, not >= $((8 * TX))"; exit 1; } ;;
		plain) [ "$steps" -eq 0 ] || { echo "seed $r unscheduled: $steps steps"; exit 1; } ;;
		esac
		w=$(window "$o")
		[[ $w =~ ^[0-9.]+$ ]] || { echo "seed $r, $m: $w"; exit 1; }
		sps[$m]+="$(awk -v w="$w" -v n=$((8 * TX)) 'BEGIN {printf "%.0f", n / w}') "
	done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %12s %14s %12s   %s\n' "8 clients" "stmts/s" "us/stmt" "vs plain" "runs"
p=$(median <<<"${sps[plain]}")
for m in plain pct; do
	v=$(median <<<"${sps[$m]}")
	printf '%-12s %12.0f %14.1f %11.3fx   %s\n' "$m" "$v" \
	    "$(awk -v v="$v" 'BEGIN {print 1e6 / v}')" "$(awk -v v="$v" -v p="$p" 'BEGIN {print v / p}')" \
	    "${sps[$m]}"
done
echo "decisions forced by a timeout (arrival, blocked) per pct seed: ${nforced[pct]}"
echo "(medians of $RUNS seeds, 8 turns x pgbench -S -t $TX each through a protocol: postgres"
echo " proxy; pct: schedule mode pct, depth 3; us/stmt is the window over all 8 x $TX"
echo " statements, so it is the serial cost of one step when scheduled)"
