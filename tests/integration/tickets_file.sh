# The file sink: one markdown file per fingerprint, never duplicated; a
# shared folder gets a comment appended per run, and "commented on" is
# said only when the file changed; a relative tickets.url is the config
# folder's; --dry-run writes nothing; exit statuses for usage, missing and
# malformed reports.
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
# ... and, the file already recording this run, changes nothing and says so.
expect "comments claimed in the second filing of the same run" "$(grep -c '^file: commented on ' "$WORK/out2" || true)" 0
expect "tickets found unchanged in the second filing" "$(grep -c '^file: .* already records run run-1, unchanged: ' "$WORK/out2" || true)" 3
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

# A relative tickets.url is the config's: resolved against the config's
# folder (docs/tickets.md "Tickets"), not the run folder, so a second run, from
# anywhere, files into the same folder and dedupes there.  The config lives
# in a git work tree: the ticket's replay command names it from the top.
mkdir -p "$WORK/repo/soak" "$WORK/cwd"
git -C "$WORK/repo" init -q
printf 'CREATE TABLE t (a int);\n' >"$WORK/repo/soak/ok.sql"
cat >"$WORK/repo/soak/soak.yaml" <<'YAML'
name: coupons
seeds: 0..1
turns: 2
retries: 0
database:
  schema: ok.sql
turn: {command: [/bin/true]}
invariants:
  - name: no coupon over-redeemed
    sql: SELECT 1 AS coupon
tickets:
  sink: file
  url: filed
YAML
for n in 1 2; do
	rc=0
	(cd "$WORK/cwd" && "$SOAK_BIN" run ../repo/soak/soak.yaml --workers 1 --out "run$n" \
	    >"$WORK/real$n.out" 2>"$WORK/real$n.err") || rc=$?
	expect "real run $n exit status" "$rc" 1
done
[ -e "$WORK/cwd/run1/filed" ] && die "tickets.url resolved against the run folder: $(ls "$WORK/cwd/run1/filed")"
expect "ticket files in the config's folder after two runs" "$(ls "$WORK/repo/soak/filed" | wc -l)" 1
expect "tickets filed by run 1" "$(grep -c '^file: filed ' "$WORK/real1.out" || true)" 1
expect "tickets filed by run 2 (it dedupes)" "$(grep -c '^file: filed ' "$WORK/real2.out" || true)" 0
expect "comments by run 2 (the file changed)" "$(grep -c '^file: commented on ' "$WORK/real2.out" || true)" 1
tk=$(ls "$WORK/repo/soak/filed"/*.md)
expect "comments in the ticket" "$(grep -c '^## Comment' "$tk")" 1
cp "$tk" "$WORK/tk-before"
rc=0; (cd "$WORK/cwd" && "$SOAK_BIN" tickets run2 >"$WORK/real2b.out" 2>&1) || rc=$?
expect "refiling run 2: exit status" "$rc" 0
cmp -s "$tk" "$WORK/tk-before" || die "refiling run 2 changed $tk"
expect "refiling run 2: \"commented on\" claimed" "$(grep -c 'commented on' "$WORK/real2b.out" || true)" 0
grep -q "already records run .*, unchanged" "$WORK/real2b.out" || die "refiling run 2 does not say nothing changed: $(cat "$WORK/real2b.out")"
grep -qF 'From the top folder of the repository that holds the config:' "$tk" ||
    die "the ticket does not say where to replay from: $(cat "$tk")"
grep -qE '^([^ ]*/)?soak replay soak/soak.yaml --seed 0$' "$tk" ||
    die "the ticket's replay does not name the config from the repository's top: $(grep replay "$tk")"
grep -q "$WORK/repo" "$tk" && die "the ticket names the CI machine's path: $(grep -n "$WORK/repo" "$tk")"

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
