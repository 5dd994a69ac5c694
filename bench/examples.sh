#!/usr/bin/env bash
# The examples' figures against a baseline soak measured in the same run
# (issue 34's goal: reservations, ledger, commit and refunds within 10 %):
# each example's soak.yaml, SEEDS seeds with `soak run` as a user runs it
# (the embedded database started by each run), once by this tree's soak and
# once by BASE's, the two taking turns inside each of RUNS rounds (the
# order alternating) so the machine's drift falls on both alike.  BASE is
# a soak binary, or BASE_REF a commit this script builds in a scratch
# worktree (about a minute); without either only this tree's soak runs.
# Both run the same example files, this tree's.  Prints each run's wall
# time (report.json's wall_ms) and failing seeds, the medians, the ratio
# this/base (goal 0.9-1.1 for time, the failing seeds within 10 %), and
# the machine's load before and after.
#   RUNS=3 SEEDS=0..39 WORKERS=2 BASE_REF=4ed66c3 bash bench/examples.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SOAK=$PWD/$BUILD/soak
RUNS=${RUNS:-3}
SEEDS=${SEEDS:-0..39}
WORKERS=${WORKERS:-2}
EXAMPLES=${EXAMPLES:-reservations ledger commit refunds}
BASE=${BASE:-}
dir=$(mktemp -d /tmp/soak-bench-examples.XXXXXX)
wt=
cleanup() {
	[ -z "$wt" ] || git worktree remove --force "$wt" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT

if [ -z "$BASE" ] && [ -n "${BASE_REF:-}" ]; then
	wt=$dir/base-tree
	git worktree add -q --detach "$wt" "$BASE_REF"
	echo "building $BASE_REF for the baseline ($(git -C "$wt" log -1 --format='%h %s' | cut -c1-72))"
	make -C "$wt" -j2 all >"$dir/base-build.log" 2>&1 ||
	    { tail -n 20 "$dir/base-build.log"; echo "bench/examples.sh: $BASE_REF did not build"; exit 1; }
	BASE=$wt/build/soak
fi
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "bench/examples.sh: BASE=$BASE is not a program"; exit 1; }
sides=(this)
[ -z "$BASE" ] || sides+=(base)
bin() { [ "$1" = this ] && echo "$SOAK" || echo "$BASE"; }

declare -A wall fails
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min), $(nproc) cpus; seeds $SEEDS, $WORKERS workers; base: ${BASE:-none}"
for r in $(seq 1 "$RUNS"); do
	for ex in $EXAMPLES; do
		line="run $r $ex:"
		for i in "${!sides[@]}"; do
			s=${sides[$(( (i + r) % ${#sides[@]} ))]}	# alternating order
			rm -rf "$dir/out"
			set +e
			"$(bin "$s")" run "examples/$ex/soak.yaml" --seeds "$SEEDS" \
			    --workers "$WORKERS" --out "$dir/out" >"$dir/$ex-$s.out" 2>&1
			rc=$?
			set -e
			[ "$rc" -le 1 ] || { tail -n 20 "$dir/$ex-$s.out"; echo "bench/examples.sh: $ex ($s): exit $rc"; exit 1; }
			w=$(jq .wall_ms "$dir/out/report.json")
			f=$(jq .totals.fail "$dir/out/report.json")
			[ "$(jq .totals.infra "$dir/out/report.json")" = 0 ] ||
			    echo "  ($ex, $s: $(jq .totals.infra "$dir/out/report.json") infra)"
			wall[$ex.$s]+="$w "
			fails[$ex.$s]+="$f "
			line+=" $s $w ms ($f fail)"
		done
		echo "$line"
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '\n%-13s %-5s %10s %-26s %s\n' example soak "median ms" "wall ms, each run" "failing seeds, each run"
for ex in $EXAMPLES; do
	for s in "${sides[@]}"; do
		printf '%-13s %-5s %10s %-26s %s\n' "$ex" "$s" "$(median <<<"${wall[$ex.$s]}")" \
		    "${wall[$ex.$s]}" "${fails[$ex.$s]}"
	done
	[ -n "$BASE" ] || continue
	awk -v ex="$ex" -v a="$(median <<<"${wall[$ex.this]}")" -v b="$(median <<<"${wall[$ex.base]}")" \
	    -v fa="$(median <<<"${fails[$ex.this]}")" -v fb="$(median <<<"${fails[$ex.base]}")" \
	    'BEGIN { printf "%-13s this/base: time %.2fx, failing seeds %d against %d\n", ex, a / b, fa, fb }'
done
