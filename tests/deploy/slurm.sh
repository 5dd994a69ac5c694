# deploy/slurm/soak.sbatch on a real Slurm: munged, slurmctld and slurmd
# started here on localhost with a generated slurm.conf (ports, state,
# spool, logs and pids private to this test, nothing on the default paths),
# then the real script submitted with sbatch:
#  - examples/reservations/soak.yaml: the bug is caught, the job exits 1;
#  - fixed.yaml: every seed passes, the job exits 0, with one worker slot
#    per CPU of the node, the workers finding the coordinator through
#    SOAK_COORDINATOR alone, and the secret on no command line;
#  - a run cancelled (scancel) mid-run, then submitted again with the same
#    SOAK_OUT: it resumes, and no seed that had its verdict runs again;
#  - a job requeued mid-run (scontrol requeue): the same job id starts
#    again and resumes its own run.
# Every daemon started here is stopped at exit.  Needs root.
. "$(dirname "$0")/../integration/lib.sh"

[ "$(id -u)" -eq 0 ] || fail "needs root (slurmd runs jobs as their user, and this test submits as root)"
for c in munged mungekey slurmctld slurmd sbatch squeue scancel sinfo scontrol; do
	command -v "$c" >/dev/null || fail "$c is not installed (make deps installs munge, slurmctld, slurmd, slurm-client)"
done
SBATCH_SCRIPT=$ROOT/deploy/slurm/soak.sbatch
EX=$ROOT/examples/reservations
D=$T/slurm
mkdir -p "$D/state" "$D/spool" "$D/log" "$D/run" "$D/munge" "$T/submit"
# stop_daemon PIDFILE: SIGTERM, then wait (bounded) until it is gone, so
# nothing writes into $T while it is removed; SIGKILL if it lingers.
stop_daemon() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null || return 0
	timeout 30 tail --pid="$pid" -f /dev/null || kill -KILL "$pid" 2>/dev/null || true
}
# Jobs first (their processes write into $T), then slurmd, slurmctld and
# munged: whatever of them was started.
teardown() {
	local i
	if [ -s "$D/run/slurmctld.pid" ]; then
		scancel --full --signal=KILL --user=root 2>/dev/null || true
		for ((i = 0; i < 150; i++)); do
			[ -z "$(squeue -h 2>/dev/null)" ] && break
			sleep 0.2
		done
		[ -z "$(squeue -h 2>/dev/null)" ] ||
		    echo "watchdog: Slurm's queue not empty 30 s after scancel; stopping its daemons anyway" >&2
	fi
	stop_daemon "$D/run/slurmd.pid"
	stop_daemon "$D/run/slurmctld.pid"
	stop_daemon "$D/run/munged.pid"
}
cleanup_hooks+=(teardown)
chmod 0755 "$D" "$D/munge"	# munged wants its socket's folder searchable

# --- munge, with a key of this test's own ---
mungekey --create --keyfile="$D/munge.key" || fail "mungekey could not make a key"
munged --force --key-file="$D/munge.key" --socket="$D/munge/munge.sock" \
    --pid-file="$D/run/munged.pid" --log-file="$D/log/munged.log" \
    --seed-file="$D/munge.seed" || fail "munged did not start: $(tail -n 5 "$D/log/munged.log")"
munge -S "$D/munge/munge.sock" -n </dev/null | unmunge -S "$D/munge/munge.sock" >/dev/null ||
    fail "munge round trip failed on $D/munge/munge.sock"
ok "munged answers on $D/munge/munge.sock"

# --- slurm.conf on localhost, two free ports ---
read -r ctld_port node_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
node=$(hostname -s)
cpus=$(nproc)
cat >"$D/slurm.conf" <<CONF
ClusterName=soaktest$$
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$node_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
JobRequeue=1
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=soaktest Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$D/slurm.conf
slurmctld -i -f "$SLURM_CONF" || fail "slurmctld did not start: $(tail -n 5 "$D/log/slurmctld.log")"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start: $(tail -n 5 "$D/log/slurmd.log")"

# poll COUNT WHAT CMD...: CMD until it succeeds, at most COUNT tries a
# fifth of a second apart (a watchdog on a readiness condition, for the
# daemons and the queue, which tell no one when they change).
poll() {
	local n=$1 what=$2 i
	shift 2
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.2
	done
	fail "watchdog: $what not reached after $n tries"
}
node_idle() { [ "$(sinfo -h -N -n "$node" -o %T 2>/dev/null)" = idle ]; }
poll 300 "node $node registered and idle (sinfo)" node_idle
ok "slurmd registered: node $node idle with $cpus CPU(s), controller on port $ctld_port"

SECRET=$(openssl rand -hex 32)
(umask 077 && printf '%s\n' "$SECRET" >"$T/secret")
export SOAK_SECRET_FILE=$T/secret
export PATH=$SOAK_BUILD:$PATH	# the script runs `soak` from PATH
cd "$T/submit"

# --- the bug is caught: exit 1 ---
phase "soak.yaml under sbatch --wait"
set +e
job=$(sbatch --wait --parsable "$SBATCH_SCRIPT" "$EX/soak.yaml" --seeds 0..11)
rc=$?
set -e
job=${job%%;*}
cat "soak-$job.out"
expect_eq "sbatch --wait exit status (soak.yaml)" 1 "$rc"
out=$T/submit/soak-out/slurm-$job
check_report "$out" 0 11
expect_ge "failing seeds in the default SOAK_OUT" 1 "$(jq .totals.fail "$out/report.json")"
expect_match "the job's output has soak's summary" \
    'FAIL  "items_reserved matches reservation events" broken' "$(cat "soak-$job.out")"
expect_match "the job's output has the replay command" "replay: .*soak replay .*soak.yaml --seed [0-9]+" \
    "$(cat "soak-$job.out")"
expect_eq "Slurm's record of the exit code" "1:0" \
    "$(scontrol show job "$job" | grep -oE 'ExitCode=[0-9]+:[0-9]+' | head -n 1 | cut -d= -f2)"

# --- the fixed variant passes: exit 0 ---
phase "fixed.yaml under sbatch --wait"
set +e
job=$(sbatch --wait --parsable "$SBATCH_SCRIPT" "$EX/fixed.yaml" --seeds 0..19)
rc=$?
set -e
job=${job%%;*}
cat "soak-$job.out"
expect_eq "sbatch --wait exit status (fixed.yaml)" 0 "$rc"
out=$T/submit/soak-out/slurm-$job
check_report "$out" 0 19
expect_eq "fixed: fail + infra" 0 "$(jq '.totals.fail + .totals.infra' "$out/report.json")"
expect_eq "worker slots = the node's CPUs" "$cpus" "$(jq '.workers | length' "$out/report.json")"
expect_match "workers found the coordinator by SOAK_COORDINATOR (no --connect in the script)" \
    "worker: connected to tcp://[^ ]+:[0-9]+ as worker [0-9]+ .*trusted by the shared secret" \
    "$(cat "soak-$job.out")"
grep -q -- '--connect' "$SBATCH_SCRIPT" && fail "the script passes --connect"
grep -rqF "$SECRET" "soak-$job.out" "$out" && fail "the secret is in the job's output or results"
ok "the secret is in neither the job's output nor its results"

# --- cancelled mid-run, submitted again: resumed, nothing run twice ---
phase "scancel mid-run, then resubmission with the same SOAK_OUT"
export SOAK_OUT=$T/resume
job=$(sbatch --parsable "$SBATCH_SCRIPT" "$EX/fixed.yaml" --seeds 0..39)
job=${job%%;*}
wait_line "$SOAK_OUT/journal.jsonl" '"t":"result"' 120 "a first result in the journal" >/dev/null
# While it runs: its soak processes hold the secret's path, never the secret.
pids=$(pgrep -f -- "--secret-file $T/secret" || true)
[ -n "$pids" ] || fail "no soak process in the running job"
for p in $pids; do
	tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$SECRET" &&
	    fail "process $p has the secret on its command line"
done
ok "no command line holds the secret ($(wc -w <<<"$pids") soak process(es))"
results() { grep -c '"t":"result"' "$SOAK_OUT/journal.jsonl" || true; }
enough() { [ "$(results)" -ge 6 ]; }
poll 600 "6 results in the journal before the cancel" enough
scancel "$job"
gone() { ! squeue -h -j "$job" 2>/dev/null | grep -q .; }
poll 600 "job $job gone from the queue after scancel" gone
cat "soak-$job.out"
expect_eq "cancelled job's state" CANCELLED \
    "$(scontrol show job "$job" | grep -oE 'JobState=[A-Z]+' | cut -d= -f2)"
jq -r 'select(.t == "result" and (.reason == "" or .reason == "invariant")) | .seed' \
    "$SOAK_OUT/journal.jsonl" | sort -u >"$T/final-before"
before=$(wc -l <"$T/final-before")
ok "cancelled with $before seed(s) final"
[ "$before" -ge 6 ] && [ "$before" -lt 40 ] || fail "not mid-run: $before of 40 seeds final"

set +e
job2=$(sbatch --wait --parsable "$SBATCH_SCRIPT" "$EX/fixed.yaml" --seeds 0..39)
rc=$?
set -e
job2=${job2%%;*}
cat "soak-$job2.out"
expect_eq "resubmitted job exit status" 0 "$rc"
expect_match "the script resumed" "resuming the run in $SOAK_OUT" "$(cat "soak-$job2.out")"
expect_match "soak resumed" "resuming run .*: $before of 40 seeds have their verdict" "$(cat "soak-$job2.out")"
check_report "$SOAK_OUT" 0 39
expect_eq "resumed: fail + infra" 0 "$(jq '.totals.fail + .totals.infra' "$SOAK_OUT/report.json")"
expect_eq "resume lines in the journal" 1 "$(grep -c '"t":"resume"' "$SOAK_OUT/journal.jsonl")"
# After the resume line, no result for a seed that was final before it.
awk '/"t":"resume"/ { on = 1; next } on' "$SOAK_OUT/journal.jsonl" |
    jq -r 'select(.t == "result") | .seed' | sort -u >"$T/after"
expect_eq "seeds run again after the resume, of those final before" "" \
    "$(comm -12 "$T/final-before" "$T/after" | tr '\n' ' ')"
expect_eq "seeds run after the resume + before = all" 40 \
    "$(sort -u "$T/final-before" "$T/after" | wc -l)"

# --- requeued by Slurm: the same job, its same SOAK_OUT, resumed ---
phase "scontrol requeue mid-run"
unset SOAK_OUT
job=$(sbatch --parsable "$SBATCH_SCRIPT" "$EX/fixed.yaml" --seeds 0..29)
job=${job%%;*}
out=$T/submit/soak-out/slurm-$job
wait_line "$out/journal.jsonl" '"t":"result"' 120 "a first result of job $job" >/dev/null
results4() { [ "$(grep -c '"t":"result"' "$out/journal.jsonl" || true)" -ge 4 ]; }
poll 600 "4 results of job $job before the requeue" results4
scontrol requeue "$job" || fail "scontrol requeue $job failed"
# A requeued job waits out a delay before it is eligible again (Slurm's
# BeginTime, two minutes): this test has no reason to.
pending() { scontrol show job "$job" 2>/dev/null | grep -q 'JobState=PENDING'; }
poll 600 "job $job pending again after the requeue" pending
scontrol show job "$job" | grep -oE '(Reason|BeginTime)=[^ ]+' | tr '\n' ' '
echo
scontrol update JobId="$job" StartTime=now || fail "cannot make requeued job $job eligible now"
finished() { scontrol show job "$job" 2>/dev/null | grep -qE 'JobState=(COMPLETED|FAILED|CANCELLED)'; }
poll 1500 "requeued job $job finished" finished
cat "soak-$job.out"
expect_eq "requeued job's state" COMPLETED \
    "$(scontrol show job "$job" | grep -oE 'JobState=[A-Z]+' | cut -d= -f2)"
expect_eq "requeued job's restarts" 1 "$(scontrol show job "$job" | grep -oE 'Restarts=[0-9]+' | cut -d= -f2)"
expect_match "the requeued job resumed its own run" "job $job \(restart 1\): resuming the run in $out" \
    "$(cat "soak-$job.out")"
check_report "$out" 0 29
expect_eq "requeued: fail + infra" 0 "$(jq '.totals.fail + .totals.infra' "$out/report.json")"
expect_eq "requeued: resume lines in the journal" 1 "$(grep -c '"t":"resume"' "$out/journal.jsonl")"
