# A config mistake is not retried as infrastructure (docs/results.md "Config
# errors stop a run early"): a turn command that is not there, an invariant
# naming a column that does not exist, a schema file that does not parse --
# the first seeds all fail the same way on their first attempt, and the run
# stops there with exit 78 and one line naming FILE:LINE:COL and the key, the
# seeds not run listed as missing.  A journal's --resume stops in the same
# place.  A failure that may be transient (a turn's exit 75) runs to the end.
. "$(dirname "$0")/lib.sh"

cd "$T"
printf 'CREATE TABLE r (id int, amount int);\n' >schema.sql
printf '#!/bin/sh\nexit 0\n' >turn.sh
chmod +x turn.sh
cfg() {	# file, turn command, invariant sql, schema file
	cat >"$1" <<YAML
name: early
seeds: 0..39
turns: 2
confirm: false
database:
  schema: $4
turn:
  command: $2
invariants:
  - name: no negative amount
    sql: $3
YAML
}

# stopped OUT STATUS WHAT: the run in OUT stopped early with STATUS, far
# short of 40 seeds x 3 attempts; every seed is in junit, the unrun ones
# as missing; stderr said it once.
stopped() {
	local out=$1 r=$1/report.json
	expect_eq "$3: exit status" "$2" "$rc"
	expect_eq "$3: report.json exit_status" "$2" "$(jq .exit_status "$r")"
	expect_eq "$3: said once" 1 "$(grep -c 'stopped early' "$out.err")"
	attempts=$(jq '[.results[].attempts | length] | add' "$r")
	[ "$attempts" -le 8 ] || fail "$3: $attempts attempts before it stopped"
	ok "$3: stopped after $attempts attempt(s) (40 seeds x 3 without the stop)"
	expect_eq "$3: halted" true "$(jq '.halted | type == "string"' "$r")"
	expect_eq "$3: the rest are missing" 40 "$(jq '.totals.missing + (.results | length)' "$r")"
	[ "$(jq .totals.missing "$r")" -ge 30 ] || fail "$3: only $(jq .totals.missing "$r") missing"
	expect_eq "$3: missing_seeds names them" "$(jq .totals.missing "$r")" \
	    "$(jq '[.missing_seeds[] | split("..") | map(tonumber) | (last - first + 1)] | add' "$r")"
	expect_eq "$3: a config_error on every result" 0 \
	    "$(jq '[.results[] | select(.config_error == null)] | length' "$r")"
	expect_eq "$3: junit testcases" 40 "$(xmllint --xpath 'count(//testcase)' "$out/junit.xml")"
	expect_eq "$3: junit missing" "$(jq .totals.missing "$r")" \
	    "$(xmllint --xpath 'count(//testcase/error[@type="missing"])' "$out/junit.xml")"
	junit_totals "$out"
}

# --- a turn command that is not there ---
cfg exec.yaml ./redeem.sh 'SELECT id FROM r WHERE amount < 0' schema.sql
t0=$SECONDS
soak_rc rc run exec.yaml --workers 2 --out out-exec >out-exec.out 2>out-exec.err
cat out-exec.err
stopped out-exec 78 "missing turn command"
expect_match "the line names the key and the file's place" \
    "^soak: the run stopped early: a config error on the first 3 seed\(s\), which no retry mends: exec\.yaml:8:12: turn\.command: $T/redeem\.sh: No such file or directory$" \
    "$(cat out-exec.err)"
expect_eq "the config error's code" ENOENT "$(jq -r '.results[0].config_error.code' out-exec/report.json)"
expect_match "the summary says no replay, but the fix" 'the config error below; soak check exec.yaml' "$(cat out-exec.out)"
ok "stopped in $((SECONDS - t0)) s"

# --resume of the stopped run stops at once, in the same place.
jq -c '[.results[] | [.seed, (.attempts|length)]], .missing_seeds' out-exec/report.json >first.json
soak_rc rc run exec.yaml --workers 2 --resume out-exec >out-resume.out 2>out-resume.err
expect_eq "resumed: exit status" 78 "$rc"
expect_eq "resumed: the same results, nothing more run" "$(cat first.json)" \
    "$(jq -c '[.results[] | [.seed, (.attempts|length)]], .missing_seeds' out-exec/report.json)"
expect_match "resumed: the same line" "stopped early: .*turn\.command: $T/redeem\.sh" "$(cat out-resume.err)"

# --- an invariant naming a column that does not exist ---
cfg column.yaml '[./turn.sh]' 'SELECT id FROM r WHERE r.amout < 0' schema.sql
soak_rc rc run column.yaml --workers 2 --out out-column >/dev/null 2>out-column.err
cat out-column.err
stopped out-column 78 "undefined column"
expect_match "the line points into the SQL" \
    'column\.yaml:11:33: invariants\[0\]\.sql: column r\.amout does not exist$' "$(cat out-column.err)"
expect_eq "its SQLSTATE" 42703 "$(jq -r '.results[0].config_error.code' out-column/report.json)"

# --- a schema file that does not parse ---
printf 'CREATE TABL r (id int);\n' >bad.sql
cfg ddl.yaml '[./turn.sh]' 'SELECT 1 WHERE false' bad.sql
soak_rc rc run ddl.yaml --workers 2 --out out-ddl >/dev/null 2>out-ddl.err
stopped out-ddl 78 "schema syntax error"
expect_match "the line names the schema file's line" \
    'ddl\.yaml:6:11: database\.schema: bad\.sql:1: syntax error at or near "TABL"' "$(cat out-ddl.err)"

# --- a failure that may be transient runs to the end, retries and all ---
cfg temp.yaml "[sh, -c, 'exit 75']" 'SELECT 1 WHERE false' schema.sql
sed -i 's/^seeds: 0..39/seeds: 0..5/' temp.yaml
soak_rc rc run temp.yaml --workers 2 --out out-temp >/dev/null 2>out-temp.err
expect_eq "exit 75 turns: exit status" 2 "$rc"
check_report out-temp 0 5
expect_eq "exit 75 turns: not halted" null "$(jq .halted out-temp/report.json)"
expect_eq "exit 75 turns: every seed tried 3 times" '[3,3,3,3,3,3]' \
    "$(jq -c '[.results[].attempts | length]' out-temp/report.json)"
grep -q 'stopped early' out-temp.err && fail "a transient failure stopped the run"
ok "exit 75 is retried as infra, never a config error"
echo "early_stop: ok"
