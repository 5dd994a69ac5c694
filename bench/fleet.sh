#!/usr/bin/env bash
# A fleet of workers against one coordinator (bench/README.md "Fleet"):
#
# 1. Efficiency with sleep-bound seeds: `soak run --workers N` for N in
#    COUNTS (1 2 4 8 16), SPW seeds per worker (8), each seed TURNS (2)
#    concurrent turns of `sleep SLEEP` (0.3), one round.  Ideal = SPW x
#    SLEEP (every worker busy all the time); efficiency = ideal / wall_ms
#    of report.json.  Every run uses one PostgreSQL started before
#    (`fleet_handshake --pg`, SOAK_DATABASE_URL), so the database start is
#    excluded; the workers' start, dial, schema and exit are not.  RUNS
#    rounds (3), the counts interleaved, order rotated; medians.  Also the
#    seeds each worker ran (workers[].seeds of the median run) and how far
#    the busiest is above the mean.  Goal: >= 0.85 at 8 workers.
# 2. Coordinator capacity: SIM_WORKERS (256) simulated workers
#    (bench/fleet_sim: a thread and a connection each, HELLO .. WELCOME
#    with the shared secret, then every leased seed answered at once with
#    a RESULT "pass") against `soak coordinator --seeds 0..SIM_SEEDS-1`
#    (1,000,000) on tcp://127.0.0.1.  The baseline, in the same round:
#    the same simulated workers against `fleet_sim --null`, a coordinator
#    that keeps no books (nng and the codec on this machine).  results/s
#    from the first lease to the last ACK; the coordinator's VmHWM (from
#    /proc/PID/status once the last result is acknowledged) and its peak
#    RSS and CPU over its whole life (wait4: writing report.json
#    included).  SIM_RUNS rounds (1), interleaved.  Goals: >= 20,000
#    results/s, <= 100 MB.
# 3. More workers than reply slots: the coordinator answers
#    through 256 nng contexts and parks a lease request in one until work
#    exists.  OVER_WORKERS (400) simulated workers on OVER_SEEDS (450)
#    seeds of HOLD_MS (2000) each: at the tail more than 256 of them wait
#    for work while others still hold seeds.  Prints the verdicts, the
#    worker-lost attempts and the late results the coordinator logged, and
#    the wall time against the ideal.
#
# Never fails on timing: only when a process fails or (1, 2) a seed does
# not pass.  Knobs: BUILD, SOAK, SIM, HS, PARTS ("1 2 3"), RUNS, COUNTS,
# SPW, TURNS, SLEEP, SIM_WORKERS, SIM_SEEDS, SIM_RUNS, OVER_WORKERS,
# OVER_SEEDS, HOLD_MS.  About 6 minutes on a 2-core machine with the defaults
# (SIM_SEEDS=100000 makes part 2 take about 20 s).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SOAK=${SOAK:-$PWD/$BUILD/soak}
SIM=${SIM:-$PWD/$BUILD/bench/fleet_sim}
HS=${HS:-$PWD/$BUILD/bench/fleet_handshake}
RUNS=${RUNS:-3} COUNTS=${COUNTS:-"1 2 4 8 16"} SPW=${SPW:-8} TURNS=${TURNS:-2} SLEEP=${SLEEP:-0.3}
SIM_WORKERS=${SIM_WORKERS:-256} SIM_SEEDS=${SIM_SEEDS:-1000000} SIM_RUNS=${SIM_RUNS:-1}
PARTS=${PARTS:-"1 2 3"} OVER_WORKERS=${OVER_WORKERS:-400} OVER_SEEDS=${OVER_SEEDS:-450} HOLD_MS=${HOLD_MS:-2000}
for b in "$SOAK" "$SIM" "$HS"; do
	[ -x "$b" ] || { echo "fleet: no $b (make all $BUILD/bench/fleet_sim $BUILD/bench/fleet_handshake)" >&2; exit 1; }
done
unset SOAK_SECRET SOAK_DATABASE_URL

dir=$(mktemp -d /tmp/soak-bench-fleet.XXXXXX)
shm=$(mktemp -d /dev/shm/soak-bench-fleet.XXXXXX)	# report.json of 1M seeds is ~0.5 GB
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$dir" "$shm"
}
trap cleanup EXIT
kv() { sed -n "s/^# $1=//p" "$2" | tail -1; }
# wait_for FILE REGEX SECONDS WHAT: woken by each write (tail -F), bounded.
wait_for() {
	grep -m1 -qE "$2" < <(timeout "$3" tail -n +1 -F "$1" 2>/dev/null) ||
	    { echo "fleet: no $4 within $3 s:" >&2; cat "$1" >&2; exit 1; }
}

part() { [[ " $PARTS " == *" $1 "* ]]; }
echo "machine: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"

# --- 1. efficiency ---
if part 1; then
cat >"$dir/sleep.yaml" <<YAML
name: fleet-sleep
seeds: 0..7
turns: $TURNS
rounds: 1
confirm: false
seed_timeout: 60s
turn:
  command: [/bin/sleep, "$SLEEP"]
  timeout: 10s
invariants:
  - name: trivial
    sql: SELECT 1 WHERE false
YAML
echo
echo "-- 1. efficiency: soak run --workers N, $SPW seeds per worker x $TURNS turns of sleep $SLEEP;"
echo "   wall_ms from report.json EXCLUDING a PostgreSQL start (one shared); median of $RUNS, counts interleaved"
"$HS" --pg >"$dir/pg.out" 2>"$dir/pg.err" &
pgpid=$!
pids+=("$pgpid")
read -r _ < <(timeout 30 tail -n +1 -F --pid="$pgpid" "$dir/pg.out" 2>/dev/null) || true
[ -s "$dir/pg.out" ] || { echo "fleet: no PostgreSQL:" >&2; cat "$dir/pg.err" >&2; exit 1; }
SOAK_DATABASE_URL=$(head -1 "$dir/pg.out")
export SOAK_DATABASE_URL
read -ra counts <<<"$COUNTS"
nc=${#counts[@]}
: >"$dir/eff.tsv"
for r in $(seq "$RUNS"); do
	for j in $(seq 0 $((nc - 1))); do
		n=${counts[$(((r + j) % nc))]}
		out=$dir/eff-$n-$r
		if ! "$SOAK" run "$dir/sleep.yaml" --workers "$n" --seeds "0..$((n * SPW - 1))" \
		    --out "$out" >"$out.out" 2>"$out.err"; then
			echo "fleet: soak run --workers $n failed:" >&2
			tail -5 "$out.err" >&2
			exit 1
		fi
		[ "$(jq .totals.pass "$out/report.json")" = $((n * SPW)) ] || {
			echo "fleet: --workers $n: not every seed passed" >&2; exit 1; }
		echo "$n $r $(jq .wall_ms "$out/report.json") $(jq -c '[.workers[].seeds]' "$out/report.json")" \
		    >>"$dir/eff.tsv"
		rm -rf "$out"
	done
done
kill "$pgpid"; wait "$pgpid" 2>/dev/null || true
pids=()
unset SOAK_DATABASE_URL
python3 - "$dir/eff.tsv" "$SPW" "$SLEEP" <<'PY'
import sys, json, statistics as st
spw, sleep = int(sys.argv[2]), float(sys.argv[3])
runs = {}
for line in open(sys.argv[1]):
    n, r, wall, seeds = line.split(" ", 3)
    runs.setdefault(int(n), []).append((float(wall), json.loads(seeds)))
ideal = spw * sleep * 1000
print(f"{'workers':>7}{'seeds':>7}{'ideal s':>9}{'wall s':>8}{'efficiency':>11}{'max/mean':>9}"
      f"{'max-mean':>9}   seeds per worker (median run)   efficiency per run")
for n in sorted(runs):
    rs = sorted(runs[n], key=lambda x: x[0])
    wall, seeds = rs[(len(rs) - 1) // 2]
    mean = n * spw / len(seeds)
    effs = " ".join(f"{ideal / w:.2f}" for w, _ in runs[n])
    print(f"{n:>7}{n * spw:>7}{ideal / 1000:>9.2f}{wall / 1000:>8.2f}{ideal / wall:>11.2f}"
          f"{max(seeds) / mean:>9.2f}{max(seeds) - mean:>+9.1f}   {str(seeds):<30}   {effs}")
print("(efficiency = ideal / wall of the median run; max/mean, max-mean: the busiest worker's "
      "seeds against the mean; goal >= 0.85 at 8 workers)")
PY
fi

# --- 2. coordinator capacity ---
if part 2 || part 3; then
(umask 077 && openssl rand -hex 32 >"$dir/secret")
cat >"$dir/sim.yaml" <<'YAML'
name: fleet-sim
seeds: 0..0
turns: 1
confirm: false
turn:
  command: [/bin/true]
invariants:
  - name: trivial
    sql: SELECT 1 WHERE false
YAML
fi
if part 2; then
echo
echo "-- 2. coordinator capacity: $SIM_WORKERS simulated workers (threads, one connection each),"
echo "   $SIM_SEEDS seeds answered at once; against fleet_sim --null (no books) and soak coordinator"
echo "   (shared secret); $SIM_RUNS round(s), interleaved"
: >"$dir/cap.tsv"
cap_null() {	# ROUND
	local out=$dir/null-$1
	"$SIM" --null tcp://127.0.0.1:0 "$SIM_SEEDS" >"$out.srv" 2>&1 &
	local np=$!
	pids+=("$np")
	wait_for "$out.srv" '^listening on ' 10 "fleet_sim --null listening"
	"$SIM" --insecure "$(grep -oE 'tcp://[0-9.:]+' "$out.srv")" "$SIM_WORKERS" >"$out.sim" 2>&1 ||
	    { echo "fleet: the simulated workers failed against --null:" >&2; cat "$out.sim" >&2; exit 1; }
	kill "$np"; wait "$np" 2>/dev/null || true
	pids=()
	echo "null $1 $(kv results_per_s "$out.sim") $(kv rtt_p50_us "$out.sim") $(kv rtt_p99_us "$out.sim")" \
	    >>"$dir/cap.tsv"
}
cap_coord() {	# ROUND
	local out=$dir/coord-$1 t1 cp pid rc=0
	"$SIM" --rusage "$out.ru" "$SOAK" coordinator "$dir/sim.yaml" --listen tcp://127.0.0.1:0 \
	    --secret-file "$dir/secret" --seeds "0..$((SIM_SEEDS - 1))" --out "$shm/coord-$1" \
	    >"$out.out" 2>"$out.err" &
	cp=$!
	pids+=("$cp")
	wait_for "$out.err" 'listening on tcp://' 10 "the coordinator listening"
	wait_for "$out.ru" '^# pid=' 10 "the coordinator's pid"
	pid=$(kv pid "$out.ru")
	"$SIM" --secret-file "$dir/secret" --coord-pid "$pid" \
	    "$(grep -oE 'listening on tcp://[0-9.:]+' "$out.err" | cut -d' ' -f3)" "$SIM_WORKERS" \
	    >"$out.sim" 2>&1 || { echo "fleet: the simulated workers failed:" >&2; cat "$out.sim" >&2; exit 1; }
	t1=$(date +%s%N)
	wait "$cp" || rc=$?
	pids=()
	[ "$rc" = 0 ] || { echo "fleet: the coordinator exited $rc:" >&2; tail -5 "$out.err" >&2; exit 1; }
	[ "$(jq .totals.pass "$shm/coord-$1/report.json")" = "$SIM_SEEDS" ] || {
		echo "fleet: not every seed passed" >&2; exit 1; }
	echo "coord $1 $(kv results_per_s "$out.sim") $(kv rtt_p50_us "$out.sim") $(kv rtt_p99_us "$out.sim")" \
	    "$(kv vmhwm_kb "$out.sim") $(kv maxrss_kb "$out.ru") $(kv cpu_us "$out.ru")" \
	    "$((($(date +%s%N) - t1) / 1000000)) $(jq .wall_ms "$shm/coord-$1/report.json")" \
	    "$(kv join_retries "$out.sim") $(kv refused "$out.sim")" >>"$dir/cap.tsv"
	rm -rf "$shm/coord-$1"
}
for r in $(seq "$SIM_RUNS"); do
	if [ $((r % 2)) = 1 ]; then cap_null "$r"; cap_coord "$r"; else cap_coord "$r"; cap_null "$r"; fi
done
python3 - "$dir/cap.tsv" "$SIM_SEEDS" <<'PY'
import sys, statistics as st
n = int(sys.argv[2])
null, coord = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    (null if f[0] == "null" else coord)[int(f[1])] = [float(x) for x in f[2:]]
rounds = sorted(coord)
med = lambda d, i: st.median(d[r][i] for r in rounds)
print(f"{'':<22}{'results/s':>10}{'x null':>8}{'RESULT->ACK p50':>16}{'p99':>7}   results/s per round")
print(f"{'null (no books)':<22}{med(null,0):>10.0f}{1:>8.2f}{med(null,1) / 1000:>14.1f}ms"
      f"{med(null,2) / 1000:>5.0f}ms   " + " ".join(f"{null[r][0]:.0f}" for r in rounds))
print(f"{'soak coordinator':<22}{med(coord,0):>10.0f}{st.median(coord[r][0] / null[r][0] for r in rounds):>8.2f}"
      f"{med(coord,1) / 1000:>14.1f}ms{med(coord,2) / 1000:>5.0f}ms   "
      + " ".join(f"{coord[r][0]:.0f}" for r in rounds))
print(f"coordinator memory: VmHWM {med(coord,3) / 1024:.0f} MB when the last result was acknowledged, "
      f"peak RSS {med(coord,4) / 1024:.0f} MB over its life (writing report.json included); goal <= 100 MB")
print(f"coordinator CPU {med(coord,5) / 1e6:.1f} s ({med(coord,5) / n:.1f} µs a seed, start to exit); "
      f"last ACK to exit (drain, report.json, junit.xml) {med(coord,6) / 1000:.1f} s; "
      f"report wall_ms {med(coord,7) / 1000:.1f} s")
print(f"joins closed before authenticating and retried: {med(coord,8):.0f} "
      f"(the coordinator's 64 unauthenticated connections); results refused: {med(coord,9):.0f}")
PY
fi

# --- 3. more workers than reply slots ---
if part 3; then
	echo
	echo "-- 3. $OVER_WORKERS simulated workers (more than the coordinator's 256 reply slots),"
	echo "   $OVER_SEEDS seeds of $HOLD_MS ms each (fleet_sim --hold-ms)"
	out=$dir/over
	"$SOAK" coordinator "$dir/sim.yaml" --listen tcp://127.0.0.1:0 --secret-file "$dir/secret" \
	    --seeds "0..$((OVER_SEEDS - 1))" --out "$out" >"$out.out" 2>"$out.err" &
	cp=$!
	pids+=("$cp")
	wait_for "$out.err" 'listening on tcp://' 10 "the coordinator listening"
	"$SIM" --secret-file "$dir/secret" --hold-ms "$HOLD_MS" \
	    "$(grep -oE 'listening on tcp://[0-9.:]+' "$out.err" | cut -d' ' -f3)" "$OVER_WORKERS" \
	    >"$out.sim" 2>&1 || { echo "fleet: the simulated workers failed:" >&2; cat "$out.sim" >&2; exit 1; }
	rc=0
	wait "$cp" || rc=$?
	pids=()
	waves=$(( (OVER_SEEDS + OVER_WORKERS - 1) / OVER_WORKERS ))
	echo "coordinator exit status $rc; verdicts $(jq -c .totals "$out/report.json")"
	echo "worker-lost attempts (no heartbeat before the lease expired): $(grep -c 'lost (no heartbeat' "$out.err" || true);" \
	    "late results refused: $(grep -c 'late result' "$out.err" || true);" \
	    "seeds with more than one attempt: $(jq '[.results[] | select(.attempts|length > 1)] | length' "$out/report.json")"
	echo "wall $(jq '.wall_ms / 1000' "$out/report.json") s; ideal $((waves * HOLD_MS / 1000)) s ($waves waves of $HOLD_MS ms)"
fi
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
