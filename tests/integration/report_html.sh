# report.html (docs/results.md "report.html: the run at a glance"): every run
# writes it, `soak report` writes it again; a real HTML5 parser
# (python3-html5lib) and a real browser (Debian's chromium, headless, no
# network) read it.  Real runs (a hostile system under test, the refunds
# example) and made-up run folders (tests/fakes/report_synth.py: 100,000
# seeds, runs to compare, an older run's journal).  About 30 s.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
CHECK="$PY $ROOT/tests/integration/report_html_check.py"
SYN="$PY $ROOT/tests/fakes/report_synth.py"
SHOTS=${SOAK_TEST_LOGDIR:-$T}
command -v chromium >/dev/null || fail "no chromium here (make deps installs Debian's)"
$PY -c 'import html5lib' 2>/dev/null || fail "no python3-html5lib here (make deps installs it)"
fact() { jq -r "$2" "$1"; }	# FACTS.json JQ

# chromium ARGS... URL: headless, as root, no network at all (unshare -n),
# a fresh profile; the flags of /work/.library's "known to work".
browser() {
	local prof
	prof=$(mktemp -d "$T/chrome.XXXXXX")
	timeout 90 unshare -n chromium --headless --no-sandbox --disable-gpu --disable-quic \
	    --no-first-run --disable-background-networking --disable-component-update \
	    --disable-sync --user-data-dir="$prof" "$@" 2>>"$T/chromium.log" ||
	    fail "watchdog: chromium $* did not finish within 90 s, or failed (exit $?; $T/chromium.log)"
}

phase "a system under test that writes markup into its rows and stderr"
HOSTILE='<script>alert(1)</script>"><img src=x onerror=alert(2)>'
printf 'CREATE TABLE t (v text);\n' >"$T/h.sql"
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
v='<script>alert(1)</script>"><img src=x onerror=alert(2)>'
# psql interpolates :'v' (quoted, as a literal) in what it reads, not in -c
echo "INSERT INTO t VALUES (:'v');" | psql -qAt -v ON_ERROR_STOP=1 -v v="$v t$SOAK_TURN" >/dev/null || exit 1
echo "$v" >&2
SH
chmod +x "$T/turn.sh"
cat >"$T/h.yaml" <<YAML
name: hostile
seeds: 0..3
turns: 2
seed_timeout: 20s
database:
  schema: h.sql
turn:
  command: [./turn.sh]
invariants:
  - name: 'no markup <b>stays</b> markup'
    sql: SELECT v FROM t ORDER BY v
YAML
soak_rc rc run "$T/h.yaml" --workers 2 --out "$T/runs/h" >"$T/h.out" 2>"$T/h.err"
expect_eq "hostile run exit status" 1 "$rc"
expect_eq "every seed broke the invariant" '["fail/invariant"]' \
    "$(jq -c '[.results[] | "\(.verdict)/\(.reason)"] | unique' "$T/runs/h/report.json")"
expect_match "the summary names the page" "page: +$T/runs/h/report.html" "$(cat "$T/h.out")"
$CHECK "$T/runs/h/report.html" >"$T/h.json" || fail "report.html does not parse as HTML5"
ok "report.html parses (html5lib, strict)"
expect_eq "grid cells (one per seed)" 4 "$(fact "$T/h.json" .cells)"
expect_eq "sections (one per fingerprint)" \
    "$(jq '[.results[].fingerprint | select(.)] | unique | length' "$T/runs/h/report.json")" \
    "$(fact "$T/h.json" '.sections | length')"
expect_eq "scripts (the page's own)" 1 "$(fact "$T/h.json" .scripts)"
expect_eq "every script and style allowed by its hash" "true true" \
    "$(fact "$T/h.json" '"\(.scripts_hashed) \(.styles_hashed)"')"
expect_eq "img elements" 0 "$(fact "$T/h.json" .imgs)"
expect_eq "on* attributes" "" "$(fact "$T/h.json" '.on_attrs | join(",")')"
expect_eq "rows kept as text in cells" 2 \
    "$(jq -r --arg h "$HOSTILE t" '[.td_texts[] | select(startswith($h))] | length' "$T/h.json")"
expect_match "the invariant's name is text" 'no markup <b>stays</b> markup' "$(fact "$T/h.json" .text)"
expect_match "CSP" "default-src 'none'; style-src 'sha256-" "$(fact "$T/h.json" .csp)"

phase "soak report writes it again, the same page"
sed 's/ at [0-9T:Z-]* from / from /' "$T/runs/h/report.html" >"$T/h1.html"
rm "$T/runs/h/report.html"
soak_rc rc report "$T/runs/h" >"$T/rep.out" 2>&1
expect_eq "soak report exit status" 0 "$rc"
sed 's/ at [0-9T:Z-]* from / from /' "$T/runs/h/report.html" >"$T/h2.html"
cmp "$T/h1.html" "$T/h2.html" || fail "soak report wrote another page than the run"
ok "soak report RUN_DIR wrote the page the run wrote"
soak_rc rc report "$T/nothing-here"
expect_eq "soak report of a folder without report.json" 66 "$rc"
soak_rc rc report
expect_eq "soak report without RUN_DIR" 64 "$rc"

phase "the browser: CSP is a second wall"
# A script that slipped past the escaping would not run: the policy allows
# the page's own by hash.  Added here by hand to a copy.
sed 's|<body>|<body><script>document.title="pwned"</script>|' "$T/runs/h/report.html" >"$T/runs/h/inj.html"
browser --dump-dom "file://$T/runs/h/inj.html" >"$T/inj.dom"
expect_match "the page's own script ran" 'data-ms="[0-9]+"' "$(cat "$T/inj.dom")"
grep -q '<title>pwned' "$T/inj.dom" && fail "an injected script ran despite the policy"
ok "an injected inline script did not run"

phase "refunds, seeds 0..4, in the browser"
EX=$ROOT/examples/refunds
soak_rc rc run "$EX/soak.yaml" --seeds 0..4 --out "$T/runs/refunds" >"$T/refunds.out" 2>&1
expect_eq "refunds exit status" 1 "$rc"
H=$T/runs/refunds/report.html
$CHECK "$H" >"$T/r.json" || fail "refunds' report.html does not parse"
browser --dump-dom "file://$H" >"$T/refunds.dom"
$CHECK "$T/refunds.dom" --lenient >"$T/rd.json"
expect_match "rendered title" '^soak: refunds — 5 fail, 0 pass of 5 seeds$' "$(fact "$T/rd.json" .title)"
expect_eq "rendered grid cells" 5 "$(fact "$T/rd.json" .cells)"
expect_ge "swimlanes rendered" 1 "$(fact "$T/rd.json" .swimlanes)"
expect_ge "lost-reply marks in seed 0's swimlane" 1 "$(fact "$T/rd.json" .lost_reply_marks)"
expect_match "a lost reply says so on hover" 'lost_reply.*the client got no reply' \
    "$(grep -o '<title>[^<]*turn [0-9] · provider[^<]*' "$T/refunds.dom")"
expect_ge "worker-timeline bars (a seed each)" 5 "$(fact "$T/rd.json" .worker_bars)"
expect_match "the page timed its own load" 'data-ms="[0-9]+"' "$(cat "$T/refunds.dom")"
browser --window-size=1280,1700 --screenshot="$SHOTS/report_html-refunds.png" "file://$H" >/dev/null
[ -s "$SHOTS/report_html-refunds.png" ] || fail "no screenshot"
ok "screenshot: $SHOTS/report_html-refunds.png ($(stat -c %s "$SHOTS/report_html-refunds.png") bytes)"
size=$(stat -c %s "$H")
[ "$size" -le 3000000 ] || fail "refunds' page is $size bytes, over 3 MB"
ok "refunds' page: $size bytes"

phase "a real schedule: the proxy's own trace (turn sets as hex masks)"
# examples/reservations under schedule: pct, 4 turns, 2 seeds, with an
# invariant every seed breaks, so each keeps its trace and gets a swimlane.
RX=$ROOT/examples/reservations
sed -e 's/^turns: 8$/turns: 4/' -e "s#\./reserve_turn#$RX/reserve_turn#" \
    -e "s#schema: schema.sql#schema: $RX/schema.sql#" -e 's/^      steps: 24 .*/      steps: 12/' \
    -e '/^invariants:/,$d' "$RX/scheduled.yaml" >"$T/rs.yaml"
printf 'invariants:\n  - name: always broken\n    sql: SELECT 1 AS one\n' >>"$T/rs.yaml"
soak_rc rc run "$T/rs.yaml" --seeds 0..1 --workers 2 --out "$T/runs/rs" >"$T/rs.out" 2>&1
expect_eq "scheduled run exit status" 1 "$rc"
$CHECK "$T/runs/rs/report.html" >"$T/rs.json" || fail "the scheduled run's page does not parse"
expect_ge "schedules drawn from the proxy's trace" 1 "$(fact "$T/rs.json" .schedules)"
expect_match "the turns waiting at a step, read from the trace's hex mask" \
    'turns waiting at this step: \{[0-9]' "$(cat "$T/runs/rs/report.html")"
echo "measure: the real schedule's page: $(fact "$T/rs.json" .waits) lock-wait arrows"

phase "100,000 seeds (made up): binned, within 15 MB, loaded in the browser"
$SYN "$T/big" --seeds 100000 --fps "dup refund,lost credit,stale read" --fail-every 97 \
    --infra-every 5003 --workers 16
soak_rc rc report "$T/big" >"$T/big.out" 2>&1
expect_eq "soak report of 100,000 seeds" 0 "$rc"
size=$(stat -c %s "$T/big/report.html")
[ "$size" -le 15000000 ] || fail "the 100,000-seed page is $size bytes, over 15 MB"
ok "100,000 seeds: $size bytes"
$CHECK "$T/big/report.html" >"$T/big.json" || fail "the 100,000-seed page does not parse"
expect_eq "grid cells (a bin of 50 seeds each)" 2000 "$(fact "$T/big.json" .cells)"
expect_match "a bin says its seeds and counts" '^seeds 0\.\.49: 1 fail 1 infra 48 pass$' \
    "$(fact "$T/big.json" '.cell_titles[0]')"
expect_ge "worker-timeline bars, merged below a pixel" 16 "$(fact "$T/big.json" .worker_bars)"
[ "$(fact "$T/big.json" .worker_bars)" -le 20000 ] || fail "worker bars not merged"
browser --dump-dom "file://$T/big/report.html" >"$T/big.dom"
ms=$(grep -o 'data-ms="[0-9]*"' "$T/big.dom" | grep -o '[0-9]*')
[ -n "$ms" ] || fail "the big page did not stamp its load time"
echo "measure: 100,000-seed page, $size bytes, loaded in $ms ms (goal < 2000; load $(cut -d' ' -f1 /proc/loadavg))"
browser --window-size=1280,1400 --screenshot="$SHOTS/report_html-100k.png" "file://$T/big/report.html" >/dev/null

phase "since last time: new, still failing, fixed; flaky"
$SYN "$T/root/a" --seeds 300 --fps "dup refund,lost credit" --started 2026-11-29T01:00:00Z
$SYN "$T/root/b" --seeds 300 --fps "lost credit,stale read" --flaky "stale read" \
    --started 2026-11-30T01:00:00Z
$SYN "$T/root/c" --seeds 300 --fps "other" --started 2026-11-28T01:00:00Z --name other
soak_rc rc report "$T/root/b" >/dev/null
$CHECK "$T/root/b/report.html" >"$T/b.json"
expect_eq "default previous: the newest earlier run of the config" \
    'fixed:synth|invariant|dup refund new:synth|invariant|stale read still:synth|invariant|lost credit' \
    "$(fact "$T/b.json" '[.since[] | "\(.[0]):\(.[1])"] | sort | join(" ")')"
expect_match "flaky: the re-run that did not reproduce" 'flaky seed [0-9]+ — synth\|invariant\|stale read' \
    "$(fact "$T/b.json" '.flaky | join(" ")')"
soak_rc rc report "$T/root/b" --previous "$T/root/c" >/dev/null
$CHECK "$T/root/b/report.html" >"$T/bc.json"
expect_eq "--previous DIR: another run" 'fixed new new' \
    "$(fact "$T/bc.json" '[.since[] | .[0]] | sort | join(" ")')"
soak_rc rc report "$T/root/a" >/dev/null
expect_match "no earlier run: said" 'No earlier run of synth under the output root' \
    "$(grep -o 'No earlier run[^<]*' "$T/root/a/report.html")"
soak_rc rc report "$T/root/b" --no-previous >/dev/null
expect_match "--no-previous" 'No earlier run was asked for' "$(cat "$T/root/b/report.html")"

phase "an older run: no times recorded"
$SYN "$T/old" --seeds 40 --no-times
soak_rc rc report "$T/old" >/dev/null
expect_match "no worker timeline, said" "journal has no times" "$(cat "$T/old/report.html")"
expect_match "check times not recorded, said" "its time was not recorded" "$(cat "$T/old/report.html")"
$SYN "$T/sched" --seeds 20 --scheduled --hostile --extras --infra-every 5
soak_rc rc report "$T/sched" >/dev/null
$CHECK "$T/sched/report.html" >"$T/s.json" || fail "the scheduled page does not parse"
expect_ge "schedules drawn" 1 "$(fact "$T/s.json" .schedules)"
expect_ge "lock waits drawn as arrows" 1 "$(fact "$T/s.json" .waits)"
expect_eq "hostile SQL in a schedule stays text" 0 "$(fact "$T/s.json" .imgs)"
expect_match "coverage: its warnings" 'proxy "cache" saw no exchange <script>' "$(fact "$T/s.json" .text)"
expect_match "coverage: the PCT bound" 'PCT bound, proxy db \(n = 4 turns, k = 8 steps, d = 3\): .* = 0\.3906 %, and in the run.s 20 seeds with .* = 7\.529 %.* \(this run: 3 forced decisions\)' \
    "$(fact "$T/s.json" .text)"
expect_match "coverage: a proxy's row (faults fired, forced, deadlocks)" \
    '<tr><td>db</td><td>pct</td><td class=num>812</td>.*<td>lost_reply 9, reset 4</td>.*<td>blocked 2, outside 1</td><td class=num>17</td><td>1 broken by soak, 0 by PostgreSQL</td>' \
    "$(cat "$T/sched/report.html")"
expect_match "coverage: an invariant never checked" '<tr class=unchecked><td>never checked</td>' \
    "$(cat "$T/sched/report.html")"
expect_match "coverage: a field this build does not know, as it is" '<th>later_total</th><td>7</td>' \
    "$(cat "$T/sched/report.html")"
expect_match "trace: the HTTP request line (req) on hover" 'POST /refunds/d1 HTTP/1.1 &lt;script&gt;' \
    "$(cat "$T/sched/report.html")"
expect_match "trace: a commit that woke turns (wakes, a hex mask)" "its end woke turns \\{1,2\\}: PostgreSQL's order" \
    "$(cat "$T/sched/report.html")"
expect_match "trace: the lock wait read from its hex mask" 'waited on a lock held by turns \{0\}' \
    "$(cat "$T/sched/report.html")"
expect_match "trace: round, key, occurrence, plan, deferred, forced outside, closed" \
    'step 6: round 0 turn 1 .*statement key 000000009f3c0a1b, occurrence 2.the plan: lose the reply.deferred: 4.forced: outside .*its connection closed: client gone' \
    "$(tr '\n' . <"$T/sched/report.html")"
# every line the synthetic trace holds is one soak writes: none left undrawn
grep -Eq 'of the fault trace (is|are) not as soak writes' "$T/sched/report.html" &&
    fail "a trace line of the synthetic run was not drawn: $(grep -o 'line[s]* of the fault trace[^<]*' "$T/sched/report.html")"
ok "every trace line drawn"
expect_match "the minimized story" "turn 1's reply was lost, so it asked again <script>" \
    "$(fact "$T/s.json" .text)"
expect_match "a quarantined worker, marked" '<title>quarantined: 3 infra outcomes' \
    "$(cat "$T/sched/report.html")"
expect_match "infra attempts, marked" 'class="w-i"' "$(cat "$T/sched/report.html")"
expect_match "a worker lost mid-seed, marked" '<title>worker lost at 90 ms while it ran seed 27: its process died' \
    "$(cat "$T/sched/report.html")"
expect_match "no coverage: said" 'has no coverage' "$(cat "$T/old/report.html")"
expect_match "no exchange times: order, not time, said" 'positions within a turn show order, not time' \
    "$(cat "$T/sched/report.html")"
$SYN "$T/timed" --seeds 10 --exchange-times
soak_rc rc report "$T/timed" >/dev/null
expect_match "timing.jsonl: exchanges at their times" 'Exchanges at the time the proxy admitted them' \
    "$(cat "$T/timed/report.html")"
expect_match "timing.jsonl: an exchange's times on hover" 'began 5 ms, admitted 6 ms, ended 11 ms' \
    "$(cat "$T/timed/report.html")"
