# The end-of-run summary and the replay command it prints (docs/results.md
# "Reading the results", "Replaying a seed"): each group says its failure in words
# and the first line of its reason; in CI (stderr not a terminal) a bug
# that fails every seed is a few log lines, not one per seed; the replay
# line runs as printed, from the same folder, whether soak was run as
# ./soak, found on PATH or by its absolute path, and `soak replay` exits
# 0 pass, 1 fail, 125 infra (what `git bisect run` skips).
. "$(dirname "$0")/lib.sh"

W=$T/w			# the folder soak is run from
mkdir -p "$W" "$T/bin"
ln -s "$SOAK" "$W/soak"		# ./soak, as after `make`
ln -s "$SOAK" "$T/bin/soak"	# soak on PATH, as after `make install`
printf 'CREATE TABLE t (a int);\n' >"$W/ok.sql"

cfg() {	# name, seeds, extra yaml, invariant sql
	cat >"$W/$1.yaml" <<YAML
name: $1
seeds: $2
turns: 2
retries: 0
seed_timeout: 20s
database:
  schema: ok.sql
$3
invariants:
  - name: no coupon over-redeemed
    sql: ${4:-SELECT 1 WHERE false}
YAML
}
# An invariant that breaks in every seed; a turn that says its environment
# broke (exit 75: infra/tempfail); a system that passes.
cfg broken 0..39 'turn: {command: [/bin/true]}' 'SELECT 1 AS coupon'
cfg tempfail 0..2 'turn: {command: [sh, -c, "echo db went away >&2; exit 75"]}'
cfg pass 0..1 'turn: {command: [/bin/true]}'

# replay_line OUT: the command of the summary's first replay line.
replay_line() { sed -n 's/^        replay: //p' "$1" | head -n 1; }
# run_printed VAR CMD [env...]: runs the printed line with sh -c from $W.
run_printed() {
	local __v=$1 cmd=$2; shift 2
	set +e
	(cd "$W" && env "$@" sh -c "$cmd" >"$T/printed.out" 2>&1)
	printf -v "$__v" '%d' $?
	set -e
}

# --- ./soak, 40 seeds of one bug, stderr not a terminal (CI) ---
set +e
(cd "$W" && ./soak run broken.yaml --workers 2 --out out-broken >"$T/broken.out" 2>"$T/broken.err")
rc=$?
set -e
cat "$T/broken.out"
expect_eq "broken: exit status" 1 "$rc"
R=$W/out-broken/report.json
expect_eq "broken: every seed failed" 40 "$(jq .totals.fail "$R")"
expect_eq "the group line says the failure in words" \
    '  FAIL  "no coupon over-redeemed" broken — 40 seed(s), smallest 0' \
    "$(grep '^  FAIL ' "$T/broken.out")"
msg=$(jq -r '.results[0].message | split("\n")[0]' "$R")
[ -n "$msg" ] || fail "seed 0 has no message in report.json"
expect_eq "the line after it is the reason's first line" "        $msg" \
    "$(grep -A1 '^  FAIL ' "$T/broken.out" | tail -n 1)"
# Which invariant, how many rows, the first of them (docs/results.md
# "What a failure says")...
expect_eq "the message names the invariant and quotes the first row" \
    '"no coupon over-redeemed" (1 row) broken after round 0; the first row: coupon=1' "$msg"
# ...then the rows of the smallest seed, as pytest's short summary shows why.
expect_eq "under the group: the smallest seed's rows" \
    '        "no coupon over-redeemed": 1 row
          coupon
          1' "$(grep -A4 '^  FAIL ' "$T/broken.out" | sed -n '3,5p')"
# junit: a failure's message is the same line, its body the rows too.
J=$W/out-broken/junit.xml
expect_eq "junit: the failure's message attribute" "$msg" \
    "$(xmllint --xpath 'string(//testcase[@name="seed 0"]/failure/@message)' "$J")"
xmllint --xpath 'string(//testcase[@name="seed 0"]/failure)' "$J" >"$T/junit-text"
expect_eq "junit: the failure's text, the rows first" \
    "$msg
\"no coupon over-redeemed\": 1 row
  coupon
  1" "$(head -n 4 "$T/junit-text")"
expect_match "junit: then the replay" '^replay: .*soak replay .*broken\.yaml --seed 0$' \
    "$(sed -n 5p "$T/junit-text")"
grep -q 'invariant|' "$T/broken.out" "$T/broken.err" &&
    fail "a fingerprint shown as invariant|…: $(grep -h 'invariant|' "$T/broken.out" "$T/broken.err")"
ok "no fingerprint text on screen"
# On screen only: the fingerprint itself, and so the tickets' dedupe key, is as it was.
expect_eq "report.json's fingerprint unchanged" 'broken|invariant|no coupon over-redeemed' \
    "$(jq -r '[.results[].fingerprint] | unique | join(" ")' "$R")"
# A line per failing seed would be 40; a few per fingerprint is the promise.
seedlines=$(grep -c '^seed ' "$T/broken.err" || true)
cat "$T/broken.err"
expect_ge "CI log lines about seeds (at least the first)" 1 "$seedlines"
[ "$seedlines" -le 5 ] || fail "CI log: $seedlines lines about seeds for one fingerprint (at most 5)"
ok "CI log: $seedlines lines about seeds for 40 failing seeds of one fingerprint"
expect_le() { [ "$3" -le "$2" ] || fail "$1: expected at most $2, got $3"; ok "$1 = $3 (<= $2)"; }
expect_le "CI log lines in all" 10 "$(wc -l <"$T/broken.err")"
expect_match "the CI log names the bug in words" '^seed 0: fail "no coupon over-redeemed" broken — ' \
    "$(cat "$T/broken.err")"
expect_match "the CI log says the rest are counted, not listed" 'counted in the summary, not listed' \
    "$(cat "$T/broken.err")"
line=$(replay_line "$T/broken.out")
expect_eq "replay line with ./soak" './soak replay broken.yaml --seed 0' "$line"
run_printed rc "$line"
expect_eq "the printed replay (./soak) exits 1 on a fail" 1 "$rc"
expect_match "and it replayed the broken invariant" '"no coupon over-redeemed": BROKEN' "$(cat "$T/printed.out")"

# --- soak on PATH; an infra group ---
set +e
(cd "$W" && PATH="$T/bin:$PATH" soak run tempfail.yaml --workers 2 --out out-tempfail \
    >"$T/tempfail.out" 2>"$T/tempfail.err")
rc=$?
set -e
cat "$T/tempfail.out"
expect_eq "tempfail: exit status" 2 "$rc"
R=$W/out-tempfail/report.json
expect_eq "the infra group line in words" \
    '  INFRA tempfail: a turn exited 75 (its environment broke) — 3 seed(s), smallest 0' \
    "$(grep '^  INFRA ' "$T/tempfail.out")"
msg=$(jq -r '.results[0].message | split("\n")[0]' "$R")
[ -n "$msg" ] || fail "seed 0 has no message in report.json"
expect_eq "the infra group's reason, first line" "        $msg" \
    "$(grep -A1 '^  INFRA ' "$T/tempfail.out" | tail -n 1)"
line=$(replay_line "$T/tempfail.out")
expect_eq "replay line with soak on PATH" 'soak replay tempfail.yaml --seed 0' "$line"
run_printed rc "$line" PATH="$T/bin:$PATH"
expect_eq "the printed replay (soak on PATH) exits 125 on infra" 125 "$rc"
expect_match "and it said why" 'verdict: infra tempfail' "$(cat "$T/printed.out")"

# --- the absolute path, from another folder: the config outside it ---
mkdir -p "$T/other"
set +e
(cd "$T/other" && "$SOAK" run "$W/broken.yaml" --seeds 0..1 --workers 1 --out out \
    >"$T/abs.out" 2>/dev/null)
set -e
line=$(replay_line "$T/abs.out")
expect_eq "replay line with the absolute path" "$SOAK replay $(realpath "$W/broken.yaml") --seed 0" "$line"
set +e; (cd "$T/other" && sh -c "$line" >/dev/null 2>&1); rc=$?; set -e
expect_eq "the printed replay (absolute) exits 1 on a fail" 1 "$rc"

# --- soak replay on a pass ---
soak_rc rc replay "$W/pass.yaml" --seed 0 --out "$T/replay-pass" >"$T/pass.out" 2>&1
expect_eq "replay of a passing seed exits 0" 0 "$rc"
