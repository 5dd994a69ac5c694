# The file sink: one markdown file per fingerprint, never duplicated; a
# shared folder gets a comment appended per run; --dry-run writes nothing;
# exit statuses for usage, missing and malformed reports.
source "$SOAK_ROOT/tests/fakes/tickets_lib.sh"
A="at most one provider refund per dispute"
B="items_reserved matches reservation events"

report "$WORK/run1" --run-id run-1 --pass 2 --fail "12:invariant:$A" --fail "9:invariant:$A" \
    --fail "40:invariant:$B,$A" --fail 50:guard --fail 51:guard
"$SOAK_BIN" tickets "$WORK/run1" --dry-run >"$WORK/dry" 2>&1 || die "dry run failed: $(cat "$WORK/dry")"
[ -e "$WORK/run1/tickets" ] && die "--dry-run wrote $WORK/run1/tickets"
expect "dry-run tickets" "$(grep -c '^=== file: would file at' "$WORK/dry")" 3
grep -qF "title: soak: \"$A\", \"$B\" broken — seed 40" "$WORK/dry" || die "no two-invariant title: $(cat "$WORK/dry")"
grep -qF "title: soak: \"$A\" broken — seed 9 (+1)" "$WORK/dry" || die "no title for A"
grep -qF "title: soak: reservations guard — seed 50 (+1)" "$WORK/dry" || die "no guard title"

"$SOAK_BIN" tickets "$WORK/run1" >"$WORK/out1" 2>&1 || die "first filing failed: $(cat "$WORK/out1")"
cp -a "$WORK/run1/tickets" "$WORK/tickets-after-1"
"$SOAK_BIN" tickets "$WORK/run1" >"$WORK/out2" 2>&1 || die "second filing failed: $(cat "$WORK/out2")"
# The second filing finds each ticket by its fingerprint and files none anew
# (the file name alone would hide a duplicate: the same name is overwritten).
expect "new tickets in the first filing" "$(grep -c '^file: filed ' "$WORK/out1" || true)" 3
expect "new tickets in the second filing" "$(grep -c '^file: filed ' "$WORK/out2" || true)" 0
expect "tickets found again in the second filing" "$(grep -c '^file: commented on ' "$WORK/out2" || true)" 3
diff -r "$WORK/tickets-after-1" "$WORK/run1/tickets" >/dev/null ||
    die "the second filing of the same run changed the tickets: $(diff -r "$WORK/tickets-after-1" "$WORK/run1/tickets")"
expect "files after two filings" "$(ls "$WORK/run1/tickets" | wc -l)" 3
for f in "$WORK/run1/tickets"/*.md; do
	h=$(basename "$f" .md)
	expect "markers in $f" "$(grep -c "<!-- soak-fingerprint: $h -->" "$f")" 1
	grep -q "## Comment" "$f" && die "$f got a comment for the same run"
done
grep -lF "# soak: \"$A\" broken — seed 9 (+1)" "$WORK/run1/tickets"/*.md >/dev/null || die "no file titled for A"

# A shared folder (tickets.url) across two runs: run 2 appends a comment.
report "$WORK/run2" --run-id run-2 --url "$WORK/shared" --fail "12:invariant:$A"
report "$WORK/run3" --run-id run-3 --url "$WORK/shared" --fail "7:invariant:$A" --fail "3:hang"
"$SOAK_BIN" tickets "$WORK/run2" >/dev/null 2>&1 || die "run 2 filing failed"
"$SOAK_BIN" tickets "$WORK/run3" >"$WORK/out3" 2>&1 || die "run 3 filing failed"
"$SOAK_BIN" tickets "$WORK/run3" >/dev/null 2>&1 || die "run 3 refiling failed"
expect "files in the shared folder" "$(ls "$WORK/shared" | wc -l)" 2
fa=$(grep -lF "broken — seed 12" "$WORK/shared"/*.md) || die "no ticket for seed 12 in $WORK/shared: $(ls "$WORK/shared")"
expect "comments on A" "$(grep -c '^## Comment' "$fa")" 1
grep -q "Seen again in run \`run-3\`" "$fa" || die "comment does not name run 3"
grep -q "file: commented on" "$WORK/out3" || die "stdout does not say it commented: $(cat "$WORK/out3")"

# Exit statuses.
rc=0; "$SOAK_BIN" tickets >/dev/null 2>&1 || rc=$?; expect "no RUN_DIR" $rc 64
rc=0; "$SOAK_BIN" tickets "$WORK/run1" --bogus >/dev/null 2>&1 || rc=$?; expect "bad option" $rc 64
rc=0; "$SOAK_BIN" tickets --help >"$WORK/help" 2>&1 || rc=$?; expect "--help" $rc 0
grep -q "dry-run" "$WORK/help" || die "--help does not mention --dry-run"
rc=0; "$SOAK_BIN" tickets "$WORK/nowhere" 2>"$WORK/e66" || rc=$?; expect "missing report" $rc 66
grep -q "report.json is missing" "$WORK/e66" || die "unclear message: $(cat "$WORK/e66")"
mkdir -p "$WORK/bad" && echo '{"format": 1, "run_id": ' >"$WORK/bad/report.json"
rc=0; "$SOAK_BIN" tickets "$WORK/bad" 2>"$WORK/e65" || rc=$?; expect "malformed report" $rc 65
grep -q "report.json:.*not valid JSON" "$WORK/e65" || die "unclear message: $(cat "$WORK/e65")"
report "$WORK/clean" --run-id run-clean --pass 4
out=$("$SOAK_BIN" tickets "$WORK/clean") || die "clean run failed"
expect "clean run" "$out" "tickets: nothing to file for run run-clean"
echo ok
