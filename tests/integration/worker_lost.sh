# A worker killed with SIGKILL in the middle of a seed loses no verdict and
# duplicates none: its seed is retried elsewhere, every seed is reported
# exactly once, and the lost attempt stays in the seed's history.
. "$(dirname "$0")/lib.sh"

mkfifo "$T/pid.fifo" "$T/never.fifo"
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# The first attempt of seed 5, turn 0, tells the test its worker's pid and
# then blocks on a fifo nobody writes, until its worker is killed.
if [ "$SOAK_SEED" = 5 ] && [ "$SOAK_TURN" = 0 ] && mkdir "$SOAK_CONFIG_DIR/once" 2>/dev/null; then
	echo "$PPID" >"$SOAK_CONFIG_DIR/pid.fifo"
	exec cat "$SOAK_CONFIG_DIR/never.fifo"
fi
exit 0
SH
chmod +x "$T/turn.sh"
cat >"$T/kill.yaml" <<'YAML'
name: worker-lost
seeds: 0..19
turns: 2
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML

"$SOAK" run "$T/kill.yaml" --workers 2 --out "$T/out" >"$T/run.out" 2>"$T/run.err" &
run_pid=$!
cleanup_hooks+=("kill $run_pid 2>/dev/null")
# Blocks until the turn writes; the watchdog names what it waited for.
worker=$(timeout 60 cat "$T/pid.fifo") || fail "watchdog: seed 5 never started within 60 s"
[ -n "$worker" ] || fail "no worker pid from the turn"
grep -q "soak" "/proc/$worker/cmdline" || fail "pid $worker is not a soak worker"
kill -KILL "$worker"
ok "killed worker process $worker in the middle of seed 5"
wait_exit rc "$run_pid" 120 "soak run after its worker was killed"
cat "$T/run.out"
expect_eq "run exit status" 0 "$rc"
check_report "$T/out" 0 19
expect_eq "seed 5 final verdict" pass "$(jq -r '.results[] | select(.seed==5) | .verdict' "$T/out/report.json")"
expect_eq "seed 5 history" '["infra/worker-lost","pass/"]' \
    "$(jq -c '[.results[] | select(.seed==5) | .attempts[] | "\(.verdict)/\(.reason)"]' "$T/out/report.json")"
[ "$(jq '[.results[] | select(.seed==5) | .attempts[].worker] | .[0] != .[1]' "$T/out/report.json")" = true ] ||
    fail "seed 5 was retried on the worker that was lost"
expect_eq "no other seed has two attempts" 0 \
    "$(jq '[.results[] | select(.seed != 5 and (.attempts|length) != 1)] | length' "$T/out/report.json")"
expect_match "the loss was logged" "seed 5: worker [0-9]+ lost" "$(cat "$T/run.err")"
