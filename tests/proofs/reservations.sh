# Reservations (seeds/001), the long half of its proof (make proofs): the
# fixed variant passes PROOF_SEEDS seeds (200: the default seeds) with no
# infra verdict, and so does the compare-and-set variant over a quarter as
# many.  The buggy system caught and
# replayed: tests/integration/reservations.sh.
. "$SOAK_ROOT/tests/integration/lib.sh"
EX=$ROOT/examples/reservations
PROOF_SEEDS=${PROOF_SEEDS:-200}

# Both fixes hold, and the guard (100%) shows they did the work.
for v in fixed:$((PROOF_SEEDS - 1)) cas:$((PROOF_SEEDS / 4 - 1)); do
	last=${v#*:} v=${v%:*}
	phase "reservations $v over seeds 0..$last"
	soak_rc rc run "$EX/$v.yaml" --seeds 0..$last --out "$T/$v" >"$T/$v.out" 2>"$T/$v.err"
	tail -n 4 "$T/$v.out"
	expect_eq "$v run exit status" 0 "$rc"
	check_report "$T/$v" 0 "$last"
	expect_eq "$v passes" $((last + 1)) "$(jq .totals.pass "$T/$v/report.json")"
	expect_eq "$v infra" 0 "$(jq .totals.infra "$T/$v/report.json")"
	expect_eq "$v turns that succeeded" $(((last + 1) * 8)) "$(jq '[.results[].ok_turns]|add' "$T/$v/report.json")"
	[ ! -e "$T/$v/failures" ] || fail "$v left a failures/ directory"
	[ ! -e "$T/$v/work" ] || fail "$v left its work/ directory"
done
