/*
 * The profile's JSON form (docs/profile-format.md), written: a streaming
 * writer that flushes through zlib (gzip when the name ends in .gz).  Nodes
 * are written children first, as compact arrays; the reader is
 * profile_read.c.
 */
#include "model/profile.h"
#include "model/timeline.h"

#include "outfile.h"
#include "parallel.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <time.h>
#include <unistd.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define FLUSH_AT (1u << 20)

struct jw {
	struct buf *out;
	gzFile gz; /* NULL: everything stays in out */
	int failed; /* the errno of the first write that failed */
	size_t escaped; /* bytes written as \\xHH (buf_add_json_str) */
};

static const char *const node_fields[] = {
	"name", "depth", "parent", "self_us", "cum_us", "flags", "kind",
};

static const char *const timing_fields[] = {
	"start_ns",   "end_ns",	      "find_ns",    "load_ns", "exec_ns",
	"compile_ns", "rss_start_kb", "rss_end_kb", "file",    "cpu_ns",
};

static const char *const flag_names[] = {
	"cached", "failed", "startup", "trace_only", "inconsistent", "open", "compiled", "native", "negative", "gc",
};

static void jw_write(struct jw *w, const char *text, size_t len)
{
	errno = 0;
	if (len && !w->failed && gzwrite(w->gz, text, (unsigned)len) != (int)len)
		w->failed = errno ? errno : EIO;
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
		w->escaped += buf_add_json_str(w->out, s, strlen(s));
	else
		buf_adds(w->out, "null");
}

static void jw_kv_str(struct jw *w, const char *k, const char *v)
{
	jw_key(w, k);
	jw_str(w, v);
	buf_addch(w->out, ',');
}

/* A figure, clamped to the range the reader accepts for it. */
static void jw_kv_fig(struct jw *w, const char *k, int64_t v, int64_t lo, int64_t hi)
{
	jw_key(w, k);
	buf_add_i64(w->out, profile_clamp(v, lo, hi));
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
	buf_addf(w->out, "%.6g,", l->cpus >= 0 && l->cpus <= 1e6 ? l->cpus : 0.0);
	jw_kv_fig(w, "memory", l->memory, -1, PROFILE_MAX_BYTES);
	jw_kv_fig(w, "swap", l->swap, -1, PROFILE_MAX_BYTES);
	jw_kv_fig(w, "pids", l->pids, -1, INT32_MAX);
	jw_kv_str(w, "cpuset", l->cpuset);
	jw_kv_str(w, "preset", l->preset);
	jw_kv_str(w, "backend", l->backend);
	jw_close(w, '}');
	buf_addch(w->out, ',');
}

/*
 * Length of the pool string at off when it can go into JSON as it is, or
 * SIZE_MAX when it holds a byte that needs escaping or a check (any byte
 * past ASCII: it may not be UTF-8).  One pass finds both: the terminating
 * NUL is a control byte like the ones that need escaping.
 */
static size_t plain_json_len(const struct buf *pool, uint32_t off)
{
	const char *s = pool->buf + off, *p = s, *end = pool->buf + pool->len;

#ifdef __SSE2__
	for (; end - p >= 16; p += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		/* Unsigned v <= 0x1f (the NUL too), '"', '\\', DEL. */
		__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)),
								       _mm_set1_epi8(0x1f)),
							_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))),
					   _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')),
							_mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f))));
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(hit, v));

		if (m) {
			p += __builtin_ctz(m);
			return *p ? SIZE_MAX : (size_t)(p - s);
		}
	}
#endif
	for (; p < end; p++) {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f)
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
		w->escaped += buf_add_json_str(w->out, proc_str(pr, nd->name), strlen(proc_str(pr, nd->name)));
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
	q = put_i64(q, nd->depth <= INT32_MAX ? nd->depth : INT32_MAX);
	*q++ = ',';
	q = put_i64(q, parent);
	*q++ = ',';
	q = put_i64(q, profile_clamp(nd->self_us, -PROFILE_MAX_US, PROFILE_MAX_US));
	*q++ = ',';
	q = put_i64(q, profile_clamp(nd->cum_us, -PROFILE_MAX_US, PROFILE_MAX_US));
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
	size_t escaped[PARALLEL_MAX];
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
	struct jw w = { .out = &out };
	size_t i;

	buf_reset(&out);
	for (i = job->base + begin; i < job->base + end; i++)
		write_node_at(&w, job, i);
	job->out[slot] = out;
	job->escaped[slot] += w.escaped;
}

static void write_nodes(struct jw *w, const struct proc *pr, const int32_t *order, const int32_t *newidx, size_t n)
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
	for (slot = 0; slot < nr; slot++) {
		buf_release(&job.out[slot]);
		w->escaped += job.escaped[slot];
	}
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

static void json_str_or_null(struct buf *out, const char *s)
{
	if (s && *s)
		buf_add_json_str(out, s, strlen(s));
	else
		buf_adds(out, "null");
}

void timeline_to_json(const struct timeline *tl, struct buf *out)
{
	size_t i;

	/* Clamped to the ranges the reader accepts (docs/profile-format.md, "Limits"). */
	buf_adds(out, "{\"origin_ns\":");
	buf_add_i64(out, profile_clamp(tl->origin_ns, -PROFILE_MAX_NS, PROFILE_MAX_NS));
	buf_adds(out, ",\"start_us\":");
	buf_add_i64(out, profile_clamp(tl->start_us, -PROFILE_MAX_US, PROFILE_MAX_US));
	buf_adds(out, ",\"end_us\":");
	buf_add_i64(out, profile_clamp(tl->end_us, -PROFILE_MAX_US, PROFILE_MAX_US));
	buf_adds(out, ",\"end\":");
	json_str_or_null(out, tl_end_name(tl->end));
	buf_adds(out, ",\"interval_us\":");
	buf_add_i64(out, profile_clamp(tl->interval_us, -1, PROFILE_MAX_US));
	buf_adds(out, ",\"dropped\":");
	buf_add_i64(out, tl->dropped > (uint64_t)PROFILE_MAX_COUNT ? PROFILE_MAX_COUNT : (int64_t)tl->dropped);
	buf_adds(out, ",\"faults\":");
	buf_add_i64(out, tl->faults > (uint64_t)PROFILE_MAX_COUNT ? PROFILE_MAX_COUNT : (int64_t)tl->faults);
	buf_adds(out, ",\"node_fields\":[\"name\",\"kind\",\"parent\",\"file\",\"line\"],\"nodes\":[");
	for (i = 0; i < tl->nr_nodes; i++) {
		const struct tl_node *n = &tl->nodes[i];

		if (i)
			buf_addch(out, ',');
		buf_addch(out, '[');
		json_str_or_null(out, tl_str(tl, n->name));
		buf_addch(out, ',');
		json_str_or_null(out, tl_kind_name(n->kind));
		buf_addch(out, ',');
		buf_add_i64(out, n->parent);
		buf_addch(out, ',');
		json_str_or_null(out, tl_str(tl, n->file));
		buf_addch(out, ',');
		buf_add_i64(out, n->line);
		buf_addch(out, ']');
	}
	buf_adds(out, "],\"sample_fields\":[\"t_us\",\"wall_us\",\"cpu_us\",\"node\",\"wait_us\"],\"samples\":[");
	for (i = 0; i < tl->nr_samples; i++) {
		const struct tl_sample *s = &tl->samples[i];

		if (i)
			buf_addch(out, ',');
		buf_addch(out, '[');
		buf_add_i64(out, profile_clamp(s->t_us, -PROFILE_MAX_US, PROFILE_MAX_US));
		buf_addch(out, ',');
		buf_add_i64(out, profile_clamp(s->wall_us, -PROFILE_MAX_US, PROFILE_MAX_US));
		buf_addch(out, ',');
		buf_add_i64(out, profile_clamp(s->cpu_us, -PROFILE_MAX_US, PROFILE_MAX_US));
		buf_addch(out, ',');
		buf_add_i64(out, s->node);
		buf_addch(out, ',');
		buf_add_i64(out, profile_clamp(s->wait_us, 0, PROFILE_MAX_US));
		buf_addch(out, ']');
	}
	buf_adds(out, "]}");
}

static void write_proc(struct jw *w, const struct proc *pr)
{
	int32_t *order, *newidx;
	size_t n = write_order(pr, &order, &newidx), i;

	buf_addch(w->out, '{');
	jw_kv_fig(w, "pid", pr->pid, -1, INT32_MAX);
	jw_kv_fig(w, "ppid", pr->ppid, -1, INT32_MAX);
	jw_kv_str(w, "argv", pr->argv);
	jw_kv_str(w, "role", pr->role);
	if (pr->origin != ORIGIN_UNKNOWN)
		jw_kv_str(w, "origin", proc_origin_name(pr->origin));
	if (pr->mixed)
		jw_key(w, "mixed"), buf_adds(w->out, "true,");
	jw_kv_fig(w, "start_ns", pr->start_ns, -PROFILE_MAX_NS, PROFILE_MAX_NS);
	jw_kv_fig(w, "end_ns", pr->end_ns, -PROFILE_MAX_NS, PROFILE_MAX_NS);
	jw_kv_fig(w, "tracer_ns", pr->tracer_ns, -1, PROFILE_MAX_NS);
	jw_kv_fig(w, "startup_cpu_ns", pr->startup_cpu_ns, -1, PROFILE_MAX_NS);
	jw_kv_fig(w, "cpu_ns", pr->cpu_ns, -1, PROFILE_MAX_NS);
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
			const int64_t ns[] = {
				t->start_ns, t->end_ns, t->find_ns, t->load_ns, t->exec_ns, t->compile_ns
			};
			size_t k;

			buf_addch(w->out, '[');
			for (k = 0; k < ARRAY_SIZE(ns); k++) {
				buf_add_i64(w->out, profile_clamp(ns[k], -PROFILE_MAX_NS, PROFILE_MAX_NS));
				buf_addch(w->out, ',');
			}
			buf_add_i64(w->out, profile_clamp(t->rss_start_kb, -1, PROFILE_MAX_KB));
			buf_addch(w->out, ',');
			buf_add_i64(w->out, profile_clamp(t->rss_end_kb, -1, PROFILE_MAX_KB));
			buf_addch(w->out, ',');
			if (t->file)
				jw_str(w, proc_str(pr, t->file));
			else
				buf_adds(w->out, "null");
			buf_addch(w->out, ',');
			buf_add_i64(w->out, profile_clamp(t->cpu_ns, -1, PROFILE_MAX_NS));
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
			buf_add_i64(w->out, profile_clamp(e->t_ns, -PROFILE_MAX_NS, PROFILE_MAX_NS));
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
	jw_kv_fig(w, "cpu_usage_us", cg->cpu_usage_us, -1, PROFILE_MAX_US);
	jw_kv_fig(w, "nr_periods", cg->nr_periods, -1, PROFILE_MAX_COUNT);
	jw_kv_fig(w, "nr_throttled", cg->nr_throttled, -1, PROFILE_MAX_COUNT);
	jw_kv_fig(w, "throttled_us", cg->throttled_us, -1, PROFILE_MAX_US);
	jw_kv_fig(w, "memory_peak", cg->memory_peak, -1, PROFILE_MAX_BYTES);
	jw_kv_fig(w, "oom_kills", cg->oom_kills, -1, PROFILE_MAX_COUNT);
	jw_close(w, '}');
	buf_addch(w->out, ',');
}

/* "cold": null for a warm run, else the eviction's figures and whether it took (cold.h). */
static void write_cold(struct jw *w, const struct cold_figures *c)
{
	jw_key(w, "cold");
	if (!c->asked) {
		buf_adds(w->out, "null,");
		return;
	}
	buf_addch(w->out, '{');
	jw_key(w, "took");
	buf_adds(w->out, cold_figures_took(c) ? "true," : "false,");
	jw_key(w, "partial");
	buf_adds(w->out, c->partial ? "true," : "false,");
	jw_kv_int(w, "files", c->files);
	jw_kv_int(w, "bytes", c->bytes);
	jw_kv_int(w, "failed", c->failed);
	jw_kv_int(w, "checked_files", c->checked_files);
	jw_kv_int(w, "module_bytes", c->module_bytes);
	jw_kv_int(w, "module_resident", c->module_resident);
	jw_kv_int(w, "binary_bytes", c->binary_bytes);
	jw_kv_int(w, "binary_resident", c->binary_resident);
	jw_kv_int(w, "mapped_files", c->mapped_files);
	jw_kv_int(w, "mapped_bytes", c->mapped_bytes);
	jw_kv_int(w, "mapped_resident", c->mapped_resident);
	jw_kv_int(w, "unevicted", c->unevicted);
	jw_close(w, '}');
	buf_addch(w->out, ',');
}

static void write_run(struct jw *w, const struct run *r)
{
	size_t i;

	buf_addch(w->out, '{');
	jw_kv_str(w, "status", run_status_name(r->status));
	jw_kv_int(w, "exit_code", r->exit_code);
	jw_kv_fig(w, "signal", r->term_signal, 0, INT_MAX);
	jw_key(w, "warmup");
	buf_adds(w->out, r->warmup ? "true," : "false,");
	jw_key(w, "baseline");
	buf_adds(w->out, r->baseline ? "true," : "false,");
	jw_kv_fig(w, "wall_us", r->wall_us, -1, PROFILE_MAX_US);
	jw_kv_fig(w, "user_us", r->user_us, -1, PROFILE_MAX_US);
	jw_kv_fig(w, "sys_us", r->sys_us, -1, PROFILE_MAX_US);
	jw_kv_fig(w, "maxrss_kb", r->maxrss_kb, -1, PROFILE_MAX_KB);
	jw_kv_fig(w, "ready_us", r->ready_us, -1, PROFILE_MAX_US);
	jw_kv_fig(w, "first_response_us", r->first_response_us, -1, PROFILE_MAX_US);
	jw_kv_fig(w, "ready_ns", r->ready_ns, -1, PROFILE_MAX_NS);
	jw_kv_fig(w, "listening_us", r->listening_us, -1, PROFILE_MAX_US);
	jw_kv_fig(w, "launcher_us", r->launcher_us, -1, PROFILE_MAX_US);
	write_cg(w, &r->cg);
	write_cold(w, &r->cold);
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
	size_t i, k;

	buf_addch(w->out, '{');
	jw_kv_str(w, "format", "coldstart-profile");
	jw_kv_int(w, "version", PROFILE_FORMAT_VERSION);
	jw_kv_str(w, "tool_version", p->tool_version);
	jw_kv_str(w, "created", p->created);
	jw_kv_str(w, "command", p->command);
	jw_kv_str(w, "python", p->python);
	jw_kv_str(w, "python_version", p->python_version);
	if (p->python_launcher) {
		jw_kv_str(w, "python_launcher", p->python_launcher);
		jw_kv_str(w, "python_executable", p->python_executable);
	}
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
		jw_kv_fig(w, "cost_us", f->cost_us, -1, PROFILE_MAX_US);
		jw_key(w, "pids");
		buf_addch(w->out, '[');
		for (k = 0; k < f->nr_pids; k++) {
			buf_add_i64(w->out, f->pids[k]);
			buf_addch(w->out, ',');
		}
		jw_close(w, ']');
		jw_close(w, '}');
		buf_addch(w->out, ',');
	}
	jw_close(w, ']');
	buf_addch(w->out, ',');
	jw_key(w, "native");
	native_set_to_json(&p->native, w->out);
	/* Last: the count is known only now.  Readers turn it into a warning. */
	if (w->escaped) {
		buf_addch(w->out, ',');
		jw_key(w, "escaped_bytes");
		buf_add_i64(w->out, (int64_t)w->escaped);
	}
	jw_close(w, '}');
	buf_addch(w->out, '\n');
}

void profile_to_json(const struct profile *p, struct buf *out)
{
	struct jw w = { .out = out };

	write_profile(&w, p);
}

int profile_write_json(const struct profile *p, const char *path, struct buf *err)
{
	struct buf out = BUF_INIT;
	struct jw w = { .out = &out };
	struct outfile of = OUTFILE_INIT;
	int ret = -1, fd;

	if (!strcmp(path, "-")) {
		write_profile(&w, p);
		if (fwrite(out.buf, 1, out.len, stdout) != out.len || fflush(stdout)) {
			buf_addf(err, "cannot write profile to stdout: %s", strerror(errno));
			goto out;
		}
		ret = 0;
		goto out;
	}
	if (outfile_open(&of, path, err) < 0)
		goto out;
	errno = 0;
	fd = dup(of.fd);
	w.gz = fd < 0 ? NULL : gzdopen(fd, ends_with(path, ".gz") ? "wb6" : "wT");
	if (!w.gz) {
		buf_addf(err, "cannot write '%s': %s", path, strerror(errno ? errno : ENOMEM));
		if (fd >= 0)
			close(fd);
		outfile_abort(&of);
		goto out;
	}
	buf_grow(&out, FLUSH_AT + 4096);
	write_profile(&w, p);
	jw_flush(&w, 1);
	errno = 0;
	if (gzclose(w.gz) != Z_OK && !w.failed)
		w.failed = errno ? errno : EIO;
	if (w.failed) {
		buf_addf(err, "cannot write '%s': %s", path, strerror(w.failed));
		outfile_abort(&of);
		goto out;
	}
	if (outfile_commit(&of, err) < 0)
		goto out;
	ret = 0;
out:
	buf_release(&out);
	return ret;
}
