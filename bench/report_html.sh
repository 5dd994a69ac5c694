#!/usr/bin/env bash
# bench/report_html.sh — what report.html costs (its budgets: at most
# 3 MB for 200 seeds, 15 MB at 100,000, written in under a second for
# 2,000): made-up run folders (tests/fakes/report_synth.py, a failure every
# 7th seed, two fingerprints, 4 workers; at 100,000 one failure in 97) and,
# with REFUNDS=DIR, a real refunds run's folder.  Prints, per size, the
# page's bytes and the median of RUNS `soak report` wall times, its user
# CPU, and the ratio to the 2,000-seed budget, with the machine's load.
# Never fails on timing.
#   RUNS=5 bash bench/report_html.sh [REFUNDS=soak-out/RUN]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SOAK=${SOAK:-$PWD/build/soak}
T=$(mktemp -d /tmp/soak-bench-html.XXXXXX)
trap 'rm -rf "$T"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# one DIR: "bytes median_wall_ms median_cpu_ms" (cpu: user + system, of
# soak report alone, from bash's time)
measure() {
	local i ms=() cpu=() line TIMEFORMAT='%R %U %S'
	for i in $(seq "$RUNS"); do
		line=$( { time "$SOAK" report "$1" --no-previous >/dev/null 2>&1; } 2>&1 )
		ms+=($(awk '{ printf "%d", $1 * 1000 }' <<<"$line"))
		cpu+=($(awk '{ printf "%d", ($2 + $3) * 1000 }' <<<"$line"))
	done
	echo "$(stat -c %s "$1/report.html") $(printf '%s\n' "${ms[@]}" | median) $(printf '%s\n' "${cpu[@]}" | median)"
}

echo "bench/report_html.sh: RUNS=$RUNS, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
printf '%-22s %12s %10s %10s %14s\n' "run" "bytes" "median ms" "cpu ms" "vs 1 s budget"
for n in 200 2000 20000 100000; do
	every=7
	[ "$n" -ge 20000 ] && every=97
	python3 tests/fakes/report_synth.py "$T/s$n" --seeds "$n" --fps "dup refund,lost credit" \
	    --fail-every "$every" --infra-every 1009 --workers 4 --scheduled
	read -r bytes ms cpu < <(measure "$T/s$n")
	printf '%-22s %12s %10s %10s %13.2fx\n' "synthetic $n seeds" "$bytes" "$ms" "$cpu" \
	    "$(echo "$ms / 1000" | bc -l)"
done
if [ -n "${REFUNDS:-}" ]; then
	cp -r "$REFUNDS" "$T/refunds"
	read -r bytes ms cpu < <(measure "$T/refunds")
	printf '%-22s %12s %10s %10s %13.2fx\n' "refunds ($(jq .seeds.count "$T/refunds/report.json") seeds)" \
	    "$bytes" "$ms" "$cpu" "$(echo "$ms / 1000" | bc -l)"
fi
echo "budgets: 200 seeds <= 3 MB, 100,000 <= 15 MB, 2,000 written < 1 s (load $(cut -d' ' -f1 /proc/loadavg))"
