# Every verdict of docs/design.md, "Verdicts", from a real run, with its
# exit status: tempfail (retried, then infra, exit 2), broken DDL (infra/db
# with the file's line), setup and exec failures, crash, guard, hang,
# config errors.
# The summary names each group in words, with its reason's first line.
. "$(dirname "$0")/lib.sh"

cfg() {	# name, extra yaml (turn and the rest)
	cat >"$T/$1.yaml" <<YAML
name: $1
seeds: 0..2
turns: 4
seed_timeout: 20s
database:
  schema: ${SCHEMA:-ok.sql}
$2
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
}
printf 'CREATE TABLE t (a int);\n' >"$T/ok.sql"
printf -- '-- a comment\nCREATE TABLE ok (a int);\nCREATE TABL broken (a int);\n' >"$T/bad.sql"

run() {	# name -> sets rc, R (report path)
	soak_rc rc run "$T/$1.yaml" --workers 2 --out "$T/out-$1" >"$T/$1.out" 2>"$T/$1.err"
	R=$T/out-$1/report.json
	cat "$T/$1.out"
}
verdicts() { jq -c '[.results[] | "\(.verdict)/\(.reason)"] | unique' "$R"; }
# The summary's one group of a run whose 3 seeds all failed alike: the
# failure in words (never the fingerprint text), then the first line of the
# smallest seed's reason, as in report.json.
group_says() {	# name, FAIL|INFRA, words
	local msg
	msg=$(jq -r '.results[0].message | split("\n")[0]' "$T/out-$1/report.json")
	[ -n "$msg" ] || fail "$1: seed 0 has no message"
	expect_eq "$1: summary group line" "  $(printf '%-5s' "$2") $3 — 3 seed(s), smallest 0" \
	    "$(grep -E '^  (FAIL |INFRA) ' "$T/$1.out")"
	expect_eq "$1: the reason's first line under it" "        $msg" \
	    "$(grep -A1 -E '^  (FAIL |INFRA) ' "$T/$1.out" | sed -n 2p)"
}

# A turn that says its environment broke: infra, retried twice, never green.
cfg tempfail 'turn: {command: [sh, -c, "exit 75"]}'
run tempfail
expect_eq "tempfail exit status" 2 "$rc"
expect_eq "tempfail verdicts" '["infra/tempfail"]' "$(verdicts)"
expect_eq "tempfail attempts per seed" '[3]' "$(jq -c '[.results[].attempts|length]|unique' "$R")"
# Each retry goes to another worker than the attempt before it (2 workers:
# 1st, 2nd and 3rd attempts alternate).
expect_eq "tempfail retried on another worker, every time" 'true' \
    "$(jq '[.results[].attempts | [.[].worker] | . as $w
        | range(1; length) | $w[.] != $w[. - 1]] | (length == 6) and all' "$R")"
check_report "$T/out-tempfail" 0 2
group_says tempfail INFRA 'tempfail: a turn exited 75 (its environment broke)'
jq -e '.complete == false and .exit_status == 2' "$R" >/dev/null || fail "run not marked incomplete"
expect_match "stderr tail of a tempfail turn kept" '"turns"' "$(cat "$T/out-tempfail/failures/0/result.json")"

# Broken DDL: infra/db, naming the file and line.
SCHEMA=bad.sql cfg ddl 'turn: {command: [/bin/true]}'
run ddl
# A config error no retry mends: the run stops after the first seeds
# (docs/results.md "Config errors stop a run early").
expect_eq "broken DDL exit status" 78 "$rc"
expect_match "broken DDL: the run says it stopped, and why" \
    'ddl\.yaml:[0-9]+:[0-9]+: database\.schema: bad\.sql:3: syntax error' "$(jq -r .halted "$R")"
expect_eq "broken DDL verdicts" '["infra/db"]' "$(verdicts)"
expect_match "broken DDL message" 'bad.sql:3: syntax error at or near "TABL"' \
    "$(jq -r '.results[0].message' "$R")"
group_says ddl INFRA 'db: the database failed'

# A setup that fails, and a turn that cannot be executed: infra.
cfg setup 'setup: [sh, -c, "echo no fixtures >&2; exit 3"]
turn: {command: [/bin/true]}'
run setup
expect_eq "setup failure verdicts" '["infra/setup"]' "$(verdicts)"
group_says setup INFRA 'setup: the setup command failed'
cfg exec 'turn: {command: [./no-such-agent]}'
run exec
expect_eq "exec failure verdicts" '["infra/exec"]' "$(verdicts)"
expect_match "exec failure message" 'no-such-agent.*No such file' "$(jq -r '.results[0].message' "$R")"
group_says exec INFRA 'exec: a turn could not be executed'
expect_match "exec: the summary says why" '^        .*no-such-agent.*No such file' "$(cat "$T/exec.out")"

# A turn killed by a signal it was not sent: crash, a domain failure.
cfg crash 'turn: {command: [sh, -c, "[ $SOAK_TURN = 1 ] && kill -SEGV $$; exit 0"]}'
run crash
expect_eq "crash exit status" 1 "$rc"
expect_eq "crash verdicts" '["fail/crash"]' "$(verdicts)"
group_says crash FAIL 'crash: a turn died of a signal'
expect_eq "crash is never retried" '[1]' "$(jq -c '[.results[].attempts|length]|unique' "$R")"
expect_eq "crash fingerprint" 'crash|crash' "$(jq -r '.results[0].fingerprint' "$R")"
# The smallest failing seed of each bug runs once more, on the other
# worker, and the report says it reproduced; the other seeds are not re-run.
expect_eq "crash re-run reproduced" 'true' "$(jq '.results[0].reproduced' "$R")"
expect_eq "crash re-run on the other worker" 'true' \
    "$(jq '.results[0] | .confirm.worker != .worker' "$R")"
expect_eq "crash re-run verdict" 'fail/crash' \
    "$(jq -r '.results[0].confirm | "\(.verdict)/\(.reason)"' "$R")"
expect_eq "only the smallest seed is re-run" '[null]' \
    "$(jq -c '[.results[1:][].reproduced] | unique' "$R")"
expect_match "summary says it reproduced" 'a confirming re-run reproduced it' "$(cat "$T/crash.out")"
expect_eq "failures/0 has the re-run" 'true' "$(jq '.reproduced' "$T/out-crash/failures/0/result.json")"

# A bug that happens only once per seed (the turn leaves a mark outside its
# workspace): the re-run passes, and the report says it did not reproduce.
cfg flaky 'turn: {command: [sh, -c, "m=$SOAK_CONFIG_DIR/mark-$SOAK_SEED-$SOAK_TURN; [ -e $m ] && exit 0; : >$m; [ $SOAK_TURN = 1 ] && kill -SEGV $$; exit 0"]}
tickets: {sink: file}'
run flaky
expect_eq "flaky exit status (the verdict stands)" 1 "$rc"
expect_eq "flaky verdicts" '["fail/crash"]' "$(verdicts)"
expect_eq "flaky re-run did not reproduce" 'false' "$(jq '.results[0].reproduced' "$R")"
expect_eq "flaky re-run passed" 'pass' "$(jq -r '.results[0].confirm.verdict' "$R")"
expect_match "summary says it did not reproduce" 'did NOT reproduce it' "$(cat "$T/flaky.out")"
expect_match "the ticket says so" 'Confirming re-run of seed 0: \*\*did not reproduce\*\* \(worker [12]\); it ended `pass`' \
    "$(cat "$T/out-flaky/tickets"/*.md)"

# confirm: false runs no re-run.
cfg noconfirm 'confirm: false
turn: {command: [sh, -c, "[ $SOAK_TURN = 1 ] && kill -SEGV $$; exit 0"]}'
run noconfirm
expect_eq "confirm: false leaves reproduced unknown" '[null]' \
    "$(jq -c '[.results[].reproduced] | unique' "$R")"
expect_eq "confirm: false, no re-run record" '0' "$(jq '[.results[] | select(.confirm)] | length' "$R")"

# Refusing everything cannot pass: the guard.
cfg guard 'turn: {command: [sh, -c, "exit 1"]}
guard: {min_ok_turns: 50%}'
run guard
expect_eq "guard exit status" 1 "$rc"
expect_eq "guard verdicts" '["fail/guard"]' "$(verdicts)"
group_says guard FAIL 'guard: too few turns succeeded'

# Every turn crashed (a #! interpreter without the module it imports), no
# guard: not a pass, but fail/guard naming the round and the turn's error.
printf '#!/usr/bin/python3\nimport no_such_driver_module\n' >"$T/crash.py"
chmod +x "$T/crash.py"
cfg allcrash 'turn: {command: [./crash.py]}'
run allcrash
expect_eq "all turns crashed, no guard: exit status" 1 "$rc"
expect_eq "all turns crashed, no guard: verdicts" '["fail/guard"]' "$(verdicts)"
expect_match "its message names the round and quotes the turn" \
    "^no turn of round 0 succeeded \(0 of 4 turns ok in the seed\); turn 0 exited 1: ModuleNotFoundError: No module named 'no_such_driver_module'\. .*guard: min_ok_turns: 0 lets such a seed pass" \
    "$(jq -r '.results[0].message' "$R")"
expect_eq "the round it names" 0 "$(jq '.results[0].round' "$R")"
group_says allcrash FAIL 'guard: too few turns succeeded'
# The second of two rounds: a round with no ok turn fails the seed whatever
# the other round did, and a guard that the seed's total meets.
cfg idle2 'rounds: 2
turn: {command: [sh, -c, "[ $SOAK_ROUND = 1 ] && { echo round two broke >&2; exit 3; }; exit 0"]}
guard: {min_ok_turns: 50%}'
run idle2
expect_eq "an idle second round: verdicts" '["fail/guard"]' "$(verdicts)"
expect_match "an idle second round: its message" \
    '^no turn of round 1 succeeded \(4 of 8 turns ok in the seed\); turn 0 exited 3: round two broke\.' \
    "$(jq -r '.results[0].message' "$R")"
# Said explicitly, guard: min_ok_turns: 0 lets it pass, and says so.
cfg allcrash0 'turn: {command: [./crash.py]}
guard: {min_ok_turns: 0}'
run allcrash0
expect_eq "all turns crashed, min_ok_turns: 0: exit status" 0 "$rc"
expect_eq "all turns crashed, min_ok_turns: 0: verdicts" '["pass/null"]' "$(verdicts)"
expect_match "the pass says what it allowed" \
    "^0 of 4 turns ok; no turn of round 0 succeeded, which guard: min_ok_turns: 0 allows \(turn 0 exited 1: ModuleNotFoundError" \
    "$(jq -r '.results[0].message' "$R")"
expect_eq "report.json: idle_round of each pass" '[0]' "$(jq -c '[.results[].idle_round] | unique' "$R")"
expect_match "the summary says so" \
    '^  PASS  with a round in which no turn succeeded — 3 seed\(s\), smallest 0 \(guard: min_ok_turns: 0 allows it\)$' \
    "$(cat "$T/allcrash0.out")"

# Still running at seed_timeout: hang (the turn timeout is longer on purpose).
cfg hang 'seed_timeout: 300ms
turn: {command: [sh, -c, "[ $SOAK_TURN = 2 ] && exec cat /dev/zero >/dev/null; exit 0"], timeout: 30s}'
sed -i 's/^seed_timeout: 20s$//' "$T/hang.yaml"
run hang
expect_eq "hang exit status" 1 "$rc"
expect_eq "hang verdicts" '["fail/hang"]' "$(verdicts)"
expect_eq "hung turn reported as killed" 'killed' \
    "$(jq -r '.turns[] | select(.turn==2) | .status' "$T/out-hang/failures/0/result.json")"

# Config errors: exit 78 with file:line:column and the key, before any work.
printf 'name: x\nturns: 8\nturn:\n  command: [/bin/true]\n  timout: 5s\ninvariants:\n  - {name: a, sql: "SELECT 1"}\n' >"$T/typo.yaml"
soak_rc rc run "$T/typo.yaml" --out "$T/out-typo" 2>"$T/typo.err"
expect_eq "config error exit status" 78 "$rc"
expect_match "config error names file:line:col and key" "typo.yaml:5:3: turn.timout: unknown key" \
    "$(cat "$T/typo.err")"
[ ! -e "$T/out-typo" ] || fail "a config error left an output directory"
soak_rc rc check "$T/typo.yaml" 2>/dev/null
expect_eq "soak check on a bad config" 78 "$rc"
soak_rc rc check "$T/tempfail.yaml" >/dev/null
expect_eq "soak check on a good config" 0 "$rc"
soak_rc rc run "$T/tempfail.yaml" --seeds 5..1 2>/dev/null
expect_eq "bad --seeds is a usage error" 64 "$rc"
soak_rc rc run 2>/dev/null
expect_eq "no config is a usage error" 64 "$rc"
