# Fixture rows in the schema file (INSERTs after the CREATEs) are part of
# the state every seed starts from, under both resets: a run of 6 seeds on
# one worker (so truncate reuses the schema 5 times) passes every seed, and
# a replay (fresh schema) gives the same verdict as the run.
. "$(dirname "$0")/lib.sh"

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE coupons (id serial PRIMARY KEY, code text NOT NULL UNIQUE,
    redeemed bool NOT NULL DEFAULT false);
CREATE TABLE redemptions (id bigint GENERATED ALWAYS AS IDENTITY,
    coupon int NOT NULL REFERENCES coupons(id));
INSERT INTO coupons (code) VALUES ('WELCOME'), ('SPRING'), ('LOYAL');
SQL
# Redeems one coupon; exits 0 only if a fixture coupon was there to redeem.
cat >"$T/redeem.sh" <<'SH'
#!/bin/sh
id=$(psql -qtAX -v ON_ERROR_STOP=1 -c "WITH c AS (UPDATE coupons SET
    redeemed = true WHERE id = (SELECT id FROM coupons WHERE NOT redeemed
    ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id)
    INSERT INTO redemptions (coupon) SELECT id FROM c RETURNING coupon") ||
    exit 1
[ -n "$id" ]
SH
chmod +x "$T/redeem.sh"

for reset in truncate recreate; do
	cat >"$T/$reset.yaml" <<YAML
name: fixtures-$reset
seeds: 0..5
turns: 1
rounds: 1
database:
  schema: schema.sql
  reset: $reset
turn:
  command: [./redeem.sh]
invariants:
  - name: a coupon is redeemed at most once
    sql: SELECT coupon FROM redemptions GROUP BY coupon HAVING count(*) > 1
guard:
  min_ok_turns: 100%
YAML
	soak_rc rc run "$T/$reset.yaml" --workers 1 --out "$T/out-$reset" \
	    >"$T/$reset.out" 2>"$T/$reset.err"
	tail -n 3 "$T/$reset.out"
	R=$T/out-$reset/report.json
	expect_eq "$reset: run exit status" 0 "$rc"
	expect_eq "$reset: seeds that passed (of 6)" 6 "$(jq .totals.pass "$R")"
	expect_eq "$reset: verdicts" '["pass"]' \
	    "$(jq -c '[.results[].verdict] | unique' "$R")"
	expect_eq "$reset: verdict of seed 3 in the run" pass \
	    "$(jq -r '.results[] | select(.seed == 3) | .verdict' "$R")"

	soak_rc rc replay "$T/$reset.yaml" --seed 3 >"$T/replay-$reset.out" 2>&1
	expect_eq "$reset: replay of seed 3 exit status" 0 "$rc"
	expect_match "$reset: replay of seed 3 gives the run's verdict" \
	    'verdict: pass' "$(cat "$T/replay-$reset.out")"
	expect_match "$reset: replay resets with $reset" "reset schema .*\($reset\)" \
	    "$(cat "$T/replay-$reset.out")"
done
