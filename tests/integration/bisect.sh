# git bisect with a minimized plan (docs/minimize.md "Bisecting with a
# minimized plan"): on a throwaway git
# repository of a system under test whose history is good, unrelated,
# LOCK TABLE dropped (the race comes in), unrelated, a failing seed of the
# newest commit is minimized, and `git bisect run soak replay CONFIG --plan
# FILE` finds the commit that dropped the lock, with no commit skipped: a
# good commit's turns block on the lock the plan does not know, and the
# replay's lock-deferral rule lets the holder go first (no divergence, no
# exit 125); its extra statement is an unplanned exchange.  The turns are
# bash + one psql session each, a transaction per turn, \gset between the
# read and the write.
. "$(dirname "$0")/lib.sh"
command -v psql >/dev/null || fail "psql is not installed (make deps)"
command -v git >/dev/null || fail "git is not installed (make deps)"

R=$T/repo
mkdir -p "$R"
git -C "$R" init -q
git -C "$R" config user.email soak@test.invalid
git -C "$R" config user.name "soak test"
counter_schema "$R/schema.sql"
# relative paths: each commit's own files
sched_cfg "$R/soak.yaml" counter 2 schema.sql "[./turn.sh]" "seeds: 0..19"
turn() {	# LOCK-LINE COMMENT
	cat >"$R/turn.sh" <<SH
#!/bin/bash
# $2
set -eu
psql -X -q -v ON_ERROR_STOP=1 -v turn="\$SOAK_TURN" <<'SQL'
BEGIN;
$1
SELECT n AS old FROM counter WHERE id = 1 \\gset
UPDATE counter SET n = :old + 1 WHERE id = 1;
INSERT INTO events (turn) VALUES (:turn);
COMMIT;
SQL
SH
	chmod +x "$R/turn.sh"
}
commit() { git -C "$R" add -A && git -C "$R" commit -qm "$1" && git -C "$R" rev-parse HEAD; }
turn "LOCK TABLE counter IN SHARE ROW EXCLUSIVE MODE;" "claims a counter slot"
good=$(commit "a counter, its claims serialized by a table lock")
turn "LOCK TABLE counter IN SHARE ROW EXCLUSIVE MODE;" "claims a counter slot, one transaction"
c2=$(commit "turn.sh: say what it does")
turn "" "claims a counter slot, one transaction"
bad=$(commit "turn.sh: the table lock is slow, drop it")
turn "" "claims a counter slot, one transaction (no lock: it is fast now)"
head=$(commit "turn.sh: a comment")

phase "a failing seed of the newest commit, minimized"
soak_rc rc run "$R/soak.yaml" --workers 2 --out "$T/run" >/dev/null 2>"$T/run.err"
[ "$rc" -eq 1 ] || { tail -n 20 "$T/run.err"; fail "the newest commit's run: exit $rc, not 1"; }
seed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/run/report.json")
soak_rc rc minimize "$R/soak.yaml" --plan "$T/run/failures/$seed/plan.json" --out "$T/min.json" \
    --explain 0 >"$T/min.out" 2>&1
[ "$rc" -eq 0 ] || { tail -n 20 "$T/min.out"; fail "minimize: exit $rc, not 0"; }
expect_eq "the minimal plan's turns" 2 "$(jq '.runs | length' "$T/min.json")"
ok "seed $seed minimized: $(grep -m1 '^turns ' "$T/min.out" || sed -n '/^1-minimal/{n;n;p}' "$T/min.out")"

phase "a good commit replays the plan to a pass, not a divergence"
git -C "$R" checkout -q "$c2"
soak_rc rc replay "$R/soak.yaml" --plan "$T/min.json" >"$T/good.out" 2>&1
[ "$rc" -eq 0 ] || { tail -n 30 "$T/good.out"; fail "the plan at a good commit: exit $rc, not 0 (125: diverged)"; }
grep -qiE "deferr|lock" "$T/good.out" || fail "the good replay says nothing of the lock it waited on: $(tail "$T/good.out")"
git -C "$R" checkout -q "$head"
ok "at $(git -C "$R" rev-parse --short "$c2"): exit 0"

phase "git bisect run soak replay --plan"
git -C "$R" bisect start "$head" "$good" >"$T/bisect.start" 2>&1 || fail "git bisect start: $(cat "$T/bisect.start")"
set +e
git -C "$R" bisect run "$SOAK" replay "$R/soak.yaml" --plan "$T/min.json" >"$T/bisect.out" 2>&1
brc=$?
set -e
git -C "$R" bisect log >"$T/bisect.log" 2>&1 || true
git -C "$R" bisect reset >/dev/null 2>&1 || true
[ "$brc" -eq 0 ] || { tail -n 30 "$T/bisect.out"; fail "git bisect run: exit $brc"; }
grep -qE "^$bad is the first bad commit" "$T/bisect.out" ||
    fail "bisect did not name the commit that dropped the lock ($bad): $(grep -E 'first bad|skip' "$T/bisect.out")"
! grep -q "^git bisect skip" "$T/bisect.log" || fail "bisect skipped a commit: $(cat "$T/bisect.log")"
ok "git bisect run: the first bad commit is $(git -C "$R" log -1 --format='%h %s' "$bad"), none skipped"
