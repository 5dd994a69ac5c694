# The start of the fault proxy's PostgreSQL tests (proxy_pg, proxy_pgframe):
# a cluster of the test's own in a temporary folder (initdb'd, not started:
# each test starts it with its own settings), a free port, the proxy's stop
# with a watchdog; lib.sh's wait_line (woken by each write).  Sourced; $1
# names the folder.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
H=$SOAK_BUILD/tests/helpers
PGBIN=/usr/lib/postgresql/15/bin
dir=$(mktemp -d "/tmp/soak-$1.XXXXXX")
chmod 755 "$dir"; chown postgres "$dir"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
cleanup_hooks+=(cleanup)
die() { echo "FAIL: $*"; exit 1; }
# stop_proxy: SIGTERM, then a bounded wait for the proxy to write its trace.
stop_proxy() {
	kill -TERM "$ppid_"
	timeout 10 tail -s 0.1 --pid="$ppid_" -f /dev/null ||
	    die "watchdog: proxy $ppid_ still running 10 s after SIGTERM"
	wait "$ppid_" || die "proxy exited $? after SIGTERM"
}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir "$dir/data" && chown postgres "$dir/data"
runuser -u postgres -- "$PGBIN/initdb" -D "$dir/data" --auth=trust -U postgres >/dev/null
