# deploy/ci's recipes:
#  - the GitHub workflows pass action-validator (@action-validator/cli, the
#    GitHub workflow JSON schema, offline), which a broken copy does not;
#  - every file parses as YAML, and has what the recipe promises: junit.xml
#    as the test report, report.json and failures/ kept even when soak
#    fails, the summary after a failure, the token from secrets;
#  - every `soak ...` command line in them runs with the real binary in
#    --dry-run mode (the config loaded, every option checked), with the
#    variables the CI system would set; a misspelled option would fail;
#  - deploy/ci/summary.sh, the job summary, names the smallest failing seed
#    of a real failing run with the replay command report.json gives.
. "$(dirname "$0")/../integration/lib.sh"

command -v action-validator >/dev/null ||
    fail "action-validator is not installed (make deps: npm install -g @action-validator/cli)"
CI=$ROOT/deploy/ci

for f in "$CI"/github/*.yml; do
	action-validator "$f" >"$T/av.out" 2>&1 || fail "action-validator $f: $(cat "$T/av.out")"
	ok "action-validator $(basename "$f")"
done
sed 's/^    runs-on:/    runs_on:/' "$CI/github/soak-merge-queue.yml" >"$T/broken.yml"
action-validator "$T/broken.yml" >/dev/null 2>&1 && fail "action-validator accepts a job without runs-on"
ok "action-validator refuses a broken copy"

# A folder like the one the recipes expect: soak/soak.yaml and
# soak/nightly.yaml, the reservations example.
mkdir -p "$T/repo/soak"
cp "$ROOT"/examples/reservations/{soak.yaml,schema.sql,reserve_turn} "$T/repo/soak/"
cp "$T/repo/soak/soak.yaml" "$T/repo/soak/nightly.yaml"

cd "$T/repo"
PATH=$SOAK_BUILD:$PATH python3 - "$CI" <<'PY'
import os, re, subprocess, sys, yaml

ci = sys.argv[1]
fails = []
def ok(what): print("ok: " + what, flush=True)
def bad(what): print("FAIL: " + what, flush=True); fails.append(what)
def expect(cond, what): ok(what) if cond else bad(what)

def gh_expr(v):
    # ${{ ... }} is the runner's: a value of the right kind stands in.
    return re.sub(r"\$\{\{[^}]*\}\}", "x", str(v))

def soak_lines(script):
    for line in (script if isinstance(script, list) else str(script).splitlines()):
        line = str(line).strip()
        if line.startswith("soak "):
            yield line

def try_cmd(where, cmd, env):
    full = dict(os.environ, **env)
    dry = cmd if cmd == "soak --version" else cmd + " --dry-run"
    r = subprocess.run(["bash", "-c", dry], env=full, capture_output=True, text=True)
    expect(r.returncode == 0 and (cmd == "soak --version" or "dry run:" in r.stdout),
           f"{where}: `{cmd}` runs (--dry-run): exit {r.returncode} {r.stdout.strip()} {r.stderr.strip()[:300]}")
    if cmd != "soak --version":
        r = subprocess.run(["bash", "-c", cmd.replace("--seeds", "--seedz") + " --dry-run"],
                           env=full, capture_output=True, text=True)
        expect(r.returncode == 64, f"{where}: the same with a misspelled option exits 64 (got {r.returncode})")

# --- GitHub ---
for name in ("soak-merge-queue.yml", "soak-nightly.yml"):
    wf = yaml.safe_load(open(os.path.join(ci, "github", name)))
    ok(f"{name} parses")
    # PyYAML reads the key `on` as True.
    on = wf.get("on", wf.get(True))
    expect(("merge_group" in on) if "merge-queue" in name else ("schedule" in on),
           f"{name}: triggered by {'the merge queue' if 'merge-queue' in name else 'a schedule'}")
    wenv = {k: gh_expr(v) for k, v in (wf.get("env") or {}).items()}
    for jname, job in wf["jobs"].items():
        jenv = dict(wenv, **{k: gh_expr(v) for k, v in (job.get("env") or {}).items()})
        steps = job["steps"]
        runs = [i for i, s in enumerate(steps) if any(l.startswith("soak run ") for l in soak_lines(s.get("run", "")))]
        expect(len(runs) == 1, f"{name}: one `soak run` step")
        after = steps[runs[0] + 1:]
        expect(all(s.get("if") == "always()" for s in after),
               f"{name}: every step after soak's runs also when it failed (if: always())")
        expect(any("GITHUB_STEP_SUMMARY" in s.get("run", "") and "summary.sh" in s.get("run", "") for s in after),
               f"{name}: the replay commands go to $GITHUB_STEP_SUMMARY")
        expect(any("junit.xml" in str(s.get("with", {}).get("report_paths", "")) for s in after),
               f"{name}: junit.xml is the test report")
        up = [s for s in after if str(s.get("uses", "")).startswith("actions/upload-artifact")]
        expect(up and all(p in up[0]["with"]["path"] for p in ("report.json", "failures/")),
               f"{name}: report.json and failures/ are artifacts")
        expect(not any(s.get("continue-on-error") for s in steps) and not job.get("continue-on-error"),
               f"{name}: soak's exit status fails the job (no continue-on-error)")
        for s in steps:
            env = dict(jenv, **{k: gh_expr(v) for k, v in (s.get("env") or {}).items()})
            for cmd in soak_lines(s.get("run", "")):
                try_cmd(f"{name} step {s.get('name')!r}", cmd, env)
            if "nightly" in name and any("soak run" in l for l in soak_lines(s.get("run", ""))):
                expect((s.get("env") or {}).get("SOAK_TICKETS_TOKEN") == "${{ secrets.SOAK_TICKETS_TOKEN }}",
                       f"{name}: the tickets token comes from secrets, into the environment")
                expect("TOKEN" not in s["run"], f"{name}: no token on the command line")

# --- GitLab ---
name = "soak.gitlab-ci.yml"
gl = yaml.safe_load(open(os.path.join(ci, "gitlab", name)))
ok(f"{name} parses")
def resolved(job):
    j = dict(gl[job["extends"]]) if "extends" in job else {}
    for k, v in job.items():
        if k == "variables":
            j["variables"] = dict(j.get("variables", {}), **v)
        elif k != "extends":
            j[k] = v
    return j
jobs = {k: resolved(v) for k, v in gl.items() if isinstance(v, dict) and not k.startswith(".") and k not in ("stages", "variables", "default")}
expect(set(jobs) == {"soak:merge", "soak:nightly"}, f"{name}: jobs soak:merge and soak:nightly")
for jname, job in jobs.items():
    expect(job.get("stage") in gl["stages"], f"{name} {jname}: its stage is declared")
    a = job.get("artifacts", {})
    expect(a.get("when") == "always", f"{name} {jname}: artifacts kept when soak fails")
    expect(str(a.get("reports", {}).get("junit", "")).endswith("junit.xml"), f"{name} {jname}: junit report")
    expect(all(any(p in str(x) for x in a.get("paths", [])) for p in ("report.json", "failures/")),
           f"{name} {jname}: report.json and failures/ are artifacts")
    expect(any("summary.sh" in str(l) for l in job.get("after_script", [])), f"{name} {jname}: the summary after the job")
    expect(not job.get("allow_failure"), f"{name} {jname}: soak's exit status fails the job")
    env = {"CI_JOB_NAME_SLUG": jname.replace(":", "-"), "CI_COMMIT_SHA": "0" * 40}
    for k, v in job.get("variables", {}).items():
        env[k] = os.path.expandvars(str(v)) if "$" not in str(v) else re.sub(
            r"\$(\w+)", lambda m: env.get(m.group(1), ""), str(v))
    for part in ("before_script", "script"):
        for cmd in soak_lines(job.get(part, [])):
            try_cmd(f"{name} {jname} {part}", cmd, env)
expect("SOAK_TICKETS_TOKEN" not in " ".join(str(l) for l in jobs["soak:nightly"]["script"]),
       f"{name}: no token on the command line")

sys.exit(1 if fails else 0)
PY

# --- the job summary, from a real failing run ---
soak_rc rc run "$T/repo/soak/soak.yaml" --seeds 0..3 --workers 2 --out "$T/run" >/dev/null 2>"$T/run.err"
expect_eq "reservations soak.yaml, 4 seeds: exit status" 1 "$rc"
sh "$CI/summary.sh" "$T/run" >"$T/summary.md"
cat "$T/summary.md"
replay=$(jq -r '[.results[] | select(.verdict == "fail")] | min_by(.seed) | .replay' "$T/run/report.json")
expect_match "summary: the totals" '^### soak: reservations — 0 pass, 4 fail, 0 infra, 0 missing$' "$(cat "$T/summary.md")"
expect_match "summary: the failure and its smallest seed" '^- \*\*fail invariant\*\* — 4 seed\(s\), smallest 0: ' \
    "$(cat "$T/summary.md")"
grep -qxF "  $replay" "$T/summary.md" || fail "summary: no line '  $replay'"
ok "summary: the replay command of report.json ($replay)"
sh "$CI/summary.sh" "$T/nothing" >"$T/none.md"
expect_match "summary of a run that did not start" "soak: no report" "$(cat "$T/none.md")"
