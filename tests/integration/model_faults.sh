# The faults model APIs have (issue 37 item 3, docs/faults.md "Faults of an
# HTTP API"), through soak proxy in front of the model stand-in, seen by
# clients written for the API and not for soak: npm's openai SDK
# (examples/agent's, make deps), whose own retries honour Retry-After, and
# a socket read event by event.
#  - status: a 429 with Retry-After; the SDK waits it out (retry-after-ms)
#    before its retry, then reports; the upstream never saw a request;
#  - stream_cut: the SDK reads exactly K chunks, then the connection ends,
#    whether the events came one by one or all in one read;
#  - stream_stall: K events, a gap as long as the stall, then the rest;
#  - in a run: an agent that keeps what a cut stream gave as its answer
#    fails; the seed whose turn met a 429, retried by the SDK, and a cut
#    of the retry replays by seed and by its plan, fault by fault and
#    retry by retry; soak minimize drops the 429 and keeps the cut; the
#    agent fixed (a failed stream asked again) passes the same seeds.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
SDK=$ROOT/examples/agent/node_modules/openai/index.mjs
[ -f "$SDK" ] || fail "examples/agent/node_modules/openai is not there: make deps installs it"
command -v node >/dev/null || fail "no node here: make deps"

mkdir -p "$T/cfg"
cat >"$T/cfg/agent.model.yaml" <<'YAML'
pace: 10ms
patterns:
  - name: answers
    replies:
      - text: one two three four five six seven eight nine ten.
YAML
# the same, written at once: a cut must split what one read brought
sed 's/^pace: .*/pace: 0ms/' "$T/cfg/agent.model.yaml" >"$T/cfg/burst.model.yaml"
# The client: the SDK as its documentation shows it, the base URL and key
# from the environment (a turn's) or argv.  The fetch it is given only
# prints what passes, so the test sees the SDK's own retries: each answer's
# status, its Retry-After headers, and when it came (ms).
cat >"$T/cfg/sdk.mjs" <<JS
import OpenAI from "$SDK";
const [mode, base] = process.argv.slice(2);
const t0 = Date.now();
const client = new OpenAI({ baseURL: base ?? process.env.OPENAI_BASE_URL,
    maxRetries: mode === "status" ? 1 : 6, timeout: 15000,
    fetch: async (url, init) => {
      const r = await fetch(url, init);
      console.log("http", r.status, "retry-after", r.headers.get("retry-after") ?? "-",
          "retry-after-ms", r.headers.get("retry-after-ms") ?? "-", "at", Date.now() - t0);
      return r;
    } });
if (mode === "status") {
  try {
    await client.chat.completions.create({ model: "m",
        messages: [{ role: "user", content: "count" }] });
    console.log("no error");
  } catch (e) {
    console.log("error", e.constructor.name, e.status);
  }
} else {
  // stream: what came before an error is kept as the answer (the bug);
  // fixed: a stream that failed is asked again, from the start
  let n = 0, text = "", how = "";
  for (let ask = 0; ask < (mode === "fixed" ? 8 : 1) && how !== "whole"; ask++) {
    n = 0, text = "", how = "whole";
    try {
      const stream = await client.chat.completions.create({ model: "m",
          stream: true, messages: [{ role: "user", content: "count" }] });
      for await (const c of stream) {
        n++;
        text += c.choices[0]?.delta?.content ?? "";
      }
    } catch (e) {
      how = "error " + e.message;
    }
    console.log("chunks", n, how);
  }
  if (mode === "fixed" && how !== "whole")
    process.exit(1);
  console.log("text", text);
}
JS
cat >"$T/cfg/schema.sql" <<'SQL'
CREATE TABLE answers (turn int NOT NULL, answer text NOT NULL);
SQL
cat >"$T/cfg/turn.sh" <<'SH'
#!/usr/bin/env bash
# One turn: asks the model, streamed, and keeps the answer it got.
set -euo pipefail
out=$(node "$(dirname "$0")/sdk.mjs" "${1:-stream}")
echo "$out"
answer=$(sed -n 's/^text //p' <<<"$out")
psql -XAtq -v ON_ERROR_STOP=1 -c "INSERT INTO answers VALUES ($SOAK_TURN, \$\$$answer\$\$)"
SH
chmod +x "$T/cfg/turn.sh"
cat >"$T/cfg/soak.yaml" <<'YAML'
name: modelfaults
turns: 2
seed_timeout: 30s
database:
  schema: schema.sql
proxies:
  - name: llm
    upstream: model:agent.model.yaml
    faults:
      rate: 60%
      status: 0.5
      statuses: [429, 529]
      retry_after: 20ms
      stream_cut: 0.5
      cut_after: 2..5
turn:
  command: [./turn.sh]
  timeout: 20s
invariants:
  - name: every answer whole
    sql: SELECT turn, answer FROM answers WHERE answer NOT LIKE '%ten.'
YAML
sed 's|command: \[./turn.sh\]|command: [./turn.sh, fixed]|' "$T/cfg/soak.yaml" >"$T/cfg/fixed.yaml"

# soak proxy in front of the stand-in (the script $script, default the
# paced one), with these options; its address in $addr
proxy() {
	local name=$1
	shift
	"$SOAK" proxy --listen 127.0.0.1:0 --upstream "model:$T/cfg/${script:-agent}.model.yaml" \
	    --seed 1 --rate 1 --trace "$T/$name.jsonl" "$@" >"$T/$name.out" 2>&1 &
	pxpid=$!
	cleanup_hooks+=("kill $pxpid 2>/dev/null")
	addr=$(wait_line "$T/$name.out" '^listening on' 10 "soak proxy listening" | awk '{print $3}')
}
stop_proxy() {
	kill -TERM "$pxpid"
	wait_exit rc "$pxpid" 10 "soak proxy after SIGTERM"
}
sdk() {	# MODE URL: the SDK outside soak, with a key as a user's shell has
	OPENAI_API_KEY=sk-dummy node "$T/cfg/sdk.mjs" "$@"
}

phase "status: a 429 with Retry-After, honoured by the SDK's own retry"
proxy status --status 1 --statuses 429 --retry-after 800ms
sdk status "http://$addr/v1" >"$T/status.sdk" 2>&1 || true
stop_proxy
cat "$T/status.sdk"
expect_eq "two answers, each a 429 with Retry-After 1 (800 ms rounded up) and retry-after-ms 800" \
    "http 429 retry-after 1 retry-after-ms 800
http 429 retry-after 1 retry-after-ms 800" "$(sed -n 's/ at [0-9]*$//p' "$T/status.sdk")"
expect_eq "then the SDK's error" "error RateLimitError 429" "$(tail -n 1 "$T/status.sdk")"
# the SDK's own backoff is 0.5 s at most before a first retry: 800 ms is
# the header's
expect_ge "ms between the two answers: the SDK waited retry-after-ms (800)" 800 \
    "$(awk '/^http/{t[n++] = $NF} END{print t[1] - t[0]}' "$T/status.sdk")"
expect_eq "both tries answered 429 by the proxy, never forwarded" '[429,false,true,0]
[429,false,true,0]' "$(jq -c '[.status, .upstream_saw, .client_got_reply, .bytes_up]' "$T/status.jsonl")"
expect_eq "on one connection, kept alive" '0 0
0 1' "$(jq -r '"\(.conn) \(.exchange)"' "$T/status.jsonl")"

phase "stream_cut: exactly K chunks, then the connection's end"
proxy cut --stream-cut 1 --cut-after 3
sdk stream "http://$addr/v1" >"$T/cut.sdk" 2>&1 || true
stop_proxy
cat "$T/cut.sdk"
expect_eq "the SDK read 3 chunks, then the stream ended under it" "chunks 3 error terminated" \
    "$(grep '^chunks' "$T/cut.sdk")"
expect_eq "what it had: the role, two pieces of text" "text one two three " "$(grep '^text' "$T/cut.sdk")"
expect_match "the trace: stream_cut after 3" '"fault":"stream_cut".*"client_got_reply":true,"after":3,' "$(cat "$T/cut.jsonl")"

phase "stream_cut in a reply written at once: still exactly K chunks"
script=burst proxy burst --stream-cut 1 --cut-after 4
sdk stream "http://$addr/v1" >"$T/burst.sdk" 2>&1 || true
stop_proxy
cat "$T/burst.sdk"
expect_eq "the SDK read 4 chunks, then the stream ended under it" "chunks 4 error terminated" \
    "$(grep '^chunks' "$T/burst.sdk")"
expect_eq "what it had: the role, three pieces of text" "text one two three four five " "$(grep '^text' "$T/burst.sdk")"
expect_match "the trace: stream_cut after 4" '"fault":"stream_cut".*"after":4,' "$(cat "$T/burst.jsonl")"

phase "stream_stall: K events, a gap, then the rest"
proxy stall --stream-stall 1 --stall-after 2 --stall 600ms
python3 - "$addr" >"$T/stall.out" <<'PY'
import json, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
body = json.dumps({"model": "m", "stream": True,
    "messages": [{"role": "user", "content": "count"}]})
s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
    "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
    % (len(body), body)).encode())
buf, at, t0 = b"", [], time.monotonic()
try:
    while not buf.endswith(b"\r\n0\r\n\r\n"):
        d = s.recv(65536)
        if not d:
            break
        buf += d
        while buf.count(b"data: ") > len(at) and b"\n\n" in buf.split(b"data: ")[len(at) + 1]:
            at.append((time.monotonic() - t0) * 1000)
except socket.timeout:
    print("timeout after 5 s")
gaps = [round(b - a) for a, b in zip(at, at[1:])]
print("events", len(at))
print("gaps", " ".join(map(str, gaps)))
print("done", buf.endswith(b"\r\n0\r\n\r\n"))
PY
stop_proxy
cat "$T/stall.out"
expect_eq "every event came, and the reply's end" "events 9 done True" \
    "$(awk '/^events|^done|^timeout/' "$T/stall.out" | tr '\n' ' ' | sed 's/ $//')"
expect_ge "the gap after event 2, ms (stall 600ms)" 550 "$(awk '/^gaps/{print $3}' "$T/stall.out")"
expect_eq "the others: the stand-in's pace, not a stall" 0 \
    "$(awk '/^gaps/{n = 0; for (i = 2; i <= NF; i++) if (i != 3 && $i >= 300) n++; print n}' "$T/stall.out")"
expect_match "the trace: stream_stall after 2 for 600 ms" '"fault":"stream_stall".*"after":2,"stall_ms":600,' "$(cat "$T/stall.jsonl")"

phase "soak check knows the keys"
sed 's/cut_after: 2..5/cut_after: 5..2/' "$T/cfg/soak.yaml" >"$T/cfg/bad.yaml"
soak_rc rc check "$T/cfg/bad.yaml" >"$T/check.out" 2>&1
expect_eq "check of a reversed range" 78 "$rc"
expect_match "where" 'bad.yaml:15:18: proxies\[0\].faults.cut_after: "5..2": the minimum is above the maximum' "$(cat "$T/check.out")"

# faults FILE: a trace's faulted exchanges, one line each
faults() { jq -c 'select(.fault != "none") | [.turn, .conn, .exchange, .occ, .fault, .status, .after]' "$1" | sort; }
# wire DIR TURN: what the SDK saw of that turn's answers, without the times
wire() { sed -n 's/^\(http .*\) at [0-9]*$/\1/p' "$1/r0-t$2/stdout.log"; }

phase "a run: an answer cut short and kept as whole is caught"
# Seeds 4..7 of this config: each fails; seed 7's turn 1 meets a 429, and
# the SDK's retry (the next exchange, occurrence 1) is cut after 5 events.
soak_rc rc run "$T/cfg/soak.yaml" --seeds 4..7 --out "$T/run" >"$T/run.out" 2>&1
expect_eq "run exit status" 1 "$rc"
expect_eq "no infra" 0 "$(jq '[.results[] | select(.verdict == "infra")] | length' "$T/run/report.json")"
expect_eq "every failure is an answer cut short" "" \
    "$(jq -r '.results[] | select(.verdict == "fail") | .invariants[].name' "$T/run/report.json" | grep -v 'every answer whole' || true)"
expect_eq "coverage counts both kinds" "[true,true]" \
    "$(jq -c '.coverage.proxies.llm.faults | [.status > 0, .stream_cut > 0]' "$T/run/report.json")"
# the failing seed whose turn met a status fault, and then the cut of the
# SDK's retry of it (the same turn, the next occurrence)
seed=
for s in $(jq '.results[] | select(.verdict == "fail") | .seed' "$T/run/report.json"); do
	if jq -se '[.[] | select(.fault != "none")] | any(.fault == "status" and .upstream_saw == false)
	    and any(.fault == "stream_cut" and .occ > 0)' "$T/run/failures/$s/trace.jsonl" >/dev/null; then
		seed=$s
		break
	fi
done
[ -n "$seed" ] || fail "no failing seed with a status fault and a cut retry: $(cat "$T/run/failures"/*/trace.jsonl)"
F=$T/run/failures/$seed
want=$(faults "$F/trace.jsonl")
echo "seed $seed:"
echo "$want"
st=$(jq -c 'select(.fault == "status")' "$F/trace.jsonl")
sturn=$(jq '.turn' <<<"$st")
expect_match "the SDK saw the status with its headers, then the retry's 200" \
    "^http (429|529) retry-after 1 retry-after-ms 20
http 200 retry-after - retry-after-ms -\$" "$(wire "$F/workspace" "$sturn")"
expect_eq "its retry: the next exchange on the connection, the next occurrence" \
    "$(jq -c '[.turn, .conn, .exchange + 1, .occ + 1]' <<<"$st")" \
    "$(jq -c "select(.fault == \"stream_cut\" and .turn == $sturn) | [.turn, .conn, .exchange, .occ]" "$F/trace.jsonl")"
P=$F/plan.json
expect_eq "the plan carries the status and the cut, each with its parameter" \
    "$(jq -c 'select(.fault != "none") | [.fault, .status // .after]' "$F/trace.jsonl" | sort)" \
    "$(jq -c '.proxies.llm.faults[] | [.fault, .status // .after]' "$P" | sort)"

phase "the seed replays: the same faults, exchange by exchange"
soak_rc rc replay "$T/cfg/soak.yaml" --seed "$seed" --keep --out "$T/rs" >"$T/rs.out" 2>&1
expect_eq "replay --seed $seed" 1 "$rc"
kept=$(sed -n 's/^workspace kept: //p' "$T/rs.out")
expect_eq "the same faults" "$want" "$(faults "$kept/trace.jsonl")"
expect_eq "the SDK saw the same answers" "$(wire "$F/workspace" "$sturn")" "$(wire "$kept" "$sturn")"

phase "the plan replays: the same faults, exchange by exchange"
soak_rc rc replay "$T/cfg/soak.yaml" --plan "$P" --keep --out "$T/rp" >"$T/rp.out" 2>&1
expect_eq "replay --plan of the failure" 1 "$rc"
kept=$(sed -n 's/^workspace kept: //p' "$T/rp.out")
expect_eq "the same faults" "$want" "$(faults "$kept/trace.jsonl")"
expect_eq "the SDK saw the same answers" "$(wire "$F/workspace" "$sturn")" "$(wire "$kept" "$sturn")"

phase "soak minimize keeps the cut that matters"
soak_rc rc minimize "$T/cfg/soak.yaml" --plan "$P" --tries 1 --explain 0 --out "$T/min.json" >"$T/min.out" 2>&1
cat "$T/min.out"
expect_eq "minimize exit status" 0 "$rc"
expect_eq "what is left: the cut, the 429 the SDK retried past gone, the cut one occurrence earlier" \
    "[[$sturn,\"stream_cut\",0]]" "$(jq -c '[.proxies.llm.faults[] | [.turn, .fault, .occ]]' "$T/min.json")"
expect_eq "one turn" 1 "$(jq '.runs | length' "$T/min.json")"
expect_match "the story tells it" 'llm POST /v1/chat/completions — stream cut after [0-9] events' "$(cat "$T/min.out")"
soak_rc rc replay "$T/cfg/soak.yaml" --plan "$T/min.json" --out "$T/m" >"$T/m.out" 2>&1
expect_eq "the minimized plan still fails" 1 "$rc"

phase "the agent fixed passes the same seeds, through the same faults"
soak_rc rc run "$T/cfg/fixed.yaml" --seeds 4..7 --out "$T/fixed" >"$T/fixed.out" 2>&1
expect_eq "run exit status" 0 "$rc"
expect_eq "every seed passed" 4 "$(jq '.totals.pass' "$T/fixed/report.json")"
expect_eq "coverage: status faults and cuts, retried past" "[true,true]" \
    "$(jq -c '.coverage.proxies.llm.faults | [.status > 0, .stream_cut > 0]' "$T/fixed/report.json")"
jq -c '.coverage.proxies.llm | {exchanges, faults}' "$T/fixed/report.json"
