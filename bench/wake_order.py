#!/usr/bin/python3
# Which of two waiters on one row writes first once the holder commits
# (fault-proxy/gate.h, "What the schedule cannot decide"): T0 updates (or
# only locks, FOR UPDATE) a row and holds it; T1, then T2, update it (T2
# queues behind T1 on the row's tuple lock); T0 commits.
#   bench/wake_order.py update|lock N
# against the database libpq's environment names; prints the lock T2
# waited on and how often each order came (PostgreSQL 15, 300 each:
# update 287 x "012", 13 x "021"; lock 300 x "12").
import psycopg2, threading, sys
dsn = ""   # libpq's environment: PGHOST, PGPORT, PGUSER, PGDATABASE
def conn():
    c = psycopg2.connect(dsn); c.autocommit = True; return c
s = conn().cursor()
s.execute("DROP TABLE IF EXISTS t; CREATE TABLE t (id int primary key, log text)")
mode = sys.argv[1]   # update | lock
orders = {}
for it in range(int(sys.argv[2])):
    s.execute("DELETE FROM t; INSERT INTO t VALUES (1, '')")
    c0 = psycopg2.connect(dsn); k0 = c0.cursor()
    if mode == "update":
        k0.execute("UPDATE t SET log = log || '0' WHERE id = 1")
    else:
        k0.execute("SELECT * FROM t WHERE id = 1 FOR UPDATE")
    c1, c2 = conn(), conn()
    p1 = c1.get_backend_pid(); p2 = c2.get_backend_pid()
    t1 = threading.Thread(target=lambda: c1.cursor().execute("UPDATE t SET log = log || '1' WHERE id = 1"))
    t1.start()
    while True:
        s.execute("SELECT cardinality(pg_blocking_pids(%s))", (p1,))
        if s.fetchone()[0] > 0: break
    t2 = threading.Thread(target=lambda: c2.cursor().execute("UPDATE t SET log = log || '2' WHERE id = 1"))
    t2.start()
    while True:
        s.execute("SELECT cardinality(pg_blocking_pids(%s)), (SELECT string_agg(locktype, ',') FROM pg_locks WHERE pid = %s AND NOT granted)", (p2, p2))
        r = s.fetchone()
        if r[0] > 0: break
    c0.commit()
    t1.join(); t2.join()
    s.execute("SELECT log FROM t"); o = s.fetchone()[0]
    orders[o] = orders.get(o, 0) + 1
    for c in (c0, c1, c2): c.close()
print(mode, "T2 waited on:", r[1], "orders:", orders)
