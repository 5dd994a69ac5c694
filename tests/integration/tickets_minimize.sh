# tickets.minimize (docs/tickets.md "Minimized before filing"): before
# filing, the coordinator has a worker minimize the smallest failing seed of
# each fingerprint (a lease of its own kind), and the ticket shows the story
# and the command that replays the minimal plan above the full trace;
# report.json records the minimized plan, failures/N/plan.min.json holds it,
# and it replays to the same failure.  The system: a lost update in bash +
# psql, one `psql -c` per statement (a connection per statement) with work of
# its own (a process) between the read and the write, four turns under a
# seeded schedule — it minimizes to the two turns that raced and the one
# preemption between them.  Seeds of a fingerprint other than the smallest
# are not minimized; a budget too small to finish still files the smallest
# failing plan found, and says so.  (A minimize lease whose worker dies is
# given again: tests/unit/test_coord.c.)
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
command -v psql >/dev/null || fail "psql is not installed (make deps)"

counter_schema "$T/counter.sql"
cat >"$T/percmd.sh" <<'SH'
#!/bin/bash
set -eu
n=$(psql -XAtqc "SELECT n FROM counter WHERE id = 1")
# the agent works the new value out in a process of its own: time
# between the read and the write, which the schedule, not a clock, orders
new=$(awk -v n="$n" 'BEGIN { print n + 1 }')
psql -Xqc "UPDATE counter SET n = $new WHERE id = 1"
psql -Xqc "INSERT INTO events (turn) VALUES ($SOAK_TURN)"
echo "turn $SOAK_TURN: counter was $n"
SH
chmod +x "$T/percmd.sh"
INV=$COUNTER_INV
cfg() {	# NAME BUDGET
	sched_cfg "$T/$1.yaml" counter 4 "$T/counter.sql" "[$T/percmd.sh]" "seeds: 0..5
tickets:
  sink: file
  minimize: true
  minimize_budget: $2"
}

phase "a run whose failures are minimized before they are filed"
cfg min 120s
soak_rc rc run "$T/min.yaml" --workers 2 --out "$T/run" >"$T/run.out" 2>"$T/run.err"
[ "$rc" -eq 1 ] || { tail -n 30 "$T/run.err"; fail "run exit $rc, not 1"; }
R=$T/run/report.json
nfail=$(jq '[.results[] | select(.verdict == "fail")] | length' "$R")
[ "$nfail" -ge 1 ] || fail "no seed of 0..5 failed: the test system lost its race"
# one fingerprint: the lost update; its smallest seed alone is minimized
smallest=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$R")
expect_eq "seeds minimized" 1 "$(jq '[.results[] | select(.minimized != null)] | length' "$R")"
expect_eq "the seed minimized" "$smallest" "$(jq '.results[] | select(.minimized != null) | .seed' "$R")"
M=$(jq -c ".results[] | select(.seed == $smallest) | .minimized" "$R")
expect_eq "outcome" '"minimal"' "$(jq -c .outcome <<<"$M")"
expect_eq "same failure" true "$(jq -c .same_failure <<<"$M")"
expect_eq "turns left" 2 "$(jq '.counts.turns[1]' <<<"$M")"
expect_eq "turns before" 4 "$(jq '.counts.turns[0]' <<<"$M")"
expect_eq "preemptions left" 1 "$(jq '.counts.preemptions[1]' <<<"$M")"
expect_eq "plan file" "\"failures/$smallest/plan.min.json\"" "$(jq -c .plan_file <<<"$M")"
expect_eq "its plan in report.json is the file's" "$(jq -cS .plan.proxies <<<"$M")" \
    "$(jq -cS .proxies "$T/run/failures/$smallest/plan.min.json")"
expect_eq "the plan's fingerprint" "$(jq -c ".results[] | select(.seed == $smallest) | .fingerprint" "$R")" \
    "$(jq -c .failure.fingerprint "$T/run/failures/$smallest/plan.min.json")"
jq -r .story <<<"$M" | grep -q "preempts turn" || fail "the story marks no preemption: $(jq -r .story <<<"$M")"
grep -qE "^seed $smallest: .*: minimized: 1-minimal: turns 4 → 2, faults 0 → 0, preemptions [0-9]+ → 1" "$T/run.err" ||
    fail "no minimized line for seed $smallest: $(grep minimiz "$T/run.err")"
ok "seed $smallest of $nfail failing: 4 turns to 2, 1 preemption, $(jq .replays <<<"$M") replays"

phase "the minimal plan replays to the same failure"
soak_rc rc replay "$T/min.yaml" --plan "$T/run/failures/$smallest/plan.min.json" >"$T/rp.out" 2>&1
[ "$rc" -eq 1 ] || { tail -n 20 "$T/rp.out"; fail "replay of the minimal plan: exit $rc, not 1"; }
grep -qF "\"$INV\": BROKEN" "$T/rp.out" || fail "the minimal plan's replay broke another invariant: $(tail "$T/rp.out")"
ok "soak replay --plan failures/$smallest/plan.min.json: exit 1, \"$INV\" broken"

phase "the ticket: the story and its replay above the full trace"
tk=$(ls "$T/run/tickets"/*.md)
expect_eq "tickets" 1 "$(wc -l <<<"$tk")"
grep -qF "### Minimized (1-minimal)" "$tk" || fail "no minimized section in $tk"
grep -qF "the schedule of proxy db" "$tk" || fail "no story in the ticket"
grep -qE "replay .*--plan .*failures/$smallest/plan\.min\.json" "$tk" || fail "no replay of the minimal plan in the ticket"
mline=$(grep -n "### Minimized" "$tk" | cut -d: -f1)
tline=$(grep -n "Turn outcomes\|Fault trace" "$tk" | head -n 1 | cut -d: -f1)
[ -n "$tline" ] || fail "the ticket has no full trace"
[ "$mline" -lt "$tline" ] || fail "the minimized story (line $mline) is not above the full trace (line $tline)"
ok "ticket $(basename "$tk"): story at line $mline, the full trace from line $tline"
# report.html shows it too: the counts, the story, a link to the plan
H=$T/run/report.html
[ -s "$H" ] || fail "the run wrote no report.html"
grep -qF "minimized before filing: turns 4 → 2" "$H" || fail "report.html does not say it was minimized"
grep -qF "<h4>the minimized story</h4>" "$H" || fail "report.html has no minimized story"
grep -qF "href=\"failures/$smallest/plan.min.json\"" "$H" || fail "report.html does not link the minimized plan"

phase "a budget too small: the smallest failing plan so far, said so"
cfg tight 1s
soak_rc rc run "$T/tight.yaml" --workers 1 --out "$T/tight" >/dev/null 2>"$T/tight.err"
[ "$rc" -eq 1 ] || { tail -n 30 "$T/tight.err"; fail "tight run exit $rc, not 1"; }
M=$(jq -c '.results[] | select(.minimized != null) | .minimized' "$T/tight/report.json")
expect_eq "outcome under a 1 s budget" '"stopped"' "$(jq -c .outcome <<<"$M")"
[ -s "$T/tight/failures/$(jq '.results[] | select(.minimized != null) | .seed' "$T/tight/report.json")/plan.min.json" ] ||
    fail "a stopped minimization wrote no plan"
grep -qF "Minimized (stopped by tickets.minimize_budget" "$T/tight/tickets"/*.md || fail "the ticket does not say the minimization stopped"
ok "1 s budget: stopped, $(jq -r .summary <<<"$M")"

phase "soak pin --minimized: the minimal plan as a regression, and it fails"
soak_rc rc pin "$T/run" --seed "$smallest" --minimized >"$T/pin.out" 2>&1
[ "$rc" -eq 0 ] || fail "pin --minimized: exit $rc: $(cat "$T/pin.out")"
reg=$(sed -n 's/^pinned seed [0-9]* as regression \([^:]*\): .*/\1/p' "$T/pin.out")
case $reg in seed-"$smallest"-*-min) ;; *) fail "the minimized regression's name: \"$reg\"" ;; esac
expect_eq "the pinned plan's runs" "$(jq -c .runs "$T/run/failures/$smallest/plan.min.json")" \
    "$(jq -c .runs "$T/regressions/$reg.json")"
# the same plan through the second form, under a name of its own
soak_rc rc pin "$T/min.yaml" --plan "$T/run/failures/$smallest/plan.min.json" --name by-plan >"$T/pin2.out" 2>&1
[ "$rc" -eq 0 ] || fail "pin CONFIG --plan: exit $rc: $(cat "$T/pin2.out")"
grep -qF "it failed with counter|invariant|$INV" "$T/pin2.out" || fail "pin --plan does not say the failure: $(cat "$T/pin2.out")"
# a plan that records no failure pins nothing
jq 'del(.failure)' "$T/run/failures/$smallest/plan.min.json" >"$T/nofail.json"
soak_rc rc pin "$T/min.yaml" --plan "$T/nofail.json" --name nofail >"$T/pin3.out" 2>&1
expect_eq "pin of a plan without a failure" 65 "$rc"
[ ! -e "$T/regressions/nofail.json" ] || fail "a plan without a failure was pinned"
# a later run of the config runs both before its seed, and both fail
sched_cfg "$T/later.yaml" counter 4 "$T/counter.sql" "[$T/percmd.sh]" "seeds: 0..0"
soak_rc rc run "$T/later.yaml" --workers 1 --out "$T/later" >/dev/null 2>"$T/later.err"
[ "$rc" -eq 1 ] || { tail -n 20 "$T/later.err"; fail "the later run: exit $rc, not 1"; }
expect_eq "regressions failing in the later run" '["by-plan","'"$reg"'"]' \
    "$(jq -c '[.regressions[] | select(.verdict == "fail") | .name] | sort' "$T/later/report.json")"
ok "pinned as $reg and by-plan: the later run fails both"
