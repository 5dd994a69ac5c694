#!/usr/bin/python3
"""A tool server for fulfilment agents (seeds/001's reservation path, served
over HTTP): a ThreadingHTTPServer, a thread a request, and a
psycopg2.pool.ThreadedConnectionPool (at least 1, at most 4 connections)
that hands its one idle connection to successive requests and opens
another only while one is in use.

  POST /reserve_items {"order": 1, "turn": 3}
      -> {"order": 1, "reserved": 2, "items_reserved": 5}

The tool reads the order's items_reserved, decides how many items to
reserve (1 to 3, from the request: the substitutions a model would pick;
here without a model), writes items_reserved back as what it read plus
that, and appends a reservation event.

  tools.py            as shipped: read, decide, write back read + n, in one
                      transaction at READ COMMITTED: two requests that both
                      read before either writes lose an update (seeds/001)
  tools.py --fixed    a compare-and-set: the write carries the value it read
                      (WHERE items_reserved = read), the event goes in the
                      same transaction, and a write that took no row rolls
                      back and starts again from a fresh read
Mutants of --fixed, each without one defence:
  --no-retry          a CAS that took no row answers 409 instead of reading
                      again: the agent's call fails
  --unchecked         the CAS's row count unread: the event is written though
                      the CAS took no row
  --event-outside     every statement its own transaction (autocommit), the
                      event written before the CAS: an attempt whose CAS
                      took no row leaves its event behind

The database is the one soak's environment names (PGHOST, ...: the proxy
db); the port is SOAK_PORT.
"""
import http.server
import json
import os
import sys

import psycopg2
import psycopg2.pool

MODES = {"--fixed", "--no-retry", "--unchecked", "--event-outside"}
FLAGS = set(sys.argv[1:])
if not FLAGS <= MODES or (FLAGS and "--fixed" not in FLAGS) or len(FLAGS) > 2:
    sys.exit("usage: tools.py [--fixed [--no-retry|--unchecked|--event-outside]]")

# psycopg2.connect("") for each connection: PG* from the environment.
POOL = psycopg2.pool.ThreadedConnectionPool(1, 4, "")
ATTEMPTS = 16       # a CAS fails only when another reservation landed


class Conflict(Exception):
    pass


def items_for(order, turn):
    """How many items to reserve: 1..3, a function of the request."""
    return 1 + (order * 7 + turn * 3) % 3


class NoOrder(Exception):
    pass


def read_order(cur, order):
    cur.execute("SELECT items_reserved FROM orders WHERE id = %s", (order,))
    row = cur.fetchone()
    if row is None:
        raise NoOrder("no order %d" % order)
    return row[0]


def reserve_shipped(conn, order, turn, n):
    cur = conn.cursor()
    read = read_order(cur, order)
    cur.execute("UPDATE orders SET items_reserved = %s WHERE id = %s",
                (read + n, order))
    cur.execute("INSERT INTO reservation_events (order_id, n, turn) "
                "VALUES (%s, %s, %s)", (order, n, turn))
    conn.commit()
    return read + n


def reserve_cas(conn, order, turn, n):
    cur = conn.cursor()
    for _ in range(ATTEMPTS):
        read = read_order(cur, order)
        if "--event-outside" in FLAGS:
            # the audit row first, committed at once (autocommit)
            cur.execute("INSERT INTO reservation_events (order_id, n, turn) "
                        "VALUES (%s, %s, %s)", (order, n, turn))
        cur.execute("UPDATE orders SET items_reserved = %s "
                    "WHERE id = %s AND items_reserved = %s",
                    (read + n, order, read))
        if cur.rowcount == 0 and "--unchecked" not in FLAGS:
            conn.rollback()         # somebody reserved since our read
            if "--no-retry" in FLAGS:
                raise Conflict("order %d moved since it was read" % order)
            continue
        if "--event-outside" not in FLAGS:
            cur.execute("INSERT INTO reservation_events (order_id, n, turn) "
                        "VALUES (%s, %s, %s)", (order, n, turn))
        conn.commit()
        return read + n
    raise Conflict("order %d kept moving: %d attempts" % (order, ATTEMPTS))


class Tools(http.server.BaseHTTPRequestHandler):
    def reply(self, status, body):
        out = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_POST(self):
        if self.path != "/reserve_items":
            return self.reply(404, {"error": "no tool " + self.path})
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        order, turn = int(req["order"]), int(req["turn"])
        n = items_for(order, turn)
        conn = POOL.getconn()
        try:
            # --event-outside: every statement its own transaction
            conn.autocommit = "--event-outside" in FLAGS
            reserve = reserve_cas if "--fixed" in FLAGS else reserve_shipped
            total = reserve(conn, order, turn, n)
        except NoOrder as e:
            return self.reply(404, {"error": str(e)})
        except Conflict as e:
            return self.reply(409, {"error": str(e)})
        except psycopg2.Error as e:
            return self.reply(500, {"error": str(e).strip()})
        finally:
            POOL.putconn(conn)      # rolls back what a failure left open
        self.reply(200, {"order": order, "reserved": n, "items_reserved": total})

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["SOAK_PORT"])),
                                Tools).serve_forever()
