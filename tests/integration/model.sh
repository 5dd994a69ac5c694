# The model stand-in (issue 37, docs/models.md): upstream: model:FILE.
#  - soak check reads the script as the proxy does: its counts, and a
#    mistake at the script's own FILE:LINE:COL (exit 78);
#  - a streamed reply through soak proxy arrives event by event, paced by
#    the script, and a fault of the proxy still applies to it;
#  - in a run, each turn's OPENAI_BASE_URL and dummy key reach its own
#    listener; which alternative a turn gets is the seed's: a failing seed
#    replays to the same replies, its plan.json carries the reply that
#    mattered, and the plan without it passes.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/cfg"
cat >"$T/cfg/agent.model.yaml" <<'YAML'
# what the agent's model does, per seed
pace: 40ms
patterns:
  - name: asks for a refund
    user: 'refund (dsp_[0-9]+)'
    replies:
      - text: I refunded $1 once, as asked.
        weight: 3
      - tool_calls: [{name: refund_twice, arguments: {dispute_id: "$1"}}]
YAML
cat >"$T/cfg/schema.sql" <<'SQL'
CREATE TABLE replies (turn int NOT NULL, reply text NOT NULL);
SQL
cat >"$T/cfg/turn.sh" <<'SH'
#!/usr/bin/env bash
# One turn: asks the model about dispute dsp_$SOAK_TURN, as an SDK would
# (its base URL and key from the environment), and writes down what it said.
set -euo pipefail
[ "$OPENAI_API_KEY" = soak-dummy-key ] || { echo "key: $OPENAI_API_KEY" >&2; exit 3; }
[ "$ANTHROPIC_BASE_URL/v1" = "$OPENAI_BASE_URL" ] || exit 4
r=$(curl -sS -m 10 "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' \
    -d "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"please refund dsp_$SOAK_TURN\"}]}")
what=$(jq -r '.choices[0].message | if .tool_calls then .tool_calls[0].function.name + " " + .tool_calls[0].function.arguments else .content end' <<<"$r")
psql -XAtq -v ON_ERROR_STOP=1 -c "INSERT INTO replies VALUES ($SOAK_TURN, \$\$$what\$\$)"
SH
chmod +x "$T/cfg/turn.sh"
cat >"$T/cfg/soak.yaml" <<'YAML'
name: model
turns: 2
seed_timeout: 30s
database:
  schema: schema.sql
proxies:
  - name: llm
    upstream: model:agent.model.yaml
turn:
  command: [./turn.sh]
  timeout: 20s
invariants:
  - name: no refund asked twice
    sql: SELECT turn, reply FROM replies WHERE reply LIKE 'refund_twice%'
  - name: every turn asked the model
    sql: SELECT 1 WHERE (SELECT count(*) FROM replies) <> 2
YAML

phase "soak check reads the script"
soak_rc rc check "$T/cfg/soak.yaml" >"$T/check.out" 2>&1
expect_eq "check of a good script" 0 "$rc"
expect_match "check says what the script holds" 'soak.yaml:8:15: proxies\[0\].upstream: note: model script .*/agent.model.yaml: 1 pattern\(s\), 2 alternative\(s\); a turn.s OPENAI_BASE_URL and ANTHROPIC_BASE_URL name its own listener of proxy llm' "$(cat "$T/check.out")"
cp "$T/cfg/agent.model.yaml" "$T/good.yaml"
sed -i 's/dispute_id: "\$1"/dispute_id: "$2"/' "$T/cfg/agent.model.yaml"
soak_rc rc check "$T/cfg/soak.yaml" >"$T/check2.out" 2>&1
expect_eq "check of a script with a mistake" 78 "$rc"
expect_match "the mistake at the script's own line" 'agent.model.yaml:9:54: patterns\[0\].replies\[1\].tool_calls\[0\].arguments: \$2, but user: has 1 group' "$(cat "$T/check2.out")"
cp "$T/good.yaml" "$T/cfg/agent.model.yaml"

phase "a streamed reply through soak proxy, event by event"
"$SOAK" proxy --listen 127.0.0.1:0 --upstream "model:$T/cfg/agent.model.yaml" --seed 1 \
    --trace "$T/px.jsonl" >"$T/px.out" 2>"$T/px.err" &
pxpid=$!
cleanup_hooks+=("kill $pxpid 2>/dev/null")
addr=$(wait_line "$T/px.out" '^listening on' 10 "soak proxy listening" | awk '{print $3}')
# Each event's arrival, read off the socket as it comes (no client library
# that buffers): the gaps are the script's pace, 40 ms.
python3 - "$addr" >"$T/events.out" <<'PY'
import json, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
body = json.dumps({"model": "m", "stream": True,
    "messages": [{"role": "user", "content": "please refund dsp_1 and say more words now"}]})
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    "Content-Length: %d\r\n\r\n%s" % (len(body), body)).encode())
buf, events, t0, done = b"", [], time.monotonic(), False
while not done:
    d = s.recv(65536)
    if not d:
        break
    buf += d
    while b"data: " in buf and b"\n\n" in buf[buf.index(b"data: "):]:
        i = buf.index(b"data: ")
        j = buf.index(b"\n\n", i)
        events.append(((time.monotonic() - t0) * 1000, buf[i + 6:j].decode()))
        buf = buf[j + 2:]
        done = events[-1][1] == "[DONE]"
text = "".join(json.loads(e)["choices"][0]["delta"].get("content") or ""
    for _, e in events[:-1] if json.loads(e)["choices"])
gaps = [round(b[0] - a[0]) for a, b in zip(events, events[1:])]
print("events", len(events))
print("gaps", " ".join(map(str, gaps)))
print("min_gap", min(gaps))
print("text", text)
PY
cat "$T/events.out"
expect_ge "events of the streamed reply" 5 "$(awk '/^events/{print $2}' "$T/events.out")"
expect_ge "the least gap between two events, ms (pace 40ms)" 30 "$(awk '/^min_gap/{print $2}' "$T/events.out")"
kill -TERM $pxpid; wait_exit rc $pxpid 10 "soak proxy after SIGTERM"
expect_match "the trace names the pattern, the reply and its events" '"req":"POST /v1/chat/completions","model":"asks for a refund","alt":[01],"events":[0-9]+' "$(cat "$T/px.jsonl")"
# a fault of the proxy applies to the stand-in's exchanges as to any upstream's
"$SOAK" proxy --listen 127.0.0.1:0 --upstream "model:$T/cfg/agent.model.yaml" --seed 1 \
    --rate 1 --lost-reply 1 --hold 10ms --trace "$T/lost.jsonl" >"$T/lost.out" 2>&1 &
pxpid=$!
cleanup_hooks+=("kill $pxpid 2>/dev/null")
addr=$(wait_line "$T/lost.out" '^listening on' 10 "soak proxy listening" | awk '{print $3}')
if curl -sS -m 5 "http://$addr/v1/chat/completions" -d '{"messages":[{"role":"user","content":"refund dsp_1"}]}' >"$T/lost.body" 2>&1; then
	fail "lost_reply: the client got a reply"
fi
kill -TERM $pxpid; wait_exit rc $pxpid 10 "soak proxy after SIGTERM"
expect_match "lost_reply on the stand-in: it answered, the client never heard" '"fault":"lost_reply".*"upstream_saw":true,"client_got_reply":false.*"model":"asks for a refund"' "$(cat "$T/lost.jsonl")"

phase "a run: the seed picks the replies"
soak_rc rc run "$T/cfg/soak.yaml" --seeds 0..7 --out "$T/run" >"$T/run.out" 2>&1
expect_eq "run exit status (a turn got the reply that refunds twice)" 1 "$rc"
fails=$(jq '[.results[] | select(.verdict == "fail")] | length' "$T/run/report.json")
passes=$(jq '[.results[] | select(.verdict == "pass")] | length' "$T/run/report.json")
expect_ge "failing seeds" 1 "$fails"
expect_ge "passing seeds (the other alternative)" 1 "$passes"
expect_eq "no infra" 0 "$(jq '[.results[] | select(.verdict == "infra")] | length' "$T/run/report.json")"
expect_eq "every failure is the twice-refund" "" "$(jq -r '.results[] | select(.verdict == "fail") | .invariants[].name' "$T/run/report.json" | grep -v 'no refund asked twice' || true)"
seed=$(jq '[.results[] | select(.verdict == "fail") | .seed] | min' "$T/run/report.json")
alts() { jq -c 'select(.model != null) | [.turn, .alt]' "$1" | sort | tr -d '\n'; }
want=$(alts "$T/run/failures/$seed/trace.jsonl")
expect_match "seed $seed: one turn got alternative 1" '\[[01],1\]' "$want"
for i in 1 2; do
	soak_rc rc replay "$T/cfg/soak.yaml" --seed "$seed" --keep --out "$T/rp$i" >"$T/rp$i.out" 2>&1
	expect_eq "replay $i of seed $seed" 1 "$rc"
	kept=$(sed -n 's/^workspace kept: //p' "$T/rp$i.out")
	expect_eq "replay $i: the same replies" "$want" "$(alts "$kept/trace.jsonl")"
done

phase "the plan carries the reply; without it the seed passes"
P=$T/run/failures/$seed/plan.json
expect_ge "replies in the plan" 1 "$(jq '[.proxies.llm.faults[] | select(.reply == 1)] | length' "$P")"
expect_match "the plan names the pattern" 'POST /v1/chat/completions: asks for a refund' "$(jq -r '.proxies.llm.faults[0].what' "$P")"
soak_rc rc replay "$T/cfg/soak.yaml" --plan "$P" --out "$T/pl" >"$T/pl.out" 2>&1
expect_eq "replay --plan of the failure" 1 "$rc"
jq '.proxies.llm.faults = []' "$P" >"$T/noreply.json"
soak_rc rc replay "$T/cfg/soak.yaml" --plan "$T/noreply.json" --out "$T/nr" >"$T/nr.out" 2>&1
expect_eq "the plan without the reply: every turn gets the first alternative, and passes" 0 "$rc"
