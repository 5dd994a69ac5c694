# Ctrl-C ends a run cleanly: a report that says it is incomplete, exit 2, and
# no postgres left.  A coordinator killed outright (SIGKILL) leaves no
# postgres, no workers and no turns behind either.
. "$(dirname "$0")/lib.sh"

mkfifo "$T/started.fifo" "$T/never.fifo"
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# Seed 3's turn says it started, then blocks until soak takes it down.
if [ "$SOAK_SEED" = 3 ]; then
	echo "$$" >"$SOAK_CONFIG_DIR/started.fifo"
	exec cat "$SOAK_CONFIG_DIR/never.fifo"
fi
exit 0
SH
chmod +x "$T/turn.sh"
cat >"$T/int.yaml" <<'YAML'
name: interrupted
seeds: 0..9
turns: 1
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML


for sig in INT KILL; do
	"$SOAK" run "$T/int.yaml" --workers 1 --out "$T/out-$sig" >"$T/$sig.out" 2>"$T/$sig.err" &
	run=$!
	cleanup_hooks+=("kill -9 $run 2>/dev/null")
	turn=$(timeout 60 cat "$T/started.fifo") || fail "watchdog: seed 3 never started within 60 s"
	# The cluster's supervisor is a fork of the run, so it has its command
	# line; the postmaster is its child, and -D names the cluster's folder.
	super=$(pgrep -f "run $T/int.yaml" | grep -vx "$run" | head -n 1)
	[ -n "$super" ] || fail "no supervisor process for the embedded cluster"
	postmaster=$(pgrep -P "$super" -x postgres | head -n 1)
	[ -n "$postmaster" ] || fail "no postmaster under supervisor $super"
	new=$(dirname "$(tr '\0' '\n' <"/proc/$postmaster/cmdline" | grep -A1 -x -- -D | tail -n 1)")
	[ -d "$new" ] || fail "cluster folder $new not found"
	ok "run $run is in seed 3 (turn $turn, postmaster $postmaster, supervisor $super)"
	workers=$(pgrep -P "$run" -f "worker --connect")
	[ -n "$workers" ] || fail "no worker process under run $run"
	kill -"$sig" "$run"
	wait_exit rc "$run" 60 "soak run after SIG$sig"
	# Cleanup is asynchronous only after SIGKILL: wait for the processes to go.
	timeout 30 tail --pid="$postmaster" -f /dev/null ||
	    fail "watchdog: postmaster $postmaster still running 30 s after SIG$sig"
	timeout 30 tail --pid="$turn" -f /dev/null ||
	    fail "watchdog: turn $turn still running 30 s after SIG$sig"
	timeout 30 tail --pid="$super" -f /dev/null ||
	    fail "watchdog: supervisor $super still running 30 s after SIG$sig"
	for w in $workers; do
		timeout 30 tail --pid="$w" -f /dev/null ||
		    fail "watchdog: worker $w outlived its coordinator by 30 s after SIG$sig"
	done
	ok "postmaster, supervisor, workers and turn gone after SIG$sig"
	[ ! -e "$new" ] || fail "$new still exists after SIG$sig"
	ok "cluster directory removed after SIG$sig"
	if [ "$sig" = INT ]; then
		expect_eq "exit status after Ctrl-C" 2 "$rc"
		jq -e '.interrupted == true and .complete == false and .totals.missing > 0' \
		    "$T/out-INT/report.json" >/dev/null || fail "report does not say the run was interrupted"
		expect_eq "seeds before the interrupt passed" '[0,1,2]' \
		    "$(jq -c '[.results[] | select(.verdict=="pass") | .seed]' "$T/out-INT/report.json")"
		xmllint --noout "$T/out-INT/junit.xml" || fail "junit.xml malformed after Ctrl-C"
		expect_eq "junit shows missing verdicts as errors" 7 \
		    "$(xmllint --xpath 'count(//testcase/error)' "$T/out-INT/junit.xml")"
	fi
	rm -rf "$T/once"
done
