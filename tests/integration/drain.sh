# A worker leaves cleanly, or is put aside, and no verdict suffers.
#  - SIGTERM to a worker mid-seed drains it: the seed finishes and is
#    reported (one attempt, no worker-lost), the unstarted seeds of its
#    lease run on the other worker, and it exits 0;
#  - a worker whose service never starts on its machine is quarantined
#    after 3 infra outcomes in a row: no more seeds, named in the summary
#    and in report.json, its seeds pass elsewhere;
#  - when the only worker is quarantined the run ends at once, exit 2,
#    saying why, the seeds not run listed as missing.
. "$(dirname "$0")/lib.sh"

SECRET=drain-secret-$$-0123456789abcdef
printf '%s' "$SECRET" >"$T/secret"
chmod 600 "$T/secret"
mkfifo "$T/pid.fifo"
gate_new
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# Seed 1's first attempt tells the test its worker's pid and waits at the
# gate; the others take a moment.
if [ "$SOAK_SEED" = 1 ] && mkdir "$SOAK_CONFIG_DIR/once" 2>/dev/null; then
	echo "$PPID" >"$SOAK_CONFIG_DIR/pid.fifo"
	timeout 120 dd if="$SOAK_CONFIG_DIR/gate" bs=1 count=1 status=none
fi
sleep 0.1
SH
chmod +x "$T/turn.sh"
cat >"$T/drain.yaml" <<'YAML'
name: drain
seeds: 0..11
turns: 1
confirm: false
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
# start_coordinator NAME CONFIG: sets $coord and $url.  The turns talk to
# the test through fifos in the config folder: no bundle, the folder itself.
start_coordinator() {
	"$SOAK" coordinator "$2" --listen tcp://127.0.0.1:0 --out "$T/$1" \
	    --secret-file "$T/secret" --bundle off -v >"$T/$1.out" 2>"$T/$1.err" &
	coord=$!
	cleanup_hooks+=("kill -KILL $coord 2>/dev/null")
	url=$(wait_line "$T/$1.err" 'listening on tcp://' 30 "coordinator $1 listening" |
	    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
}
start_worker() {	# NAME: sets $wpid
	"$SOAK" worker --connect "$url" --secret-file "$T/secret" -v \
	    >"$T/$1.out" 2>"$T/$1.err" &
	wpid=$!
	cleanup_hooks+=("kill -KILL $wpid 2>/dev/null")
}

# --- drain ---
start_coordinator drain "$T/drain.yaml"
start_worker a; pa=$wpid
start_worker b; pb=$wpid
victim=$(timeout 60 cat "$T/pid.fifo") || fail "watchdog: seed 1 never started within 60 s"
[ "$victim" = "$pa" ] || [ "$victim" = "$pb" ] || fail "pid $victim is not one of the workers"
kill -TERM "$victim"
wait_line "$T/$([ "$victim" = "$pa" ] && echo a || echo b).err" 'SIGTERM: draining' 30 \
    "the worker saying it drains" >/dev/null
gate_open
wait_exit rc "$victim" 60 "the drained worker"
expect_eq "drained worker exit status" 0 "$rc"
wait_exit rc "$coord" 120 "the coordinator after the drain"
expect_eq "coordinator exit status" 0 "$rc"
other=$([ "$victim" = "$pa" ] && echo "$pb" || echo "$pa")
wait_exit rc "$other" 60 "the other worker"
expect_eq "other worker exit status" 0 "$rc"
check_report "$T/drain" 0 11
expect_eq "seed 1: one attempt, a pass" '["pass/"]' \
    "$(jq -c '[.results[] | select(.seed==1) | .attempts[] | "\(.verdict)/\(.reason)"]' "$T/drain/report.json")"
expect_eq "seeds with more than one attempt" 0 \
    "$(jq '[.results[] | select((.attempts|length) != 1)] | length' "$T/drain/report.json")"
expect_match "the coordinator heard it drain" "is draining: its unstarted seeds go back" "$(cat "$T/drain.err")"
vid=$(jq '.results[] | select(.seed==1) | .worker' "$T/drain/report.json")
expect_eq "the drained worker ran no seed after seed 1" 0 \
    "$(jq "[.results[] | select(.worker == $vid and .seed > 1)] | length" "$T/drain/report.json")"

# --- quarantine ---
cat >"$T/service.sh" <<'SH'
#!/bin/sh
# Never starts on the worker whose id is in bad_id: that machine is broken.
[ "$SOAK_WORKER" = "$(cat "$SOAK_CONFIG_DIR/bad_id")" ] && exit 1
exec python3 -c 'import os, socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(os.environ["SOAK_PORT"]))); s.listen(); time.sleep(1e6)'
SH
chmod +x "$T/service.sh"
cat >"$T/quarantine.yaml" <<'YAML'
name: quarantine
seeds: 0..11
turns: 1
confirm: false
turn:
  command: [sleep, "0.05"]
services:
  - name: svc
    command: [./service.sh]
    ready: tcp
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
# The healthy worker joins first (worker 1), the broken one second.
echo 2 >"$T/bad_id"
start_coordinator q "$T/quarantine.yaml"
start_worker good; good=$wpid
wait_line "$T/q.err" 'worker 1 is ' 30 "the healthy worker's hello" >/dev/null
start_worker bad; bad=$wpid
wait_exit rc "$coord" 120 "the coordinator with a broken worker"
expect_eq "coordinator exit status" 0 "$rc"
wait_exit rc "$bad" 60 "the quarantined worker"
expect_eq "quarantined worker exit status" 0 "$rc"
wait_exit rc "$good" 60 "the healthy worker"
check_report "$T/q" 0 11
expect_eq "every seed passes" 12 "$(jq '[.results[] | select(.verdict=="pass")] | length' "$T/q/report.json")"
expect_match "report.json names the quarantined worker" '^2 3 infra outcomes in a row, the last service$' \
    "$(jq -r '.workers[] | select(.quarantined) | "\(.id) \(.quarantined)"' "$T/q/report.json")"
expect_match "so does the summary" "worker .* quarantined: 3 infra outcomes in a row" "$(cat "$T/q.out")"
expect_match "the worker was told" "done with this worker: quarantined" "$(cat "$T/bad.err")"
expect_eq "seeds the quarantined worker ran to a verdict" 0 \
    "$(jq '[.results[] | select(.worker == 2)] | length' "$T/q/report.json")"

# Alone and quarantined: the run ends at once.
echo 1 >"$T/bad_id"
start_coordinator alone "$T/quarantine.yaml"
start_worker lone
wait_exit rc "$coord" 120 "the coordinator whose only worker is quarantined"
expect_eq "coordinator exit status" 2 "$rc"
expect_match "it says why" "every worker is quarantined" "$(cat "$T/alone.err")"
expect_eq "report.json halted" "every worker is quarantined (see workers in report.json)" \
    "$(jq -r .halted "$T/alone/report.json")"
expect_ge "seeds without a verdict" 1 "$(jq .totals.missing "$T/alone/report.json")"
wait_exit rc "$wpid" 60 "the lone worker"
