# The output directory fills up (docs/fleet.md "When soak's own ground
# gives way"): soak stops leasing,
# keeps what it has -- journal.jsonl stays a valid journal of the run so
# far, its last line whole -- says so on stderr and exits 2; report.json,
# which cannot be written either, is written by the --resume that runs the
# rest once there is room.  The output directory is a 2 MiB tmpfs in a
# private mount namespace; a turn of seed 5 fills it, so the disk is full
# from then on, whatever the timing.  (make chaos frees it while the run
# drains, and checks the stopped run's report.json.)  Needs root.
if [ -z "${OUTFULL_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "FAIL: out_full needs root (unshare -m, mount -t tmpfs)" >&2; exit 1; }
	OUTFULL_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

mnt=$T/mnt
mkdir -p "$mnt"
mount -t tmpfs -o size=2m,mode=0755 outfull "$mnt"
cleanup_hooks+=("umount -l '$mnt'")
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
if [ "$SOAK_SEED" = 5 ] && [ "$SOAK_TURN" = 0 ] && mkdir "$SOAK_CONFIG_DIR/once" 2>/dev/null; then
	dd if=/dev/zero of="$SOAK_CONFIG_DIR/mnt/fill" bs=64k status=none 2>/dev/null
fi
exit 0
SH
chmod +x "$T/turn.sh"
cat >"$T/full.yaml" <<'YAML'
name: outfull
seeds: 0..49
turns: 2
confirm: false
turn: {command: [./turn.sh]}
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
out=$mnt/out
"$SOAK" run "$T/full.yaml" --workers 1 --out "$out" >"$T/run.out" 2>"$T/run.err" &
run_pid=$!
cleanup_hooks+=("kill $run_pid 2>/dev/null")
wait_exit rc "$run_pid" 120 "soak run on a full disk"
cat "$T/run.err"
expect_eq "full disk: exit status" 2 "$rc"
[ -e "$mnt/fill" ] || fail "the turn did not fill the disk"
expect_match "stderr: what cannot be written, and that nothing more is leased" \
    "^soak: cannot write $out/journal.jsonl: No space left on device: no more seeds are leased; every verdict recorded so far stays in $out/journal.jsonl" \
    "$(cat "$T/run.err")"
expect_match "stderr: why the run stopped, and how to go on" \
    "^soak: the run stopped early: the output directory cannot be written \(.*No space left on device\): seeds not run are missing; free space, then \`soak run CONFIG --resume $out\` runs them" \
    "$(cat "$T/run.err")"
expect_match "stderr: report.json cannot be written either, and what writes it" \
    "^soak: cannot write $out/report.json: No space left on device; $out/journal.jsonl keeps the verdicts recorded: \`soak run CONFIG --resume $out\` writes the report once there is room" \
    "$(cat "$T/run.err")"
[ ! -e "$out/report.json" ] && [ ! -e "$out/report.json.tmp" ] || fail "a report.json (or its .tmp) was left on the full disk"
ok "no report.json, and no half of one"
# Every line of the journal is whole JSON; the last ends with a newline.
jq -c . "$out/journal.jsonl" >/dev/null || fail "journal.jsonl is not whole JSON lines"
[ "$(tail -c 1 "$out/journal.jsonl" | od -An -c | tr -d ' ')" = '\n' ] || fail "journal.jsonl ends in the middle of a line"
results=$(grep -c '"t":"result"' "$out/journal.jsonl")
[ "$results" -ge 6 ] && [ "$results" -lt 50 ] || fail "journal.jsonl has $results results, expected 6..49"
ok "journal.jsonl: whole lines, $results results"

rm -f "$mnt/fill"
ok "freed the disk"
soak_rc rc run "$T/full.yaml" --resume "$out" >"$T/resume.out" 2>"$T/resume.err"
cat "$T/resume.err"
expect_eq "resumed: exit status" 0 "$rc"
expect_match "resumed: from the journal" "soak: resuming run .*: $results of 50 seeds have their verdict" \
    "$(cat "$T/resume.err")"
check_report "$out" 0 49
expect_eq "resumed: every seed passed" 50 "$(jq '.totals.pass' "$out/report.json")"
expect_eq "resumed: not halted" null "$(jq '.halted' "$out/report.json")"
