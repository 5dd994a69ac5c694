# An engine stops a worker the way Slurm's scancel, a deleted pod or a unit
# with KillMode=control-group do: SIGTERM to the worker and to every process
# it started, the turns included.  The seed whose turn died of that signal
# is not a crash of the system under test: it is infra/worker-lost and runs
# again on the other worker, where it passes; the run exits 0.
. "$(dirname "$0")/lib.sh"

SECRET=engine-secret-$$-0123456789abcdef
printf '%s' "$SECRET" >"$T/secret"
chmod 600 "$T/secret"
mkfifo "$T/pid.fifo"
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# Seed 1's first attempt tells the test its worker's pid and its own, then
# waits (a turn in the middle of its work) until a signal ends it.
if [ "$SOAK_SEED" = 1 ] && mkdir "$SOAK_CONFIG_DIR/once" 2>/dev/null; then
	echo "$PPID $$" >"$SOAK_CONFIG_DIR/pid.fifo"
	exec sleep 120
fi
exit 0
SH
chmod +x "$T/turn.sh"
cat >"$T/engine.yaml" <<'YAML'
name: engine
seeds: 0..5
turns: 1
confirm: false
turn:
  command: [./turn.sh]
  timeout: 150s
seed_timeout: 160s
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
"$SOAK" coordinator "$T/engine.yaml" --listen tcp://127.0.0.1:0 --out "$T/out" \
    --secret-file "$T/secret" --bundle off -v >"$T/c.out" 2>"$T/c.err" &
coord=$!
cleanup_hooks+=("kill -KILL $coord 2>/dev/null")
url=$(wait_line "$T/c.err" 'listening on tcp://' 30 "coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
for w in a b; do
	"$SOAK" worker --connect "$url" --secret-file "$T/secret" -v >"$T/$w.out" 2>"$T/$w.err" &
	eval "p$w=$!"
	cleanup_hooks+=("kill -KILL $! 2>/dev/null")
done
read -r victim turn < <(timeout 60 cat "$T/pid.fifo") || fail "watchdog: seed 1 never started within 60 s"
[ "$victim" = "$pa" ] || [ "$victim" = "$pb" ] || fail "pid $victim is not one of the workers"
name=$([ "$victim" = "$pa" ] && echo a || echo b)
# The engine's stop: the worker first, then (as it signals every process
# of the job) the turn.
kill -TERM "$victim"
wait_line "$T/$name.err" 'SIGTERM: draining' 30 "the worker saying it drains" >/dev/null
kill -TERM "$turn"
ok "SIGTERM to worker $victim, then to its turn $turn"
wait_exit rc "$victim" 60 "the stopped worker"
expect_eq "stopped worker exit status" 0 "$rc"
expect_match "it said why the seed is not a crash" \
    "seed 1: the worker was being stopped \(SIGTERM\) when 1 turn\(s\) died of a signal" \
    "$(cat "$T/$name.err")"
wait_exit rc "$coord" 120 "the coordinator"
expect_eq "run exit status (no false failure)" 0 "$rc"
check_report "$T/out" 0 5
expect_eq "seed 1: the stop's attempt, then a pass elsewhere" '["infra/worker-lost","pass/"]' \
    "$(jq -c '[.results[] | select(.seed==1) | .attempts[] | "\(.verdict)/\(.reason)"]' "$T/out/report.json")"
[ "$(jq '[.results[] | select(.seed==1) | .attempts[].worker] | .[0] != .[1]' "$T/out/report.json")" = true ] ||
    fail "seed 1 ran again on the worker that was stopped"
ok "seed 1 ran again on the other worker"
