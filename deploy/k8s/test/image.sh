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
	podman rm -f soak-k8s-test-coord >/dev/null 2>&1 || true
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
	# (an image of that name from before would be left untagged, not removed)
	podman rmi -f "$base" >/dev/null 2>&1 || true
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
podman rmi -f "$image" >/dev/null 2>&1 || true
say "phase: podman build"
version=$(git -C "$top" describe --always --dirty 2>/dev/null || true)
# --layers=false: no build stage is left behind as an untagged image.
if ! podman build "${pod[@]}" --network host --pull=never --layers=false \
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
here=$top/deploy/k8s/test

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

run sh -c '/usr/lib/postgresql/15/bin/initdb -D /dev/shm/pg -U postgres >/dev/null && echo "measured: an initdb cluster on /dev/shm: $(du -sm /dev/shm/pg | cut -f1) MiB"' ||
    bad "initdb in the image"

# 4. The reservations example: the bug found, the fix passing.
say "phase: soak run reservations/soak.yaml, $seeds seeds"
set +e
# (and what it took: the container's peak memory, tmpfs included, for the
# manifests' requests; cgroup v1 here, v2 elsewhere)
run sh -c 'soak run "$@"; rc=$?
	m=$(cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes /sys/fs/cgroup/memory.peak 2>/dev/null | head -1)
	echo "measured: peak memory of the container: $((m / 1048576)) MiB"; exit $rc' \
    sh /opt/soak/examples/reservations/soak.yaml --seeds "0..$((seeds - 1))" >"$scratch/bug.log" 2>&1
rc=$?
grep '^measured:' "$scratch/bug.log" || true
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

# 5. The merge-queue overlay's pods in the image: each container with the
# user, read-only root, capabilities, volumes, env and argv its manifest
# gives it (cmdcheck.js --podman), the workers in the coordinator's network
# namespace with the Service's name on its loopback.
say "phase: the merge-queue overlay's coordinator and 2 workers, $seeds seeds"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error >"$scratch/npm.log" 2>&1) ||
    { cat "$scratch/npm.log"; bad "npm ci"; exit 1; }
kubectl kustomize "$top/deploy/k8s/overlays/merge-queue" >"$scratch/mq.yaml"
printf '127.0.0.1\tlocalhost soak-coordinator\n' >"$scratch/hosts"
chmod 644 "$scratch/hosts"
vols=$scratch/vols
# The Secret's value, the same for every container (cmdcheck.js writes it
# where the Secret volume is, mode 0440 group 10001, as a kubelet would).
CMDCHECK_SECRET=$(openssl rand -hex 32)
export CMDCHECK_SECRET
ctr() {	# NAME ROLE CONTAINER POD [podman run options...]
	local name=$1 role=$2 c=$3 podname=$4 a
	shift 4
	mapfile -d '' -t a < <(CMDCHECK_SEEDS="0..$((seeds - 1))" node "$here/cmdcheck.js" --podman \
	    "$scratch/mq.yaml" "$role" "$c" "$podname" "$vols" "$image")
	podman run "${pod[@]}" --name "soak-k8s-test-$name" "$@" "${a[@]}"
}
hosts=(--mount "type=bind,source=$scratch/hosts,destination=/etc/hosts,ro=true")
set +e
ctr init-c coordinator secret-files coord --rm --network none >"$scratch/init-c.log" 2>&1 &&
    ctr coord coordinator coordinator coord -d --network none "${hosts[@]}" >/dev/null &&
    ctr init-w0 worker secret-files w0 --rm --network none >"$scratch/init-w0.log" 2>&1 &&
    ctr init-w1 worker secret-files w1 --rm --network none >"$scratch/init-w1.log" 2>&1
rc=$?
set -e
if [ $rc -ne 0 ]; then
	cat "$scratch"/init-*.log
	bad "the coordinator pod did not start"
else
	set +e
	ctr w0 worker worker w0 --rm --network container:soak-k8s-test-coord "${hosts[@]}" \
	    >"$scratch/w0.log" 2>&1 &
	w0=$!
	ctr w1 worker worker w1 --rm --network container:soak-k8s-test-coord "${hosts[@]}" \
	    >"$scratch/w1.log" 2>&1
	w1rc=$?
	wait $w0
	w0rc=$?
	# The workers have ended: the coordinator ends within its 10 s drain, or
	# never (no worker ever reached it), which the bound tells.
	crc=$(timeout 60 podman wait soak-k8s-test-coord || echo "none (still running 60 s after the workers ended)")
	podman logs soak-k8s-test-coord >"$scratch/coord.log" 2>&1
	podman rm -f soak-k8s-test-coord >/dev/null
	set -e
	[ "$crc" = 1 ] && grep -q 'FAIL  "items_reserved matches reservation events" broken' "$scratch/coord.log" &&
	    ok "coordinator pod: exit 1, the lost update found: $(grep -m1 ' seeds in ' "$scratch/coord.log")" ||
	    { cat "$scratch/coord.log"; bad "coordinator pod: exit $crc, expected 1 naming the invariant"; }
	[ $w0rc -eq 0 ] && [ $w1rc -eq 0 ] && ok "both worker pods exit 0 when the run is done: $(grep -h 'done:' "$scratch"/w[01].log | tr '\n' ';')" ||
	    { cat "$scratch"/w[01].log; bad "worker pods exit $w0rc and $w1rc, expected 0"; }
	jq -e --argjson n "$seeds" '.seeds.count == $n and .totals.fail == $n' \
	    "$vols/pvc-soak-out/coord/report.json" >/dev/null 2>&1 &&
	    ok "report.json on the soak-out volume: $seeds seeds, $seeds fail" ||
	    bad "no report.json of $seeds failing seeds at soak-out/coord/"
	! grep -rqF "$CMDCHECK_SECRET" "$vols/pvc-soak-out" "$scratch"/*.log &&
	    ok "the secret is in no output file and no log" || bad "the secret leaked into the output or a log"
fi

say "image.sh: done"
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
