/*
 * The profile's JSON form (docs/profile-format.md): a streaming writer that
 * flushes through zlib (gzip when the name ends in .gz) and a reader built on
 * jansson.  Nodes are written children first, as compact arrays.
 */
#include "profile.h"

#include "parallel.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <time.h>
#include <stdlib.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define FLUSH_AT (1u << 20)

struct jw {
	struct buf *out;
	gzFile gz; /* NULL: everything stays in out */
	int failed;
};

static const char *const node_fields[] = {
	"name", "depth", "parent", "self_us", "cum_us", "flags", "kind",
};

static const char *const timing_fields[] = {
	"start_ns", "end_ns", "find_ns", "load_ns", "exec_ns", "compile_ns",
	"rss_start_kb", "rss_end_kb", "file",
};

static const char *const flag_names[] = {
	"cached", "failed", "startup", "trace_only", "inconsistent", "open",
	"compiled", "native", "negative",
};

static void jw_write(struct jw *w, const char *text, size_t len)
{
	if (len && gzwrite(w->gz, text, (unsigned)len) != (int)len)
		w->failed = 1;
}

/*
 * Writes out what has piled up.  Until the end (force) the last byte stays
 * in the buffer: it may be the comma that jw_close takes back.
 */
static void jw_flush(struct jw *w, int force)
{
	char last;

	if (!w->gz || (!force && w->out->len < FLUSH_AT) || !w->out->len)
		return;
	if (force) {
		jw_write(w, w->out->buf, w->out->len);
		buf_reset(w->out);
		return;
	}
	last = w->out->buf[w->out->len - 1];
	jw_write(w, w->out->buf, w->out->len - 1);
	buf_reset(w->out);
	buf_addch(w->out, last);
}

/* Appends text (its last byte kept back like jw_flush does). */
static void jw_put(struct jw *w, const char *text, size_t len)
{
	if (!len)
		return;
	if (!w->gz) {
		buf_add(w->out, text, len);
		return;
	}
	jw_flush(w, 1);
	jw_write(w, text, len - 1);
	buf_addch(w->out, text[len - 1]);
}

static void jw_key(struct jw *w, const char *k)
{
	buf_add_json_str(w->out, k, strlen(k));
	buf_addch(w->out, ':');
}

static void jw_str(struct jw *w, const char *s)
{
	if (s)
		buf_add_json_str(w->out, s, strlen(s));
	else
		buf_adds(w->out, "null");
}

static void jw_kv_str(struct jw *w, const char *k, const char *v)
{
	jw_key(w, k);
	jw_str(w, v);
	buf_addch(w->out, ',');
}

static void jw_kv_int(struct jw *w, const char *k, int64_t v)
{
	jw_key(w, k);
	buf_add_i64(w->out, v);
	buf_addch(w->out, ',');
}

/* Drops a trailing comma before a closing bracket. */
static void jw_close(struct jw *w, char c)
{
	if (w->out->len && w->out->buf[w->out->len - 1] == ',')
		w->out->len--;
	buf_addch(w->out, c);
}

static void write_names(struct jw *w, const char *key, const char *const *v, size_t nr)
{
	size_t i;

	jw_key(w, key);
	buf_addch(w->out, '[');
	for (i = 0; i < nr; i++) {
		jw_str(w, v[i]);
		buf_addch(w->out, ',');
	}
	jw_close(w, ']');
	buf_addch(w->out, ',');
}

static void write_limits(struct jw *w, const struct limits *l)
{
	jw_key(w, "limits");
	buf_addch(w->out, '{');
	jw_key(w, "cpus");
	buf_addf(w->out, "%.6g,", l->cpus);
	jw_kv_int(w, "memory", l->memory);
	jw_kv_int(w, "swap", l->swap);
	jw_kv_int(w, "pids", l->pids);
	jw_kv_str(w, "cpuset", l->cpuset);
	jw_kv_str(w, "preset", l->preset);
	jw_kv_str(w, "backend", l->backend);
	jw_close(w, '}');
	buf_addch(w->out, ',');
}

/*
 * Length of the pool string at off when it can go into JSON as it is, or
 * SIZE_MAX when it holds a byte that needs escaping.  One pass finds both:
 * the terminating NUL is a control byte like the ones that need escaping.
 */
static size_t plain_json_len(const struct buf *pool, uint32_t off)
{
	const char *s = pool->buf + off, *p = s, *end = pool->buf + pool->len;

#ifdef __SSE2__
	for (; end - p >= 16; p += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		/* Unsigned v <= 0x1f (the NUL too), '"', '\\', DEL. */
		__m128i hit = _mm_or_si128(
			_mm_or_si128(_mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f)),
				     _mm_cmpeq_epi8(v, _mm_set1_epi8('"'))),
			_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')), _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f))));
		unsigned m = (unsigned)_mm_movemask_epi8(hit);

		if (m) {
			p += __builtin_ctz(m);
			return *p ? SIZE_MAX : (size_t)(p - s);
		}
	}
#endif
	for (; p < end; p++) {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c == '"' || c == '\\' || c == 0x7f)
			return c ? SIZE_MAX : (size_t)(p - s);
	}
	return (size_t)(p - s);
}

/* How a node's array ends, by kind: ,"app"], */
struct kind_tail {
	char text[24];
	size_t len;
};

static void kind_tails(struct kind_tail *t)
{
	int k;

	for (k = 0; k <= KIND__COUNT; k++) {
		int n = snprintf(t[k].text, sizeof(t[k].text), ",\"%s\"],", kind_name((enum node_kind)k));

		t[k].len = (size_t)n;
	}
}

/* One node as [name,depth,parent,self,cum,flags,"kind"], written in place. */
static void write_node(struct jw *w, const struct proc *pr, const struct imp_node *nd, int64_t parent,
		       const struct kind_tail *tails)
{
	size_t len = plain_json_len(&pr->names, nd->name);
	const struct kind_tail *tail = &tails[nd->kind < KIND__COUNT ? nd->kind : KIND__COUNT];
	bool plain = len != SIZE_MAX;
	char *q;

	if (!plain) {
		/* Rare: a name that needs escaping takes the general path. */
		buf_addch(w->out, '[');
		buf_add_json_str(w->out, proc_str(pr, nd->name), strlen(proc_str(pr, nd->name)));
		len = 0;
	}
	/* Five numbers of at most 20 digits and a sign, four commas, the rest. */
	if (buf_avail(w->out) < len + 5 * 21 + 4 + 3 + sizeof(tail->text))
		buf_grow(w->out, len + 5 * 21 + 4 + 3 + sizeof(tail->text));
	q = w->out->buf + w->out->len;
	if (plain) {
		*q++ = '[';
		*q++ = '"';
		memcpy(q, proc_str(pr, nd->name), len);
		q += len;
		*q++ = '"';
	}
	*q++ = ',';
	q = put_i64(q, nd->depth);
	*q++ = ',';
	q = put_i64(q, parent);
	*q++ = ',';
	q = put_i64(q, nd->self_us);
	*q++ = ',';
	q = put_i64(q, nd->cum_us);
	*q++ = ',';
	q = put_i64(q, nd->flags);
	memcpy(q, tail->text, sizeof(tail->text));
	q += tail->len;
	*q = '\0';
	w->out->len = (size_t)(q - w->out->buf);
	if (w->out->len >= FLUSH_AT)
		jw_flush(w, 0);
}

/*
 * Nodes per thread and round.  Below this a thread costs more than it saves;
 * above it the rounds' buffers (about 50 bytes a node) grow for nothing.
 */
#define NODES_PER_RANGE 32768

/* i through one of write_order's maps (order, newidx); NULL maps i to itself. */
static inline int32_t map_index(const int32_t *map, int32_t i)
{
	return map ? map[i] : i;
}

/* Formats nodes in write_order, a round of consecutive ranges in parallel. */
struct node_job {
	const struct proc *pr;
	const int32_t *order, *newidx;
	const struct kind_tail *tails;
	size_t base; /* the round's first position in write order */
	struct buf out[PARALLEL_MAX]; /* each slot's text, reused round after round */
};

/* The node written i-th, with its parent's position in the written array. */
static void write_node_at(struct jw *w, const struct node_job *job, size_t i)
{
	const struct imp_node *nd = &job->pr->nodes[map_index(job->order, (int32_t)i)];

	write_node(w, job->pr, nd, nd->parent >= 0 ? map_index(job->newidx, nd->parent) : -1, job->tails);
}

static void format_nodes(void *ctx, size_t begin, size_t end, unsigned slot)
{
	struct node_job *job = ctx;
	/* A copy on this thread's stack: the slots' structs share cache lines. */
	struct buf out = job->out[slot];
	struct jw w = { &out, NULL, 0 };
	size_t i;

	buf_reset(&out);
	for (i = job->base + begin; i < job->base + end; i++)
		write_node_at(&w, job, i);
	job->out[slot] = out;
}

static void write_nodes(struct jw *w, const struct proc *pr, const int32_t *order, const int32_t *newidx,
			size_t n)
{
	struct kind_tail tails[KIND__COUNT + 1];
	struct node_job job = { .pr = pr, .order = order, .newidx = newidx, .tails = tails };
	unsigned nr = parallel_ranges(n, NODES_PER_RANGE), slot;
	size_t i;

	kind_tails(tails);
	if (nr == 1) {
		for (i = 0; i < n; i++)
			write_node_at(w, &job, i);
		return;
	}
	for (slot = 0; slot < nr; slot++)
		buf_init(&job.out[slot], 0);
	for (job.base = 0; job.base < n; job.base += nr * NODES_PER_RANGE) {
		size_t count = n - job.base < nr * NODES_PER_RANGE ? n - job.base : nr * NODES_PER_RANGE;

		parallel_for(count, nr, format_nodes, &job);
		for (slot = 0; slot < nr; slot++)
			jw_put(w, job.out[slot].buf, job.out[slot].len);
	}
	for (slot = 0; slot < nr; slot++)
		buf_release(&job.out[slot]);
}

/*
 * The order nodes are written in: children before their parent, siblings in
 * import order.  A tree from the parser is already laid out so (and then
 * order and newidx stay NULL: written as it is); any other tree gets a
 * post-order walk, order[i] being the node written i-th and newidx its
 * inverse.
 */
static size_t write_order(const struct proc *pr, int32_t **order_out, int32_t **newidx_out)
{
	int32_t *order, *newidx, k;
	size_t n = 0, i;

	*order_out = *newidx_out = NULL;
	if (proc_children_first(pr))
		return pr->nr_nodes;
	order = xmalloc(st_mult(pr->nr_nodes ? pr->nr_nodes : 1, sizeof(*order)));
	newidx = xmalloc(st_mult(pr->nr_nodes ? pr->nr_nodes : 1, sizeof(*newidx)));
	for (i = 0; i < pr->nr_nodes; i++)
		newidx[i] = -1;
	k = pr->first_root;
	while (k >= 0) {
		while (pr->nodes[k].first_child >= 0)
			k = pr->nodes[k].first_child;
		/* k has no children left to visit: write it, then its next sibling's subtree or its parent. */
		for (;;) {
			newidx[k] = (int32_t)n;
			order[n++] = k;
			if (pr->nodes[k].next_sibling >= 0) {
				k = pr->nodes[k].next_sibling;
				break;
			}
			k = pr->nodes[k].parent;
			if (k < 0)
				break;
		}
	}
	*order_out = order;
	*newidx_out = newidx;
	return n;
}

static void write_proc(struct jw *w, const struct proc *pr)
{
	int32_t *order, *newidx;
	size_t n = write_order(pr, &order, &newidx), i;

	buf_addch(w->out, '{');
	jw_kv_int(w, "pid", pr->pid);
	jw_kv_int(w, "ppid", pr->ppid);
	jw_kv_str(w, "argv", pr->argv);
	jw_kv_int(w, "start_ns", pr->start_ns);
	jw_kv_int(w, "end_ns", pr->end_ns);
	jw_key(w, "nodes");
	buf_addch(w->out, '[');
	write_nodes(w, pr, order, newidx, n);
	jw_close(w, ']');
	buf_addch(w->out, ',');
	if (pr->timing) {
		jw_key(w, "timing");
		buf_addch(w->out, '[');
		for (i = 0; i < n; i++) {
			const struct imp_timing *t = &pr->timing[map_index(order, (int32_t)i)];

			buf_addf(w->out, "[%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,",
				 (long long)t->start_ns, (long long)t->end_ns, (long long)t->find_ns,
				 (long long)t->load_ns, (long long)t->exec_ns, (long long)t->compile_ns,
				 (long long)t->rss_start_kb, (long long)t->rss_end_kb);
			if (t->file)
				jw_str(w, proc_str(pr, t->file));
			else
				buf_adds(w->out, "null");
			buf_adds(w->out, "],");
			jw_flush(w, 0);
		}
		jw_close(w, ']');
		buf_addch(w->out, ',');
	}
	if (pr->nr_events) {
		jw_key(w, "events");
		buf_addch(w->out, '[');
		for (i = 0; i < pr->nr_events; i++) {
			const struct proc_event *e = &pr->events[i];

			buf_addch(w->out, '[');
			buf_add_i64(w->out, e->t_ns);
			buf_addch(w->out, ',');
			jw_str(w, proc_str(pr, e->name));
			buf_addch(w->out, ',');
			jw_str(w, proc_str(pr, e->detail));
			buf_addch(w->out, ',');
			buf_add_i64(w->out, e->node < 0 ? -1 : map_index(newidx, e->node));
			buf_adds(w->out, "],");
			jw_flush(w, 0);
		}
		jw_close(w, ']');
		buf_addch(w->out, ',');
	}
	if (pr->timeline) {
		jw_key(w, "timeline");
		timeline_to_json(pr->timeline, w->out);
		buf_addch(w->out, ',');
		jw_flush(w, 0);
	}
	jw_close(w, '}');
	free(order);
	free(newidx);
}

static void write_cg(struct jw *w, const struct cg_figures *cg)
{
	jw_key(w, "cgroup");
	if (!cg->has) {
		buf_adds(w->out, "null,");
		return;
	}
	buf_addch(w->out, '{');
	jw_kv_int(w, "cpu_usage_us", cg->cpu_usage_us);
	jw_kv_int(w, "nr_periods", cg->nr_periods);
	jw_kv_int(w, "nr_throttled", cg->nr_throttled);
	jw_kv_int(w, "throttled_us", cg->throttled_us);
	jw_kv_int(w, "memory_peak", cg->memory_peak);
	jw_kv_int(w, "oom_kills", cg->oom_kills);
	jw_close(w, '}');
	buf_addch(w->out, ',');
}

static void write_run(struct jw *w, const struct run *r)
{
	size_t i;

	buf_addch(w->out, '{');
	jw_kv_str(w, "status", run_status_name(r->status));
	jw_kv_int(w, "exit_code", r->exit_code);
	jw_kv_int(w, "signal", r->term_signal);
	jw_key(w, "warmup");
	buf_adds(w->out, r->warmup ? "true," : "false,");
	jw_key(w, "baseline");
	buf_adds(w->out, r->baseline ? "true," : "false,");
	jw_kv_int(w, "wall_us", r->wall_us);
	jw_kv_int(w, "user_us", r->user_us);
	jw_kv_int(w, "sys_us", r->sys_us);
	jw_kv_int(w, "maxrss_kb", r->maxrss_kb);
	jw_kv_int(w, "ready_us", r->ready_us);
	jw_kv_int(w, "first_response_us", r->first_response_us);
	jw_kv_int(w, "ready_ns", r->ready_ns);
	write_cg(w, &r->cg);
	jw_key(w, "processes");
	buf_addch(w->out, '[');
	for (i = 0; i < r->nr_procs; i++) {
		write_proc(w, &r->procs[i]);
		buf_addch(w->out, ',');
	}
	jw_close(w, ']');
	jw_close(w, '}');
}

static void write_profile(struct jw *w, const struct profile *p)
{
	size_t i;

	buf_addch(w->out, '{');
	jw_kv_str(w, "format", "coldstart-profile");
	jw_kv_int(w, "version", PROFILE_FORMAT_VERSION);
	jw_kv_str(w, "tool_version", p->tool_version);
	jw_kv_str(w, "created", p->created);
	jw_kv_str(w, "command", p->command);
	jw_kv_str(w, "python", p->python);
	jw_kv_str(w, "python_version", p->python_version);
	jw_kv_str(w, "cwd", p->cwd);
	write_names(w, "target", p->target.v, p->target.nr);
	write_limits(w, &p->limits);
	write_names(w, "node_fields", node_fields, ARRAY_SIZE(node_fields));
	write_names(w, "timing_fields", timing_fields, ARRAY_SIZE(timing_fields));
	write_names(w, "flag_bits", flag_names, ARRAY_SIZE(flag_names));
	jw_key(w, "runs");
	buf_addch(w->out, '[');
	for (i = 0; i < p->nr_runs; i++) {
		write_run(w, &p->runs[i]);
		buf_addch(w->out, ',');
		jw_flush(w, 0);
	}
	jw_close(w, ']');
	buf_addch(w->out, ',');
	jw_key(w, "warnings");
	buf_addch(w->out, '[');
	for (i = 0; i < p->nr_warnings; i++) {
		buf_addch(w->out, '{');
		jw_kv_int(w, "line", p->warnings[i].line);
		jw_kv_str(w, "msg", p->warnings[i].msg);
		jw_close(w, '}');
		buf_addch(w->out, ',');
	}
	jw_close(w, ']');
	buf_addch(w->out, ',');
	jw_key(w, "findings");
	buf_addch(w->out, '[');
	for (i = 0; i < p->nr_findings; i++) {
		const struct finding *f = &p->findings[i];

		buf_addch(w->out, '{');
		jw_kv_str(w, "id", f->id);
		jw_kv_str(w, "severity", f->severity);
		jw_kv_str(w, "title", f->title);
		jw_kv_str(w, "evidence", f->evidence);
		jw_kv_str(w, "fix", f->fix);
		jw_kv_str(w, "module", f->module);
		jw_kv_int(w, "cost_us", f->cost_us);
		jw_close(w, '}');
		buf_addch(w->out, ',');
	}
	jw_close(w, ']');
	buf_addch(w->out, ',');
	jw_key(w, "native");
	native_set_to_json(&p->native, w->out);
	jw_close(w, '}');
	buf_addch(w->out, '\n');
}

void profile_to_json(const struct profile *p, struct buf *out)
{
	struct jw w = { out, NULL, 0 };

	write_profile(&w, p);
}

int profile_write_json(const struct profile *p, const char *path, struct buf *errmsg)
{
	struct buf out = BUF_INIT;
	struct jw w = { &out, NULL, 0 };
	int ret = -1;

	if (!strcmp(path, "-")) {
		write_profile(&w, p);
		if (fwrite(out.buf, 1, out.len, stdout) != out.len || fflush(stdout)) {
			buf_addf(errmsg, "cannot write profile to stdout: %s", strerror(errno));
			goto out;
		}
		ret = 0;
		goto out;
	}
	w.gz = gzopen(path, ends_with(path, ".gz") ? "wb6" : "wT");
	if (!w.gz) {
		buf_addf(errmsg, "cannot write '%s': %s", path, strerror(errno ? errno : ENOMEM));
		goto out;
	}
	buf_grow(&out, FLUSH_AT + 4096);
	write_profile(&w, p);
	jw_flush(&w, 1);
	if (gzclose(w.gz) != Z_OK || w.failed) {
		buf_addf(errmsg, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
		goto out;
	}
	ret = 0;
out:
	buf_release(&out);
	return ret;
}

/* Reading. */

static char *opt_str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
}

static int64_t opt_int(json_t *o, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_real(v))
		return (int64_t)json_real_value(v);
	return dflt;
}

static int64_t arr_int(json_t *a, size_t i)
{
	json_t *v = json_array_get(a, i);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : UNKNOWN;
}

/*
 * Interns a JSON string; JSON may spell a NUL byte (\u0000), which the
 * NUL-separated pool cannot hold, so such bytes become '?'.
 */
static uint32_t intern_json(struct proc *pr, json_t *js)
{
	const char *s = json_string_value(js);
	size_t len = json_string_length(js);
	uint32_t off;
	char *copy;

	if (!memchr(s, '\0', len))
		return proc_intern(pr, s, len);
	copy = xmalloc(len);
	memcpy(copy, s, len);
	for (size_t k = 0; k < len; k++)
		if (!copy[k])
			copy[k] = '?';
	off = proc_intern(pr, copy, len);
	free(copy);
	return off;
}

/*
 * Reads a process.  Version 2 lists each node before its parent, version 1
 * after it; either way a parent index points one way only, so no cycle can
 * be built, and siblings are linked in the order they are listed.
 */
static int read_proc(struct proc *pr, json_t *jp, int version, struct buf *err)
{
	json_t *nodes = json_object_get(jp, "nodes");
	json_t *timing = json_object_get(jp, "timing");
	json_t *events = json_object_get(jp, "events");
	json_t *timeline = json_object_get(jp, "timeline");
	size_t i, nr;

	pr->pid = (long)opt_int(jp, "pid", -1);
	pr->ppid = (long)opt_int(jp, "ppid", -1);
	pr->argv = opt_str(jp, "argv");
	pr->start_ns = opt_int(jp, "start_ns", UNKNOWN);
	pr->end_ns = opt_int(jp, "end_ns", UNKNOWN);
	if (!json_is_array(nodes)) {
		buf_addf(err, "process without a 'nodes' array");
		return -1;
	}
	nr = json_array_size(nodes);
	for (i = 0; i < nr; i++) {
		json_t *n = json_array_get(nodes, i);
		json_t *name = json_array_get(n, 0);
		int64_t parent = arr_int(n, 2);
		const char *kind;
		int32_t idx;
		int k;

		if (!json_is_array(n) || !json_is_string(name)) {
			buf_addf(err, "node %zu is not [name, depth, parent, ...]", i);
			return -1;
		}
		if (parent < -1 || (version == 1 && parent >= (int64_t)i) ||
		    (version != 1 && parent >= 0 && (parent <= (int64_t)i || parent >= (int64_t)nr))) {
			buf_addf(err, "node %zu has parent %lld, which does not %s it", i, (long long)parent,
				 version == 1 ? "precede" : "follow");
			return -1;
		}
		idx = proc_add_node(pr, "", 0, (uint32_t)arr_int(n, 1), arr_int(n, 3), arr_int(n, 4));
		pr->nodes[idx].name = intern_json(pr, name);
		pr->nodes[idx].flags = (uint32_t)arr_int(n, 5);
		kind = json_string_value(json_array_get(n, 6));
		k = kind ? kind_from_name(kind) : -1;
		pr->nodes[idx].kind = (uint8_t)(k >= 0 ? k : KIND_APP);
	}
	/* Linked once all exist: in version 2 a parent comes later. */
	for (i = 0; i < nr; i++) {
		int64_t parent = arr_int(json_array_get(nodes, i), 2);

		if (parent >= 0)
			proc_link_child(pr, (int32_t)parent, (int32_t)i);
		else
			proc_link_root(pr, (int32_t)i);
	}
	if (json_is_array(timing)) {
		if (json_array_size(timing) != nr) {
			buf_addf(err, "'timing' has %zu entries for %zu nodes", json_array_size(timing), nr);
			return -1;
		}
		proc_ensure_timing(pr);
		for (i = 0; i < nr; i++) {
			json_t *t = json_array_get(timing, i);
			json_t *file = json_array_get(t, 8);
			struct imp_timing *tm = &pr->timing[i];

			tm->start_ns = arr_int(t, 0);
			tm->end_ns = arr_int(t, 1);
			tm->find_ns = arr_int(t, 2);
			tm->load_ns = arr_int(t, 3);
			tm->exec_ns = arr_int(t, 4);
			tm->compile_ns = arr_int(t, 5);
			tm->rss_start_kb = arr_int(t, 6);
			tm->rss_end_kb = arr_int(t, 7);
			tm->file = json_is_string(file) ? intern_json(pr, file) : 0;
		}
	}
	if (json_is_array(events)) {
		size_t ne = json_array_size(events);

		for (i = 0; i < ne; i++) {
			json_t *e = json_array_get(events, i);
			json_t *name = json_array_get(e, 1), *detail = json_array_get(e, 2);
			struct proc_event *pe;
			int64_t node = arr_int(e, 3);

			ALLOC_GROW(pr->events, pr->nr_events + 1, pr->alloc_events);
			pe = &pr->events[pr->nr_events++];
			pe->t_ns = arr_int(e, 0);
			pe->name = json_is_string(name) ? intern_json(pr, name) : 0;
			pe->detail = json_is_string(detail) ? intern_json(pr, detail) : 0;
			pe->node = node >= 0 && node < (int64_t)nr ? (int32_t)node : -1;
		}
	}
	if (json_is_object(timeline)) {
		pr->timeline = xmalloc(sizeof(*pr->timeline));
		timeline_init(pr->timeline);
		if (timeline_from_json(pr->timeline, timeline, err) < 0)
			return -1;
	}
	return 0;
}

static int read_run(struct profile *p, json_t *jr, int version, struct buf *err)
{
	struct run *r = profile_add_run(p);
	json_t *procs = json_object_get(jr, "processes");
	json_t *cg = json_object_get(jr, "cgroup");
	json_t *status = json_object_get(jr, "status");
	size_t i;
	int st;

	st = json_is_string(status) ? run_status_from_name(json_string_value(status)) : -1;
	r->status = st >= 0 ? (enum run_status)st : RUN_NOT_RUN;
	r->exit_code = (int)opt_int(jr, "exit_code", 0);
	r->term_signal = (int)opt_int(jr, "signal", 0);
	r->warmup = json_is_true(json_object_get(jr, "warmup"));
	r->baseline = json_is_true(json_object_get(jr, "baseline"));
	r->wall_us = opt_int(jr, "wall_us", UNKNOWN);
	r->user_us = opt_int(jr, "user_us", UNKNOWN);
	r->sys_us = opt_int(jr, "sys_us", UNKNOWN);
	r->maxrss_kb = opt_int(jr, "maxrss_kb", UNKNOWN);
	r->ready_us = opt_int(jr, "ready_us", UNKNOWN);
	r->first_response_us = opt_int(jr, "first_response_us", UNKNOWN);
	r->ready_ns = opt_int(jr, "ready_ns", UNKNOWN);
	if (json_is_object(cg)) {
		r->cg.has = true;
		r->cg.cpu_usage_us = opt_int(cg, "cpu_usage_us", UNKNOWN);
		r->cg.nr_periods = opt_int(cg, "nr_periods", UNKNOWN);
		r->cg.nr_throttled = opt_int(cg, "nr_throttled", UNKNOWN);
		r->cg.throttled_us = opt_int(cg, "throttled_us", UNKNOWN);
		r->cg.memory_peak = opt_int(cg, "memory_peak", UNKNOWN);
		r->cg.oom_kills = opt_int(cg, "oom_kills", UNKNOWN);
	}
	if (!json_is_array(procs)) {
		buf_addf(err, "run %zu has no 'processes' array", p->nr_runs - 1);
		return -1;
	}
	for (i = 0; i < json_array_size(procs); i++) {
		struct proc *pr = run_add_proc(r);

		if (read_proc(pr, json_array_get(procs, i), version, err) < 0) {
			buf_addf(err, " (run %zu, process %zu)", p->nr_runs - 1, i);
			return -1;
		}
	}
	return 0;
}

static int read_profile(struct profile *p, json_t *root, struct buf *err)
{
	json_t *v, *runs, *lim;
	int64_t version;
	size_t i;

	if (!json_is_object(root) || !json_is_string(json_object_get(root, "format")) ||
	    strcmp(json_string_value(json_object_get(root, "format")), "coldstart-profile")) {
		buf_addf(err, "not a coldstart profile (no \"format\": \"coldstart-profile\")");
		return -1;
	}
	version = opt_int(root, "version", 0);
	if (version < 1 || version > PROFILE_FORMAT_VERSION) {
		buf_addf(err, "unsupported profile version %lld (this coldstart reads 1 to %d)",
			 (long long)version, PROFILE_FORMAT_VERSION);
		return -1;
	}
	p->tool_version = opt_str(root, "tool_version");
	p->created = opt_str(root, "created");
	p->command = opt_str(root, "command");
	p->python = opt_str(root, "python");
	p->python_version = opt_str(root, "python_version");
	p->cwd = opt_str(root, "cwd");
	v = json_object_get(root, "target");
	for (i = 0; i < json_array_size(v); i++)
		if (json_is_string(json_array_get(v, i)))
			strvec_push(&p->target, json_string_value(json_array_get(v, i)));
	lim = json_object_get(root, "limits");
	if (json_is_object(lim)) {
		json_t *c = json_object_get(lim, "cpus");

		p->limits.cpus = json_is_number(c) ? json_number_value(c) : 0;
		p->limits.memory = opt_int(lim, "memory", 0);
		p->limits.swap = opt_int(lim, "swap", 0);
		p->limits.pids = (long)opt_int(lim, "pids", 0);
		p->limits.cpuset = opt_str(lim, "cpuset");
		p->limits.preset = opt_str(lim, "preset");
		p->limits.backend = opt_str(lim, "backend");
	}
	runs = json_object_get(root, "runs");
	if (!json_is_array(runs)) {
		buf_addf(err, "profile has no 'runs' array");
		return -1;
	}
	for (i = 0; i < json_array_size(runs); i++)
		if (read_run(p, json_array_get(runs, i), (int)version, err) < 0)
			return -1;
	v = json_object_get(root, "warnings");
	for (i = 0; i < json_array_size(v); i++) {
		json_t *wj = json_array_get(v, i);
		json_t *msg = json_object_get(wj, "msg");

		if (json_is_string(msg))
			profile_add_warning(p, (long)opt_int(wj, "line", 0), "%s", json_string_value(msg));
	}
	v = json_object_get(root, "findings");
	for (i = 0; i < json_array_size(v); i++) {
		json_t *fj = json_array_get(v, i);
		struct finding f = { 0 };

		f.id = opt_str(fj, "id");
		f.severity = opt_str(fj, "severity");
		f.title = opt_str(fj, "title");
		f.evidence = opt_str(fj, "evidence");
		f.fix = opt_str(fj, "fix");
		f.module = opt_str(fj, "module");
		f.cost_us = opt_int(fj, "cost_us", UNKNOWN);
		if (!f.id)
			f.id = xstrdup("unknown");
		profile_add_finding(p, &f);
	}
	v = json_object_get(root, "native");
	if (json_is_object(v)) {
		char *text = json_dumps(v, JSON_COMPACT);
		struct buf nerr = BUF_INIT;

		if (!text || native_set_from_json(&p->native, text, strlen(text), &nerr) < 0)
			profile_add_warning(p, 0, "native extension facts not restored: %s",
					    nerr.len ? nerr.buf : "out of memory");
		free(text);
		buf_release(&nerr);
	}
	return 0;
}

int profile_from_json(struct profile *p, const char *text, size_t len, struct buf *errmsg)
{
	json_error_t jerr;
	json_t *root;
	int ret;

	root = json_loadb(text, len, JSON_ALLOW_NUL, &jerr);
	if (!root) {
		buf_addf(errmsg, "invalid JSON at line %d column %d: %s", jerr.line, jerr.column, jerr.text);
		return -1;
	}
	ret = read_profile(p, root, errmsg);
	json_decref(root);
	return ret;
}

int profile_read_json(struct profile *p, const char *path, struct buf *errmsg)
{
	struct buf text = BUF_INIT;
	struct buf inner = BUF_INIT;
	int ret = -1;

	if (!strcmp(path, "-")) {
		char chunk[65536];
		size_t n;

		while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
			buf_add(&text, chunk, n);
	} else if (buf_read_file(&text, path) < 0) {
		buf_addf(errmsg, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (profile_from_json(p, text.buf, text.len, &inner) < 0) {
		buf_addf(errmsg, "cannot read '%s': %s", path, inner.buf);
		goto out;
	}
	ret = 0;
out:
	buf_release(&text);
	buf_release(&inner);
	return ret;
}
