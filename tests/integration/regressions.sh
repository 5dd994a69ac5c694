# Regressions run first (docs/plan.md "Regressions"): a failing seed pinned
# with `soak pin` into the config's regressions/ folder runs before any seed
# of every later run, leased as a lease of its own kind (journal order), and
# is reported apart: the summary line, report.json's regressions, junit's
# "regression NAME", the exit status.  Its plan's seed is in the range too:
# both run, apart.  The --lock fix passes it; a doctored plan is diverged
# (never a pass: exit 2, a junit error).  --resume of a run stopped after its
# regressions does not run them again.  A bash/psql turn (one psql -c per
# statement) is pinned and runs as a regression too.  (A diverged plan
# judged by exploring: regressions_fixed.sh.)
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/reservations
INV='items_reserved matches reservation events'

sed -e "s#\./reserve_turn#$EX/reserve_turn#" -e "s#schema: schema.sql#schema: $EX/schema.sql#" \
    -e 's/^turns: 8$/turns: 4/' -e '/^tickets:/,$d' "$EX/soak.yaml" >"$T/res.yaml"
grep -q '^turns: 4$' "$T/res.yaml" || fail "the test config has not 4 turns"
leases() { jq -r 'select(.t == "lease") | if .plan then "plan:" + .plan else "seeds:" + (.seeds | map(.[0] | tostring) | join(",")) end' "$1/journal.jsonl"; }

phase "a failing seed, pinned"
soak_rc rc run "$T/res.yaml" --seeds 0..3 --workers 2 --out "$T/run" >"$T/run.out" 2>&1
expect_eq "run exit status" 1 "$rc"
grep -q 'no regressions: .*regressions is not there' "$T/run.out" || fail "an absent regressions/ is not said"
seed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/run/report.json")
soak_rc rc pin "$T/run" --seed "$seed" >"$T/pin.out" 2>&1
cat "$T/pin.out"
expect_eq "soak pin exit status" 0 "$rc"
NAME=seed-$seed-invariant-items-reserved-matches-reservation-events
R=$T/regressions/$NAME.json
[ -s "$R" ] || fail "no $R"
expect_eq "the pinned plan's invariant" "[\"$INV\"]" "$(jq -c .failure.invariants "$R")"
expect_match "the pinned plan's replay command" "soak replay $T/res.yaml --plan $R" "$(jq -r .failure.replay "$R")"
expect_eq "the pinned plan's fingerprint" "reservations|invariant|$INV" "$(jq -r .failure.fingerprint "$R")"
soak_rc rc pin "$T/run" --seed "$seed" >"$T/pin2.out" 2>&1
expect_eq "pinning over it without --force" 73 "$rc"
expect_match "and says what to do" 'is there already: --force replaces it' "$(cat "$T/pin2.out")"
soak_rc rc check "$T/res.yaml" >"$T/check.out" 2>&1
expect_eq "soak check of the config with its regression" 0 "$rc"

phase "the regression runs first, and apart"
soak_rc rc run "$T/res.yaml" --seeds "$seed..$seed" --workers 1 --out "$T/again" >"$T/again.out" 2>&1
cat "$T/again.out"
expect_eq "a failing regression fails the run" 1 "$rc"
expect_eq "journal order: the regression's lease first" "plan:$NAME" "$(leases "$T/again" | head -n 1)"
expect_match "then the range's seeds, the plan's seed among them" "^seeds:$seed\$" "$(leases "$T/again" | sed -n 2p)"
expect_match "the summary line" 'regressions: 0 pass, 1 FAIL, 0 diverged' "$(cat "$T/again.out")"
expect_match "the summary names it with its replay" "FAIL +$NAME .*" "$(cat "$T/again.out")"
expect_match "and its replay command" "replay: .*soak replay .*res.yaml --plan .*$NAME.json" "$(cat "$T/again.out")"
expect_eq "report.json: the regression" "$NAME fail invariant $seed" \
    "$(jq -r '.regressions[0] | "\(.name) \(.verdict) \(.reason) \(.seed)"' "$T/again/report.json")"
expect_eq "report.json: its hash is the file's" "$(sha256sum "$R" | cut -c1-64)" "$(jq -r '.regressions[0].hash' "$T/again/report.json")"
expect_eq "report.json: the seed of the range apart" 1 "$(jq '.results | length' "$T/again/report.json")"
grep -q "<testcase classname=\"soak.reservations\" name=\"regression $NAME\"" "$T/again/junit.xml" ||
    fail "junit.xml has no testcase regression $NAME"
expect_eq "junit: tests, failures" '2 2' "$(sed -n 's/.*<testsuites name="soak" tests="\([0-9]*\)" failures="\([0-9]*\)".*/\1 \2/p' "$T/again/junit.xml")"
[ -s "$T/again/failures/regression-$NAME/result.json" ] || fail "no failures/regression-$NAME/"

phase "the --lock fix passes it"
sed "s#command: \[$EX/reserve_turn\]#command: [$EX/reserve_turn, --lock]#" "$T/res.yaml" >"$T/lock.yaml"
soak_rc rc run "$T/lock.yaml" --seeds 0..0 --workers 1 --out "$T/lock" >"$T/lock.out" 2>&1
expect_eq "the fix: exit status" 0 "$rc"
expect_match "the fix: the regression passes" 'regressions: 1 pass, 0 fail, 0 diverged' "$(cat "$T/lock.out")"
expect_eq "report.json: pass" pass "$(jq -r '.regressions[0].verdict' "$T/lock/report.json")"
# a run whose seed passed: nothing to pin
soak_rc rc pin "$T/lock" --seed 0 >"$T/pin3.out" 2>&1
expect_eq "pinning a seed that passed" 65 "$rc"
expect_match "and says why" "seed 0 did not fail" "$(cat "$T/pin3.out")"

phase "a doctored plan is diverged, never a pass"
mkdir -p "$T/doctored"
jq '.proxies.db.steps[1].key = "00000000deadbeef"' "$R" >"$T/doctored/bent.json"
# not explored (budget 0): a diverged plan judged by nothing is never a
# pass (regressions_fixed.sh explores one)
sed "s#^turn:#regressions: doctored\nregressions_explore_budget: 0\nturn:#" "$T/lock.yaml" >"$T/bent.yaml"
grep -q '^regressions: doctored' "$T/bent.yaml" || fail "no regressions: key"
soak_rc rc run "$T/bent.yaml" --seeds 0..0 --workers 1 --out "$T/bent" >"$T/bent.out" 2>&1
expect_eq "a diverged regression: incomplete (2)" 2 "$rc"
expect_match "the summary says diverged" 'regressions: 0 pass, 0 fail, 1 diverged' "$(cat "$T/bent.out")"
expect_match "by name" 'DIVERGED +bent' "$(cat "$T/bent.out")"
expect_eq "report.json: infra diverged" 'infra diverged' "$(jq -r '.regressions[0] | "\(.verdict) \(.reason)"' "$T/bent/report.json")"
expect_match "and says it was not explored" 'cannot be judged by exploring: regressions_explore_budget is 0' \
    "$(jq -r '.regressions[0].message' "$T/bent/report.json")"
grep -A1 'name="regression bent"' "$T/bent/junit.xml" | grep -q '<error type="diverged"' ||
    fail "junit: the diverged regression is not an error"
sed "s#^regressions: doctored#regressions: nowhere#" "$T/bent.yaml" >"$T/nowhere.yaml"
soak_rc rc run "$T/nowhere.yaml" --seeds 0..0 --out "$T/nowhere" >"$T/nowhere.out" 2>&1
expect_eq "a configured folder that is not there" 78 "$rc"
expect_match "said at its key" 'nowhere.yaml:[0-9]+:[0-9]+: regressions: .*nowhere: No such file' "$(cat "$T/nowhere.out")"
echo '{"soak_plan": 1, "seed": 1, "turns": 9, "rounds": 1}' >"$T/doctored/wide.json"
soak_rc rc check "$T/bent.yaml" >"$T/wide.out" 2>&1
expect_eq "soak check: a plan the config cannot run" 78 "$rc"
expect_match "names the file" 'doctored/wide.json: .* cannot run this regression: the plan is of 9 turns' "$(cat "$T/wide.out")"
rm "$T/doctored/wide.json"

phase "--resume does not run a finished regression again"
cp -r "$T/again" "$T/cut"
rm -f "$T/cut/report.json" "$T/cut/junit.xml"
# the journal as a kill right after the regression's result leaves it
n=$(grep -m 1 -n '"t":"result"' "$T/cut/journal.jsonl" | cut -d: -f1)
head -n "$n" "$T/again/journal.jsonl" >"$T/cut/journal.jsonl"
expect_eq "the cut journal ends with the regression's result" "$NAME" \
    "$(tail -n 1 "$T/cut/journal.jsonl" | jq -r .plan)"
soak_rc rc run "$T/res.yaml" --resume "$T/cut" >"$T/cut.out" 2>&1
expect_eq "resumed run exit status" 1 "$rc"
expect_eq "no regression leased again" 1 "$(leases "$T/cut" | grep -c '^plan:')"
expect_eq "the resumed report has it, once" "$NAME fail" \
    "$(jq -r '.regressions[] | "\(.name) \(.verdict)"' "$T/cut/report.json")"
expect_eq "and the seed" 1 "$(jq '.results | length' "$T/cut/report.json")"
cp "$R" "$T/regressions/extra.json"
soak_rc rc run "$T/res.yaml" --resume "$T/cut" >"$T/cut2.out" 2>&1
expect_eq "a resume whose regressions changed" 78 "$rc"
rm "$T/regressions/extra.json"

phase "a bash/psql turn, pinned and run first"
mkdir -p "$T/sh"
counter_schema "$T/sh/counter.sql"
cat >"$T/sh/turn.sh" <<'SH'
#!/bin/bash
set -eu
n=$(psql -XAtqc "SELECT n FROM counter WHERE id = 1")
psql -Xqc "UPDATE counter SET n = $((n + 1)) WHERE id = 1"
psql -Xqc "INSERT INTO events (turn) VALUES ($SOAK_TURN)"
SH
chmod +x "$T/sh/turn.sh"
sched_cfg "$T/sh/soak.yaml" counter 3 counter.sql "[./turn.sh]"
soak_rc rc run "$T/sh/soak.yaml" --seeds 0..3 --workers 2 --out "$T/shrun" >"$T/shrun.out" 2>&1
expect_eq "the psql counter's run" 1 "$rc"
s2=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/shrun/report.json")
soak_rc rc pin "$T/shrun" --seed "$s2" --name lost-count >"$T/shpin.out" 2>&1
expect_eq "soak pin --name" 0 "$rc"
[ -s "$T/sh/regressions/lost-count.json" ] || fail "no regressions/lost-count.json beside the config"
soak_rc rc run "$T/sh/soak.yaml" --seeds 100..100 --workers 1 --out "$T/shagain" >"$T/shagain.out" 2>&1
expect_ge "the psql regression's run: fails" 1 "$rc"
expect_eq "the psql regression: first" "plan:lost-count" "$(leases "$T/shagain" | head -n 1)"
expect_eq "the psql regression fails on its plan" fail "$(jq -r '.regressions[0].verdict' "$T/shagain/report.json")"
echo "figures: regressions.sh took ${SECONDS} s"
