// Decodes and verifies an OTLP trace request with the official OpenTelemetry
// protobuf bindings (@opentelemetry/otlp-transformer's generated root.js), then
// checks what the bindings cannot: every parent link resolves inside its
// trace, and an import's span lies inside its parent's.
//
// usage: node otlp_check.cjs FILE protobuf|json [REMOTE_PARENT]
// REMOTE_PARENT: a span id (hex) of another service that a root may name as
// its parent (a trace continued from an incoming request's context).
// Prints one JSON object: {ok, error, traces, spans, roots, names, resource, spans_list}.
'use strict';
const fs = require('fs');
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const Req = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

function fail(msg) {
	process.stdout.write(JSON.stringify({ ok: false, error: msg }) + '\n');
	process.exit(1);
}

const [file, form, remoteParent] = process.argv.slice(2);
const data = fs.readFileSync(file);
let msg;
if (form === 'protobuf') {
	msg = Req.decode(data);
} else if (form === 'json') {
	// OTLP/JSON differs from protobuf's JSON mapping: ids are hex, not base64.
	const obj = JSON.parse(data.toString('utf8'));
	const hexOk = (s, n) => typeof s === 'string' && new RegExp(`^[0-9a-f]{${n}}$`).test(s);
	for (const rs of obj.resourceSpans || [])
		for (const ss of rs.scopeSpans || [])
			for (const sp of ss.spans || []) {
				if (!hexOk(sp.traceId, 32) || !hexOk(sp.spanId, 16) ||
				    (sp.parentSpanId !== undefined && !hexOk(sp.parentSpanId, 16)))
					fail(`ids not lowercase hex in span ${sp.name}`);
				if (typeof sp.startTimeUnixNano !== 'string' || !/^[0-9]+$/.test(sp.startTimeUnixNano))
					fail(`startTimeUnixNano not a decimal string in span ${sp.name}`);
				sp.traceId = Buffer.from(sp.traceId, 'hex');
				sp.spanId = Buffer.from(sp.spanId, 'hex');
				if (sp.parentSpanId !== undefined)
					sp.parentSpanId = Buffer.from(sp.parentSpanId, 'hex');
			}
	// fromObject reads int64 decimal strings as protobuf's JSON mapping does; the message is verified below.
	msg = Req.fromObject(obj);
} else {
	fail('form must be protobuf or json');
}
const err = Req.verify(msg);
if (err)
	fail('verify: ' + err);
const obj = Req.toObject(msg, { longs: String, bytes: String, enums: Number, defaults: false });
const hex = (b64) => Buffer.from(b64 || '', 'base64').toString('hex');
const attrs = (list) => {
	const out = {};
	for (const kv of list || []) {
		const v = kv.value || {};
		out[kv.key] = v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue;
	}
	return out;
};
const spans = [];
let resource = {};
for (const rs of obj.resourceSpans || []) {
	resource = attrs(rs.resource && rs.resource.attributes);
	for (const ss of rs.scopeSpans || [])
		for (const sp of ss.spans || [])
			spans.push({
				trace: hex(sp.traceId), id: hex(sp.spanId), parent: hex(sp.parentSpanId),
				name: sp.name, start: BigInt(sp.startTimeUnixNano), end: BigInt(sp.endTimeUnixNano),
				attrs: attrs(sp.attributes), status: sp.status ? sp.status.code || 0 : 0,
			});
}
const byId = new Map();
for (const s of spans) {
	if (s.trace.length !== 32 || /^0+$/.test(s.trace)) fail(`bad trace id on ${s.name}`);
	if (s.id.length !== 16 || /^0+$/.test(s.id)) fail(`bad span id on ${s.name}`);
	const key = s.trace + '/' + s.id;
	if (byId.has(key)) fail(`span id ${s.id} twice`);
	byId.set(key, s);
}
let roots = 0;
for (const s of spans) {
	if (s.end < s.start) fail(`span ${s.name} ends before it starts`);
	if (!s.parent || (remoteParent && s.parent === remoteParent)) { roots++; continue; }
	const p = byId.get(s.trace + '/' + s.parent);
	if (!p) fail(`parent ${s.parent} of ${s.name} not in its trace`);
	if (s.start < p.start) fail(`span ${s.name} starts before its parent ${p.name}`);
	// A child process may outlive its parent; everything else nests.
	if (s.attrs['process.pid'] === undefined && s.end > p.end)
		fail(`span ${s.name} ends after its parent ${p.name}`);
}
const traces = new Set(spans.map((s) => s.trace)).size;
process.stdout.write(JSON.stringify({
	ok: true, traces, roots, spans: spans.length, resource,
	spans_list: spans.map((s) => ({ ...s, start: s.start.toString(), end: s.end.toString() })),
}) + '\n');
