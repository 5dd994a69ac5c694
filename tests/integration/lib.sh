# Shared by the integration tests: a scratch directory, assertions that say
# what they expected, and waits on events (never on the clock alone).
set -euo pipefail
SOAK=${SOAK_BIN:?run me through tests/run (SOAK_BIN)}
ROOT=${SOAK_ROOT:?}
T=$(mktemp -d /tmp/soak-it.XXXXXX)
cleanup_hooks=()
at_exit() { for h in "${cleanup_hooks[@]}"; do eval "$h" || true; done; [ -n "${SOAK_TEST_KEEP:-}" ] && echo "kept $T" || rm -rf "$T"; }
trap at_exit EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
# phase WHAT: a line where a long step starts, with the seconds so far, so
# a test that runs for minutes shows where it is (and where time went).
phase() { echo "phase: $* (at ${SECONDS} s)"; }
expect_eq() {	# what, expected, actual
	[ "$2" == "$3" ] || fail "$1: expected '$2', got '$3'"
	ok "$1 = $3"
}
expect_ge() {
	[ "$3" -ge "$2" ] || fail "$1: expected at least $2, got $3"
	ok "$1 = $3 (>= $2)"
}
expect_match() {	# what, regex, text
	grep -qE -- "$2" <<<"$3" || fail "$1: '$2' not found in: $3"
	ok "$1 matches /$2/"
}

# The claim counter most schedule tests race on: read n, write n + 1, log
# the event.  counter_schema FILE [EVENTS]: its schema (the events table
# named EVENTS, default events).
counter_schema() {
	cat >"$1" <<SQL
CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO counter VALUES (1, 0);
CREATE TABLE ${2:-events} (turn int NOT NULL);
SQL
}
COUNTER_INV='the counter counts every event'
COUNTER_SQL='SELECT c.n, e.n AS events FROM counter c, (SELECT count(*) AS n FROM events) e WHERE c.n <> e.n'
# sched_cfg FILE NAME TURNS SCHEMA COMMAND [MORE]: a config of TURNS turns
# through one scheduled postgres proxy "db" (mode random), the turn
# COMMAND (a YAML list), the counter's invariant, and MORE (top-level
# YAML: seeds, tickets, ...) as it is.
sched_cfg() {
	cat >"$1" <<YAML
name: $2
turns: $3
seed_timeout: 60s
database:
  schema: $4
proxies:
  - name: db
    upstream: database
    protocol: postgres
    schedule:
      mode: random
turn:
  command: $5
  timeout: 20s
invariants:
  - name: $COUNTER_INV
    sql: $COUNTER_SQL
${6:-}
YAML
}

# soak_rc VAR cmd...: runs soak, keeps its exit status in VAR (set -e safe).
soak_rc() {
	local __v=$1; shift
	set +e
	"$SOAK" "$@"
	printf -v "$__v" '%d' $?
	set -e
}

# wait_line FILE REGEX SECONDS WHAT: blocks until FILE has a line matching
# REGEX (tail -F wakes on each write), or fails naming WHAT.  The tail is
# left to its own timeout, so returning never waits on it.
wait_line() {
	local line fd
	exec {fd}< <(timeout "$3" tail -n +1 -F "$1" 2>/dev/null)
	while IFS= read -r -u "$fd" line; do
		if grep -qE -- "$2" <<<"$line"; then
			exec {fd}<&-
			printf '%s\n' "$line"
			return 0
		fi
	done
	exec {fd}<&-
	fail "watchdog: no '$4' within $3 s (waited for /$2/ in $1)"
}

# wait_exit VAR PID SECONDS WHAT: waits for PID (a child of this shell) to
# exit and keeps its status in VAR; if it is still running after SECONDS it
# is killed and the test fails naming WHAT.  Never waits without a bound.
wait_exit() {
	local __v=$1 pid=$2 limit=$3 what=$4 st
	if ! timeout "$limit" tail -s 0.2 --pid="$pid" -f /dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
		fail "watchdog: $what still running after $limit s"
	fi
	set +e; wait "$pid"; st=$?; set -e
	printf -v "$__v" '%d' "$st"
}

# A gate turns wait at, with no polling: gate_new makes the fifo $T/gate
# and holds it open, so a turn's
#   timeout 120 dd if="$SOAK_CONFIG_DIR/gate" bs=1 count=1 status=none
# blocks until gate_open writes to it (a byte for each wait, now or later).
gate_new() {
	rm -f "$T/gate"
	mkfifo "$T/gate"
	exec {GATE_FD}<>"$T/gate"
}
gate_open() { printf '%4096s' '' >&"$GATE_FD"; }

# kills DIR: one line per failing seed: the reason, or its broken invariants.
kills() {
	jq -r '.results[] | select(.verdict == "fail")
	    | if .reason == "invariant" then ([.invariants[].name] | join(" + ")) else .reason end' \
	    "$1/report.json"
}

# Checks report.json's documented shape and that each seed of A..B is there once.
check_report() {	# dir first last
	local r=$1/report.json n
	[ -f "$r" ] || fail "no report.json in $1"
	jq -e '.format == 1 and (.run_id|type=="string") and (.config.hash|test("^[0-9a-f]{16}$"))
	    and (.seeds.count|type=="number") and (.totals|has("pass") and has("fail") and has("infra") and has("missing"))
	    and (.results|type=="array") and (.workers|type=="array")
	    and all(.results[]; (.seed|type=="number") and (.verdict|IN("pass","fail","infra"))
	        and has("reason") and has("worker") and has("duration_ms") and (.attempts|length>=1)
	        and (.replay|test("^([^ ]*/)?soak replay .* --seed [0-9]+$")))' "$r" >/dev/null ||
	    fail "report.json does not have the documented shape"
	n=$(jq "[.results[].seed] | unique | length" "$r")
	expect_eq "distinct seeds in report.json" $(($3 - $2 + 1)) "$n"
	expect_eq "records in report.json" $(($3 - $2 + 1)) "$(jq '.results|length' "$r")"
	expect_eq "seed range covered" "$2 $3" "$(jq -r '[.results[].seed]|"\(min) \(max)"' "$r")"
	xmllint --noout "$1/junit.xml" || fail "junit.xml is not well-formed"
	expect_eq "junit testcases" $(($3 - $2 + 1)) \
	    "$(xmllint --xpath 'count(//testcase)' "$1/junit.xml")"
	expect_eq "junit <failure> = report fails" "$(jq .totals.fail "$r")" \
	    "$(xmllint --xpath 'count(//testcase/failure)' "$1/junit.xml")"
	expect_eq "junit <error> = report infra + missing" "$(jq '.totals.infra + .totals.missing' "$r")" \
	    "$(xmllint --xpath 'count(//testcase/error)' "$1/junit.xml")"
	junit_totals "$1"
}
# junit_totals DIR: the counts CI pages show come from junit's attributes:
# report.json's totals, seeds without a verdict among the tests and errors.
junit_totals() {
	local el
	for el in testsuites testsuite; do
		expect_eq "junit <$el> tests, failures, errors = report.json's" \
		    "$(jq -r '"\(.totals.pass + .totals.fail + .totals.infra + .totals.missing) \(.totals.fail) \(.totals.infra + .totals.missing)"' "$1/report.json")" \
		    "$(xmllint --xpath "concat(//$el/@tests, ' ', //$el/@failures, ' ', //$el/@errors)" "$1/junit.xml")"
	done
}

# The certificate recipe of docs/fleet.md "Across machines", into $pki (the
# caller's directory): new_ca NAME SUBJECT makes a CA (NAME.pem, NAME.key);
# issue NAME CA EXTENSIONS makes NAME.pem, a certificate and its key.
new_ca() {	# NAME SUBJECT
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -days 30 -subj "/CN=$2" -keyout "$pki/$1.key" -out "$pki/$1.pem" 2>/dev/null
}
issue() {	# NAME CA EXTENSIONS: NAME.pem is the certificate and its key
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj "/CN=$1" -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null
	printf '%b' "$3" >"$pki/$1.ext"
	openssl x509 -req -in "$pki/$1.csr" -CA "$pki/$2.pem" -CAkey "$pki/$2.key" \
	    -CAcreateserial -days 30 -extfile "$pki/$1.ext" -out "$pki/$1.crt" 2>/dev/null
	cat "$pki/$1.crt" "$pki/$1.key" >"$pki/$1.pem"
	chmod 600 "$pki/$1.pem"
}

# own_pg_start DIR PORT [-c OPTION...]: starts a PostgreSQL of the test's
# own on DIR/data (initdb'd by the caller, DIR owned by postgres), its
# sockets in DIR, listening on 127.0.0.1:PORT.  Its stop is a cleanup hook,
# set before the start so a start that fails half-way is stopped too: it
# continues a frozen (SIGSTOP) postmaster and its backends, SIGQUITs it and
# waits for it to be gone (SIGKILL after 10 s), then removes DIR.  The
# server is started without the test's descriptors beyond 0-2, so it can
# never hold what the test holds (a lock a caller forgot to leave, -o).
own_pg_start() {
	local dir=$1 port=$2; shift 2
	cleanup_hooks+=("own_pg_stop '$dir'")
	( for fd in /proc/self/fd/*; do
		fd=${fd##*/}
		[ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null || true
	done
	exec runuser -u postgres -- "${PGBIN:-/usr/lib/postgresql/15/bin}/pg_ctl" -D "$dir/data" -w -t 30 -l "$dir/pg.log" \
	    -o "-k $dir -p $port -c listen_addresses=127.0.0.1 -c fsync=off $*" start \
	    >/dev/null ) || fail "PostgreSQL on $dir did not start: $(tail -n 5 "$dir/pg.log" 2>/dev/null)"
}
# shared_pg NAME: a PostgreSQL of the test's own (own_pg_start) on a free
# port, trust auth, for every process the test starts: $pgdir, $port and
# SOAK_DATABASE_URL are set.
shared_pg() {
	pgdir=$(mktemp -d "/tmp/soak-$1-pg.XXXXXX")
	chmod 755 "$pgdir"; mkdir "$pgdir/data"; chown postgres "$pgdir" "$pgdir/data"
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	runuser -u postgres -- "${PGBIN:-/usr/lib/postgresql/15/bin}/initdb" -D "$pgdir/data" \
	    -U postgres --auth=trust >/dev/null
	own_pg_start "$pgdir" "$port"
	export SOAK_DATABASE_URL="host=127.0.0.1 port=$port user=postgres dbname=postgres sslmode=disable"
}
own_pg_stop() {	# DIR
	local pm kids
	pm=$(head -n 1 "$1/data/postmaster.pid" 2>/dev/null || true)
	if [[ $pm =~ ^[0-9]+$ ]] && kill -0 "$pm" 2>/dev/null; then
		kids=$(pgrep -P "$pm" || true)
		kill -CONT "$pm" $kids 2>/dev/null || true
		kill -QUIT "$pm" 2>/dev/null || true
		if ! timeout 10 tail -s 0.1 --pid="$pm" -f /dev/null; then
			kill -KILL "$pm" $kids 2>/dev/null || true
			timeout 5 tail -s 0.1 --pid="$pm" -f /dev/null ||
			    echo "warning: postmaster $pm of $1 survived SIGKILL" >&2
		fi
	fi
	rm -rf "$1"
}

# replays RUN CONFIG N INV [SELECT]: up to N failing seeds of the run in
# directory RUN (report.json; the jq condition SELECT narrows them), each
# replayed by seed and by plan against the run's trace: each must fail
# again with invariant INV broken and keep the run's schedule step for
# step.  Counts the replays in by_seed and by_plan, the seeds in tried.
replays() {
	local run=$1 config=$2 n=$3 inv=$4 sel=${5:-true} name seed tr how
	name=$(basename "$run")
	by_seed=0 by_plan=0 tried=0
	for seed in $(jq -r "[.results[] | select(.verdict == \"fail\") | select($sel) | .seed] | .[0:$n] | .[]" \
	    "$run/report.json"); do
		tr=$run/failures/$seed/trace.jsonl
		tried=$((tried + 1))
		for how in seed plan; do
			phase "$name: replay seed $seed by $how"
			if [ $how = seed ]; then
				soak_rc rc replay "$config" --seed "$seed" --trace "$tr" --out "$T/r" >"$T/r.out" 2>&1
			else
				soak_rc rc replay "$config" --plan "$run/failures/$seed/plan.json" --trace "$tr" \
				    --out "$T/r" >"$T/r.out" 2>&1
			fi
			grep -E '^schedule:' "$T/r.out" | sed "s/^/  $name seed $seed by $how: /"
			expect_eq "$name: seed $seed replayed by $how: exit status" 1 "$rc"
			expect_match "$name: seed $seed replayed by $how: \"$inv\" broken" "\"$inv\": BROKEN" "$(cat "$T/r.out")"
			expect_match "$name: seed $seed replayed by $how: the run's schedule step for step" \
			    '^schedule: the same as the run.s, all [0-9]+ steps' "$(grep -E '^schedule:' "$T/r.out")"
			[ $how = seed ] && by_seed=$((by_seed + 1)) || by_plan=$((by_plan + 1))
			rm -rf "$T/r"
		done
	done
	expect_ge "$name: failing seeds replayed" "$n" "$tried"
}
