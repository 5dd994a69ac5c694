#!/usr/bin/env bash
# bench/resume.sh — what --resume costs: a journal of N seeds (100,000 by
# default) of which all but the last lease's 10 have their verdict is
# replayed by `soak coordinator --resume`, and a worker waiting for it gets
# the first new lease.  Prints, as medians of RUNS runs: the journal's size,
# the time from the coordinator's start to "resuming run" (the replay) and
# to the first lease it grants, and its VmHWM.  Never fails on timing.
#   N=100000 RUNS=3 bash bench/resume.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100000}
RUNS=${RUNS:-3}
SOAK=${SOAK:-$PWD/build/soak}
T=$(mktemp -d /tmp/soak-bench-resume.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$T"' EXIT

printf 'bench-resume-secret-0123456789abcdef' >"$T/secret"
chmod 600 "$T/secret"
cat >"$T/b.yaml" <<YAML
name: bench-resume
seeds: 0..$((N - 1))
turns: 1
confirm: false
turn:
  command: ["true"]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
# The config's hash, as a run's journal head carries it.
"$SOAK" run "$T/b.yaml" --seeds 0..0 --workers 1 --out "$T/probe" >/dev/null 2>&1
hash=$(head -n 1 "$T/probe/journal.jsonl" | jq -r .config_hash)

# One worker, leases of 32 seeds, every seed a pass but the last lease's
# final 10, whose lease is still active: what a coordinator killed near the
# end of a 100,000-seed run leaves.
python3 - "$T/journal.jsonl" "$N" "$hash" <<'PY'
import json, sys
path, n, h = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, "w") as f:
    w = lambda o: f.write(json.dumps(o, separators=(",", ":")) + "\n")
    w({"format": 1, "run_id": "bench-resume", "config_hash": h, "seeds": [0, n - 1],
       "started_at_ms": 0, "t": "run"})
    w({"id": 1, "name": "bench:1", "host": "bench", "pid": 1, "t": "worker"})
    lid, s = 0, 0
    while s < n:
        k = min(32, n - s)
        lid += 1
        w({"id": lid, "worker": 1, "from": 0, "confirm": False,
           "seeds": [[x, 1] for x in range(s, s + k)], "t": "lease"})
        for x in range(s, s + k):
            if x >= n - 10:
                break
            w({"lease": lid, "seed": x, "attempt": 1, "reason": "", "duration_ms": 5,
               "detail": {"message": "1 of 1 turns ok", "round": None, "ok_turns": 1,
                          "total_turns": 1}, "t": "result"})
        s += k
PY
size=$(du -k "$T/journal.jsonl" | cut -f1)

ms() { date +%s%3N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$T/replay"; : >"$T/lease"; : >"$T/hwm"
for r in $(seq "$RUNS"); do
	rm -rf "$T/out"; mkdir "$T/out"
	cp "$T/journal.jsonl" "$T/out/"
	t0=$(ms)
	"$SOAK" coordinator "$T/b.yaml" --listen tcp://127.0.0.1:0 --resume "$T/out" \
	    --secret-file "$T/secret" -v >"$T/c.out" 2>"$T/c.err" &
	c=$!
	url=$(timeout 120 tail -n +1 -F "$T/c.err" 2>/dev/null |
	    grep -m1 -oE 'listening on tcp://[0-9.:]+' | cut -d' ' -f3 || true)
	t_replay=$(ms)
	[ -n "$url" ] || { cat "$T/c.err"; exit 1; }
	"$SOAK" worker --connect "$url" --secret-file "$T/secret" >/dev/null 2>&1 &
	wk=$!
	timeout 120 tail -n +1 -F "$T/c.err" 2>/dev/null | grep -m1 -q 'lease [0-9]* to worker' || true
	t_lease=$(ms)
	grep -q 'lease [0-9]* to worker' "$T/c.err" || { cat "$T/c.err"; exit 1; }
	grep VmHWM "/proc/$c/status" | awk '{print $2}' >>"$T/hwm"
	echo $((t_replay - t0)) >>"$T/replay"
	echo $((t_lease - t0)) >>"$T/lease"
	wait "$c" || true
	wait "$wk" || true
done
echo "bench/resume: $N seeds, journal $((size / 1024)) MB, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  start -> listening (replay done): median $(median <"$T/replay") ms"
echo "  start -> first new lease:         median $(median <"$T/lease") ms"
echo "  coordinator VmHWM:                median $(( $(median <"$T/hwm") / 1024 )) MB"
