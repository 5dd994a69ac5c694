# examples/agent against a cassette (issue 37 item 4): the agent's model
# traffic recorded once from a model API behind TLS -- the stand-in of
# agent.model.yaml behind tests/helpers/tls_front, a throwaway CA's
# certificate, the key put in by the proxy -- then the same agent replayed
# from the cassette with nothing listening: streamed replies arrive as the
# SDK reads them, a seed's replay is the same conversation twice, and a
# conversation the recording never had is infra/cassette, never a
# pass-through.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
EX=$ROOT/examples/agent
H=$SOAK_BUILD/tests/helpers
[ -f "$EX/node_modules/openai/package.json" ] ||
    fail "examples/agent/node_modules/openai is not there: make deps installs it"
cd "$T"
KEY=sk-soak-test-$RANDOM$RANDOM

openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
    -subj "/CN=soak test CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost\n' >ext.cnf
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem \
    -days 2 -extfile ext.cnf 2>/dev/null

# The example's config with its llm proxy's keys replaced (LLM: YAML lines).
agent_cfg() {	# FILE LLM
	awk -v llm="$2" -v ex="$EX" '
	    /^  - name: llm$/ { print; print llm; skip = 1; next }
	    skip && /^  - name:/ { skip = 0 }
	    skip { next }
	    { gsub(/\.\.\/refunds\//, ex "/../refunds/"); gsub(/\.\/agent\.mjs/, ex "/agent.mjs"); print }' \
	    "$EX/soak.yaml" >"$1"
}

phase "record the agent's model behind TLS"
"$SOAK" proxy --listen 127.0.0.1:0 --upstream "model:$EX/agent.model.yaml" --seed 3 >"$T/standin.out" 2>&1 &
spid=$!
cleanup_hooks+=("kill $spid 2>/dev/null")
back=$(wait_line "$T/standin.out" '^listening on' 10 "the stand-in listening" | awk '{print $3}')
"$H/tls_front" srv.pem srv.key "$back" "$T/front.log" >"$T/front.out" 2>&1 &
fpid=$!
cleanup_hooks+=("kill $fpid 2>/dev/null")
port=$(wait_line "$T/front.out" '^listening on' 10 "the TLS front listening" | awk '{print $3}' | cut -d: -f2)
agent_cfg "$T/rec.yaml" "    upstream: https://localhost:$port
    tls_ca: $T/ca.pem
    api_key_env: SOAK_AGENT_KEY
    record: $T/agent.cassette.json"
grep -q "record: $T/agent.cassette.json" "$T/rec.yaml" || fail "the recording config"
SOAK_AGENT_KEY=$KEY soak_rc rc run "$T/rec.yaml" --seeds 0..5 --out "$T/rec" >"$T/rec.out" 2>&1
[ "$rc" = 0 ] || [ "$rc" = 1 ] || { tail -20 "$T/rec.out"; fail "the recording run: exit $rc"; }
expect_eq "the real key in each request, the dummy in none" "key: Bearer $KEY" "$(grep '^key' "$T/front.log" | sort -u)"
expect_ge "request keys recorded" 3 "$(jq '.entries | length' "$T/agent.cassette.json")"
expect_match "streamed replies kept whole, as events" 'data: \[DONE\]' "$(jq -r '.entries[0].replies[0].body' "$T/agent.cassette.json")"
expect_eq "files soak wrote that hold the key" "" "$(grep -rl -- "$KEY" "$T/rec" "$T/agent.cassette.json" "$T/rec.out" || true)"
kill "$fpid" "$spid"; wait "$fpid" "$spid" 2>/dev/null || true

phase "replay the agent from the cassette"
agent_cfg "$T/rep.yaml" "    upstream: https://api.openai.com
    replay: $T/agent.cassette.json"
soak_rc rc run "$T/rep.yaml" --seeds 0..5 --out "$T/rep" >"$T/rep.out" 2>&1
verdicts=$(jq -r '[.results[] | "\(.verdict)/\(.reason)"] | join(" ")' "$T/rep/report.json")
echo "figures: replayed seeds 0..5 from a cassette of seeds 0..5: $verdicts"
expect_ge "seeds the cassette answered whole" 1 "$(jq '[.results[] | select(.verdict != "infra")] | length' "$T/rep/report.json")"
expect_eq "any other seed is infra/cassette, named" "" \
    "$(jq -r '.results[] | select(.verdict == "infra") | select(.reason != "cassette" or (.message | test("has no answer for POST /v1/chat/completions") | not)) | .seed' "$T/rep/report.json")"
# the smallest seed the cassette failed, else the smallest it answered whole
seed=$(jq '([.results[] | select(.verdict == "fail") | .seed] | min) //
    ([.results[] | select(.verdict != "infra") | .seed] | min)' "$T/rep/report.json")
v=$(jq -r ".results[] | select(.seed == $seed) | .verdict" "$T/rep/report.json")
alts() { jq -c 'select(.model != null) | [.turn, .occ, .model, .alt]' "$1" | sort | tr -d '\n'; }
for i in 1 2; do
	soak_rc rc replay "$T/rep.yaml" --seed "$seed" --keep --out "$T/r$i" >"$T/r$i.out" 2>&1
	[ "$rc" -le 1 ] || grep -E 'verdict|proxy' "$T/r$i.out" | head -20 >&2
	expect_eq "replay $i of seed $seed: the run's verdict" "$v" "$( [ "$rc" = 0 ] && echo pass || { [ "$rc" = 1 ] && echo fail || echo infra; })"
	kept=$(sed -n 's/^workspace kept: //p' "$T/r$i.out")
	[ -n "$kept" ] && alts "$kept/trace.jsonl" >"$T/alts$i"
done
expect_eq "two replays, the same recorded replies" "$(cat "$T/alts1")" "$(cat "$T/alts2")"
expect_match "they were the cassette's" '"\(cassette\)"' "$(cat "$T/alts1")"
