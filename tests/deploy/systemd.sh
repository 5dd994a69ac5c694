# deploy/systemd's units:
#  - `systemd-analyze verify` on each, against a soak installed with
#    `make install DESTDIR=` into a root that also holds systemd's own units
#    and /bin/sh (so ExecStart= is checked for real), with no output at all
#    (a warning fails the test);
#  - what they promise: the secret by LoadCredential= and a root-only
#    EnvironmentFile=, never on ExecStart=; a worker's TimeoutStopSec=
#    longer than the default seed_timeout and its probe;
#  - their command lines run as systemd would run them (specifiers %d, %i,
#    %% and $$ expanded, the EnvironmentFile's variables set): the nightly
#    sweep against a worker started from soak-worker@.service, stopped by
#    SIGTERM mid-run (its folder stays), started again (it resumes), and
#    moved aside by ExecStopPost= once it ended by itself.
. "$(dirname "$0")/../integration/lib.sh"

command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed (make deps installs systemd)"
UNITS=$ROOT/deploy/systemd
R=$T/root
make -s -C "$ROOT" install DESTDIR="$R" PREFIX=/usr/local >/dev/null || fail "make install DESTDIR=$R failed"
[ -x "$R/usr/local/bin/soak" ] || fail "make install left no $R/usr/local/bin/soak"
mkdir -p "$R/usr/lib/systemd" "$R/usr/bin" "$R/etc/systemd/system"
cp -a /usr/lib/systemd/system "$R/usr/lib/systemd/"
cp "$(readlink -f /bin/sh)" "$R/usr/bin/sh"
ln -s usr/bin "$R/bin"
ln -s usr/lib "$R/lib"
cp "$UNITS"/soak-worker@.service "$UNITS"/soak-nightly.service "$UNITS"/soak-nightly.timer \
    "$R/etc/systemd/system/"

# --- systemd-analyze verify: silent, or the test fails ---
for u in soak-worker@1.service soak-nightly.service soak-nightly.timer; do
	set +e
	(cd "$R/etc/systemd/system" && systemd-analyze verify --root="$R" "$u") >"$T/verify.out" 2>&1
	rc=$?
	set -e
	[ "$rc" -eq 0 ] && [ ! -s "$T/verify.out" ] ||
	    fail "systemd-analyze verify $u (exit $rc): $(cat "$T/verify.out")"
	ok "systemd-analyze verify $u: no warning"
done
# The check itself is not blind: a unit whose ExecStart= is not installed fails it.
mv "$R/usr/local/bin/soak" "$T/soak.away"
set +e
(cd "$R/etc/systemd/system" && systemd-analyze verify --root="$R" soak-worker@1.service) >"$T/verify.out" 2>&1
set -e
mv "$T/soak.away" "$R/usr/local/bin/soak"
expect_match "verify sees a missing soak" "/usr/local/bin/soak is not executable" "$(cat "$T/verify.out")"

# --- what the units promise ---
key() {	# UNIT KEY: every value of KEY in UNIT
	sed -n "s/^$2=//p" "$UNITS/$1"
}
for u in soak-worker@.service soak-nightly.service; do
	expect_eq "$u: the secret by LoadCredential" "secret:/etc/soak/secret" "$(key "$u" LoadCredential)"
	expect_match "$u: ExecStart reads it from the credentials" "--secret-file \"?%d/secret" "$(key "$u" ExecStart)"
	grep -qE '^ExecStart=.*(SOAK_SECRET|[0-9a-f]{32})' "$UNITS/$u" && fail "$u: a secret on ExecStart"
	expect_match "$u: variables from a root-only file in /etc/soak" '^/etc/soak/[a-z]+\.env$' \
	    "$(key "$u" EnvironmentFile)"
done
stop=$(key soak-worker@.service TimeoutStopSec)
[[ $stop =~ ^([0-9]+)min$ ]] || fail "soak-worker@.service: TimeoutStopSec=$stop is not in minutes"
# The default seed_timeout is 60 s, and a hung seed's probe 10 s more.
expect_ge "worker TimeoutStopSec in s (> seed_timeout 60 s + 10 s)" 71 $((BASH_REMATCH[1] * 60))
grep -q 'TimeoutStopSec must exceed the longest' "$UNITS/soak-worker@.service" ||
    fail "soak-worker@.service does not say why TimeoutStopSec is what it is"

# --- the command lines, as systemd runs them ---
mkdir -p "$T/creds" "$T/etc"
(umask 077 && openssl rand -hex 32 >"$T/creds/secret")
chmod 0400 "$T/creds/secret"
# execline UNIT KEY INSTANCE: the unit's command line as systemd expands it
# (specifiers %d %i %%, $$ as $), soak at its installed path, one argument
# a line, NUL-separated.
execline() {
	python3 - "$UNITS/$1" "$2" "$3" "$T/creds" "$R" <<'PY'
import shlex, sys
unit, key, inst, creds, root = sys.argv[1:]
line = [l for l in open(unit) if l.startswith(key + "=")][0][len(key) + 1:].strip()
out = []
i = 0
while i < len(line):
    c = line[i]
    if c == "%" and i + 1 < len(line):
        out.append({"d": creds, "i": inst, "%": "%"}[line[i + 1]]); i += 2; continue
    if c == "$" and line[i + 1:i + 2] == "$":
        out.append("$"); i += 2; continue
    out.append(c); i += 1
argv = shlex.split("".join(out))
argv = [a.replace("/usr/local/bin/soak", root + "/usr/local/bin/soak") for a in argv]
sys.stdout.write("\0".join(argv))
PY
}
mapfile -d '' worker_argv < <(execline soak-worker@.service ExecStart 1)
mapfile -d '' nightly_argv < <(execline soak-nightly.service ExecStart x)
mapfile -d '' post_argv < <(execline soak-nightly.service ExecStopPost x)
expect_eq "worker ExecStart" "$R/usr/local/bin/soak worker --slots 1 --secret-file $T/creds/secret --reconnect 1440m" \
    "${worker_argv[*]}"

# A config whose seeds wait at a gate until the test lets them go.
mkdir -p "$T/cfg" "$T/state/nightly"
gate_new
cat >"$T/cfg/turn.sh" <<SH
#!/bin/sh
[ "\$SOAK_SEED" -ge 3 ] && timeout 120 dd if="$T/gate" bs=1 count=1 status=none
exit 0
SH
chmod +x "$T/cfg/turn.sh"
cat >"$T/cfg/soak.yaml" <<'YAML'
name: nightly
turns: 1
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML
export SOAK_CONFIG=$T/cfg/soak.yaml SOAK_LISTEN=tcp://127.0.0.1:0 SOAK_SEEDS=0..7
start_nightly() {	# N: the nightly's ExecStart in its WorkingDirectory; sets $coord, $url
	(cd "$T/state/nightly" && exec "${nightly_argv[@]}") >"$T/n$1.out" 2>"$T/n$1.err" &
	coord=$!
	cleanup_hooks+=("kill -KILL $coord 2>/dev/null")
	url=$(wait_line "$T/n$1.err" 'listening on tcp://' 30 "nightly $1 listening" |
	    grep -oE 'tcp://127\.0\.0\.1:[0-9]+')
}
start_worker() {	# N: soak-worker@N's ExecStart with SOAK_COORDINATOR from its env file
	SOAK_COORDINATOR=$url TMPDIR=$T/state "${worker_argv[@]}" >"$T/w$1.out" 2>"$T/w$1.err" &
	worker=$!
	cleanup_hooks+=("kill -KILL $worker 2>/dev/null")
}
stop_post() {	# the nightly's ExecStopPost
	(cd "$T/state/nightly" && "${post_argv[@]}")
}

phase "nightly started, stopped mid-run by SIGTERM"
start_nightly 1
start_worker 1
wait_line "$T/state/nightly/current/journal.jsonl" '"seed":2,.*"t":"result"' 60 "seed 2's result" >/dev/null
kill -TERM "$coord"	# systemctl stop, or the shutdown of a reboot
wait_exit rc "$coord" 60 "the nightly coordinator after SIGTERM"
expect_eq "stopped nightly's exit status (incomplete)" 2 "$rc"
stop_post
[ -s "$T/state/nightly/current/journal.jsonl" ] || fail "ExecStopPost moved a stopped run away"
ok "a stopped run stays in current/ for the next start"
kill -KILL "$worker"	# the reboot takes the worker's machine too
wait "$worker" 2>/dev/null || true

phase "nightly started again: it resumes"
gate_open
start_nightly 2
start_worker 2
wait_exit rc "$coord" 120 "the resumed nightly coordinator"
expect_eq "resumed nightly's exit status" 0 "$rc"
expect_match "it resumed" "resuming run .*: [0-9]+ of 8 seeds have their verdict" "$(cat "$T/n2.err")"
wait_exit rc "$worker" 60 "the worker after the run"
expect_eq "worker exit status at the end of the run" 0 "$rc"
stop_post
[ -e "$T/state/nightly/current" ] && fail "ExecStopPost left a finished run in current/"
done_dir=$(ls -d "$T"/state/nightly/*T*Z)
check_report "$done_dir" 0 7
expect_eq "finished run's journal: one resume" 1 "$(grep -c '"t":"resume"' "$done_dir/journal.jsonl")"
grep -rqF "$(cat "$T/creds/secret")" "$done_dir" "$T"/n*.err "$T"/w*.err &&
    fail "the secret is in the run's folder or the logs"
ok "the secret is in neither the run's folder nor the logs"
