# Passwords never leave soak: runs against a PostgreSQL of the test's own
# with password authentication, the password in database.url (URL form)
# and in SOAK_DATABASE_URL (keyword form, quoted; then a URL libpq
# misreads), and nothing of it in the run folder, stdout or stderr.
# config.yaml is 0600 and says ***; the config hash survives a password
# rotation.  And a ticket token bound for http:// is a config error.
. "$(dirname "$0")/lib.sh"

PGBIN=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
PW1="s0akFirstPw-7f3e9a1c"
PW2="s0akRotatedPw-52b8d04e"
PW3="s0ak third pw 'q' zq7x"	# keyword form, quoted: blanks and a quote
pgdir=$(mktemp -d /tmp/soak-redact-pg.XXXXXX)
chmod 755 "$pgdir"
chown postgres "$pgdir"
cleanup_hooks+=("runuser -u postgres -- '$PGBIN/pg_ctl' -D '$pgdir/data' -m immediate stop >/dev/null 2>&1; rm -rf '$pgdir'")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
runuser -u postgres -- "$PGBIN/initdb" -D "$pgdir/data" -U postgres \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$pgdir/data" -w -t 30 -l "$pgdir/pg.log" \
    -o "-k $pgdir -p $port -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
admin() { psql -X -q -t -A -h "$pgdir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$1"; }
admin "CREATE ROLE soaktest LOGIN PASSWORD '$PW1'"
admin "CREATE DATABASE soakdb OWNER soaktest"
# Password authentication is really on: no password, no connection.
if PGPASSWORD= psql -X -w -h 127.0.0.1 -p "$port" -U soaktest -d soakdb -c 'SELECT 1' >/dev/null 2>&1; then
	fail "the test cluster lets soaktest in without a password"
fi

printf 'CREATE TABLE t (seed int, turn int);\n' >"$T/schema.sql"
# Turns write through libpq with the PG* environment soak gives them; odd
# seeds break the invariant, so failures/, junit <failure> and tickets exist.
cfg() {	# file, database.url line
	cat >"$1" <<YAML
name: redact
seeds: 0..3
turns: 2
confirm: false
database:
  url: $2   # the test cluster
  schema: schema.sql
turn:
  command: [sh, -c, 'psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO t VALUES (\$SOAK_SEED, \$SOAK_TURN)"']
invariants:
  - name: no odd seed
    sql: SELECT DISTINCT seed FROM t WHERE seed % 2 = 1
tickets:
  sink: file
YAML
}
url() { echo "postgresql://soaktest:$1@127.0.0.1:$port/soakdb?sslmode=disable"; }

# no_password WHAT SECRET PATH...: SECRET appears in none of them.
no_password() {
	local what=$1 s=$2; shift 2
	if grep -rlF -- "$s" "$@"; then fail "$what: the password is in the files above"; fi
	ok "$what: no password in $*"
}

# FNV-1a 64 of a file, as soak's config hash.
fnv() { python3 -c 'import sys
h = 0xcbf29ce484222325
for b in open(sys.argv[1], "rb").read():
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print("%016x" % h)' "$1"; }

# Run 1: the password in database.url.
cfg "$T/soak.yaml" "$(url "$PW1")"
soak_rc rc run "$T/soak.yaml" --workers 2 --out "$T/out1" >"$T/out1.stdout" 2>"$T/out1.stderr"
cat "$T/out1.stdout"
expect_eq "run 1 exit status (odd seeds fail)" 1 "$rc"
expect_eq "run 1 verdicts" '["fail","fail","pass","pass"]' "$(jq -c '[.results[].verdict] | sort' "$T/out1/report.json")"
check_report "$T/out1" 0 3
[ -d "$T/out1/failures/1" ] && [ -n "$(ls "$T/out1/tickets")" ] || fail "run 1 left no failures/ or tickets/"
no_password "run 1" "$PW1" "$T/out1" "$T/out1.stdout" "$T/out1.stderr"
expect_eq "config.yaml mode" 600 "$(stat -c %a "$T/out1/config.yaml")"
sed "s/$PW1/***/" "$T/soak.yaml" >"$T/want1.yaml"
cmp "$T/want1.yaml" "$T/out1/config.yaml" || fail "config.yaml is not the config with *** for the password: $(diff "$T/want1.yaml" "$T/out1/config.yaml")"
ok "config.yaml is the config byte for byte, but ***"
h1=$(jq -r .config.hash "$T/out1/report.json")
expect_eq "config.hash is the hash of the redacted text" "$(fnv "$T/out1/config.yaml")" "$h1"
[ "$h1" != "$(fnv "$T/soak.yaml")" ] || fail "config.hash is the hash of the text with its password"
grep -qF "(\`$h1\`)" "$T"/out1/tickets/*.md || fail "the ticket does not carry the config hash $h1"

# Run 2: the password rotated; the same config otherwise.  An older copy
# with a wider mode is replaced, not rewritten in place.
admin "ALTER ROLE soaktest PASSWORD '$PW2'"
cfg "$T/soak.yaml" "$(url "$PW2")"
mkdir -p "$T/out2" && echo old >"$T/out2/config.yaml" && chmod 644 "$T/out2/config.yaml"
soak_rc rc run "$T/soak.yaml" --workers 2 --out "$T/out2" >"$T/out2.stdout" 2>"$T/out2.stderr"
expect_eq "run 2 exit status" 1 "$rc"
no_password "run 2" "$PW2" "$T/out2" "$T/out2.stdout" "$T/out2.stderr"
expect_eq "config.yaml mode over an older copy" 600 "$(stat -c %a "$T/out2/config.yaml")"
expect_eq "config.hash after a password rotation" "$h1" "$(jq -r .config.hash "$T/out2/report.json")"

# Run 3: SOAK_DATABASE_URL, keyword form, a quoted password; the config's
# database.url is empty.
admin "ALTER ROLE soaktest PASSWORD '${PW3//\'/\'\'}'"
cfg "$T/env.yaml" '""'
q3=${PW3//\'/\\\'}
export SOAK_DATABASE_URL="host=127.0.0.1 port=$port user=soaktest dbname=soakdb password='$q3' sslmode=disable"
soak_rc rc run "$T/env.yaml" --workers 2 --out "$T/out3" >"$T/out3.stdout" 2>"$T/out3.stderr"
expect_eq "run 3 exit status" 1 "$rc"
# soak replay --keep tells how to connect: without the password.  Its
# workspace stays in the scratch root: removed when the test ends.
kept_workspace() {
	local ws
	ws=$(sed -n 's/^workspace kept: //p' "$1" 2>/dev/null)
	if [[ $ws == */soak-replay-[0-9]*/seed-1 ]]; then rm -rf "$(dirname "$ws")"; fi
}
cleanup_hooks+=('kept_workspace "$T/replay.stdout"' 'kept_workspace "$T/shell.stdout"')
soak_rc rc replay "$T/env.yaml" --seed 1 --keep --out "$T/replay" >"$T/replay.stdout" 2>"$T/replay.stderr"
expect_eq "replay exit status" 1 "$rc"
# --keep's hint is --shell's command: the connection without its password,
# and a word that psql needs one (tests/integration/replay_output runs it).
expect_match "replay --keep: the psql command, without the password" \
    "^    psql 'user=soaktest dbname=soakdb host=127\.0\.0\.1 port=[0-9]+ .*options=-csearch_path=" \
    "$(cat "$T/replay.stdout")"
expect_match "replay --keep: psql needs the password" 'password is not shown: give it to psql' \
    "$(cat "$T/replay.stdout")"
# soak replay --shell on a server of one's own: a psql command with no
# password at all, a word that psql needs one, and no wait (the schema
# stays on that server); with the password given by PGPASSWORD it works.
soak_rc rc replay "$T/env.yaml" --seed 1 --shell --out "$T/shell" </dev/null \
    >"$T/shell.stdout" 2>"$T/shell.stderr"
expect_eq "replay --shell exit status" 1 "$rc"
cmd=$(sed -n 's/^    psql /psql /p' "$T/shell.stdout")
expect_match "replay --shell: the command" \
    "^psql 'user=soaktest dbname=soakdb host=127.0.0.1 port=$port sslmode=disable options=-csearch_path=soak_replay[0-9]+_w1'$" "$cmd"
expect_match "replay --shell says psql needs the password" 'password is not shown: give it to psql' \
    "$(cat "$T/shell.stdout")"
grep -q 'stays up until' "$T/shell.stdout" && fail "replay --shell waited with no embedded database"
expect_eq "psql with the command and PGPASSWORD reads the kept schema" 2 \
    "$(PGPASSWORD=$PW3 eval "$cmd -XAt -c 'SELECT count(*) FROM t WHERE seed = 1'")"
for piece in "$PW3" "third pw" "zq7x"; do
	no_password "run 3 and replay ($piece)" "$piece" "$T/out3" "$T/out3.stdout" "$T/out3.stderr" \
	    "$T/replay" "$T/replay.stdout" "$T/replay.stderr" "$T/shell" "$T/shell.stdout" \
	    "$T/shell.stderr"
done

# Run 4: a URL whose password holds an unencoded '/': libpq reads its
# pieces as host and port, and every message that names them is redacted.
export SOAK_DATABASE_URL="postgresql://soaktest:Pw4piece/Zq9tail@127.0.0.1:$port/soakdb"
soak_rc rc run "$T/env.yaml" --workers 1 --out "$T/out4" >"$T/out4.stdout" 2>"$T/out4.stderr"
expect_eq "run 4 exit status (no connection)" 2 "$rc"
expect_match "run 4 says why" 'cannot connect to PostgreSQL' "$(cat "$T/out4.stderr")"
for piece in Pw4piece Zq9tail; do
	no_password "run 4 ($piece)" "$piece" "$T/out4" "$T/out4.stdout" "$T/out4.stderr"
done
# Run 5: a URL libpq cannot decode: its message quotes the token.
export SOAK_DATABASE_URL="postgresql://soaktest:Pw5bad%zz@127.0.0.1:$port/soakdb"
soak_rc rc run "$T/env.yaml" --workers 1 --out "$T/out5" >"$T/out5.stdout" 2>"$T/out5.stderr"
expect_eq "run 5 exit status (no connection)" 2 "$rc"
expect_match "run 5 says why" 'bad database connection string: invalid percent-encoded token' "$(cat "$T/out5.stderr")"
no_password "run 5" "Pw5bad" "$T/out5" "$T/out5.stdout" "$T/out5.stderr"
unset SOAK_DATABASE_URL
# soak check --db: libpq quotes a token it cannot decode.
soak_rc rc check "$T/env.yaml" --db "postgresql://soaktest:Pw5bad%zz@127.0.0.1:$port/soakdb" \
    >"$T/check.stdout" 2>"$T/check.stderr"
expect_eq "check --db with a bad URL" 2 "$rc"
expect_match "check says why" 'percent-encoded' "$(cat "$T/check.stderr")"
no_password "check --db" "Pw5bad" "$T/check.stdout" "$T/check.stderr"

# A connection string where the database section belongs: the config
# error quotes it without the password.
cat >"$T/flat.yaml" <<YAML
name: flat
database: $(url "$PW1")
turn: {command: [/bin/true]}
invariants: [{name: i, sql: SELECT 1}]
YAML
soak_rc rc check "$T/flat.yaml" 2>"$T/flat.stderr"
expect_eq "check of a misplaced URL" 78 "$rc"
expect_match "the error quotes it redacted" 'database: expected a mapping, got "postgresql://soaktest:\*\*\*@' "$(cat "$T/flat.stderr")"
no_password "config error" "$PW1" "$T/flat.stderr"

# Tickets: a token for an http:// url is a config error naming tickets.url
# and the fix, from check and run; insecure_http: true allows it.
tk() {	# file, extra tickets lines
	cfg "$1" '""'
	sed -i '/^tickets:/,$d' "$1"
	printf 'tickets:\n  sink: webhook\n  url: http://127.0.0.1:9/hook\n  token_env: SOAK_TEST_HOOK_TOKEN\n%b' "$2" >>"$1"
}
tk "$T/http.yaml" ''
soak_rc rc check "$T/http.yaml" 2>"$T/http.stderr"
expect_eq "check of a token over http" 78 "$rc"
expect_match "the error names the key and the fix" \
    'http.yaml:[0-9]+:[0-9]+: tickets.url: not https://: .*tickets.insecure_http: true' "$(cat "$T/http.stderr")"
soak_rc rc run "$T/http.yaml" --workers 1 --out "$T/out-http" 2>"$T/http-run.stderr" >/dev/null
expect_eq "run of a token over http" 78 "$rc"
[ ! -e "$T/out-http" ] || fail "a refused config still made $T/out-http"
tk "$T/http-ok.yaml" '  insecure_http: true\n'
soak_rc rc check "$T/http-ok.yaml" >/dev/null
expect_eq "check with insecure_http: true" 0 "$rc"
tk "$T/http-bad.yaml" '  insecure_http: sometimes\n'
soak_rc rc check "$T/http-bad.yaml" 2>"$T/http-bad.stderr"
expect_eq "check with a bad insecure_http" 78 "$rc"
expect_match "the error names tickets.insecure_http" \
    'http-bad.yaml:[0-9]+:[0-9]+: tickets.insecure_http: expected true or false' "$(cat "$T/http-bad.stderr")"
echo "redact: ok"
