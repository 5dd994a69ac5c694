# A coordinator killed mid-run loses nothing: its journal.jsonl has every
# verdict and lease, and --resume goes on from there.
#  - `soak coordinator` SIGKILLed with two remote workers mid-seed: started
#    again with --resume on the same address, the workers rejoin by
#    themselves (they were never restarted), re-send what was not
#    acknowledged, and the report has every seed once, with the failing
#    set of an uninterrupted run;
#  - `soak run` SIGKILLed (its local workers die with it): `soak run
#    --resume` finishes the fixed reservations example, every seed passes,
#    and no seed that had its verdict before the kill runs again;
#  - a worker whose lease request the coordinator was holding when it died
#    (nothing for it to run) rejoins too;
#  - a resume with another config is refused (78), and one of a directory
#    with no journal (64).
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"

SECRET=resume-secret-$$-0123456789abcdef
printf '%s' "$SECRET" >"$T/secret"
chmod 600 "$T/secret"
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# Seeds 3, 10 and 17 crash (a domain failure); the rest take a moment.
case "$SOAK_SEED" in 3|10|17) [ "$SOAK_TURN" = 0 ] && kill -SEGV $$ ;; esac
sleep 0.2
SH
chmod +x "$T/turn.sh"
cat >"$T/crash.yaml" <<'YAML'
name: resume
seeds: 0..23
turns: 2
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
guard:
  min_ok_turns: 1
YAML
failing() { jq -c '[.results[] | select(.verdict != "pass") | [.seed, .verdict, .reason]]' "$1/report.json"; }
results_in() { grep -c '"t":"result"' "$1/journal.jsonl" || true; }

# The uninterrupted run, for the failing set.
soak_rc rc run "$T/crash.yaml" --workers 2 --out "$T/base" >"$T/base.out" 2>"$T/base.err"
expect_eq "uninterrupted run exit status" 1 "$rc"
base=$(failing "$T/base")
expect_eq "uninterrupted failing set" '[[3,"fail","crash"],[10,"fail","crash"],[17,"fail","crash"]]' "$base"

# --- soak coordinator, killed and resumed; its workers rejoin ---
"$SOAK" coordinator "$T/crash.yaml" --listen tcp://127.0.0.1:0 --out "$T/fleet" \
    --secret-file "$T/secret" --lease-ttl 4s -v >"$T/c1.out" 2>"$T/c1.err" &
coord=$!
cleanup_hooks+=("kill -KILL $coord 2>/dev/null")
url=$(wait_line "$T/c1.err" 'listening on tcp://' 30 "coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
for w in 1 2; do
	"$SOAK" worker --connect "$url" --secret-file "$T/secret" --reconnect 60s -v \
	    >"$T/w$w.out" 2>"$T/w$w.err" &
	eval "wpid$w=$!"
	cleanup_hooks+=("kill -KILL $! 2>/dev/null")
done
# Killed once six results are in its journal: mid-run, workers mid-seed.
wait_line "$T/fleet/journal.jsonl" '"seed":(6|7|8|9),.*"t":"result"' 60 "a result for seed 6..9" >/dev/null
kill -KILL "$coord"
wait "$coord" 2>/dev/null || true
before=$(results_in "$T/fleet")
ok "coordinator killed with $before result(s) in its journal"
[ "$before" -lt 24 ] || fail "the run was over before the kill"
kill -0 "$wpid1" && kill -0 "$wpid2" || fail "a worker exited with its coordinator"

"$SOAK" coordinator "$T/crash.yaml" --listen "$url" --resume "$T/fleet" \
    --secret-file "$T/secret" --lease-ttl 4s -v >"$T/c2.out" 2>"$T/c2.err" &
coord=$!
cleanup_hooks+=("kill -KILL $coord 2>/dev/null")
wait_exit rc "$coord" 120 "the resumed coordinator"
expect_eq "resumed coordinator exit status" 1 "$rc"
expect_match "it said it resumed" "resuming run .*: [0-9]+ of 24 seeds have their verdict" "$(cat "$T/c2.err")"
for w in 1 2; do
	eval "pid=\$wpid$w"
	wait_exit rc "$pid" 60 "worker $w after the run"
	expect_eq "worker $w exit status" 0 "$rc"
	expect_match "worker $w rejoined by itself" "rejoined the coordinator at tcp://" "$(cat "$T/w$w.err")"
done
check_report "$T/fleet" 0 23
expect_eq "failing set after the resume = uninterrupted" "$base" "$(failing "$T/fleet")"
expect_eq "journal resume lines" 1 "$(grep -c '"t":"resume"' "$T/fleet/journal.jsonl")"
expect_eq "run id kept" "$(jq -r .run_id "$T/fleet/report.json")" \
    "$(head -n 1 "$T/fleet/journal.jsonl" | jq -r .run_id)"

# --- a worker with no seed, its lease request held at the coordinator when
# it dies, rejoins as well: one seed, held at a gate, two workers ---
gate_new
cat >"$T/held.sh" <<SH
#!/bin/sh
timeout 120 dd if="$T/gate" bs=1 count=1 status=none
SH
chmod +x "$T/held.sh"
sed 's|command: \[./turn.sh\]|command: [./held.sh]|; s/^seeds: 0..23/seeds: 0..0/' \
    "$T/crash.yaml" >"$T/held.yaml"
"$SOAK" coordinator "$T/held.yaml" --listen tcp://127.0.0.1:0 --out "$T/held" \
    --secret-file "$T/secret" --lease-ttl 4s -v >"$T/h1.out" 2>"$T/h1.err" &
coord=$!
cleanup_hooks+=("kill -KILL $coord 2>/dev/null")
url=$(wait_line "$T/h1.err" 'listening on tcp://' 30 "coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
for w in 1 2; do
	"$SOAK" worker --connect "$url" --secret-file "$T/secret" --reconnect 60s -v \
	    >"$T/hw$w.out" 2>"$T/hw$w.err" &
	eval "hpid$w=$!"
	cleanup_hooks+=("kill -KILL $! 2>/dev/null")
done
wait_line "$T/h1.err" 'lease 1 to worker' 60 "the seed's lease" >/dev/null
wait_line "$T/h1.err" 'worker 2 is ' 60 "the second worker's hello" >/dev/null
kill -KILL "$coord"
wait "$coord" 2>/dev/null || true
"$SOAK" coordinator "$T/held.yaml" --listen "$url" --resume "$T/held" \
    --secret-file "$T/secret" --lease-ttl 4s -v >"$T/h2.out" 2>"$T/h2.err" &
coord=$!
cleanup_hooks+=("kill -KILL $coord 2>/dev/null")
gate_open
wait_exit rc "$coord" 120 "the resumed coordinator of the held seed"
expect_eq "held seed: resumed coordinator exit status" 0 "$rc"
for w in 1 2; do
	eval "pid=\$hpid$w"
	wait_exit rc "$pid" 60 "held-seed worker $w after the run"
	expect_eq "held-seed worker $w exit status" 0 "$rc"
done
expect_eq "held seed: its verdict" pass "$(jq -r '.results[0].verdict' "$T/held/report.json")"

# --- soak run, killed and resumed ---
FIXED=$ROOT/examples/reservations/fixed.yaml
"$SOAK" run "$FIXED" --seeds 0..39 --workers 2 --out "$T/local" >"$T/l1.out" 2>"$T/l1.err" &
run=$!
cleanup_hooks+=("kill -KILL $run 2>/dev/null")
wait_line "$T/local/journal.jsonl" '"seed":(8|9|1[0-9]),.*"t":"result"' 90 "a result for seed 8..19" >/dev/null
kill -KILL "$run"
wait "$run" 2>/dev/null || true
# Seeds with a verdict before the kill: passes and fails, not infra.
jq -r 'select(.t == "result" and (.reason == "" or .reason == "invariant")) | .seed' \
    "$T/local/journal.jsonl" | sort >"$T/final-before"
ok "soak run killed with $(wc -l <"$T/final-before") seed(s) final"
soak_rc rc run "$FIXED" --resume "$T/local" >"$T/l2.out" 2>"$T/l2.err"
expect_eq "resumed soak run exit status" 0 "$rc"
check_report "$T/local" 0 39
expect_eq "every seed passes" 40 "$(jq '[.results[] | select(.verdict == "pass")] | length' "$T/local/report.json")"
sed -n '/"t":"resume"/,$p' "$T/local/journal.jsonl" |
    jq -r 'select(.t == "result") | .seed' | sort >"$T/after"
expect_eq "seeds final before the kill that ran again" "" \
    "$(comm -12 "$T/final-before" "$T/after" | tr '\n' ' ')"
expect_ge "seeds run after the resume" 1 "$(wc -l <"$T/after")"

# --- refused resumes ---
sed 's/turns: 2/turns: 3/' "$T/crash.yaml" >"$T/other.yaml"
cp "$T/turn.sh" "$T/other-turn.sh"
soak_rc rc run "$T/other.yaml" --resume "$T/fleet" >"$T/r1.out" 2>"$T/r1.err"
expect_eq "resume with another config: exit status" 78 "$rc"
expect_match "it says why" "is not the config run .* its hash is" "$(cat "$T/r1.err")"
mkdir "$T/empty"
soak_rc rc run "$T/crash.yaml" --resume "$T/empty" >"$T/r2.out" 2>"$T/r2.err"
expect_eq "resume of a directory with no journal: exit status" 64 "$rc"
expect_match "it says why" "cannot open .*journal.jsonl" "$(cat "$T/r2.err")"
