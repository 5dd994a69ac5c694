#!/usr/bin/python3
"""One turn of a support agent whose model asks for several tool calls at
once (seeds/000's asyncio.gather of tool calls), here in threads: each
issue_refund call runs in a thread of its own, on a psycopg2 connection of
its own, as a tool runtime with a connection pool runs them.

The customer has three open disputes, and the model answers with four
issue_refund calls: one for each dispute and one of them again (models
repeat a call; seeds/000's reissued one), in an order drawn from
SOAK_TURN_SEED.  Each call claims its dispute (a conditional UPDATE, so a
repeated call refunds nothing), then credits the disputed amount to the
customer's account, logs the credit and settles the refund, in one
transaction.

As shipped the credit is read, then written: two calls on one account that
both read before either writes lose a credit, and nothing errors (the
balance says less than the ledger).

  refund_agent.py            as shipped: SELECT the balance, UPDATE it to
                             what was read plus the amount
  refund_agent.py --fixed    SELECT ... FOR UPDATE: the second call on an
                             account waits for the first one's COMMIT
Mutants of --fixed, each without one defence:
  --autocommit               every statement its own transaction: the row
                             lock of FOR UPDATE ends with its statement
  --no-guard                 the claim without "AND state = 'open'": a
                             repeated call refunds a dispute again
  --unchecked                the claim's row count unread: a repeated call
                             that claimed nothing refunds anyway

The database is the one soak's environment names (PGHOST, ... through the
proxy db).
"""
import os
import random
import sys
import threading

import psycopg2

DISPUTES = ["dsp_1", "dsp_2", "dsp_3"]


def issue_refund(dispute, flags, turn):
    """The tool: refund a dispute as store credit to its account."""
    conn = psycopg2.connect("")
    try:
        conn.autocommit = "--autocommit" in flags
        cur = conn.cursor()
        cur.execute("SELECT account_id, amount_eur FROM disputes WHERE id = %s",
                    (dispute,))
        account, amount = cur.fetchone()
        guard = "" if "--no-guard" in flags else " AND state = 'open'"
        cur.execute("UPDATE disputes SET state = 'refunded' WHERE id = %s" +
                    guard, (dispute,))
        if cur.rowcount == 0 and "--unchecked" not in flags:
            conn.rollback()
            return "%s: already refunded" % dispute
        lock = " FOR UPDATE" if "--fixed" in flags else ""
        cur.execute("SELECT credit_balance_eur FROM accounts WHERE id = %s" +
                    lock, (account,))
        (balance,) = cur.fetchone()
        cur.execute("UPDATE accounts SET credit_balance_eur = %s WHERE id = %s",
                    (balance + amount, account))
        cur.execute("INSERT INTO credit_log (account_id, amount_eur, "
                    "dispute_id, turn) VALUES (%s, %s, %s, %s)",
                    (account, amount, dispute, turn))
        cur.execute("INSERT INTO refunds (dispute_id, amount_eur, state, turn) "
                    "VALUES (%s, %s, 'settled', %s)", (dispute, amount, turn))
        conn.commit()
        return "%s: %d EUR credited to account %d, balance %d EUR" % (
            dispute, amount, account, balance + amount)
    finally:
        conn.close()


def main():
    flags = sys.argv[1:]
    known = {"--fixed", "--autocommit", "--no-guard", "--unchecked"}
    if not set(flags) <= known or (flags and "--fixed" not in flags):
        sys.exit("usage: refund_agent.py [--fixed [--autocommit|--no-guard|"
                 "--unchecked]]")
    turn = int(os.environ["SOAK_TURN"])
    rng = random.Random(int(os.environ["SOAK_TURN_SEED"]))
    batch = DISPUTES + [rng.choice(DISPUTES)]     # the model's four calls
    rng.shuffle(batch)

    # The tool calls at once, a thread and a connection each; what each
    # returns (or raises) goes back to the model.
    said = [None] * len(batch)

    def call(i):
        try:
            said[i] = issue_refund(batch[i], flags, turn)
        except Exception as e:          # the model is told, as a runtime does
            said[i] = "%s: error: %s" % (batch[i], str(e).strip())

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(batch))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for line in said:
        print(line)
    sys.exit(1 if any(": error: " in s for s in said) else 0)


if __name__ == "__main__":
    main()
