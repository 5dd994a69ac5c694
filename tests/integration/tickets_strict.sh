# The trackers' fakes are as strict as the real APIs on what soak relies on
# (tests/fakes/tracker.py): every query parameter and search clause a sink
# sends changes what the fake answers -- GitHub's state (open by default),
# labels and per_page; GitLab's state (all states when absent, as GitLab
# does), labels and per_page; Jira's project, labels and statusCategory.
# Against them: a ticket of the same fingerprint that is closed (GitHub,
# GitLab), done (Jira), or open in another repository or project, is not
# the open ticket soak comments on: it files a new one.  The fakes are
# shown to answer differently for each parameter first, so a sink that
# dropped one would be caught.
source "$SOAK_ROOT/tests/fakes/tickets_lib.sh"
TOKEN="glpat_strictSecret_19cd28ef"
export SOAK_TEST_TOKEN=$TOKEN SOAK_TEST_USER=bot@example.com
A="at most one provider refund per dispute"
get() {	# URL [HEADER]: the fake's answer, as JSON
	curl -s -H "${2:-X-None: 1}" "$1"
}

# --- GitHub ---
start_fake gh0 github --token "$TOKEN"
report "$WORK/gh0" --run-id gh-0 --sink github --url "http://127.0.0.1:$FAKE_PORT" \
    --repo acme/shop --insecure-http --token-env SOAK_TEST_TOKEN --fail "11:invariant:$A"
"$SOAK_BIN" tickets "$WORK/gh0" >"$WORK/gh0.out" 2>&1 || die "github: the first filing failed"
label=$(q "$WORK/gh0.json" '[l for l in r["issues"][0]["labels"] if l.startswith("soak:")][0]')
[[ $label =~ ^soak:[0-9a-f]{16}$ ]] || die "github: no soak: label on the first issue: $label"
# The same fingerprint, closed in acme/shop and open in acme/other.
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); i=r["issues"][0];
print(json.dumps([dict(i, state="closed"), dict(i, number=2, repo="acme/other")]))' \
    "$WORK/gh0.json" >"$WORK/gh-preload.json"
start_fake gh github --token "$TOKEN" --preload "$WORK/gh-preload.json"
U="http://127.0.0.1:$FAKE_PORT/repos/acme/shop/issues"
H="Authorization: Bearer $TOKEN"
expect "github fake: state=open hides the closed one" "$(get "$U?state=open&labels=$label" "$H" | jq length)" 0
expect "github fake: state absent is open" "$(get "$U?labels=$label" "$H" | jq length)" 0
expect "github fake: state=all shows it" "$(get "$U?state=all&labels=$label" "$H" | jq length)" 1
expect "github fake: another label, none" "$(get "$U?state=all&labels=soak:0000000000000000" "$H" | jq length)" 0
expect "github fake: another repository's is not this one's" \
    "$(get "http://127.0.0.1:$FAKE_PORT/repos/acme/other/issues?state=open&labels=$label" "$H" | jq length)" 1
expect "github fake: per_page=0 is refused" "$(curl -s -o /dev/null -w '%{http_code}' -H "$H" "$U?per_page=0")" 422
n0=$(q "$WORK/gh.json" 'len(r["requests"])')
report "$WORK/gh1" --run-id gh-1 --sink github --url "http://127.0.0.1:$FAKE_PORT" \
    --repo acme/shop --insecure-http --token-env SOAK_TEST_TOKEN --fail "12:invariant:$A"
"$SOAK_BIN" tickets "$WORK/gh1" >"$WORK/gh1.out" 2>&1 || die "github: the filing failed: $(cat "$WORK/gh1.out")"
R="$WORK/gh.json"
expect "github: a new issue beside the closed one" "$(q "$R" 'len([i for i in r["issues"] if i["state"] == "open" and i.get("repo") == "acme/shop"])')" 1
expect "github: no comment on the closed issue or another repository's" "$(q "$R" 'len(r["comments"])')" 0
expect "github: the search asked for open issues, by label" \
    "$(q "$R" '[(x["query"].get("state"), x["query"].get("labels")) for x in r["requests"]['"$n0"':] if x["method"] == "GET"]')" \
    "[(['open'], ['$label'])]"
echo "ok: github: a closed or another repository's ticket of the fingerprint is not commented on"

# --- GitLab ---
start_fake gl0 gitlab --token "$TOKEN"
report "$WORK/gl0" --run-id gl-0 --sink gitlab --url "http://127.0.0.1:$FAKE_PORT/api/v4/" \
    --project group/shop --insecure-http --token-env SOAK_TEST_TOKEN --fail "21:invariant:$A"
"$SOAK_BIN" tickets "$WORK/gl0" >"$WORK/gl0.out" 2>&1 || die "gitlab: the first filing failed"
label=$(q "$WORK/gl0.json" '[l for l in r["issues"][0]["labels"] if l.startswith("soak:")][0]')
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); i=r["issues"][0];
print(json.dumps([dict(i, state="closed"), dict(i, iid=2, project="group/other")]))' \
    "$WORK/gl0.json" >"$WORK/gl-preload.json"
start_fake gl gitlab --token "$TOKEN" --preload "$WORK/gl-preload.json"
U="http://127.0.0.1:$FAKE_PORT/api/v4/projects/group%2Fshop/issues"
H="PRIVATE-TOKEN: $TOKEN"
expect "gitlab fake: state=opened hides the closed one" "$(get "$U?state=opened&labels=$label" "$H" | jq length)" 0
expect "gitlab fake: state absent is every state, as GitLab's" "$(get "$U?labels=$label" "$H" | jq length)" 1
expect "gitlab fake: another label, none" "$(get "$U?labels=soak:0000000000000000" "$H" | jq length)" 0
expect "gitlab fake: per_page=101 is refused" "$(curl -s -o /dev/null -w '%{http_code}' -H "$H" "$U?per_page=101")" 400
report "$WORK/gl1" --run-id gl-1 --sink gitlab --url "http://127.0.0.1:$FAKE_PORT/api/v4/" \
    --project group/shop --insecure-http --token-env SOAK_TEST_TOKEN --fail "22:invariant:$A"
"$SOAK_BIN" tickets "$WORK/gl1" >"$WORK/gl1.out" 2>&1 || die "gitlab: the filing failed: $(cat "$WORK/gl1.out")"
R="$WORK/gl.json"
expect "gitlab: a new issue beside the closed one" "$(q "$R" 'len([i for i in r["issues"] if i["state"] == "opened" and i["project"] == "group/shop"])')" 1
expect "gitlab: no note on the closed issue or another project's" "$(q "$R" 'len(r["comments"])')" 0
echo "ok: gitlab: a closed or another project's ticket of the fingerprint is not commented on"

# --- Jira ---
start_fake jira0 jira --token "$TOKEN" --user "$SOAK_TEST_USER"
report "$WORK/jira0" --run-id jira-0 --sink jira --url "http://127.0.0.1:$FAKE_PORT" \
    --project SHOP --insecure-http --token-env SOAK_TEST_TOKEN --user-env SOAK_TEST_USER --fail "31:hang"
"$SOAK_BIN" tickets "$WORK/jira0" >"$WORK/jira0.out" 2>&1 || die "jira: the first filing failed"
python3 -c 'import json,copy,sys; r=json.load(open(sys.argv[1])); i=r["issues"][0]
done=copy.deepcopy(i); done["fields"]["status"]={"statusCategory": {"key": "done"}}
other=copy.deepcopy(i); other["key"]="OPS-1"; other["id"]="20001"; other["fields"]["project"]={"key": "OPS"}
print(json.dumps([done, other]))' "$WORK/jira0.json" >"$WORK/jira-preload.json"
start_fake jira jira --token "$TOKEN" --user "$SOAK_TEST_USER" --preload "$WORK/jira-preload.json"
report "$WORK/jira1" --run-id jira-1 --sink jira --url "http://127.0.0.1:$FAKE_PORT" \
    --project SHOP --insecure-http --token-env SOAK_TEST_TOKEN --user-env SOAK_TEST_USER --fail "32:hang"
"$SOAK_BIN" tickets "$WORK/jira1" >"$WORK/jira1.out" 2>&1 || die "jira: the filing failed: $(cat "$WORK/jira1.out")"
R="$WORK/jira.json"
expect "jira: a new issue beside the done one and OPS's" "$(q "$R" 'len(r["issues"])')" 3
expect "jira: no comment on the done issue or another project's" "$(q "$R" 'len(r["comments"])')" 0
echo "ok: jira: a done or another project's ticket of the fingerprint is not commented on"
