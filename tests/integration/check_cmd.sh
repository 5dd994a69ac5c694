# soak check refuses configs that load but cannot run (docs/config.md "soak
# check"), telling every problem at once as FILE:LINE:COL: KEY: what, exit
# 78: a turn command that is not there, a one-string command with a space (a
# warning: it is one program name), invariants that do not parse or name a
# column that does not exist (prepared on a throwaway embedded PostgreSQL,
# after the schema file and setup, whose tables they may name), a schema file
# with a syntax error, a setup that fails, a tab in the indentation.  With
# --db, against a PostgreSQL of the test's own, it writes nothing -- no
# schema, no table, no setup -- and still tells an invariant that does not
# parse, running none.
. "$(dirname "$0")/lib.sh"

cd "$T"
printf 'CREATE TABLE r (id int, amount int);\n' >schema.sql
# setup makes a table an invariant names: the check must run it first.
cat >setup.sh <<'SH'
#!/bin/sh
touch "$SOAK_CONFIG_DIR/setup-ran"
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE TABLE made_by_setup (x int)'
SH
chmod +x setup.sh
printf '#!/bin/sh\nexit 0\n' >turn.sh
chmod +x turn.sh

# --- everything at once ---
cat >broken.yaml <<'YAML'
name: broken
database:
  schema: schema.sql
setup: "bash setup.sh"
turn:
  command: [./redeem.sh, --fast]
invariants:
  - name: fine, and names what setup made
    sql: SELECT x FROM made_by_setup WHERE false
  - name: a typo in a column
    sql: |
      SELECT r.id
        FROM r WHERE r.idd > 0
  - name: does not parse
    sql: SELEC id FROM r
YAML
soak_rc rc check broken.yaml >broken.out 2>broken.err
cat broken.err
expect_eq "check of a broken config" 78 "$rc"
has() {	# what, fixed string, file
	grep -qxF -- "$2" "$3" || fail "$1: no line '$2' in $3: $(cat "$3")"
	ok "$1"
}
has "the missing turn command" \
    "broken.yaml:6:12: turn.command: $T/redeem.sh: No such file or directory" broken.err
has "one string with a space: warned" \
    'broken.yaml:4:8: setup: warning: "bash setup.sh" is one program name, spaces and all: a command written as one string is never split; for a program and its arguments write a list: [bash, setup.sh]' broken.err
expect_match "and refused: no such program" \
    '^broken\.yaml:4:8: setup: bash setup\.sh: not found on PATH \(' "$(cat broken.err)"
has "the undefined column, where it stands" \
    "broken.yaml:13:22: invariants[1].sql: column r.idd does not exist" broken.err
has "the syntax error" \
    'broken.yaml:15:10: invariants[2].sql: syntax error at or near "SELEC"' broken.err
# setup could not run, so the table it makes is not there: said so.
has "the table setup would make, and why it is missing" \
    'broken.yaml:9:24: invariants[0].sql: relation "made_by_setup" does not exist (setup failed: if it makes that table, mend setup first)' broken.err
expect_eq "every error, in one go" 5 \
    "$(grep -E '^broken\.yaml:[0-9]+:[0-9]+: ' broken.err | grep -vc ': warning: ')"
has "and how many" "soak check: broken.yaml: 5 error(s), and warnings" broken.err
[ ! -s broken.out ] || fail "a broken config was called ok: $(cat broken.out)"

# Fixed but for the setup as a list: setup runs, its table is there, every
# invariant prepares -- and a string with a space that is a real file name
# is only a warning.
printf '#!/bin/sh\nexit 0\n' >"my turn.sh"
chmod +x "my turn.sh"
sed -e 's|setup: "bash setup.sh"|setup: [./setup.sh]|' \
    -e 's|command: \[./redeem.sh, --fast\]|command: ./my turn.sh|' \
    -e 's|r.idd|r.id|' -e 's|SELEC id|SELECT id|' broken.yaml >good.yaml
soak_rc rc check good.yaml >good.out 2>good.err
cat good.err good.out
expect_eq "check of the fixed config" 0 "$rc"
expect_match "ok, with a warning" '^good\.yaml: ok \(broken: .*\), with warnings$' "$(cat good.out)"
has "the warning" \
    'good.yaml:6:12: turn.command: warning: "./my turn.sh" is one program name, spaces and all: a command written as one string is never split; for a program and its arguments write a list: [./my, turn.sh]' good.err
[ -e setup-ran ] || fail "setup did not run in the check"
ok "setup ran, in the check's own throwaway database"
rm -f setup-ran

# --- a schema file that does not parse; a setup that fails ---
printf 'CREATE TABLE r (id int);\nCREATE TABL s (x int);\n' >bad-schema.sql
sed -e 's|schema: schema.sql|schema: bad-schema.sql|' good.yaml >ddl.yaml
soak_rc rc check ddl.yaml >/dev/null 2>ddl.err
cat ddl.err
expect_eq "check of a schema file that does not parse" 78 "$rc"
has "the DDL error, at database.schema, with the file's line" \
    'ddl.yaml:3:11: database.schema: bad-schema.sql:2: syntax error at or near "TABL"' ddl.err
printf '#!/bin/sh\necho "no fixtures for seed $SOAK_SEED" >&2\nexit 3\n' >fail-setup.sh
chmod +x fail-setup.sh
sed -e 's|setup: \[./setup.sh\]|setup: [./fail-setup.sh]|' good.yaml >setup.yaml
soak_rc rc check setup.yaml >/dev/null 2>setup.err
cat setup.err
expect_eq "check with a setup that fails" 78 "$rc"
has "setup's exit and stderr" \
    'setup.yaml:4:8: setup: exited 3 in a dry run of seed 0 (the schema applied); its stderr ends: no fixtures for seed 0' setup.err

# --- YAML that is not: what the user did, where ---
printf 'name: tabs\nturn:\n\tcommand: [./turn.sh]\ninvariants:\n  - name: i\n    sql: SELECT 1\n' >tab.yaml
soak_rc rc check tab.yaml 2>tab.err
expect_eq "check of a tab in the indentation" 78 "$rc"
has "the tab, said as such" \
    'tab.yaml:3:1: YAML: a tab in the indentation: YAML indents with spaces only' tab.err

# --- YAML-level mistakes: every one at once, in file order ---
cat >keys.yaml <<'YAML'
name: keys
turns: many
sedes: 4
turn:
  command: [./turn.sh]
  timout: 5s
invariants:
  - name: i
    sql: SELECT 1
tickets:
  infra: maybe
YAML
soak_rc rc check keys.yaml 2>keys.err
expect_eq "check of four wrong keys and values" 78 "$rc"
expect_eq "all four told, in file order" \
    "keys.yaml:2:8: turns: expected an integer, got \"many\"
keys.yaml:3:1: sedes: unknown key, did you mean seeds?
keys.yaml:6:3: turn.timout: unknown key, did you mean timeout?
keys.yaml:11:10: tickets.infra: expected true or false, got \"maybe\"
soak check: keys.yaml: 4 error(s)" \
    "$(cat keys.err)"
# soak run reads the config the same way: the same four, nothing started.
soak_rc rc run keys.yaml --out keys.out 2>keys.run.err
expect_eq "run of the same config" 78 "$rc"
expect_eq "run tells the same four" "$(grep -v '^soak check: ' keys.err | sed 's/^/soak: /')" \
    "$(cat keys.run.err)"

# --- a mistake of the file hides nothing after it: an
# unknown key, a duration without its unit, a turn command that is not
# there and SQL that does not parse, in one pass and in file order; the
# invariant that loaded is prepared after the schema the file names. ---
cat >mixed.yaml <<'YAML'
name: mixed
database:
  schema: schema.sql
  rest: truncate
turn:
  command: [./no-such-turn]
  timeout: 5
invariants:
  - name: does not parse
    sql: SELEC id FROM r
  - name: names a column r lacks
    sql: SELECT r.nope FROM r
  - name: fine
    sql: SELECT id FROM r WHERE amount < 0
YAML
soak_rc rc check mixed.yaml >mixed.out 2>mixed.err
cat mixed.err
expect_eq "check of a config that does not load, and more" 78 "$rc"
expect_eq "the file's mistakes, the command's and the SQL's, in file order" \
    "mixed.yaml:4:3: database.rest: unknown key, did you mean reset?
mixed.yaml:6:12: turn.command: $T/no-such-turn: No such file or directory
mixed.yaml:7:12: turn.timeout: \"5\" has no unit (use ms, s or m)
mixed.yaml:10:10: invariants[0].sql: syntax error at or near \"SELEC\"
mixed.yaml:12:17: invariants[1].sql: column r.nope does not exist
soak check: mixed.yaml: 5 error(s)" "$(cat mixed.err)"
# soak run tells the file's and the command's, and starts nothing.
soak_rc rc run mixed.yaml --out mixed.run 2>mixed.run.err
expect_eq "run of it" 78 "$rc"
expect_eq "run: the file's mistakes and the command's, in file order" \
    "soak: mixed.yaml:4:3: database.rest: unknown key, did you mean reset?
soak: mixed.yaml:6:12: turn.command: $T/no-such-turn: No such file or directory
soak: mixed.yaml:7:12: turn.timeout: \"5\" has no unit (use ms, s or m)" "$(cat mixed.run.err)"
[ ! -e mixed.run ] || fail "a config that does not load left an output directory"
# An invariant that failed to load is not prepared; the schema section's
# own mistake leaves the SQL unchecked, said as a note, not an error.
printf 'name: noschema\ndatabase:\n  schema: missing.sql\nturn: {command: [./turn.sh]}\ninvariants:\n  - {name: i, sql: SELEC 1}\n' >noschema.yaml
soak_rc rc check noschema.yaml 2>noschema.err
cat noschema.err
expect_eq "check of a missing schema file" 78 "$rc"
expect_match "the schema file" \
    '^noschema\.yaml:3:11: database\.schema: "missing\.sql": No such file' "$(cat noschema.err)"
expect_match "and the SQL not checked against nothing, said so" \
    '^soak check: the SQL was not checked: database\.schema did not load$' "$(cat noschema.err)"
expect_eq "one error, not the invariant's" 1 "$(grep -c '^noschema\.yaml:' noschema.err)"

# --- an alias bomb: refused at the first alias, before anything walks it ---
{
	printf 'name: bomb\nturn: {command: [./turn.sh]}\ninvariants: [{name: i, sql: SELECT 1}]\n'
	printf 'l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n'
	for i in 1 2 3 4 5 6 7 8 9; do
		p=$((i - 1))
		printf 'l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n' \
		    "$i" "$i" "$p" "$p" "$p" "$p" "$p" "$p" "$p" "$p" "$p" "$p"
	done
} >bomb.yaml
# 10^10 values if walked: a watchdog, not a clock, tells a walk from a refusal.
rc=0; timeout 60 "$SOAK_BIN" check bomb.yaml 2>bomb.err || rc=$?
expect_eq "check of an alias bomb (124: still walking it after 60 s)" 78 "$rc"
expect_match "the first alias, where it stands" \
    '^bomb\.yaml:5:10: YAML: an alias \(\*l0\): soak does not expand aliases' "$(cat bomb.err)"

# --- --db: a production database, read only ---
PGBIN=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
pgdir=$(mktemp -d /tmp/soak-check-pg.XXXXXX)
chmod 755 "$pgdir"
chown postgres "$pgdir"
cleanup_hooks+=("runuser -u postgres -- '$PGBIN/pg_ctl' -D '$pgdir/data' -m immediate stop >/dev/null 2>&1; rm -rf '$pgdir'")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd / && runuser -u postgres -- "$PGBIN/initdb" -D "$pgdir/data" -U postgres --auth=trust >/dev/null)
(cd / && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$pgdir/data" -w -t 30 -l "$pgdir/pg.log" \
    -o "-k $pgdir -p $port -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null)
q() { psql -X -q -t -A -h "$pgdir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$1"; }
q "CREATE TABLE r (id int, amount int); INSERT INTO r VALUES (1, -5), (2, 7)"
url="postgresql://postgres@127.0.0.1:$port/postgres"
snapshot() { q "SELECT (SELECT count(*) FROM pg_namespace) || ' ' || (SELECT count(*) FROM pg_class) || ' ' || (SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = 'public'::regnamespace)"; }
before=$(snapshot)
# The broken config, setup and schema file and all: nothing of them lands.
sed -e 's|setup: "bash setup.sh"|setup: [./setup.sh]|' broken.yaml >db.yaml
soak_rc rc check db.yaml --db "$url" >db.out 2>db.err
cat db.err
expect_eq "check --db of invariants that do not parse" 78 "$rc"
has "--db: the undefined column" \
    "db.yaml:13:22: invariants[1].sql: column r.idd does not exist" db.err
has "--db: the syntax error" \
    'db.yaml:15:10: invariants[2].sql: syntax error at or near "SELEC"' db.err
has "--db: the table the production database has not" \
    'db.yaml:9:24: invariants[0].sql: relation "made_by_setup" does not exist' db.err
[ ! -s db.out ] || fail "check --db ran invariants that do not all prepare: $(cat db.out)"
expect_eq "--db wrote nothing (namespaces, relations, public's tables)" "$before" "$(snapshot)"
[ ! -e setup-ran ] || fail "check --db ran setup"
ok "check --db ran no setup"
# A monitor that works: the invariants run, read-only, the broken one shows.
cat >monitor.yaml <<'YAML'
name: monitor
turn:
  command: [./redeem.sh]
invariants:
  - name: no negative amount
    sql: SELECT id, amount FROM r WHERE amount < 0
YAML
soak_rc rc check monitor.yaml --db "$url" >mon.out 2>mon.err
cat mon.out mon.err
expect_eq "check --db of a broken invariant (the turn command is not its business)" 1 "$rc"
expect_match "the rows" 'BROKEN no negative amount \(1 row\)' "$(cat mon.out)"
expect_eq "--db wrote nothing" "$before" "$(snapshot)"

# --json tells every invariant, the holding ones too (docs/monitor.md).
cat >monitor2.yaml <<'YAML'
name: monitor
turn:
  command: [./redeem.sh]
invariants:
  - name: no negative amount
    sql: SELECT id, amount FROM r WHERE amount < 0
  - name: no amount over 100
    sql: SELECT id FROM r WHERE amount > 100
YAML
soak_rc rc check monitor2.yaml --db "$url" --json >json.out 2>json.err
cat json.out json.err
expect_eq "check --db --json, one broken" 1 "$rc"
expect_eq "--json: every invariant, in config order, with holds" \
    '[{"name":"no negative amount","holds":false,"row_count":1,"rows":[["1","-5"]]},{"name":"no amount over 100","holds":true,"row_count":0,"rows":[]}]' \
    "$(jq -c '[.[] | {name, holds, row_count, rows}]' json.out)"

# --schema that names no schema: said so, not run against another (exit 2).
soak_rc rc check monitor2.yaml --db "$url" --schema nosuch >nosuch.out 2>nosuch.err
cat nosuch.err
expect_eq "check --schema nosuch" 2 "$rc"
expect_eq "--schema nosuch: said so, with the schemas there are" \
    "soak check: --schema nosuch: the database has no such schema (its schemas: public)" "$(cat nosuch.err)"
[ ! -s nosuch.out ] || fail "check --schema nosuch ran invariants: $(cat nosuch.out)"
soak_rc rc check monitor2.yaml --db "$url" --schema public >/dev/null 2>&1
expect_eq "check --schema public" 1 "$rc"

# A role the database does not let read the table: a permission the
# monitor lacks is the database's to grant, not the config's (exit 2, not 78).
q "CREATE ROLE watcher LOGIN"
soak_rc rc check monitor2.yaml --db "postgresql://watcher@127.0.0.1:$port/postgres" >perm.out 2>perm.err
cat perm.out perm.err
expect_eq "check --db as a role without SELECT" 2 "$rc"
expect_match "and it says which permission" 'permission denied for table r' "$(cat perm.err)"
q "GRANT SELECT ON r TO watcher"
soak_rc rc check monitor2.yaml --db "postgresql://watcher@127.0.0.1:$port/postgres" >/dev/null 2>&1
expect_eq "the same role, granted SELECT" 1 "$rc"
# Rows are production data, anyone's: a terminal's escapes in them (a
# window title, a cleared screen) come out escaped, on stdout and stderr,
# and so does a schema's name the database lists.
q "CREATE TABLE notes (id int, note text); INSERT INTO notes VALUES (1, E'\\033]0;pwned\\007 \\033[2J x')"
q "CREATE SCHEMA \"$(printf 's\033[2J')\""
cat >monitor3.yaml <<'YAML'
name: monitor
turn:
  command: [./redeem.sh]
invariants:
  - name: no note
    sql: SELECT id, note FROM notes
YAML
soak_rc rc check monitor3.yaml --db "$url" >esc.out 2>esc.err
cat -v esc.out esc.err
expect_eq "check --db of a row holding escapes" 1 "$rc"
expect_match "the row, escaped" 'id=1, note=\\x1b\]0;pwned\\x07 \\x1b\[2J x' "$(cat esc.out)"
soak_rc rc check monitor2.yaml --db "$url" --schema nosuch >esc2.out 2>esc2.err
expect_match "a schema's name, escaped" 'its schemas: public, s\\x1b\[2J' "$(cat esc2.err)"
if LC_ALL=C grep -q $'[\033\007]' esc.out esc.err esc2.out esc2.err; then
	fail "a raw ESC or BEL reached the terminal: $(cat -v esc.out esc.err esc2.err)"
fi
ok "check --db: no escape sequence reaches the terminal"
echo "check_cmd: ok"
