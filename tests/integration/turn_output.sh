# What a failing seed keeps of its turns: both streams'
# tails in result.json, both whole streams in the workspace (stdout.log
# beside stderr.log), and each turn's own start and end, in milliseconds
# since the seed started, in result.json and in the replay's timeline --
# not the round's end for every turn.  Turn 2 ends after turn 0 by order,
# not by luck: it waits, on a fifo, for turn 0 to have exited, then works
# 300 ms more, so their ends must differ by that much.
. "$(dirname "$0")/lib.sh"

mkfifo "$T/bar-r0" "$T/bar-r1"
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
echo "to stdout from round $SOAK_ROUND turn $SOAK_TURN"
echo "to stderr from round $SOAK_ROUND turn $SOAK_TURN" >&2
case $SOAK_TURN in
0)	# holds the fifo's write end until it exits
	exec 3>"$SOAK_CONFIG_DIR/bar-r$SOAK_ROUND" ;;
2)	# end of file once turn 0 has exited (watchdog 60 s), then its work
	timeout 60 cat "$SOAK_CONFIG_DIR/bar-r$SOAK_ROUND" >/dev/null
	sleep 0.3 ;;
esac
exit $((SOAK_TURN % 2))
SH
chmod +x "$T/turn.sh"
cat >"$T/out.yaml" <<'YAML'
name: turn-output
seeds: 0..0
turns: 3
rounds: 2
confirm: false
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
guard:
  min_ok_turns: 6	# turn 1 exits 1 in each round: fail/guard after both
YAML

soak_rc rc run "$T/out.yaml" --workers 1 --out "$T/out" >"$T/run.out" 2>"$T/run.err"
cat "$T/run.out"
expect_eq "run exit status" 1 "$rc"
F=$T/out/failures/0
R=$F/result.json
[ -f "$R" ] || fail "no result.json for the failing seed"
expect_eq "turns in result.json" 6 "$(jq '.turns|length' "$R")"
for r in 0 1; do
	for t in 0 1 2; do
		sel=".turns[] | select(.round == $r and .turn == $t)"
		expect_eq "r$r-t$t stdout tail" "to stdout from round $r turn $t" \
		    "$(jq -j "$sel | .stdout_tail" "$R" | tr -d '\n')"
		expect_eq "r$r-t$t stderr tail" "to stderr from round $r turn $t" \
		    "$(jq -j "$sel | .stderr_tail" "$R" | tr -d '\n')"
		expect_eq "r$r-t$t/stdout.log" "to stdout from round $r turn $t" \
		    "$(cat "$F/workspace/r$r-t$t/stdout.log")"
		expect_eq "r$r-t$t/stderr.log" "to stderr from round $r turn $t" \
		    "$(cat "$F/workspace/r$r-t$t/stderr.log")"
	done
done

# The stamps: start <= end <= the seed's duration, duration = end - start,
# rounds one after the other, and turns of a round that end apart.
dur=$(jq '.results[0].duration_ms' "$T/out/report.json")
expect_eq "every turn has start_ms <= end_ms <= the seed's $dur ms, and duration_ms = end - start" true \
    "$(jq --argjson d "$dur" 'all(.turns[]; (.start_ms|type) == "number" and 0 <= .start_ms
        and .start_ms <= .end_ms and .end_ms <= $d and .duration_ms == .end_ms - .start_ms)' "$R")"
expect_eq "round 1 starts after round 0 ended" true \
    "$(jq '([.turns[] | select(.round == 1) | .start_ms] | min) >= ([.turns[] | select(.round == 0) | .end_ms] | max)' "$R")"
for r in 0 1; do
	e0=$(jq ".turns[] | select(.round == $r and .turn == 0) | .end_ms" "$R")
	e2=$(jq ".turns[] | select(.round == $r and .turn == 2) | .end_ms" "$R")
	expect_ge "round $r: turn 2 (300 ms of work once turn 0 exited) ends after turn 0 (ends at $e0 ms) by at least 300 ms" \
	    $((e0 + 300)) "$e2"
done

expect_eq "verdict" fail/guard "$(jq -r '.results[0] | "\(.verdict)/\(.reason)"' "$T/out/report.json")"

# The replay's timeline: each turn stamped when it ended, with its start,
# in the order they ended.
soak_rc rc replay "$T/out.yaml" --seed 0 --out "$T/replay" >"$T/replay.out" 2>&1
cat "$T/replay.out"
expect_eq "replay exit status" 1 "$rc"
line() { grep -E "^ *[0-9.]+s  round $1 turn $2: " "$T/replay.out" || fail "no timeline line for round $1 turn $2"; }
stamp() { sed -E 's/^ *([0-9]+)\.([0-9]{3})s.*/\1\2/; s/^0+([0-9])/\1/' <<<"$1"; }
for r in 0 1; do
	l0=$(line $r 0) l2=$(line $r 2)
	expect_match "round $r turn 0 says when it started" 'started at [0-9]+\.[0-9]{3}s, [0-9]+ ms\)' "$l0"
	# turn 2 thinks 300 ms: it ends after turn 0, and its own duration
	# says so (how far apart their ends are is the machine's, not asserted)
	expect_ge "round $r: turn 2's stamp is after turn 0's" \
	    "$(stamp "$l0")" "$(stamp "$l2")"
	expect_ge "round $r: turn 2's duration (its 300 ms think)" 300 \
	    "$(sed -nE 's/.*started at [0-9]+\.[0-9]{3}s, ([0-9]+) ms\).*/\1/p' <<<"$l2")"
done
expect_eq "timeline stamps never go back" "$(grep -oE '^ *[0-9]+\.[0-9]{3}s' "$T/replay.out" | tr -d ' s' | sort -n)" \
    "$(grep -oE '^ *[0-9]+\.[0-9]{3}s' "$T/replay.out" | tr -d ' s')"
