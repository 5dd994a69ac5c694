#!/bin/bash
# make test-deploy: deploy/k8s's manifests, checked offline.
#
#  1. every kustomization renders (`kubectl kustomize`), and what it renders
#     passes the Kubernetes schemas strictly (validate.js: types, required
#     fields, enums, and no field the schema does not have);
#  2. the validator fails on broken manifests: bad/*.yaml (each says the line
#     it must produce), and a misspelled field put into a copy of the base,
#     which must fail the rendered overlay;
#  3. the pods of each overlay run here against soak's CLI (cmdcheck.js): the
#     coordinator and workers with their commands, args, env and volumes as a
#     kubelet would give them, a short run of the reservations example to its
#     end, and broken variants that must fail.
#
# Needs node and npm (Node 20), kubectl (its built-in kustomize), and for
# step 3 root, unshare, ip, setpriv, PostgreSQL and a built ./soak (make).
# Step 3 runs in its own network and mount namespaces: the Service's name on
# a private loopback, the pods' user 10001 in a private /etc/passwd.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
k8s=$(dirname "$here")
top=$(cd "$k8s/../.." && pwd)
t0=$(date +%s)
passes=0
fails=0
ok() { echo "ok: $*"; passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
phase() { printf 'phase: %s (at %d s)\n' "$*" $(( $(date +%s) - t0 )); }

command -v kubectl >/dev/null || { echo "test.sh: kubectl is not installed (its kustomize renders the overlays)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/soak-k8s-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

phase "npm ci"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error >"$tmp/npm.log" 2>&1) ||
    { cat "$tmp/npm.log"; echo "test.sh: npm ci failed" >&2; exit 2; }

phase "render and validate ($(kubectl version --client 2>/dev/null | grep -i kustomize))"
for k in base overlays/merge-queue overlays/nightly overlays/nightly/cron test/tls/merge-queue test/tls/nightly; do
	out="$tmp/$(echo "$k" | tr / -).yaml"
	if kubectl kustomize "$k8s/$k" >"$out" 2>"$tmp/err"; then
		ok "kubectl kustomize $k renders $(grep -c '^kind:' "$out") objects"
	else
		bad "kubectl kustomize $k: $(cat "$tmp/err")"
		continue
	fi
	if node "$here/validate.js" "$out" >"$tmp/v.log"; then
		ok "$k: $(cat "$tmp/v.log")"
	else
		bad "$k does not validate:"; cat "$tmp/v.log"
	fi
done
# The resource files that stand alone (not patches, not skeletons).
for f in "$k8s"/base/service.yaml "$k8s"/base/out-pvc.yaml "$k8s"/base/*-job.yaml "$k8s"/overlays/*/namespace.yaml; do
	node "$here/validate.js" "$f" >"$tmp/v.log" && ok "$(cat "$tmp/v.log")" || { bad "$f:"; cat "$tmp/v.log"; }
done
# What each overlay must say, beyond the schema.
grep -q 'seeds: 0\.\.199$' "$tmp/overlays-merge-queue.yaml" && ok "merge-queue runs seeds 0..199" || bad "merge-queue does not run seeds 0..199"
grep -q 'seeds: 0\.\.1999$' "$tmp/overlays-nightly.yaml" && ok "nightly runs seeds 0..1999" || bad "nightly does not run seeds 0..1999"
[ "$(grep -c '^kind: CronJob' "$tmp/overlays-nightly.yaml")" = 2 ] && ! grep -q '^kind: Job' "$tmp/overlays-nightly.yaml" &&
    ok "nightly is two CronJobs and no Job" || bad "nightly is not two CronJobs without Jobs"
! grep -q '^kind: Secret' "$tmp"/*.yaml && ok "no Secret in the repository's manifests (made with kubectl create secret)" ||
    bad "a Secret is in the rendered manifests"

phase "the validator fails on broken manifests"
for f in "$here"/bad/*.yaml; do
	want=$(sed -n 's/^# expect: //p' "$f")
	if node "$here/validate.js" "$f" >"$tmp/v.log"; then
		bad "$(basename "$f"): validated, expected: $want"
	elif grep -qF -- "$want" "$tmp/v.log"; then
		ok "$(basename "$f") fails: $want"
	else
		bad "$(basename "$f") fails, but not with: $want"; cat "$tmp/v.log"
	fi
done
cp -a "$k8s" "$tmp/k8s-copy"
sed -i 's/terminationGracePeriodSeconds:/terminationGracePeriodSecond:/' "$tmp/k8s-copy/base/worker-job.yaml"
if ! kubectl kustomize "$tmp/k8s-copy/overlays/nightly" >"$tmp/misspelled.yaml" 2>"$tmp/err"; then
	bad "the misspelled copy does not even render: $(cat "$tmp/err")"
elif node "$here/validate.js" "$tmp/misspelled.yaml" >"$tmp/v.log"; then
	bad "a misspelled field in base/worker-job.yaml passed the rendered nightly overlay"
elif grep -q 'CronJob/soak-worker: /spec/jobTemplate/spec/template/spec/terminationGracePeriodSecond: unknown field' "$tmp/v.log"; then
	ok "a misspelled field in base/worker-job.yaml fails the rendered nightly overlay: $(head -1 "$tmp/v.log" | sed 's/^[^:]*: //')"
else
	bad "the misspelled field failed for another reason:"; cat "$tmp/v.log"
fi

phase "the pods against soak's CLI"
if [ "$(id -u)" -ne 0 ]; then
	bad "cmdcheck needs root (namespaces, the pods' uid 10001): not run"
elif [ ! -x "$top/build/soak" ]; then
	bad "cmdcheck needs $top/build/soak: run make first"
else
	# soak's pods run as 10001, which the image's /etc/passwd has (initdb
	# wants a name for it); here a copy of the host's gains it, in the
	# namespace only.  The Service's name is the namespace's loopback.
	cp /etc/passwd "$tmp/passwd"; cp /etc/group "$tmp/group"
	grep -q '^[^:]*:[^:]*:10001:' /etc/passwd || echo 'soak:x:10001:10001::/nonexistent:/usr/sbin/nologin' >>"$tmp/passwd"
	grep -q '^[^:]*:[^:]*:10001:' /etc/group || echo 'soak:x:10001:' >>"$tmp/group"
	printf '127.0.0.1\tlocalhost soak-coordinator\n::1\tlocalhost\n' >"$tmp/hosts"
	chmod 644 "$tmp/passwd" "$tmp/group" "$tmp/hosts"
	chmod 755 "$tmp"
	# The TLS Secrets' files, made as docs/deploy.md "Kubernetes" makes
	# them: a CA, the coordinator's certificate for the Service's name, a
	# worker's.
	mkdir "$tmp/tls" && (
		cd "$tmp/tls"
		openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		    -subj "/CN=soak CA" -keyout ca.key -out ca.pem
		for who in coordinator worker; do
			ext='extendedKeyUsage=clientAuth'
			[ $who = coordinator ] && ext='subjectAltName=DNS:soak-coordinator\nextendedKeyUsage=serverAuth'
			openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			    -subj "/CN=$who" -keyout $who.key -out $who.csr
			printf '%b\n' "$ext" >$who.ext
			openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
			    -days 2 -extfile $who.ext -out $who.crt
			cat $who.crt $who.key >$who.pem
		done
	) >"$tmp/openssl.log" 2>&1 || { cat "$tmp/openssl.log"; bad "openssl: the TLS files"; }
	export CMDCHECK_TLS_DIR=$tmp/tls
	for o in overlays-merge-queue overlays-nightly test-tls-merge-queue; do
		neg=; [ $o = overlays-merge-queue ] && neg=--negatives
		if unshare --net --mount -- bash -c '
		    set -e
		    ip link set lo up
		    mount --bind "$1/passwd" /etc/passwd
		    mount --bind "$1/group" /etc/group
		    mount --bind "$1/hosts" /etc/hosts
		    exec node "$2/cmdcheck.js" "$1/$3.yaml" $4' _ "$tmp" "$here" "$o" "$neg" >"$tmp/cmd.log" 2>&1; then
			:
		fi
		cat "$tmp/cmd.log" | grep -v '^[0-9]* passed, [0-9]* failed$'
		passes=$((passes + $(grep -c '^ok: ' "$tmp/cmd.log" || true)))
		n=$(grep -c '^FAIL: ' "$tmp/cmd.log" || true)
		grep -q '^[0-9]* passed, [0-9]* failed$' "$tmp/cmd.log" || { bad "cmdcheck $o did not finish"; }
		fails=$((fails + n))
	done
fi

phase "done"
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
