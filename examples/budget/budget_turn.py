#!/usr/bin/python3
"""One campaign agent's turn (seeds/001's shape): read what is left of the
budget, ask the model how much the campaign should spend, write it back and
record the spend.

As shipped it writes back what it read minus the spend: two agents that both
read before either writes lose one spend (the budget says more is left than
was spent).  The window between the read and the write is the model's
seconds, and on a laptop with a fake model it is a millisecond; soak's
schedule opens it whatever the clock says.

  budget_turn.py            as shipped: read, ask, write back read - spend
  budget_turn.py --fixed    one transaction: UPDATE ... SET remaining =
                            remaining - S WHERE remaining >= S, the spend
                            recorded only when that took a row; else read
                            again and ask again (up to 3 times)
Mutants of --fixed, each without one defence:
  --no-guard                no "remaining >= S": the budget can go below 0
  --absolute                SET remaining = (what was read) - S: lost updates
  --unchecked               the spend is recorded even when the UPDATE took
                            no row (the budget was spent meanwhile)
And with either:
  --direct                  call the model at $SOAK_SERVICE_MODEL, past soak's
                            proxy: soak cannot see the call, and a slow model
                            (fake_model.py --delay) makes the schedule's
                            `arrival` decide, which the summary names

The database is the one soak's environment names (PGHOST, ... through the
proxy db); the model is at $SOAK_PROXY_MODEL (soak's proxy in front of the
fake model service).
"""
import json
import os
import sys
import urllib.request

import psycopg2

BUDGET = 1
MODEL = "SOAK_PROXY_MODEL"      # the environment variable naming the model


def ask_model(campaign, left):
    """The model's plan for the campaign: how much to spend of what is left."""
    body = json.dumps({"model": "planner", "messages": [
        {"role": "system", "content": "You plan marketing spend. Answer in "
         "JSON: {\"spend\": N}."},
        {"role": "user", "content": "Campaign %s: the budget has %d left. "
         "How much should it spend?" % (campaign, left)}]}).encode()
    req = urllib.request.Request(
        "http://%s/v1/chat/completions" % os.environ[MODEL],
        data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        reply = json.load(r)
    return int(json.loads(reply["choices"][0]["message"]["content"])["spend"])


def read_left(cur):
    cur.execute("SELECT remaining FROM budgets WHERE id = %s", (BUDGET,))
    return cur.fetchone()[0]


def record(cur, campaign, spend):
    cur.execute("INSERT INTO spends (budget_id, campaign, amount, turn) "
                "VALUES (%s, %s, %s, %s)",
                (BUDGET, campaign, spend, int(os.environ["SOAK_TURN"])))


def as_shipped(conn, campaign):
    conn.autocommit = True
    cur = conn.cursor()
    left = read_left(cur)
    spend = ask_model(campaign, left)
    if spend <= 0:
        return "nothing left to spend"
    cur.execute("UPDATE budgets SET remaining = %s WHERE id = %s",
                (left - spend, BUDGET))
    record(cur, campaign, spend)
    return "spent %d of %d" % (spend, left)


def fixed(conn, campaign, flags):
    cur = conn.cursor()
    for _ in range(3):
        conn.autocommit = True
        left = read_left(cur)
        spend = ask_model(campaign, left)
        if spend <= 0:
            return "nothing left to spend"
        conn.autocommit = False
        if "--absolute" in flags:
            cur.execute("UPDATE budgets SET remaining = %s WHERE id = %s "
                        "AND remaining >= %s", (left - spend, BUDGET, spend))
        elif "--no-guard" in flags:
            cur.execute("UPDATE budgets SET remaining = remaining - %s "
                        "WHERE id = %s", (spend, BUDGET))
        else:
            cur.execute("UPDATE budgets SET remaining = remaining - %s "
                        "WHERE id = %s AND remaining >= %s",
                        (spend, BUDGET, spend))
        if cur.rowcount == 1 or "--unchecked" in flags:
            record(cur, campaign, spend)
            conn.commit()
            return "spent %d" % spend
        conn.rollback()     # spent meanwhile: read again, ask again
    return "gave up: the budget kept moving"


def main():
    global MODEL
    flags = sys.argv[1:]
    if "--direct" in flags:
        flags.remove("--direct")
        MODEL = "SOAK_SERVICE_MODEL"
    known = {"--fixed", "--no-guard", "--absolute", "--unchecked"}
    if not set(flags) <= known or (flags and "--fixed" not in flags):
        sys.exit("usage: budget_turn.py [--direct] [--fixed [--no-guard|"
                 "--absolute|--unchecked]]")
    # the campaign's name, and so what it wants, is the seed's
    campaign = "c%d-%d" % (int(os.environ["SOAK_TURN"]),
                           int(os.environ["SOAK_TURN_SEED"]) % 1000)
    conn = psycopg2.connect("")
    try:
        said = fixed(conn, campaign, flags) if flags else as_shipped(conn, campaign)
    finally:
        conn.close()
    print("%s: %s" % (campaign, said))


if __name__ == "__main__":
    main()
