#!/usr/bin/python3
"""A model stand-in, started by soak as a service: OpenAI-compatible chat
completions (POST /v1/chat/completions) on 127.0.0.1:$SOAK_PORT.

It plays the planner the campaign agents ask: "Campaign C: the budget has N
left. How much should it spend?" and answers {"spend": S}, S = min(N, what
campaign C wants), C's want 100..300 drawn from its name (which each agent
draws from SOAK_TURN_SEED).  So the answer is a function of the question, as
the seed's other decisions are, and it comes at once: the model's seconds
are the `latency:` of soak's proxy in front of it (soak.yaml), recorded and
not slept under a schedule.

  --delay MIN..MAX   sleep a uniform MIN..MAX seconds before answering: a
                     slow model that is slow itself (then the turn waits
                     for it, and a schedule's `arrival` watches)
"""
import hashlib
import json
import os
import random
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ASK = re.compile(r"Campaign (\S+): the budget has (-?\d+) left")
DELAY = None


def want(campaign):
    h = int(hashlib.sha256(campaign.encode()).hexdigest(), 16)
    return 100 + h % 5 * 50


class Model(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            req = json.loads(body)
            m = ASK.search(req["messages"][-1]["content"])
            campaign, left = m.group(1), int(m.group(2))
        except (ValueError, KeyError, IndexError, AttributeError, TypeError):
            return self.answer(400, {"error": {"message": "not a question "
                                               "this model knows"}})
        if DELAY:
            time.sleep(random.uniform(*DELAY))
        spend = max(0, min(left, want(campaign)))
        self.answer(200, {
            "id": "chatcmpl-fake", "object": "chat.completion",
            "model": req.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant",
                "content": json.dumps({"spend": spend})}}]})

    def answer(self, status, obj):
        out = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def main():
    global DELAY
    args = sys.argv[1:]
    if args[:1] == ["--delay"] and len(args) == 2:
        lo, hi = (float(x) for x in args[1].split(".."))
        DELAY = (lo, hi)
    elif args:
        sys.exit("usage: fake_model.py [--delay MIN..MAX]")
    ThreadingHTTPServer.daemon_threads = True
    srv = ThreadingHTTPServer(("127.0.0.1", int(os.environ["SOAK_PORT"])), Model)
    srv.serve_forever()


if __name__ == "__main__":
    main()
