# soak's own failures under chaos (docs/fleet.md "When soak's own ground
# gives way"), with figures.
#
# A run of examples/reservations/fixed.yaml (CHAOS_SEEDS, 500 by default)
# on 2 local workers while a monkey
#   - SIGKILLs a random worker process every 2 s (the workload's pace, not
#     a wait on anything),
#   - pauses the embedded PostgreSQL (SIGSTOP, postmaster and backends) for
#     3 s once, when a tenth of the seeds have a result in the journal,
#   - restarts it once (pg_ctl restart, same socket and port), at a third,
#   - fills the output directory -- a small tmpfs in a private mount
#     namespace -- with a file at a half, and frees it as soon as soak says
#     it stopped leasing,
# then `soak run --resume` of the same run, the monkey still killing, runs
# the seeds the full disk left.  "Accounted for": every seed of the range
# appears exactly once in report.json as pass, fail or infra, or (after the
# stop) in missing_seeds with report.json's halted saying why; after the
# resume, every one has its verdict.  Asserted, on counts only: no seed
# lost, none duplicated, none `fail` (pass or infra only), the stop said
# on stderr and in report.json, workers lost and replaced.  The same chaos
# on the buggy examples/reservations/soak.yaml (CHAOS_BUGGY_SEEDS, 100)
# still finds its bug.  Figures: wall time against a clean run of the same
# seeds measured here.  Needs root (unshare -m, mount).
if [ -z "${CHAOS_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "FAIL: the chaos test needs root (unshare -m, mount -t tmpfs)" >&2; exit 1; }
	CHAOS_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/../integration/lib.sh"

SEEDS=${CHAOS_SEEDS:-500}
BUGGY_SEEDS=${CHAOS_BUGGY_SEEDS:-100}
WORKERS=2
EX=$ROOT/examples/reservations
PGBIN=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
[ -x "$EX/reserve_turn" ] || fail "$EX/reserve_turn is not built (make)"

# The output directory's own small filesystem, in this test's private
# mount namespace: it goes away with the test, whatever happens.
mnt=$T/chaos-out
mkdir -p "$mnt"
mount -t tmpfs -o size=16m,mode=0755 chaos-out "$mnt"
cleanup_hooks+=("umount -l '$mnt'")
ok "output directory on a 16 MiB tmpfs at $mnt (private mount namespace)"

now_ms() { date +%s%3N; }
# The embedded PostgreSQL of the run whose soak pid is $1: the supervisor
# is a child of soak, the postmaster its child.
postmaster_of() {
	local c p
	for c in $(pgrep -P "$1"); do
		p=$(pgrep -P "$c" -x postgres) && { echo "$p"; return 0; }
	done
	return 1
}
# wait_count FILE REGEX N SECONDS WHAT: blocks until FILE has N lines
# matching REGEX (tail -F wakes on each write); fails naming WHAT.
wait_count() {
	local line fd n=0
	exec {fd}< <(timeout "$4" tail -n +1 -F "$1" 2>/dev/null)
	while IFS= read -r -u "$fd" line; do
		if grep -qE -- "$2" <<<"$line" && [ $((++n)) -ge "$3" ]; then
			exec {fd}<&-
			return 0
		fi
	done
	exec {fd}<&-
	fail "watchdog: no '$5' within $4 s (waited for $3 lines /$2/ in $1)"
}

# killer PID LOG: every 2 s (the workload's pace), SIGKILL one random live
# worker process of soak PID, one line per kill in LOG; ends with soak.
killer() {
	local ws v
	while kill -0 "$1" 2>/dev/null; do
		sleep 2
		mapfile -t ws < <(pgrep -P "$1" -f 'worker --connect')
		[ ${#ws[@]} -gt 0 ] || continue
		v=${ws[RANDOM % ${#ws[@]}]}
		kill -KILL "$v" 2>/dev/null && echo "$v" >>"$2"
	done
}

# monkey NAME PID OUT SEEDS: the one-off events, each when a share of the
# seeds has a result in the run's journal.
monkey() {
	local name=$1 sp=$2 out=$3 n=$4 pm dd kids
	wait_count "$out/journal.jsonl" '"t":"result"' $((n / 10)) 300 "$name: a tenth of the results"
	pm=$(postmaster_of "$sp") || fail "$name: no embedded postmaster under soak ($sp)"
	# The postmaster first, so it forks nobody while its children stop.
	kids=$(pgrep -P "$pm" | tr '\n' ' ')
	kill -STOP "$pm"; kill -STOP $kids 2>/dev/null || true
	echo "paused postmaster $pm for 3 s" >>"$T/$name.events"
	sleep 3		# the outage's length: the chaos itself
	kill -CONT $kids 2>/dev/null || true; kill -CONT "$pm"
	wait_count "$out/journal.jsonl" '"t":"result"' $((n / 3)) 300 "$name: a third of the results"
	pm=$(postmaster_of "$sp") || fail "$name: no embedded postmaster under soak ($sp)"
	dd=$(readlink "/proc/$pm/cwd")
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$dd" -m fast -w -t 60 \
	    -l "$dd/restart.log" restart >/dev/null || fail "$name: pg_ctl restart failed"
	echo "restarted PostgreSQL in $dd (postmaster $pm, now $(head -n 1 "$dd/postmaster.pid"))" \
	    >>"$T/$name.events"
	wait_count "$out/journal.jsonl" '"t":"result"' $((n / 2)) 300 "$name: half of the results"
	dd if=/dev/zero of="$mnt/fill" bs=64k status=none 2>/dev/null || true
	echo "filled $mnt ($(df --output=avail -k "$mnt" | tail -n 1 | tr -d ' ') KiB left)" >>"$T/$name.events"
	wait_line "$T/$name.err" 'no more seeds are leased' 120 "$name: soak saying it stopped leasing" >/dev/null
	rm -f "$mnt/fill"
	echo "freed $mnt" >>"$T/$name.events"
}

# chaos NAME CONFIG SEEDS: the chaos run, then its --resume; leaves
# $T/NAME.rc1 and .rc2, the wall times, and the report in $mnt/NAME.
chaos() {
	local name=$1 config=$2 n=$3 out=$mnt/$1 sp kp mp rc t0
	t0=$(now_ms)
	"$SOAK" run "$config" --seeds "$n" --workers $WORKERS --out "$out" \
	    >"$T/$name.out" 2>"$T/$name.err" &
	sp=$!
	cleanup_hooks+=("kill $sp 2>/dev/null")
	killer "$sp" "$T/$name.killed" &
	kp=$!
	monkey "$name" "$sp" "$out" "$n" &
	mp=$!
	wait_exit rc "$sp" 900 "$name: the chaos run"
	echo "$rc" >"$T/$name.rc1"
	wait "$kp" || true
	wait "$mp" || fail "$name: the monkey failed (see above)"
	echo $(($(now_ms) - t0)) >"$T/$name.ms1"
	# The stopped run's report, before the resume writes its own: written
	# if the monkey freed the disk before soak wrote it at its end (the
	# seeds running had to finish first), else soak said it could not and
	# that the resume writes it -- both right, and which one is timing.
	if [ -f "$out/report.json" ]; then
		cp "$out/report.json" "$T/$name.report1.json"
	else
		expect_match "$name: no report.json, and soak says why and what writes it" \
		    "^soak: cannot write $out/report.json: No space left on device; .* writes the report once there is room" \
		    "$(cat "$T/$name.err")"
	fi
	phase "$name: --resume"
	t0=$(now_ms)
	"$SOAK" run "$config" --resume "$out" >"$T/$name.out2" 2>"$T/$name.err2" &
	sp=$!
	cleanup_hooks+=("kill $sp 2>/dev/null")
	killer "$sp" "$T/$name.killed" &
	kp=$!
	wait_exit rc "$sp" 900 "$name: the resumed run"
	echo "$rc" >"$T/$name.rc2"
	wait "$kp" || true
	echo $(($(now_ms) - t0)) >"$T/$name.ms2"
}

# figures REPORT N: seeds lost, duplicated, by verdict.
figures() {
	local R=$1
	jq -r --argjson n "$2" '
	    [.results[].seed] as $s | ($s | unique) as $u |
	    "results=\($s | length) unique=\($u | length) " +
	    "outside=\([$u[] | select(. < 0 or . >= $n)] | length) " +
	    "lost=\($n - ([$u[] | select(. >= 0 and . < $n)] | length) - .totals.missing) " +
	    "duplicated=\(($s | length) - ($u | length)) " +
	    "pass=\([.results[] | select(.verdict == "pass")] | length) " +
	    "fail=\([.results[] | select(.verdict == "fail")] | length) " +
	    "infra=\([.results[] | select(.verdict == "infra")] | length) " +
	    "missing=\(.totals.missing)"' "$R"
}
fig() { sed -E "s/.*\\b$2=([0-9-]+).*/\\1/" <<<"$1"; }

# --- the clean run: the same seeds, no chaos, for the wall time ---
phase "clean run of $SEEDS seeds"
t0=$(now_ms)
soak_rc rc run "$EX/fixed.yaml" --seeds "$SEEDS" --workers $WORKERS --out "$T/clean" \
    >"$T/clean.out" 2>"$T/clean.err"
clean_ms=$(($(now_ms) - t0))
expect_eq "clean run: exit status" 0 "$rc"
expect_eq "clean run: seeds passed" "$SEEDS" "$(jq '.totals.pass' "$T/clean/report.json")"

# --- the chaos run of the fixed config ---
phase "chaos run of $SEEDS seeds of fixed.yaml"
chaos fixed "$EX/fixed.yaml" "$SEEDS"
cat "$T/fixed.events"
R=$mnt/fixed/report.json
expect_eq "chaos run: exit status (stopped by the full disk)" 2 "$(cat "$T/fixed.rc1")"
expect_match "stderr says the output cannot be written, and what follows" \
    "soak: cannot .*: No space left on device: no more seeds are leased" \
    "$(cat "$T/fixed.err")"
expect_match "stderr says how to go on" "soak run CONFIG --resume $mnt/fixed" "$(cat "$T/fixed.err")"
expect_ge "workers killed by the monkey" 1 "$(wc -l <"$T/fixed.killed")"
expect_match "workers lost and replaced (stderr)" \
    "soak: [0-9]+ worker process\(es\) died during the run, [0-9]+ replaced" "$(cat "$T/fixed.err")"
# stopped_report NAME N: the stopped run's report.json, when there is one,
# says why it stopped and accounts for every seed.
stopped_report() {
	local r=$T/$1.report1.json f1
	[ -f "$r" ] || { echo "figures ($1, the stopped run): no report.json (the disk was still full)"; return 0; }
	f1=$(figures "$r" "$2")
	echo "figures ($1, the stopped run): $f1"
	expect_match "$1: the stopped run's report.json says why" \
	    "the output directory cannot be written \\(.*No space left on device\\)" "$(jq -r '.halted' "$r")"
	expect_ge "$1: the stopped run: seeds listed as missing" 1 "$(fig "$f1" missing)"
	expect_eq "$1: the stopped run: seeds lost (neither a verdict nor missing)" 0 "$(fig "$f1" lost)"
	expect_eq "$1: the stopped run: seeds duplicated" 0 "$(fig "$f1" duplicated)"
}
stopped_report fixed "$SEEDS"
[ ! -f "$T/fixed.report1.json" ] ||
    expect_eq "the stopped run: seeds that became fail" 0 "$(fig "$(figures "$T/fixed.report1.json" "$SEEDS")" fail)"
# The journal the stop left is valid: the resume takes it up.
expect_match "the resume picked the run up" "soak: resuming run .*: [0-9]+ of $SEEDS seeds have their verdict" \
    "$(cat "$T/fixed.err2")"
f=$(figures "$R" "$SEEDS")
echo "figures (fixed, after the resume): $f"
expect_eq "seeds lost" 0 "$(fig "$f" lost)"
expect_eq "seeds duplicated" 0 "$(fig "$f" duplicated)"
expect_eq "seeds outside the range" 0 "$(fig "$f" outside)"
expect_eq "seeds that became fail" 0 "$(fig "$f" fail)"
expect_eq "seeds missing after the resume" 0 "$(fig "$f" missing)"
expect_eq "every seed accounted for" "$SEEDS" $(( $(fig "$f" pass) + $(fig "$f" infra) ))
case $(cat "$T/fixed.rc2") in
0|2) ok "resumed run: exit status $(cat "$T/fixed.rc2") (0 all pass, 2 some infra)";;
*) fail "resumed run: exit status $(cat "$T/fixed.rc2"), expected 0 or 2";;
esac
died1=$(sed -nE 's/^soak: ([0-9]+) worker process.* died during the run, ([0-9]+) replaced.*/\1 \2/p' "$T/fixed.err")
died2=$(sed -nE 's/^soak: ([0-9]+) worker process.* died during the run, ([0-9]+) replaced.*/\1 \2/p' "$T/fixed.err2")

# --- the same chaos on the buggy config: the bug is still found ---
phase "chaos run of $BUGGY_SEEDS seeds of soak.yaml (the bug)"
chaos buggy "$EX/soak.yaml" "$BUGGY_SEEDS"
cat "$T/buggy.events"
B=$mnt/buggy/report.json
expect_eq "buggy chaos run: exit status (stopped by the full disk)" 2 "$(cat "$T/buggy.rc1")"
stopped_report buggy "$BUGGY_SEEDS"
fb=$(figures "$B" "$BUGGY_SEEDS")
echo "figures (buggy, after the resume): $fb"
expect_eq "buggy: seeds lost" 0 "$(fig "$fb" lost)"
expect_eq "buggy: seeds duplicated" 0 "$(fig "$fb" duplicated)"
expect_eq "buggy: seeds missing after the resume" 0 "$(fig "$fb" missing)"
expect_eq "buggy: resumed run's exit status (a domain failure)" 1 "$(cat "$T/buggy.rc2")"
expect_ge "buggy: seeds failing with the reservations bug's fingerprint" 1 \
    "$(jq '[.results[] | select(.verdict == "fail" and .fingerprint ==
        "reservations|invariant|items_reserved matches reservation events")] | length' "$B")"

chaos_ms=$(( $(cat "$T/fixed.ms1") + $(cat "$T/fixed.ms2") ))
echo
echo "chaos figures ($SEEDS seeds of reservations-fixed, $WORKERS workers):"
echo "  seeds lost:            $(fig "$f" lost)"
echo "  seeds duplicated:      $(fig "$f" duplicated)"
echo "  seeds fail:            $(fig "$f" fail)   (pass $(fig "$f" pass), infra $(fig "$f" infra))"
echo "  workers killed:        $(wc -l <"$T/fixed.killed") (run + resume)"
echo "  workers died/replaced: run ${died1:-0 0}, resume ${died2:-0 0} (died replaced)"
echo "  final infra by reason: $(jq -c '[.results[] | select(.verdict=="infra") | .reason] | group_by(.) | map({(.[0]): length}) | add // {}' "$R")"
echo "  seeds retried:         $(jq '[.results[] | select((.attempts | length) > 1)] | length' "$R"), attempts by reason: $(jq -c '[.results[].attempts[] | select(.verdict == "infra") | .reason] | group_by(.) | map({(.[0]): length}) | add // {}' "$R")"
echo "  wall time:             chaos $((chaos_ms / 1000)).$((chaos_ms % 1000 / 100)) s (run $(( $(cat "$T/fixed.ms1") / 1000 )) s + resume $(( $(cat "$T/fixed.ms2") / 1000 )) s) vs clean $((clean_ms / 1000)).$((clean_ms % 1000 / 100)) s"
echo "  buggy ($BUGGY_SEEDS seeds):     $fb"
