#!/usr/bin/env bash
# bench/minimize.sh — what `soak minimize` costs (the goal: under
# 60 s a seed for refunds and reservations, under 120 s for the ledger, on
# 2 cores).  For each example, the failing seeds of a short run (SEEDS of
# them at most, from 0), each minimized with the default 3 tries: its
# replays, its whole wall time (the command as a user runs it: the
# embedded database's start, the original's tries, the story), the plan's
# elements before (rounds of more than one, turns, faults, preemptions)
# and after, and replays per element before; the medians and the worst,
# with the machine's load.  Never fails on timing.
#   SEEDS=4 bash bench/minimize.sh [refunds reservations ledger]
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-4}
SOAK=${SOAK:-$PWD/build/soak}
T=$(mktemp -d /tmp/soak-bench-min.XXXXXX)
trap 'rm -rf "$T"' EXIT
examples=("$@")
[ ${#examples[@]} -gt 0 ] || examples=(refunds reservations ledger)

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
worst() { sort -g | tail -n 1; }
ms() { date +%s%3N; }
# the counts line "rounds 5 → 2, turns 30 → 3, ..., 195 replays, 13 s": before, after
elements() { grep -A2 '^1-minimal' "$1" | tail -n 1 | grep -oE "[0-9]+ → [0-9]+" | awk -v side="$2" '{ s += (side == "before" ? $1 : $3) } END { print s + 0 }'; }

echo "bench/minimize.sh: SEEDS=$SEEDS, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
printf '%-13s %5s %8s %8s %9s %9s %s\n' example seed replays wall_s elements kept per_element
for ex in "${examples[@]}"; do
	cfg=$PWD/examples/$ex/soak.yaml
	"$SOAK" run "$cfg" --seeds 0..$((SEEDS - 1)) --out "$T/$ex" >/dev/null 2>&1 || true
	reps=() walls=()
	for f in "$T/$ex"/failures/*/plan.json; do
		[ -e "$f" ] || continue
		s=$(basename "$(dirname "$f")")
		t0=$(ms) rc=0
		"$SOAK" minimize "$cfg" --plan "$f" --out "$T/m.json" >"$T/m.out" 2>&1 || rc=$?
		wall=$(awk -v t="$(($(ms) - t0))" 'BEGIN { printf "%.1f", t / 1000 }')
		if [ "$rc" -ne 0 ]; then
			echo "bench/minimize.sh: $ex seed $s: minimize exited $rc" >&2
			continue
		fi
		r=$(sed -n 's/^replays: \([0-9]*\), of.*/\1/p' "$T/m.out")
		b=$(elements "$T/m.out" before) a=$(elements "$T/m.out" after)
		printf '%-13s %5s %8s %8s %9s %9s %s\n' "$ex" "$s" "$r" "$wall" "$b" "$a" \
		    "$(awk -v r="$r" -v b="$b" 'BEGIN { printf "%.2f", b ? r / b : 0 }')"
		reps+=("$r") walls+=("$wall")
	done
	[ ${#reps[@]} -gt 0 ] || { echo "$ex: no failing seed of 0..$((SEEDS - 1)) minimized"; continue; }
	echo "$ex: ${#reps[@]} seeds; replays median $(printf '%s\n' "${reps[@]}" | median), worst $(printf '%s\n' "${reps[@]}" | worst); wall median $(printf '%s\n' "${walls[@]}" | median) s, worst $(printf '%s\n' "${walls[@]}" | worst) s"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
