# Workers started by an engine (a Slurm step, a pod, a unit) rather than by
# hand:
#  - `soak worker` with no --connect dials SOAK_COORDINATOR; --connect wins
#    when both are given;
#  - a worker that arrives after the run finished (a late pod, a slow node)
#    is told so at its HELLO, after the coordinator proved itself, and
#    exits 0 with one line (one for all its --slots), without opening a
#    database or joining the run;
#  - a worker whose coordinator died waits no longer than --reconnect, then
#    exits 1 saying it gave up; so does one that never finds a coordinator.
. "$(dirname "$0")/lib.sh"
PEER=$SOAK_BUILD/tests/helpers/soak_peer

SECRET=late-secret-$$-0123456789abcdef
printf '%s' "$SECRET" >"$T/secret"
chmod 600 "$T/secret"
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
exit 0
SH
chmod +x "$T/turn.sh"
cat >"$T/late.yaml" <<'YAML'
name: late
seeds: 0..3
turns: 1
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML

# --- a run that finishes while a worker is still connected, so the
# coordinator is still there (draining) when the late worker comes ---
"$SOAK" coordinator "$T/late.yaml" --listen tcp://127.0.0.1:0 --out "$T/out" \
    --secret-file "$T/secret" -v >"$T/c.out" 2>"$T/c.err" &
coord=$!
cleanup_hooks+=("kill -KILL $coord 2>/dev/null")
url=$(wait_line "$T/c.err" 'listening on tcp://' 30 "coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')

# Worker 1 joins and asks for nothing until its stdin ends.
mkfifo "$T/hold"
exec {HOLD_FD}<>"$T/hold"
SOAK_SECRET=$SECRET "$PEER" "$url" hold <"$T/hold" >"$T/hold.out" 2>&1 {HOLD_FD}>&- &
holder=$!
cleanup_hooks+=("kill -KILL $holder 2>/dev/null")
wait_line "$T/hold.out" '^welcome worker=1$' 30 "the holding peer's welcome" >/dev/null
ok "a peer holds worker 1's connection"

# Worker 2 finds its coordinator in the environment alone.
SOAK_COORDINATOR=$url "$SOAK" worker --secret-file "$T/secret" --reconnect 60s -v \
    >"$T/w2.out" 2>"$T/w2.err" &
w2=$!
cleanup_hooks+=("kill -KILL $w2 2>/dev/null")
wait_exit rc "$w2" 120 "the worker started with SOAK_COORDINATOR"
expect_eq "SOAK_COORDINATOR worker exit status" 0 "$rc"
expect_match "it dialed SOAK_COORDINATOR" "connected to $url as worker 2 " "$(cat "$T/w2.err")"
expect_match "it ran the whole run" "done: 4 seeds, 0 refused" "$(cat "$T/w2.err")"
kill -0 "$coord" || fail "the coordinator did not wait for its connected worker 1"

# The late worker: --connect wins over a SOAK_COORDINATOR where nobody listens.
set +e
SOAK_COORDINATOR=tcp://127.0.0.1:1 timeout 60 "$SOAK" worker --connect "$url" \
    --secret-file "$T/secret" --reconnect 60s >"$T/late.out" 2>"$T/late.err"
rc=$?
set -e
cat "$T/late.err"
expect_eq "late worker exit status" 0 "$rc"
expect_eq "late worker: one line" 1 "$(wc -l <"$T/late.err")"
expect_match "late worker says the run is over" \
    "^worker: the run at $url is over \(run finished\): nothing to do, exiting 0$" \
    "$(cat "$T/late.err")"

# With --slots, every slot hears it, and one line says it for all.
set +e
timeout 60 "$SOAK" worker --connect "$url" --secret-file "$T/secret" --slots 3 \
    >"$T/late3.out" 2>"$T/late3.err"
rc=$?
set -e
cat "$T/late3.err"
expect_eq "late worker with 3 slots: exit status" 0 "$rc"
expect_eq "late worker with 3 slots: one line" \
    "worker: the run at $url is over (run finished): nothing to do, exiting 0" "$(cat "$T/late3.err")"

exec {HOLD_FD}>&-
wait_exit rc "$coord" 60 "the coordinator once its last worker left"
expect_eq "coordinator exit status" 0 "$rc"
check_report "$T/out" 0 3
expect_eq "workers in report.json (the holder and worker 2, not the late one)" 2 \
    "$(jq '.workers | length' "$T/out/report.json")"
expect_eq "hellos in the journal" 2 "$(grep -c '"t":"worker"' "$T/out/journal.jsonl")"
wait_exit rc "$holder" 30 "the holding peer"

# --- --linger: the run's workers are gone and the report written, yet a
# worker that dials late still hears the run is over (a Job's late pod) ---
"$SOAK" coordinator "$T/late.yaml" --listen tcp://127.0.0.1:0 --out "$T/out2" \
    --secret-file "$T/secret" --linger 10m >"$T/l.out" 2>"$T/l.err" &
coord=$!
cleanup_hooks+=("kill -KILL $coord 2>/dev/null")
url=$(wait_line "$T/l.err" 'listening on tcp://' 30 "lingering coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
"$SOAK" worker --connect "$url" --secret-file "$T/secret" >"$T/lw.out" 2>"$T/lw.err" &
lw=$!
wait_exit rc "$lw" 120 "the lingering coordinator's one worker"
expect_eq "its worker's exit status" 0 "$rc"
wait_line "$T/l.err" 'telling late workers so' 60 "the coordinator lingering" >/dev/null
check_report "$T/out2" 0 3
set +e
timeout 60 "$SOAK" worker --connect "$url" --secret-file "$T/secret" \
    --reconnect 60s >"$T/late4.out" 2>"$T/late4.err"
rc=$?
set -e
expect_eq "a worker after the run's end, under --linger: exit status" 0 "$rc"
expect_eq "and one line" \
    "worker: the run at $url is over (run finished): nothing to do, exiting 0" "$(cat "$T/late4.err")"
kill -TERM "$coord"
wait_exit rc "$coord" 30 "the lingering coordinator after SIGTERM"
expect_eq "the run's status, kept through the linger" 0 "$rc"
expect_eq "the late worker is not in the run" 1 \
    "$(grep -c '"t":"worker"' "$T/out2/journal.jsonl")"

# --- a coordinator that dies mid-seed: its worker gives up after --reconnect ---
gate_new
cat >"$T/held.sh" <<SH
#!/bin/sh
timeout 120 dd if="$T/gate" bs=1 count=1 status=none
SH
chmod +x "$T/held.sh"
sed 's|command: \[./turn.sh\]|command: [./held.sh]|' "$T/late.yaml" >"$T/held.yaml"
"$SOAK" coordinator "$T/held.yaml" --listen tcp://127.0.0.1:0 --out "$T/dead" \
    --secret-file "$T/secret" -v >"$T/d.out" 2>"$T/d.err" &
coord=$!
cleanup_hooks+=("kill -KILL $coord 2>/dev/null")
url=$(wait_line "$T/d.err" 'listening on tcp://' 30 "coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
SOAK_COORDINATOR=$url "$SOAK" worker --secret-file "$T/secret" --reconnect 2s -v \
    >"$T/w3.out" 2>"$T/w3.err" &
w3=$!
cleanup_hooks+=("kill -KILL $w3 2>/dev/null")
wait_line "$T/d.err" 'lease 1 to worker 1' 60 "the first lease" >/dev/null
kill -KILL "$coord"
wait "$coord" 2>/dev/null || true
ok "coordinator killed while its worker runs a seed"
gate_open
wait_exit rc "$w3" 120 "the worker whose coordinator died (--reconnect 2s)"
expect_eq "orphaned worker exit status" 1 "$rc"
expect_match "it said it lost the coordinator" \
    "lost the coordinator \(.*\); dialing $url again for up to 2 s" "$(cat "$T/w3.err")"
expect_match "it said it gave up" "gave up on the coordinator at $url" "$(cat "$T/w3.err")"

# --- nobody ever there ---
set +e
timeout 60 "$SOAK" worker --connect "$url" --secret-file "$T/secret" --reconnect 1s \
    >"$T/w4.out" 2>"$T/w4.err"
rc=$?
set -e
expect_eq "worker with no coordinator: exit status" 1 "$rc"
expect_match "it waited, and said for how long" \
    "waiting for the coordinator at $url \(Connection refused\), for up to 1 s" "$(cat "$T/w4.err")"
expect_match "it gave up at the end of --reconnect" \
    "cannot dial coordinator at $url: Connection refused until the end of --reconnect: gave up" \
    "$(cat "$T/w4.err")"

# --- a name that does not resolve (yet): a Service's first seconds in
# Kubernetes look like this; waited for like a refusal, not fatal ---
set +e
timeout 60 "$SOAK" worker --connect tcp://soak-coordinator.invalid:7070 \
    --secret-file "$T/secret" --reconnect 1s >"$T/w5.out" 2>"$T/w5.err"
rc=$?
set -e
expect_eq "worker with an unresolvable coordinator: exit status" 1 "$rc"
expect_match "it waited for the name" \
    "waiting for the coordinator at tcp://soak-coordinator.invalid:7070 \(Address invalid\), for up to 1 s" \
    "$(cat "$T/w5.err")"
expect_match "and gave up at the end of --reconnect" \
    "Address invalid until the end of --reconnect: gave up" "$(cat "$T/w5.err")"
