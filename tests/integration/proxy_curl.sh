#!/usr/bin/env bash
# soak proxy in front of a real HTTP server, driven by the curl CLI: the
# three bands, the trace, and the standalone command's life cycle.
set -euo pipefail
H=$SOAK_BUILD/tests/helpers
dir=$(mktemp -d /tmp/soak-proxy-curl.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT

# wait_line FILE REGEX WHAT: the readiness signal, with a watchdog
wait_line() {
	local deadline=$((SECONDS + 10))
	until grep -Eq "$2" "$1" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || { echo "watchdog: no \"$3\" after 10s"; cat "$1"; exit 1; }
		read -rt 0.02 <> <(:) || true
	done
}

"$H/proxy_upstream" http >"$dir/up.log" & pids+=($!)
wait_line "$dir/up.log" '^listening on' "upstream listening"
up=$(awk '/^listening on/{print $3}' "$dir/up.log")

# start_proxy NAME ARGS...: sets $px to the proxy's address
start_proxy() {
	local name=$1; shift
	"$SOAK_BIN" proxy --listen 127.0.0.1:0 --upstream "$up" --trace "$dir/$name.jsonl" "$@" \
		>"$dir/$name.out" 2>"$dir/$name.err" & pids+=($!)
	ppid_=$!
	wait_line "$dir/$name.out" '^listening on' "proxy $name listening"
	px=$(awk '/^listening on/{print $3}' "$dir/$name.out")
}
# stop_proxy: SIGTERM, then a bounded wait for the proxy to write its trace
# and exit 0.
stop_proxy() {
	kill -TERM "$ppid_"
	timeout 10 tail -s 0.1 --pid="$ppid_" -f /dev/null ||
	    { echo "watchdog: proxy $ppid_ still running 10 s after SIGTERM"; exit 1; }
	wait "$ppid_" || { echo "proxy exited $? after SIGTERM"; exit 1; }
}
count() { grep -c "$1" "$dir/up.log" || true; }

# reset: curl sees a reset, the upstream never saw a connection
c0=$(count '^conn'); r0=$(count '^req')
start_proxy reset --seed 1 --rate 1 --reset 1
if curl -sS -m 5 "http://$px/refund" -d x >"$dir/r.body" 2>"$dir/r.err"; then echo "reset: curl succeeded"; exit 1; fi
grep -qi "reset" "$dir/r.err" || { cat "$dir/r.err"; exit 1; }
stop_proxy
[ "$(count '^conn')" = "$c0" ] || { echo "reset: upstream got a connection"; exit 1; }
grep -q '"fault":"reset".*"upstream_saw":false,"client_got_reply":false' "$dir/reset.jsonl"

# lost_reply: the upstream acted, curl got an error and no body
c0=$(count '^conn'); r0=$(count '^req')
start_proxy lost --seed 1 --rate 1 --lost-reply 1 --hold 50ms
if curl -sS -m 5 "http://$px/refund" -d x >"$dir/l.body" 2>"$dir/l.err"; then echo "lost: curl succeeded"; exit 1; fi
[ ! -s "$dir/l.body" ]
stop_proxy
[ "$(count '^req')" = $((r0 + 1)) ] || { echo "lost: upstream did not see exactly one request"; exit 1; }
grep -q '"fault":"lost_reply".*"upstream_saw":true,"client_got_reply":false' "$dir/lost.jsonl"

# duplicate: one reply to curl, two requests at the upstream
r0=$(count '^req')
start_proxy dup --seed 1 --rate 1 --duplicate 1
out=$(curl -sS -m 5 "http://$px/refund" -d x)
[[ $out == ok* ]] || { echo "dup: bad reply $out"; exit 1; }
wait_line "$dir/up.log" "^req $((r0 + 2)) " "second delivery at the upstream"
stop_proxy
[ "$(count '^req')" = $((r0 + 2)) ]
grep -q '"fault":"duplicate".*"upstream_saw":true,"client_got_reply":true' "$dir/dup.jsonl"

# The same seed twice gives the same trace and the client the same outcomes
# (each curl's exit status is recorded); keep-alive exchanges are counted.
# Another seed, or another proxy name, gives another trace: the decisions
# are a function of them, not of the clock.
det_run() {	# NAME SEED PROXYNAME
	start_proxy "$1" --seed "$2" --rate 30% --hold 5ms --latency 0ms..5ms --name "$3"
	: >"$dir/$1.curl"
	for i in 1 2 3 4 5 6; do
		st=0; curl -s -m 5 "http://$px/r$i" "http://$px/s$i" >/dev/null 2>&1 || st=$?
		echo "curl $i: $st" >>"$dir/$1.curl"
	done
	stop_proxy
}
det_run deta 1477 provider
det_run detb 1477 provider
det_run detc 1478 provider
det_run detd 1477 bank
cmp "$dir/deta.jsonl" "$dir/detb.jsonl" || { echo "det: same seed, different traces"; exit 1; }
cmp "$dir/deta.curl" "$dir/detb.curl" || { echo "det: same seed, different client outcomes"; exit 1; }
[ "$(wc -l <"$dir/deta.jsonl")" -ge 12 ] || { echo "det: fewer than 12 exchanges traced"; exit 1; }
grep -q '"fault":"\(lost_reply\|reset\|duplicate\)"' "$dir/deta.jsonl" ||
    { echo "det: seed 1477 at 30% rolled no fault in $(wc -l <"$dir/deta.jsonl") exchanges"; exit 1; }
grep -qv ': 0$' "$dir/deta.curl" || { echo "det: no curl saw a fault"; exit 1; }
! cmp -s "$dir/deta.jsonl" "$dir/detc.jsonl" || { echo "det: seeds 1477 and 1478 gave one trace"; exit 1; }
! cmp -s "$dir/deta.jsonl" "$dir/detd.jsonl" || { echo "det: proxy names provider and bank gave one trace"; exit 1; }

# usage errors
if "$SOAK_BIN" proxy --listen 127.0.0.1:0 --seed 1 2>/dev/null; then exit 1; fi
"$SOAK_BIN" proxy --help | grep -q -- '--lost-reply'
echo "proxy_curl: ok"
