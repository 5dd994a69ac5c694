# Two bugs across seven failing seeds -> exactly two GitHub issues, smallest
# seed in each title; a second run hitting one bug comments and files nothing.
source "$SOAK_ROOT/tests/fakes/tickets_lib.sh"
TOKEN="ghp_soakTestSecret_5f1e2d3c4b"
export SOAK_TEST_GH_TOKEN=$TOKEN SOAK_SUT_REVISION=deadbeef42
start_fake gh github --token "$TOKEN"
URL="http://127.0.0.1:$FAKE_PORT"
A="at most one provider refund per dispute"
B="items_reserved matches reservation events"

report "$WORK/run1" --run-id run-1 --sink github --url "$URL" --repo acme/shop \
    --insecure-http --token-env SOAK_TEST_GH_TOKEN --pass 5 --infra-seed 77:db \
    --fail "1501:invariant:$A" --fail "1477:invariant:$A" --fail "2000:invariant:$A" \
    --fail "1620:invariant:$A" --fail "1999:invariant:$B" --fail "1490:invariant:$B" \
    --fail "1333:invariant:$B"
rc=0; "$SOAK_BIN" tickets "$WORK/run1" >"$WORK/out1" 2>"$WORK/err1" || rc=$?
expect "exit status of soak tickets" "$rc" 0
R="$WORK/gh.json"
expect "issues created" "$(q "$R" 'len([x for x in r["requests"] if x["method"]=="POST" and x["path"]=="/repos/acme/shop/issues"])')" 2
expect "comments" "$(q "$R" 'len(r["comments"])')" 0
expect "every request authenticated" "$(q "$R" 'all(x["auth_ok"] for x in r["requests"])')" True
expect "Accept header" "$(q "$R" 'set(x["accept"] for x in r["requests"])')" "{'application/vnd.github+json'}"
expect "API version header" "$(q "$R" 'set(x["api_version"] for x in r["requests"])')" "{'2022-11-28'}"
expect "searched before filing" "$(q "$R" '[x["method"] for x in r["requests"]]')" "['GET', 'POST', 'GET', 'POST']"
expect "title of bug B (smallest seed first)" "$(q "$R" 'r["issues"][0]["title"]')" \
    "soak: \"$B\" broken — seed 1333 (+2)"
expect "title of bug A" "$(q "$R" 'r["issues"][1]["title"]')" "soak: \"$A\" broken — seed 1477 (+3)"
expect "seeds in body A" "$(q "$R" '"1477, 1501, 1620, 2000" in r["issues"][1]["body"]')" True
expect "seeds in body B" "$(q "$R" '"1333, 1490, 1999" in r["issues"][0]["body"]')" True
expect "infra seed not in a bug" "$(q "$R" 'any(__import__("re").search(r"\b77\b", i["body"].split("Failing seeds")[1].split("### Run")[0]) for i in r["issues"])')" False
expect "SQL in body" "$(q "$R" '"GROUP BY dispute_id HAVING count(*) > 1" in r["issues"][1]["body"]')" True
expect "replay in body" "$(q "$R" '"soak replay /abs/examples/reservations/soak.yaml --seed 1477" in r["issues"][1]["body"]')" True
expect "sut revision in body" "$(q "$R" '"deadbeef42" in r["issues"][1]["body"]')" True
expect "marker in body" "$(q "$R" 'all("<!-- soak-fingerprint: " in i["body"] for i in r["issues"])')" True
expect "dedupe label" "$(q "$R" 'all(any(l.startswith("soak:") for l in i["labels"]) and "soak" in i["labels"] for i in r["issues"])')" True
grep -q "github: filed 1: soak: \"$B\"" "$WORK/out1" || die "stdout does not say what was filed: $(cat "$WORK/out1")"

# Run 2 hits bug B again (and nothing else): a comment, no new issue.
report "$WORK/run2" --run-id run-2 --sink github --url "$URL" --repo acme/shop \
    --insecure-http --token-env SOAK_TEST_GH_TOKEN --pass 3 --fail "5:invariant:$B" --fail "8:invariant:$B"
rc=0; "$SOAK_BIN" tickets "$WORK/run2" >"$WORK/out2" 2>"$WORK/err2" || rc=$?
expect "exit status of the second run" "$rc" 0
expect "issues after run 2" "$(q "$R" 'len(r["issues"])')" 2
expect "comments after run 2" "$(q "$R" 'len(r["comments"])')" 1
expect "comment went to bug B's issue" "$(q "$R" 'r["comments"][0]["issue"]')" 1
expect "comment lists run 2's seeds" "$(q "$R" '"Seeds: 5, 8" in r["comments"][0]["body"] and "run-2" in r["comments"][0]["body"]')" True
grep -q "github: commented on 1" "$WORK/out2" || die "stdout does not say it commented: $(cat "$WORK/out2")"

# Missing token: a warning naming the variable, exit 0, nothing sent.
n_before=$(q "$R" 'len(r["requests"])')
rc=0; env -u SOAK_TEST_GH_TOKEN "$SOAK_BIN" tickets "$WORK/run2" >"$WORK/out3" 2>"$WORK/err3" || rc=$?
expect "exit status without token" "$rc" 0
grep -q "SOAK_TEST_GH_TOKEN" "$WORK/err3" || die "no warning naming the token variable: $(cat "$WORK/err3")"
expect "requests without token" "$(q "$R" 'len(r["requests"])')" "$n_before"

# A token bound for http:// without insecure_http: refused before anything
# is sent, a warning naming the sink and the fix, exit 0.  (The config
# loader refuses such a sink; a report.json can come from anywhere.)
report "$WORK/run3" --run-id run-3 --sink github --url "$URL" --repo acme/shop \
    --token-env SOAK_TEST_GH_TOKEN --fail "9:invariant:$A"
n_before=$(q "$R" 'len(r["requests"])')
rc=0; "$SOAK_BIN" tickets "$WORK/run3" >"$WORK/out4" 2>"$WORK/err4" || rc=$?
expect "exit status of a refused filing" "$rc" 0
grep -qF "github: GET $URL/repos/acme/shop/issues?state=open" "$WORK/err4" &&
    grep -qF "refused: not https://" "$WORK/err4" && grep -qF "tickets.insecure_http: true" "$WORK/err4" ||
    die "no warning naming the sink, the request and the fix: $(cat "$WORK/err4")"
expect "requests after a refusal" "$(q "$R" 'len(r["requests"])')" "$n_before"

no_secret "$TOKEN" "$WORK/run1" "$WORK/run2" "$WORK/run3" "$WORK/out1" "$WORK/err1" "$WORK/out2" "$WORK/err2" \
    "$WORK/out3" "$WORK/err3" "$WORK/out4" "$WORK/err4"
echo "ok"
