#!/bin/bash
# make test-image: builds soak's Kubernetes image (deploy/k8s/Containerfile)
# with podman, and runs the reservations example inside it as the image's own
# user: soak.yaml finds the lost update (exit 1), fixed.yaml passes (exit 0).
#
# No container registry is reachable here, so the Debian 12 base is made with
# debootstrap (bookworm, minbase, from Debian's mirror) and `podman import`.
# crun fails on this machine's cgroup setup: podman runs with runc, and with
# explicit ulimits.  Needs root, podman, runc and debootstrap.
#
# Knobs: SEEDS (20), KEEP_BASE=1 reuses a base image made before (the first
# step takes most of the time), MIRROR (http://deb.debian.org/debian).
# Every image and container it makes is named soak-k8s-test*, and removed at
# the end unless KEEP=1.
set -euo pipefail

top=$(cd "$(dirname "$0")/../../.." && pwd)
seeds=${SEEDS:-20}
mirror=${MIRROR:-http://deb.debian.org/debian}
base=localhost/soak-k8s-test-base:bookworm
image=localhost/soak-k8s-test:latest
pod=(--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
t0=$(date +%s)
fails=0
passes=0

say() { printf '%s (at %d s)\n' "$*" $(( $(date +%s) - t0 )); }
ok() { echo "ok: $*"; passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

for tool in podman runc debootstrap; do
	command -v "$tool" >/dev/null || {
		echo "image.sh: $tool is not installed (apt-get install podman runc debootstrap)" >&2
		exit 2
	}
done
[ "$(id -u)" -eq 0 ] || { echo "image.sh: needs root (podman import, debootstrap)" >&2; exit 2; }

scratch=$(mktemp -d /var/tmp/soak-k8s-test.XXXXXX)
cleanup() {
	rm -rf "$scratch"
	if [ "${KEEP:-0}" != 1 ]; then
		podman rmi -f "$image" >/dev/null 2>&1 || true
		[ "${KEEP_BASE:-0}" = 1 ] || podman rmi -f "$base" >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

# 1. The base: Debian 12 from the mirror, as an image.
if [ "${KEEP_BASE:-0}" = 1 ] && podman image exists "$base"; then
	say "phase: base $base kept from before"
else
	say "phase: debootstrap bookworm from $mirror"
	debootstrap --variant=minbase bookworm "$scratch/rootfs" "$mirror" \
	    >"$scratch/debootstrap.log" 2>&1 || {
		tail -20 "$scratch/debootstrap.log"
		bad "debootstrap bookworm"
		exit 1
	}
	# apt inside the image uses the same mirror; nothing of the host's.
	rm -rf "$scratch/rootfs/var/cache/apt/archives/"*.deb "$scratch/rootfs/var/lib/apt/lists/"*
	say "phase: podman import"
	tar -C "$scratch/rootfs" --numeric-owner -cf - . | podman import - "$base" >/dev/null
	rm -rf "$scratch/rootfs"
fi

# 2. soak's image, from the tree's source (the ignore file keeps builds,
# binaries and node_modules out of the context).
say "phase: podman build"
version=$(git -C "$top" describe --always --dirty 2>/dev/null || true)
if ! podman build "${pod[@]}" --network host --pull=never \
    --build-arg BASE="$base" --build-arg VERSION="$version" \
    --ignorefile "$top/deploy/k8s/Containerfile.containerignore" \
    -f "$top/deploy/k8s/Containerfile" -t "$image" "$top" >"$scratch/build.log" 2>&1; then
	tail -30 "$scratch/build.log"
	bad "podman build"
	exit 1
fi
ok "podman build $image ($(podman image inspect --format '{{.Size}}' "$image") bytes)"

run() {	# ARGS...: in the image, as its own user, no network, /dev/shm as the manifests mount it
	podman run --rm "${pod[@]}" --network none --name "soak-k8s-test-$$" \
	    --mount type=tmpfs,destination=/dev/shm,tmpfs-size=256m "$image" "$@"
}

# 3. What the manifests rely on.
user=$(run id -u)
[ "$user" = 10001 ] && ok "runs as uid 10001, not root" || bad "runs as uid '$user', expected 10001"
v=$(run soak --version)
[ -n "$version" ] && [ "$v" = "soak $version" ] && ok "soak --version says '$v'" ||
    bad "soak --version says '$v', expected 'soak $version'"
run sh -c 'ls /usr/lib/postgresql/15/bin/initdb /usr/lib/postgresql/15/bin/postgres' >/dev/null &&
    ok "PostgreSQL 15 is there for the embedded database" || bad "no PostgreSQL 15 in the image"
run sh -c 'test ! -e /var/lib/postgresql/15/main' && ok "no main cluster made by the package" ||
    bad "postgresql-15 made a main cluster"

# 4. The reservations example: the bug found, the fix passing.
say "phase: soak run reservations/soak.yaml, $seeds seeds"
set +e
run soak run /opt/soak/examples/reservations/soak.yaml --seeds "0..$((seeds - 1))" \
    >"$scratch/bug.log" 2>&1
rc=$?
set -e
if [ $rc -eq 1 ] && grep -q 'FAIL  "items_reserved matches reservation events" broken' "$scratch/bug.log"; then
	ok "soak.yaml: exit 1, the lost update found: $(grep -m1 ' seeds in ' "$scratch/bug.log")"
else
	cat "$scratch/bug.log"
	bad "soak.yaml: exit $rc, expected 1 naming the broken invariant"
fi
say "phase: soak run reservations/fixed.yaml, $seeds seeds"
set +e
run soak run /opt/soak/examples/reservations/fixed.yaml --seeds "0..$((seeds - 1))" \
    >"$scratch/fixed.log" 2>&1
rc=$?
set -e
if [ $rc -eq 0 ] && grep -q " $seeds pass, 0 fail, 0 infra" "$scratch/fixed.log"; then
	ok "fixed.yaml: exit 0: $(grep -m1 ' seeds in ' "$scratch/fixed.log")"
else
	cat "$scratch/fixed.log"
	bad "fixed.yaml: exit $rc, expected 0 with $seeds pass"
fi

say "image.sh: done"
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
