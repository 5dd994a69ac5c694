#!/usr/bin/python3
"""A run folder as soak writes it (docs/report.md), made up: report.json,
journal.jsonl and failures/<seed>/ for report.html's tests and bench
(tests/integration/report_html.sh, bench/report_html.sh).  Not a fake of an
outside service: the files are the contract soak report reads, and every
field here is one the docs name.

  report_synth.py DIR --seeds N [--fps A,B,...] [--fail-every K]
      [--infra-every K] [--started ISO] [--flaky FP] [--hostile]
      [--no-times] [--workers W] [--scheduled]

Seed s fails with fingerprint fps[(s // K) % len(fps)] when s % K == 1,
ends infra when s % infra_every == 2, and passes otherwise.  --hostile puts
markup into a row, a message, an invariant's name and a stderr tail.
--no-times writes a journal and results as an older soak did (no at_ms,
no timing).  Deterministic: the same arguments write the same bytes.
"""
import argparse
import json
import os

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'

p = argparse.ArgumentParser()
p.add_argument("dir")
p.add_argument("--seeds", type=int, required=True)
p.add_argument("--fps", default="duplicate refund")
p.add_argument("--fail-every", type=int, default=7)
p.add_argument("--infra-every", type=int, default=0)
p.add_argument("--started", default="2026-11-30T01:00:00Z")
p.add_argument("--flaky", default="")
p.add_argument("--hostile", action="store_true")
p.add_argument("--no-times", action="store_true")
p.add_argument("--workers", type=int, default=4)
p.add_argument("--scheduled", action="store_true")
p.add_argument("--name", default="synth")
p.add_argument("--exchange-times", action="store_true",
               help="failures/<seed>/timing.jsonl (docs/report.md), in trace order")
p.add_argument("--extras", action="store_true",
               help="coverage, regressions, groups[].story/plan, a quarantined worker")
a = p.parse_args()

fps = [f for f in a.fps.split(",") if f]
name = a.name
os.makedirs(a.dir, exist_ok=True)
started_ms = 1796000000000
seed_ms = 40
results, smallest, journal = [], {}, []
journal.append({"format": 1, "run_id": "synth-" + a.started, "config_hash":
                "00112233aabbccdd", "seeds": [0, a.seeds - 1],
                "started_at_ms": started_ms, "t": "run"})
for w in range(1, a.workers + 1):
    journal.append({"id": w, "name": "host%d:%d" % (w, 100 + w), "host": "host%d" % w,
                    "pid": 100 + w, "t": "worker"})
clock = [started_ms + 300] * (a.workers + 1)
lease_id = 0
counts = {"pass": 0, "fail": 0, "infra": 0}


def inv_of(fp):
    inv = fp + (" " + HOSTILE if a.hostile else "")
    row = ["d1", "2", HOSTILE if a.hostile else "t1/a1 t2/a1"]
    return {"name": inv, "sql": "SELECT dispute_id, count(*), string_agg(sender, ' ')\n"
            "FROM refunds GROUP BY 1 HAVING count(*) > 1",
            "columns": ["dispute_id", "refunds", "asked_by"], "rows": [row],
            "row_count": 1}, "%s|invariant|%s" % (name, inv)


chunk = 32
for base in range(0, a.seeds, chunk):
    lease_id += 1
    w = (lease_id - 1) % a.workers + 1
    seeds = list(range(base, min(a.seeds, base + chunk)))
    ev = {"id": lease_id, "worker": w, "from": 0, "confirm": False,
          "seeds": [[s, 1] for s in seeds], "t": "lease"}
    if not a.no_times:
        ev["at_ms"] = clock[w]
    journal.append(ev)
    for s in seeds:
        dur = seed_ms + (s * 37) % 23
        rec = {"seed": s, "worker": w, "duration_ms": dur, "round": None,
               "ok_turns": 4, "total_turns": 4, "attempts": [],
               "reproduced": None,
               "replay": "./soak replay examples/synth/soak.yaml --seed %d" % s}
        detail = {"message": "4 of 4 turns ok", "round": None, "ok_turns": 4,
                  "total_turns": 4}
        if not a.no_times:
            detail["timing"] = {"started_at_ms": clock[w], "checks": [[0, dur - 5, dur - 1, 0]],
                                "turns": [[0, t, 2 + t, dur - 8 + t, "ok"] for t in range(4)]}
        if a.fail_every and s % a.fail_every == 1:
            inv, fp = inv_of(fps[(s // a.fail_every) % len(fps)])
            msg = "1 invariant(s) broken after round 0" + (" " + HOSTILE if a.hostile else "")
            rec.update(verdict="fail", reason="invariant", message=msg, round=0,
                       fingerprint=fp, invariants=[inv], failure_dir="failures/%d" % s)
            detail = {"message": msg, "round": 0, "invariants": [inv]}
            if not a.no_times:
                detail["timing"] = {"started_at_ms": clock[w],
                                    "checks": [[0, dur - 5, dur - 1, 1]]}
            reason = "invariant"
            if fp not in smallest:
                smallest[fp] = s
                flaky = a.flaky and a.flaky in fp
                rec["reproduced"] = not flaky
                rec["confirm"] = {"worker": w % a.workers + 1,
                                  "verdict": "pass" if flaky else "fail",
                                  "reason": None if flaky else "invariant",
                                  "duration_ms": dur, "message": "...",
                                  "fingerprint": None if flaky else fp}
        elif a.infra_every and s % a.infra_every == 2:
            rec.update(verdict="infra", reason="db", message="the database went away",
                       fingerprint=None, invariants=[], failure_dir="failures/%d" % s)
            reason = "db"
            detail = {"message": rec["message"]}
            if "infra" not in smallest:
                smallest["infra"] = s
        else:
            rec.update(verdict="pass", reason=None, message="4 of 4 turns ok",
                       fingerprint=None, invariants=[], failure_dir=None)
            reason = ""
        counts[rec["verdict"]] += 1
        rec["attempts"] = [{"worker": w, "verdict": rec["verdict"], "reason": rec["reason"],
                            "duration_ms": dur, "message": rec["message"]}]
        clock[w] += dur + 3
        ev = {"lease": lease_id, "seed": s, "attempt": 1, "reason": reason,
              "duration_ms": dur, "detail": detail, "t": "result"}
        if not a.no_times:
            ev["at_ms"] = clock[w]
        journal.append(ev)
        # keep the record order of report.json's keys
        results.append({k: rec[k] for k in (
            "seed", "verdict", "reason", "message", "worker", "duration_ms", "round",
            "ok_turns", "total_turns", "fingerprint", "invariants", "attempts",
            "reproduced", "replay", "failure_dir") if k in rec} |
            ({"confirm": rec["confirm"]} if "confirm" in rec else {}))

wall = max(clock) - started_ms + 200
report = {
    "format": 1, "soak_version": "synth", "run_id": "synth-" + a.started,
    "host": "synth-host" + ("<b>" if a.hostile else ""), "sut_revision": "abc123",
    "config": {"name": name, "path": "/nonexistent/synth/soak.yaml",
               "hash": "00112233aabbccdd", "turns": 4, "rounds": 1,
               "tickets": {"sink": "file", "url": None, "repo": None, "project": None,
                           "token_env": None, "user_env": None, "issue_type": "Bug",
                           "labels": [], "infra": False, "insecure_http": False,
                           "enabled": False}},
    "seeds": {"first": 0, "last": a.seeds - 1, "count": a.seeds},
    "started_at": a.started, "finished_at": a.started,
    "wall_ms": wall,
    "workers": [{"id": w, "host": "host%d" % w, "name": "host%d:%d" % (w, 100 + w),
                 "pid": 100 + w, "seeds": 0} for w in range(1, a.workers + 1)],
    "totals": {"pass": counts["pass"], "fail": counts["fail"], "infra": counts["infra"],
               "missing": 0},
    "complete": counts["infra"] == 0, "interrupted": False,
    "exit_status": 1 if counts["fail"] else 2 if counts["infra"] else 0,
    "halted": None, "missing_seeds": [], "results": results}
if a.extras:
    # the shapes other branches define (docs/report.md): shown as they come
    results_at = report.pop("results")
    report["workers"][1]["quarantined"] = "3 infra outcomes in a row, the last db"
    # worker 2's lease ended while it ran a seed: a worker lost
    journal.append({"id": 999999, "worker": 2, "from": 0, "confirm": False,
                    "seeds": [[a.seeds + 7, 1]], "t": "lease", "at_ms": started_ms + 50})
    journal.append({"id": 999999, "running": True, "why": "its process died (signal 9)",
                    "t": "lease_end", "at_ms": started_ms + 90})
    # coverage as docs/report.md "coverage" has it
    report["coverage"] = {
        "seeds": a.seeds,
        "proxies": {
            "db": {"schedule": "pct", "exchanges": 812, "seeds_with_exchanges": a.seeds,
                   "connections": 4 * a.seeds,
                   "faults": {"lost_reply": 9, "reset": 4, "duplicate": 0, "blackhole": 0,
                              "close_after": 0, "latency": 0},
                   "steps": 8 * a.seeds, "steps_per_seed": {"median": 8, "max": 9},
                   "forced": {"arrival": 0, "blocked": 2, "outside": 1},
                   "lock_waits": 17, "deadlocks": {"soak": 1, "postgres": 0},
                   "later_field": "kept" + (" " + HOSTILE if a.hostile else "")},
            "cache" + ("<i>" if a.hostile else ""): {
                "schedule": None, "exchanges": 0, "seeds_with_exchanges": 0,
                "connections": 0, "faults": {"lost_reply": 0, "reset": 0},
                "steps": 0, "steps_per_seed": None, "forced": {"arrival": 0, "blocked": 0},
                "lock_waits": 0, "deadlocks": {"soak": 0, "postgres": 0}}},
        "forced": {"decisions": 3, "seeds": 2},
        "invariants": [{"name": "dup refund", "seeds_checked": a.seeds, "seeds_broken": 3},
                       {"name": "never checked", "seeds_checked": 0, "seeds_broken": 0}],
        "pct": [{"proxy": "db", "turns": 4, "steps": 8, "depth": 3, "per_seed": 0.00390625,
                 "seeds": a.seeds, "over_run": 1 - (1 - 0.00390625) ** a.seeds, "forced": 3,
                 "assumes": "no forced decisions and no exchanges outside the schedule"}],
        "warnings": ["proxy \"cache\" saw no exchange" + (" " + HOSTILE if a.hostile else "")],
        "later_total": 7}
    report["regressions"] = [{"name": "dup-refund-0", "verdict": "fail"}]
    report["groups"] = [{"fingerprint": fp, "story": "turn 1's reply was lost, so it asked "
                         "again" + (" " + HOSTILE if a.hostile else ""),
                         "plan": "failures/%d/plan.json" % s}
                        for fp, s in smallest.items() if fp != "infra"]
    report["results"] = results_at
with open(os.path.join(a.dir, "report.json"), "w") as f:
    json.dump(report, f, indent=2)
with open(os.path.join(a.dir, "journal.jsonl"), "w") as f:
    for ev in journal:
        f.write(json.dumps(ev, separators=(",", ":")) + "\n")

# The smallest seed of each fingerprint: result.json with its turns and a
# fault trace with a lost reply (and, --scheduled, steps with a lock wait).
for fp, s in smallest.items():
    d = os.path.join(a.dir, "failures", str(s))
    os.makedirs(d, exist_ok=True)
    rec = next(r for r in results if r["seed"] == s)
    turns = [{"round": 0, "turn": t, "status": "error" if t == 3 else "ok",
              "code": 1 if t == 3 else 0, "start_ms": 2 + t, "end_ms": 30 + 2 * t,
              "duration_ms": 28 + t, "stdout_tail": "",
              "stderr_tail": (HOSTILE + "\n") if a.hostile else "t%d done\n" % t}
             for t in range(4)]
    full = dict(rec, turns=turns)
    if not a.no_times:
        full["timing"] = {"started_at_ms": started_ms, "checks": [[0, 36, 39, 1]]}
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump(full, f, indent=2)
    if a.exchange_times:
        with open(os.path.join(d, "timing.jsonl"), "w") as f:
            for t in range(4):
                for x in range(2):
                    b = 3 + 2 * t + 12 * x
                    f.write(json.dumps({"proxy": "db", "turn": t, "conn": 0, "exchange": x,
                                        "t_begin_ms": b, "t_admit_ms": b + 1,
                                        "t_end_ms": b + 6}, separators=(",", ":")) + "\n")
    with open(os.path.join(d, "trace.jsonl"), "w") as f:
        for t in range(4):
            for x in range(2):
                fault = "lost_reply" if (t, x) == (1, 0) else "none"
                line = {"proxy": "db", "turn": t, "conn": 0, "exchange": x,
                        "fault": fault, "latency_ms": 0, "bytes_up": 40,
                        "bytes_down": 0 if fault == "lost_reply" else 30,
                        "upstream_saw": True, "client_got_reply": fault != "lost_reply"}
                if a.scheduled:
                    line["step"] = 1 + x * 4 + t
                    line["cand"] = "f"   # a hex mask, as the proxy writes it
                    line["pg"] = "simple"
                    line["sql"] = ("UPDATE accounts SET b = b - 1" if x else "BEGIN") + \
                        (" " + HOSTILE if a.hostile else "")
                    if (t, x) == (2, 1):
                        line["waits_on"] = "1"
                        line["forced"] = "blocked"
                    if (t, x) == (3, 1):
                        line["deadlock"] = "soak"
                    if (t, x) == (0, 1):
                        line["wakes"] = "6"
                    if a.extras and (t, x) == (1, 1):
                        # fields the lead's fault-proxy adds: rendered if present
                        line.update(round=0, key="000000009f3c0a1b", occ=2, plan="lose the reply",
                                    deferred=4, forced="outside",
                                    closed="client gone")

                f.write(json.dumps(line, separators=(",", ":")) + "\n")
        if a.extras:
            # an HTTP exchange: its request line (req), cut and redacted by the proxy
            f.write(json.dumps({"proxy": "provider", "turn": 2, "conn": 0, "exchange": 0,
                                "fault": "none", "latency_ms": 0, "bytes_up": 90,
                                "bytes_down": 40, "upstream_saw": True,
                                "client_got_reply": True,
                                "req": "POST /refunds/d1 HTTP/1.1" +
                                (" " + HOSTILE if a.hostile else "")},
                               separators=(",", ":")) + "\n")
