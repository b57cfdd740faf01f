/*
 * OpenTelemetry traces of the runs of a profile: an ExportTraceServiceRequest
 * as OTLP/protobuf (opentelemetry/proto/collector/trace/v1) or OTLP/JSON,
 * one trace per run, a span per process (exec to its last record), per
 * import and per phase of the start (interpreter start-up, until ready,
 * the first response).  Both encodings are written from one list of spans.
 */
#include "render/export/formats.h"
#include "render/export/frames.h"

#include <stdlib.h>
#include <string.h>

#include "render/export/pbuf.h"

/* Field numbers of the trace protos (trace/v1/trace.proto, common/v1/common.proto, resource/v1). */
enum {
	REQ_RESOURCE_SPANS = 1,
	RS_RESOURCE = 1,
	RS_SCOPE_SPANS = 2,
	RESOURCE_ATTRIBUTES = 1,
	SS_SCOPE = 1,
	SS_SPANS = 2,
	SCOPE_NAME = 1,
	SCOPE_VERSION = 2,
	SPAN_TRACE_ID = 1,
	SPAN_SPAN_ID = 2,
	SPAN_PARENT_SPAN_ID = 4,
	SPAN_NAME = 5,
	SPAN_KIND = 6,
	SPAN_START = 7,
	SPAN_END = 8,
	SPAN_ATTRIBUTES = 9,
	SPAN_STATUS = 15,
	STATUS_MESSAGE = 2,
	STATUS_CODE = 3,
	KV_KEY = 1,
	KV_VALUE = 2,
	ANY_STRING = 1,
	ANY_BOOL = 2,
	ANY_INT = 3,
	ANY_DOUBLE = 4,
};

#define SPAN_KIND_INTERNAL 1
#define STATUS_CODE_ERROR 2

enum attr_type { ATTR_STR, ATTR_INT, ATTR_DOUBLE, ATTR_BOOL };

struct attr {
	const char *key; /* static */
	enum attr_type type;
	char *s; /* owned, ATTR_STR */
	int64_t i;
	double d;
};

struct attrs {
	struct attr *v;
	size_t nr, alloc;
};

struct span {
	uint64_t id, parent; /* parent 0: a root */
	char *name;
	int64_t start, end; /* Unix nanoseconds */
	struct attrs attrs;
	const char *error; /* status message of a failed import; NULL */
};

struct trace {
	unsigned char id[16];
	struct span *spans;
	size_t nr, alloc;
	uint64_t next_id; /* span ids: a per-trace prefix and a counter */
};

static struct attr *attr_add(struct attrs *a, const char *key, enum attr_type type)
{
	struct attr *at;

	ALLOC_GROW(a->v, a->nr + 1, a->alloc);
	at = &a->v[a->nr++];
	memset(at, 0, sizeof(*at));
	at->key = key;
	at->type = type;
	return at;
}

static void attr_str(struct attrs *a, const char *key, const char *s)
{
	struct buf clean = BUF_INIT;

	export_add_clean(&clean, s);
	attr_add(a, key, ATTR_STR)->s = buf_detach(&clean, NULL);
}

static void attr_int(struct attrs *a, const char *key, int64_t v)
{
	attr_add(a, key, ATTR_INT)->i = v;
}

static void attr_double(struct attrs *a, const char *key, double v)
{
	attr_add(a, key, ATTR_DOUBLE)->d = v;
}

static void attr_bool(struct attrs *a, const char *key, bool v)
{
	attr_add(a, key, ATTR_BOOL)->i = v;
}

static void attrs_release(struct attrs *a)
{
	size_t i;

	for (i = 0; i < a->nr; i++)
		free(a->v[i].s);
	free(a->v);
}

static struct span *span_add(struct trace *t, uint64_t parent, const char *name, int64_t start, int64_t end)
{
	struct span *s;
	struct buf clean = BUF_INIT;

	ALLOC_GROW(t->spans, t->nr + 1, t->alloc);
	s = &t->spans[t->nr++];
	memset(s, 0, sizeof(*s));
	s->id = t->next_id++;
	s->parent = parent;
	export_add_clean(&clean, name);
	s->name = buf_detach(&clean, NULL);
	s->start = start;
	s->end = end < start ? start : end;
	return s;
}

static void trace_release(struct trace *t)
{
	size_t i;

	for (i = 0; i < t->nr; i++) {
		free(t->spans[i].name);
		attrs_release(&t->spans[i].attrs);
	}
	free(t->spans);
}

static void add_target(struct buf *out, const struct profile *p)
{
	size_t i;

	for (i = 0; i < p->target.nr; i++)
		buf_addf(out, "%s%s", i ? " " : "", p->target.v[i]);
}

/*
 * Ids are derived from the profile (its stamp, target and the run), so
 * exporting the same profile twice gives the same trace, which a backend
 * stores once.
 */
static void trace_ids(const struct profile *p, size_t run, struct trace *t)
{
	struct buf key = BUF_INIT;
	uint64_t h1, h2;
	int i;

	buf_addf(&key, "coldstart trace|%s|%zu|", p->created ? p->created : "", run);
	add_target(&key, p);
	h1 = hash_bytes(key.buf, key.len);
	buf_adds(&key, "|2");
	h2 = hash_bytes(key.buf, key.len);
	for (i = 0; i < 8; i++) {
		t->id[i] = (unsigned char)(h1 >> (56 - 8 * i));
		t->id[8 + i] = (unsigned char)(h2 >> (56 - 8 * i));
	}
	/* The high half of a span id comes from the trace, the low half counts from 1: never zero. */
	t->next_id = (h2 & UINT64_C(0xffffffff00000000)) + 1;
	buf_release(&key);
}

static const char *const flag_attrs[][2] = {
	{ "failed", "coldstart.failed" },
	{ "compiled", "coldstart.compiled" },
	{ "native", "coldstart.native" },
	{ "open", "coldstart.never_finished" },
	{ "inconsistent", "coldstart.inconsistent" },
};

static void import_attrs(const struct run *r, const struct proc *pr, int32_t v, struct attrs *a)
{
	const struct imp_node *nd = &pr->nodes[v];
	const uint32_t bits[] = { NODE_FAILED, NODE_COMPILED, NODE_NATIVE, NODE_OPEN, NODE_INCONSISTENT };
	size_t i;

	attr_str(a, "code.namespace", node_name(pr, v));
	attr_int(a, "coldstart.self_us", nd->self_us);
	attr_int(a, "coldstart.cumulative_us", nd->cum_us);
	attr_str(a, "coldstart.kind", kind_name((enum node_kind)nd->kind));
	attr_str(a, "coldstart.phase", export_node_phase(r, pr, v));
	for (i = 0; i < ARRAY_SIZE(bits); i++)
		if (nd->flags & bits[i])
			attr_bool(a, flag_attrs[i][1], true);
	if (pr->timing) {
		const struct imp_timing *tm = &pr->timing[v];

		if (tm->file)
			attr_str(a, "code.filepath", proc_str(pr, tm->file));
		if (tm->find_ns >= 0)
			attr_int(a, "coldstart.find_ns", tm->find_ns);
		if (tm->load_ns >= 0)
			attr_int(a, "coldstart.load_ns", tm->load_ns);
		if (tm->exec_ns >= 0)
			attr_int(a, "coldstart.exec_ns", tm->exec_ns);
		if (tm->compile_ns >= 0)
			attr_int(a, "coldstart.compile_ns", tm->compile_ns);
		if (tm->cpu_ns >= 0)
			attr_int(a, "coldstart.cpu_ns", tm->cpu_ns);
	}
}

/* The spans of one process: itself under parent, its imports under it. */
static uint64_t add_proc(struct trace *t, const struct run *r, size_t idx, int64_t origin, uint64_t parent)
{
	const struct proc *pr = &r->procs[idx];
	const struct proc *main = &r->procs[0];
	int64_t *start = xmalloc(st_mult(pr->nr_nodes + 1, sizeof(*start)));
	int64_t *end = xmalloc(st_mult(pr->nr_nodes + 1, sizeof(*end)));
	uint64_t *ids = xmalloc(st_mult(pr->nr_nodes + 1, sizeof(*ids)));
	int32_t *order = xmalloc(st_mult(pr->nr_nodes + 1, sizeof(*order)));
	int32_t *up = xmalloc(st_mult(pr->nr_nodes + 1, sizeof(*up)));
	struct buf label = BUF_INIT;
	int64_t base = origin, extent, pend;
	struct span *ps;
	uint64_t id;
	size_t n, k, self;

	/* Every process of a run shares CLOCK_MONOTONIC: offsets from the main process are exact. */
	if (pr->start_ns >= 0 && main->start_ns >= 0)
		base = origin + (pr->start_ns - main->start_ns);
	extent = export_layout(pr, true, start, end);
	pend = base + extent;
	if (pr->start_ns >= 0 && pr->end_ns > pr->start_ns)
		pend = base + (pr->end_ns - pr->start_ns) > pend ? base + (pr->end_ns - pr->start_ns) : pend;
	if (!idx && r->wall_us > 0 && origin + r->wall_us * 1000 > pend)
		pend = origin + r->wall_us * 1000;
	export_proc_label(pr, idx, &label);
	ps = span_add(t, parent, label.buf, base, pend);
	self = t->nr - 1;
	id = ps->id;
	if (pr->pid >= 0)
		attr_int(&ps->attrs, "process.pid", pr->pid);
	if (pr->ppid > 0)
		attr_int(&ps->attrs, "process.parent_pid", pr->ppid);
	if (pr->argv)
		attr_str(&ps->attrs, "process.command_line", pr->argv);
	if (pr->role)
		attr_str(&ps->attrs, "coldstart.role", pr->role);
	attr_str(&ps->attrs, "coldstart.origin", proc_origin_name(pr->origin));
	attr_int(&ps->attrs, "coldstart.imports", (int64_t)pr->nr_nodes);
	attr_int(&ps->attrs, "coldstart.import_us", proc_import_total_us(pr, true));
	if (pr->cpu_ns >= 0)
		attr_int(&ps->attrs, "coldstart.cpu_ns", pr->cpu_ns);

	if (pr->tracer_ns >= 0 && pr->start_ns >= 0 && pr->tracer_ns > pr->start_ns && pr->origin == ORIGIN_EXEC)
		span_add(t, id, "interpreter start-up", base, base + (pr->tracer_ns - pr->start_ns));
	if (!idx) {
		int64_t ready_ns = run_ready_ns(r);

		if (r->ready_us >= 0) {
			int64_t ready = origin + r->ready_us * 1000;

			if (ready_ns >= 0 && main->start_ns >= 0)
				ready = origin + (ready_ns - main->start_ns);
			span_add(t, id, "until ready", origin, ready);
			if (r->first_response_us >= 0)
				ready += r->first_response_us * 1000;
			if (r->first_response_us >= 0)
				span_add(t, id, "first response", ready - r->first_response_us * 1000, ready);
			/*
			 * The wall time is coldstart's clock and readiness the tracer's:
			 * the process's span covers both.
			 */
			if (ready > t->spans[self].end)
				t->spans[self].end = ready;
		}
	}

	n = export_preorder(pr, order, up);
	for (k = 0; k < n; k++) {
		int32_t v = order[k];
		struct span *s;
		struct buf name = BUF_INIT;

		buf_addf(&name, "import %s", node_name(pr, v));
		s = span_add(t, up[v] >= 0 ? ids[up[v]] : id, name.buf, base + start[v], base + end[v]);
		buf_release(&name);
		ids[v] = s->id;
		import_attrs(r, pr, v, &s->attrs);
		if (pr->nodes[v].flags & NODE_FAILED)
			s->error = "the import raised";
	}
	buf_release(&label);
	free(start);
	free(end);
	free(ids);
	free(order);
	free(up);
	return id;
}

/* The span of the process whose pid is ppid among the first nr, else the main process's. */
static uint64_t parent_proc(const struct run *r, size_t nr, const uint64_t *proc_ids, long ppid)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (r->procs[i].pid > 0 && r->procs[i].pid == ppid)
			return proc_ids[i];
	return proc_ids[0];
}

static void build_trace(const struct profile *p, size_t ri, int64_t origin, struct trace *t)
{
	const struct run *r = &p->runs[ri];
	uint64_t *proc_ids = xmalloc(st_mult(r->nr_procs + 1, sizeof(*proc_ids)));
	size_t i;

	trace_ids(p, ri, t);
	for (i = 0; i < r->nr_procs; i++)
		proc_ids[i] = add_proc(t, r, i, origin, i ? parent_proc(r, i, proc_ids, r->procs[i].ppid) : 0);
	if (r->nr_procs) {
		struct attrs *a = &t->spans[0].attrs;

		attr_int(a, "coldstart.run", (int64_t)ri + 1);
		attr_bool(a, "coldstart.warmup", r->warmup);
		attr_str(a, "coldstart.status", run_status_name(r->status));
		if (r->status == RUN_EXITED)
			attr_int(a, "process.exit.code", r->exit_code);
		if (r->wall_us >= 0)
			attr_int(a, "coldstart.wall_us", r->wall_us);
		if (r->ready_us >= 0)
			attr_int(a, "coldstart.ready_us", r->ready_us);
		if (r->first_response_us >= 0)
			attr_int(a, "coldstart.first_response_us", r->first_response_us);
		if (r->maxrss_kb >= 0)
			attr_int(a, "coldstart.max_rss_bytes", r->maxrss_kb * 1024);
		if (r->user_us >= 0 && r->sys_us >= 0)
			attr_int(a, "coldstart.cpu_us", r->user_us + r->sys_us);
	}
	free(proc_ids);
}

static void resource_attrs(const struct profile *p, const struct export_opts *o, struct attrs *a)
{
	struct buf b = BUF_INIT;
	const struct run *r = NULL;
	size_t i;

	for (i = 0; i < p->nr_runs && !r; i++)
		if (p->runs[i].nr_procs)
			r = &p->runs[i];
	if (o->service && *o->service) {
		buf_adds(&b, o->service);
	} else if (p->target.nr) {
		/* The script or module a Python target runs, else the program. */
		const char *name = p->target.v[0];

		for (i = 1; i < p->target.nr; i++)
			if (p->target.v[i][0] != '-' || !strcmp(p->target.v[i - 1], "-m")) {
				name = p->target.v[i];
				break;
			}
		if (strcmp(name, "-m") && strrchr(name, '/'))
			name = strrchr(name, '/') + 1;
		buf_adds(&b, name);
	} else {
		buf_adds(&b, "coldstart");
	}
	attr_str(a, "service.name", b.buf);
	buf_reset(&b);
	if (r && r->procs[0].pid >= 0)
		attr_int(a, "process.pid", r->procs[0].pid);
	add_target(&b, p);
	attr_str(a, "process.command_line", b.buf);
	if (p->python)
		attr_str(a, "process.executable.path", p->python);
	attr_str(a, "process.runtime.name", "CPython");
	if (p->python_version)
		attr_str(a, "process.runtime.version", p->python_version);
	attr_str(a, "telemetry.sdk.name", "coldstart");
	attr_str(a, "telemetry.sdk.language", "c");
	attr_str(a, "telemetry.sdk.version", p->tool_version ? p->tool_version : COLDSTART_VERSION);
	if (p->command)
		attr_str(a, "coldstart.command", p->command);
	if (p->limits.cpus > 0)
		attr_double(a, "coldstart.limits.cpus", p->limits.cpus);
	if (p->limits.memory > 0)
		attr_int(a, "coldstart.limits.memory_bytes", p->limits.memory);
	if (p->limits.pids > 0)
		attr_int(a, "coldstart.limits.pids", p->limits.pids);
	if (p->limits.preset)
		attr_str(a, "coldstart.limits.preset", p->limits.preset);
	buf_reset(&b);
	limits_describe(&p->limits, &b);
	attr_str(a, "coldstart.limits", b.buf);
	buf_release(&b);
}

/*
 * The traces to write: the run asked for, or every run with a process.
 * Runs follow each other and the profile is stamped (to the second) when
 * written, so run i is placed to end where run i + 1 starts and the last
 * one at the stamp; within a run every time is exact.
 */
static int build_all(const struct profile *p, const struct export_opts *o, struct trace **out, size_t *nr,
		     struct buf *err)
{
	int64_t created = export_created_unix_ns(p), cursor;
	size_t i, lo = 0, hi = p->nr_runs;
	struct trace *ts;

	if (o->run >= 0) {
		if (!export_pick_run(p, o, err))
			return -1;
		lo = (size_t)o->run;
		hi = lo + 1;
	} else if (!export_pick_run(p, o, err)) {
		return -1;
	}
	ts = xcalloc(hi - lo + 1, sizeof(*ts));
	*nr = 0;
	cursor = created > 0 ? created : 0;
	/* A run sent as it ends knows when it began. */
	if (o->origin_unix_ns > 0)
		cursor = o->origin_unix_ns + (p->runs[hi - 1].wall_us > 0 ? p->runs[hi - 1].wall_us * 1000 : 0);
	for (i = hi; i-- > lo;) {
		const struct run *r = &p->runs[i];

		if (!r->nr_procs)
			continue;
		if (r->wall_us > 0)
			cursor -= r->wall_us * 1000;
		build_trace(p, i, cursor, &ts[*nr]);
		(*nr)++;
	}
	*out = ts;
	return 0;
}

static void hex(struct buf *out, const unsigned char *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		buf_addch(out, digits[b[i] >> 4]);
		buf_addch(out, digits[b[i] & 15]);
	}
}

static void id_bytes(uint64_t id, unsigned char b[8])
{
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (unsigned char)(id >> (56 - 8 * i));
}

static void pb_attrs(struct buf *out, uint32_t field, const struct attrs *a)
{
	size_t i;

	for (i = 0; i < a->nr; i++) {
		const struct attr *at = &a->v[i];
		size_t kv = pb_open(out), val;

		pb_str(out, KV_KEY, at->key);
		val = pb_open(out);
		switch (at->type) {
		case ATTR_STR: pb_str(out, ANY_STRING, at->s); break;
		case ATTR_INT: pb_int(out, ANY_INT, at->i); break;
		case ATTR_DOUBLE: pb_double(out, ANY_DOUBLE, at->d); break;
		case ATTR_BOOL: pb_uint(out, ANY_BOOL, (uint64_t)at->i); break;
		}
		pb_close(out, KV_VALUE, val);
		pb_close(out, field, kv);
	}
}

static void json_attrs(struct buf *out, const struct attrs *a)
{
	size_t i;

	buf_adds(out, "[");
	for (i = 0; i < a->nr; i++) {
		const struct attr *at = &a->v[i];

		buf_adds(out, i ? ",{\"key\":" : "{\"key\":");
		export_add_json(out, at->key);
		buf_adds(out, ",\"value\":{");
		switch (at->type) {
		case ATTR_STR:
			buf_adds(out, "\"stringValue\":");
			export_add_json(out, at->s);
			break;
		case ATTR_INT: buf_addf(out, "\"intValue\":\"%lld\"", (long long)at->i); break;
		case ATTR_DOUBLE: buf_addf(out, "\"doubleValue\":%.17g", at->d); break;
		case ATTR_BOOL: buf_addf(out, "\"boolValue\":%s", at->i ? "true" : "false"); break;
		}
		buf_adds(out, "}}");
	}
	buf_adds(out, "]");
}

static void write_pb(const struct attrs *res, const struct trace *ts, size_t nr, struct buf *out)
{
	size_t rs = pb_open(out), ss, scope, i, k;

	ss = pb_open(out);
	pb_attrs(out, RESOURCE_ATTRIBUTES, res);
	pb_close(out, RS_RESOURCE, ss);
	ss = pb_open(out);
	scope = pb_open(out);
	pb_str(out, SCOPE_NAME, "coldstart");
	pb_str(out, SCOPE_VERSION, COLDSTART_VERSION);
	pb_close(out, SS_SCOPE, scope);
	for (i = 0; i < nr; i++)
		for (k = 0; k < ts[i].nr; k++) {
			const struct span *s = &ts[i].spans[k];
			unsigned char b[8];
			size_t m = pb_open(out);

			pb_bytes(out, SPAN_TRACE_ID, ts[i].id, 16);
			id_bytes(s->id, b);
			pb_bytes(out, SPAN_SPAN_ID, b, 8);
			if (s->parent) {
				id_bytes(s->parent, b);
				pb_bytes(out, SPAN_PARENT_SPAN_ID, b, 8);
			}
			pb_str(out, SPAN_NAME, s->name);
			pb_uint(out, SPAN_KIND, SPAN_KIND_INTERNAL);
			pb_fixed64(out, SPAN_START, (uint64_t)s->start);
			pb_fixed64(out, SPAN_END, (uint64_t)s->end);
			pb_attrs(out, SPAN_ATTRIBUTES, &s->attrs);
			if (s->error) {
				size_t st = pb_open(out);

				pb_str(out, STATUS_MESSAGE, s->error);
				pb_uint(out, STATUS_CODE, STATUS_CODE_ERROR);
				pb_close(out, SPAN_STATUS, st);
			}
			pb_close(out, SS_SPANS, m);
		}
	pb_close(out, RS_SCOPE_SPANS, ss);
	pb_close(out, REQ_RESOURCE_SPANS, rs);
}

static void write_json(const struct attrs *res, const struct trace *ts, size_t nr, struct buf *out)
{
	size_t i, k;
	bool first = true;

	buf_adds(out, "{\"resourceSpans\":[{\"resource\":{\"attributes\":");
	json_attrs(out, res);
	buf_adds(out, "},\"scopeSpans\":[{\"scope\":{\"name\":\"coldstart\",\"version\":\"" COLDSTART_VERSION "\"},"
		      "\"spans\":[");
	for (i = 0; i < nr; i++)
		for (k = 0; k < ts[i].nr; k++) {
			const struct span *s = &ts[i].spans[k];
			unsigned char b[8];

			buf_adds(out, first ? "\n{\"traceId\":\"" : ",\n{\"traceId\":\"");
			first = false;
			hex(out, ts[i].id, 16);
			buf_adds(out, "\",\"spanId\":\"");
			id_bytes(s->id, b);
			hex(out, b, 8);
			buf_adds(out, "\"");
			if (s->parent) {
				buf_adds(out, ",\"parentSpanId\":\"");
				id_bytes(s->parent, b);
				hex(out, b, 8);
				buf_adds(out, "\"");
			}
			buf_adds(out, ",\"name\":");
			export_add_json(out, s->name);
			buf_addf(out,
				 ",\"kind\":%d,\"startTimeUnixNano\":\"%lld\",\"endTimeUnixNano\":\"%lld\","
				 "\"attributes\":",
				 SPAN_KIND_INTERNAL, (long long)s->start, (long long)s->end);
			json_attrs(out, &s->attrs);
			if (s->error) {
				buf_adds(out, ",\"status\":{\"message\":");
				export_add_json(out, s->error);
				buf_addf(out, ",\"code\":%d}", STATUS_CODE_ERROR);
			}
			buf_adds(out, "}");
		}
	buf_adds(out, "\n]}]}]}\n");
}

static int export_otlp_as(const struct profile *p, const struct export_opts *o, bool json, struct buf *out,
			  struct buf *err)
{
	struct attrs res = { NULL, 0, 0 };
	struct trace *ts = NULL;
	size_t nr = 0, i;

	if (build_all(p, o, &ts, &nr, err) < 0)
		return -1;
	resource_attrs(p, o, &res);
	if (json)
		write_json(&res, ts, nr, out);
	else
		write_pb(&res, ts, nr, out);
	for (i = 0; i < nr; i++)
		trace_release(&ts[i]);
	free(ts);
	attrs_release(&res);
	return 0;
}

int export_otlp(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err)
{
	return export_otlp_as(p, o, false, out, err);
}

int export_otlp_json(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err)
{
	return export_otlp_as(p, o, true, out, err);
}
