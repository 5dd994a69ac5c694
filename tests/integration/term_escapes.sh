# A terminal's escape sequences (a window title, a cleared screen) in text
# soak did not write never reach the terminal raw (issue 38 item 3): each
# command prints them as \xNN (common/log.h log_escape_put).
#  - soak replay --plan of a plan whose statement text holds them and whose
#    step cannot come: the divergence line, the timeline and the schedule;
#  - soak pin of a plan whose fingerprint holds them: its "it failed with";
#  - soak explore of a config whose invariant's name holds them: its
#    "failing: … with" line; and of a seed whose setup says them and fails:
#    "the seed broke";
#  - soak replay of a seed whose turn prints them, and whose row holds them:
#    the timeline.
# (soak check --db's rows: check_cmd; a tracker's reply: tickets_retry.)
. "$(dirname "$0")/lib.sh"

# no_raw WHAT FILE...: no ESC and no BEL byte in the files
no_raw() {
	local what=$1; shift
	if LC_ALL=C grep -q $'[\033\007]' "$@"; then
		fail "$what: a raw ESC or BEL reached the terminal: $(cat -v "$@" | grep -a '\^\[\|\^G' | head -5)"
	fi
	ok "$what: no raw escape"
}

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO counter VALUES (1, 0);
CREATE TABLE bumps (turn int NOT NULL, note text);
SQL
cat >"$T/bump.sh" <<'SH'
#!/bin/bash
# read, write, log; the log's note and the turn's stderr hold escapes
set -e
n=$(psql -XAtq -c "SELECT n FROM counter WHERE id = 1")
psql -Xq -c "UPDATE counter SET n = $((n + 1)) WHERE id = 1"
psql -Xq -c "INSERT INTO bumps VALUES ($SOAK_TURN, E'\\033]0;pwned\\007')"
printf 'turn says \033]0;pwned\007 \033[2J\n' >&2
SH
chmod +x "$T/bump.sh"
cat >"$T/esc.yaml" <<YAML
name: esc
seeds: 0..0
turns: 2
database:
  schema: $T/schema.sql
  reset: recreate
regressions: $T/regressions
proxies:
  - name: db
    upstream: database
    protocol: postgres
    schedule:
      mode: random
turn:
  command: [$T/bump.sh]
  timeout: 20s
invariants:
  - name: "one bump each \e]0;pwned\a"
    sql: SELECT b.note, c.n FROM counter c, bumps b WHERE c.n <> (SELECT count(*) FROM bumps)
YAML
mkdir "$T/regressions"

phase "replay: a seed whose rows and stderr hold escapes"
soak_rc rc replay "$T/esc.yaml" --seed 0 --save-plan "$T/p0.json" --out "$T/r0" >"$T/r0.out" 2>&1
[ "$rc" -le 1 ] || { cat -v "$T/r0.out"; fail "replay --seed 0: exit $rc"; }
[ -s "$T/p0.json" ] || fail "replay --save-plan wrote no plan"
no_raw "replay of a seed" "$T/r0.out"

phase "replay --plan: a divergence that quotes the plan's statement"
jq '.proxies.db.steps[1].key = "00000000deadbeef" |
    .proxies.db.steps[1].what = "\u001b]0;pwned\u0007 \u001b[2J SELECT"' "$T/p0.json" >"$T/d.json"
soak_rc rc replay "$T/esc.yaml" --plan "$T/d.json" --out "$T/d" >"$T/d.out" 2>&1
expect_eq "a doctored plan: exit 125 (cannot test this)" 125 "$rc"
expect_match "the divergence quotes the statement, escaped" \
    'the plan diverged at step 2 of proxy db: .*\\x1b\]0;pwned\\x07 \\x1b\[2J SELECT' "$(cat "$T/d.out")"
no_raw "replay --plan, diverged" "$T/d.out"

phase "pin: a plan whose fingerprint holds escapes"
jq '.failure = {"fingerprint": "esc|invariant|x\u001b]0;pwned\u0007\u001b[2J"}' "$T/p0.json" >"$T/f.json"
soak_rc rc pin "$T/esc.yaml" --plan "$T/f.json" --name esc >"$T/pin.out" 2>&1
expect_eq "soak pin exit status" 0 "$rc"
expect_match "it says the fingerprint, escaped" \
    'it failed with esc\|invariant\|x\\x1b\]0;pwned\\x07\\x1b\[2J' "$(cat "$T/pin.out")"
no_raw "soak pin" "$T/pin.out"
rm -f "$T/regressions"/*

phase "explore: an invariant's name in its failing line"
soak_rc rc explore "$T/esc.yaml" --seed 0 --preemptions -1 --out "$T/x" >"$T/x.out" 2>&1
expect_eq "explore: exit 1 (the lost update)" 1 "$rc"
expect_match "the failing line, escaped" \
    '^  failing: [0-9]+ schedules? with esc\|invariant\|one bump each \\x1b\]0;pwned\\x07$' "$(cat "$T/x.out")"
no_raw "soak explore" "$T/x.out"

phase "explore: a seed that broke, its message quoted"
# a setup program that is not there, by a name that holds escapes: the
# seed is infra, its message names it
sed -e 's#^turn:#setup: ["/nonexistent/\\e]0;pwned\\a"]\nturn:#' "$T/esc.yaml" >"$T/setup.yaml"
grep -q '^setup: \["/nonexistent/' "$T/setup.yaml" || fail "the config has no failing setup"
soak_rc rc explore "$T/setup.yaml" --seed 0 --out "$T/xs" >"$T/xs.out" 2>&1
cat -v "$T/xs.out" | tail -n 5
expect_match "it says the seed broke, the name escaped" \
    'the seed broke \(infra: .*nonexistent/\\x1b\]0;pwned\\x07' "$(cat "$T/xs.out")"
no_raw "soak explore, no plan" "$T/xs.out"
ok "term_escapes"
