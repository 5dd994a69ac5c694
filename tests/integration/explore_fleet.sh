# Explore across machines (docs/explore.md "Across machines"): `soak explore
# --listen` leases the tree's executions one at a time to `soak worker
# --connect` processes (the shared secret, the config folder bundled), and
# journals each one it takes (explore.jsonl), so that --resume goes on where
# a killed explore stopped.  The turn is bash with one `psql -c` per
# statement (the least convenient kind: a connection per statement, nothing
# held between), two turns racing on a counter through the scheduled proxy.
# Checked, against the same exploration run in one process:
#  - two workers, one SIGKILLed while it holds an execution: the same
#    executions, failing schedules and classes, complete; the killed
#    worker's execution went to the other;
#  - a SIGKILLed explore resumed from its journal: the same again, and the
#    executions before the kill are not run twice;
#  - a worker holding the secret that sends a forged record (a pass of no
#    step), and a journal whose verdicts were rewritten: refused, said, run
#    again, and the same result as one process's.
# tier: long (make test-long: over about half a minute here)
. "$(dirname "$0")/lib.sh"
export SOAK_SECRET=explore-fleet-secret-$$-0123456789abcdef

shared_pg xfleet

mkdir "$T/cfg"
counter_schema "$T/cfg/schema.sql"
cat >"$T/cfg/turn.sh" <<'SH'
#!/bin/bash
# read, then write what was read plus one, then log: three statements, a
# psql (a connection) each
set -eu
q() { psql -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"; }
n=$(q "SELECT n FROM counter WHERE id = 1")
q "UPDATE counter SET n = $((n + 1)) WHERE id = 1"
q "INSERT INTO events VALUES ($SOAK_TURN)"
SH
chmod +x "$T/cfg/turn.sh"
sched_cfg "$T/cfg/soak.yaml" xfleet 2 schema.sql "[./turn.sh]" 'seeds: 0..0'

x() { jq -r "$2" "$T/$1/explore.json"; }
figures() { x "$1" '"\(.executions) \(.failing) \(.classes) \(.distinct_schedules) \(.complete)"'; }

phase "one process: the reference"
soak_rc rc explore "$T/cfg/soak.yaml" --seed 0 --preemptions -1 --no-reduce --out "$T/one" >"$T/one.out" 2>&1
cat "$T/one.out"
expect_eq "one process: exit status (the lost update found)" 1 "$rc"
expect_eq "one process: complete" true "$(x one .complete)"
expect_ge "one process: failing schedules" 1 "$(x one .failing)"
ref=$(figures one)
n=$(x one .executions)
echo "reference: executions failing classes distinct complete = $ref"

phase "two workers, one SIGKILLed holding an execution"
"$SOAK" explore "$T/cfg/soak.yaml" --seed 0 --preemptions -1 --no-reduce \
    --listen tcp://127.0.0.1:0 --out "$T/fleet" -v >"$T/fleet.out" 2>"$T/fleet.err" & xp=$!
cleanup_hooks+=("kill $xp 2>/dev/null")
url=$(wait_line "$T/fleet.out" 'listening on tcp://' 120 "soak explore listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+' | head -n 1)
"$SOAK" worker --connect "$url" -v 2>"$T/w1.err" & w1=$!
cleanup_hooks+=("kill -KILL $w1 2>/dev/null")
wait_line "$T/w1.err" 'execution [0-9]+ of its exploration' 60 "worker 1's first execution" >/dev/null
# the second worker joins; the first is killed at its next execution's start
"$SOAK" worker --connect "$url" -v 2>"$T/w2.err" & w2=$!
cleanup_hooks+=("kill $w2 2>/dev/null")
wait_line "$T/w2.err" 'connected to .* trusted by the shared secret' 60 "worker 2's welcome" >/dev/null
line=$(timeout 120 tail -n +1 -F "$T/w1.err" 2>/dev/null | grep -m 2 -E 'execution [0-9]+ of its exploration' | tail -n 1) ||
    true
[ -n "$line" ] || fail "watchdog: worker 1 did not start a second execution within 120 s"
killed=$(grep -oE 'execution [0-9]+' <<<"$line" | tail -n 1)
kill -KILL "$w1"
wait_exit rc "$xp" 300 "soak explore --listen"
wait_exit wrc "$w2" 60 "worker 2"
cat "$T/fleet.out"
expect_eq "fleet: exit status" 1 "$rc"
expect_eq "worker 2: exit status (told the exploration is over)" 0 "$wrc"
expect_eq "fleet: the same executions, failing, classes, distinct, complete" "$ref" "$(figures fleet)"
expect_eq "fleet: the same failing classes" "$(jq -c .failing_classes "$T/one/explore.json")" \
    "$(jq -c .failing_classes "$T/fleet/explore.json")"
expect_match "the coordinator gave the killed worker's $killed to another" \
    "$killed: worker [0-9]+ lost .*: it goes to another worker" "$(cat "$T/fleet.err")"
expect_match "both workers took part" '^  2 workers took part' "$(cat "$T/fleet.out")"
expect_eq "journal: one line per execution taken, and the header" $((n + 1)) "$(wc -l <"$T/fleet/explore.jsonl")"

phase "a worker with the secret forges its record: refused, run elsewhere"
# its lease is the root; its record passes with no step (were it taken,
# the tree would end there: "complete, 1 explored, 0 fail")
PEER=$SOAK_BUILD/tests/helpers/soak_peer
# (at most 1 preemption: 6 executions, the lost update among them, as
# reservations' same shape gives)
"$SOAK" explore "$T/cfg/soak.yaml" --seed 0 --preemptions 1 \
    --listen tcp://127.0.0.1:0 --out "$T/forge" >"$T/forge.out" 2>&1 & xp=$!
cleanup_hooks+=("kill $xp 2>/dev/null")
url=$(wait_line "$T/forge.out" 'listening on tcp://' 120 "soak explore listening for the forger" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+' | head -n 1)
"$PEER" "$url" explore-forge >"$T/forger.out" 2>&1 || { cat "$T/forger.out"; fail "the forger could not send its record"; }
expect_match "the forger held the root's lease" '^lease execution 1$' "$(cat "$T/forger.out")"
expect_match "the forger is handed nothing more" '^second: (none|DONE)$' "$(cat "$T/forger.out")"
"$SOAK" worker --connect "$url" 2>"$T/wf.err" & wf=$!
cleanup_hooks+=("kill $wf 2>/dev/null")
wait_exit rc "$xp" 300 "soak explore --listen with a forger"
wait_exit wrc "$wf" 60 "the honest worker"
cat "$T/forge.out"
expect_eq "forged: exit status (the lost update found)" 1 "$rc"
expect_eq "forged: the tree's 6 executions, complete" "6 true" "$(x forge '"\(.executions) \(.complete)"')"
expect_ge "forged: its failing schedules found" 1 "$(x forge .failing)"
expect_eq "forged: one record refused" 1 "$(x forge .refused)"
expect_match "it says which and why" 'a record refused \(worker [0-9]+\): no step, where the seed.s own run took some' \
    "$(cat "$T/forge.out")"
expect_match "the forger runs nothing more" 'worker [0-9]+ sent a record that does not check' "$(cat "$T/forge.out")"

phase "a budget of 5 executions across machines: incomplete, never a pass"
"$SOAK" explore "$T/cfg/soak.yaml" --seed 0 --preemptions -1 --no-reduce --budget 5 \
    --listen tcp://127.0.0.1:0 --out "$T/bud" >"$T/bud.out" 2>&1 & xp=$!
cleanup_hooks+=("kill $xp 2>/dev/null")
url=$(wait_line "$T/bud.out" 'listening on tcp://' 120 "soak explore --budget listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+' | head -n 1)
"$SOAK" worker --connect "$url" 2>"$T/wb.err" & wb=$!
cleanup_hooks+=("kill $wb 2>/dev/null")
wait_exit rc "$xp" 300 "soak explore --listen --budget 5"
wait_exit wrc "$wb" 60 "the budget's worker"
expect_eq "budget: exit status (2: incomplete; or 1 if one of the 5 failed)" \
    "$( [ "$(x bud .failing)" -gt 0 ] && echo 1 || echo 2)" "$rc"
expect_eq "budget: executions" 5 "$(x bud .executions)"
expect_eq "budget: complete" false "$(x bud .complete)"
expect_eq "budget: what stopped it" "the budget" "$(x bud .stopped_by)"
expect_eq "budget: its worker exits 0" 0 "$wrc"

phase "tls+tcp:// with client certificates (no shared secret), a budget of 3"
pki=$T/pki
mkdir -p "$pki"
new_ca ca "explore test CA"
new_ca ca2 "an unrelated CA"
issue coordinator ca 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n'
issue worker ca 'extendedKeyUsage=clientAuth\n'
issue stranger ca2 'extendedKeyUsage=clientAuth\n'
[ -s "$pki/coordinator.pem" ] && [ -s "$pki/stranger.pem" ] || fail "openssl made no certificates"
SOAK_SECRET= soak_rc rc explore "$T/cfg/soak.yaml" --seed 0 --listen tls+tcp://127.0.0.1:0 \
    --tls-cert "$pki/coordinator.pem" --out "$T/never" >"$T/notls.out" 2>&1
expect_eq "tls+tcp:// with no way to authenticate workers: refused" 64 "$rc"
expect_match "it says so" "add --tls-client-ca" "$(cat "$T/notls.out")"
(unset SOAK_SECRET; exec "$SOAK" explore "$T/cfg/soak.yaml" --seed 0 --preemptions -1 --no-reduce \
    --budget 3 --listen tls+tcp://127.0.0.1:0 --tls-cert "$pki/coordinator.pem" \
    --tls-client-ca "$pki/ca.pem" --out "$T/tls") >"$T/tls.out" 2>&1 & xp=$!
cleanup_hooks+=("kill $xp 2>/dev/null")
turl=$(wait_line "$T/tls.out" 'listening on tls\+tcp://' 120 "soak explore on tls+tcp:// listening" |
    grep -oE 'tls\+tcp://127\.0\.0\.1:[0-9]+' | head -n 1)
soak_rc rc worker --connect "$turl" --tls-server-name localhost --tls-ca "$pki/ca.pem" \
    --tls-cert "$pki/stranger.pem" >"$T/stranger.out" 2>&1
expect_eq "a client certificate of another CA: refused" 1 "$rc"
expect_match "it says why" "refused --tls-cert $pki/stranger.pem" "$(cat "$T/stranger.out")"
(unset SOAK_SECRET; exec "$SOAK" worker --connect "$turl" --tls-server-name localhost \
    --tls-ca "$pki/ca.pem" --tls-cert "$pki/worker.pem") 2>"$T/wt.err" & wt=$!
cleanup_hooks+=("kill $wt 2>/dev/null")
wait_exit rc "$xp" 300 "soak explore on tls+tcp://"
wait_exit wrc "$wt" 60 "the TLS worker"
expect_eq "tls: executions (the budget)" 3 "$(x tls .executions)"
expect_eq "tls: its worker exits 0" 0 "$wrc"
expect_match "tls: the worker ran them" '^  1 worker took part: worker [0-9]+ ran 3$' "$(cat "$T/tls.out")"

phase "a SIGKILLed explore, resumed from its journal"
"$SOAK" explore "$T/cfg/soak.yaml" --seed 0 --preemptions -1 --no-reduce --out "$T/res" \
    >"$T/res1.out" 2>&1 & xp=$!
cleanup_hooks+=("kill -KILL $xp 2>/dev/null")
# killed once 5 executions are in the journal (the header is line 1)
wait_line "$T/res/explore.jsonl" '"no":' 120 "the journal's first execution" >/dev/null
got=$(timeout 120 tail -n +1 -F "$T/res/explore.jsonl" 2>/dev/null | grep -m 5 -c '"no":' || true)
[ "${got:-0}" -ge 5 ] || fail "watchdog: no 5 executions in the journal within 120 s"
kill -KILL "$xp"
wait_exit rc "$xp" 30 "the killed explore"
before=$(( $(wc -l <"$T/res/explore.jsonl") - 1 ))
expect_ge "executions journaled before the kill" 5 "$before"
# a line the kill cut short (written as a kill mid-write leaves one)
printf '{"no":99,"rec":{"verdict":0,"rea' >>"$T/res/explore.jsonl"
soak_rc rc explore "$T/cfg/soak.yaml" --seed 0 --preemptions -1 --no-reduce --resume "$T/res" >"$T/res2.out" 2>&1
cat "$T/res2.out"
expect_eq "resumed: exit status" 1 "$rc"
expect_match "it says what it took from the journal" "^  resumed: $before executions from the journal" "$(cat "$T/res2.out")"
expect_eq "resumed: the same executions, failing, classes, distinct, complete" "$ref" "$(figures res)"
expect_eq "resumed: the same failing classes" "$(jq -c .failing_classes "$T/one/explore.json")" \
    "$(jq -c .failing_classes "$T/res/explore.json")"
ran=$(grep -c '"no":[0-9]*,"rec":{"v":2,' "$T/res/explore.jsonl" || true)
expect_eq "resumed: every line of the journal reads (the cut one gone)" "" \
    "$(jq -c . "$T/res/explore.jsonl" >/dev/null 2>&1 || echo "a line does not read")"
expect_eq "resumed: each execution in the journal once (the cut line dropped)" "$n" "$ran"
expect_eq "every failing schedule written as a plan" "$(x res .failing)" "$(ls "$T/res/failing" | wc -l)"
# the journal the resume grew reads whole: a resume of the finished tree
# takes all of it again and runs nothing
soak_rc rc explore "$T/cfg/soak.yaml" --seed 0 --preemptions -1 --no-reduce --resume "$T/res" >"$T/res4.out" 2>&1
expect_match "the finished journal resumed: every execution taken, none left"     "^  resumed: $n executions from the journal; 0 branches left" "$(cat "$T/res4.out")"
expect_eq "the finished journal resumed: the same figures" "$ref" "$(figures res)"

phase "a journal whose verdicts were rewritten: refused, the true result"
# a copy of the finished journal, its failures made passes (verdict and
# reason both, so each line reads as a verdict): the lines still carry
# their failures' invariants and plans, and are refused; their
# executions run again
cp -r "$T/res" "$T/lie"
sed -i 's/"verdict":1,"reason":"invariant"/"verdict":0,"reason":""/' "$T/lie/explore.jsonl"
lies=$(grep -c '"verdict":0,"reason":"","message":"[^"]' "$T/lie/explore.jsonl" || true)
expect_ge "journal lines rewritten" 1 "$lies"
chmod o+w "$T/lie"
soak_rc rc explore "$T/cfg/soak.yaml" --seed 0 --preemptions -1 --no-reduce --resume "$T/lie" >"$T/lie0.out" 2>&1
expect_eq "a folder others can write: --resume refuses it" 64 "$rc"
expect_match "it says why" 'writable by others' "$(cat "$T/lie0.out")"
chmod o-w "$T/lie"
soak_rc rc explore "$T/cfg/soak.yaml" --seed 0 --preemptions -1 --no-reduce --resume "$T/lie" >"$T/lie.out" 2>&1
cat "$T/lie.out"
expect_eq "rewritten: exit status (the lost update found again)" 1 "$rc"
expect_eq "rewritten: the same figures as one process" "$ref" "$(figures lie)"
expect_ge "rewritten: the journal lines refused" 1 "$(x lie .refused)"
expect_match "rewritten: said" 'a record refused \(journal\): journal line [0-9]+: a pass that carries' "$(cat "$T/lie.out")"

phase "another exploration's journal is refused"
soak_rc rc explore "$T/cfg/soak.yaml" --seed 0 --preemptions 1 --resume "$T/res" >"$T/res3.out" 2>&1
expect_eq "resume with another bound: usage" 64 "$rc"
expect_match "it says why" "is another exploration's" "$(cat "$T/res3.out")"
