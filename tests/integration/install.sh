# `make install` (README "Set up and run"): DESTDIR and PREFIX put a soak
# that works on its own; its version, and report.json's, are what the build
# recorded (git describe of the tree, else the Makefile's VERSION_BASE);
# the replay command it prints, by its absolute path, runs as printed.
. "$(dirname "$0")/lib.sh"

# The build tests/run used: the sanitizer build installs its own binary.
san=
[ "$(basename "${SOAK_BUILD:-build}")" = build-san ] && san=SANITIZE=1
# What the build recorded (make writes it at every build), which must be the
# tree's `git describe` at the commit (its -dirty mark may differ: files can
# change between the build and this test), else VERSION_BASE.
want=$(sed -n 's/^const char soak_version\[\] = "\(.*\)";$/\1/p' "${SOAK_BUILD:-$ROOT/build}/version.c")
if [ -e "$ROOT/.git" ]; then
	expect_eq "the recorded version is the tree's git describe" \
	    "$(git -C "$ROOT" describe --always)" "${want%-dirty}"
else
	expect_eq "the recorded version is VERSION_BASE" \
	    "$(sed -n 's/^VERSION_BASE *= *//p' "$ROOT/Makefile")" "$want"
fi
[ -n "$want" ] || fail "no version to expect (git describe, or VERSION_BASE in the Makefile)"
expect_eq "soak --version is what the build recorded" "soak $want" "$("$SOAK" --version)"

make -C "$ROOT" -s $san install DESTDIR="$T/root" PREFIX=/usr >"$T/install.log" 2>&1 ||
    fail "make install failed: $(cat "$T/install.log")"
BIN=$T/root/usr/bin/soak
[ -x "$BIN" ] || fail "make install put no executable at $BIN: $(find "$T/root" | head)"
[ -f "$T/root/usr/share/doc/soak/README.md" ] || fail "make install put no README beside it"
expect_eq "the installed soak's version" "soak $want" "$("$BIN" --version)"

# A tiny run with the installed binary alone (no ./soak, nothing of the tree).
mkdir -p "$T/cfg" "$T/cwd"
printf 'CREATE TABLE t (a int);\n' >"$T/cfg/ok.sql"
cat >"$T/cfg/soak.yaml" <<'YAML'
name: tiny
seeds: 0..1
turns: 2
retries: 0
database:
  schema: ok.sql
turn: {command: [/bin/true]}
invariants:
  - name: nothing here
    sql: SELECT a FROM t
  - name: a broken one
    sql: SELECT 1 AS one
YAML
set +e
(cd "$T/cwd" && "$BIN" run "$T/cfg/soak.yaml" --workers 1 --out out >"$T/run.out" 2>"$T/run.err")
rc=$?
set -e
cat "$T/run.out"
expect_eq "the installed soak runs: exit status (the invariant breaks)" 1 "$rc"
R=$T/cwd/out/report.json
check_report "$T/cwd/out" 0 1
expect_eq "report.json's soak_version" "$want" "$(jq -r .soak_version "$R")"
line=$(sed -n 's/^        replay: //p' "$T/run.out" | head -n 1)
expect_eq "replay line with the installed soak" "$BIN replay $(realpath "$T/cfg/soak.yaml") --seed 0" "$line"
set +e; (cd "$T/cwd" && sh -c "$line" >"$T/replay.out" 2>&1); rc=$?; set -e
expect_eq "the printed replay runs as printed (exit 1: fail)" 1 "$rc"

make -C "$ROOT" -s $san uninstall DESTDIR="$T/root" PREFIX=/usr >"$T/uninstall.log" 2>&1 ||
    fail "make uninstall failed: $(cat "$T/uninstall.log")"
[ ! -e "$BIN" ] || fail "make uninstall left $BIN"
ok "make uninstall removed it"
# Under DESTDIR it leaves no empty folder behind, the staging root neither...
[ ! -e "$T/root" ] || fail "make uninstall left folders: $(find "$T/root")"
ok "make uninstall left no empty folder"
# ...and nothing that is not soak's: another program beside it stays.
mkdir -p "$T/shared/usr/bin"
: >"$T/shared/usr/bin/other"
make -C "$ROOT" -s $san install DESTDIR="$T/shared" PREFIX=/usr >/dev/null 2>&1
make -C "$ROOT" -s $san uninstall DESTDIR="$T/shared" PREFIX=/usr >/dev/null 2>&1
expect_eq "an uninstall beside another program leaves it, and only it" \
    "$T/shared $T/shared/usr $T/shared/usr/bin $T/shared/usr/bin/other" \
    "$(find "$T/shared" | sort | tr '\n' ' ' | sed 's/ $//')"
