# soak replay --keep with the connection's secrets in its string (issue 38
# item 4): the psql command it prints leaves out every setting libpq marks
# as a secret (dispchar '*': password, and sslpassword, a client key's
# passphrase), in keyword and URL form, says which it left out, and still
# opens the kept schema; nothing of either secret is in its output or its
# folder.  A PostgreSQL of the test's own with trust authentication, so the
# secrets are only text libpq reads (sslmode=disable: no key is opened).
. "$(dirname "$0")/lib.sh"

PW="s0akReplayPw-4c1d9e"
KP="s0akKeyPass-b83f27"
shared_pg replay-secrets
base=$SOAK_DATABASE_URL

printf 'CREATE TABLE t (turn int);\n' >"$T/schema.sql"
cat >"$T/soak.yaml" <<'YAML'
name: replay-secrets
seeds: 0..0
turns: 2
database:
  schema: schema.sql
turn:
  command: [sh, -c, 'psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO t VALUES ($SOAK_TURN)"']
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML

# keep NAME URL: replay --keep with SOAK_DATABASE_URL=URL; checks what it
# printed and left, and that the command opens the kept schema.
keep() {
	local name=$1 url=$2 rc cmd out ws s
	phase "replay --keep, $name"
	SOAK_DATABASE_URL=$url soak_rc rc replay "$T/soak.yaml" --seed 0 --keep \
	    --out "$T/$name" </dev/null >"$T/$name.out" 2>"$T/$name.err"
	cat "$T/$name.out"
	expect_eq "replay --keep ($name) exit status" 0 "$rc"
	out=$(cat "$T/$name.out")
	# the kept workspace (the seed passed: in the scratch root) goes at exit
	ws=$(sed -n 's/^workspace kept: //p' "$T/$name.out")
	[[ $ws == */soak-replay-[0-9]*/seed-0 ]] || fail "replay --keep ($name) kept no workspace: $out"
	cleanup_hooks+=("rm -rf '$(dirname "$ws")'")
	cmd=$(sed -n 's/^    \(psql .*\)$/\1/p' "$T/$name.out")
	[ -n "$cmd" ] || fail "replay --keep ($name) printed no psql command: $out"
	for s in "$PW" "$KP" sslpassword= password=; do
		if grep -rlF -- "$s" "$T/$name.out" "$T/$name.err" "$T/$name" "$ws"; then
			fail "replay --keep ($name): '$s' is in the files above"
		fi
	done
	ok "replay --keep ($name): neither secret, nor a password= or sslpassword=, in its output, folder or workspace"
	expect_match "($name) the password is said to be left out" \
	    "the connection's password is not shown" "$out"
	expect_match "($name) the key's passphrase is said to be left out" \
	    "nor is its sslpassword: psql asks for it" "$out"
	expect_eq "($name) the command opens the kept schema" 2 \
	    "$(eval "$cmd -XAt -c 'SELECT count(*) FROM t'")"
}

keep keywords "$base password='$PW' sslpassword='$KP'"
keep uri "postgresql://postgres:$PW@127.0.0.1:$port/postgres?sslmode=disable&sslpassword=$KP"
