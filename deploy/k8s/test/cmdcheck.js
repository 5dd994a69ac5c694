#!/usr/bin/env node
// Runs the pods of rendered manifests (`kubectl kustomize` output) on this
// machine against soak's CLI, as a kubelet would start their containers, and
// checks what the schemas cannot: that the flags exist, that $(VAR)s resolve
// from the pod's env, that every path a container is given is on one of its
// volumes (or in the image), that the secret reaches soak as a file soak
// accepts, and that a run ends as a Job needs it to.
//
//   node cmdcheck.js MANIFEST.yaml      (run by test.sh inside `unshare --net
//                                        --mount`, as root: see there)
//
// Each container runs as the pod's runAsUser with its fsGroup, its command
// and args as Kubernetes would expand them, each mountPath replaced by a
// folder standing for that volume: a Secret volume holds a generated secret
// with the mode a kubelet gives it (defaultMode, plus 0440 with fsGroup), an
// emptyDir is a fresh 0777 folder per pod, a PersistentVolumeClaim one folder
// for every pod that claims it.  The image's paths are the repository's
// (IMAGE_PATHS below, as deploy/k8s/Containerfile lays them out), and `soak`
// is $SOAK.  The Service's name resolves to 127.0.0.1 (test.sh's /etc/hosts).
//
// A broken manifest fails here in the way it would fail in a cluster: soak
// exits 64 for an unknown flag or a secret file group can read, a config path
// that is on no volume is not found, a worker that dials the wrong name or
// port waits out its --reconnect.  Static checks add what a local run cannot
// show: the grace period against the config's seed_timeout, --out on a
// persistent volume, the Service in front of the coordinator's port, non-root.
//
// CMDCHECK_SEEDS (0..7) replaces the run's seeds (the soak-run ConfigMap's
// value, not the flags) to keep the run short; CMDCHECK_WORKERS (2) caps the
// worker pods started.  Ends with "N passed, M failed"; exit 1 on a failure.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const YAML = require('yaml');

const TOP = path.resolve(__dirname, '../../..');
const SOAK = process.env.SOAK || path.join(TOP, 'build/soak');
// What deploy/k8s/Containerfile puts where (checked below against it).
const IMAGE_PATHS = { '/opt/soak/examples': path.join(TOP, 'examples') };
const SEEDS = process.env.CMDCHECK_SEEDS || '0..7';
const MAX_WORKERS = parseInt(process.env.CMDCHECK_WORKERS || '2', 10);
const RUN_TIMEOUT_MS = 120000;
// The Secret's value: image.sh passes one for all its --podman calls.
const SECRET = process.env.CMDCHECK_SECRET || require('crypto').randomBytes(32).toString('hex');
// The Secrets the manifests name, as `kubectl create secret` would make them
// (README "Kubernetes"); the TLS ones from CMDCHECK_TLS_DIR (test.sh makes it).
const SECRETS = { 'soak-auth': { secret: `${SECRET}\n` } };
if (process.env.CMDCHECK_TLS_DIR) {
	const f = (n) => fs.readFileSync(path.join(process.env.CMDCHECK_TLS_DIR, n), 'utf8');
	SECRETS['soak-tls-coordinator'] = { 'coordinator.pem': f('coordinator.pem'), 'ca.pem': f('ca.pem') };
	SECRETS['soak-tls-worker'] = { 'worker.pem': f('worker.pem'), 'ca.pem': f('ca.pem') };
}

let passed = 0, failed = 0;
function ok(msg) { console.log(`ok: ${msg}`); passed++; }
function fail(msg) { console.log(`FAIL: ${msg}`); failed++; }
function check(cond, msg, why) { cond ? ok(msg) : fail(why ? `${msg}: ${why}` : msg); return cond; }

// --- reading the manifests ---

function load(file) {
	return YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))
	    .map((d) => d.toJS()).filter((o) => o && o.kind);
}

// Every pod a manifest would run: [{owner, role, spec, parallelism, labels}]
function podsOf(docs) {
	const pods = [];
	for (const o of docs) {
		let job = null;
		if (o.kind === 'Job')
			job = o.spec;
		else if (o.kind === 'CronJob')
			job = o.spec && o.spec.jobTemplate && o.spec.jobTemplate.spec;
		if (!job || !job.template)
			continue;
		const labels = (job.template.metadata && job.template.metadata.labels) || {};
		pods.push({ owner: `${o.kind}/${o.metadata.name}`, job,
		    role: labels['app.kubernetes.io/component'], labels,
		    spec: job.template.spec, parallelism: job.parallelism === undefined ? 1 : job.parallelism });
	}
	return pods;
}

function configMaps(docs) {
	const m = {};
	for (const o of docs)
		if (o.kind === 'ConfigMap')
			m[o.metadata.name] = Object.assign({}, o.data || {});
	return m;
}

// A container's env as the kubelet builds it: values, ConfigMap keys,
// Secret keys, the pod's own fields; $(VAR) of earlier entries expanded.
function envOf(c, cms, podName, problems) {
	const env = {};
	for (const e of c.env || []) {
		let v;
		if (e.value !== undefined)
			v = expand(String(e.value), env);
		else if (e.valueFrom && e.valueFrom.configMapKeyRef) {
			const r = e.valueFrom.configMapKeyRef;
			if (!cms[r.name] || cms[r.name][r.key] === undefined) {
				problems.push(`env ${e.name}: no key ${r.key} in ConfigMap ${r.name} of these manifests`);
				continue;
			}
			v = cms[r.name][r.key];
		} else if (e.valueFrom && e.valueFrom.fieldRef) {
			const f = e.valueFrom.fieldRef.fieldPath;
			if (f !== 'metadata.name') {
				problems.push(`env ${e.name}: fieldRef ${f} is not emulated here`);
				continue;
			}
			v = podName;
		} else if (e.valueFrom && e.valueFrom.secretKeyRef) {
			problems.push(`env ${e.name}: a Secret as an environment variable (mount it as a file)`);
			continue;
		} else {
			problems.push(`env ${e.name}: no value`);
			continue;
		}
		env[e.name] = v;
	}
	return env;
}

// Kubernetes' expansion of command and args: $(VAR) from the container's env,
// $$ for a literal $, an unknown $(VAR) left as it is.
function expand(s, env) {
	return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g,
	    (m, name) => m === '$$' ? '$' : (name in env ? env[name] : m));
}

function parseDuration(s) {
	const m = /^(\d+)(ms|s|m)$/.exec(String(s).trim());
	return m ? parseInt(m[1], 10) * { ms: 1, s: 1000, m: 60000 }[m[2]] : null;
}

// The value of --flag in argv (or of --flag=value), null if absent.
function flag(argv, name) {
	for (let i = 0; i < argv.length; i++) {
		if (argv[i] === name)
			return argv[i + 1] === undefined ? null : argv[i + 1];
		if (argv[i].startsWith(`${name}=`))
			return argv[i].slice(name.length + 1);
	}
	return null;
}

// The mount (of this container) a path lies on, the longest mountPath first.
function mountFor(c, p) {
	const ms = (c.volumeMounts || []).slice().sort((a, b) => b.mountPath.length - a.mountPath.length);
	return ms.find((m) => p === m.mountPath || p.startsWith(`${m.mountPath.replace(/\/$/, '')}/`)) || null;
}

function imagePath(p) {
	for (const [img, local] of Object.entries(IMAGE_PATHS))
		if (p === img || p.startsWith(`${img}/`))
			return local + p.slice(img.length);
	return null;
}

// --- static checks: what a local run cannot show ---

function staticChecks(docs, pods) {
	const cms = configMaps(docs);
	const services = docs.filter((o) => o.kind === 'Service');
	const cfgFile = cms['soak-run'] && cms['soak-run'].config;
	const containerfile = fs.readFileSync(path.join(TOP, 'deploy/k8s/Containerfile'), 'utf8');

	check(/cp -a examples \/out\/opt\/soak\/examples/.test(containerfile),
	    'the Containerfile puts the examples at /opt/soak/examples, where the config is read');
	for (const o of docs)
		if (o.kind === 'ConfigMap')
			check(!Object.keys(o.data || {}).some((k) => /secret|token|password|\.pem$|\.key$/i.test(k)),
			    `ConfigMap ${o.metadata.name} holds no secret`, `keys ${Object.keys(o.data || {})}`);
	for (const pod of pods) {
		const s = pod.spec, sc = s.securityContext || {}, who = pod.owner;
		const all = (s.initContainers || []).concat(s.containers || []);
		check(sc.runAsNonRoot === true && sc.runAsUser > 0 &&
		    all.every((c) => !c.securityContext || c.securityContext.runAsUser === undefined ||
			c.securityContext.runAsUser > 0),
		    `${who}: every container runs as non-root`);
		check(all.every((c) => c.securityContext && c.securityContext.allowPrivilegeEscalation === false),
		    `${who}: no container may gain privileges`);
		check(all.every((c) => (c.env || []).every((e) => !(e.valueFrom && e.valueFrom.secretKeyRef)) &&
		    (c.envFrom || []).every((e) => !e.secretRef)),
		    `${who}: no Secret reaches a container as an environment variable`);
		const main = s.containers[0];
		const argv = (main.command || []).concat(main.args || []);
		const env = envOf(main, cms, 'pod', []);
		const x = argv.map((a) => expand(a, env));
		if (pod.role === 'coordinator') {
			const out = flag(x, '--out');
			const m = out && mountFor(main, out);
			const vol = m && s.volumes.find((v) => v.name === m.name);
			check(vol && vol.persistentVolumeClaim, `${who}: --out ${out} is on a persistent volume`,
			    m ? `it is on volume ${m.name}, not a PersistentVolumeClaim` : 'it is on no volume');
			const listen = flag(x, '--listen') || '';
			const lport = parseInt((/:(\d+)$/.exec(listen) || [])[1], 10);
			const cport = (main.ports || []).find((p) => p.containerPort === lport);
			check(cport, `${who}: --listen ${listen} is a declared containerPort`);
			const svc = services.find((v) => Object.entries(v.spec.selector || {})
			    .every(([k, val]) => pod.labels[k] === val));
			check(svc, `${who}: a Service selects the coordinator's pods`);
			if (svc) {
				const workerLabels = pods.filter((p) => p.role === 'worker').map((p) => p.labels);
				check(!workerLabels.some((l) => Object.entries(svc.spec.selector).every(([k, v]) => l[k] === v)),
				    `Service ${svc.metadata.name} selects no worker`);
				const sp = svc.spec.ports[0];
				const target = typeof sp.targetPort === 'string'
				    ? (main.ports || []).find((p) => p.name === sp.targetPort)
				    : (main.ports || []).find((p) => p.containerPort === (sp.targetPort || sp.port));
				check(target && target.containerPort === lport,
				    `Service ${svc.metadata.name} port ${sp.port} reaches the coordinator's --listen port ${lport}`);
				// Locally there is no kube-proxy: the worker dials the Service's port itself.
				check(sp.port === lport, `Service ${svc.metadata.name}: port ${sp.port} = targetPort (emulated without kube-proxy)`);
			}
		}
		if (pod.role === 'worker') {
			check((s.volumes || []).every((v) => !v.secret || !/coordinator/.test(v.secret.secretName)),
			    `${who}: no Secret of the coordinator's (its TLS key) in a worker's pod`);
			const connect = flag(x, '--connect') || '';
			const host = (/^[a-z+0-9]+:\/\/([^:/]+):(\d+)$/.exec(connect) || [])[1];
			const port = parseInt((/:(\d+)$/.exec(connect) || [])[1], 10);
			check(services.some((v) => v.metadata.name === host && v.spec.ports.some((p) => p.port === port)),
			    `${who}: --connect ${connect} is a Service of these manifests, at its port`);
			const rc = parseDuration(flag(x, '--reconnect'));
			check(rc !== null && rc <= 10 * 60000,
			    `${who}: --reconnect bounds the wait for a coordinator (${flag(x, '--reconnect')}, at most 10m)`);
			const rules = (pod.job.podFailurePolicy && pod.job.podFailurePolicy.rules) || [];
			check(rules.some((r) => r.action === 'FailJob' && r.onExitCodes &&
			    r.onExitCodes.operator === 'In' && r.onExitCodes.values.includes(1)),
			    `${who}: a worker that gave up on its coordinator (exit 1) fails the Job`);
			check(pod.job.completions === undefined || pod.job.completions === null,
			    `${who}: no completions: the Job completes when its workers exit 0`);
			// The drain: the seed running finishes before the kill.
			const local = cfgFile && imagePath(cfgFile);
			let st = 60000;
			if (local && fs.existsSync(local)) {
				const cfg = YAML.parse(fs.readFileSync(local, 'utf8'));
				if (cfg.seed_timeout)
					st = parseDuration(cfg.seed_timeout);
			}
			const grace = s.terminationGracePeriodSeconds === undefined ? 30 : s.terminationGracePeriodSeconds;
			check(grace * 1000 >= st + 15000,
			    `${who}: terminationGracePeriodSeconds ${grace} covers seed_timeout ${st / 1000} s + 15 s (a SIGTERM drain)`);
			const shm = (main.volumeMounts || []).find((m) => m.mountPath === '/dev/shm');
			const vol = shm && s.volumes.find((v) => v.name === shm.name);
			const lim = vol && vol.emptyDir && /^(\d+)Mi$/.exec(vol.emptyDir.sizeLimit || '');
			check(vol && vol.emptyDir && vol.emptyDir.medium === 'Memory' && lim && parseInt(lim[1], 10) >= 128,
			    `${who}: /dev/shm is an in-memory emptyDir of at least 128Mi (the embedded PostgreSQL)`);
		}
	}
}

// --- running the pods ---

const UID_GROUP = (s) => [(s.securityContext || {}).runAsUser, (s.securityContext || {}).runAsGroup,
    (s.securityContext || {}).fsGroup];

// Folders standing for a pod's volumes; shared PVC folders in `claims`.
function makeVolumes(pod, podName, root, claims) {
	const [, , fsGroup] = UID_GROUP(pod.spec);
	const vols = {};
	for (const v of pod.spec.volumes || []) {
		const dir = path.join(root, podName, v.name);
		if (v.persistentVolumeClaim) {
			const name = v.persistentVolumeClaim.claimName;
			if (!claims[name]) {
				claims[name] = path.join(root, `pvc-${name}`);
				fs.mkdirSync(claims[name], { recursive: true });
				if (fsGroup !== undefined) {
					fs.chownSync(claims[name], 0, fsGroup);
					fs.chmodSync(claims[name], 0o2775);
				}
			}
			vols[v.name] = claims[name];
			continue;
		}
		fs.mkdirSync(dir, { recursive: true });
		vols[v.name] = dir;
		if (v.emptyDir) {
			fs.chmodSync(dir, 0o777);
		} else if (v.secret) {
			const data = SECRETS[v.secret.secretName];
			if (!data)
				throw new Error(`${pod.owner}: Secret ${v.secret.secretName} is not one this test knows`);
			const items = v.secret.items || Object.keys(data).map((k) => ({ key: k, path: k }));
			for (const it of items) {
				const f = path.join(dir, it.path);
				fs.writeFileSync(f, data[it.key]);
				let mode = it.mode !== undefined ? it.mode : (v.secret.defaultMode !== undefined ? v.secret.defaultMode : 0o644);
				if (fsGroup !== undefined) {
					fs.chownSync(f, 0, fsGroup);
					mode |= 0o440;
				}
				fs.chmodSync(f, mode);
			}
			fs.chmodSync(dir, 0o755);
		} else {
			throw new Error(`${pod.owner}: volume ${v.name}: only emptyDir, secret and persistentVolumeClaim are emulated`);
		}
	}
	return vols;
}

// argv with every path on a mount replaced by its folder, and image paths by
// the repository's; a path that is on neither is a problem.
function localArgv(c, argv, vols, problems) {
	return argv.map((a, i) => {
		if (!a.startsWith('/'))
			return a;
		const m = mountFor(c, a);
		if (m) {
			if (!vols[m.name]) {
				problems.push(`${a}: mount ${m.name} names no volume of the pod`);
				return a;
			}
			return vols[m.name] + a.slice(m.mountPath.replace(/\/$/, '').length);
		}
		const img = imagePath(a);
		if (img)
			return img;
		if (i === 0)
			return a;	// an absolute program: the host's
		problems.push(`${a} (argument ${i}) is on none of ${c.name}'s volumes and not in the image`);
		return a;
	});
}

// Starts one container; resolves {code, signal, out, err, argv}.
function startContainer(pod, c, podName, vols, cms, logdir, binDir, timeoutMs) {
	const problems = [];
	const env = envOf(c, cms, podName, problems);
	const argv0 = (c.command || []).concat(c.args || []).map((a) => expand(a, env));
	const unresolved = argv0.filter((a) => /\$\([A-Za-z_]/.test(a));
	if (unresolved.length)
		problems.push(`unresolved $(VAR) in ${unresolved.join(' ')}`);
	const argv = localArgv(c, argv0, vols, problems);
	const [uid, gid, fsGroup] = UID_GROUP(pod.spec);
	const groups = [gid, fsGroup].filter((g) => g !== undefined);
	const home = path.join(logdir, `${podName}-home`);
	fs.mkdirSync(home, { recursive: true, mode: 0o777 });
	fs.chmodSync(home, 0o777);
	const penv = Object.assign({ PATH: `${binDir}:/usr/bin:/bin`, HOME: home }, env);
	const tag = `${podName}/${c.name}`;
	const out = path.join(logdir, `${podName}-${c.name}.out`), err = path.join(logdir, `${podName}-${c.name}.err`);
	const p = new Promise((resolve) => {
		if (problems.length) {
			resolve({ tag, problems, code: null, argv0 });
			return;
		}
		const ch = spawn('setpriv', [`--reuid=${uid}`, `--regid=${gid}`, `--groups=${groups.join(',')}`,
		    '--inh-caps=-all', '--', ...argv], {
			env: penv, cwd: home, stdio: ['ignore', fs.openSync(out, 'w'), fs.openSync(err, 'w')],
		});
		const timer = setTimeout(() => ch.kill('SIGKILL'), timeoutMs || RUN_TIMEOUT_MS);
		ch.on('exit', (code, signal) => {
			clearTimeout(timer);
			resolve({ tag, problems, code, signal, argv0, out: fs.readFileSync(out, 'utf8'),
			    err: fs.readFileSync(err, 'utf8') });
		});
	});
	return p;
}

// A pod: its init containers one after another, each to exit 0, then its
// first container.
async function runPod(pod, podName, root, claims, cms, binDir, timeoutMs) {
	const vols = makeVolumes(pod, podName, root, claims);
	for (const c of pod.spec.initContainers || []) {
		const r = await startContainer(pod, c, podName, vols, cms, root, binDir);
		if (!check(r.problems.length === 0 && r.code === 0, `${r.tag}: init container exits 0`,
		    r.problems.join('; ') || `exit ${r.code}: ${(r.err || '').trim()}`))
			return r;
	}
	return startContainer(pod, pod.spec.containers[0], podName, vols, cms, root, binDir, timeoutMs);
}

async function runJobPair(docs, pods, label, mutate) {
	const root = fs.mkdtempSync(path.join(os.tmpdir(), 'soak-k8s-test.cmd-'));
	fs.chmodSync(root, 0o755);
	const binDir = path.join(root, 'bin');
	fs.mkdirSync(binDir);
	fs.symlinkSync(SOAK, path.join(binDir, 'soak'));
	const cms = configMaps(docs);
	if (cms['soak-run'])
		cms['soak-run'].seeds = SEEDS;
	const claims = {};
	const coord = pods.find((p) => p.role === 'coordinator');
	const worker = pods.find((p) => p.role === 'worker');
	const cname = `${coord.owner.split('/')[1]}-cmdcheck`;
	console.log(`phase: ${label}: ${coord.owner} and ${Math.min(worker.parallelism, MAX_WORKERS)} pod(s) of ${worker.owner}, seeds ${SEEDS}`);
	const cp = runPod(coord, cname, root, claims, cms, binDir);
	const wps = [];
	for (let i = 0; i < Math.min(worker.parallelism, MAX_WORKERS); i++)
		wps.push(runPod(worker, `${worker.owner.split('/')[1]}-cmdcheck-${i}`, root, claims, cms, binDir));
	const [c, ...ws] = await Promise.all([cp, ...wps]);
	const cfgFile = cms['soak-run'].config;
	const tls = /^tls\+/.test(flag(worker.spec.containers[0].args || [], '--connect') || '');
	const bug = /reservations\/soak\.yaml$/.test(cfgFile);
	check(c.problems.length === 0, `${label}: coordinator's command and args line up`, c.problems.join('; '));
	check(c.code === (bug ? 1 : 0), `${label}: coordinator exits ${bug ? 1 : 0} (${bug ? 'the lost update found' : 'all pass'})`,
	    `exit ${c.code}${c.signal ? ` (${c.signal})` : ''}: ${(c.err || '').trim().split('\n').slice(-5).join(' | ')}`);
	if (bug)
		check(/FAIL  "items_reserved matches reservation events" broken/.test(c.out || ''),
		    `${label}: coordinator's summary names the broken invariant`);
	ws.forEach((w) => {
		check(w.problems.length === 0 && w.code === 0, `${label}: ${w.tag} exits 0 when the run is done (the Job completes)`,
		    w.problems.join('; ') || `exit ${w.code}${w.signal ? ` (${w.signal})` : ''}: ${(w.err || '').trim().split('\n').slice(-3).join(' | ')}`);
		const how = tls ? 'its TLS certificate and the shared secret' : 'the shared secret';
		check((w.err || '').includes(`trusted by ${how}`), `${label}: ${w.tag} authenticated the coordinator by ${how}`);
	});
	const outDir = Object.values(claims)[0] && path.join(Object.values(claims)[0], cname);
	const report = outDir && path.join(outDir, 'report.json');
	if (check(report && fs.existsSync(report), `${label}: report.json is on the soak-out volume (${cname}/report.json)`)) {
		const r = JSON.parse(fs.readFileSync(report, 'utf8'));
		const [a, b] = SEEDS.split('..').map((n) => parseInt(n, 10));
		const n = r.seeds && r.seeds.count;
		check(n === b - a + 1, `${label}: report.json has the ${b - a + 1} seeds of the run`, `found ${n}`);
		// The secret in nothing written or logged.
		const leak = [];
		const walk = (d) => {
			for (const e of fs.readdirSync(d, { withFileTypes: true })) {
				const f = path.join(d, e.name);
				if (e.isDirectory())
					walk(f);
				else if (e.isFile() && (fs.readFileSync(f).includes(SECRET) ||
				    fs.readFileSync(f).includes('PRIVATE KEY')))
					leak.push(f);
			}
		};
		walk(outDir);
		for (const x of [c, ...ws])
			if (`${x.out}${x.err}`.includes(SECRET) || `${x.out}${x.err}`.includes('PRIVATE KEY'))
				leak.push(`${x.tag} output`);
		check(leak.length === 0, `${label}: the secret (and any private key) is in no output file and no log`, leak.join(', '));
	}
	fs.rmSync(root, { recursive: true, force: true });
}

// One container alone, for the negative cases: {code, err}.
async function runOne(pod, label) {
	const root = fs.mkdtempSync(path.join(os.tmpdir(), 'soak-k8s-test.neg-'));
	fs.chmodSync(root, 0o755);
	const binDir = path.join(root, 'bin');
	fs.mkdirSync(binDir);
	fs.symlinkSync(SOAK, path.join(binDir, 'soak'));
	const r = await runPod(pod, `neg-${label}`, root, {}, configMaps(pod.docs), binDir, 20000);
	fs.rmSync(root, { recursive: true, force: true });
	return r;
}

// A broken manifest must fail here: each mutation, on a copy, must produce
// its problem (a check that cannot fail is no check).
async function negatives(docs) {
	const clone = () => JSON.parse(JSON.stringify(docs));
	const worker = (d) => podsOf(d).find((p) => p.role === 'worker');
	const coordinator = (d) => podsOf(d).find((p) => p.role === 'coordinator');
	const staticFails = (d, what) => {
		const before = failed, bp = passed;
		const log = console.log;
		const lines = [];
		console.log = (s) => lines.push(s);
		staticChecks(d, podsOf(d));
		console.log = log;
		const caught = failed > before;
		failed = before;
		passed = bp;
		check(caught, `negative: ${what} is caught`, 'the static checks passed it');
		if (caught)
			console.log(`  (caught by: ${lines.filter((l) => l.startsWith('FAIL')).map((l) => l.slice(6)).join('; ')})`);
	};
	let d = clone();
	flagSet(worker(d).spec.containers[0], '--reconnect', null);
	staticFails(d, 'a worker without --reconnect');
	d = clone();
	worker(d).spec.terminationGracePeriodSeconds = 30;
	staticFails(d, 'a grace period of 30 s against seed_timeout 30 s');
	d = clone();
	flagSet(coordinator(d).spec.containers[0], '--out', '/var/lib/soak/run');
	staticFails(d, '--out off the persistent volume');
	d = clone();
	d.find((o) => o.kind === 'Service').spec.ports[0].port = 7071;
	staticFails(d, 'a Service on another port than the workers dial');
	d = clone();
	coordinator(d).spec.securityContext.runAsNonRoot = false;
	staticFails(d, 'a pod not held to non-root');

	// Against the CLI: each must end the worker at once, exit 64.
	const cases = [
		['an unknown flag (--reconect)', (c) => { c.args[c.args.indexOf('--reconnect')] = '--reconect'; }, /unrecognized option/],
		['--secret-file on the Secret volume itself (mode 0440)', (c) => { flagSet(c, '--secret-file', '/etc/soak/auth/secret'); }, /is mode 0440: group and others must have no access/],
		['--secret-file at a path the init container does not fill', (c) => { flagSet(c, '--secret-file', '/run/soak/auth/token'); }, /No such file or directory/],
	];
	// Not a broken manifest: the pod as it is, with no coordinator, and a
	// --reconnect of 2s instead of 5m so that the wait ends here.
	{
		d = clone();
		const p = worker(d);
		flagSet(p.spec.containers[0], '--reconnect', '2s');
		p.docs = d;
		const r = await runOne(p, 'w');
		const text = `${(r.problems || []).join('; ')} ${r.err || ''}`;
		check(r.code === 1 && /waiting for the coordinator at .* for up to [12] s/.test(text) &&
		    /cannot dial coordinator at .*: Connection refused/.test(text),
		    'a worker whose coordinator is not there waits --reconnect, says so, and exits 1 (FailJob)',
		    `exit ${r.code}: ${text.trim().slice(0, 300)}`);
	}
	for (const [what, mut, expect] of cases) {
		d = clone();
		const p = worker(d);
		if (what.includes('Secret volume itself'))	// mounted there too, as a kubelet would
			p.spec.containers[0].volumeMounts.push({ name: 'auth-secret', mountPath: '/etc/soak/auth', readOnly: true });
		mut(p.spec.containers[0]);
		p.docs = d;
		const r = await runOne(p, 'w');
		const text = `${(r.problems || []).join('; ')} ${r.err || ''}`;
		if (check(r.code === 64 && expect.test(text), `negative: ${what} ends the worker (exit 64)`,
		    `exit ${r.code}: ${text.trim().slice(0, 300)}`))
			console.log(`  (${text.trim().split('\n')[0].replace(/\/tmp\/[^ ]*\/neg-w\/[a-z-]*/g, 'VOLUME')})`);
	}
}

function flagSet(c, name, value) {
	const i = c.args.indexOf(name);
	if (value === null)
		c.args.splice(i, 2);
	else
		c.args[i + 1] = value;
}

// image.sh's view of a container: `podman run` options and the argv the
// kubelet would exec, NUL-separated, its volumes made under root as above
// (the init container's and the main container's share them).
function podmanArgs(file, role, cname, podName, root, image) {
	const docs = load(file);
	const cms = configMaps(docs);
	if (cms['soak-run'])
		cms['soak-run'].seeds = SEEDS;
	const pod = podsOf(docs).find((p) => p.role === role);
	const c = (pod.spec.initContainers || []).concat(pod.spec.containers).find((x) => x.name === cname);
	fs.mkdirSync(root, { recursive: true });
	const claims = {};
	const vols = makeVolumes(pod, podName, root, claims);
	const problems = [];
	const env = envOf(c, cms, podName, problems);
	if (problems.length)
		throw new Error(problems.join('; '));
	const [uid, gid, fsGroup] = UID_GROUP(pod.spec);
	const sc = c.securityContext || {};
	const o = ['--user', `${uid}:${gid}`];
	if (fsGroup !== undefined)
		o.push('--group-add', String(fsGroup));
	if (sc.readOnlyRootFilesystem)
		o.push('--read-only', '--read-only-tmpfs=false');
	if (sc.allowPrivilegeEscalation === false)
		o.push('--security-opt', 'no-new-privileges');
	if (sc.capabilities && (sc.capabilities.drop || []).includes('ALL'))
		o.push('--cap-drop', 'ALL');
	for (const m of c.volumeMounts || []) {
		const v = pod.spec.volumes.find((x) => x.name === m.name);
		if (v.emptyDir && v.emptyDir.medium === 'Memory' && m.mountPath === '/dev/shm')
			o.push('--mount', `type=tmpfs,destination=/dev/shm,tmpfs-size=${v.emptyDir.sizeLimit.replace(/i$/, '').toLowerCase()}`);
		else
			o.push('--mount', `type=bind,source=${vols[m.name]},destination=${m.mountPath}${m.readOnly ? ',ro=true' : ''}`);
	}
	for (const [k, v] of Object.entries(env))
		o.push('--env', `${k}=${v}`);
	o.push(image, ...(c.command || []).concat(c.args || []).map((a) => expand(a, env)));
	process.stdout.write(o.join('\0') + '\0');
}

async function main() {
	if (process.argv[2] === '--podman') {
		podmanArgs(...process.argv.slice(3, 9));
		return;
	}
	const file = process.argv[2];
	if (!file) {
		console.error('usage: node cmdcheck.js MANIFEST.yaml [--negatives]');
		process.exit(64);
	}
	const docs = load(file);
	const pods = podsOf(docs);
	console.log(`phase: ${file}: ${pods.map((p) => p.owner).join(', ')}`);
	staticChecks(docs, pods);
	await runJobPair(docs, pods, path.basename(file, '.yaml'));
	if (process.argv.includes('--negatives'))
		await negatives(docs);
	console.log(`${passed} passed, ${failed} failed`);
	process.exitCode = failed ? 1 : 0;
}

main().catch((e) => { console.log(`FAIL: ${e.stack}`); process.exitCode = 1; });
