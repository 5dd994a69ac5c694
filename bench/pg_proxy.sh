#!/usr/bin/env bash
# The fault proxy in front of PostgreSQL, no faults: statements per second
# and the latency each statement gains, direct vs through `soak proxy
# --protocol tcp` (byte-level) vs `--protocol postgres` (framed).  pgbench
# -S (one SELECT per transaction) and -N (simple updates, five statements
# in a BEGIN..END), one client, against a throwaway database; the modes
# take turns inside each round so drift in the machine's load hits them
# alike.  Medians of RUNS rounds; ratios are against the baselines of this
# same run.  Goal: framed costs at most 10 % over byte-level.
#   RUNS=5 SECS=4 bench/pg_proxy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SOAK=$PWD/$BUILD/soak
RUNS=${RUNS:-5}
SECS=${SECS:-4}
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
