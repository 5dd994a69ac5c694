# soak replay's output and files (docs/results.md "Replaying a seed"): a
# --seed that is missing or overflows is a usage error that says so; replay
# says where it writes; a turn's end reads as words; a workspace that cannot
# be moved into --out is said to stay where it is, and stays; and --keep's
# hint, run as printed against a database of the test's own (a password,
# SCRAM), opens psql on the kept schema and stays there (not -c 'SET ...',
# which runs and exits).
. "$(dirname "$0")/lib.sh"

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE items (id serial PRIMARY KEY, who text NOT NULL);
INSERT INTO items (who) VALUES ('fixture');
SQL
# Turn 0 adds a row and exits 0, turn 1 exits 3, turn 2 blocks until its
# turn.timeout kills it (no clock in the test: the kill is soak's).
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
case $SOAK_TURN in
0) psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO items (who) VALUES ('turn 0')";;
1) exit 3;;
2) exec tail -f /dev/null;;
esac
SH
chmod +x "$T/turn.sh"
cat >"$T/r.yaml" <<'YAML'
name: replay-output
seeds: 0..0
turns: 3
database:
  schema: schema.sql
turn:
  command: [./turn.sh]
  timeout: 2s
invariants:
  - name: only the fixture
    sql: SELECT id, who FROM items WHERE who <> 'fixture'
YAML
cd "$T"

# --- usage ---
soak_rc rc replay r.yaml 2>noseed.err
expect_eq "no --seed: usage" 64 "$rc"
expect_match "no --seed: says what is missing" '^soak replay: which seed\? --seed N or --plan FILE is required' \
    "$(cat noseed.err)"
soak_rc rc replay r.yaml --seed 18446744073709551616 2>over.err
expect_eq "a seed past 2^64-1: usage" 64 "$rc"
expect_eq "a seed past 2^64-1: said so" \
    "soak replay: --seed: 18446744073709551616 is larger than the largest seed, 18446744073709551615 (seeds are 64-bit)" \
    "$(cat over.err)"
soak_rc rc replay r.yaml --seed 0x10 2>hex.err
expect_eq "a seed not in decimal: usage" 64 "$rc"
expect_match "a seed not in decimal: said so" '"0x10" is not a seed' "$(cat hex.err)"

# --- a failing seed: where it writes, the turns in words, the message ---
soak_rc rc replay r.yaml --seed 0 >fail.out 2>&1
cat fail.out
expect_eq "replay of the failing seed" 1 "$rc"
expect_match "replay says where it writes" \
    '^  writes into \./soak-replay/ \(a failing seed.s workspace: failures/0/workspace; --out DIR for another folder\)$' \
    "$(cat fail.out)"
expect_match "a turn that exited 0" 'round 0 turn 0: ok \(started at' "$(cat fail.out)"
expect_match "a turn that exited 3" 'round 0 turn 1: exited 3 \(started at' "$(cat fail.out)"
expect_match "a turn killed at turn.timeout" 'round 0 turn 2: timed out \(killed at turn\.timeout\) \(started at' \
    "$(cat fail.out)"
expect_match "the verdict names the invariant and quotes its row" \
    'verdict: fail invariant — "only the fixture" \(1 row\) broken after round 0; the first row: id=2, who=turn 0$' \
    "$(cat fail.out)"
expect_match "the workspace is where it said" '^workspace kept: .*/soak-replay/failures/0/workspace$' \
    "$(cat fail.out)"
[ -s soak-replay/failures/0/workspace/r0-t0/stdout.log ] || [ -e soak-replay/failures/0/workspace/r0-t0 ] ||
    fail "no turn folder under soak-replay/failures/0/workspace: $(ls -R soak-replay)"
ok "the workspace is under ./soak-replay/failures/0/"

# --- a workspace that cannot be moved there: said so, and left in place ---
mkdir -p blocked/failures
: >blocked/failures/0		# a file where the seed's folder would go
soak_rc rc replay r.yaml --seed 0 --out blocked >blocked.out 2>&1
cat blocked.out
expect_eq "replay with the seed's folder blocked" 1 "$rc"
line=$(grep '^workspace NOT kept under ' blocked.out) ||
    fail "replay did not say the workspace was not kept: $(cat blocked.out)"
ok "said: $line"
left=${line##*; it stays at }
cleanup_hooks+=("rm -rf '$(dirname "$left")'")
[ -d "$left/r0-t0" ] || fail "the workspace replay said it left is not there: $left"
ok "and it is there after replay exited: $left"
[ "$(ls -A blocked/failures)" = 0 ] || fail "replay left something in blocked/failures: $(ls -A blocked/failures)"

# --- --keep against a database of the test's own, with a password ---
PGBIN=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
pgdir=$(mktemp -d /tmp/soak-replay-pg.XXXXXX)
chmod 755 "$pgdir"
chown postgres "$pgdir"
cleanup_hooks+=("runuser -u postgres -- '$PGBIN/pg_ctl' -D '$pgdir/data' -m immediate stop >/dev/null 2>&1; rm -rf '$pgdir'")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd / && runuser -u postgres -- "$PGBIN/initdb" -D "$pgdir/data" -U postgres --auth-local=trust \
    --auth-host=scram-sha-256 >/dev/null)
(cd / && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$pgdir/data" -w -t 30 -l "$pgdir/pg.log" \
    -o "-k $pgdir -p $port -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null)
psql -X -q -h "$pgdir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE keeper LOGIN PASSWORD 'k33p-s3cret' CREATEDB" >/dev/null
psql -X -q -h "$pgdir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE DATABASE kept OWNER keeper" >/dev/null
url="postgresql://keeper:k33p-s3cret@127.0.0.1:$port/kept"
SOAK_DATABASE_URL=$url soak_rc rc replay r.yaml --seed 0 --keep --out kept </dev/null >keep.out 2>&1
cat keep.out
expect_eq "replay --keep on a database of the test's own" 1 "$rc"
grep -q 'k33p-s3cret' keep.out && fail "the password reached replay's output"
ok "no password in replay's output"
expect_match "the password is left to psql" 'password is not shown: give it to psql' "$(cat keep.out)"
cmd=$(sed -n 's/^    \(psql .*\)$/\1/p' keep.out)
ws=$(sed -n "s/^workspace kept: //p" keep.out)
case $ws in /dev/shm/soak-replay-*/seed-0) cleanup_hooks+=("rm -rf '$(dirname "$ws")'");; esac
expect_match "the hint is one psql command on the kept schema" \
    "^psql '.*host=127\\.0\\.0\\.1 port=$port .*options=-csearch_path=soak_replay[0-9]+_w1'\$" "$cmd"
schema=$(grep -oE 'search_path=[a-z0-9_]+' <<<"$cmd" | cut -d= -f2)
# Run as printed, reading its statements from stdin as a person types
# them: it lands in the kept schema and stays for every statement.
got=$(PGPASSWORD=k33p-s3cret eval "$cmd -XAtq" <<'SQL'
SHOW search_path;
SELECT string_agg(who, ',' ORDER BY id) FROM items;
SELECT count(*) FROM items;
SQL
)
expect_eq "the hint, run: the kept schema, its rows, for every statement" \
    "$schema
fixture,turn 0
2" "$got"

# --- a row that holds the password: the message quotes it scrubbed ---
cat >leak.yaml <<'YAML'
name: leak
seeds: 0..0
turns: 1
database:
  schema: schema.sql
turn:
  command: [sh, -c, "psql -X -q -v ON_ERROR_STOP=1 -c \"INSERT INTO items (who) VALUES ('pw $PGPASSWORD')\""]
invariants:
  - name: only the fixture
    sql: SELECT id, who FROM items WHERE who <> 'fixture'
YAML
SOAK_DATABASE_URL=$url soak_rc rc run leak.yaml --out leak.out >leak.stdout 2>leak.stderr
cat leak.stdout
expect_eq "run of a turn that stores its password" 1 "$rc"
msg=$(jq -r '.results[0].message' leak.out/report.json)
expect_eq "report.json's message: the row quoted, the password as ***" \
    '"only the fixture" (1 row) broken after round 0; the first row: id=2, who=pw ***' "$msg"
expect_eq "junit's failure message: the same" "$msg" \
    "$(xmllint --xpath 'string(//testcase/failure/@message)' leak.out/junit.xml)"
expect_match "the summary's line under the group: the same" "^        $(sed 's/[]\[().*^$]/\\&/g' <<<"$msg")\$" \
    "$(cat leak.stdout)"
# The rows themselves, as they leave the worker: the summary shows them,
# report.json and junit.xml hold them.
grep -rl 'k33p-s3cret' leak.stdout leak.out/report.json leak.out/junit.xml &&
    fail "the password reached the summary, report.json or junit.xml"
ok "no password in the summary, report.json or junit.xml"
expect_eq "report.json's row: scrubbed" '["2","pw ***"]' \
    "$(jq -c '.results[0].invariants[0].rows[0]' leak.out/report.json)"
echo "replay_output: ok"
