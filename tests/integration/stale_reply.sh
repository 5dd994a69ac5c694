# The session's own messages cannot be used against it (common/auth.h: a
# reply carries the seq of the request it answers): a relay in the middle
# of a real worker's session answers its second lease request with the
# coordinator's sealed reply to its first -- a message of the same
# session, its MAC good, only its seq older.  The worker refuses it,
# naming the two requests, and runs none of that older lease's seeds a
# second time.  (Taken for the answer, the worker would run seeds 0 and 1
# again and never say so: the watchdog on the refusal names what it
# waited for.)  About 2 s.
. "$(dirname "$0")/lib.sh"

PEER=$SOAK_BUILD/tests/helpers/soak_peer
export SOAK_SECRET=stale-reply-secret-$$-0123456789abcdef
mkdir "$T/ran"
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# One file per seed and run of it.
mktemp "$SOAK_CONFIG_DIR/ran/$SOAK_SEED.XXXXXX" >/dev/null
SH
chmod +x "$T/turn.sh"
cat >"$T/stale.yaml" <<'YAML'
name: stale
seeds: 0..3
turns: 1
retries: 0
confirm: false
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
"$SOAK" coordinator "$T/stale.yaml" --listen tcp://127.0.0.1:0 --out "$T/run" \
    --bundle off >"$T/coord.out" 2>"$T/coord.err" &
coord=$!
cleanup_hooks+=("kill $coord 2>/dev/null; wait $coord 2>/dev/null")
url=$(wait_line "$T/coord.err" 'listening on tcp://' 30 "the coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
"$PEER" "$url" relay tcp://127.0.0.1:0 "$T/wire" stale >"$T/relay.out" 2>&1 &
relay=$!
cleanup_hooks+=("kill $relay 2>/dev/null; wait $relay 2>/dev/null")
rurl=$(wait_line "$T/relay.out" '^listening on ' 30 "the relay listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
"$SOAK" worker --connect "$rurl" -v >"$T/worker.out" 2>"$T/worker.err" &
worker=$!
cleanup_hooks+=("kill $worker 2>/dev/null; wait $worker 2>/dev/null")
wait_line "$T/relay.out" '^answered a lease request with the older lease' 60 \
    "the relay answering the worker's second lease request with its first lease" >/dev/null
refusal=$(wait_line "$T/worker.err" 'answers request [0-9]+, not [0-9]+' 30 \
    "the worker refusing the older lease as the answer to its newer request")
echo "the worker: $refusal"
expect_match "the worker names the request the reply was sealed for, and its own" \
    'the reply to .* answers request ([0-9]+), not ([0-9]+)' "$refusal"
[[ $refusal =~ answers\ request\ ([0-9]+),\ not\ ([0-9]+) ]]
old=${BASH_REMATCH[1]} new=${BASH_REMATCH[2]}
[ "$old" -lt "$new" ] || fail "the refused reply's request ($old) is not older than the worker's ($new)"
ok "the refused reply was sealed for an older request ($old < $new)"
# At the refusal the worker had run the first lease (seeds 0 and 1) once;
# taken for the answer, the older lease would have run them again.  The
# worker then dials again through the relay, whose upstream connection
# still holds the lease it never saw (2 and 3) until the coordinator
# gives it up: the test ends here, no seed run twice.  (SIGKILL: a worker
# SIGTERMed while its new handshake waits on the relay drains for longer
# than this test should take; that drain is not what is tested here.)
kill -KILL "$worker"
wait_exit wrc "$worker" 30 "the worker after SIGKILL"
for s in 0 1; do
	expect_eq "runs of seed $s" 1 "$(ls "$T/ran" | grep -c "^$s\." || true)"
done
for s in 2 3; do
	n=$(ls "$T/ran" | grep -c "^$s\." || true)
	[ "$n" -le 1 ] || fail "seed $s ran $n times"
done
ok "no seed ran twice"
