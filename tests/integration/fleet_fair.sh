# Fair admission before authentication (coordinator/peer.h, the pre-auth
# pool; coordinator/fdtab.h, the descriptor limit), on loopback with real
# processes and sockets from many source addresses of 127.0.0.0/8: in each
# case a real `soak worker` with the secret is started while the flood is
# at work, and must get its first lease (a watchdog names what it waited
# for; the times are printed, never asserted on):
#  - none: the same worker with no flood, for reference;
#  - hush: 200 connections from 200 addresses that finish nng's SP
#    handshake and then say nothing, each reopened as soon as the
#    coordinator closes it (the lockout a plain cap made: a cap of 64
#    refused every newcomer);
#  - slowloris: 1,000 connections that send one byte of the SP header and
#    nothing more (nng holds each for its 10 s negotiation timeout), while
#    descriptors remain (the coordinator raised RLIMIT_NOFILE, and says so);
#  - the descriptor limit: the same 1,000, reconnecting at once when
#    closed, against a coordinator whose hard RLIMIT_NOFILE is 256, which
#    lets at most 64 be in their handshake and closes the oldest;
#  - guesses: 2,000 wrong proofs from 50 addresses, 16 at a time, while
#    the worker joins from the same address as some of them: every guess
#    is refused (none is met by a ban), the worker gets in, the
#    coordinator's CPU per guess is printed and its lines about the
#    failures are rate-limited;
#  - a join storm: 1,000 simulated workers (bench/fleet_sim, a thread and
#    a connection each, the handshake as a worker does it) from 4
#    addresses, all dialing at once, as a Kubernetes Job with parallelism
#    1000 on 4 nodes starts: every one joins (the time it took, and how
#    many joins were closed before authenticating and dialed again, are
#    printed) and the run's 2,000 seeds pass.
. "$(dirname "$0")/lib.sh"

PEER=$SOAK_BUILD/tests/helpers/soak_peer
PGBIN=/usr/lib/postgresql/15/bin
export SOAK_SECRET=fleet-fair-secret-$$-0123456789abcdef
ms() { date +%s%3N; }

# One PostgreSQL for every worker, so a first lease is not a database start.
shared_pg fair

cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# With a gate file, seed 0 waits for the test (bounded: 120 s).
[ "$SOAK_SEED" = 0 ] && [ -p "$SOAK_CONFIG_DIR/gate" ] &&
    timeout 120 dd if="$SOAK_CONFIG_DIR/gate" bs=1 count=1 status=none
exit 0
SH
chmod +x "$T/turn.sh"
cat >"$T/fair.yaml" <<'YAML'
name: fleet-fair
seeds: 0..1
turns: 1
retries: 0
confirm: false
turn:
  command: [./turn.sh]
  timeout: 180s
seed_timeout: 200s
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML

# The coordinators under a flood: nng 1.5.2's own leak of pipes shut
# mid-handshake is let off for them alone (tests/lsan-nng-flood.supp says
# why); SANITIZE=1 only.
flood_lsan=()
[ -n "${LSAN_OPTIONS:-}" ] &&
    flood_lsan=(env "LSAN_OPTIONS=suppressions=$ROOT/tests/lsan-nng-flood.supp:print_suppressions=0")
start_coordinator() {	# NAME [prlimit args]: sets $coord, $url, $cname
	local name=$1; shift
	cname=$name
	# --bundle off: the worker shares this folder (the gate is a fifo here).
	local lsan=("${flood_lsan[@]}")
	[ "$name" != none ] || lsan=()	# no flood: every leak counts
	"$@" "${lsan[@]}" "$SOAK" coordinator "$T/fair.yaml" --listen tcp://127.0.0.1:0 --out "$T/$name" \
	    --bundle off -v >"$T/$name.out" 2>"$T/$name.err" &
	coord=$!
	cleanup_hooks+=("kill $coord 2>/dev/null")
	url=$(wait_line "$T/$name.err" 'listening on tcp://' 30 "coordinator $name listening" |
	    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
}
# first_lease NAME: a worker joins now; prints how long to its WELCOME and
# to its first lease (sets $worker); finish NAME waits for the run to end.
first_lease() {
	local name=$1 t0 welcome lease
	t0=$(ms)
	"$SOAK" worker --connect "$url" -v 2>"$T/$name-w.err" & worker=$!
	cleanup_hooks+=("kill $worker 2>/dev/null")
	wait_line "$T/$name-w.err" 'connected to .* trusted by the shared secret' 60 \
	    "the worker's welcome under $name" >/dev/null
	welcome=$(($(ms) - t0))
	wait_line "$T/$name-w.err" 'lease [0-9]+: [0-9]+ seed' 60 \
	    "the worker's first lease under $name" >/dev/null
	lease=$(($(ms) - t0))
	printf 'first lease under %-42s welcome after %5d ms, first lease after %5d ms\n' \
	    "$name:" "$welcome" "$lease" | tee -a "$T/figures"
}
finish() {
	local name=$1 rc wrc
	wait_exit rc "$coord" 60 "the coordinator's run under $name"
	wait_exit wrc "$worker" 30 "the worker under $name"
	expect_eq "$name: the run's exit status" 0 "$rc"
	expect_eq "$name: the worker's exit status" 0 "$wrc"
	expect_eq "$name: seeds that passed" 2 "$(jq .totals.pass "$T/$cname/report.json")"
}
stop_flood() {	# PID WHAT OUT: SIGTERM; $reopened: the reconnects it counted
	local st
	kill -TERM "$1" 2>/dev/null || true
	wait_exit st "$1" 30 "$2 after SIGTERM"
	reopened=$(grep -oE '^reconnected [0-9]+' "$3" | grep -oE '[0-9]+')
}

# --- none ---
start_coordinator none
expect_match "the coordinator says how many descriptors it has" \
    'descriptors: up to [0-9]+ \(RLIMIT_NOFILE' "$(cat "$T/none.err")"
first_lease none
finish none

# --- hush: 200 addresses, silent, reconnecting at once ---
start_coordinator hush
"$PEER" "$url" hush 200 127.1.0.1 >"$T/hush.flood" 2>&1 & hush=$!
cleanup_hooks+=("kill $hush 2>/dev/null")
# (the floods' watchdogs are long: under ASan on a loaded machine the
# flood itself is slow to build; a passing run takes seconds)
wait_line "$T/hush.flood" '^holding 200' 180 "200 silent connections past their handshake" >/dev/null
wait_line "$T/hush.err" 'its place \(of 64\) given to a newer connection|no whole message' 30 \
    "the coordinator to close a silent connection" >/dev/null
first_lease "hush (200 addresses, silent)"
finish "hush (200 addresses, silent)"
stop_flood "$hush" "the silent flood" "$T/hush.flood"
echo "the silent flood reopened $reopened connections"
expect_ge "connections the silent flood reopened (it was at work)" 1 "$reopened"

# --- slowloris: 1,000 one-byte connections, descriptors to spare ---
start_coordinator loris
"$PEER" "$url" slowloris 1000 127.2.0.1 >"$T/loris.flood" 2>&1 & loris=$!
cleanup_hooks+=("kill $loris 2>/dev/null")
wait_line "$T/loris.flood" '^slowloris 1000' 180 "1,000 slowloris connections made" >/dev/null
first_lease "slowloris (1,000, descriptors remain)"
finish "slowloris (1,000, descriptors remain)"
stop_flood "$loris" "the slowloris" "$T/loris.flood"

# --- the descriptor limit: 1,000 one-byte connections, 256 descriptors ---
start_coordinator limit prlimit --nofile=256:256
expect_match "at the limit it says so" 'descriptors: up to 256 ' "$(cat "$T/limit.err")"
"$PEER" "$url" slowloris 1000 127.3.0.1 >"$T/limit.flood" 2>&1 & loris=$!
cleanup_hooks+=("kill $loris 2>/dev/null")
wait_line "$T/limit.err" 'that had not finished their transport handshake' 180 \
    "the coordinator to close slowloris connections" >/dev/null
first_lease "the descriptor limit (1,000 on 256)"
finish "the descriptor limit (1,000 on 256)"
stop_flood "$loris" "the slowloris at the limit" "$T/limit.flood"
echo "the slowloris at the limit reopened $reopened connections"
expect_match "it closed connections still in their handshake, oldest first" \
    'closed [0-9]+ connection\(s\) that had not finished their transport handshake, oldest first: (more than a quarter of the descriptors were in one|at the descriptor limit) \(descriptors: 256\)' \
    "$(cat "$T/limit.err")"

# --- guesses: 2,000 wrong proofs from 50 addresses, 16 at a time ---
gate_new
start_coordinator guess
cpu0=$(awk '{ print $14 + $15 }' "/proc/$coord/stat")
"$PEER" "$url" guess 2000 127.0.0.1 16 >"$T/guess.flood" 2>&1 & guesser=$!
cleanup_hooks+=("kill $guesser 2>/dev/null")
first_lease "guesses (2,000 wrong proofs)"
wait_exit grc "$guesser" 120 "2,000 wrong proofs"
cpu=$(( $(awk '{ print $14 + $15 }' "/proc/$coord/stat") - cpu0 ))
hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$coord/status")
gate_open
finish "guesses (2,000 wrong proofs)"
cat "$T/guess.flood"
echo "coordinator CPU over the guesses and the run: $((cpu * 1000 / $(getconf CLK_TCK))) ms," \
    "$((cpu * 1000000 / $(getconf CLK_TCK) / 2000)) us a guess; peak RSS $hwm kB" | tee -a "$T/figures"
grep -q 'otherwise 0$' "$T/guess.flood" ||
    { echo "the coordinator's other lines:"; grep -v 'authentication failed' "$T/guess.err" | tail -8; }
expect_match "every wrong proof refused, none by a ban" \
    '^guesses 2000 in [0-9]+ ms: refused 2000, otherwise 0$' "$(cat "$T/guess.flood")"
lines=$(grep -c 'authentication failed' "$T/guess.err" || true)
[ "$lines" -le 30 ] || fail "$lines lines about 2,000 failed proofs: not rate-limited"
ok "$lines line(s) about 2,000 failed proofs (rate-limited)"
expect_eq "nothing refuses an address" 0 "$(grep -c 'refusing connections' "$T/guess.err" || true)"

# --- a join storm: 1,000 workers from 4 addresses at once ---
SIM=$SOAK_BUILD/bench/fleet_sim
printf '%s\n' "$SOAK_SECRET" >"$T/secret"
chmod 600 "$T/secret"
sed 's/^seeds: .*/seeds: 0..1999/; s|command: \[./turn.sh\]|command: [/bin/true]|' \
    "$T/fair.yaml" >"$T/storm.yaml"
# --lease-ttl: the simulated workers send no heartbeats, and a thousand
# workers' results queue at a coordinator that a sanitizer build on a
# loaded machine makes slow; a lease must not expire while its result
# waits there (the storm is about joining)
"${flood_lsan[@]}" "$SOAK" coordinator "$T/storm.yaml" --listen tcp://127.0.0.1:0 --out "$T/storm" \
    --lease-ttl 120s --bundle off >"$T/storm.out" 2>"$T/storm.err" &
coord=$!
cleanup_hooks+=("kill $coord 2>/dev/null")
url=$(wait_line "$T/storm.err" 'listening on tcp://' 30 "the storm's coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
timeout 300 "$SIM" --secret-file "$T/secret" --sources 4 "$url" 1000 >"$T/sim.out" 2>&1 ||
    fail "the join storm: $(tail -n 5 "$T/sim.out")"
wait_exit rc "$coord" 60 "the storm's coordinator after 2,000 seeds"
expect_eq "the storm's run (exit status)" 0 "$rc"
expect_eq "every simulated worker joined and ran" 0 "$(sed -n 's/^# failed=//p' "$T/sim.out")"
expect_eq "the storm's seeds that passed" 2000 "$(jq .totals.pass "$T/storm/report.json")"
printf 'join storm of 1,000 workers from 4 addresses: all joined after %s ms, %s joins closed before authenticating and dialed again\n' \
    "$(sed -n 's/^# join_ms=//p' "$T/sim.out")" "$(sed -n 's/^# join_retries=//p' "$T/sim.out")" |
    tee -a "$T/figures"
cat "$T/figures"
