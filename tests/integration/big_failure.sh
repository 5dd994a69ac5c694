# A failing seed far bigger than one message (docs/report.md "When a result
# is cut"): 64 turns x 20 rounds, each turn writing 8 KB to stdout and 8 KB
# to stderr (20 MB in all) and the even ones exiting 1, 2560 proxied
# exchanges in the fault trace, and an invariant broken after the last round
# by 60 rows of 16 wide columns: megabytes of detail, which used to kill
# every worker that tried to send it (three attempts, infra/worker-lost, exit
# 2).  Now the result is cut to MSG_DETAIL_MAX with markers saying what was
# cut, the seed ends fail/invariant on its first attempt, and the kept
# failure directory has the full data.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
UP=$SOAK_BUILD/tests/helpers/proxy_upstream
[ -x "$UP" ] || fail "missing $UP (make test builds it)"
DETAIL_MAX=$((1 << 20))		# MSG_DETAIL_MAX, common/msg.h
TURNS=64 ROUNDS=20

# 8 KB of quotes and an 'é' now and then: a quote costs two bytes in JSON,
# and a tail may start inside a character.
yes '""""""""""é' | tr -d '\n' | head -c 8192 >"$T/blob" || true
expect_eq "stderr per turn" 8192 "$(stat -c %s "$T/blob")"
cat >"$T/schema.sql" <<'SQL'
CREATE TABLE rounds (round int NOT NULL);
SQL
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
cat "$SOAK_CONFIG_DIR/blob"
cat "$SOAK_CONFIG_DIR/blob" >&2
curl -s -m 10 "http://$SOAK_PROXY_API/x?turn=$SOAK_TURN" "http://$SOAK_PROXY_API/y?turn=$SOAK_TURN" >/dev/null
if [ "$SOAK_TURN" = 0 ]; then
	psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO rounds VALUES ($SOAK_ROUND)" || exit 75
fi
exit $((1 - SOAK_TURN % 2))
SH
chmod +x "$T/turn.sh"
cols=$(for i in $(seq 1 16); do printf ", repeat('\"', 1024) AS c%d" "$i"; done)
cat >"$T/big.yaml" <<YAML
name: big
seeds: 0..0
turns: $TURNS
rounds: $ROUNDS
seed_timeout: 300s
confirm: false
database:
  schema: schema.sql
services:
  - name: api
    command: [sh, -c, 'exec $UP http \$SOAK_PORT']
proxies:
  - name: api
    upstream: service:api
    protocol: http
    faults:
      rate: 0
turn:
  command: [./turn.sh]
  timeout: 60s
invariants:
  - name: wide rows after the last round
    sql: |
      SELECT g AS n$cols
      FROM generate_series(1, 60) g
      WHERE (SELECT count(*) FROM rounds) >= $ROUNDS
tickets: {sink: file}
YAML

soak_rc rc run "$T/big.yaml" --workers 2 --out "$T/out" >"$T/run.out" 2>"$T/run.err"
cat "$T/run.out"
R=$T/out/report.json
F=$T/out/failures/0
expect_eq "run exit status" 1 "$rc"
check_report "$T/out" 0 0
expect_eq "verdict" 'fail/invariant' "$(jq -r '.results[0] | "\(.verdict)/\(.reason)"' "$R")"
# The message names the invariant, its rows, and quotes the first row, cut.
expect_match "message" "^\"wide rows after the last round\" \\(60 rows\\) broken after round $((ROUNDS - 1)); the first row: n=1, " \
    "$(jq -r '.results[0].message' "$R")"
expect_match "message: the row cut, and said so" '…$' "$(jq -r '.results[0].message' "$R")"
expect_eq "one attempt: no worker died, nothing retried" 1 "$(jq '.results[0].attempts|length' "$R")"
expect_eq "no infra" 0 "$(jq .totals.infra "$R")"
grep -E 'larger than|more than [0-9]+|lost|does not fit' "$T/run.err" &&
    fail "a worker could not send its result whole"
N=$((TURNS * ROUNDS))
expect_eq "every turn ran" "[$N,$((N / 2))]" "$(jq -c '.results[0] | [.total_turns, .ok_turns]' "$R")"

# What was cut, said in report.json and result.json, and where the rest is.
M=$(jq -r '.results[0].truncated.markers[]' "$R")
expect_eq "markers, in the order of what matters" \
    '^truncated: [0-9]+ more rows of "wide rows after the last round"$
^truncated: [0-9]+ more turns$
^truncated: [0-9]+ more trace lines$' "$(sed -E 's/[0-9]+/[0-9]+/; s/.*/^&$/' <<<"$M")"
full=$(jq -r '.results[0].truncated.full_data' "$R")
expect_eq "full data is the kept failure directory" "$(cd "$F" && pwd -P)" "$(cd "$full" && pwd -P)"
expect_eq "result.json says the same" "$(jq -c .results[0].truncated "$R")" "$(jq -c .truncated "$F/result.json")"
inv=$(jq -c '.results[0].invariants[0]' "$R")
expect_eq "the broken invariant's name kept" '"wide rows after the last round"' "$(jq -c .name <<<"$inv")"
expect_eq "its row count kept" 60 "$(jq .row_count <<<"$inv")"
shown=$(jq '.rows|length' <<<"$inv")
expect_ge "rows shown" 1 "$shown"
[ "$shown" -lt 20 ] || fail "all 20 rows shown: the invariant was not cut"
expect_eq "rows marker in place" "truncated: $((20 - shown)) more rows" "$(jq -r .truncated <<<"$inv")"
expect_eq "rows marker in the list" "truncated: $((20 - shown)) more rows of \"wide rows after the last round\"" \
    "$(head -n 1 <<<"$M")"
expect_eq "the first rows, in order" "$(seq -s, 1 "$shown")" "$(jq -r '[.rows[][0]]|join(",")' <<<"$inv")"

# Turns: the failed ones (even turns) before any ok one, in run order.
nturns=$(jq '.turns|length' "$F/result.json")
expect_ge "turns shown" 1 "$nturns"
expect_eq "turns marker counts the rest" "truncated: $((N - nturns)) more turns" \
    "$(jq -r '.truncated.markers[] | select(test("turns"))' "$F/result.json")"
expect_eq "the turns shown are the first failed ones" true \
    "$(jq "[.turns[] | {round, turn, status}] == ([range(0; $nturns)]
        | map({round: (. * 2 / $TURNS | floor), turn: (. * 2 % $TURNS), status: \"error\"}))" "$F/result.json")"
expect_eq "each stderr tail is a whole tail" '[2048]' "$(jq -c '[.turns[].stderr_tail|utf8bytelength]|unique' "$F/result.json")"
expect_eq "each stdout tail is a whole tail" '[2048]' "$(jq -c '[.turns[].stdout_tail|utf8bytelength]|unique' "$F/result.json")"

# The detail as sent fits the budget: what result.json and trace.jsonl
# took from it together is under MSG_DETAIL_MAX.
sent=$(jq -c '{invariants, turns, message, round, ok_turns, total_turns, workspace, truncated}' "$F/result.json" | wc -c)
trace_sent=$(jq -Rs 'tojson' "$F/trace.jsonl" | wc -c)
echo "detail as sent: about $((sent + trace_sent)) bytes; in full: $(stat -c %s "$F/detail.json") bytes and the trace"
[ $((sent + trace_sent)) -le $DETAIL_MAX ] || fail "detail of $((sent + trace_sent)) bytes over $DETAIL_MAX"

# The trace shipped is the first lines plus one marker line that is JSON;
# the full trace is in the kept workspace.
tr_full=$F/workspace/trace.jsonl
expect_eq "full trace: every exchange (two a turn)" $((2 * N)) "$(wc -l <"$tr_full")"
kept=$(($(wc -l <"$F/trace.jsonl") - 1))
expect_ge "trace lines shipped" 1 "$kept"
expect_eq "shipped trace: the full trace's first lines" "$(head -n "$kept" "$tr_full" | md5sum)" \
    "$(head -n "$kept" "$F/trace.jsonl" | md5sum)"
expect_eq "trace marker line" "{\"truncated\":\"truncated: $((2 * N - kept)) more trace lines\",\"full_trace\":\"$full/workspace/trace.jsonl\"}" \
    "$(tail -n 1 "$F/trace.jsonl")"

# The full data: every turn's whole stdout and stderr, and the whole detail.
n=0
for r in $(seq 0 $((ROUNDS - 1))); do
	for t in $(seq 0 $((TURNS - 1))); do
		cmp -s "$T/blob" "$F/workspace/r$r-t$t/stderr.log" ||
		    fail "r$r-t$t/stderr.log is not the turn's whole stderr"
		cmp -s "$T/blob" "$F/workspace/r$r-t$t/stdout.log" ||
		    fail "r$r-t$t/stdout.log is not the turn's whole stdout"
		n=$((n + 1))
	done
done
expect_eq "full stdout and stderr kept for every turn" $N "$n"
expect_eq "detail.json has every turn" $N "$(jq '.turns|length' "$F/detail.json")"
expect_eq "detail.json has every row the check kept" 20 "$(jq '.invariants[0].rows|length' "$F/detail.json")"
[ "$(stat -c %s "$F/detail.json")" -gt $((8 << 20)) ] || fail "the full detail is not over the old 8 MiB cap: the test proves nothing"

expect_eq "one ticket" 1 "$(ls "$T/out/tickets"/*.md | wc -l)"
expect_match "the ticket names the invariant" 'wide rows after the last round' "$(cat "$T/out/tickets"/*.md)"
