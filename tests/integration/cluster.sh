# `soak coordinator` with two `soak worker` processes over tcp://127.0.0.1
# gives the same verdicts as `soak run` for the same seeds.  The config's
# verdicts depend on the seed alone: fail for seed % 7 == 3 (an invariant
# over rows the setup wrote), infra for seed % 11 == 5 (exit 75).  The
# first cluster is --insecure (bad messages, the protocol's rules); the
# second has a shared secret.  fleet_auth.sh and fleet_tls.sh test the
# authentication itself.
. "$(dirname "$0")/lib.sh"

cat >"$T/schema.sql" <<'SQL'
CREATE TABLE marks (seed bigint NOT NULL, turn int NOT NULL);
SQL
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
[ $((SOAK_SEED % 11)) = 5 ] && exit 75
exec psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO marks VALUES ($SOAK_SEED, $SOAK_TURN)"
SH
chmod +x "$T/turn.sh"
cat >"$T/det.yaml" <<'YAML'
name: deterministic
seeds: 0..23
turns: 2
retries: 1
database:
  schema: schema.sql
turn:
  command: [./turn.sh]
invariants:
  - name: no seed congruent to 3 mod 7
    sql: SELECT DISTINCT seed FROM marks WHERE seed % 7 = 3
guard:
  min_ok_turns: 2
YAML
verdicts() { jq -c '[.results[] | [.seed, .verdict, .reason]]' "$1/report.json"; }

soak_rc rc run "$T/det.yaml" --workers 2 --out "$T/local" >/dev/null 2>"$T/local.err"
expect_eq "soak run exit status" 1 "$rc"
check_report "$T/local" 0 23
expect_eq "seeds failing by invariant" '[3,10,17]' \
    "$(jq -c '[.results[] | select(.verdict=="fail") | .seed]' "$T/local/report.json")"
expect_eq "seeds infra by tempfail" '[5,16]' \
    "$(jq -c '[.results[] | select(.verdict=="infra" and .reason=="tempfail") | .seed]' "$T/local/report.json")"

"$SOAK" coordinator "$T/det.yaml" --listen tcp://127.0.0.1:0 --out "$T/cluster" \
    --insecure >"$T/coord.out" 2>"$T/coord.err" &
coord=$!
cleanup_hooks+=("kill $coord 2>/dev/null")
url=$(wait_line "$T/coord.err" 'listening on tcp://' 30 "coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
ok "coordinator at $url"
# Bad peers first: each is refused with a reason and logged; nothing breaks.
PEER=$SOAK_BUILD/tests/helpers/soak_peer
expect_match "garbage is refused" '^nack ok=0 rejected: not a soak message' "$("$PEER" "$url" garbage)"
expect_match "a wrong version is refused" '^nack ok=0 rejected: protocol version [0-9]+, this soak speaks' "$("$PEER" "$url" version)"
expect_match "a stranger is refused" '^nack ok=0 not authenticated: say hello first' "$("$PEER" "$url" stranger)"
expect_match "a forged result is refused" 'ack ok=0 lease 1 is not yours' "$("$PEER" "$url" forged)"
"$SOAK" worker --connect "$url" --insecure 2>"$T/w1.err" & w1=$!
"$SOAK" worker --connect "$url" --insecure 2>"$T/w2.err" & w2=$!
cleanup_hooks+=("kill $w1 $w2 2>/dev/null")
wait_exit rc "$coord" 120 "the cluster's coordinator"
wait_exit r1 "$w1" 30 "worker 1 after its coordinator finished"
wait_exit r2 "$w2" 30 "worker 2 after its coordinator finished"
cat "$T/coord.out"
expect_eq "coordinator exit status" 1 "$rc"
expect_eq "worker 1 exit status" 0 "$r1"
expect_eq "worker 2 exit status" 0 "$r2"
check_report "$T/cluster" 0 23
expect_eq "verdicts: cluster = local" "$(verdicts "$T/local")" "$(verdicts "$T/cluster")"
expect_match "bad messages were logged" "refused a malformed message from 127.0.0.1:[0-9]+: not a soak message" "$(cat "$T/coord.err")"
expect_match "--insecure is warned" "warning: --insecure: workers on tcp://" "$(cat "$T/coord.err")"
expect_match "--insecure is warned (worker)" "warning: --insecure: the coordinator at" "$(cat "$T/w1.err")"
expect_eq "both workers ran seeds" 2 \
    "$(jq '[.workers[] | select(.seeds > 0)] | length' "$T/cluster/report.json")"

# With a shared secret: a worker without it is turned away, a peer that
# makes up its proof is refused and logged, and the coordinator carries on.
export SOAK_SECRET=cluster-secret-0123456789abcdef
"$SOAK" coordinator "$T/det.yaml" --listen tcp://127.0.0.1:0 \
    --seeds 0..1 --out "$T/secret" >/dev/null 2>"$T/c2.err" &
coord=$!
cleanup_hooks+=("kill $coord 2>/dev/null")
url=$(wait_line "$T/c2.err" 'listening on tcp://' 30 "second coordinator listening" |
    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
SOAK_SECRET= soak_rc rc worker --connect "$url" --insecure 2>"$T/bad.err"
expect_eq "worker with no secret" 1 "$rc"
expect_match "refusal is explained" "wants a shared secret" "$(cat "$T/bad.err")"
expect_match "a made-up proof is refused" '^nack ok=0 authentication failed' \
    "$("$PEER" "$url" badauth | tail -1)"
"$SOAK" worker --connect "$url" 2>"$T/good.err" & good=$!
wait_exit rc "$coord" 60 "the coordinator with a secret"
wait_exit good_rc "$good" 30 "the worker with the right secret"
expect_eq "worker with the right secret exit status" 0 "$good_rc"
expect_eq "coordinator with secret exit status" 0 "$rc"
expect_match "bad proof logged" "authentication failed: wrong proof" "$(cat "$T/c2.err")"
