# What a connection may cost before it has proved anything, and what a
# peer's words may do to a log (coordinator/peer.h, common/log.h), on
# loopback with real processes:
#  - 70 connections that say nothing and 8 that stall in the middle of a
#    message, all from one address: 64 are admitted and closed when their
#    1 s to send a whole message is up, the rest closed as they arrive
#    (their address holds every place, and none can take another's:
#    observed closed by the peer; the coordinator's rate-limited lines add
#    up to 14 and 64); a client is answered afterwards (nothing of the
#    count leaked);
#  - an authenticated peer with 10 lease requests in flight (the only seed
#    is held by a real worker, so the coordinator holds them) is dropped,
#    none answered, and the run completes;
#  - a HELLO name and a NACK text with a terminal escape and a fake log
#    line reach the coordinator's and the worker's stderr escaped: no ESC
#    byte, no line of their own;
#  - a database.url with a password is refused over tcp:// (exit 64, with
#    the fix, without the password), --insecure or not; ipc://, tls+tcp://
#    and a password only in the coordinator's own SOAK_DATABASE_URL start.
. "$(dirname "$0")/lib.sh"

PEER=$SOAK_BUILD/tests/helpers/soak_peer
export SOAK_SECRET=fleet-limits-secret-$$-0123456789abcdef
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# Seed 0 holds its lease until the test says so (bounded: 120 s).
echo "started $SOAK_SEED" >>"$SOAK_CONFIG_DIR/turn.log"
timeout 120 dd if="$SOAK_CONFIG_DIR/gate" bs=1 count=1 status=none
exit 0
SH
chmod +x "$T/turn.sh"
gate_new
cat >"$T/limits.yaml" <<'YAML'
name: fleet-limits
seeds: 0..0
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
start_coordinator() {	# NAME CONFIG ARGS...: sets $coord and $url
	local name=$1 cfg=$2; shift 2
	# --bundle off: workers share this folder, and the gate is a fifo here.
	"$SOAK" coordinator "$cfg" --listen tcp://127.0.0.1:0 --out "$T/$name" \
	    --bundle off "$@" >"$T/$name.out" 2>"$T/$name.err" &
	coord=$!
	cleanup_hooks+=("kill $coord 2>/dev/null")
	url=$(wait_line "$T/$name.err" 'listening on tcp://' 30 "coordinator $name listening" |
	    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
}
stop() {	# PID WHAT
	kill "$1" 2>/dev/null || true
	wait_exit stopped "$1" 30 "$2 after SIGTERM"
}
# noted FILE ONE MORE: how many times the coordinator noted something: its
# lines matching ONE, plus the counts of its lines "... N more ..." matching MORE.
noted() {
	local one more
	one=$(grep -cE -- "$2" "$1" || true)
	more=$(grep -E -- "$3" "$1" | grep -oE '[0-9]+ more' | grep -oE '^[0-9]+' |
	    awk '{ n += $1 } END { print n + 0 }')
	echo $((one + more))
}

# --- unauthenticated connections: the cap and the time to authenticate ---
start_coordinator quiet "$T/limits.yaml"
"$PEER" "$url" silent 70 >"$T/silent.out" 2>&1 & silent=$!
"$PEER" "$url" stall 8 1000000 65536 >"$T/stall.out" 2>&1 & stall=$!
cleanup_hooks+=("kill $silent $stall 2>/dev/null")
wait_exit rc "$silent" 60 "70 silent connections to be closed"
wait_exit rc2 "$stall" 60 "8 stalled messages' connections to be closed"
expect_eq "silent connections the coordinator closed" 70 "$(grep -c '^closed ' "$T/silent.out")"
expect_eq "stalled connections the coordinator closed" 8 "$(grep -c '^closed ' "$T/stall.out")"
echo "silent connections closed after $(grep -oE '[0-9]+ ms' "$T/silent.out" |
    grep -oE '^[0-9]+' | sort -n | sed -n '1p;$p' | paste -sd' ' | sed 's/ / to /') ms"
expect_match "a client is answered after them (none of the count leaked)" \
    '^nack ok=0 not authenticated: say hello first$' "$("$PEER" "$url" stranger)"
stop "$coord" "the coordinator of the quiet connections"
cat "$T/quiet.err"
expect_eq "connections refused at the cap (70 + 8 - 64)" 14 "$(noted "$T/quiet.err" \
    'closed the connection from .*: all 64 places for connections not authenticated yet' \
    'closed [0-9]+ more connections: all 64 places')"
expect_eq "connections closed after 1 s without a whole message" 64 "$(noted "$T/quiet.err" \
    'closed the connection from .*: no whole message from it within 1000 ms' \
    'more connections with no whole message within 1000 ms')"
expect_eq "lines the coordinator wrote about them (rate-limited)" 4 \
    "$(grep -cE 'all 64 places|whole message' "$T/quiet.err")"

# --- requests in flight ---
rm -f "$T/turn.log"
start_coordinator inflight "$T/limits.yaml"
"$SOAK" worker --connect "$url" 2>"$T/w1.err" & w1=$!
cleanup_hooks+=("kill $w1 2>/dev/null")
wait_line "$T/turn.log" '^started 0' 120 "the worker's turn of seed 0 to start" >/dev/null
"$PEER" "$url" inflight 10 >"$T/peer-inflight.out" 2>&1 & fl=$!
cleanup_hooks+=("kill $fl 2>/dev/null")
wait_exit rc "$fl" 60 "the peer with 10 requests in flight"
expect_eq "the peer authenticated" "welcome worker=2" "$(head -1 "$T/peer-inflight.out")"
expect_eq "with 10 requests in flight it is dropped, none answered" "dropped, 0 of 10 answered" \
    "$(tail -1 "$T/peer-inflight.out")"
wait_line "$T/inflight.err" 'one request too many in flight: 4 unanswered, at most 4 once authenticated' \
    10 "the coordinator's line about the dropped peer" >/dev/null
gate_open
wait_exit rc "$coord" 120 "the coordinator after the dropped peer"
wait_exit w1_rc "$w1" 30 "the worker"
expect_eq "the run completes (exit status)" 0 "$rc"
expect_eq "the worker's exit status" 0 "$w1_rc"
check_report "$T/inflight" 0 0
expect_eq "seed 0, the real worker's" "pass 1" "$(jq -r '.results[0] | "\(.verdict) \(.worker)"' "$T/inflight/report.json")"

# --- a peer's words in a log ---
EVIL=$'evil\x1b[31m\nsoak: fake line'
ESCAPED='evil\x1b[31m\nsoak: fake line'
start_coordinator words "$T/limits.yaml"
SOAK_PEER_NAME=$EVIL "$PEER" "$url" badauth >/dev/null
stop "$coord" "the coordinator given an evil name"
grep -qF "wrong proof from \"$ESCAPED\"" "$T/words.err" ||
    fail "the evil name is not in the coordinator's log, escaped: $(cat -A "$T/words.err")"
ok "the coordinator logged the name escaped: $ESCAPED"
expect_eq "ESC bytes in the coordinator's stderr" 0 "$(grep -c $'\x1b' "$T/words.err" || true)"
expect_eq "fake log lines in the coordinator's stderr" 0 "$(grep -c '^soak: fake line' "$T/words.err" || true)"
SOAK_PEER_TEXT=$EVIL "$PEER" tcp://127.0.0.1:0 fake-nack >"$T/nack.out" 2>&1 & peer=$!
cleanup_hooks+=("kill $peer 2>/dev/null")
purl=$(wait_line "$T/nack.out" '^listening on ' 30 "the fake coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
soak_rc rc worker --connect "$purl" 2>"$T/wnack.err"
stop "$peer" "the fake coordinator"
expect_eq "the refused worker's exit status" 1 "$rc"
grep -qF "refused this worker: $ESCAPED" "$T/wnack.err" ||
    fail "the NACK text is not in the worker's log, escaped: $(cat -A "$T/wnack.err")"
ok "the worker logged the coordinator's text escaped"
expect_eq "ESC bytes in the worker's stderr" 0 "$(grep -c $'\x1b' "$T/wnack.err" || true)"
expect_eq "fake log lines in the worker's stderr" 0 "$(grep -c '^soak: fake line' "$T/wnack.err" || true)"

# --- a database password over plain tcp:// ---
unset SOAK_SECRET
printf '%s\n' "fleet-limits-secret-file-0123456789abcdef" >"$T/secret"
chmod 600 "$T/secret"
sed 's|^turns: 1$|turns: 1\ndatabase:\n  url: postgresql://soak:hunter2-pw@db.invalid/soak|' \
    "$T/limits.yaml" >"$T/pw.yaml"
grep -q 'hunter2-pw' "$T/pw.yaml" || fail "the config with a password was not made"
for extra in "" --insecure; do
	soak_rc rc coordinator "$T/pw.yaml" --listen tcp://127.0.0.1:0 --secret-file "$T/secret" \
	    --out "$T/pw" $extra 2>"$T/pw.err"
	expect_eq "a password over tcp:// ${extra:-(secret)}: exit status" 64 "$rc"
	expect_match "it says why and the fix" \
	    'database.url holds a password.*Listen on tls\+tcp:// \(--tls-cert\), or take the password out of database.url and give each worker its own SOAK_DATABASE_URL' \
	    "$(cat "$T/pw.err")"
	expect_eq "the refusal shows no password" 0 "$(grep -c hunter2 "$T/pw.err" || true)"
done
[ ! -e "$T/pw" ] || fail "a refused coordinator created its output directory"
# Accepted: ipc:// (this machine), tls+tcp://, and a password the config
# does not hold (the coordinator's own SOAK_DATABASE_URL never leaves it).
"$SOAK" coordinator "$T/pw.yaml" --listen "ipc://$T/coord.ipc" --out "$T/pw-ipc" \
    2>"$T/pw-ipc.err" & coord=$!
cleanup_hooks+=("kill $coord 2>/dev/null")
wait_line "$T/pw-ipc.err" 'listening on ipc://' 30 "the ipc:// coordinator with a password" >/dev/null
stop "$coord" "the ipc:// coordinator"
ok "a password over ipc:// is accepted"
pki=$T/pki
mkdir -p "$pki"
new_ca ca "soak test CA"
issue coordinator ca 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n'
"$SOAK" coordinator "$T/pw.yaml" --listen tls+tcp://127.0.0.1:0 --out "$T/pw-tls" \
    --tls-cert "$pki/coordinator.pem" --tls-client-ca "$pki/ca.pem" 2>"$T/pw-tls.err" & coord=$!
cleanup_hooks+=("kill $coord 2>/dev/null")
wait_line "$T/pw-tls.err" 'listening on tls\+tcp://' 30 "the tls+tcp:// coordinator with a password" >/dev/null
stop "$coord" "the tls+tcp:// coordinator"
ok "a password over tls+tcp:// is accepted"
SOAK_DATABASE_URL=postgresql://soak:hunter2-pw@db.invalid/soak \
    "$SOAK" coordinator "$T/limits.yaml" --listen tcp://127.0.0.1:0 --secret-file "$T/secret" \
    --out "$T/pw-env" 2>"$T/pw-env.err" & coord=$!
cleanup_hooks+=("kill $coord 2>/dev/null")
wait_line "$T/pw-env.err" 'listening on tcp://' 30 "the coordinator with a password only in its environment" >/dev/null
stop "$coord" "the coordinator with SOAK_DATABASE_URL"
ok "a password only in the coordinator's SOAK_DATABASE_URL is accepted on tcp://"
