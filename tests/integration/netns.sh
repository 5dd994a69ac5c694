# Machines on one switch, for the cluster tests: network namespaces on a
# bridge, sourced after lib.sh.  Nothing here reaches the machine's own
# network: the bridge lives in a "switch" namespace of its own, each
# machine is a namespace with one veth into it, and no link touches the
# root namespace, so 10.213.0.0/24 exists only inside this test (names
# carry the test's PID, so parallel runs do not meet).
#
#   netns_up HOST...      creates the switch and one namespace per HOST
#                         (plus "c", the coordinator at 10.213.0.1, and
#                         "db" at 10.213.0.2); HOST k (1-based) gets
#                         10.213.0.(10+k).  Fails the test when it cannot.
#   host_run HOST CMD...  runs CMD in HOST's namespace with its own
#                         hostname (HOST), so a worker's HELLO names it
#   host_spawn HOST CMD...  the same in the background; HOST_PID is CMD's
#                         own pid (not a subshell's), for kill and wait_exit
#   host_addr HOST        its address
#   host_cut HOST         nftables in HOST's namespace drops every packet
#                         to or from the coordinator (10.213.0.1); TCP
#                         connections stay open and retransmit, as across
#                         a partition
#   host_restore HOST     removes that rule
#   host_kill HOST        SIGKILLs every process in HOST's namespace
#   netns_pg              a PostgreSQL in "db" at 10.213.0.2:5432, password
#                         (scram) only from 10.213.0.0/24; sets NETNS_DB_URL
#                         (keyword form, with the password) for workers'
#                         SOAK_DATABASE_URL
#
# The cleanup hook (lib.sh's cleanup_hooks) stops PostgreSQL, SIGKILLs
# every process left in each namespace, waits for them (bounded), and
# deletes the namespaces, which deletes their links.

NETNS_PREFIX=soak$$
NETNS_HOSTS=()
NETNS_NET=10.213.0
declare -A NETNS_ADDR=()

netns_name() { echo "$NETNS_PREFIX-$1"; }

netns_down() {
	local h ns p pids
	if [ -n "${NETNS_PGDIR:-}" ]; then
		runuser -u postgres -- "$NETNS_PGBIN/pg_ctl" -D "$NETNS_PGDIR/data" \
		    -m immediate stop >/dev/null 2>&1 || true
	fi
	for h in "${NETNS_HOSTS[@]}" sw; do
		ns=$(netns_name "$h")
		[ -e "/run/netns/$ns" ] || continue
		pids=$(ip netns pids "$ns" 2>/dev/null || true)
		[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
		for p in $pids; do timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || echo "netns: could not delete $ns" >&2
	done
	[ -z "${NETNS_PGDIR:-}" ] || rm -rf "$NETNS_PGDIR"
}

# netns_link HOST ADDR: HOST's namespace, its veth into the switch, lo up.
netns_link() {
	local h=$1 addr=$2 ns
	ns=$(netns_name "$h")
	ip netns add "$ns" || fail "netns: cannot create namespace $ns (needs root and CONFIG_NET_NS)"
	NETNS_HOSTS+=("$h")
	# Both ends are created inside namespaces: nothing appears in the root one.
	ip link add "p-$h" netns "$(netns_name sw)" type veth peer name eth0 netns "$ns" ||
	    fail "netns: cannot create the veth pair of $h"
	ip -n "$(netns_name sw)" link set "p-$h" master br0 up || fail "netns: cannot plug $h into the bridge"
	ip -n "$ns" link set lo up || fail "netns: cannot bring lo up in $ns"
	ip -n "$ns" addr add "$addr/24" dev eth0 || fail "netns: cannot give $h $addr"
	ip -n "$ns" link set eth0 up || fail "netns: cannot bring $h's eth0 up"
	NETNS_ADDR[$h]=$addr
}

netns_up() {
	local k=0 h
	command -v ip >/dev/null || fail "netns: no ip(8) (iproute2)"
	command -v nft >/dev/null || fail "netns: no nft(8) (nftables; make deps installs it)"
	cleanup_hooks+=("netns_down")
	ip netns add "$(netns_name sw)" || fail "netns: cannot create namespace $(netns_name sw) (needs root)"
	ip -n "$(netns_name sw)" link add br0 type bridge || fail "netns: cannot create the bridge"
	ip -n "$(netns_name sw)" link set br0 up || fail "netns: cannot bring the bridge up"
	ip -n "$(netns_name sw)" link set lo up
	netns_link c "$NETNS_NET.1"
	netns_link db "$NETNS_NET.2"
	for h in "$@"; do
		k=$((k + 1))
		netns_link "$h" "$NETNS_NET.$((10 + k))"
	done
	ok "network namespaces: switch, c=$NETNS_NET.1, db=$NETNS_NET.2, $(for h in "$@"; do printf '%s=%s ' "$h" "${NETNS_ADDR[$h]}"; done)"
}

host_addr() { echo "${NETNS_ADDR[$1]}"; }

# ip netns exec, unshare and sh each exec the next: CMD keeps their pid.
host_run() {
	local h=$1; shift
	ip netns exec "$(netns_name "$h")" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$h" "$@"
}
# Not `host_run … &`: that would background a subshell running the function.
host_spawn() {
	local h=$1; shift
	ip netns exec "$(netns_name "$h")" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$h" "$@" &
	HOST_PID=$!
}

host_cut() {
	ip netns exec "$(netns_name "$1")" nft -f - <<NFT || fail "netns: nft cannot cut $1"
table inet soakcut {
	chain in { type filter hook input priority 0; policy accept; ip saddr $NETNS_NET.1 drop; }
	chain out { type filter hook output priority 0; policy accept; ip daddr $NETNS_NET.1 drop; }
}
NFT
	ok "cut $1 off the coordinator (nftables in $(netns_name "$1"))"
}

host_restore() {
	ip netns exec "$(netns_name "$1")" nft delete table inet soakcut ||
	    fail "netns: nft cannot restore $1"
	ok "restored $1's traffic to the coordinator"
}

host_kill() {
	local pids
	pids=$(ip netns pids "$(netns_name "$1")")
	[ -n "$pids" ] || fail "host_kill $1: no process in its namespace"
	kill -KILL $pids
	ok "SIGKILLed every process of $1: $(echo $pids)"
}

# A PostgreSQL reachable by every host, as a real cluster would share one.
netns_pg() {
	NETNS_PGBIN=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
	NETNS_PGDIR=$(mktemp -d /tmp/soak-netns-pg.XXXXXX)
	local pw
	pw=$(openssl rand -hex 16)
	chmod 755 "$NETNS_PGDIR"
	chown postgres "$NETNS_PGDIR"
	runuser -u postgres -- "$NETNS_PGBIN/initdb" -D "$NETNS_PGDIR/data" -U postgres \
	    --auth-local=trust --auth-host=reject >/dev/null || fail "netns: initdb failed"
	cat >"$NETNS_PGDIR/data/pg_hba.conf" <<HBA
local all postgres trust
host soak soak $NETNS_NET.0/24 scram-sha-256
HBA
	host_run db runuser -u postgres -- "$NETNS_PGBIN/pg_ctl" -D "$NETNS_PGDIR/data" -w -t 30 \
	    -l "$NETNS_PGDIR/pg.log" -o "-k $NETNS_PGDIR -p 5432 -c listen_addresses=$NETNS_NET.2 \
	    -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
	    start >/dev/null || { cat "$NETNS_PGDIR/pg.log" >&2; fail "netns: PostgreSQL did not start in db"; }
	psql -X -q -h "$NETNS_PGDIR" -p 5432 -U postgres -d postgres -v ON_ERROR_STOP=1 \
	    -c "CREATE ROLE soak LOGIN PASSWORD '$pw'" -c "CREATE DATABASE soak OWNER soak" ||
	    fail "netns: cannot create the soak role"
	NETNS_DB_URL="host=$NETNS_NET.2 port=5432 user=soak dbname=soak password=$pw sslmode=disable connect_timeout=10"
	# Through the switch from every host (and so the bridge forwards), with
	# the password; and not without it.
	for h in "${NETNS_HOSTS[@]}"; do
		case $h in c|db|sw) continue;; esac
		[ "$(host_run "$h" psql -X -q -t -A -d "$NETNS_DB_URL" -c 'SELECT 1')" = 1 ] ||
		    fail "netns: $h cannot reach PostgreSQL at $NETNS_NET.2"
		! host_run "$h" psql -X -w -d "host=$NETNS_NET.2 user=soak dbname=soak sslmode=disable" \
		    -c 'SELECT 1' >/dev/null 2>&1 || fail "netns: PostgreSQL lets $h in without a password"
	done
	ok "PostgreSQL at $NETNS_NET.2:5432 in $(netns_name db), scram from $NETNS_NET.0/24"
}
