# GitLab, Jira and webhook sinks against fakes of their documented shapes:
# create, dedupe by label into a comment, credentials only in headers, and
# the infra ticket (tickets.infra: true) kept apart from bugs.
source "$SOAK_ROOT/tests/fakes/tickets_lib.sh"
TOKEN="glpat_sinkSecret_77aa66bb"
export SOAK_TEST_TOKEN=$TOKEN SOAK_TEST_USER=bot@example.com
A="at most one provider refund per dispute"

# GitLab: project path is URL-encoded as one segment; PRIVATE-TOKEN header.
start_fake gl gitlab --token "$TOKEN"
R="$WORK/gl.json"
for run in 1 2; do
	report "$WORK/gl$run" --run-id "gl-$run" --sink gitlab --url "http://127.0.0.1:$FAKE_PORT/api/v4/" \
	    --project group/shop --insecure-http --token-env SOAK_TEST_TOKEN --fail "$((10 + run)):invariant:$A" --fail "$((20 + run)):invariant:$A"
	"$SOAK_BIN" tickets "$WORK/gl$run" >"$WORK/gl$run.out" 2>"$WORK/gl$run.err" || die "gitlab run $run failed"
done
expect "gitlab issues" "$(q "$R" 'len(r["issues"])')" 1
expect "gitlab notes" "$(q "$R" 'len(r["comments"])')" 1
expect "gitlab paths" "$(q "$R" 'sorted(set(x["path"] for x in r["requests"]))')" \
    "['/api/v4/projects/group%2Fshop/issues', '/api/v4/projects/group%2Fshop/issues/1/notes']"
expect "gitlab raw path encoded" "$(q "$R" 'r["issues"][0]["project"]')" "group/shop"
expect "gitlab auth" "$(q "$R" 'all(x["auth_ok"] for x in r["requests"])')" True
expect "gitlab title" "$(q "$R" 'r["issues"][0]["title"]')" "soak: \"$A\" broken — seed 11 (+1)"
expect "gitlab labels" "$(q "$R" 'r["issues"][0]["labels"][:2]')" "['soak', 'flaky hunt']"
expect "gitlab note seeds" "$(q "$R" '"Seeds: 12, 22" in r["comments"][0]["body"]')" True

# Jira: basic auth user:token, JQL search by label, issue key in the comment path.
start_fake jira jira --token "$TOKEN" --user "$SOAK_TEST_USER"
R="$WORK/jira.json"
for run in 1 2; do
	report "$WORK/jira$run" --run-id "jira-$run" --sink jira --url "http://127.0.0.1:$FAKE_PORT" \
	    --project SHOP --insecure-http --token-env SOAK_TEST_TOKEN --user-env SOAK_TEST_USER --fail "$((30 + run)):hang"
	"$SOAK_BIN" tickets "$WORK/jira$run" >"$WORK/jira$run.out" 2>"$WORK/jira$run.err" || die "jira run $run failed"
done
expect "jira issues" "$(q "$R" 'len(r["issues"])')" 1
expect "jira comments" "$(q "$R" '[c["issue"] for c in r["comments"]]')" "['SHOP-1']"
expect "jira auth" "$(q "$R" 'all(x["auth_ok"] for x in r["requests"])')" True
expect "jira fields" "$(q "$R" '(lambda f: (f["project"], f["issuetype"], f["summary"]))(r["issues"][0]["fields"])')" \
    "({'key': 'SHOP'}, {'name': 'Bug'}, 'soak: reservations hang — seed 31')"
expect "jira labels have no spaces" "$(q "$R" 'r["issues"][0]["fields"]["labels"][:2]')" "['soak', 'flaky-hunt']"
expect "jira jql" "$(q "$R" '"statusCategory != Done" in r["requests"][0]["body"]["jql"] and "project = \"SHOP\"" in r["requests"][0]["body"]["jql"]')" True
grep -q "jira: commented on SHOP-1" "$WORK/jira2.out" || die "jira run 2 did not comment: $(cat "$WORK/jira2.out")"

# Webhook with infra: true: one POST per bug and one infra ticket per run.
start_fake hook webhook --token "$TOKEN"
R="$WORK/hook.json"
report "$WORK/hook1" --run-id hook-1 --sink webhook --url "http://127.0.0.1:$FAKE_PORT/hook" \
    --insecure-http --token-env SOAK_TEST_TOKEN --infra --fail 5:crash --fail 9:crash --infra-seed 6:db --infra-seed 8:worker-lost
"$SOAK_BIN" tickets "$WORK/hook1" >"$WORK/hook1.out" 2>"$WORK/hook1.err" || die "webhook run failed"
expect "webhook posts" "$(q "$R" 'len(r["issues"])')" 2
expect "webhook auth" "$(q "$R" 'all(x["auth_ok"] for x in r["requests"])')" True
expect "webhook bug" "$(q "$R" '(lambda b: (b["kind"], b["seeds"], b["fingerprint"], b["run_id"]))(r["issues"][0])')" \
    "('bug', [5, 9], 'reservations|crash', 'hook-1')"
expect "webhook infra" "$(q "$R" '(lambda b: (b["kind"], b["seeds"], b["title"]))(r["issues"][1])')" \
    "('infra', [6, 8], 'soak: infra failures in run hook-1 (2 seeds)')"
expect "infra body" "$(q "$R" '"| 8 | worker-lost | 3 |" in r["issues"][1]["body"]')" True

# infra: false (the default): infra seeds are never filed.
report "$WORK/hook2" --run-id hook-2 --sink webhook --url "http://127.0.0.1:$FAKE_PORT/hook" \
    --insecure-http --token-env SOAK_TEST_TOKEN --infra-seed 6:db
out=$("$SOAK_BIN" tickets "$WORK/hook2") || die "infra-only run failed"
expect "infra-only run" "$out" "tickets: nothing to file for run hook-2"
expect "webhook posts after an infra-only run" "$(q "$R" 'len(r["issues"])')" 2

no_secret "$TOKEN" "$WORK"/gl1 "$WORK"/gl2 "$WORK"/jira1 "$WORK"/jira2 "$WORK"/hook1 "$WORK"/*.out "$WORK"/*.err
echo ok
