# Shared-secret authentication across machines (common/auth.h), on
# loopback with real processes:
#  - no insecure default: a tcp:// coordinator with neither secret nor TLS
#    exits 64 saying how to fix it, --insecure runs and warns; a worker
#    that cannot authenticate its coordinator refuses unless --insecure;
#    secret files others can read, a FIFO (at once, never waited on), and
#    short secrets are refused;
#  - a worker refuses a coordinator that does not prove it knows the
#    secret (a fake that skips the challenge, a fake with a made-up proof,
#    a real coordinator with another secret) before it runs anything: the
#    turn leaves a marker, and a fake obeyed with --insecure shows it would;
#  - the coordinator refuses a made-up proof, a replayed HELLO+AUTH (from a
#    relay that captured a real worker's), and gives an unauthenticated
#    client no config, no lease and no say: the verdicts equal `soak run`'s;
#  - the secret never crosses the wire (the relay's capture of every
#    message); a WELCOME altered on the way is refused by the worker;
#  - no ban to aim: 5 wrong proofs from the workers' address (and 200
#    more), then a real worker from it joins and runs; the failures are
#    logged rate-limited.
. "$(dirname "$0")/lib.sh"

PEER=$SOAK_BUILD/tests/helpers/soak_peer
SECRET=fleet-auth-secret-$$-0123456789abcdef
OTHER=another-secret-entirely-0123456789
cat >"$T/turn.sh" <<SH
#!/bin/sh
# The marker: this turn ran, for this run and seed (at $T/ran: a worker
# runs the bundled copy of the config folder, not \$T).
mkdir -p "$T/ran" && touch "$T/ran/\$SOAK_RUN-\$SOAK_SEED"
[ \$((SOAK_SEED % 3)) = 1 ] && exit 1
exit 0
SH
chmod +x "$T/turn.sh"
cat >"$T/auth.yaml" <<'YAML'
name: fleet-auth
seeds: 0..5
turns: 1
retries: 0
confirm: false
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
guard:
  min_ok_turns: 1
YAML
verdicts() { jq -c '[.results[] | [.seed, .verdict, .reason]]' "$1/report.json"; }
nothing_ran() {	# what
	expect_eq "$1: turns that ran" 0 "$(find "$T/ran" -type f 2>/dev/null | wc -l)"
}
# start_coordinator NAME ARGS...: a coordinator in the background; sets
# $coord (pid) and $url.
start_coordinator() {
	local name=$1; shift
	"$SOAK" coordinator "$T/auth.yaml" --listen tcp://127.0.0.1:0 --out "$T/$name" \
	    "$@" >"$T/$name.out" 2>"$T/$name.err" &
	coord=$!
	cleanup_hooks+=("kill $coord 2>/dev/null")
	url=$(wait_line "$T/$name.err" 'listening on tcp://' 30 "coordinator $name listening" |
	    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
}
start_peer() {	# NAME ARGS...: soak_peer in the background; sets $peer and $peer_url
	local name=$1; shift
	"$PEER" "$@" >"$T/$name.out" 2>&1 &
	peer=$!
	cleanup_hooks+=("kill $peer 2>/dev/null")
	peer_url=$(wait_line "$T/$name.out" '^listening on ' 30 "soak_peer $name listening" |
	    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
}
stop() {	# PID WHAT: ends a process that would run on, and reaps it
	kill "$1" 2>/dev/null || true
	wait_exit stopped "$1" 30 "$2 after SIGTERM"
}

# --- no insecure default ---
unset SOAK_SECRET
soak_rc rc coordinator "$T/auth.yaml" --listen tcp://127.0.0.1:0 --out "$T/none" 2>"$T/none.err"
expect_eq "coordinator on tcp:// with no secret, no TLS" 64 "$rc"
expect_match "the refusal says the fix" "set SOAK_SECRET or --secret-file FILE.*tls\+tcp:// with --tls-cert" \
    "$(cat "$T/none.err")"
[ ! -e "$T/none" ] || fail "a refused coordinator created its output directory"
start_coordinator insecure --insecure
expect_match "--insecure runs, with a warning" \
    "warning: --insecure: workers on tcp://127.0.0.1:0 are not authenticated" "$(cat "$T/insecure.err")"
stop "$coord" "the --insecure coordinator"
soak_rc rc worker --connect tcp://127.0.0.1:9 2>"$T/w0.err"
expect_eq "worker with no secret and no CA on tcp://" 64 "$rc"
expect_match "the worker's refusal says the fix" "cannot authenticate the coordinator at tcp://127.0.0.1:9: set SOAK_SECRET" \
    "$(cat "$T/w0.err")"
printf '%s\n' "$SECRET" >"$T/secret"
chmod 644 "$T/secret"
soak_rc rc coordinator "$T/auth.yaml" --listen tcp://127.0.0.1:0 --secret-file "$T/secret" 2>"$T/perm.err"
expect_eq "a secret file others can read (coordinator)" 64 "$rc"
expect_match "its refusal names the file and the fix" "$T/secret is mode 0644.*chmod 600" "$(cat "$T/perm.err")"
soak_rc rc worker --connect tcp://127.0.0.1:9 --secret-file "$T/secret" 2>"$T/perm.err"
expect_eq "a secret file others can read (worker)" 64 "$rc"
chmod 600 "$T/secret"
# A FIFO as the secret file: refused at once, before anything reads it
# (it used to block the start for ever); the watchdog names the hang.
mkfifo -m 600 "$T/secret.fifo"
for side in coordinator worker; do
	if [ $side = coordinator ]; then
		set -- coordinator "$T/auth.yaml" --listen tcp://127.0.0.1:0
	else
		set -- worker --connect tcp://127.0.0.1:9
	fi
	set +e
	timeout 10 "$SOAK" "$@" --secret-file "$T/secret.fifo" 2>"$T/fifo.err"
	rc=$?
	set -e
	[ "$rc" != 124 ] || fail "watchdog: a $side given a FIFO as --secret-file still starting after 10 s"
	expect_eq "a FIFO as the secret file ($side)" 64 "$rc"
	expect_match "its refusal says why" "--secret-file: \"$T/secret.fifo\" is not a regular file \(a FIFO\)" \
	    "$(cat "$T/fifo.err")"
done
SOAK_SECRET=short soak_rc rc worker --connect tcp://127.0.0.1:9 2>"$T/short.err"
expect_eq "a short secret" 64 "$rc"
expect_match "a short secret is explained" "at least 16" "$(cat "$T/short.err")"

# --- a worker refuses a coordinator that does not prove itself ---
start_peer fake1 tcp://127.0.0.1:0 fake-welcome "$T/auth.yaml"
soak_rc rc worker --connect "$peer_url" --secret-file "$T/secret" 2>"$T/w1.err"
expect_eq "worker against a fake that skips the challenge" 1 "$rc"
expect_match "it says why" "sent its config without proving it knows the shared secret" "$(cat "$T/w1.err")"
expect_eq "the fake heard only a hello" "got hello" "$(cat "$T/fake1.out" | grep '^got')"
stop "$peer" "the fake coordinator"
start_peer fake2 tcp://127.0.0.1:0 fake-challenge
soak_rc rc worker --connect "$peer_url" --secret-file "$T/secret" 2>"$T/w2.err"
expect_eq "worker against a fake with a made-up proof" 1 "$rc"
expect_match "it says why" "failed to prove it knows the shared secret" "$(cat "$T/w2.err")"
expect_eq "the fake got no auth from it" "got hello" "$(cat "$T/fake2.out" | grep '^got')"
stop "$peer" "the fake challenger"
SOAK_SECRET=$OTHER start_coordinator other
soak_rc rc worker --connect "$url" --secret-file "$T/secret" 2>"$T/w3.err"
expect_eq "worker against a coordinator with another secret" 1 "$rc"
expect_match "it says why" "failed to prove it knows the shared secret" "$(cat "$T/w3.err")"
stop "$coord" "the coordinator with another secret"
nothing_ran "after three coordinators that did not prove themselves"

# --- the coordinator: made-up proofs, forgers, replays; the wire ---
export SOAK_SECRET=$SECRET
start_coordinator main -v
expect_match "a made-up proof is refused" '^nack ok=0 authentication failed$' \
    "$("$PEER" "$url" badauth | tail -1)"
"$PEER" "$url" forged >"$T/forged.out"
expect_eq "an unauthenticated client gets a challenge, no config" "challenge" "$(head -1 "$T/forged.out")"
expect_match "its forged result is refused" "^nack ok=0 authentication failed" "$(sed -n 2p "$T/forged.out")"
expect_match "it gets no lease" "^nack ok=0 not authenticated: say hello first" "$(sed -n 3p "$T/forged.out")"
grep -qE '^(welcome|lease)' "$T/forged.out" && fail "an unauthenticated client got a welcome or a lease"
start_peer relay "$url" relay tcp://127.0.0.1:0 "$T/wire" replay
"$SOAK" worker --connect "$peer_url" 2>"$T/good.err" & good=$!
cleanup_hooks+=("kill $good 2>/dev/null")
wait_exit rc "$coord" 120 "the coordinator with the secret"
wait_exit good_rc "$good" 30 "the worker behind the relay"
expect_eq "coordinator exit status (seeds 1, 4 fail)" 1 "$rc"
expect_eq "worker exit status" 0 "$good_rc"
expect_eq "a replayed hello gets a fresh challenge" "replay hello: challenge" \
    "$(grep '^replay hello' "$T/relay.out")"
expect_eq "a replayed auth is refused" "replay auth: nack ok=0 authentication failed" \
    "$(grep '^replay auth' "$T/relay.out")"
expect_match "the coordinator logged the failures" "authentication failed: wrong proof" "$(cat "$T/main.err")"
stop "$peer" "the relay"
check_report "$T/main" 0 5
grep -qaF 'name: fleet-auth' "$T/wire" || fail "the relay's capture lacks the config"
ok "the relay captured the config (the capture works)"
expect_eq "the secret never crossed the wire" 0 "$(grep -c -a -F "$SECRET" "$T/wire" || true)"
expect_ge "turns that ran, with the secret" 6 "$(find "$T/ran" -type f | wc -l)"
soak_rc rc run "$T/auth.yaml" --workers 1 --out "$T/local" >/dev/null 2>"$T/local.err"
expect_eq "soak run exit status" 1 "$rc"
expect_eq "verdicts: with forgers and replays = soak run" "$(verdicts "$T/local")" "$(verdicts "$T/main")"

# --- a WELCOME altered on the way ---
rm -rf "$T/ran"
start_coordinator tamper
start_peer tamper "$url" relay tcp://127.0.0.1:0 "$T/wire2" tamper
soak_rc rc worker --connect "$peer_url" 2>"$T/tw.err"
expect_eq "worker given an altered welcome" 1 "$rc"
expect_match "it says why" "reply to auth from .* is not the coordinator's: bad session MAC" "$(cat "$T/tw.err")"
expect_match "the relay did alter it" "tampered with the welcome" "$(cat "$T/tamper.out")"
nothing_ran "after an altered welcome"
stop "$peer" "the tampering relay"
stop "$coord" "the coordinator behind the tampering relay"

# --- no ban to aim: wrong proofs from the workers' address cost only their
# own connections, and a worker there that proves the secret gets in ---
start_coordinator aimed
for i in 1 2 3 4 5; do
	expect_match "made-up proof $i from 127.0.0.1" '^nack ok=0 authentication failed$' \
	    "$("$PEER" "$url" badauth | tail -1)"
done
for i in $(seq 1 40); do "$PEER" "$url" badauth >/dev/null; done
expect_match "a sixth try is still answered (no ban)" '^nack ok=0 authentication failed$' \
    "$("$PEER" "$url" badauth | tail -1)"
rm -rf "$T/ran"
t0=$(date +%s%3N)
soak_rc rc worker --connect "$url" 2>"$T/aimed-w.err"
echo "a worker from the address of 46 failed proofs joined and ran its seeds in $(($(date +%s%3N) - t0)) ms"
wait_exit rc2 "$coord" 60 "the coordinator after the failed proofs and the worker"
expect_eq "the worker from that address ran the run (exit status)" 0 "$rc"
expect_eq "the coordinator's exit status (seeds 1, 4 fail)" 1 "$rc2"
expect_ge "turns the worker ran" 6 "$(find "$T/ran" -type f | wc -l)"
expect_eq "nothing refuses an address" 0 "$(grep -c 'refusing connections' "$T/aimed.err" || true)"
lines=$(grep -c 'authentication failed' "$T/aimed.err" || true)
[ "$lines" -le 4 ] || fail "$lines lines about 46 failed proofs: not rate-limited"
ok "$lines line(s) about 46 failed proofs (rate-limited)"

# --- control: the marker does tell when a turn ran ---
rm -rf "$T/ran"
start_peer fake3 tcp://127.0.0.1:0 fake-welcome "$T/auth.yaml"
SOAK_SECRET= soak_rc rc worker --connect "$peer_url" --insecure 2>"$T/w4.err"
expect_eq "an --insecure worker obeys the fake" 0 "$rc"
expect_eq "and runs its turn" 1 "$(find "$T/ran" -type f | wc -l)"
stop "$peer" "the last fake coordinator"
