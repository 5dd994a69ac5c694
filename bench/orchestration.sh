#!/usr/bin/env bash
# soak's own cost per seed: the per-step breakdown (bench/orchestration),
# 200 no-op seeds end to end, and the efficiency of 100 ms turns.
# Knobs: BUILD, SOAK (another soak binary to compare), RUNS (end-to-end
# repetitions, default 3), ITER (micro-bench samples, default 40),
# WORKERS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SOAK=${SOAK:-$PWD/$BUILD/soak}
ORCH=${ORCH:-$PWD/$BUILD/bench/orchestration}
RUNS=${RUNS:-3} ITER=${ITER:-40} WORKERS=${WORKERS:-2}
dir=$(mktemp -d /tmp/soak-bench-orch.XXXXXX)
trap 'rm -rf "$dir"' EXIT

echo "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL);" >"$dir/schema.sql"
conf() {	# NAME TURNS ROUNDS COMMAND
	cat >"$dir/$1.yaml" <<YAML
name: $1
seeds: 0..199
turns: $2
rounds: $3
seed_timeout: 60s
database:
  schema: schema.sql
  reset: truncate
turn:
  command: $4
  timeout: 10s
invariants:
  - name: trivial
    sql: SELECT id FROM t WHERE v < 0
YAML
}
conf noop8 8 1 '[/bin/true]'
conf noop1 1 1 '[/bin/true]'
conf sleep8 8 2 '[/bin/sleep, "0.1"]'

# run NAME SEEDS [OUTBASE] -> prints "wall_ms" from the report (includes
# PostgreSQL's start).  The workspace goes under --out, i.e. OUTBASE.
run() {
	local out="${3:-$dir}/out-$1-$RANDOM"
	if ! "$SOAK" run "$dir/$1.yaml" --seeds "$2" --workers "$WORKERS" --out "$out" \
	    >"$out.log" 2>&1; then
		echo "soak run $1 failed:" >&2
		tail -5 "$out.log" >&2
		exit 1
	fi
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_ms"])' \
	    "$out/report.json"
	rm -rf "$out" "$out.log"
}
median() { tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "machine: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "-- per-step costs (median of $ITER; process rows: $WORKERS processes at once)"
"$ORCH" "$dir/noop8.yaml" "$ITER" "$WORKERS" | tee "$dir/orch.txt" | grep -v '^# '
kv() { sed -n "s/^# $1=//p" "$dir/orch.txt"; }
pg=$(kv pg_start_ms) reset=$(kv reset_truncate_ms) inv=$(kv inv_ms) ws=$(kv workspace_ms) wsshm=$(kv workspace_shm_ms)
envc=$(kv env_ms) msg=$(kv msg_ms) ps=$(kv posix_spawn_batch_ms) wb=$(kv wrk_batch_ms)

echo
echo "-- end to end: 200 seeds, $WORKERS workers, wall from report.json (includes PostgreSQL start); median of $RUNS"
shmdir=$(mktemp -d /dev/shm/soak-bench-orch.XXXXXX)
trap 'rm -rf "$dir" "$shmdir"' EXIT
w8=() w1=() w8s=()
for _ in $(seq "$RUNS"); do
	w8+=("$(run noop8 0..199)")
	w1+=("$(run noop1 0..199)")
	w8s+=("$(run noop8 0..199 "$shmdir")")
done
m8=$(echo "${w8[*]}" | median) m1=$(echo "${w1[*]}" | median) m8s=$(echo "${w8s[*]}" | median)
printf '%-26s %10s %10s %12s   %s\n' config "wall s" "seeds/s" "ms/seed/wkr" "runs (ms)"
for c in "8 turns:$m8:${w8[*]}" "1 turn:$m1:${w1[*]}" "8 turns, out on shm:$m8s:${w8s[*]}"; do
	IFS=: read -r name m all <<<"$c"
	awk -v n="$name" -v m="$m" -v w="$WORKERS" -v pg="$pg" -v all="$all" 'BEGIN {
		printf "%-26s %10.2f %10.1f %12.2f   %s\n", "noop, " n, m / 1000, 200000 / m,
		    (m - pg) * w / 200, all }'
done

echo
echo "-- per seed (8 no-op turns), estimated from the parts above"
awk -v reset="$reset" -v inv="$inv" -v ws="$ws" -v wsshm="$wsshm" -v envc="$envc" -v msg="$msg" \
    -v ps="$ps" -v wb="$wb" -v m8="$m8" -v pg="$pg" -v w="$WORKERS" 'BEGIN {
	spawn_over = wb - ps; if (spawn_over < 0) spawn_over = 0
	printf "%-44s %8s\n", "part", "ms"
	printf "%-44s %8.2f\n", "schema reset (truncate; PostgreSQL round trip)", reset
	printf "%-44s %8.2f\n", "invariants (PostgreSQL round trip)", inv
	printf "%-44s %8.2f\n", "turns: the machine exec of 8 /bin/true", ps
	printf "%-44s %8.2f\n", "turns: soak spawn above that (>= 0)", spawn_over
	printf "%-44s %8.2f\n", "workspace dirs (mkdir, rm -r) under /tmp", ws
	printf "%-44s %8.2f\n", "turn environments", envc
	printf "%-44s %8.2f\n", "messaging (result -> ack)", msg
	orch = spawn_over + ws + envc + msg
	printf "%-44s %8.2f   goal < 5\n", "orchestration (soak spawn + dirs + env + msg)", orch
	printf "%-44s %8.2f\n", "  the same with the workspace on /dev/shm", orch - ws + wsshm
	printf "%-44s %8.2f\n", "measured end to end, per seed per worker", (m8 - pg) * w / 200
	printf "# orch_ms=%.2f\n", orch
}' | tee "$dir/sum.txt" | grep -v '^# '

echo
echo "-- 100 ms turns: 40 seeds x 2 rounds x 8 turns of sleep 0.1, $WORKERS workers"
ws_=()
for _ in $(seq "$RUNS"); do ws_+=("$(run sleep8 0..39)"); done
ms=$(echo "${ws_[*]}" | median)
awk -v m="$ms" -v pg="$pg" -v w="$WORKERS" -v all="${ws_[*]}" 'BEGIN {
	ideal = 40 * 2 * 100 / w
	printf "ideal %.2f s; measured %.2f s (runs %s ms)\n", ideal / 1000, m / 1000, all
	printf "efficiency %.2f including PostgreSQL start, %.2f excluding it (%.0f ms); goal >= 0.9\n",
	    ideal / m, ideal / (m - pg), pg }'
