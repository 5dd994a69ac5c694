# Sourced by tests/integration/tickets_*.sh: fake tracker lifecycle and checks.
set -euo pipefail
: "${SOAK_BIN:?run me through tests/run}" "${SOAK_ROOT:?}"
FAKES="$SOAK_ROOT/tests/fakes"
WORK=$(mktemp -d /tmp/soak-tickets-test.XXXXXX)
FAKE_PIDS=()

tk_cleanup() {
	local p
	for p in "${FAKE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${FAKE_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
# Sourced after tests/integration/lib.sh, the fakes' cleanup joins its
# hooks: a trap of our own would replace lib.sh's, and whatever the test
# started (a PostgreSQL, a coordinator) would outlive it.
if declare -F at_exit >/dev/null; then
	cleanup_hooks+=(tk_cleanup)
else
	trap tk_cleanup EXIT
fi

die() { echo "FAIL: $*" >&2; exit 1; }

# start_fake NAME KIND [tracker.py args...]: sets FAKE_PORT; the record is
# $WORK/NAME.json.  Waits (10 s watchdog) for the port line on stdout.
start_fake() {
	local name=$1 kind=$2; shift 2
	local fifo="$WORK/$name.fifo"
	mkfifo "$fifo"
	python3 "$FAKES/tracker.py" --kind "$kind" --record "$WORK/$name.json" "$@" \
	    >"$fifo" 2>"$WORK/$name.stderr" &
	FAKE_PIDS+=($!)
	exec {fd}<"$fifo"
	read -r -t 10 -u "$fd" FAKE_PORT ||
	    die "fake $kind tracker ($name) did not print its port within 10s: $(cat "$WORK/$name.stderr")"
	exec {fd}<&-
	[[ $FAKE_PORT =~ ^[0-9]+$ ]] || die "fake $name printed \"$FAKE_PORT\", not a port"
}

# q FILE PYEXPR: evaluates a python expression over the JSON document r.
q() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# expect WHAT GOT WANT
expect() { [ "$2" = "$3" ] || die "$1: got \"$2\", want \"$3\""; }

# no_secret SECRET PATH...: the token must be in none of these files or dirs.
no_secret() {
	local s=$1; shift
	if grep -rlF -- "$s" "$@" 2>/dev/null; then die "the token leaked into the files above"; fi
}

report() { python3 "$FAKES/tickets_report.py" "$@"; }
