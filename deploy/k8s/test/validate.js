#!/usr/bin/env node
// Checks Kubernetes manifests against the Kubernetes OpenAPI schemas, strictly:
// wrong types, missing required fields and bad enum values, as kubernetes-models'
// .validate() finds them, and also every field the schema does not have.
//
//   node validate.js FILE...      (multi-document YAML; - reads stdin)
//
// kubernetes-models ships its schemas compiled into validator functions, not as
// JSON, so `additionalProperties: false` cannot be added to them.  Instead each
// document is handed to its kind's validator wrapped in a Proxy that records
// every key the validator reads: a validator reads each property its schema
// declares (and every key of a map such as labels), so a key it never read is a
// field the schema does not have — a misspelling, or a field at the wrong level.
// Prints "ok: FILE: N objects" or one line per problem; exits 1 on any problem.
'use strict';
const fs = require('fs');
const path = require('path');
const YAML = require('yaml');

// Its package exports the models, not _schemas/: found beside its index.js.
const schemaDir = path.join(path.dirname(require.resolve('kubernetes-models')), '_schemas');

function schemaFor(apiVersion, kind) {
	const [g, v] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
	const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);
	const group = g === '' ? 'Core' : cap(g.split('.')[0]);
	const name = `IoK8sApi${group}${cap(v)}${kind}`;
	const file = path.join(schemaDir, `${name}.js`);
	return fs.existsSync(file) ? require(file).validate : null;
}

const esc = (k) => String(k).replace(/~/g, '~0').replace(/\//g, '~1');

// A view of obj that adds the JSON pointer of every key read to `seen`.
function track(obj, ptr, seen) {
	return new Proxy(obj, {
		get(t, k, r) {
			const val = Reflect.get(t, k, r);
			if (typeof k !== 'string' || (Array.isArray(t) && k === 'length'))
				return val;
			const p = `${ptr}/${esc(k)}`;
			seen.add(p);
			return val !== null && typeof val === 'object' ? track(val, p, seen) : val;
		},
	});
}

// The pointers of the keys of every object in obj that the validator never read.
function unread(obj, ptr, seen, out) {
	if (obj === null || typeof obj !== 'object')
		return out;
	for (const k of Object.keys(obj)) {
		const p = `${ptr}/${esc(k)}`;
		if (!Array.isArray(obj) && !seen.has(p))
			out.push(p);
		else
			unread(obj[k], p, seen, out);
	}
	return out;
}

function checkDoc(doc) {
	const problems = [];
	if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
		return ['not a Kubernetes object (a YAML mapping with apiVersion and kind)'];
	if (typeof doc.apiVersion !== 'string' || typeof doc.kind !== 'string')
		return ['no apiVersion or kind'];
	const validate = schemaFor(doc.apiVersion, doc.kind);
	if (validate === null)
		return [`${doc.apiVersion} ${doc.kind}: no such kind in the Kubernetes schemas`];
	if (!doc.metadata || typeof doc.metadata.name !== 'string' || doc.metadata.name === '')
		problems.push('/metadata/name: required');
	const seen = new Set();
	if (!validate(track(doc, '', seen))) {
		for (const e of validate.errors || []) {
			const what = e.keyword === 'required' ? `required field ${e.params.missingProperty} missing`
			    : e.keyword === 'enum' ? `${e.message || 'not one of'} ${JSON.stringify(e.params.allowedValues)}`
			    : e.keyword === 'type' ? `must be ${e.params.type}`
			    : `${e.keyword} ${e.message || JSON.stringify(e.params)}`;
			problems.push(`${e.instancePath || '/'}: ${what}`);
		}
	}
	for (const p of unread(doc, '', seen, []))
		problems.push(`${p}: unknown field (not in the ${doc.kind} schema)`);
	return problems;
}

function main(files) {
	let bad = 0;
	if (files.length === 0) {
		console.error('usage: node validate.js FILE...');
		return 64;
	}
	for (const file of files) {
		const text = fs.readFileSync(file === '-' ? 0 : file, 'utf8');
		const docs = YAML.parseAllDocuments(text);
		let n = 0, fileBad = 0;
		docs.forEach((d, i) => {
			if (d.errors.length) {
				console.log(`${file}: document ${i + 1}: YAML: ${d.errors[0].message}`);
				fileBad++;
				return;
			}
			const obj = d.toJS({ maxAliasCount: -1 });
			if (obj === null)
				return;		// an empty document (a trailing ---)
			n++;
			const label = obj && obj.kind ? `${obj.kind}/${obj.metadata && obj.metadata.name}` : `document ${i + 1}`;
			for (const p of checkDoc(obj)) {
				console.log(`${file}: ${label}: ${p}`);
				fileBad++;
			}
		});
		if (n === 0) {
			console.log(`${file}: no Kubernetes object in it`);
			fileBad++;
		}
		if (fileBad === 0)
			console.log(`ok: ${file}: ${n} objects`);
		bad += fileBad;
	}
	return bad ? 1 : 0;
}

if (require.main === module)
	process.exitCode = main(process.argv.slice(2));
module.exports = { checkDoc };
