# 429 with Retry-After is waited out and succeeds; a 500 that never stops
# ends in a warning naming sink, request and status, and exit status 0.
source "$SOAK_ROOT/tests/fakes/tickets_lib.sh"
TOKEN="ghp_retrySecret_0a9b8c7d"
export SOAK_TEST_GH_TOKEN=$TOKEN

start_fake busy github --token "$TOKEN" --fail 429:1:1
report "$WORK/run1" --run-id run-429 --sink github --url "http://127.0.0.1:$FAKE_PORT" \
    --repo acme/shop --insecure-http --token-env SOAK_TEST_GH_TOKEN --fail 3:crash
t0=$(date +%s%N)
rc=0; "$SOAK_BIN" tickets "$WORK/run1" >"$WORK/out1" 2>"$WORK/err1" || rc=$?
t1=$(date +%s%N)
R="$WORK/busy.json"
expect "exit status after a 429" "$rc" 0
expect "statuses seen by the fake" "$(q "$R" '[x["status"] for x in r["requests"]]')" "[200, 429, 201]"
expect "issues filed" "$(q "$R" 'len(r["issues"])')" 1
expect "title" "$(q "$R" 'r["issues"][0]["title"]')" "soak: reservations crash — seed 3"
# Retry-After: 1 must be honoured (the backoff alone would wait 200 ms).
[ $(( (t1 - t0) / 1000000 )) -ge 950 ] || die "retried after $(( (t1 - t0) / 1000000 )) ms, before Retry-After: 1"
grep -q "HTTP 429, retry 1 of 3 in 1000 ms" "$WORK/err1" || die "no log of the retry: $(cat "$WORK/err1")"
grep -q "warning" "$WORK/err1" && die "a retried success still warned: $(cat "$WORK/err1")"

start_fake down github --token "$TOKEN" --fail 500:-1
report "$WORK/run2" --run-id run-500 --sink github --url "http://127.0.0.1:$FAKE_PORT" \
    --repo acme/shop --insecure-http --token-env SOAK_TEST_GH_TOKEN --fail 3:crash --fail 4:hang
rc=0; "$SOAK_BIN" tickets "$WORK/run2" >"$WORK/out2" 2>"$WORK/err2" || rc=$?
R="$WORK/down.json"
expect "exit status when the tracker is down" "$rc" 0
expect "POST attempts (4 per ticket)" "$(q "$R" 'len([x for x in r["requests"] if x["method"]=="POST"])')" 8
expect "issues filed" "$(q "$R" 'len(r["issues"])')" 0
grep -qF "github: POST http://127.0.0.1:$FAKE_PORT/repos/acme/shop/issues: HTTP 500: \"fake tracker says 500\" after 4 attempt(s)" "$WORK/err2" ||
    die "no clear warning naming sink, request and status: $(cat "$WORK/err2")"
grep -q "2 of 2 ticket(s) not filed; the run's verdicts and exit status are unchanged" "$WORK/err2" ||
    die "no closing warning: $(cat "$WORK/err2")"

# Nothing listening: a transport error is a warning too.
report "$WORK/run3" --run-id run-refused --sink webhook --url "http://127.0.0.1:1/hook" --fail 3:crash
rc=0; "$SOAK_BIN" tickets "$WORK/run3" >"$WORK/out3" 2>"$WORK/err3" || rc=$?
expect "exit status when nothing listens" "$rc" 0
grep -q "webhook: POST http://127.0.0.1:1/hook: Couldn't connect to server after 4 attempt(s)" "$WORK/err3" ||
    die "no warning for a refused connection: $(cat "$WORK/err3")"

# A tracker that quotes the credentials back: the warning redacts them.
start_fake echo github --token "$TOKEN" --fail 403:-1 --echo
report "$WORK/run4" --run-id run-echo --sink github --url "http://127.0.0.1:$FAKE_PORT" \
    --repo acme/shop --insecure-http --token-env SOAK_TEST_GH_TOKEN --fail 3:crash
rc=0; "$SOAK_BIN" tickets "$WORK/run4" >"$WORK/out4" 2>"$WORK/err4" || rc=$?
expect "exit status after a 403" "$rc" 0
expect "a 403 is not retried" "$(q "$WORK/echo.json" 'len([x for x in r["requests"] if x["method"]=="POST"])')" 1
grep -qF "HTTP 403: \"fake tracker says 403 to Bearer ***" "$WORK/err4" || die "403 warning not redacted as expected: $(cat "$WORK/err4")"

# A tracker whose error reply holds terminal escapes (a window title, a
# screen clear): the warning says it escaped, no raw ESC or BEL reaches it.
start_fake esc github --token "$TOKEN" --fail 422:-1 --fail-message $'\033]0;pwned\007 \033[2J bad'
report "$WORK/run5" --run-id run-esc --sink github --url "http://127.0.0.1:$FAKE_PORT" \
    --repo acme/shop --insecure-http --token-env SOAK_TEST_GH_TOKEN --fail 3:crash
rc=0; "$SOAK_BIN" tickets "$WORK/run5" >"$WORK/out5" 2>"$WORK/err5" || rc=$?
expect "exit status after a 422" "$rc" 0
grep -qF 'HTTP 422: "\x1b]0;pwned\x07 \x1b[2J bad"' "$WORK/err5" ||
    die "the tracker's escapes not escaped: $(cat -v "$WORK/err5")"
if LC_ALL=C grep -q $'[\033\007]' "$WORK/out5" "$WORK/err5"; then
	die "a raw ESC or BEL reached the output: $(cat -v "$WORK/err5")"
fi

no_secret "$TOKEN" "$WORK/run1" "$WORK/run2" "$WORK/run4" "$WORK"/out* "$WORK"/err*
echo ok
