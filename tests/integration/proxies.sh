# Proxies in the worker: each turn sees its own SOAK_PROXY_<NAME> listener
# in front of a service; the faults it suffers are the ones in the seed's
# trace; a failing seed's trace lands in failures/<seed>/ and a replay of
# that seed produces the identical trace.
. "$(dirname "$0")/lib.sh"
UP=$SOAK_BUILD/tests/helpers/proxy_upstream
[ -x "$UP" ] || fail "missing $UP (make test builds it)"

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE calls (turn int NOT NULL, rc int NOT NULL, via text NOT NULL);
SQL
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
echo "$SOAK_PROXY_API"
curl -s -m 3 -o /dev/null "http://$SOAK_PROXY_API/refund?turn=$SOAK_TURN"
rc=$?
exec psql -X -q -v ON_ERROR_STOP=1 \
    -c "INSERT INTO calls VALUES ($SOAK_TURN, $rc, '$SOAK_PROXY_API')"
SH
chmod +x "$T/turn.sh"
cat >"$T/proxy.yaml" <<YAML
name: proxied
seeds: 0..9
turns: 4
database:
  schema: schema.sql
services:
  - name: api
    command: [$UP, http, "0"]
proxies:
  - name: api
    upstream: service:api
    protocol: http
    faults:
      rate: 50%
      lost_reply: 0.4
      reset: 0.3
      duplicate: 0.3
      latency: 0ms..5ms
      hold: 50ms
turn:
  command: [./turn.sh]
invariants:
  - name: every call got its reply
    sql: SELECT turn, rc FROM calls WHERE rc <> 0 ORDER BY turn
YAML
# The upstream helper takes its port as an argument; soak hands it SOAK_PORT.
sed -i "s|\[$UP, http, \"0\"\]|[sh, -c, 'exec $UP http \$SOAK_PORT']|" "$T/proxy.yaml"

soak_rc rc run "$T/proxy.yaml" --workers 2 --out "$T/out" >"$T/run.out" 2>"$T/run.err"
cat "$T/run.out"
expect_eq "run exit status" 1 "$rc"
check_report "$T/out" 0 9
R=$T/out/report.json
expect_eq "no infra verdicts" 0 "$(jq .totals.infra "$R")"
first=$(jq '[.results[] | select(.verdict=="fail") | .seed] | min' "$R")
tr=$T/out/failures/$first/trace.jsonl
[ -s "$tr" ] || fail "no fault trace in failures/$first/"
expect_eq "one exchange per turn in the trace" 4 "$(wc -l <"$tr")"
expect_eq "trace names the proxy and every turn" '["api",0,1,2,3]' \
    "$(jq -sc '[.[0].proxy] + [.[].turn]' "$tr")"
# Turns whose reply was lost or reset are exactly the failing rows.
expect_eq "failing turns = turns whose reply never came" \
    "$(jq -sc '[.[] | select(.fault=="lost_reply" or .fault=="reset") | .turn]' "$tr")" \
    "$(jq -c '[.results[] | select(.seed=='"$first"') | .invariants[0].rows[][0] | tonumber]' "$R")"
jq -se 'all(.[]; (.fault=="lost_reply") == (.upstream_saw and (.client_got_reply|not)))' "$tr" >/dev/null ||
    fail "a lost_reply exchange did not reach the upstream, or reached the client"
jq -se 'all(.[] | select(.fault=="reset"); .upstream_saw == false)' "$tr" >/dev/null ||
    fail "a reset exchange reached the upstream"
expect_eq "each turn had its own listener" 4 \
    "$(cat "$T/out/failures/$first/workspace"/r0-t*/stdout.log | sort -u | grep -c '^127\.0\.0\.1:[0-9]*$')"

# The replay suffers the same faults, byte for byte.
cd "$T"
soak_rc rc replay "$T/proxy.yaml" --seed "$first" --out "$T/replay" >"$T/replay.out" 2>&1
cat "$T/replay.out"
expect_eq "replay exit status" 1 "$rc"
cmp "$tr" "$T/replay/failures/$first/workspace/trace.jsonl" ||
    fail "replay's fault trace differs from the run's"
ok "replay trace identical to failures/$first/trace.jsonl"
expect_match "replay shows the trace" '"proxy":"api"' "$(cat "$T/replay.out")"
