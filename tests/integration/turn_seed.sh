# SOAK_TURN_SEED is a function of (seed, round, turn): distinct for every
# turn and round of a seed and across seeds, and the same in another run
# with another number of workers (what makes a seed replay).
. "$(dirname "$0")/lib.sh"

cat >"$T/turn.sh" <<'SH'
#!/bin/sh
# One line per turn into the run's file (the test names it through the
# config folder); short O_APPEND writes do not interleave.
echo "$SOAK_SEED $SOAK_ROUND $SOAK_TURN $SOAK_TURN_SEED" >>"$SOAK_CONFIG_DIR/seeds.$(cat "$SOAK_CONFIG_DIR/which")"
SH
chmod +x "$T/turn.sh"
cat >"$T/ts.yaml" <<'YAML'
name: turn-seed
seeds: 0..2
turns: 3
rounds: 2
turn:
  command: [./turn.sh]
invariants:
  - name: nothing
    sql: SELECT 1 WHERE false
YAML

for w in 1 2; do
	echo "w$w" >"$T/which"
	soak_rc rc run "$T/ts.yaml" --workers $w --out "$T/out$w" >"$T/run$w.out" 2>&1
	expect_eq "run with $w worker(s) exit status" 0 "$rc"
	sort -n -k1,1 -k2,2 -k3,3 "$T/seeds.w$w" >"$T/sorted$w"
done
expect_eq "turns recorded" 18 "$(wc -l <"$T/sorted1")"
expect_eq "(seed, round, turn) recorded once each" 18 "$(cut -d' ' -f1-3 "$T/sorted1" | sort -u | wc -l)"
expect_eq "distinct SOAK_TURN_SEED values" 18 "$(cut -d' ' -f4 "$T/sorted1" | sort -u | wc -l)"
grep -vqE '^[0-9]+ [0-9]+ [0-9]+ [0-9]{1,20}$' "$T/sorted1" &&
    fail "a SOAK_TURN_SEED is not a decimal integer: $(grep -vE ' [0-9]{1,20}$' "$T/sorted1")"
cmp "$T/sorted1" "$T/sorted2" ||
    fail "SOAK_TURN_SEED differs between a run with 1 worker and one with 2: $(diff "$T/sorted1" "$T/sorted2")"
ok "the same (seed, round, turn) got the same SOAK_TURN_SEED with 1 and 2 workers"
