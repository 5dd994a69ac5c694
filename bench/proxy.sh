#!/usr/bin/env bash
# soak's fault proxy (no faults) vs direct vs haproxy (tcp mode) vs socat:
# iperf3 throughput, ping-pong latency, new connections per second.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SOAK=$PWD/$BUILD/soak
H=$PWD/$BUILD/tests/helpers
PP=$PWD/$BUILD/bench/proxy_pingpong
dir=$(mktemp -d /tmp/soak-bench-proxy.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {	# PORT WHAT
	local deadline=$((SECONDS + 10))
	until (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || { echo "watchdog: $2 not listening after 10s"; exit 1; }
		read -rt 0.02 <> <(:) || true
	done
}
wait_line() {
	local deadline=$((SECONDS + 10))
	until grep -Eq "$2" "$1" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || { echo "watchdog: no \"$3\" after 10s"; exit 1; }
		read -rt 0.02 <> <(:) || true
	done
}

"$H/proxy_upstream" echo >/dev/null 2>&1 & pids+=($!)
echo_port=$(freeport); kill "${pids[-1]}"; unset 'pids[-1]'
"$H/proxy_upstream" echo "$echo_port" >/dev/null & pids+=($!)
ip_port=$(freeport)
iperf3 -s -B 127.0.0.1 -p "$ip_port" >/dev/null 2>&1 & pids+=($!)
wait_port "$echo_port" "echo upstream"; wait_port "$ip_port" "iperf3 server"

# front TARGET_PORT -> prints "soak_port haproxy_port socat_port"
front() {
	local up=$1 sp hp cp
	sp=$(freeport); hp=$(freeport); cp=$(freeport)
	"$SOAK" proxy --listen "127.0.0.1:$sp" --upstream "127.0.0.1:$up" --seed 1 >"$dir/soak.$up" & pids+=($!)
	cat >"$dir/ha.$up.cfg" <<CFG
global
	maxconn 4000
defaults
	mode tcp
	timeout connect 5s
	timeout client 60s
	timeout server 60s
frontend f
	bind 127.0.0.1:$hp
	default_backend b
backend b
	server s 127.0.0.1:$up
CFG
	haproxy -f "$dir/ha.$up.cfg" -db >/dev/null 2>&1 & pids+=($!)
	socat "TCP-LISTEN:$cp,bind=127.0.0.1,fork,reuseaddr" "TCP:127.0.0.1:$up" >/dev/null 2>&1 & pids+=($!)
	wait_port "$sp" soak; wait_port "$hp" haproxy; wait_port "$cp" socat
	FRONT="$sp $hp $cp"
}
front "$echo_port"; read -r e_soak e_ha e_socat <<<"$FRONT"
front "$ip_port"; read -r i_soak i_ha i_socat <<<"$FRONT"

printf '%-8s %14s %10s %10s %10s %12s\n' via "iperf3 Gbit/s" "p50 us" "p99 us" "avg us" "conn/s"
for via in direct soak haproxy socat; do
	case $via in
	direct) ep=$echo_port ip=$ip_port ;;
	soak) ep=$e_soak ip=$i_soak ;;
	haproxy) ep=$e_ha ip=$i_ha ;;
	socat) ep=$e_socat ip=$i_socat ;;
	esac
	gbps=$(iperf3 -c 127.0.0.1 -p "$ip" -t 3 -J | python3 -c 'import json,sys; print("%.1f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9))')
	pp=$("$PP" "127.0.0.1:$ep" 20000 2000)
	p50=$(sed 's/.*rtt_p50_us=\([0-9]*\).*/\1/' <<<"$pp"); p99=$(sed 's/.*rtt_p99_us=\([0-9]*\).*/\1/' <<<"$pp")
	avg=$(sed 's/.*rtt_avg_us=\([0-9.]*\).*/\1/' <<<"$pp"); cps=$(sed 's/.*conn_per_s=\([0-9]*\).*/\1/' <<<"$pp")
	printf '%-8s %14s %10s %10s %10s %12s\n' "$via" "$gbps" "$p50" "$p99" "$avg" "$cps"
done
