#!/usr/bin/env bash
# The manual pages soak(1) and soak.yaml(5): the committed pages are what
# their scdoc sources make (make man), mandoc -T lint finds nothing in
# them, every option a command's --help lists is in soak(1), and every
# --help says where the manual is.  Seconds.
set -euo pipefail
cd "${SOAK_ROOT:-$(dirname "$0")/../..}"
SOAK=${SOAK_BIN:-$PWD/build/soak}
T=$(mktemp -d /tmp/soak-man.XXXXXX)
trap 'rm -rf "$T"' EXIT
bad=0
complain() { echo "man: $*" >&2; bad=1; }
for tool in scdoc mandoc; do
	command -v $tool >/dev/null || { echo "man: no $tool here (make deps installs it)" >&2; exit 1; }
done

date=$(sed -n 's/^MAN_DATE *= *//p' Makefile)
base=$(sed -n 's/^VERSION_BASE *= *//p' Makefile)
for src in docs/man/*.scd; do
	page=${src%.scd}
	scdoc <"$src" | awk -v source="soak $base" -v date="$date" -f docs/man/tidy.awk >"$T/page"
	cmp -s "$T/page" "$page" ||
	    complain "$page is not what $src makes: run make man and commit both ($(diff "$page" "$T/page" | head -n 4 | tr '\n' ' '))"
	lint=$(mandoc -T lint -W warning "$page" 2>&1 || true)
	[ -z "$lint" ] || complain "mandoc -T lint $page: $lint"
done

# Every long option of every command's --help, in soak(1)'s source as
# *--option* (the page itself is what the source makes, above).
for c in run coordinator worker replay proxy check tickets pin report explore minimize; do
	help=$("$SOAK" "$c" --help 2>&1) || complain "soak $c --help exited $?"
	for o in $(grep -oE -- '(^|[^a-z-])--[a-z][a-z-]*' <<<"$help" | sed 's/^[^-]*//' | sort -u); do
		grep -qF -- "*$o*" docs/man/soak.1.scd || complain "soak $c --help lists $o, and soak(1) does not (docs/man/soak.1.scd)"
	done
	grep -qF 'soak(1)' <<<"$help" || complain "soak $c --help does not point at soak(1)"
done
grep -qF 'soak(1)' <<<"$("$SOAK" --help)" || complain "soak --help does not point at soak(1)"

[ $bad -eq 0 ] || exit 1
echo "man: ok"
