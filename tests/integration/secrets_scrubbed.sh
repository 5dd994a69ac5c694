# A secret printed by a turn goes nowhere (common/scrub.h): a cluster run
# (soak coordinator and a soak worker with a shared secret) against a
# PostgreSQL of the test's own with password authentication, the password
# only in the worker's SOAK_DATABASE_URL, holding a quote, a blank, '@',
# '/', ':', '%' and a backslash.  The setup and every turn print it in
# every form libpq reads it (raw as PGPASSWORD, percent-encoded in upper
# and lower case, form-encoded, in a URL, keyword-quoted and escaped, in
# JSON) to stdout and stderr, one of them astride the cut of the 2 KiB
# tail; they put it into a table that the invariant returns as a row, and
# print the shared secret.  Then no file of the run outside the turns'
# workspaces holds either (grep of the whole output folder: journal.jsonl,
# report.json, junit.xml, report.html, failures/*/result.json and
# detail.json), nor the file sink's ticket, nor the bodies the GitHub fake
# received, nor the coordinator's or the worker's output; the workspaces
# keep what the turns wrote (the grep would see a leak).  The turns'
# environment holds PGPASSWORD and never SOAK_DATABASE_URL.  A password of
# 4 bytes is said, in the log, to be one that cannot be scrubbed.
. "$(dirname "$0")/lib.sh"

PGBIN=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
MARK=Zq8vK			# in every form the password takes, at both ends
PW="Zq8vK'd @/:x%y\\z Zq8vK"
SMARK=Xk4Wm
SECRET="shared-$SMARK-secret-0123456789abcdef"
pgdir=$(mktemp -d /tmp/soak-scrub-pg.XXXXXX)
chmod 755 "$pgdir"
chown postgres "$pgdir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
runuser -u postgres -- "$PGBIN/initdb" -D "$pgdir/data" -U postgres \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
own_pg_start "$pgdir" "$port"
admin() { psql -X -q -t -A -h "$pgdir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
admin -v pw="$PW" <<<"CREATE ROLE soakscrub LOGIN PASSWORD :'pw';"
admin -c "CREATE ROLE soakshort LOGIN PASSWORD 'pw12'"
admin -c "CREATE DATABASE soakdb OWNER soakscrub"
admin -c "GRANT CREATE ON DATABASE soakdb TO soakshort"
# The worker's connection string, keyword form, the password quoted.
qpw=$(python3 -c 'import sys; print(sys.argv[1].replace("\\", "\\\\").replace("'"'"'", "\\'"'"'"))' "$PW")
WORKER_DB="host=127.0.0.1 port=$port user=soakscrub dbname=soakdb sslmode=disable password='$qpw'"

printf '%s\n' "$SECRET" >"$T/soak.secret"
chmod 600 "$T/soak.secret"
printf 'CREATE TABLE leak (v text);\n' >"$T/schema.sql"
cat >"$T/leak.py" <<'PY'
#!/usr/bin/env python3
# Prints the database password (and the shared secret) every way a
# harness might; with "turn", stores it in a row and fails.
import json, os, subprocess, sys, urllib.parse
pw = os.environ["PGPASSWORD"]
secret = open(os.path.join(os.environ["SOAK_CONFIG_DIR"], "soak.secret")).read().strip()
kwq = "password='" + pw.replace("\\", "\\\\").replace("'", "\\'") + "'"
kwe = "password=" + "".join("\\" + c if c in " '\\" else c for c in pw)
forms = [
    "PGPASSWORD=" + pw,
    urllib.parse.quote(pw, safe=""),
    urllib.parse.quote(pw, safe="").lower(),
    urllib.parse.quote_plus(pw),
    "postgresql://%s:%s@%s:%s/%s" % (os.environ["PGUSER"], urllib.parse.quote(pw, safe=""),
        os.environ["PGHOST"], os.environ["PGPORT"], os.environ["PGDATABASE"]),
    kwq, kwe, json.dumps({"password": pw}), "secret " + secret,
]
for f in forms:
    print(f)
    print(f, file=sys.stderr)
with open(os.path.join(os.environ["SOAK_CONFIG_DIR"], "env-%s-%s-%s" % (sys.argv[1],
        os.environ["SOAK_SEED"], os.environ.get("SOAK_TURN", "-"))), "w") as e:
    e.write("SOAK_DATABASE_URL=%s PGPASSWORD=%s\n" % ("SOAK_DATABASE_URL" in os.environ,
        "PGPASSWORD" in os.environ))
if sys.argv[1] == "turn":
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "pw=" + pw],
        input="INSERT INTO leak VALUES (:'pw'), (:'pw' || ' as a row');", text=True, check=True)
    # Last on stdout, astride the cut of its 2 KiB tail: 8 bytes of the
    # password are in the tail, the rest before it.
    sys.stdout.write("x" * 3000 + "\n" + pw + "\n" + "y" * (2048 - 1 - 8))
    sys.exit(1)
PY
chmod +x "$T/leak.py"
cat >"$T/scrub.yaml" <<'YAML'
name: scrub
seeds: 0..1
turns: 2
retries: 0
confirm: false
database:
  schema: schema.sql
setup: [./leak.py, setup]
turn:
  command: [./leak.py, turn]
invariants:
  - name: no leaked row
    sql: SELECT v FROM leak
tickets:
  sink: file
  url: tickets
YAML

# --- a cluster run: the worker alone knows the password ---
unset SOAK_DATABASE_URL
"$SOAK" coordinator "$T/scrub.yaml" --listen tcp://127.0.0.1:0 --out "$T/run" \
    --secret-file "$T/soak.secret" --bundle off >"$T/coord.out" 2>"$T/coord.err" &
coord=$!
cleanup_hooks+=("kill $coord 2>/dev/null")
url=$(wait_line "$T/coord.err" 'listening on tcp://' 30 "the coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
# The worker keeps failing workspaces (and any detail.json) under its TMPDIR.
mkdir -m 700 "$T/wtmp"
TMPDIR=$T/wtmp SOAK_DATABASE_URL=$WORKER_DB "$SOAK" worker --connect "$url" --secret-file "$T/soak.secret" \
    -v >"$T/worker.out" 2>"$T/worker.err" &
worker=$!
cleanup_hooks+=("kill $worker 2>/dev/null")
wait_exit rc "$coord" 120 "the coordinator's run of two leaking seeds"
wait_exit wrc "$worker" 30 "the worker"
expect_eq "the run's exit status (both seeds fail)" 1 "$rc"
expect_eq "the worker's exit status" 0 "$wrc"
expect_eq "seeds failed on the leaked rows" 2 "$(jq '[.results[] | select(.reason == "invariant")] | length' "$T/run/report.json")"

# The leaks were real: the turns printed and stored it, and their
# workspaces keep what they wrote (as documented).
keep=$(echo "$T"/wtmp/soak-*-failures)
[ -d "$keep/0/workspace" ] || fail "the worker kept no workspace of seed 0 in $keep"
expect_ge "workspace files holding the password as the turns wrote it" 1 \
    "$(grep -rlaF "$MARK" "$keep"/*/workspace | wc -l)"
expect_ge "... and the shared secret" 1 "$(grep -rlaF "$SMARK" "$keep"/*/workspace | wc -l)"
expect_eq "rows the invariant returned (two turns, two rows each), now marks" \
    '["***","***","*** as a row","*** as a row"]' \
    "$(jq -c '[.results[0].invariants[0].rows[][0]] | sort' "$T/run/report.json")"
# The cut of each turn's stdout tail fell 8 bytes before the password's end:
# read with a margin and scrubbed whole, the tail shows the mark, no piece.
expect_eq "stdout tails where the cut fell inside the password, showing the mark" 2 \
    "$(jq -r '.turns[] | select(.stdout_tail | test("y{100}")) | .stdout_tail' \
    "$T/run/failures/0/result.json" | grep -cx '\*\*\*' || true)"
files=$(find "$T/run" "$keep" -name workspace -prune -o -type f -print)
echo "files of the run outside the workspaces: $(echo $files | tr " " "\n" | sed "s,^$T/,," | paste -sd" ")"
expect_ge "files of the run outside the workspaces" 6 "$(wc -l <<<"$files")"
for what in "$MARK:the database password" "$SMARK:the shared secret"; do
	m=${what%%:*}
	if grep -laF "$m" $files "$T/tickets"/* "$T/coord.out" "$T/coord.err" "$T/worker.out" \
	    "$T/worker.err"; then
		fail "${what#*:} is in the files above"
	fi
	ok "${what#*:}: in no file of the run outside the workspaces, no ticket, no log"
done
expect_ge "tickets the file sink wrote" 1 "$(ls "$T/tickets" | wc -l)"
grep -qE "\*\*\*|&#42;&#42;&#42;" "$T/tickets"/*.md || fail "the ticket shows no mark where the rows were: $(cat "$T"/tickets/*.md)"
ok "the ticket shows the marks"
for f in "$T"/env-*; do
	expect_eq "the environment of $(basename "$f")" "SOAK_DATABASE_URL=False PGPASSWORD=True" "$(cat "$f")"
done
expect_ge "turns and setups that reported their environment" 6 "$(ls "$T"/env-* | wc -l)"

# --- the same run's tickets filed to a GitHub fake ---
source "$SOAK_ROOT/tests/fakes/tickets_lib.sh"
export SOAK_TEST_GH_TOKEN=ghp_scrubTest_0123456789
start_fake gh github --token "$SOAK_TEST_GH_TOKEN"
cp -r "$T/run" "$T/run-gh"
jq --arg u "http://127.0.0.1:$FAKE_PORT" '.config.tickets = {sink: "github", url: $u,
    repo: "acme/shop", token_env: "SOAK_TEST_GH_TOKEN", insecure_http: true}' \
    "$T/run/report.json" >"$T/run-gh/report.json"
soak_rc rc tickets "$T/run-gh" >"$T/gh.out" 2>"$T/gh.err"
expect_eq "soak tickets to the GitHub fake" 0 "$rc"
expect_ge "issues the fake received" 1 "$(jq '.issues | length' "$WORK/gh.json")"
expect_eq "issue bodies holding the password or the secret" 0 \
    "$(jq -r '.issues[].body' "$WORK/gh.json" | grep -cE "$MARK|$SMARK" || true)"
jq -r '.issues[].body' "$WORK/gh.json" | grep -qE '\*\*\*|&#42;&#42;&#42;' ||
    fail "the issue body shows no mark"
ok "the issue body shows the marks"

# --- a password too short to scrub is said to be one ---
SOAK_DATABASE_URL="host=127.0.0.1 port=$port user=soakshort dbname=soakdb sslmode=disable password=pw12" \
    soak_rc rc replay "$T/scrub.yaml" --seed 0 >"$T/short.out" 2>"$T/short.err"
expect_eq "replay with a short password (the seed fails)" 1 "$rc"
expect_match "the log says it cannot be scrubbed" \
    'the database password is 4 byte\(s\): text captured from turns, services and setup cannot be scrubbed' \
    "$(cat "$T/short.err")"
