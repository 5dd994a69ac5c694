# Every run says what it exercised (docs/report.md "coverage"), and
# comparisons are right (docs/report.md "Schedule comparisons"):
#  - 3 turns x 4 INSERTs, each through its own libpq session to a scheduled
#    `protocol: postgres` proxy (tests/helpers/proxy_pgclient): 6 exchanges
#    a turn (the start-up, 4 statements, the Terminate), 12 steps a seed
#    (the statements), all passing, so report.json's coverage is counted
#    exactly: 108 exchanges, 18 connections and 72 steps over 6 seeds;
#  - a proxy no turn uses is warned, naming $SOAK_PROXY_UNUSED; a fault
#    whose match: matches nothing is warned as never fired; PCT's steps far
#    above the 12 a seed takes is warned, with PCT's bound beside it;
#  - a run killed mid-way and --resumed has the coverage of one that ran
#    through (the journal carries every seed's);
#  - a passing seed replayed against its own trace is "the same as the
#    run's, all 12 steps" (not "the same for 0 steps": the replay compares
#    its whole trace), a doctored one says where it left it, and nothing
#    scheduled prints no schedule line;
#  - a confirming re-run that fails as another bug says so, naming both
#    fingerprints, in the summary, report.json and the ticket.
. "$(dirname "$0")/lib.sh"
H=$SOAK_BUILD/tests/helpers
gate_new

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE t (turn int, n int);
SQL
cat >"$T/turn.sh" <<SH
#!/bin/sh
# Seed 3 waits at the gate when asked to (the resume's kill lands there).
if [ "\$SOAK_SEED" = 3 ] && [ -e "$T/hold" ] && [ "\$SOAK_TURN" = 0 ]; then
	timeout 120 dd if="$T/gate" bs=1 count=1 status=none || exit 75
fi
exec "$H/proxy_pgclient" "host=\${SOAK_PROXY_DB%:*} port=\${SOAK_PROXY_DB#*:} sslmode=disable gssencmode=disable" \
    "INSERT INTO t VALUES (\$SOAK_TURN, 1)" "INSERT INTO t VALUES (\$SOAK_TURN, 2)" \
    "INSERT INTO t VALUES (\$SOAK_TURN, 3)" "INSERT INTO t VALUES (\$SOAK_TURN, 4)"
SH
chmod +x "$T/turn.sh"
cat >"$T/cov.yaml" <<YAML
name: coverage
seeds: 0..5
turns: 3
database:
  schema: $T/schema.sql
proxies:
  - name: db
    upstream: database
    protocol: postgres
    faults:
      rate: 1
      lost_reply: 1
      match: '^NOSUCH STATEMENT'
    schedule:
      mode: pct
      depth: 2
      steps: 200
      arrival: 2s
  - name: unused
    upstream: 127.0.0.1:1
turn:
  command: [$T/turn.sh]
  timeout: 30s
invariants:
  - name: every turn wrote 4 rows
    sql: SELECT turn, count(*) FROM t GROUP BY turn HAVING count(*) <> 4
YAML

phase "6 passing seeds, their coverage counted exactly"
soak_rc rc run "$T/cov.yaml" --workers 2 --out "$T/run" >"$T/run.out" 2>"$T/run.err"
sed -n '/coverage of/,/report:/p' "$T/run.out"
expect_eq "run exit status" 0 "$rc"
check_report "$T/run" 0 5
R=$T/run/report.json
cov() { jq -c "$2" "$1/report.json"; }
expect_eq "seeds covered" 6 "$(cov "$T/run" .coverage.seeds)"
expect_eq "db: exchanges, connections, steps" '[108,18,72,6]' \
    "$(cov "$T/run" '.coverage.proxies.db | [.exchanges, .connections, .steps, .seeds_with_exchanges]')"
expect_eq "db: steps a seed" '{"median":12,"max":12}' "$(cov "$T/run" .coverage.proxies.db.steps_per_seed)"
expect_eq "db: faults fired" '{"lost_reply":0,"reset":0,"duplicate":0,"blackhole":0,"status":0,"stream_cut":0,"stream_stall":0,"close_after":0,"latency":0}' \
    "$(cov "$T/run" .coverage.proxies.db.faults)"
expect_eq "unused: exchanges" 0 "$(cov "$T/run" .coverage.proxies.unused.exchanges)"
expect_eq "invariant checked and broken" '[6,0]' \
    "$(cov "$T/run" '.coverage.invariants[0] | [.seeds_checked, .seeds_broken]')"
expect_eq "forced decisions, the run's and the seeds' own" "$(cov "$T/run" .coverage.forced.decisions)" \
    "$(cov "$T/run" '[.results[].forced] | add')"
W=$(cov "$T/run" '.coverage.warnings[]')
expect_match "the unused proxy is warned, naming how turns reach it" \
    'proxy unused saw no exchange in any of the 6 seeds: no turn.s traffic went through it. A turn reaches it at \$SOAK_PROXY_UNUSED' "$W"
expect_match "the fault that cannot fire is warned" \
    'proxy db: lost_reply never fired in 108 exchanges of 6 seeds, though its share is 100 % of them; its match: /\^NOSUCH STATEMENT/' "$W"
expect_match "PCT's k far above the steps taken is warned" \
    'proxy db: its pct steps \(k = 200\) is far above the steps seeds took \(median 12, at most 12\)' "$W"
expect_eq "warnings" 3 "$(cov "$T/run" '.coverage.warnings | length')"
expect_eq "PCT's bound: n, k, d, p a seed" '["db",3,200,2,0.0016666666666666668]' \
    "$(cov "$T/run" '.coverage.pct[0] | [.proxy, .turns, .steps, .depth, .per_seed]')"
S=$(cat "$T/run.out")
expect_match "summary: db's line" '^    proxy db \(pct\): 108 exchanges in 6 seeds, 18 connections; 72 scheduled steps \(median 12, at most 12 a seed\), [0-9]+ forced' "$S"
expect_match "summary: the forced decisions" '^    [0-9]+ forced decisions? in [0-9]+ of 6 seeds$' "$S"
expect_match "summary: PCT's bound" '^    pct bound, proxy db \(n = 3 turns, k = 200 steps, d = 2\): .* = 0.167 %, and in the run.s 6 seeds with .* = 0.996 %, assuming no forced decisions and no exchanges outside the schedule' "$S"
expect_match "summary: the warning" '^    warning: proxy unused saw no exchange' "$S"

phase "killed mid-run and resumed: the same coverage"
: >"$T/hold"
"$SOAK" run "$T/cov.yaml" --workers 1 --out "$T/killed" >"$T/k1.out" 2>"$T/k1.err" &
run=$!
cleanup_hooks+=("kill -KILL $run 2>/dev/null")
wait_line "$T/killed/journal.jsonl" '"seed":2,.*"t":"result"' 120 "the result of seed 2" >/dev/null
kill -KILL "$run"
wait "$run" 2>/dev/null || true
rm -f "$T/hold"
gate_open		# the killed run's seed-3 turn, if it outlived its worker
expect_eq "results journaled before the kill" 3 "$(grep -c '"t":"result"' "$T/killed/journal.jsonl")"
soak_rc rc run "$T/cov.yaml" --resume "$T/killed" >"$T/k2.out" 2>"$T/k2.err"
expect_eq "resumed run exit status" 0 "$rc"
# (the clock's part out: forced decisions, the turns they went without, the
# time the schedules waited; the seeds that waited stay)
same() { jq -c '.coverage | del(.forced) | .waits |= .seeds | .proxies[] |= del(.forced, .idle) | del(.pct[].forced)' "$1/report.json"; }
expect_eq "the resumed run's coverage is the uninterrupted one's" "$(same "$T/run")" "$(same "$T/killed")"

phase "replays of a passing seed compared with its whole trace"
cd "$T"
soak_rc rc replay "$T/cov.yaml" --seed 1 --keep --out "$T/r1" >"$T/r1.out" 2>&1
expect_eq "replay exit status" 0 "$rc"
kept=$(sed -n 's/^workspace kept: //p' "$T/r1.out")
[ -s "$kept/trace.jsonl" ] || { tail "$T/r1.out"; fail "the replay kept no trace"; }
cp "$kept/trace.jsonl" "$T/seed1.jsonl"
case $kept in /dev/shm/soak-replay-*/seed-*) rm -rf "${kept%/seed-*}" ;; esac
soak_rc rc replay "$T/cov.yaml" --seed 1 --trace "$T/seed1.jsonl" --out "$T/r2" >"$T/r2.out" 2>&1
expect_eq "replay --trace exit status" 0 "$rc"
expect_eq "a passing replay against its run's trace" "schedule: the same as the run's, all 12 steps" \
    "$(grep '^schedule:' "$T/r2.out")"
jq -c 'if .step == 5 then .sql = "DELETE FROM t" else . end' "$T/seed1.jsonl" >"$T/doctored.jsonl"
soak_rc rc replay "$T/cov.yaml" --seed 1 --trace "$T/doctored.jsonl" --out "$T/r3" >"$T/r3.out" 2>&1
expect_match "where a doctored trace's schedule was left" \
    '^schedule: left the run.s at step 5 of proxy db: the run admitted turn [0-9] \(conn 0, exchange [1-4]: DELETE FROM t\) .*; this replay admitted .*INSERT INTO t .* \(they differ in the statement\)$' \
    "$(grep '^schedule:' "$T/r3.out")"
# Nothing scheduled, on either side: no schedule line at all.
sed '/^    schedule:/,/^      arrival:/d' "$T/cov.yaml" >"$T/plain.yaml"
grep -q 'mode: pct' "$T/plain.yaml" && fail "the plain config is still scheduled"
jq -c 'del(.step, .cand)' "$T/seed1.jsonl" >"$T/plain.jsonl"
soak_rc rc replay "$T/plain.yaml" --seed 1 --trace "$T/plain.jsonl" --out "$T/r4" >"$T/r4.out" 2>&1
expect_eq "unscheduled replay exit status" 0 "$rc"
expect_eq "no schedule line when nothing was scheduled" 0 "$(grep -c '^schedule' "$T/r4.out" || true)"

phase "a confirming re-run that fails as another bug"
cat >"$T/flaky.sh" <<SH
#!/bin/sh
# The first run of a seed writes 'a', every later one 'b'.
m=$T/mark-\$SOAK_SEED
if [ -e "\$m" ]; then v=b; else : >"\$m"; v=a; fi
psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO t VALUES (0, 0), (1, 0)" -c "UPDATE t SET n = ascii('\$v')" >/dev/null
SH
chmod +x "$T/flaky.sh"
cat >"$T/flaky.yaml" <<YAML
name: flaky
seeds: 0..0
turns: 1
database:
  schema: $T/schema.sql
turn:
  command: [$T/flaky.sh]
invariants:
  - name: no a
    sql: SELECT * FROM t WHERE n = ascii('a')
  - name: no b
    sql: SELECT * FROM t WHERE n = ascii('b')
tickets: {sink: file}
YAML
soak_rc rc run "$T/flaky.yaml" --out "$T/flaky" >"$T/flaky.out" 2>"$T/flaky.err"
cat "$T/flaky.out"
expect_eq "flaky run exit status" 1 "$rc"
expect_eq "report.json: the re-run's outcome" '["failed_differently",false,"flaky|invariant|no b","flaky|invariant|no a"]' \
    "$(jq -c '.results[0] | [.confirm.outcome, .reproduced, .confirm.fingerprint, .fingerprint]' "$T/flaky/report.json")"
expect_match "summary: failed differently, both fingerprints" \
    '^        a confirming re-run failed differently: flaky\|invariant\|no b, where the run failed with flaky\|invariant\|no a' \
    "$(cat "$T/flaky.out")"
expect_match "the ticket says so" \
    'Confirming re-run of seed 0: \*\*failed differently\*\* \(worker [0-9]+\); it ended `fail invariant` \(fingerprint `flaky\|invariant\|no b`, not this ticket.s `flaky\|invariant\|no a`\)' \
    "$(cat "$T/flaky/tickets"/*.md)"
echo "figures: coverage of 6 seeds: $(cov "$T/run" '.coverage.proxies.db | [.exchanges, .connections, .steps]') (exchanges, connections, steps); $(cov "$T/run" .coverage.forced.decisions) forced decisions"
