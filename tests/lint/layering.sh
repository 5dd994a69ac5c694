#!/usr/bin/env bash
# The layers and their rules (docs/design.md, "The layers"), checked over
# the #include lines of the source and the symbols of the built objects:
#   common/                                  the ground floor: includes
#                                            nothing of the project above it
#   isolation/ invariants/ fault-proxy/      libraries over common/
#                                            (invariants/ uses isolation/)
#   worker/ coordinator/                     the roles, over those
#   cmd/                                     one file per command, on top;
#                                            no folder below includes it
# and no two files include each other, nor two objects call each other;
# and every command's file is in cmd/ (no getopt_long below it).
# Seconds; make test runs it first (tests/run).
set -euo pipefail
export LC_ALL=C
cd "${SOAK_ROOT:-$(dirname "$0")/../..}"
BUILD=${SOAK_BUILD:-$PWD/build}
bad=0
complain() { echo "layering: $*" >&2; bad=1; }

# What each folder may include, besides the C library and itself.
declare -A allowed=(
	[common]=""
	[isolation]="common"
	[fault-proxy]="common"
	[invariants]="common isolation"
	[worker]="common isolation invariants fault-proxy"
	[coordinator]="common isolation invariants fault-proxy"
	[cmd]="common isolation invariants fault-proxy worker coordinator"
)
# Edges allowed against the rules, FILE:FOLDER: none.
known=" "

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
# FILE INCLUDED, for every #include "..." of the source.
for d in common isolation invariants fault-proxy worker coordinator cmd; do
	if [ -d "$d" ]; then find "$d" -maxdepth 1 \( -name "*.c" -o -name "*.h" \); fi
done | sort | xargs -r awk '/^#[ \t]*include[ \t]+"/ { split($0, q, "\""); print FILENAME, q[2] }' >"$edges"
while read -r f inc; do
	from=${f%%/*} to=${inc%%/*}
	[ "$to" = "$from" ] && continue
	ok=${allowed[$from]-?}
	case " $ok " in *" $to "*) continue ;; esac
	case $known in *" $f:$to "*) continue ;; esac
	complain "$f includes $inc: $from/ may include only ${ok:-nothing above it} (and itself)"
done <"$edges"

# No circle of includes, of any length (tsort names the files in it).
if ! tsort "$edges" >/dev/null 2>"$edges.loop"; then
	complain "files include each other: $(grep -v 'input contains a loop' "$edges.loop" | sed 's/^tsort: //' | tr '\n' ' ')"
fi
rm -f "$edges.loop"

# No two objects that call each other (a circle no #include shows, as
# isolation/iso.c and pq.c were): the built objects' defined and undefined
# symbols.
if ls "$BUILD"/*/*.o >/dev/null 2>&1; then
	# The objects of sources that are there (a build dir keeps a moved
	# file's old object).
	objs=
	for o in $(ls "$BUILD"/{common,isolation,invariants,fault-proxy,worker,coordinator,cmd}/*.o 2>/dev/null || true); do
		src=${o#$BUILD/}
		[ -f "${src%.o}.c" ] && objs="$objs $o"
	done
	# nm -A: "OBJECT: [ADDRESS] TYPE SYMBOL", one nm for all.
	nm -A -g --defined-only $objs | awk -v b="$BUILD/" '{ o = $1; sub(/:.*/, "", o); sub(b, "", o); print $NF, o }' |
	    sort -k1,1 >"$edges.def"
	nm -A -g --undefined-only $objs | awk -v b="$BUILD/" '{ o = $1; sub(/:.*/, "", o); sub(b, "", o); print $NF, o }' |
	    sort -k1,1 >"$edges.use"
	# user definer, once per pair
	join "$edges.use" "$edges.def" | awk '$2 != $3 { print $2, $3 }' | sort -u >"$edges.calls"
	while read -r a b; do
		complain "$a and $b call each other (one of them should not need the other)"
	done < <(awk '{ e[$1 " " $2] = 1 } END { for (k in e) { split(k, p, " "); if ((p[2] " " p[1]) in e && p[1] < p[2]) print p[1], p[2] } }' "$edges.calls")
	# A call goes down the floors, as an #include does (a declaration
	# written by hand would hide an arrow upwards from the check above).
	while read -r a b; do
		from=${a%%/*} to=${b%%/*}
		[ "$from" = "$to" ] && continue
		ok=${allowed[$from]-?}
		case " $ok " in *" $to "*) continue ;; esac
		case $known in *" ${a%.o}.c:$to "*) continue ;; esac
		complain "$a calls into $b: $from/ may use only ${ok:-nothing above it} (and itself)"
	done <"$edges.calls"
	rm -f "$edges.def" "$edges.use" "$edges.calls"
else
	complain "no objects in $BUILD (build first: make)"
fi

# A command lives in cmd/: the libraries parse no command line.
for d in common isolation invariants fault-proxy worker coordinator; do
	for f in $(grep -lE 'getopt_long|^cmd_[a-z_]+\(int argc' "$d"/*.c 2>/dev/null || true); do
		complain "$f parses a command line: a command's file goes in cmd/"
	done
done

[ $bad -eq 0 ] || exit 1
echo "layering: ok ($(wc -l <"$edges") includes)"
