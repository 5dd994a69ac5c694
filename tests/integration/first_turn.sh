# README "Your first turn" stays true: its schema, its
# bash/psql turn, its Python psycopg2 turn and its soak.yaml are taken out
# of the README as printed (each fenced block after a `<!-- first-turn:
# FILE -->` line), and run: both turns pass every seed with the guard at
# 100 %, every job taken once, and a replay with --keep leaves the schema.
. "$(dirname "$0")/lib.sh"

# first_turn FILE: the README block that follows `<!-- first-turn: FILE -->`.
first_turn() {
	awk -v want="<!-- first-turn: $1 -->" '
	    $0 == want { armed = 1; next }
	    armed && /^```/ { if (inside) exit; inside = 1; next }
	    inside { print }' "$ROOT/README.md"
}
mkdir "$T/jobs"
for f in schema.sql turn.sh turn.py soak.yaml; do
	first_turn "$f" >"$T/jobs/$f"
	[ -s "$T/jobs/$f" ] || fail "README has no first-turn block for $f"
	ok "README's $f: $(wc -l <"$T/jobs/$f") lines"
done
expect_ge "turn.sh is ten lines or so" 10 "$(wc -l <"$T/jobs/turn.sh")"
[ "$(wc -l <"$T/jobs/turn.sh")" -le 12 ] || fail "turn.sh grew past twelve lines"
/usr/bin/python3 -c 'import psycopg2' 2>/dev/null ||
    fail "python3-psycopg2 is not installed (make deps installs it)"
cd "$T/jobs"
chmod +x turn.sh turn.py		# as the README says

# The bash turn over the config's 20 seeds; the Python one (each turn pays
# for the interpreter) over 5, to keep the suite short.
for turn in turn.sh turn.py; do
	sed "s|command: \[./turn.sh\]|command: [./$turn]|" soak.yaml >"$turn.yaml"
	n=20; [ "$turn" = turn.py ] && n=5
	soak_rc rc run "$turn.yaml" --seeds "$n" --workers 2 --out "out-$turn" >"$turn.out" 2>"$turn.err"
	tail -n 4 "$turn.out"
	expect_eq "$turn: every seed passes" 0 "$rc"
	R=out-$turn/report.json
	expect_eq "$turn: $n seeds, 8 turns each, all ok" "{\"n\":$n,\"ok\":[8],\"total\":[8]}" \
	    "$(jq -c '{n: (.results | length), ok: ([.results[].ok_turns] | unique),
	        total: ([.results[].total_turns] | unique)}' "$R")"
done

# A seed replayed with --keep: the turns took the jobs, one each.
soak_rc rc replay turn.py.yaml --seed 3 --keep </dev/null >replay.out 2>&1
cat replay.out
expect_eq "replay of seed 3" 0 "$rc"
ws=$(sed -n 's/^workspace kept: //p' replay.out)
case $ws in /dev/shm/soak-replay-*/seed-3) cleanup_hooks+=("rm -rf '$(dirname "$ws")'");; esac
expect_eq "each turn printed the job it took" 8 \
    "$(cat "$ws"/r*-t*/stdout.log | grep -cE '^turn [0-3] took job [1-8]$')"
expect_eq "eight different jobs" 8 \
    "$(cat "$ws"/r*-t*/stdout.log | sed 's/.* //' | sort -u | wc -l)"
echo "first_turn: ok"
