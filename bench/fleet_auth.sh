#!/usr/bin/env bash
# What authenticating the fleet costs, per link kind, on loopback
# (127.0.0.1 only; bench/README.md "Fleet authentication"):
#
#   tcp      tcp://, coordinator and worker --insecure (the baseline)
#   secret   tcp:// + shared secret: HELLO -> CHALLENGE -> AUTH -> WELCOME,
#            then every message MAC'd
#   tls      tls+tcp://: the coordinator's certificate (worker --tls-ca),
#            workers proved by the shared secret (so also MAC'd)
#   mtls     tls+tcp:// with client certificates (--tls-client-ca), no secret
#
# 1. Handshakes: bench/fleet_handshake, a client that does what a worker
#    does to join (new connection, HELLO .. WELCOME, BYE, close) N times
#    against a real `soak coordinator` of each kind (seeds 0..0, never
#    leased, so it stays up); then, on one open connection, PINGS
#    HEARTBEAT -> ACK round trips (what every later message pays: MACs,
#    TLS records); and the HMAC alone (auth_seal/auth_open, no I/O).
#    Rounds interleave the kinds (order rotated) so the machine's changing
#    load falls on all alike; each figure is the median over rounds of a
#    round's median; ratios and added latency are taken against tcp in the
#    same round.  Coordinator CPU is the sum of its threads' run time
#    (/proc/PID/task/*/schedstat) over the client's run, warm-up included,
#    per operation.
# 2. Seeds/s: 200 seeds x 8 turns of /bin/true (orchestration.sh's noop8)
#    through `soak coordinator` + WORKERS x `soak worker` over each kind,
#    wall_ms from report.json.  Every worker uses one PostgreSQL started
#    before the runs (SOAK_DATABASE_URL), so wall_ms EXCLUDES a PostgreSQL
#    start and includes everything else: coordinator start, the workers'
#    start, dial and handshake, the seeds, the workers' BYE.  The
#    coordinator's CPU time over the run comes from wait4 (fleet_handshake
#    --time).  With IPC=1 also `soak run --workers WORKERS` (ipc://, same
#    database) for scale.  No pass/fail on timing: a run fails only when a
#    seed does not pass or a process fails.
#
# Knobs: BUILD, SOAK, HS (the fleet_handshake binary), RUNS (handshake
# rounds, default 5), N (timed handshakes per kind per round, default 100),
# WARMUP (untimed ones first, default 10), PINGS (round trips per kind per
# round, default 1000), SEED_RUNS (default 7), SEEDS (default 0..199),
# WORKERS (default 2), IPC (default 1).  About 1 to 1.5 minutes on a quiet
# 2-core machine with the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SOAK=${SOAK:-$PWD/$BUILD/soak}
HS=${HS:-$PWD/$BUILD/bench/fleet_handshake}
RUNS=${RUNS:-5} N=${N:-100} WARMUP=${WARMUP:-10} PINGS=${PINGS:-1000}
SEED_RUNS=${SEED_RUNS:-7} SEEDS=${SEEDS:-0..199} WORKERS=${WORKERS:-2} IPC=${IPC:-1}
for b in "$SOAK" "$HS"; do
	[ -x "$b" ] || { echo "fleet_auth: no $b (make all $BUILD/bench/fleet_handshake)" >&2; exit 1; }
done
command -v openssl >/dev/null || { echo "fleet_auth: needs the openssl CLI" >&2; exit 1; }
unset SOAK_SECRET SOAK_DATABASE_URL

dir=$(mktemp -d /tmp/soak-bench-fleet.XXXXXX)
pids=()		# what we started and still may have to stop, by pid
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$dir"
}
trap cleanup EXIT

echo "machine: $(nproc) CPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
if nng=$(dpkg-query -W -f '${Version}' libnng1 2>/dev/null) &&
    mbed=$(dpkg-query -W -f '${Version}' libmbedtls14 2>/dev/null); then
	echo "tls: nng $nng, mbedTLS $mbed (Debian packages); certificates EC P-256"
fi

# --- certificates: docs/fleet.md "Across machines"
# (tests/integration/fleet_tls.sh) ---
pki=$dir/pki
mkdir -p "$pki"
openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=soak bench CA" -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
issue() {	# NAME EXTENSIONS: NAME.pem holds the certificate and its key
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -subj "/CN=$1" -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null
	printf '%b' "$2" >"$pki/$1.ext"
	openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" \
	    -CAcreateserial -days 2 -extfile "$pki/$1.ext" -out "$pki/$1.crt" 2>/dev/null
	cat "$pki/$1.crt" "$pki/$1.key" >"$pki/$1.pem" && chmod 600 "$pki/$1.pem"
}
# mbedTLS 2.28 matches DNS names only: DNS:localhost, dialed as 127.0.0.1
# with --tls-server-name localhost.
issue coordinator 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n'
issue worker 'extendedKeyUsage=clientAuth\n'
(umask 077 && openssl rand -hex 32 >"$pki/secret")
[ -s "$pki/coordinator.pem" ] && [ -s "$pki/worker.pem" ] || {
	echo "fleet_auth: openssl made no certificates" >&2; exit 1; }

KINDS=(tcp secret tls mtls)
declare -A SCHEME=([tcp]=tcp [secret]=tcp [tls]=tls+tcp [mtls]=tls+tcp)
# Word-split on purpose: $pki is a mktemp path without spaces.
declare -A CARGS=([tcp]="--insecure" [secret]="--secret-file $pki/secret"
    [tls]="--tls-cert $pki/coordinator.pem --secret-file $pki/secret"
    [mtls]="--tls-cert $pki/coordinator.pem --tls-client-ca $pki/ca.pem")
declare -A WARGS=([tcp]="--insecure" [secret]="--secret-file $pki/secret"
    [tls]="--tls-ca $pki/ca.pem --tls-server-name localhost --secret-file $pki/secret"
    [mtls]="--tls-ca $pki/ca.pem --tls-server-name localhost --tls-cert $pki/worker.pem")

echo "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL);" >"$dir/schema.sql"
cat >"$dir/noop8.yaml" <<YAML
name: noop8
seeds: 0..199
turns: 8
rounds: 1
seed_timeout: 60s
database:
  schema: schema.sql
  reset: truncate
turn:
  command: [/bin/true]
  timeout: 10s
invariants:
  - name: trivial
    sql: SELECT id FROM t WHERE v < 0
YAML

# start_coordinator KIND SEEDS NAME [WRAPPER...]: sets $cpid, $curl.
start_coordinator() {
	local k=$1 seeds=$2 name=$3
	shift 3
	# shellcheck disable=SC2086
	"$@" "$SOAK" coordinator "$dir/noop8.yaml" --listen "${SCHEME[$k]}://127.0.0.1:0" \
	    --seeds "$seeds" --out "$dir/$name" ${CARGS[$k]} >"$dir/$name.out" 2>"$dir/$name.err" &
	cpid=$!
	pids+=("$cpid")
	# Woken by each write (tail -F); tail ends with the coordinator.
	grep -m1 -q 'listening on' < <(timeout 10 tail -n +1 -F --pid="$cpid" \
	    "$dir/$name.err" 2>/dev/null) || true
	curl=$(grep -oE 'listening on [^ ]+' "$dir/$name.err" | cut -d' ' -f3 || true)
	if [ -z "$curl" ]; then
		echo "fleet_auth: the $k coordinator did not listen:" >&2
		cat "$dir/$name.err" >&2
		exit 1
	fi
}
# The CPU time (ns) every thread of PID has run so far.
sched_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}'; }
kv() { sed -n "s/^# $1=//p" "$2"; }
rec() { echo "$*" >>"$dir/results.tsv"; }	# PHASE KIND ROUND KEY VALUE
: >"$dir/results.tsv"

# --- 1. handshakes ---
echo
echo "-- handshakes: $N per link per round (+$WARMUP warm-up), one new connection each;"
echo "   then $PINGS heartbeat round trips on one open connection; $RUNS rounds"
declare -A HURL HPID
for k in "${KINDS[@]}"; do
	start_coordinator "$k" 0..0 "hs-$k"
	HURL[$k]=$curl HPID[$k]=$cpid
done
# coord_cpu NS0 NS1 COUNT: the coordinator's CPU µs per operation
coord_cpu() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN {printf "%.1f", (b - a) / 1000 / n}'; }
for r in $(seq "$RUNS"); do
	for j in 0 1 2 3; do
		k=${KINDS[$(((r + j) % 4))]}
		for what in handshakes pings; do
			if [ $what = pings ]; then
				args=(--pings --warmup "$((PINGS / 10))" "${HURL[$k]}" "$PINGS")
				ops=$((PINGS + PINGS / 10))
			else
				args=(--warmup "$WARMUP" "${HURL[$k]}" "$N")
				ops=$((N + WARMUP))
			fi
			c0=$(sched_ns "${HPID[$k]}")
			# shellcheck disable=SC2086
			if ! "$HS" ${WARGS[$k]} "${args[@]}" >"$dir/hs.txt" 2>"$dir/hs.err"; then
				echo "fleet_auth: $what over $k failed:" >&2
				cat "$dir/hs.err" >&2
				tail -5 "$dir/hs-$k.err" >&2
				exit 1
			fi
			c1=$(sched_ns "${HPID[$k]}")
			if [ $what = pings ]; then
				keys="ping_us ping_p90_us ping_rate ping_cpu_us"
				rec hs "$k" "$r" ping_coord_us "$(coord_cpu "$c0" "$c1" "$ops")"
			else
				keys="rate to_welcome_us p90_us config_us connect_us msgs_us cpu_us"
				rec hs "$k" "$r" coord_cpu_us "$(coord_cpu "$c0" "$c1" "$ops")"
			fi
			for key in $keys; do rec hs "$k" "$r" "$key" "$(kv "$key" "$dir/hs.txt")"; done
		done
	done
done
for k in "${KINDS[@]}"; do kill "${HPID[$k]}"; done
for k in "${KINDS[@]}"; do wait "${HPID[$k]}" 2>/dev/null || true; done
pids=()

python3 - "$dir/results.tsv" "$N" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("hs ")]
d = {}
for _, k, r, key, v in rows:
    d.setdefault(k, {}).setdefault(key, {})[int(r)] = float(v)
kinds = ["tcp", "secret", "tls", "mtls"]
label = {"tcp": "tcp (--insecure)", "secret": "tcp + secret (HMAC)",
         "tls": "tls + secret", "mtls": "mutual tls"}
med = lambda k, key: st.median(d[k][key].values())
rounds = sorted(d["tcp"]["rate"])
def vs_tcp(k, key, f):	# median over rounds of f(kind's, tcp's) in the same round
    return st.median(f(d[k][key][r], d["tcp"][key][r]) for r in rounds)
print(f"{'link':<21}{'hs/s':>7}{'x tcp':>7}{'to WELCOME':>11}{'+ vs tcp':>9}{'p90':>7}"
      f"{'config':>8}{'connect':>9}{'messages':>9}{'CPU/hs client':>14}{'coord':>7}   hs/s per round")
print(f"{'':<21}{'':>7}{'':>7}{'µs':>11}{'µs':>9}{'µs':>7}{'µs':>8}{'µs':>9}{'µs':>9}{'µs':>14}{'µs':>7}")
for k in kinds:
    print(f"{label[k]:<21}{med(k,'rate'):>7.0f}{vs_tcp(k,'rate',lambda a,b:a/b):>7.2f}"
          f"{med(k,'to_welcome_us'):>11.0f}{vs_tcp(k,'to_welcome_us',lambda a,b:a-b):>+9.0f}"
          f"{med(k,'p90_us'):>7.0f}{med(k,'config_us'):>8.0f}{med(k,'connect_us'):>9.0f}{med(k,'msgs_us'):>9.0f}"
          f"{med(k,'cpu_us'):>14.0f}{med(k,'coord_cpu_us'):>7.0f}   "
          + " ".join(f"{d[k]['rate'][r]:.0f}" for r in rounds))
print("(to WELCOME = config + connect + messages: config = socket, dialer, TLS config "
      "from the PEM files; connect = TCP + TLS handshake + nng's SP header; messages = "
      "HELLO..WELCOME incl. CHALLENGE/AUTH; hs/s also counts BYE -> ACK and the close)")
print()
print(f"{'one message, open link':<24}{'RTT µs':>8}{'+ vs tcp':>9}{'p90':>7}{'RT/s':>7}"
      f"{'CPU/RT client':>14}{'coord':>7}{'+ both':>8}   RTT µs per round")
for k in kinds:
    both = lambda r: d[k]['ping_cpu_us'][r] + d[k]['ping_coord_us'][r]
    tboth = lambda r: d['tcp']['ping_cpu_us'][r] + d['tcp']['ping_coord_us'][r]
    print(f"{label[k]:<24}{med(k,'ping_us'):>8.0f}{vs_tcp(k,'ping_us',lambda a,b:a-b):>+9.0f}"
          f"{med(k,'ping_p90_us'):>7.0f}{med(k,'ping_rate'):>7.0f}{med(k,'ping_cpu_us'):>14.0f}"
          f"{med(k,'ping_coord_us'):>7.0f}{st.median(both(r) - tboth(r) for r in rounds):>+8.0f}   "
          + " ".join(f"{d[k]['ping_us'][r]:.0f}" for r in rounds))
print("(HEARTBEAT -> ACK, sealed with the session MAC where there is a secret: the framing "
      "every RESULT -> ACK of a seed pays; CPU in µs per round trip, '+ both' = client + "
      "coordinator above tcp's)")
PY

"$HS" --mac 20000 >"$dir/mac.txt"
echo "the session MAC alone (HMAC-SHA256, hot loop, 200-byte message): auth_seal $(kv seal_us \
    "$dir/mac.txt") µs, auth_open $(kv open_us "$dir/mac.txt") µs"

# --- 2. seeds/s over each link ---
echo
echo "-- seeds $SEEDS x 8 turns of /bin/true, $WORKERS workers over each link; wall_ms from"
echo "   report.json, EXCLUDING a PostgreSQL start (one shared, started before); median of $SEED_RUNS"
"$HS" --pg >"$dir/pg.out" 2>"$dir/pg.err" &
pgpid=$!
pids+=("$pgpid")
read -r _ < <(timeout 30 tail -n +1 -F --pid="$pgpid" "$dir/pg.out" 2>/dev/null) || true
[ -s "$dir/pg.out" ] || { echo "fleet_auth: no PostgreSQL:" >&2; cat "$dir/pg.err" >&2; exit 1; }
export SOAK_DATABASE_URL
SOAK_DATABASE_URL=$(head -1 "$dir/pg.out")

SKINDS=("${KINDS[@]}")
[ "$IPC" = 1 ] && SKINDS+=(ipc)
ns=${#SKINDS[@]}
for r in $(seq "$SEED_RUNS"); do
	for j in $(seq 0 $((ns - 1))); do
		k=${SKINDS[$(((r + j) % ns))]}
		out=$dir/seeds-$k-$r
		if [ "$k" = ipc ]; then
			if ! "$SOAK" run "$dir/noop8.yaml" --seeds "$SEEDS" --workers "$WORKERS" \
			    --out "$out" >"$out.out" 2>"$out.err"; then
				echo "fleet_auth: soak run failed:" >&2
				tail -5 "$out.err" >&2
				exit 1
			fi
		else
			start_coordinator "$k" "$SEEDS" "seeds-$k-$r" "$HS" --time "$out.cpu"
			wpids=()
			for w in $(seq "$WORKERS"); do
				# shellcheck disable=SC2086
				"$SOAK" worker --connect "$curl" ${WARGS[$k]} 2>"$out.w$w.err" &
				wpids+=($!)
				pids+=($!)
			done
			rc=0
			wait "$cpid" || rc=$?
			for p in "${wpids[@]}"; do wait "$p" || rc=$((rc ? rc : 100 + $?)); done
			pids=("$pgpid")
			if [ "$rc" != 0 ]; then
				echo "fleet_auth: the $k run failed ($rc):" >&2
				tail -5 "$out.err" "$out.w1.err" >&2
				exit 1
			fi
			rec seeds "$k" "$r" coord_cpu_ms "$(awk '{printf "%.1f", $1 / 1000}' "$out.cpu")"
		fi
		pass=$(jq '.totals.pass' "$out/report.json")
		[ "$pass" = "$(jq '.results | length' "$out/report.json")" ] || {
			echo "fleet_auth: $k: only $pass seeds passed" >&2; exit 1; }
		rec seeds "$k" "$r" wall_ms "$(jq '.wall_ms' "$out/report.json")"
		rec seeds "$k" "$r" seeds "$pass"
		rm -rf "$out"
	done
done

python3 - "$dir/results.tsv" "$WORKERS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("seeds ")]
w = int(sys.argv[2])
d = {}
for _, k, r, key, v in rows:
    d.setdefault(k, {}).setdefault(key, {})[int(r)] = float(v)
label = {"tcp": "tcp (--insecure)", "secret": "tcp + secret (HMAC)",
         "tls": "tls + secret", "mtls": "mutual tls", "ipc": "ipc:// (soak run)"}
rounds = sorted(d["tcp"]["wall_ms"])
n = d["tcp"]["seeds"][rounds[0]]
rate = lambda k, r: d[k]["seeds"][r] * 1000 / d[k]["wall_ms"][r]
print(f"{'link':<21}{'wall s':>8}{'seeds/s':>9}{'x tcp':>7}{'+ms vs tcp':>11}"
      f"{'ms/seed/wkr':>12}{'coord CPU ms':>13}{'+ vs tcp':>9}{'µs/seed':>9}   wall ms per run")
for k in [k for k in ["tcp", "secret", "tls", "mtls", "ipc"] if k in d]:
    wall = st.median(d[k]["wall_ms"].values())
    ratio = st.median(rate(k, r) / rate("tcp", r) for r in rounds)
    added = st.median(d[k]["wall_ms"][r] - d["tcp"]["wall_ms"][r] for r in rounds)
    cpu = d[k].get("coord_cpu_ms")
    tcpu = d["tcp"]["coord_cpu_ms"]
    cpus = (f"{st.median(cpu.values()):>13.0f}"
            f"{st.median(cpu[r] - tcpu[r] for r in rounds):>+9.0f}"
            f"{st.median(cpu.values()) * 1000 / n:>9.0f}"
            if cpu else f"{'–':>13}{'–':>9}{'–':>9}")
    print(f"{label[k]:<21}{wall / 1000:>8.2f}{n * 1000 / wall:>9.1f}{ratio:>7.2f}{added:>+11.0f}"
          f"{wall * w / n:>12.2f}{cpus}   "
          + " ".join(str(int(d[k]['wall_ms'][r])) for r in rounds))
print("(x tcp, + vs tcp: median over rounds of the same round's ratio / difference; "
      "coord CPU: the coordinator process's user+system time over the whole run, "
      "start and report included; µs/seed = that / seeds)")
PY
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
