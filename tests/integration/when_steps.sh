# Invariants checked between steps (docs/config.md): `when: steps`.  A
# bash turn of one `psql -c` per statement takes an item out of stock and
# puts it back, so every round ends as it began: checked after the round
# (`when: rounds`, the default) nothing is ever wrong; checked between
# steps, the schedules where both turns take before either puts back leave
# the stock at -1 for a moment, and the step is named.  Checks run only
# where no turn has a transaction open: the same two updates inside one
# transaction are never checked between them.  Each check's cost is said.
. "$(dirname "$0")/lib.sh"

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE stock (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO stock VALUES (1, 1);
SQL
cat >"$T/turn.sh" <<'SH'
#!/bin/bash
set -e
psql -Xq -c "UPDATE stock SET n = n - 1 WHERE id = 1"
psql -Xq -c "UPDATE stock SET n = n + 1 WHERE id = 1"
SH
cat >"$T/tx.sh" <<'SH'
#!/bin/bash
# the same two updates in one transaction, one connection
psql -Xq -v ON_ERROR_STOP=1 <<'SQL'
BEGIN;
UPDATE stock SET n = n - 1 WHERE id = 1;
UPDATE stock SET n = n + 1 WHERE id = 1;
COMMIT;
SQL
SH
chmod +x "$T/turn.sh" "$T/tx.sh"
config() {	# NAME WHEN TURNS COMMAND
	cat >"$T/$1.yaml" <<YAML
name: stock-$1
seeds: 0..19
turns: $3
database:
  schema: $T/schema.sql
  reset: recreate
proxies:
  - name: db
    upstream: database
    protocol: postgres
    schedule:
      mode: random
turn:
  command: [$4]
  timeout: 20s
invariants:
  - name: stock never negative
    when: $2
    sql: SELECT n FROM stock WHERE n < 0
YAML
}
config rounds rounds 2 "$T/turn.sh"
config steps steps 2 "$T/turn.sh"
config ac1 steps 1 "$T/turn.sh"
config tx1 steps 1 "$T/tx.sh"

phase "explore: after the round, never; between steps, the schedules that take twice first"
soak_rc rc explore "$T/rounds.yaml" --seed 0 --preemptions -1 --out "$T/xr" >"$T/xr.out" 2>&1
expect_eq "when: rounds, every schedule: exit 0 (complete, none failed)" 0 "$rc"
expect_eq "when: rounds: C(4,2) schedules" "6 0" "$(jq -r '"\(.executions) \(.failing)"' "$T/xr/explore.json")"
soak_rc rc explore "$T/steps.yaml" --seed 0 --preemptions -1 --out "$T/xs" >"$T/xs.out" 2>&1
cat "$T/xs.out"
expect_eq "when: steps: exit 1" 1 "$rc"
expect_eq "when: steps: the 4 of 6 schedules with both takes before a put" "6 4" \
    "$(jq -r '"\(.executions) \(.failing)"' "$T/xs/explore.json")"
expect_match "the failure names the step" \
    '"stock never negative" \(1 row\) broken between steps, after step 2 of round 0; the first row: n=-1' \
    "$(jq -r '.failing_schedules[0].message' "$T/xs/explore.json")"
P=$(jq -r '.failing_schedules[0].plan' "$T/xs/explore.json")
soak_rc rc replay "$T/steps.yaml" --plan "$P" --out "$T/r1" >"$T/r1.out" 2>&1
expect_eq "its plan replays to the failure" 1 "$rc"
expect_match "the replay's timeline says where" 'check between steps, after step 2 of round 0: "stock never negative": BROKEN' "$(cat "$T/r1.out")"

phase "a run: between steps some seeds fail, after rounds none"
soak_rc rc run "$T/rounds.yaml" --out "$T/run-r" >"$T/run-r.out" 2>&1
expect_eq "when: rounds, 20 seeds: exit 0" 0 "$rc"
soak_rc rc run "$T/steps.yaml" --out "$T/run-s" >"$T/run-s.out" 2>&1
expect_eq "when: steps, 20 seeds: exit 1" 1 "$rc"
fails=$(jq .totals.fail "$T/run-s/report.json")
expect_ge "when: steps: failing seeds of 20" 1 "$fails"
echo "figures: when: steps caught $fails of 20 seeds, when: rounds 0"

phase "only where no transaction is open, and the cost said"
soak_rc rc replay "$T/ac1.yaml" --seed 0 --out "$T/r2" >"$T/r2.out" 2>&1
expect_eq "one turn, two autocommit statements: exit 0" 0 "$rc"
expect_match "one check between its two steps" '^ *[0-9.]+s  checks between steps in round 0: 1, every invariant held$' "$(cat "$T/r2.out")"
soak_rc rc replay "$T/tx1.yaml" --seed 0 --out "$T/r3" >"$T/r3.out" 2>&1
expect_eq "one turn, one transaction: exit 0" 0 "$rc"
expect_match "no check inside its transaction" '^ *[0-9.]+s  checks between steps in round 0: 0, every invariant held$' "$(cat "$T/r3.out")"

phase "a bad when"
sed 's/^    when: steps$/    when: sometimes/' "$T/steps.yaml" >"$T/bad.yaml"
soak_rc rc check "$T/bad.yaml" >"$T/bad.out" 2>&1
expect_eq "when: sometimes: exit 78" 78 "$rc"
expect_match "it names the file, line, column and key" 'bad.yaml:[0-9]+:[0-9]+: invariants\[0\]\.when' "$(cat "$T/bad.out")"
ok "when: steps"
