# tls+tcp:// across machines (common/tlsconf.h), on loopback with real
# processes and certificates made here with the openssl CLI (README's
# recipe): a CA, the coordinator's certificate (DNS:localhost, serverAuth),
# a worker's client certificate (clientAuth), and an unrelated CA.
#  - every file problem is an exit 64 naming the file, before anything
#    listens or dials;
#  - mutual TLS: workers with the right CA and certificate run the seeds;
#    the wrong CA, no client certificate, a client certificate of another
#    CA, or a name the certificate does not carry are each refused, saying
#    why, before anything runs (the turn leaves a marker);
#  - coordinators presenting another certificate (right CA but another
#    name, another CA, a worker's client certificate) are refused by the
#    worker before anything runs; an --insecure worker shows the marker
#    would have told.
. "$(dirname "$0")/lib.sh"

PEER=$SOAK_BUILD/tests/helpers/soak_peer
pki=$T/pki
mkdir -p "$pki"
unset SOAK_SECRET

new_ca ca "soak test CA"
new_ca ca2 "an unrelated CA"
issue coordinator ca 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n'
issue worker ca 'extendedKeyUsage=clientAuth\n'
issue elsewhere ca 'subjectAltName=DNS:elsewhere.example\nextendedKeyUsage=serverAuth\n'
issue impostor ca2 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n'
issue stranger ca2 'extendedKeyUsage=clientAuth\n'
[ -s "$pki/coordinator.pem" ] && [ -s "$pki/stranger.pem" ] || fail "openssl made no certificates"

cat >"$T/turn.sh" <<SH
#!/bin/sh
# At $T/ran: a worker runs the bundled copy of the config folder.
mkdir -p "$T/ran" && touch "$T/ran/\$SOAK_RUN-\$SOAK_SEED"
SH
chmod +x "$T/turn.sh"
cat >"$T/tls.yaml" <<'YAML'
name: fleet-tls
seeds: 0..5
turns: 1
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
nothing_ran() {	# what
	expect_eq "$1: turns that ran" 0 "$(find "$T/ran" -type f 2>/dev/null | wc -l)"
}
start_coordinator() {	# NAME ARGS...: sets $coord and $port
	local name=$1; shift
	"$SOAK" coordinator "$T/tls.yaml" --listen tls+tcp://127.0.0.1:0 --out "$T/$name" \
	    "$@" >"$T/$name.out" 2>"$T/$name.err" &
	coord=$!
	cleanup_hooks+=("kill $coord 2>/dev/null")
	port=$(wait_line "$T/$name.err" 'listening on tls\+tcp://' 30 "coordinator $name listening" |
	    grep -oE 'tls\+tcp://127\.0\.0\.1:[0-9]+' | grep -oE '[0-9]+$')
}
stop() {	# PID WHAT
	kill "$1" 2>/dev/null || true
	wait_exit stopped "$1" 30 "$2 after SIGTERM"
}
# refused EXIT WHAT REGEX ARGS...: soak ARGS exits EXIT, its stderr matching REGEX
refused() {
	local want=$1 what=$2 re=$3; shift 3
	soak_rc rc "$@" 2>"$T/refused.err"
	expect_eq "$what: exit status" "$want" "$rc"
	expect_match "$what: says why" "$re" "$(cat "$T/refused.err")"
}

# --- every file checked before listening or dialing ---
C="coordinator $T/tls.yaml --listen tls+tcp://127.0.0.1:0 --out $T/never"
refused 64 "a missing certificate" "--tls-cert: cannot open \"$pki/missing.pem\"" \
    $C --tls-cert "$pki/missing.pem" --tls-client-ca "$pki/ca.pem"
refused 64 "a client certificate for the coordinator" "not for a TLS server" \
    $C --tls-cert "$pki/worker.pem" --tls-client-ca "$pki/ca.pem"
refused 64 "a certificate without its key" "$pki/coordinator.crt: no private key" \
    $C --tls-cert "$pki/coordinator.crt" --tls-client-ca "$pki/ca.pem"
refused 64 "a CA file that is a key" "--tls-client-ca $pki/ca.key: no certificate" \
    $C --tls-cert "$pki/coordinator.pem" --tls-client-ca "$pki/ca.key"
refused 64 "TLS with no way to authenticate workers" "leaves workers unauthenticated: add --tls-client-ca" \
    $C --tls-cert "$pki/coordinator.pem"
[ ! -e "$T/never" ] || fail "a refused coordinator created its output directory"
refused 64 "a worker's missing CA file" "--tls-ca: cannot open \"$pki/nope.pem\"" \
    worker --connect tls+tcp://localhost:9 --tls-ca "$pki/nope.pem"
refused 64 "a worker that cannot verify the coordinator" "cannot authenticate the coordinator" \
    worker --connect tls+tcp://localhost:9
refused 64 "an IP address to check a certificate against" "cannot match an IP address.*--tls-server-name" \
    worker --connect tls+tcp://127.0.0.1:9 --tls-ca "$pki/ca.pem"

# --- mutual TLS ---
start_coordinator mtls --tls-cert "$pki/coordinator.pem" --tls-client-ca "$pki/ca.pem"
W="worker --connect tls+tcp://127.0.0.1:$port --tls-server-name localhost"
refused 1 "the wrong CA" "TLS handshake with 127.0.0.1 failed: its certificate does not verify against --tls-ca $pki/ca2.pem" \
    $W --tls-ca "$pki/ca2.pem" --tls-cert "$pki/worker.pem"
refused 1 "no client certificate" "TLS handshake with 127.0.0.1 failed: the coordinator requires a client certificate \(--tls-cert PEM\)" \
    $W --tls-ca "$pki/ca.pem"
refused 1 "a client certificate of another CA" "TLS handshake with 127.0.0.1 failed: the coordinator refused --tls-cert $pki/stranger.pem \(is it from a CA in its --tls-client-ca\?\)" \
    $W --tls-ca "$pki/ca.pem" --tls-cert "$pki/stranger.pem"
refused 1 "a name the certificate does not carry" "signed by a CA in --tls-ca .* but is not for \"elsewhere.example\"" \
    worker --connect tls+tcp://127.0.0.1:$port --tls-server-name elsewhere.example \
    --tls-ca "$pki/ca.pem" --tls-cert "$pki/worker.pem"
nothing_ran "after four refused handshakes"
# The name from the URL (tcp4: localhost, whatever /etc/hosts lists first),
# and an IP address with --tls-server-name.
mkdir -m 700 "$T/ws"
"$SOAK" worker --connect "tls+tcp4://localhost:$port" --tls-ca "$pki/ca.pem" \
    --tls-cert "$pki/worker.pem" --workspace "$T/ws" 2>"$T/w1.err" & w1=$!
$SOAK $W --tls-ca "$pki/ca.pem" --tls-cert "$pki/worker.pem" 2>"$T/w2.err" & w2=$!
cleanup_hooks+=("kill $w1 $w2 2>/dev/null")
wait_exit rc "$coord" 120 "the mutual-TLS coordinator"
wait_exit r1 "$w1" 30 "worker 1 after its coordinator finished"
wait_exit r2 "$w2" 30 "worker 2 after its coordinator finished"
expect_eq "coordinator exit status" 0 "$rc"
expect_eq "worker 1 exit status (name from the URL)" 0 "$r1"
expect_eq "worker 2 exit status (--tls-server-name)" 0 "$r2"
check_report "$T/mtls" 0 5
expect_eq "every seed passed" 6 "$(jq .totals.pass "$T/mtls/report.json")"
expect_eq "turns that ran" 6 "$(find "$T/ran" -type f | wc -l)"
# The bundle never carries the coordinator's credentials: not its
# --tls-cert (certificate and key), nor the copy of its key beside it
# (pki/coordinator.key), checked in the worker's bundle cache, where the
# rest of the folder (the CA's certificate) is.
cache=$(ls -d "$T"/ws/soak-bundles-*/bundle-* | head -n 1)
[ -f "$cache/pki/ca.pem" ] || fail "the worker's bundle cache lacks the folder's pki/ca.pem: $(ls -R "$cache" | head -20)"
for f in coordinator.pem coordinator.key; do
	[ ! -e "$cache/pki/$f" ] || fail "pki/$f travelled to the worker's bundle cache"
done
keyline=$(sed -n '/PRIVATE KEY-----/{n;p;q}' "$pki/coordinator.key")
[ ${#keyline} -ge 16 ] || fail "no key line read from $pki/coordinator.key"
if grep -rlF "$keyline" "$cache"; then fail "the coordinator's private key is in the worker's bundle cache"; fi
ok "neither the coordinator's certificate and key nor the copy of its key travelled"
expect_match "the coordinator said it left the key's copy out" \
    "leaving out $T/pki/coordinator.key: it holds the coordinator's TLS private key" "$(cat "$T/mtls.err")"

# --- coordinators presenting another certificate ---
rm -rf "$T/ran"
W="worker --connect tls+tcp4://localhost:PORT --tls-ca $pki/ca.pem --tls-cert $pki/worker.pem"
start_coordinator elsewhere --tls-cert "$pki/elsewhere.pem" --tls-client-ca "$pki/ca.pem"
refused 1 "a certificate of our CA for another name" "is signed by a CA in --tls-ca .* but is not for \"localhost\"" \
    ${W/PORT/$port}
stop "$coord" "the coordinator for elsewhere.example"
start_coordinator impostor --tls-cert "$pki/impostor.pem" --tls-client-ca "$pki/ca.pem"
refused 1 "a certificate of another CA" "does not verify against --tls-ca $pki/ca.pem" \
    ${W/PORT/$port}
stop "$coord" "the impostor coordinator"
"$PEER" --tls-cert "$pki/worker.pem" tls+tcp://127.0.0.1:0 fake-welcome "$T/tls.yaml" \
    >"$T/fake.out" 2>&1 &
peer=$!
cleanup_hooks+=("kill $peer 2>/dev/null")
port=$(wait_line "$T/fake.out" '^listening on ' 30 "the fake coordinator listening" | grep -oE '[0-9]+$')
refused 1 "a fake presenting a worker's client certificate" "TLS handshake with localhost failed: .* or has no TLS server certificate" \
    ${W/PORT/$port}
stop "$peer" "the fake coordinator"
grep -q '^got' "$T/fake.out" && fail "the fake coordinator heard from the worker: $(cat "$T/fake.out")"
nothing_ran "after three coordinators with other certificates"

# --- control: unverified (--insecure), the impostor is obeyed ---
"$PEER" --tls-cert "$pki/impostor.pem" tls+tcp://127.0.0.1:0 fake-welcome "$T/tls.yaml" \
    >"$T/fake2.out" 2>&1 &
peer=$!
cleanup_hooks+=("kill $peer 2>/dev/null")
port=$(wait_line "$T/fake2.out" '^listening on ' 30 "the second fake listening" | grep -oE '[0-9]+$')
soak_rc rc worker --connect "tls+tcp4://localhost:$port" --insecure 2>"$T/w3.err"
expect_eq "an --insecure worker obeys the impostor" 0 "$rc"
expect_match "and was warned" "warning: --insecure: the coordinator at" "$(cat "$T/w3.err")"
expect_eq "and ran its turn" 1 "$(find "$T/ran" -type f | wc -l)"
stop "$peer" "the second fake coordinator"
