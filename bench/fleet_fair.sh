#!/usr/bin/env bash
# Fair admission under floods (bench/README.md "Fair admission"): runs
# tests/integration/fleet_fair.sh RUNS times (3) and prints, per case, the
# median and the worst over the runs of a real worker's first lease (from
# its start; its WELCOME comes a round trip or two before) under no flood,
# 200 silent addresses reconnecting, 1,000 slowloris connections with
# descriptors to spare and at a limit of 256, and 2,000 wrong proofs; the
# join storm's time for 1,000 simulated workers from 4 addresses and its
# retries; and the coordinator's CPU per wrong proof.  Needs root (the
# test's own PostgreSQL runs as the postgres user).  Never fails on timing:
# only when a run of the test fails.  About 25 s a run on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
export SOAK_BIN=$PWD/$BUILD/soak SOAK_BUILD=$PWD/$BUILD SOAK_ROOT=$PWD
for b in "$SOAK_BIN" "$SOAK_BUILD/tests/helpers/soak_peer" "$SOAK_BUILD/bench/fleet_sim"; do
	[ -x "$b" ] || { echo "fleet_fair: no $b (make all $BUILD/tests/helpers/soak_peer $BUILD/bench/fleet_sim)" >&2; exit 1; }
done
dir=$(mktemp -d /tmp/soak-bench-fair.XXXXXX)
trap 'rm -rf "$dir"' EXIT
for r in $(seq 1 "$RUNS"); do
	bash tests/integration/fleet_fair.sh >"$dir/run$r.log" 2>&1 ||
	    { tail -n 20 "$dir/run$r.log"; echo "fleet_fair: run $r failed"; exit 1; }
done
# first TEXT: the first line of each run's log that holds TEXT (the test
# prints each figure twice: as it comes, and all together at the end).
first() { local f; for f in "$dir"/run*.log; do grep -m1 -F -- "$1" "$f" || true; done; }
# med_max VALUES...: "median M ms, worst W ms"
med_max() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "median %5d ms, worst %5d ms", v[int((NR + 1) / 2)], v[NR] }'; }
echo "fair admission, $RUNS runs (load $(cut -d' ' -f1-3 /proc/loadavg)):"
for c in "none" "hush (200 addresses, silent)" "slowloris (1,000, descriptors remain)" \
    "the descriptor limit (1,000 on 256)" "guesses (2,000 wrong proofs)"; do
	v=$(first "first lease under $c:" | sed -n 's/.*first lease after *\([0-9]*\) ms.*/\1/p')
	# shellcheck disable=SC2086
	printf '  first lease, %-40s %s\n' "$c:" "$(med_max $v)"
done
v=$(first 'join storm of' | sed -n 's/.*all joined after \([0-9]*\) ms.*/\1/p')
r=$(first 'join storm of' | sed -n 's/.*ms, \([0-9]*\) joins closed.*/\1/p' | sort -n | paste -sd' ')
# shellcheck disable=SC2086
printf '  join storm, 1,000 workers from 4 addresses:       %s (retries per run: %s)\n' "$(med_max $v)" "$r"
printf '  coordinator CPU per wrong proof (us, per run):    %s\n' \
    "$(first 'coordinator CPU over the guesses' | sed -n 's/.*ms, \([0-9]*\) us a guess.*/\1/p' | paste -sd' ')"
