# Services: started by each worker on SOAK_PORT (or, with listen: socket, on
# a socket soak hands over as fd 3, LISTEN_FDS), reachable by the turns and
# by each other at SOAK_SERVICE_<NAME>, restarted on the same port when they
# die.  A seed during which a service died is infra/service and is retried;
# the run still completes.
. "$(dirname "$0")/lib.sh"
UP=$SOAK_BUILD/tests/helpers/proxy_upstream
[ -x "$UP" ] || fail "missing $UP (make test builds it)"

cat >"$T/service.sh" <<SH
#!/bin/sh
echo \$\$ >"\$SOAK_WORKSPACE/pid"
exec $UP http "\$SOAK_PORT"
SH
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# Seed 4 kills the service once (its first attempt), then calls it.
svc=$SOAK_WORKSPACE/../../services/api
if [ "$SOAK_SEED" = 4 ] && mkdir "$SOAK_CONFIG_DIR/once" 2>/dev/null; then
	kill "$(cat "$svc/pid")"
	exit 0
fi
exec curl -sf -m 5 -o /dev/null "http://$SOAK_SERVICE_API/ping"
SH
chmod +x "$T/service.sh" "$T/turn.sh"
cat >"$T/svc.yaml" <<'YAML'
name: services
seeds: 0..9
turns: 2
services:
  - name: api
    command: [./service.sh]
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
guard:
  min_ok_turns: 100%
YAML
soak_rc rc run "$T/svc.yaml" --workers 1 --out "$T/out" >"$T/run.out" 2>"$T/run.err"
cat "$T/run.out"
R=$T/out/report.json
expect_eq "run exit status" 0 "$rc"
check_report "$T/out" 0 9
expect_eq "seed 4 history" '["infra/service","pass/"]' \
    "$(jq -c '[.results[] | select(.seed==4) | .attempts[] | "\(.verdict)/\(.reason)"]' "$R")"
expect_eq "every turn reached the service" 20 "$(jq '[.results[].ok_turns] | add' "$R")"
expect_match "the restart was logged" "service api died .*restarting" "$(cat "$T/run.err")"

# A service that never becomes ready: every seed is infra/service, exit 2.
sed -e 's|command: \[./service.sh\]|command: [sh, -c, "exit 0"]|' "$T/svc.yaml" >"$T/dead.yaml"
soak_rc rc run "$T/dead.yaml" --workers 1 --seeds 0..1 --out "$T/dead" >/dev/null 2>"$T/dead.err"
expect_eq "dead service exit status" 2 "$rc"
expect_eq "dead service verdicts" '["infra/service"]' \
    "$(jq -c '[.results[] | "\(.verdict)/\(.reason)"] | unique' "$T/dead/report.json")"
expect_match "dead service message" "service api exited before it listened" \
    "$(jq -r '.results[0].message' "$T/dead/report.json")"

# A listen: socket service that dies at once: its socket stays soak's, and
# readiness (the service taking a connection off it) says it never did.
sed -e 's|command: \[./service.sh\]|command: [sh, -c, "exit 0"]\n    listen: socket|' \
    "$T/svc.yaml" >"$T/dead_socket.yaml"
soak_rc rc run "$T/dead_socket.yaml" --workers 1 --seeds 0..0 --out "$T/dead_socket" \
    >/dev/null 2>"$T/dead_socket.err"
expect_eq "dead activated service exit status" 2 "$rc"
expect_match "dead activated service message" \
    "service api exited before it accepted on its socket on port [0-9]+" \
    "$(jq -r '.results[0].message' "$T/dead_socket/report.json")"

# Two services that call each other: a takes its socket from soak (LISTEN_FDS),
# b binds SOAK_PORT itself.  Every port is known before either starts, so a,
# started first, reaches b; a turn asks a (which asks b) and b (which asks a)
# at once.  Seed 3 kills both once: each comes back on the same port, where
# the other still finds it.
PAIR=$SOAK_BUILD/tests/helpers/svc_pair
[ -x "$PAIR" ] || fail "missing $PAIR (make test builds it)"
mkdir "$T/pair"
cat >"$T/pair/turn.sh" <<'SH'
#!/bin/sh
set -u
pa=${SOAK_SERVICE_A##*:} pb=${SOAK_SERVICE_B##*:}
[ -z "${LISTEN_FDS:-}${LISTEN_PID:-}${SOAK_PORT:-}" ] || { echo "a service's variables leaked into a turn" >&2; exit 1; }
if [ "$SOAK_SEED" = 3 ]; then
	[ "$SOAK_TURN" = 1 ] && exit 0
	if mkdir "$SOAK_CONFIG_DIR/once" 2>/dev/null; then
		for s in "$SOAK_SERVICE_A" "$SOAK_SERVICE_B"; do
			w=$(curl -sf -m 5 "http://$s/whoami") || exit 1
			set -- $w
			kill "$4"
			# Dead (a zombie for the worker to reap, or gone) before the
			# seed ends, so the worker sees it at the seed's end.
			timeout 10 sh -c "while [ -r /proc/$4/stat ] && ! grep -q '^[0-9]* ([^)]*) Z' /proc/$4/stat; do :; done" ||
			    { echo "watchdog: service pid $4 still alive 10 s after SIGTERM" >&2; exit 1; }
		done
		exit 0
	fi
fi
curl -sf -m 5 -o "$SOAK_WORKSPACE/a" "http://$SOAK_SERVICE_A/ask" & qa=$!
curl -sf -m 5 -o "$SOAK_WORKSPACE/b" "http://$SOAK_SERVICE_B/ask" & qb=$!
wait $qa || { echo "a did not answer" >&2; exit 1; }
wait $qb || { echo "b did not answer" >&2; exit 1; }
a=$(cat "$SOAK_WORKSPACE/a") b=$(cat "$SOAK_WORKSPACE/b")
echo "$a" | grep -Eq "^a socket $pa [0-9]+ 1 <- b port $pb [0-9]+ 0\$" ||
    { echo "a answered: $a" >&2; exit 1; }
echo "$b" | grep -Eq "^b port $pb [0-9]+ 0 <- a socket $pa [0-9]+ 1\$" ||
    { echo "b answered: $b" >&2; exit 1; }
socks=$(find /proc/$$/fd -lname 'socket:*' | wc -l)
echo "$SOAK_SEED $SOAK_TURN $pa $pb $socks|$a|$b" >>"$SOAK_CONFIG_DIR/calls.txt"
SH
chmod +x "$T/pair/turn.sh"
cat >"$T/pair/pair.yaml" <<YAML
name: pair
seeds: 0..5
turns: 2
services:
  - name: a
    command: [$PAIR, a, b]
    listen: socket
  - name: b
    command: [$PAIR, b, a]
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
guard:
  min_ok_turns: 100%
YAML
soak_rc rc run "$T/pair/pair.yaml" --workers 1 --out "$T/pair/out" >"$T/pair/run.out" 2>"$T/pair/run.err"
R=$T/pair/out/report.json
[ "$rc" = 0 ] || { cat "$T/pair/run.err"; jq -c '.results[] | [.seed, .verdict, .reason, .message]' "$R" || true; }
expect_eq "pair run exit status" 0 "$rc"
check_report "$T/pair/out" 0 5
expect_eq "pair seed 3 history" '["infra/service","pass/"]' \
    "$(jq -c '[.results[] | select(.seed==3) | .attempts[] | "\(.verdict)/\(.reason)"]' "$R")"
expect_match "a's restart was logged" "service a died .*restarting" "$(cat "$T/pair/run.err")"
expect_match "b's restart was logged" "service b died .*restarting" "$(cat "$T/pair/run.err")"
C=$T/pair/calls.txt
# Five seeds of two turns, and seed 3's second attempt (turn 0).
expect_eq "turns that got both answers right" 11 "$(wc -l <"$C")"
expect_eq "ports the turns saw (a b), one pair for the whole run" 1 \
    "$(cut -d' ' -f3,4 "$C" | sort -u | wc -l)"
pa=$(head -n1 "$C" | cut -d' ' -f3) pb=$(head -n1 "$C" | cut -d' ' -f4)
expect_eq "a's own port, as it says, before and after its restart" "$pa" \
    "$(cut -d'|' -f2 "$C" | cut -d' ' -f3 | sort -u)"
expect_eq "b's own port, as it says, before and after its restart" "$pb" \
    "$(cut -d'|' -f3 "$C" | cut -d' ' -f3 | sort -u)"
expect_eq "a's pids (restarted once)" 2 "$(cut -d'|' -f2 "$C" | cut -d' ' -f4 | sort -u | wc -l)"
expect_eq "b's pids (restarted once)" 2 "$(cut -d'|' -f3 "$C" | cut -d' ' -f4 | sort -u | wc -l)"
expect_eq "sockets a turn was started with" 0 "$(cut -d'|' -f1 "$C" | cut -d' ' -f5 | sort -u)"

# A listen: port service whose port another program took while it was down:
# the restart waits (its ready_timeout) for the port, then says who has it,
# rather than starting the service into a bind that must fail.
mkdir "$T/squat"
cat >"$T/squat/squatter.py" <<'PY'
import os, signal, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
open(sys.argv[2] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
print("bound", flush=True)
signal.pause()
PY
cat >"$T/squat/turn.sh" <<'SH'
#!/bin/sh
# Seed 1 kills the service and, once it is dead, binds its port in a
# program of its own session (so it outlives the turn's process group).
if [ "$SOAK_SEED" = 1 ]; then
	pid=$(cat "$SOAK_WORKSPACE/../../services/api/pid")
	kill "$pid"
	timeout 10 sh -c "while [ -r /proc/$pid/stat ] && ! grep -q '^[0-9]* ([^)]*) Z' /proc/$pid/stat; do :; done" ||
	    { echo "watchdog: service pid $pid still alive 10 s after SIGTERM" >&2; exit 1; }
	mkfifo "$SOAK_WORKSPACE/bound"
	setsid python3 "$SOAK_CONFIG_DIR/squatter.py" "${SOAK_SERVICE_API##*:}" \
	    "$SOAK_CONFIG_DIR/squatter.pid" >"$SOAK_WORKSPACE/bound" 2>&1 &
	read -r line <"$SOAK_WORKSPACE/bound"
	[ "$line" = bound ] || { echo "squatter: $line" >&2; exit 1; }
	exit 0
fi
exec curl -sf -m 5 -o /dev/null "http://$SOAK_SERVICE_API/ping"
SH
chmod +x "$T/squat/turn.sh"
cp "$T/service.sh" "$T/squat/service.sh"
cat >"$T/squat/squat.yaml" <<'YAML'
name: squat
seeds: 0..1
turns: 1
retries: 0
services:
  - name: api
    command: [./service.sh]
    ready_timeout: 500ms
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
cleanup_hooks+=('[ -f "$T/squat/squatter.pid" ] && kill "$(cat "$T/squat/squatter.pid")"')
soak_rc rc run "$T/squat/squat.yaml" --workers 1 --out "$T/squat/out" >/dev/null 2>"$T/squat/run.err"
[ -f "$T/squat/squatter.pid" ] || { cat "$T/squat/run.err"; fail "the squatter never bound the port"; }
expect_eq "squatted run exit status" 2 "$rc"
expect_eq "squatted verdicts" '["pass/","infra/service"]' \
    "$(jq -c '[.results[] | "\(.verdict)/\(.reason // "")"]' "$T/squat/out/report.json")"
expect_match "squatted port message" \
    "service api: its port 127.0.0.1:[0-9]+ is still in use" \
    "$(jq -r '.results[] | select(.seed==1) | .message' "$T/squat/out/report.json")"
