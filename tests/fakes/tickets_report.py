#!/usr/bin/env python3
"""Writes a report.json fixture in the documented shape (docs/report.md).

  tickets_report.py RUN_DIR --run-id ID [--sink S --url U --repo R --project P
      --token-env E --user-env E --infra --insecure-http] [--pass N]
      [--fail SEED:invariant:NAME[,NAME..] | SEED:guard|hang|crash]...
      [--infra-seed SEED:REASON]... [--row TEXT]... [--stderr TEXT]
      [--message TEXT]

--row adds a violating row [TEXT, "ok", "x|y"] to every invariant, --stderr
is turn 0's stderr tail and --message each failure's message: untrusted
text, as a system under test may write it.

Each invariant failure also gets failures/<seed>/result.json (with turns)
and trace.jsonl, as the coordinator leaves them.
"""
import argparse, json, os

ap = argparse.ArgumentParser()
ap.add_argument("run_dir")
ap.add_argument("--run-id", required=True)
ap.add_argument("--config", default="reservations")
ap.add_argument("--sink", default="file")
ap.add_argument("--url")
ap.add_argument("--repo")
ap.add_argument("--project")
ap.add_argument("--token-env")
ap.add_argument("--user-env")
ap.add_argument("--infra", action="store_true")
# The fakes listen on http://127.0.0.1: a token goes there only with this.
ap.add_argument("--insecure-http", action="store_true")
ap.add_argument("--pass", dest="npass", type=int, default=0)
ap.add_argument("--fail", action="append", default=[])
ap.add_argument("--infra-seed", action="append", default=[])
ap.add_argument("--row", action="append", default=[])
ap.add_argument("--stderr")
ap.add_argument("--message")
a = ap.parse_args()

SQL = {"items_reserved matches reservation events":
       "SELECT o.id AS order_id, o.items_reserved, count(e.*) AS events\n"
       "FROM orders o LEFT JOIN events e ON e.order_id = o.id\n"
       "GROUP BY o.id HAVING o.items_reserved <> count(e.*)",
       "at most one provider refund per dispute":
       "SELECT dispute_id, count(*) AS n FROM provider_refunds\n"
       "GROUP BY dispute_id HAVING count(*) > 1"}

os.makedirs(a.run_dir, exist_ok=True)
results = []
for i in range(a.npass):
    results.append({"seed": 1000 + i, "verdict": "pass", "reason": None, "message": None,
                    "worker": 1, "duration_ms": 90, "round": None, "ok_turns": 8,
                    "total_turns": 8, "fingerprint": None, "invariants": [],
                    "attempts": [{"worker": 1, "verdict": "pass", "reason": None,
                                  "duration_ms": 90, "message": None}],
                    "reproduced": None, "replay": None, "failure_dir": None})
for spec in a.fail:
    parts = spec.split(":", 2)
    seed, reason = int(parts[0]), parts[1]
    names = parts[2].split(",") if reason == "invariant" else []
    invs = []
    for n in names:
        invs.append({"name": n, "sql": SQL.get(n, "SELECT 1 WHERE false"),
                     "columns": ["order_id", "items_reserved", "events"],
                     "rows": [[str(seed), "3", "4"], [str(seed + 1), None, "0|1"]]
                     + [[r, "ok", "x|y"] for r in a.row],
                     "row_count": 2 + len(a.row)})
    fp = "|".join([a.config, reason] + sorted(names))
    fdir = "failures/%d" % seed
    rec = {"seed": seed, "verdict": "fail", "reason": reason,
           "message": a.message or "%s failure on seed %d" % (reason, seed), "worker": 2,
           "duration_ms": 131, "round": 0, "ok_turns": 7, "total_turns": 8,
           "fingerprint": fp, "invariants": invs,
           "attempts": [{"worker": 2, "verdict": "fail", "reason": reason,
                         "duration_ms": 131, "message": "x"}],
           "reproduced": True if seed % 2 else None,
           "replay": "soak replay /abs/examples/%s/soak.yaml --seed %d" % (a.config, seed),
           "failure_dir": fdir}
    results.append(rec)
    os.makedirs(os.path.join(a.run_dir, fdir), exist_ok=True)
    full = dict(rec)
    full["turns"] = [{"round": 0, "turn": t, "status": "ok" if t else "error",
                      "exit_code": 0 if t else 1, "signal": None, "duration_ms": 10 + t,
                      "stderr_tail": "" if t else (a.stderr if a.stderr is not None
                                                   else "connect: reset by peer\npanic: boom | x\n")}
                     for t in range(8)]
    with open(os.path.join(a.run_dir, fdir, "result.json"), "w") as f:
        json.dump(full, f)
    with open(os.path.join(a.run_dir, fdir, "trace.jsonl"), "w") as f:
        for x in range(3):
            f.write(json.dumps({"proxy": "provider", "turn": x, "conn": 0, "exchange": 0,
                                "fault": "lost_reply", "upstream_saw": True}) + "\n")
for spec in a.infra_seed:
    seed, reason = spec.split(":")
    results.append({"seed": int(seed), "verdict": "infra", "reason": reason,
                    "message": "database connect failed", "worker": 3, "duration_ms": 5,
                    "round": None, "ok_turns": 0, "total_turns": 0, "fingerprint": None,
                    "invariants": [], "attempts": [
                        {"worker": 3, "verdict": "infra", "reason": reason, "duration_ms": 5,
                         "message": "m"}] * 3,
                    "reproduced": None, "replay": None, "failure_dir": None})
results.sort(key=lambda r: r["seed"])
tot = {"pass": a.npass, "fail": len(a.fail), "infra": len(a.infra_seed), "missing": 0}
report = {
    "format": 1, "soak_version": "0.1.0", "run_id": a.run_id, "host": "ci-runner-3",
    "sut_revision": os.environ.get("SOAK_SUT_REVISION"),
    "config": {"name": a.config, "path": "/abs/examples/%s/soak.yaml" % a.config,
               "hash": "9f3c0a1b2c3d4e5f", "turns": 8, "rounds": 1,
               "tickets": {"sink": a.sink, "url": a.url, "repo": a.repo, "project": a.project,
                           "token_env": a.token_env, "user_env": a.user_env,
                           "issue_type": "Bug", "labels": ["soak", "flaky hunt"],
                           "infra": a.infra, "insecure_http": a.insecure_http,
                           "enabled": True}},
    "seeds": {"first": 0, "last": len(results) - 1, "count": len(results)},
    "started_at": "2026-11-30T01:02:03Z", "finished_at": "2026-11-30T01:02:41Z",
    "wall_ms": 38211, "workers": [{"id": 1, "host": "ci-runner-3", "pid": 4242, "seeds": 1}],
    "totals": tot, "complete": not a.infra_seed,
    "exit_status": 1 if a.fail else (2 if a.infra_seed else 0),
    "results": results}
with open(os.path.join(a.run_dir, "report.json"), "w") as f:
    json.dump(report, f, indent=2)
