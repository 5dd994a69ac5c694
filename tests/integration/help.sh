# soak --help names every command and where its options are; each
# command's --help lists every long option it accepts (read from its
# getopt table in the source, so a new option cannot go unlisted), or the
# command refuses that option as another command's (exit 64).
. "$(dirname "$0")/lib.sh"

"$SOAK" --help >"$T/top" || fail "soak --help exited $?"
for c in run coordinator worker replay proxy check tickets pin report explore minimize; do
	grep -qE "^  soak $c( |$)" "$T/top" || fail "soak --help does not name $c"
done
ok "soak --help names every command"
expect_match "and says where each one's options are" 'soak COMMAND --help' "$(cat "$T/top")"

# command:source of its option table
for pair in run:cmd/run.c coordinator:cmd/run.c worker:cmd/worker.c \
    replay:cmd/replay.c proxy:cmd/proxy.c check:cmd/check.c \
    tickets:cmd/tickets.c pin:cmd/pin.c report:cmd/report.c explore:cmd/explore.c \
    minimize:cmd/minimize.c; do
	c=${pair%%:*} src=$ROOT/${pair#*:}
	"$SOAK" "$c" --help >"$T/$c.help" 2>&1 || fail "soak $c --help exited $?"
	cmp -s "$T/$c.help" <("$SOAK" help "$c" 2>&1) || fail "soak help $c is not soak $c --help"
	opts=$(grep -oE '\{[[:space:]]*"[a-z][a-z-]*",[[:space:]]*(no|required|optional)_argument' "$src" |
	    sed -E 's/^\{[[:space:]]*"([a-z-]+)",[[:space:]]*([a-z]+)_argument/\1:\2/' | sort -u)
	[ -n "$opts" ] || fail "no option table found in $src"
	n=0
	for ok in $opts; do
		o=${ok%%:*}
		[ "$o" = help ] && continue
		n=$((n + 1))
		grep -qE -- "--$o([^a-z-]|$)" "$T/$c.help" && continue
		# Not listed: it must be refused here, as another command's.
		if [ "${ok#*:}" = required ]; then set -- "--$o=1"; else set -- "--$o"; fi
		soak_rc rc "$c" "$@" "$T/nothing.yaml" >/dev/null 2>"$T/refused"
		[ "$rc" = 64 ] && grep -qE '(is|are) for `soak' "$T/refused" ||
		    fail "soak $c takes --$o, and its --help does not say so ($rc: $(cat "$T/refused"))"
	done
	ok "soak $c --help: all $n options it takes"
done
# --slots at its documented bounds: 1 and 256 are taken (parsed, then
# --help), 0 and 257 refused with exit 64 and the range named
for n in 1 256; do
	"$SOAK" worker --slots "$n" --help >/dev/null 2>"$T/slots" ||
	    fail "soak worker --slots $n refused: $(cat "$T/slots")"
done
for n in 0 257; do
	soak_rc rc worker --slots "$n" --help >/dev/null 2>"$T/slots"
	[ "$rc" = 64 ] && grep -q 'of 1\.\.256' "$T/slots" ||
	    fail "soak worker --slots $n: exit $rc, not 64 naming 1..256: $(cat "$T/slots")"
done
ok "soak worker --slots: 1 and 256 taken, 0 and 257 refused"
echo "help: ok"
