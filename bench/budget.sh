#!/usr/bin/env bash
# What a schedule costs an agent whose think time is a model's latency
# (issue 35): examples/budget (6 Python turns: read the budget, ask a fake
# model behind a soak proxy with latency: 300ms..1500ms, write it back),
# SEEDS seeds with `soak run`, four ways, taking turns inside each of RUNS
# rounds so the machine's drift falls on all alike:
#   scheduled    soak.yaml as shipped: schedule: random on the database
#                proxy, the model's latency recorded, not slept
#   slept        the same with latency_real: true on the model's proxy
#                (what every scheduled run did before issue 35)
#   unscheduled  no schedule: the latency slept, the turns overlapping
#   bare         no schedule and no latency (the held-out goal's baseline)
# Against one throwaway PostgreSQL (SOAK_DATABASE_URL), so no run pays a
# database start; wall time from report.json (wall_ms).  Prints each run,
# the medians, seeds per second, the ratios the goals name (scheduled /
# unscheduled throughput, goal >= 0.8; scheduled / bare time, goal <= 1.2),
# the failing seeds of each (the bug: scheduled must catch it in nearly
# every seed), and the machine's load before and after.
#   RUNS=3 SEEDS=0..19 WORKERS=2 bash bench/budget.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SOAK=$PWD/$BUILD/soak
RUNS=${RUNS:-3}
SEEDS=${SEEDS:-0..19}
WORKERS=${WORKERS:-2}
PGBIN=/usr/lib/postgresql/15/bin
dir=$(mktemp -d /tmp/soak-bench-budget.XXXXXX)
chmod 755 "$dir"
as_pg() { if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir" "$dir"/data 2>/dev/null || true; runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
	as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
/usr/bin/python3 -c 'import psycopg2' 2>/dev/null ||
    { echo "bench/budget.sh: python3-psycopg2 is not installed (make deps)"; exit 1; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir "$dir/data"
as_pg "$PGBIN/initdb" -D "$dir/data" --auth=trust -U postgres >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$dir/data" -w -t 30 -l "$dir/data/pg.log" \
	-o "-k $dir -p $port -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200" start >/dev/null
export SOAK_DATABASE_URL="host=127.0.0.1 port=$port user=postgres dbname=postgres sslmode=disable"

# the four configs, beside the example's files (their paths are relative)
ex=$dir/budget
cp -r examples/budget "$ex"
cp "$ex/soak.yaml" "$ex/scheduled.yaml"
sed 's/^      latency: 300ms..1500ms$/&\n      latency_real: true/' "$ex/soak.yaml" >"$ex/slept.yaml"
sed '/^    schedule:$/,/^      mode: random$/d' "$ex/soak.yaml" >"$ex/unscheduled.yaml"
sed '/^      latency: /d; s/^    faults:$/    faults: {}/' "$ex/unscheduled.yaml" >"$ex/bare.yaml"
grep -q latency_real "$ex/slept.yaml" && ! grep -q schedule: "$ex/unscheduled.yaml" &&
    ! grep -q latency: "$ex/bare.yaml" || { echo "bench/budget.sh: the variants were not made"; exit 1; }

kinds=(scheduled slept unscheduled bare)
declare -A wall fails
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), $(nproc) cpus; seeds $SEEDS, $WORKERS workers"
for r in $(seq 1 "$RUNS"); do
	line="run $r:"
	for i in "${!kinds[@]}"; do
		k=${kinds[$(( (i + r) % ${#kinds[@]} ))]}	# a rotated order each run
		rm -rf "$dir/out"
		set +e
		"$SOAK" run "$ex/$k.yaml" --seeds "$SEEDS" --workers "$WORKERS" \
		    --out "$dir/out" >"$dir/$k.out" 2>&1
		rc=$?
		set -e
		[ "$rc" -le 1 ] || { tail -n 20 "$dir/$k.out"; echo "bench/budget.sh: $k: exit $rc"; exit 1; }
		wall[$k]+="$(jq .wall_ms "$dir/out/report.json") "
		fails[$k]+="$(jq .totals.fail "$dir/out/report.json") "
		line+=" $k $(jq .wall_ms "$dir/out/report.json") ms ($(jq .totals.fail "$dir/out/report.json") fail)"
	done
	echo "$line"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
nseeds=$(( ${SEEDS#*..} - ${SEEDS%..*} + 1 ))
printf '\n%-12s %10s %9s %-24s %s\n' config "median ms" "seeds/s" "wall ms, each run" "failing seeds, each run"
declare -A med
for k in "${kinds[@]}"; do
	med[$k]=$(median <<<"${wall[$k]}")
	printf '%-12s %10s %9.2f %-24s %s\n' "$k" "${med[$k]}" \
	    "$(echo "$nseeds * 1000 / ${med[$k]}" | bc -l)" "${wall[$k]}" "${fails[$k]}"
done
printf '\nscheduled / unscheduled throughput: %.2fx (goal >= 0.8)\n' \
    "$(echo "${med[unscheduled]} / ${med[scheduled]}" | bc -l)"
printf 'scheduled / bare time: %.2fx (goal <= 1.2)\n' \
    "$(echo "${med[scheduled]} / ${med[bare]}" | bc -l)"
printf 'slept / scheduled time: %.2fx (what recording the latency instead of sleeping it saves)\n' \
    "$(echo "${med[slept]} / ${med[scheduled]}" | bc -l)"
