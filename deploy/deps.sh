#!/bin/sh
# Installs the Debian packages soak builds, tests, fuzzes and benchmarks
# with (scdoc makes the manual pages and mandoc lints them, for make test;
# clang and libclang-rt-dev, whose libFuzzer clang does not pull in, are
# make fuzz's; munge and Slurm are make test-deploy's local cluster,
# which it starts on private paths and ports; systemd is for
# systemd-analyze verify; chromium, a font for it and python3-html5lib read
# report.html in tests/integration/report_html.sh; git is tests/integration/
# bisect.sh's throwaway repository).
# Says so in one line when every one is installed already; otherwise, as
# root it runs apt-get for the missing ones, and as anyone else it prints
# the exact command.
PKGS="build-essential pkg-config
libnng-dev libcurl4-openssl-dev libpq-dev libyaml-dev libjansson-dev libcmocka-dev
libssl-dev openssl
clang libclang-rt-dev
postgresql postgresql-client postgresql-contrib
libxml2-utils jq curl python3 python3-psycopg2 python3-html5lib chromium fonts-dejavu-core procps iproute2 nftables
scdoc mandoc
iperf3 haproxy socat git
munge slurmctld slurmd slurm-client systemd"
# From npm, pinned: the GitHub workflow schema check of make test-deploy
# (tests/deploy/ci.sh), offline once installed.
NPM_PKGS="@action-validator/cli@0.6.0 @action-validator/core@0.6.0"
NPM_CMD=action-validator
# deploy/k8s/test/test.sh (make test-deploy) also needs node and npm (Node 20)
# and kubectl for its kustomize: this machine image has them, but not from
# Debian (Debian 12's kubernetes-client is 1.20, its kustomize too old for the
# overlays).  deploy/k8s/test/image.sh (make test-image) needs podman, runc and
# debootstrap (Debian's): add "podman runc debootstrap" here if CI runs it.
# npm packages the examples and the tests require, each pinned in its
# folder's package.json and installed into that folder (no lock file,
# nothing global); any user may install them.  npm_into DIR PKG: PKG at the
# version DIR/package.json pins, unless it is there already.  A pin that is
# not one exact version (a range, a typo, no package.json) is refused: an
# empty pin would equal the empty version of a package not installed.
npm_into() {
	want=$(sed -n 's/.*"'"$2"'": "\([0-9][0-9.]*\)".*/\1/p' "$1/package.json" 2>/dev/null)
	case $want in
	*[!0-9.]*|'') echo "make deps: $1/package.json does not pin one exact version of $2"; return 1 ;;
	esac
	have=$(node -p "require('$1/node_modules/$2/package.json').version" 2>/dev/null)
	[ "$have" = "$want" ] && return 0
	command -v npm >/dev/null 2>&1 || return 1
	echo "make deps: installing $2@$want from npm into $1"
	(cd "$1" && npm install --no-package-lock --no-fund --no-audit) ||
	    { echo "make deps: could not install $2@$want into $1"; return 1; }
}
ROOT_DIR=$(cd "$(dirname "$0")/.." && pwd)
node_deps() {
	# The example agent's SDK (examples/agent, make test's examples_agent*).
	npm_into "$ROOT_DIR/examples/agent" openai &&
	# The fan-out example's Node agent (examples/fanout, examples_fanout).
	npm_into "$ROOT_DIR/examples/fanout" pg &&
	# The integration tests' Node services (tests/integration/services_seam.sh).
	npm_into "$ROOT_DIR/tests/integration/node" pg
}
PKGS=$(echo $PKGS)
# dpkg's own word on each; without dpkg-query every package counts as missing.
missing=
for p in $PKGS; do
	case $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) in
	ii*) ;;
	*) missing="$missing $p" ;;
	esac
done
# npm itself: Debian's, unless a Node.js with its own npm is there.
command -v npm >/dev/null 2>&1 || missing="$missing npm"
missing=${missing# }
npm_missing=
command -v "$NPM_CMD" >/dev/null 2>&1 || npm_missing=$NPM_PKGS
if [ -z "$missing" ] && [ -z "$npm_missing" ]; then
	node_deps || exit 1
	echo "make deps: the $(echo $PKGS | wc -w) Debian packages and the npm tools soak needs are installed; nothing to do"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "soak needs what is not installed here:${missing:+ Debian packages $missing}${npm_missing:+; npm packages $npm_missing}"
	echo "as root run:"
	[ -n "$missing" ] && echo "  apt-get update && apt-get install -y $missing"
	[ -n "$npm_missing" ] && echo "  npm install -g $npm_missing"
	exit 1
fi
if [ -n "$missing" ]; then
	echo "make deps: installing $missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# --no-install-recommends keeps the database server's optional extras out.
	apt-get install -y -qq --no-install-recommends $missing || exit 1
fi
if [ -n "$npm_missing" ]; then
	echo "make deps: installing from npm $npm_missing"
	npm install -g --no-fund --no-audit $npm_missing || exit 1
fi
node_deps || exit 1
