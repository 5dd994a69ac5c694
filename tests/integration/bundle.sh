# The config travels (docs/fleet.md "The config travels"), with real processes
# on loopback.  A worker "on another machine" is a soak worker in its own
# mount namespace (unshare -m) with a tmpfs over the config folder's
# parent, so the folder is not there at the coordinator's path:
#  - with the bundle (the default) it runs every seed from its cached copy,
#    with the verdicts `soak run` gives on the same config; the cache is
#    0700, the turn stays executable, .git, the output directory and a
#    copy of the shared secret stay behind;
#  - a changed file changes the hash: a second cache directory, taken by
#    two worker processes at once (one install wins, no half tree), and
#    the changed behaviour; the same hash again is taken from the cache;
#  - with --bundle off that worker fails its seeds as infra, the reason
#    naming the path it could not find (setup: the schema file; exec: the
#    turn).
# We run as root: a machine where unshare or mount fails fails the test.
. "$(dirname "$0")/lib.sh"

site=$T/site		# hidden on the "other machine"
cfg=$site/cfg
mkdir -p "$cfg/lib" "$cfg/.git" "$T/ws" "$T/wtmp"
printf 'bundle-test-secret-%s-0123456789abcdef\n' $$ >"$T/secret"
chmod 600 "$T/secret"
cat >"$cfg/soak.yaml" <<'YAML'
name: bundle
seeds: 0..5
turns: 1
retries: 0
confirm: false
database:
  schema: schema.sql
turn:
  command: [./turn.sh]
invariants:
  - name: marks are as the schema left them
    sql: SELECT n FROM marks WHERE n <> 7
guard:
  min_ok_turns: 1
YAML
sed -e '/^database:/,/schema.sql/d' "$cfg/soak.yaml" >"$cfg/noschema.yaml"
cat >"$cfg/schema.sql" <<'SQL'
CREATE TABLE marks (n int);
INSERT INTO marks VALUES (7);
SQL
# The turn runs the rule through a symlink into a subfolder.
cat >"$cfg/turn.sh" <<'SH'
#!/bin/sh
. "$SOAK_CONFIG_DIR/rule.sh"
SH
chmod 755 "$cfg/turn.sh"
printf '[ $((SOAK_SEED %% 3)) = 1 ] && exit 1\nexit 0\n' >"$cfg/lib/rule.sh"
ln -s lib/rule.sh "$cfg/rule.sh"
printf '[core]\n\tsecret = stays-home\n' >"$cfg/.git/config"
cp -p "$T/secret" "$cfg/soak.secret"	# as README's example keeps it

verdicts() { jq -c '[.results[] | [.seed, .verdict, .reason]]' "$1/report.json"; }
# start_coordinator NAME ARGS...: sets $coord (pid) and $url; it runs in
# the config folder, so without --out its output is soak-out/<run-id> there.
start_coordinator() {
	local name=$1; shift
	(cd "$cfg" && exec "$SOAK" coordinator "$cfg/${CONFIG:-soak.yaml}" \
	    --listen tcp://127.0.0.1:0 --secret-file "$T/secret" "$@" \
	    >"$T/$name.out" 2>"$T/$name.err") &
	coord=$!
	cleanup_hooks+=("kill $coord 2>/dev/null")
	url=$(wait_line "$T/$name.err" 'listening on tcp://' 30 "coordinator $name listening" |
	    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
}
# remote_worker NAME ARGS...: a worker that cannot see the config folder.
remote_worker() {
	local name=$1; shift
	set +e
	TMPDIR=$T/wtmp unshare -m --propagation private sh -c '
		mount -t tmpfs soak-hidden "$1" || exit 98
		[ ! -e "$2" ] || { echo "the config folder is still visible" >&2; exit 99; }
		shift 2
		exec "$@"' sh "$site" "$cfg/soak.yaml" \
	    "$SOAK" worker --connect "$url" --secret-file "$T/secret" --workspace "$T/ws" \
	    "$@" >"$T/$name.wlog" 2>&1
	wrc=$?
	set -e
	[ $wrc -ne 98 ] || fail "unshare -m and a tmpfs mount are needed (run as root): $(cat "$T/$name.wlog")"
	[ $wrc -ne 99 ] || fail "the tmpfs did not hide $cfg"
}
finish() {	# NAME EXPECTED-STATUS: the coordinator's exit
	local rc
	wait_exit rc "$coord" 120 "coordinator $1"
	expect_eq "coordinator $1 exit status" "$2" "$rc"
}
cache=$T/ws/soak-bundles-$(id -u)

# --- the reference: soak run, same machine, the folder where it is ---
soak_rc rc run "$cfg/soak.yaml" --workers 1 --out "$T/local" >"$T/local.out" 2>&1
expect_eq "soak run exit status" 1 "$rc"
ref=$(verdicts "$T/local")
expect_eq "soak run: seeds 1 and 4 fail the guard" \
    '[[0,"pass",null],[1,"fail","guard"],[2,"pass",null],[3,"pass",null],[4,"fail","guard"],[5,"pass",null]]' "$ref"

# --- a worker without the folder runs every seed from the bundle ---
# Its output directory is inside the config folder, as a careless --out
# would put it: left out of the bundle.
start_coordinator a --out "$cfg/out-a"
line=$(grep 'bundled for workers' "$T/a.err") || fail "coordinator a printed no bundle line: $(cat "$T/a.err")"
expect_match "the coordinator says what it bundled" \
    "config folder $cfg bundled for workers: 7 entries, [0-9.]+ KiB, sha256 [0-9a-f]{12}" "$line"
h1=$(grep -oE 'sha256 [0-9a-f]{12}' <<<"$line" | cut -d' ' -f2)
remote_worker a
expect_eq "worker a exit status" 0 "$wrc"
finish a 1
expect_eq "verdicts from the bundle = soak run's" "$ref" "$(verdicts "$cfg/out-a")"
check_report "$cfg/out-a" 0 5
mv "$cfg/out-a" "$T/out-a"	# another run's output is not left out: move it
expect_match "worker a took the folder from the coordinator" \
    "took the config folder from the coordinator: [0-9]+ bytes, sha256 $h1, into $cache/bundle-$h1" \
    "$(cat "$T/a.wlog")"
expect_eq "the cache folder's mode" 700 "$(stat -c %a "$cache")"
expect_eq "bundles in the cache" 1 "$(ls -d "$cache"/bundle-* | wc -l)"
b1=$(ls -d "$cache"/bundle-"$h1"*)
expect_eq "the turn is still executable" 755 "$(stat -c %a "$b1/turn.sh")"
expect_eq "the rule keeps its mode" 644 "$(stat -c %a "$b1/lib/rule.sh")"
expect_eq "the symlink is a symlink" "lib/rule.sh" "$(readlink "$b1/rule.sh")"
expect_eq "the schema travelled" "$(cat "$cfg/schema.sql")" "$(cat "$b1/schema.sql")"
[ ! -e "$b1/.git" ] || fail ".git travelled"
[ -z "$(ls -d "$b1"/out-* 2>/dev/null)" ] || fail "the output directory travelled"
grep -rq stays-home "$b1" && fail "the contents of .git travelled"
ok "neither .git nor the output directory travelled"
[ ! -e "$b1/soak.secret" ] || fail "the shared secret travelled"
grep -rqF "$(cat "$T/secret")" "$b1" && fail "the shared secret travelled"
expect_match "the coordinator said it left the secret out" \
    "leaving out $cfg/soak.secret: it holds the shared secret" "$(cat "$T/a.err")"

# --- a changed file: a new hash, a second cache folder, a new behaviour ---
printf 'exit 1\n' >"$cfg/lib/rule.sh"		# every turn fails now
start_coordinator b --out "$T/out-b"
h2=$(grep -oE 'sha256 [0-9a-f]{12}' "$T/b.err" | cut -d' ' -f2)
[ -n "$h2" ] && [ "$h2" != "$h1" ] || fail "the hash did not change: '$h1' then '$h2'"
ok "a changed file changed the hash ($h1 -> $h2)"
remote_worker b --slots 2		# two processes fetch and install at once
expect_eq "worker b exit status" 0 "$wrc"
finish b 1
expect_eq "the changed rule fails every seed" \
    '[[0,"fail","guard"],[1,"fail","guard"],[2,"fail","guard"],[3,"fail","guard"],[4,"fail","guard"],[5,"fail","guard"]]' \
    "$(verdicts "$T/out-b")"
expect_eq "bundles in the cache" 2 "$(ls -d "$cache"/bundle-* | wc -l)"
expect_eq "no half-installed folder left" 0 "$(ls -A "$cache" | grep -vc '^bundle-' || true)"
b2=$(ls -d "$cache"/bundle-"$h2"*)
expect_eq "the second copy has the new rule" "exit 1" "$(cat "$b2/lib/rule.sh")"
expect_eq "the first copy is as it was" 1 "$(grep -c 'SOAK_SEED % 3' "$b1/lib/rule.sh")"
# The same hash again, taken from the cache, not over the wire; the default
# output (soak-out/<run-id> in the folder) is left out with all of soak-out.
mkdir -p "$cfg/soak-out/an-older-run" && echo '{}' >"$cfg/soak-out/an-older-run/report.json"
start_coordinator c
expect_eq "the same folder, the same hash" "$h2" "$(grep -oE 'sha256 [0-9a-f]{12}' "$T/c.err" | cut -d' ' -f2)"
remote_worker c
finish c 1
out_c=$(ls -d "$cfg"/soak-out/2*)
expect_eq "verdicts from the cached copy" "$(verdicts "$T/out-b")" "$(verdicts "$out_c")"
grep -q 'took the config folder' "$T/c.wlog" && fail "worker c fetched a bundle it had"
ok "worker c used the cached copy"

# --- --bundle off: the worker needs the folder, and says what it lacks ---
start_coordinator off --bundle off --out "$T/out-off"
grep -q 'bundled for workers' "$T/off.err" && fail "--bundle off bundled"
remote_worker off
expect_eq "worker off exit status" 0 "$wrc"
finish off 2
# The same on every seed: the run stops after the first three
# (docs/results.md "Config errors stop a run early"), exit 2 -- the worker's
# machine, not the config.
expect_eq "every seed that ran is infra/setup" '3 3' \
    "$(jq -r '"\([.results[] | select(.verdict == "infra" and .reason == "setup")] | length) \(.totals.missing)"' "$T/out-off/report.json")"
expect_match "the run says it stopped, and why" 'config: .*No such file or directory' \
    "$(jq -r .halted "$T/out-off/report.json")"
expect_match "the reason names the missing schema file" "No such file or directory \(looked at $cfg/schema.sql\)" \
    "$(jq -r '.results[0].message' "$T/out-off/report.json")"
# Without a schema the config loads; the turn cannot exec there.
CONFIG=noschema.yaml start_coordinator off2 --bundle off --out "$T/out-off2"
remote_worker off2
finish off2 2
# The turn is not there on the worker, but is on the coordinator's machine:
# the workers' folder, exit 2, not the config's 78.
expect_eq "every seed that ran is infra/exec" '3 3' \
    "$(jq -r '"\([.results[] | select(.verdict == "infra" and .reason == "exec")] | length) \(.totals.missing)"' "$T/out-off2/report.json")"
expect_match "the stop says whose it is" "turn\.command: .*the coordinator's machine has it" \
    "$(jq -r .halted "$T/out-off2/report.json")"
expect_match "the reason names the turn's path" "$cfg/turn.sh" \
    "$(jq -c '.results[0]' "$T/out-off2/report.json")"
