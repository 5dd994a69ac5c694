#!/usr/bin/env bash
# bench/plan_replay.sh — what following a plan costs (the goal: a
# seed replayed by --plan within 1.05x of the same seed by --seed).  The
# reservations example (4 turns, its random schedule): one failing seed's
# plan from a short run, then PAIRS interleaved pairs of `soak replay
# --seed N` and `soak replay CONFIG --plan failures/N/plan.json` (the order
# within a pair alternates), each pair's ratio, and the median ratio, with
# the machine's load.  Both replays start the embedded database, so the
# figures are whole replays as a user runs them.  Never fails on timing.
#   PAIRS=10 bash bench/plan_replay.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-10}
SOAK=${SOAK:-$PWD/build/soak}
EX=$PWD/examples/reservations
T=$(mktemp -d /tmp/soak-bench-plan.XXXXXX)
trap 'rm -rf "$T"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ms() { date +%s%3N; }

sed -e "s#\./reserve_turn#$EX/reserve_turn#" -e "s#schema: schema.sql#schema: $EX/schema.sql#" \
    -e 's/^turns: 8$/turns: 4/' -e '/^tickets:/,$d' "$EX/soak.yaml" >"$T/res.yaml"
"$SOAK" run "$T/res.yaml" --seeds 0..3 --out "$T/run" >/dev/null 2>&1 || true
seed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min // empty' "$T/run/report.json")
[ -n "$seed" ] || { echo "bench/plan_replay.sh: no failing seed in 0..3"; exit 1; }
P=$T/run/failures/$seed/plan.json

one() {	# seed|plan: the wall time of one replay, ms
	local t0 rc=0
	t0=$(ms)
	if [ "$1" = seed ]; then
		"$SOAK" replay "$T/res.yaml" --seed "$seed" --out "$T/o" >/dev/null 2>&1 || rc=$?
	else
		"$SOAK" replay "$T/res.yaml" --plan "$P" --out "$T/o" >/dev/null 2>&1 || rc=$?
	fi
	rm -rf "$T/o"
	[ "$rc" -eq 1 ] || echo "bench/plan_replay.sh: a $1 replay of seed $seed exited $rc, not 1" >&2
	echo $(($(ms) - t0))
}

echo "bench/plan_replay.sh: seed $seed of reservations (4 turns), PAIRS=$PAIRS, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
ratios=() seeds=() plans=()
for i in $(seq "$PAIRS"); do
	if [ $((i % 2)) -eq 1 ]; then s=$(one seed); p=$(one plan); else p=$(one plan); s=$(one seed); fi
	seeds+=("$s") plans+=("$p")
	ratios+=("$(awk -v p="$p" -v s="$s" 'BEGIN { printf "%.3f", p / s }')")
done
printf '%-34s %s\n' "--seed replay, median ms" "$(printf '%s\n' "${seeds[@]}" | median)"
printf '%-34s %s\n' "--plan replay, median ms" "$(printf '%s\n' "${plans[@]}" | median)"
printf '%-34s %sx (goal <= 1.05x; pairs: %s)\n' "--plan / --seed, median of pairs" \
    "$(printf '%s\n' "${ratios[@]}" | median)" "${ratios[*]}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
