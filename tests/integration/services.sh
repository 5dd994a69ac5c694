# Services: started by each worker on SOAK_PORT, reachable by the turns at
# SOAK_SERVICE_<NAME>, restarted when they die.  A seed during which a
# service died is infra/service and is retried; the run still completes.
. "$(dirname "$0")/lib.sh"
UP=$SOAK_BUILD/tests/helpers/proxy_upstream
[ -x "$UP" ] || fail "missing $UP (make test builds it)"

cat >"$T/service.sh" <<SH
#!/bin/sh
echo \$\$ >"\$SOAK_WORKSPACE/pid"
exec $UP http "\$SOAK_PORT"
SH
cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# Seed 4 kills the service once (its first attempt), then calls it.
svc=$SOAK_WORKSPACE/../../services/api
if [ "$SOAK_SEED" = 4 ] && mkdir "$SOAK_CONFIG_DIR/once" 2>/dev/null; then
	kill "$(cat "$svc/pid")"
	exit 0
fi
exec curl -sf -m 5 -o /dev/null "http://$SOAK_SERVICE_API/ping"
SH
chmod +x "$T/service.sh" "$T/turn.sh"
cat >"$T/svc.yaml" <<'YAML'
name: services
seeds: 0..9
turns: 2
services:
  - name: api
    command: [./service.sh]
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
guard:
  min_ok_turns: 100%
YAML
soak_rc rc run "$T/svc.yaml" --workers 1 --out "$T/out" >"$T/run.out" 2>"$T/run.err"
cat "$T/run.out"
R=$T/out/report.json
expect_eq "run exit status" 0 "$rc"
check_report "$T/out" 0 9
expect_eq "seed 4 history" '["infra/service","pass/"]' \
    "$(jq -c '[.results[] | select(.seed==4) | .attempts[] | "\(.verdict)/\(.reason)"]' "$R")"
expect_eq "every turn reached the service" 20 "$(jq '[.results[].ok_turns] | add' "$R")"
expect_match "the restart was logged" "service api died .*restarting" "$(cat "$T/run.err")"

# A service that never becomes ready: every seed is infra/service, exit 2.
sed -e 's|command: \[./service.sh\]|command: [sh, -c, "exit 0"]|' "$T/svc.yaml" >"$T/dead.yaml"
soak_rc rc run "$T/dead.yaml" --workers 1 --seeds 0..1 --out "$T/dead" >/dev/null 2>"$T/dead.err"
expect_eq "dead service exit status" 2 "$rc"
expect_eq "dead service verdicts" '["infra/service"]' \
    "$(jq -c '[.results[] | "\(.verdict)/\(.reason)"] | unique' "$T/dead/report.json")"
expect_match "dead service message" "service api exited before it listened" \
    "$(jq -r '.results[0].message' "$T/dead/report.json")"
