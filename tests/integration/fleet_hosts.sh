# A cluster of machines (docs/fleet.md): `soak coordinator` on 10.213.0.1 and
# `soak worker`s on hosts 10.213.0.11.., each host a network namespace on
# one bridge (netns.sh), authenticated by a shared secret, every worker
# using one PostgreSQL at 10.213.0.2 with a password (SOAK_DATABASE_URL,
# as docs/fleet.md "Across machines" says to keep the password off the wire).
# Seeds are a turn of `sleep 0.2`.  Each case asserts on report.json that
# every seed of the range has exactly one final verdict:
#  a. every process of one host SIGKILLed once it has reported a result:
#     the seed it was running has an infra/worker-lost attempt and passes
#     on another worker; its other seeds run elsewhere;
#  b. one host's traffic to and from the coordinator dropped (nftables)
#     past the lease TTL (--lease-ttl 2s, --heartbeat 200ms), then
#     restored: its lease expires, its seed passes elsewhere, its late
#     result is refused;
#  c. balance: 8 workers join one by one (each once the previous one holds
#     a lease; every seed waits at a gate until all have joined, so the
#     first holds 32 seeds before the second exists), 80 seeds of equal
#     cost: no worker runs more than
#     ceil(80/8)+2 = 12 (docs/design.md, "Across machines": no worker
#     idles while another holds unstarted seeds, whatever the join order);
#  d. SIGTERM to one worker in the middle of its lease: it exits 0, its
#     unstarted seeds run elsewhere.
# Each case runs in a subshell that stops what it started, so a failing
# case does not hide the others; the test fails naming every case that
# failed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns.sh"

netns_up h1 h2 h3 h4
netns_pg

(umask 077 && openssl rand -hex 32 >"$T/secret")
cat >"$T/fleet.yaml" <<'YAML'
name: fleet-hosts
seeds: 0..47
turns: 1
retries: 2
confirm: false
seed_timeout: 30s
turn:
  command: [/bin/sleep, "0.2"]
  timeout: 10s
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML

# --- within a case (a subshell): what it started, stopped when it ends ---
case_pids=()
case_stop() {
	local p
	for p in "${case_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${case_pids[@]}"; do timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || true; done
}

# start_coord NAME SEEDS [ARGS...]: in "c", -v; sets $coord and $url.
start_coord() {
	local name=$1 seeds=$2; shift 2
	host_spawn c "$SOAK" coordinator "${CFG:-$T/fleet.yaml}" --listen "tcp://$(host_addr c):0" \
	    --secret-file "$T/secret" --seeds "$seeds" --out "$T/$name" -v "$@" \
	    >"$T/$name.out" 2>"$T/$name.err"
	coord=$HOST_PID
	case_pids+=("$coord")
	url=$(wait_line "$T/$name.err" 'listening on tcp://' 30 "coordinator $name listening" |
	    grep -oE 'tcp://[0-9.]+:[0-9]+')
}
# start_worker HOST LOG [ARGS...]: soak worker -v on HOST; sets $wpid.
start_worker() {
	local h=$1 log=$2; shift 2
	host_spawn "$h" env SOAK_DATABASE_URL="$NETNS_DB_URL" "$SOAK" worker --connect "$url" \
	    --secret-file "$T/secret" -v "$@" 2>"$T/$log.err"
	wpid=$HOST_PID
	case_pids+=("$wpid")
}
# wait_reported LOG SECONDS WHAT: once some worker logging to LOG starts a
# second seed — so the coordinator has acknowledged its first result (a
# worker reports before it starts the next) — prints "WORKER SEED".
wait_reported() {
	local line fd w s
	local -A first=()
	exec {fd}< <(timeout "$2" tail -n +1 -F "$1" 2>/dev/null)
	while IFS= read -r -u "$fd" line; do
		[[ $line =~ ^worker\ ([0-9]+):\ seed\ ([0-9]+): ]] || continue
		w=${BASH_REMATCH[1]} s=${BASH_REMATCH[2]}
		if [ -z "${first[$w]:-}" ]; then
			first[$w]=$s
		elif [ "${first[$w]}" != "$s" ]; then
			exec {fd}<&-
			echo "$w $s"
			return 0
		fi
	done
	exec {fd}<&-
	fail "watchdog: no '$3' within $2 s (no worker in $1 started a second seed)"
}
# ids LOG HOST: the ids the coordinator gave HOST's workers, as "1|4".
ids() { grep -oE "worker [0-9]+ is $2:" "$1" | awk '{print $2}' | paste -sd'|'; }
r() { jq -r -c "$2" "$T/$1/report.json"; }	# NAME JQ
history() { r "$1" "[.results[] | select(.seed==$2) | .attempts[] | \"\(.verdict)/\(.reason)\"]"; }
every_seed_final() {	# NAME FIRST LAST: one record each, all of them pass
	check_report "$T/$1" "$2" "$3"
	expect_eq "$1: seeds that passed" $(($3 - $2 + 1)) "$(r "$1" .totals.pass)"
	expect_eq "$1: seeds without a verdict" 0 "$(r "$1" .totals.missing)"
}

# --- a. SIGKILL every process of one host ---
case_a() {
	local rc wr lost s h1 w2 w3
	start_coord a 0..47
	start_worker h1 a-h1 --slots 2; local p1=$wpid
	start_worker h2 a-h2 --slots 2; w2=$wpid
	start_worker h3 a-h3 --slots 2; w3=$wpid
	wr=$(wait_reported "$T/a-h1.err" 60 "a worker on h1 reporting a result")
	ok "h1: worker ${wr% *} reported a result and started seed ${wr#* }"
	host_kill h1
	wait_exit rc "$p1" 30 "the worker on h1 after SIGKILL"
	expect_eq "a: the worker on h1 died of SIGKILL" 137 "$rc"
	wait_exit rc "$coord" 120 "the coordinator of case a"
	expect_eq "a: coordinator exit status" 0 "$rc"
	wait_exit rc "$w2" 30 "the worker on h2"; expect_eq "a: worker on h2 exit status" 0 "$rc"
	wait_exit rc "$w3" 30 "the worker on h3"; expect_eq "a: worker on h3 exit status" 0 "$rc"
	every_seed_final a 0 47
	h1=$(r a '[.workers[] | select(.host=="h1") | .id]')
	expect_eq "a: workers on h1 (from report.json)" 2 "$(jq length <<<"$h1")"
	lost=$(r a '[.results[] | select(any(.attempts[]; .reason=="worker-lost")) | .seed] | join(" ")')
	expect_ge "a: seeds with a worker-lost attempt" 1 "$(wc -w <<<"$lost")"
	for s in $lost; do
		expect_eq "a: seed $s history" '["infra/worker-lost","pass/"]' "$(history a "$s")"
		expect_eq "a: seed $s was lost by a worker of h1" true \
		    "$(r a "[.results[] | select(.seed==$s) | .attempts[0].worker] | .[0] | IN($h1[])")"
		expect_eq "a: seed $s passed on h1" false \
		    "$(r a "[.results[] | select(.seed==$s) | .attempts[1].worker] | .[0] | IN($h1[])")"
		expect_match "a: the coordinator logged seed $s lost" \
		    "seed $s: worker [0-9]+ lost \(no heartbeat before its lease expired\)" "$(cat "$T/a.err")"
	done
	expect_eq "a: no other seed has two attempts" 0 \
	    "$(r a '[.results[] | select((.attempts|length) != 1 and all(.attempts[]; .reason != "worker-lost"))] | length')"
	ok "a: seeds per worker $(r a '[.workers[] | "\(.host)/\(.id)=\(.seeds)"] | join(" ")')"
}

# --- b. drop one host's traffic past the lease TTL, then restore it ---
case_b() {
	local rc wr ids2 line lost late p1 p2 p3 st
	start_coord b 0..59 --heartbeat 200ms --lease-ttl 2s
	start_worker h1 b-h1 --slots 2; p1=$wpid
	start_worker h2 b-h2 --slots 2; p2=$wpid
	start_worker h3 b-h3 --slots 2; p3=$wpid
	wr=$(wait_reported "$T/b-h2.err" 60 "a worker on h2 reporting a result")
	ok "h2: worker ${wr% *} reported a result and started seed ${wr#* }"
	host_cut h2
	st=$SECONDS
	ids2=$(ids "$T/b.err" h2)
	[ -n "$ids2" ] || fail "b: the coordinator's log names no worker of h2"
	line=$(wait_line "$T/b.err" "seed [0-9]+: worker ($ids2) lost \(no heartbeat before its lease expired\)" \
	    30 "h2's lease expiring while it is cut off")
	lost=$(grep -oE 'seed [0-9]+: worker' <<<"$line" | grep -oE '[0-9]+')
	ok "b: lease of h2 expired after ~$((SECONDS - st)) s cut off: seed $lost lost"
	host_restore h2
	st=$SECONDS
	line=$(wait_line "$T/b.err" "late result for seed [0-9]+ under expired lease [0-9]+ from worker ($ids2) refused" \
	    30 "h2's late result being refused")
	late=$(grep -oE 'seed [0-9]+' <<<"$line" | grep -oE '[0-9]+')
	ok "b: the coordinator refused h2's late result for seed $late, ~$((SECONDS - st)) s after the restore"
	wait_exit rc "$coord" 120 "the coordinator of case b"
	expect_eq "b: coordinator exit status" 0 "$rc"
	wait_exit rc "$p1" 30 "the worker on h1"; expect_eq "b: worker on h1 exit status" 0 "$rc"
	wait_exit rc "$p2" 30 "the worker on h2"; expect_eq "b: worker on h2 exit status" 0 "$rc"
	wait_exit rc "$p3" 30 "the worker on h3"; expect_eq "b: worker on h3 exit status" 0 "$rc"
	every_seed_final b 0 59
	expect_match "b: h2's worker logged the refusal" "seed $late: result refused: lease [0-9]+ has expired" \
	    "$(cat "$T/b-h2.err")"
	expect_eq "b: seed $lost history" '["infra/worker-lost","pass/"]' "$(history b "$lost")"
	expect_eq "b: seed $late history (the refused result is not in it)" '["infra/worker-lost","pass/"]' \
	    "$(history b "$late")"
	expect_eq "b: seed $late passed on another worker than the one cut off" true \
	    "$(r b "[.results[] | select(.seed==$late) | .attempts[0].worker != .attempts[1].worker] | .[0]")"
	ok "b: seeds per worker $(r b '[.workers[] | "\(.host)/\(.id)=\(.seeds)"] | join(" ")')"
}

# --- c. balance: 8 workers joining one by one ---
case_c() {
	local rc i h pids=() t0 counts max
	# Every seed waits at the gate until all 8 have joined, so what is
	# measured is how the leases spread, not who came first: the first
	# worker holds a lease of 32 before the second exists.
	gate_new
	cat >"$T/gated.sh" <<SH
#!/bin/sh
timeout 120 dd if="$T/gate" bs=1 count=1 status=none
exec /bin/sleep 0.2
SH
	chmod +x "$T/gated.sh"
	# The turns wait at the gate while the workers join: however long
	# the joins take on a loaded machine, within the gate's own 120 s
	# (a 10 s turn.timeout failed this case when 8 joins took 13.8 s).
	sed -e "s|command: \[/bin/sleep, \"0.2\"\]|command: [./gated.sh]|" \
	    -e 's|^  timeout: 10s$|  timeout: 150s|' -e 's|^seed_timeout: 30s$|seed_timeout: 180s|' \
	    "$T/fleet.yaml" >"$T/gated.yaml"
	grep -q 'timeout: 150s' "$T/gated.yaml" || fail "c: the gated config kept its 10 s turn timeout"
	CFG=$T/gated.yaml start_coord c 0..79
	t0=$(date +%s%N)
	# Each joins once the one before holds a lease (an event, not a clock):
	# the first holds a lease before the second exists, and so on.
	for i in 1 2 3 4 5 6 7 8; do
		h=h$(( (i - 1) % 4 + 1 ))
		start_worker "$h" "c-$i"
		pids+=("$wpid")
		wait_line "$T/c.err" "lease [0-9]+ to worker $i: " 60 "worker $i's first lease" >/dev/null
	done
	ok "c: 8 workers joined one by one over $(( ($(date +%s%N) - t0) / 1000000 )) ms"
	gate_open
	wait_exit rc "$coord" 120 "the coordinator of case c"
	expect_eq "c: coordinator exit status" 0 "$rc"
	for i in 1 2 3 4 5 6 7 8; do
		wait_exit rc "${pids[$((i - 1))]}" 30 "worker $i"
		expect_eq "c: worker $i exit status" 0 "$rc"
	done
	every_seed_final c 0 79
	counts=$(r c '[.workers[] | .seeds]')
	max=$(jq max <<<"$counts")
	echo "c: seeds per worker (in join order): $counts; first leases:" \
	    "$(grep -oE 'lease [0-9]+ to worker [0-9]+: [0-9]+ seed' "$T/c.err" |
	        awk '!seen[$5]++ {print $6 "->w" $5}' | tr -d : | paste -sd' ')"
	[ "$max" -le 12 ] || fail "c: a worker ran $max seeds, more than ceil(80/8)+2 = 12 (seeds per worker $counts)"
	ok "c: no worker ran more than 12 seeds (max $max)"
}

# --- d. SIGTERM to one worker in the middle of its lease ---
case_d() {
	local rc wr n first p1 p2 p3 unstarted
	start_coord d 0..29
	start_worker h1 d-h1; p1=$wpid
	line=$(wait_line "$T/d.err" "lease [0-9]+ to worker 1: [0-9]+ seed\(s\) from [0-9]+" 60 "worker 1's lease")
	n=$(grep -oE '[0-9]+ seed' <<<"$line" | grep -oE '[0-9]+')
	first=$(grep -oE 'from [0-9]+' <<<"$line" | grep -oE '[0-9]+')
	[ "$n" -ge 3 ] || fail "d: worker 1's lease holds $n seed(s); the case wants unstarted ones"
	start_worker h2 d-h2; p2=$wpid
	start_worker h3 d-h3; p3=$wpid
	wr=$(wait_reported "$T/d-h1.err" 60 "worker 1 reporting a result")
	ok "d: worker 1 (lease of $n seeds from $first) reported a result and started seed ${wr#* }"
	grep -q worker "/proc/$p1/cmdline" || fail "d: pid $p1 is not the worker"
	kill -TERM "$p1"
	wait_exit rc "$p1" 60 "worker 1 after SIGTERM"
	local rc1=$rc
	echo "d: worker 1 exit status after SIGTERM: $rc1"
	wait_exit rc "$coord" 120 "the coordinator of case d"
	expect_eq "d: coordinator exit status" 0 "$rc"
	wait_exit rc "$p2" 30 "the worker on h2"; expect_eq "d: worker on h2 exit status" 0 "$rc"
	wait_exit rc "$p3" 30 "the worker on h3"; expect_eq "d: worker on h3 exit status" 0 "$rc"
	every_seed_final d 0 29
	echo "d: worker 1's seeds: $(r d '[.results[] | select(any(.attempts[]; .worker==1)) | "\(.seed):\([.attempts[] | "\(.worker)/\(.verdict)/\(.reason)"] | join(","))"] | join(" ")')"
	unstarted=$(r d "[.results[] | select(.seed >= $first and .seed < $first + $n and all(.attempts[]; .worker != 1))] | length")
	expect_ge "d: seeds of worker 1's lease that finished elsewhere" 1 "$unstarted"
	expect_eq "d: worker 1 exits 0 on SIGTERM" 0 "$rc1"
}

failed=()
run_case() {	# NAME FUNCTION; FLEET_CASES="a c" runs only those
	local st
	[[ " ${FLEET_CASES:-a b c d} " == *" ${1%% *} "* ]] || return 0
	echo "== case $1"
	set +e
	( set -e; trap case_stop EXIT; "$2" )
	st=$?
	set -e
	[ "$st" -eq 0 ] && ok "case $1" || failed+=("$1")
}
run_case "a (host SIGKILLed)" case_a
run_case "b (host cut off past the lease TTL)" case_b
run_case "c (balance, 8 workers joining one by one)" case_c
run_case "d (SIGTERM mid-lease)" case_d
[ ${#failed[@]} -eq 0 ] || fail "cases that failed: $(printf '%s; ' "${failed[@]}")"
