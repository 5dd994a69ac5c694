#!/usr/bin/python3
"""A fulfilment agent's turn in Python: two reserve_items calls to the tool
server over HTTP (urllib), through the proxy soak puts in front of it
(SOAK_PROXY_TOOLS), on orders drawn from SOAK_TURN_SEED.  A call that fails
(the tool's 409 or 500) fails the turn: the agent exits 1."""
import json
import os
import random
import sys
import urllib.error
import urllib.request

TOOLS = "http://" + os.environ["SOAK_PROXY_TOOLS"] + "/reserve_items"
turn = int(os.environ["SOAK_TURN"])
rng = random.Random(int(os.environ["SOAK_TURN_SEED"]))
failed = False
for order in (rng.choice([1, 2]), rng.choice([1, 2])):
    req = urllib.request.Request(
        TOOLS, data=json.dumps({"order": order, "turn": turn}).encode(),
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            said = json.load(r)
        print("order %d: reserved %d, %d in all" % (order, said["reserved"],
                                                     said["items_reserved"]))
    except urllib.error.HTTPError as e:
        print("order %d: error %d: %s" % (order, e.code, e.read().decode()))
        failed = True
sys.exit(1 if failed else 0)
