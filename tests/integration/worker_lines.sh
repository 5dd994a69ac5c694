# What a worker says.  Without -v: that it waits for a
# coordinator that is not up yet (at once, not after seconds of silence),
# that it connected (to what, as which worker, in which run, trusted by
# what), and that it is done (seeds run, results refused).  With -v also
# one line per lease and per seed's verdict.  `soak run`'s own workers
# stay quiet: their lines would only interleave with the run's.
. "$(dirname "$0")/lib.sh"

export SOAK_SECRET=worker-lines-secret-$$-0123456789abcdef
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
[ $((SOAK_SEED % 4)) = 3 ] && exit 1
exit 0
SH
chmod +x "$T/turn.sh"
cat >"$T/lines.yaml" <<'YAML'
name: worker-lines
seeds: 0..11
turns: 1
retries: 0
confirm: false
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
guard:
  min_ok_turns: 1
YAML
ms() { date +%s%3N; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- a worker started before its coordinator, without -v ---
port=$(free_port)
url=tcp://127.0.0.1:$port
t0=$(ms)
"$SOAK" worker --connect "$url" >"$T/w1.out" 2>"$T/w1.err" &
w1=$!
cleanup_hooks+=("kill $w1 2>/dev/null")
line=$(wait_line "$T/w1.err" 'waiting for the coordinator' 10 "the worker saying it waits")
waited=$(($(ms) - t0))
expect_match "the worker says what it waits for, and why" \
    "^worker: waiting for the coordinator at $url \(Connection refused\), for up to [0-9]+ s$" "$line"
# How soon is a figure, not an assertion (tests never fail on timing): the
# line comes at the first refused dial (worker/worker.c link_dial).
echo "the worker said it waits $waited ms after it started"

"$SOAK" coordinator "$T/lines.yaml" --listen "$url" --out "$T/c1" >"$T/c1.out" 2>"$T/c1.err" &
c1=$!
cleanup_hooks+=("kill $c1 2>/dev/null")
line=$(wait_line "$T/w1.err" 'connected to' 60 "the worker's connected line")
expect_match "the connected line" \
    "^worker: connected to $url as worker 1 \(run [0-9T]+-[0-9a-f]+\), trusted by the shared secret$" "$line"
wait_exit rc "$w1" 120 "worker 1 after the run"
expect_eq "worker exit status" 0 "$rc"
wait_exit rc "$c1" 60 "coordinator 1 after the run"
expect_eq "coordinator exit status (seeds 3, 7, 11 fail)" 1 "$rc"
run=$(jq -r .run_id "$T/c1/report.json")
expect_match "the connected line names the run" "\(run $run\)" "$(cat "$T/w1.err")"
expect_eq "the done line, last" "worker 1: done: 12 seeds, 0 refused" "$(tail -n 1 "$T/w1.err")"
grep -E 'lease [0-9]+:|^worker 1: seed [0-9]+:' "$T/w1.err" && fail "lease or seed lines without -v"
ok "no lease or seed lines without -v"
expect_eq "without -v: waiting, then connected, ..., then done" "waiting connected done" \
    "$(sed -nE 's/^worker( 1)?: (waiting|connected|done):? .*/\2/p' "$T/w1.err" | xargs)"

# --- with -v: a line per lease and per seed ---
"$SOAK" coordinator "$T/lines.yaml" --listen tcp://127.0.0.1:0 --out "$T/c2" >"$T/c2.out" 2>"$T/c2.err" &
c2=$!
cleanup_hooks+=("kill $c2 2>/dev/null")
url=$(wait_line "$T/c2.err" 'listening on tcp://' 30 "coordinator 2 listening" | grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
soak_rc rc worker --connect "$url" -v >"$T/w2.out" 2>"$T/w2.err"
expect_eq "worker -v exit status" 0 "$rc"
wait_exit rc "$c2" 60 "coordinator 2 after the run"
leases=$(grep -E '^worker 1: lease [0-9]+: [0-9]+ seed\(s\) from [0-9]+$' "$T/w2.err" || true)
expect_ge "lease lines" 1 "$(grep -c . <<<"$leases")"
expect_eq "the leases' seeds add up to the run's" 12 \
    "$(awk '{ n += $5 } END { print n }' <<<"$leases")"
expect_eq "one verdict line per seed" 12 "$(grep -cE '^worker 1: seed [0-9]+: (pass|fail [a-z]+) \([0-9]+ ms\)$' "$T/w2.err")"
expect_eq "seed 3's verdict line" 1 "$(grep -cE '^worker 1: seed 3: fail guard' "$T/w2.err")"
expect_match "worker -v: connected and done lines too" 'worker 1: done: 12 seeds, 0 refused' "$(cat "$T/w2.err")"

# --- soak run's local workers keep quiet ---
soak_rc rc run "$T/lines.yaml" --workers 2 --out "$T/r" >"$T/r.out" 2>"$T/r.err"
expect_eq "soak run exit status" 1 "$rc"
grep -E 'connected to|done: [0-9]+ seeds' "$T/r.err" && fail "soak run's workers printed their lines"
ok "soak run's workers said nothing of connecting or being done"
