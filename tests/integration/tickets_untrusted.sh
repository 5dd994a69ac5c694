# Untrusted text in tickets (docs/tickets.md "Tickets"): a UTF-8 row longer than
# a cell, HTML, a markdown link, an @mention and backtick runs in rows,
# stderr and invariant names reach the file sink, GitHub and Jira as valid
# UTF-8 JSON and stay inert; Jira gets wiki markup; Jira's dedupe uses the
# enhanced search (the old /rest/api/2/search answers 410), and falls back
# to /rest/api/2/search on Jira Data Center.
source "$SOAK_ROOT/tests/fakes/tickets_lib.sh"
TOKEN="ghp_untrustedSecret_4d3c2b1a"
export SOAK_TEST_TOKEN=$TOKEN SOAK_TEST_USER=bot@example.com
inert() { python3 "$FAKES/ticket_inert.py" "$@"; }
E100=$(python3 -c 'print("a" + "é" * 100)')
E79=$(python3 -c 'print("a" + "é" * 79 + "…")')
NAME="refunds — <b>unique</b> @team [x](http://evil)"
hostile=(--row "$E100" --row "<img src=x onerror=alert(1)>" --row "[click](http://evil)"
    --row "@team please look" --row 'a ` b `` c ```` d'
    --stderr $'connect: reset\npanic: <img src=y> @here [a](b) ```\n'
    --message "boom <script>alert(1)</script> @ops")

# File sink: the markdown file on disk.
report "$WORK/f1" --run-id f-1 "${hostile[@]}" --fail "5:invariant:$NAME"
"$SOAK_BIN" tickets "$WORK/f1" >"$WORK/f1.out" 2>&1 || die "file filing failed: $(cat "$WORK/f1.out")"
md=$(ls "$WORK/f1/tickets"/*.md)
inert md "$md" >"$WORK/f1.chk" || die "file ticket not inert: $(cat "$WORK/f1.chk")"
grep -qF "| $E79 | ok |" "$md" || die "the é row is not cut on a character boundary: $(grep -F 'éé' "$md")"
grep -qF "| &lt;img src=x onerror=alert(1)&gt; | ok | x&#124;y |" "$md" || die "no escaped <img> row"
grep -qF "| &#91;click&#93;(http://evil) | ok |" "$md" || die "no escaped link row"
grep -qF "| &#64;&#8203;team please look | ok |" "$md" || die "no escaped @team row"
grep -qF "# soak: \"refunds — &lt;b&gt;unique&lt;/b&gt; &#64;&#8203;team &#91;x&#93;(http://evil)\" broken — seed 5" "$md" ||
    die "the file's title heading is not inert: $(head -1 "$md")"

# GitHub: the recorded request body is JSON, non-empty, and inert.
start_fake gh github --token "$TOKEN"
R="$WORK/gh.json"
report "$WORK/g1" --run-id g-1 --sink github --url "http://127.0.0.1:$FAKE_PORT" --repo acme/shop \
    --insecure-http --token-env SOAK_TEST_TOKEN "${hostile[@]}" --fail "5:invariant:$NAME"
"$SOAK_BIN" tickets "$WORK/g1" >"$WORK/g1.out" 2>"$WORK/g1.err" || die "github filing failed: $(cat "$WORK/g1.err")"
expect "github requests (search, create)" "$(q "$R" '[(x["method"], x["status"], x["raw_len"] > 0 or x["method"] == "GET") for x in r["requests"]]')" \
    "[('GET', 200, True), ('POST', 201, True)]"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); open(sys.argv[2],"w",encoding="utf-8").write(r["issues"][0]["body"])' "$R" "$WORK/gh.body"
inert md "$WORK/gh.body" >"$WORK/gh.chk" || die "github body not inert: $(cat "$WORK/gh.chk")"
grep -qF "| $E79 | ok |" "$WORK/gh.body" || die "github: the é row is not cut on a character boundary"
grep -qF "Message: boom &lt;script&gt;alert(1)&lt;/script&gt; &#64;&#8203;ops" "$WORK/gh.body" || die "github: message not escaped"
grep -qF "panic: &lt;img src=y&gt; &#64;&#8203;here &#91;a&#93;(b) &#96;&#96;&#96; |" "$WORK/gh.body" || die "github: stderr not escaped"
expect "github title (plain text, as typed)" "$(q "$R" 'r["issues"][0]["title"]')" "soak: \"$NAME\" broken — seed 5"
grep -q "github: filed 1:" "$WORK/g1.out" || die "github: not filed: $(cat "$WORK/g1.out")"

# Jira Cloud: wiki markup, a long title cut on a character boundary,
# the enhanced search; the old search endpoint is gone (410).
start_fake jira jira --token "$TOKEN" --user "$SOAK_TEST_USER"
R="$WORK/jira.json"
gone=$(curl -s -o /dev/null -w '%{http_code}' -u "$SOAK_TEST_USER:$TOKEN" -H 'Content-Type: application/json' \
    -d '{"jql": "project = SHOP", "maxResults": 1}' "http://127.0.0.1:$FAKE_PORT/rest/api/2/search")
expect "the fake's old search endpoint" "$gone" 410
LONG=$(python3 -c 'print("é" * 30 + " — " + "very long rule name — " * 12)')
for run in 1 2; do
	report "$WORK/j$run" --run-id "j-$run" --sink jira --url "http://127.0.0.1:$FAKE_PORT" --project SHOP \
	    --insecure-http --token-env SOAK_TEST_TOKEN --user-env SOAK_TEST_USER "${hostile[@]}" \
	    --fail "$((6 + run)):invariant:$NAME,$LONG"
	"$SOAK_BIN" tickets "$WORK/j$run" >"$WORK/j$run.out" 2>"$WORK/j$run.err" ||
	    die "jira run $run failed: $(cat "$WORK/j$run.err")"
done
grep -q "jira: filed SHOP-1" "$WORK/j1.out" || die "jira run 1 did not file: $(cat "$WORK/j1.out" "$WORK/j1.err")"
grep -q "jira: commented on SHOP-1" "$WORK/j2.out" || die "jira run 2 did not find the ticket: $(cat "$WORK/j2.out" "$WORK/j2.err")"
expect "jira searches" "$(q "$R" '[(x["method"], x["path"], x["status"]) for x in r["requests"] if "search" in x["path"] and x["user_agent"].startswith("soak/")]')" \
    "[('POST', '/rest/api/3/search/jql', 200), ('POST', '/rest/api/3/search/jql', 200)]"
expect "jira search body" "$(q "$R" 'sorted(r["requests"][1]["body"])')" "['fields', 'jql', 'maxResults']"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); open(sys.argv[2],"w",encoding="utf-8").write(r["issues"][0]["fields"]["description"])' "$R" "$WORK/jira.body"
inert jira "$WORK/jira.body" >"$WORK/jira.chk" || die "jira body: $(cat "$WORK/jira.chk")"
s=$(q "$R" 'r["issues"][0]["fields"]["summary"]')
n=$(printf '%s' "$s" | wc -c)
# The names are cut (on a character boundary, marked) so the seed stays.
[ "$n" -le 255 ] || die "jira summary is $n bytes: $s"
case $s in *"… — seed 7") ;; *) die "jira summary: names not cut, or the seed lost: $s" ;; esac
printf '%s' "$s" | iconv -f UTF-8 -t UTF-8 >/dev/null || die "jira summary is not UTF-8"
grep -qF '| \[click\]\(http://evil\) | ok | x\|y |' "$WORK/jira.body" || die "jira: link row not escaped: $(grep -F click "$WORK/jira.body")"
grep -qF "| <img src=x onerror=alert\\(1\\)> | ok |" "$WORK/jira.body" || die "jira: <img> row"
grep -qF "| $(printf '@\u200bteam') please look |" "$WORK/jira.body" || die "jira: @team row"
grep -qF "| $E79 | ok |" "$WORK/jira.body" || die "jira: the é row is not cut on a character boundary"
grep -qF '|| order\_id || items\_reserved || events ||' "$WORK/jira.body" || die "jira: no wiki table header"
grep -qF 'h3. Invariant: ' "$WORK/jira.body" || die "jira: no wiki heading"
grep -qF '{noformat}' "$WORK/jira.body" || die "jira: no {noformat} block"

# Jira Data Center: no enhanced search (404), so /rest/api/2/search.
start_fake dc jira --token "$TOKEN" --user "$SOAK_TEST_USER" --jira-dc
R="$WORK/dc.json"
for run in 1 2; do
	report "$WORK/dc$run" --run-id "dc-$run" --sink jira --url "http://127.0.0.1:$FAKE_PORT" --project SHOP \
	    --insecure-http --token-env SOAK_TEST_TOKEN --user-env SOAK_TEST_USER --fail "$((8 + run)):crash"
	"$SOAK_BIN" tickets "$WORK/dc$run" >"$WORK/dc$run.out" 2>"$WORK/dc$run.err" || die "jira dc run $run failed"
done
grep -q "jira: commented on SHOP-1" "$WORK/dc2.out" || die "jira dc run 2 did not find the ticket: $(cat "$WORK/dc2.out" "$WORK/dc2.err")"
expect "jira dc searches" "$(q "$R" '[(x["path"], x["status"]) for x in r["requests"] if "search" in x["path"]][:2]')" \
    "[('/rest/api/3/search/jql', 404), ('/rest/api/2/search', 200)]"

no_secret "$TOKEN" "$WORK"/f1 "$WORK"/g1 "$WORK"/j1 "$WORK"/j2 "$WORK"/*.out "$WORK"/*.err
echo ok
