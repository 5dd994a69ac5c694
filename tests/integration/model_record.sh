# Record once, replay by seed (issue 37 item 2, docs/models.md): a model
# API behind TLS -- the stand-in (soak proxy --upstream model:) behind
# tests/helpers/tls_front with a certificate of the test's own throwaway
# CA -- recorded by a run's proxy (record:, tls_ca:, api_key_env:), then
# answered from the cassette with nothing listening (replay:).
#  - TLS: SNI is the upstream's name, the certificate is checked (the
#    system's CAs refuse the test's), the real key arrives in each request
#    and the turn's dummy never does; the key is in no file soak wrote;
#  - the parts the workers wrote are merged into one cassette, several
#    replies to one key kept, and soak check says how many keys it holds;
#  - replaying, the reply is the seed's: a failing seed replays to the same
#    replies and verdict; a request the cassette has no answer for is
#    infra/cassette, named, never a pass-through.
. "$(dirname "$0")/lib.sh"
H=$SOAK_BUILD/tests/helpers
KEY=sk-soak-test-$RANDOM$RANDOM-not-a-real-key

phase "a throwaway CA, a server certificate for localhost"
cd "$T"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
    -subj "/CN=soak test CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost\n' >ext.cnf
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
    -extfile ext.cnf 2>/dev/null
ok "CA and certificate made"

cat >"$T/agent.model.yaml" <<'YAML'
patterns:
  - user: 'refund (dsp_[0-9]+)'
    replies:
      - text: I refunded $1 once.
        weight: 2
      - tool_calls: [{name: refund_twice, arguments: {dispute_id: "$1"}}]
YAML
echo 'CREATE TABLE replies (turn int NOT NULL, reply text NOT NULL);' >"$T/schema.sql"
cat >"$T/turn.sh" <<'SH'
#!/usr/bin/env bash
# One turn: asks the model about dispute dsp_$SOAK_TURN (ASK overrides).
set -euo pipefail
r=$(curl -sS -m 10 "$OPENAI_BASE_URL/chat/completions" -H "Authorization: Bearer $OPENAI_API_KEY" \
    -H 'content-type: application/json' \
    -d "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"please refund ${ASK:-dsp_$SOAK_TURN}\"}]}")
what=$(jq -r '.choices[0].message | if .tool_calls then .tool_calls[0].function.name else .content end' <<<"$r")
psql -XAtq -v ON_ERROR_STOP=1 -c "INSERT INTO replies VALUES ($SOAK_TURN, \$\$$what\$\$)"
SH
chmod +x "$T/turn.sh"
sed 's/please refund \${ASK:-dsp_\$SOAK_TURN}/please refund dsp_9/' "$T/turn.sh" >"$T/turn9.sh"
chmod +x "$T/turn9.sh"
grep -q dsp_9 "$T/turn9.sh" || fail "turn9.sh asks for dsp_9"

# cfg FILE PROXY-KEYS [TURN]: the config, its proxy's keys as given
cfg() {
	cat >"$1" <<YAML
name: recorded
turns: 2
seed_timeout: 30s
database:
  schema: schema.sql
proxies:
  - name: llm
$2
turn:
  command: [${3:-./turn.sh}]
  timeout: 20s
invariants:
  - name: no refund asked twice
    sql: SELECT turn, reply FROM replies WHERE reply = 'refund_twice'
YAML
}

phase "the model API behind TLS"
"$SOAK" proxy --listen 127.0.0.1:0 --upstream "model:$T/agent.model.yaml" --seed 7 >"$T/standin.out" 2>&1 &
spid=$!
cleanup_hooks+=("kill $spid 2>/dev/null")
back=$(wait_line "$T/standin.out" '^listening on' 10 "the stand-in listening" | awk '{print $3}')
"$H/tls_front" srv.pem srv.key "$back" "$T/front.log" >"$T/front.out" 2>&1 &
fpid=$!
cleanup_hooks+=("kill $fpid 2>/dev/null")
port=$(wait_line "$T/front.out" '^listening on' 10 "the TLS front listening" | awk '{print $3}' | cut -d: -f2)

phase "record"
cfg "$T/rec.yaml" "    upstream: https://localhost:$port
    tls_ca: ca.pem
    api_key_env: SOAK_TEST_MODEL_KEY
    record: cassette.json"
SOAK_TEST_MODEL_KEY=$KEY soak_rc rc check "$T/rec.yaml" >"$T/check.out" 2>&1
expect_eq "check of the recording config" 0 "$rc"
expect_match "check says where it records" 'proxies\[0\].record: note: each worker records the exchanges with localhost:[0-9]+ into a part beside .*/cassette.json' "$(cat "$T/check.out")"
SOAK_TEST_MODEL_KEY=$KEY soak_rc rc run "$T/rec.yaml" --seeds 0..3 --workers 2 --out "$T/rec" >"$T/rec.out" 2>&1
[ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$T/rec.out"; fail "the recording run: exit $rc"; }
expect_eq "no infra while recording" 0 "$(jq '[.results[] | select(.verdict == "infra")] | length' "$T/rec/report.json")"
expect_ge "requests through the front (4 seeds of 2 turns, and a confirming re-run)" 8 "$(grep -c '^req POST /v1/chat/completions' "$T/front.log")"
expect_eq "SNI: the upstream's name" "sni localhost" "$(sort -u <(grep '^sni' "$T/front.log"))"
expect_eq "the real key in each request" "key: Bearer $KEY" "$(grep '^key' "$T/front.log" | sort -u)"
expect_eq "the turns' dummy key never reached the API" 0 "$(grep -c soak-dummy-key "$T/front.log" || true)"
expect_match "the run says what the cassette holds" 'cassette: .*/cassette.json holds 2 request key\(s\), [0-9]+ repl' "$(cat "$T/rec.out")"
expect_eq "the parts are merged away" "" "$(ls "$T" | grep 'cassette.json.part' || true)"
expect_eq "keys in the cassette" 2 "$(jq '.entries | length' "$T/cassette.json")"
expect_ge "replies to one key kept as alternatives" 2 "$(jq '[.entries[].replies | length] | max' "$T/cassette.json")"
leaks=$(grep -rl -- "$KEY" "$T/rec" "$T/cassette.json" "$T/rec.out" "$T/check.out" 2>/dev/null || true)
expect_eq "files soak wrote that hold the key" "" "$leaks"

phase "the system's CAs refuse the test's certificate"
cfg "$T/noca.yaml" "    upstream: https://localhost:$port
    api_key_env: SOAK_TEST_MODEL_KEY
    record: nowhere.json"
SOAK_TEST_MODEL_KEY=$KEY soak_rc rc replay "$T/noca.yaml" --seed 0 >"$T/noca.out" 2>&1
expect_match "the certificate is checked" 'the upstream https://localhost:[0-9]+ failed on POST /v1/chat/completions .*: SSL certificate problem' "$(cat "$T/noca.out")"
expect_eq "nothing recorded from an upstream not trusted" "" "$(ls "$T" | grep nowhere || true)"
soak_rc rc replay "$T/rec.yaml" --seed 0 >"$T/nokey.out" 2>&1
expect_eq "without the key in soak's environment: infra" 125 "$rc"
expect_match "it names the variable" 'api_key_env: SOAK_TEST_MODEL_KEY is not set in soak.s environment' "$(cat "$T/nokey.out")"

phase "replay: nothing listens, the seed picks the reply"
kill "$fpid" "$spid"; wait "$fpid" "$spid" 2>/dev/null || true
cfg "$T/rep.yaml" "    upstream: https://api.openai.com
    replay: cassette.json"
soak_rc rc check "$T/rep.yaml" >"$T/check2.out" 2>&1
expect_eq "check of the replaying config" 0 "$rc"
expect_match "check says how many keys it holds" 'proxies\[0\].replay: note: cassette .*/cassette.json: 2 request key\(s\), [0-9]+ repl' "$(cat "$T/check2.out")"
soak_rc rc run "$T/rep.yaml" --seeds 0..7 --out "$T/rep" >"$T/rep.out" 2>&1
expect_eq "no infra replaying" 0 "$(jq '[.results[] | select(.verdict == "infra")] | length' "$T/rep/report.json")"
fails=$(jq '[.results[] | select(.verdict == "fail")] | length' "$T/rep/report.json")
expect_ge "failing seeds (a recorded reply that refunds twice)" 1 "$fails"
seed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/rep/report.json")
alts() { jq -c 'select(.model != null) | [.turn, .model, .alt]' "$1" | sort | tr -d '\n'; }
want=$(alts "$T/rep/failures/$seed/trace.jsonl")
expect_match "the trace says which recorded reply" '"\(cassette\)",[0-9]+' "$want"
for i in 1 2; do
	soak_rc rc replay "$T/rep.yaml" --seed "$seed" --keep --out "$T/rp$i" >"$T/rp$i.out" 2>&1
	expect_eq "replay $i of seed $seed" 1 "$rc"
	kept=$(sed -n 's/^workspace kept: //p' "$T/rp$i.out")
	expect_eq "replay $i: the same recorded replies" "$want" "$(alts "$kept/trace.jsonl")"
done

phase "a request the cassette has no answer for"
cfg "$T/miss.yaml" "    upstream: https://api.openai.com
    replay: cassette.json" ./turn9.sh
soak_rc rc run "$T/miss.yaml" --seeds 0..1 --out "$T/miss" >"$T/miss.out" 2>&1
expect_eq "a miss: the run is incomplete" 2 "$rc"
expect_eq "every seed infra/cassette" "infra/cassette infra/cassette" "$(jq -r '[.results[] | "\(.verdict)/\(.reason)"] | join(" ")' "$T/miss/report.json")"
expect_match "the verdict names the request" 'proxy llm, turn 0: the cassette .*/cassette.json has no answer for POST /v1/chat/completions \(step 0, user: "please refund dsp_9"\) \(key [0-9a-f]{16}\)' "$(jq -r '.results[0].message' "$T/miss/report.json")"
expect_match "the trace marks the miss" '"model":"\(cassette miss\)"' "$(cat "$T"/miss/failures/0/trace.jsonl)"
