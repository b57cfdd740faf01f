/*
 * What every export format draws from a profile: the run to show, the tree
 * of a process (or its timeline made a tree) laid out as nested intervals,
 * walks over it, labels, and text cleaned and escaped for XML and JSON.
 */
#include "render/export/frames.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render/fit.h"
#include "model/stats.h"
#include "model/timeline.h"

/*
 * Pre-order with profile.h's walker, which trusts the links as every pass
 * over a tree does (the link functions and the JSON reader only make
 * trees).  order[] receives nodes, parent[] the parent of each (-1 for
 * roots); visit may return false to skip a node's children.
 */
static size_t preorder(const struct proc *pr, int32_t *order, int32_t *parent,
		       bool (*visit)(const struct proc *pr, int32_t i, void *data), void *data)
{
	size_t n = 0;
	int32_t i;

	for (i = pr->first_root; i >= 0;) {
		bool descend = !visit || visit(pr, i, data);

		if (order)
			order[n] = i;
		if (parent)
			parent[i] = pr->nodes[i].parent;
		n++;
		i = proc_walk_next(pr, i, descend);
	}
	return n;
}

static int64_t nonneg(int64_t v)
{
	return v < 0 ? 0 : v;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/*
 * A copy of a bootstrap in the tracer's cache: <cache root>/_boot/<16 hex
 * digits>/sitecustomize.py (trace_build.c), wherever COLDSTART_CACHE_DIR puts
 * the root.
 */
static bool is_cached_bootstrap(const char *file)
{
	const char *p = file;
	size_t i;

	while ((p = strstr(p, "/_boot/"))) {
		p += strlen("/_boot/");
		for (i = 0; i < 16 && isxdigit((unsigned char)p[i]); i++)
			;
		if (i == 16 && !strcmp(p + 16, "/sitecustomize.py"))
			return true;
	}
	return false;
}

static uint8_t func_kind(const char *file)
{
	if (strstr(file, "/coldstart/_boot/") || strstr(file, "/coldstart/_pytracer") || is_cached_bootstrap(file))
		return KIND_TOOL;
	if (strstr(file, "-packages/"))
		return KIND_THIRDPARTY;
	if (timeline_stdlib_file(file))
		return KIND_STDLIB;
	return KIND_APP;
}

/* Among runs with a process, the one whose main-process import total is the median. */
static const struct run *median_by_imports(const struct profile *p)
{
	size_t i, j, nr = 0, *idx = xmalloc(st_mult(p->nr_runs, sizeof(size_t)));
	const struct run *r = NULL;
	int pass;

	for (pass = 0; pass < 2 && !nr; pass++)
		for (i = 0; i < p->nr_runs; i++)
			if (p->runs[i].nr_procs && (pass || !p->runs[i].warmup))
				idx[nr++] = i;
	/* Insertion sort by total: runs are few. */
	for (i = 1; i < nr; i++) {
		size_t v = idx[i];
		int64_t tv = proc_import_total_us(&p->runs[v].procs[0], true);

		for (j = i; j > 0 && proc_import_total_us(&p->runs[idx[j - 1]].procs[0], true) > tv; j--)
			idx[j] = idx[j - 1];
		idx[j] = v;
	}
	if (nr)
		r = &p->runs[idx[(nr - 1) / 2]];
	free(idx);
	return r;
}

/*
 * The representative run: the one the text report shows (the median by
 * wall time among the measured runs, profile_median_run), or when it holds
 * no process, among non-warm-up runs with a process (any run with a
 * process if all are warm-ups) the one whose main-process import total is
 * the median.  NULL when no run has a process.
 */
static const struct run *median_run(const struct profile *p)
{
	if (p->nr_runs && p->runs[profile_median_run(p)].nr_procs)
		return &p->runs[profile_median_run(p)];
	return median_by_imports(p);
}

const struct run *export_pick_run(const struct profile *p, const struct export_opts *o, struct buf *err)
{
	const struct run *r;

	if (!p->nr_runs) {
		buf_adds(err, "the profile holds no runs");
		return NULL;
	}
	if (o && o->run >= 0) {
		if ((size_t)o->run >= p->nr_runs) {
			buf_addf(err, "run %ld does not exist (the profile holds %zu)", o->run + 1, p->nr_runs);
			return NULL;
		}
		r = &p->runs[o->run];
	} else {
		r = median_run(p);
	}
	if (!r || !r->nr_procs) {
		buf_adds(err, "the selected run holds no process to draw");
		return NULL;
	}
	return r;
}

size_t export_preorder(const struct proc *pr, int32_t *order, int32_t *parent)
{
	return preorder(pr, order, parent, NULL, NULL);
}

void export_walk(const struct proc *pr, bool (*visit)(const struct proc *pr, int32_t i, void *data), void *data)
{
	preorder(pr, NULL, NULL, visit, data);
}

int64_t export_created_unix_ns(const struct profile *p)
{
	struct tm tm;
	const char *end;
	time_t t;

	if (!p->created)
		return 0;
	memset(&tm, 0, sizeof(tm));
	end = strptime(p->created, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return 0;
	t = timegm(&tm);
	/* A year past 2262 does not fit in nanoseconds: unknown, as a bad date is. */
	return t > 0 && (int64_t)t <= INT64_MAX / 1000000000 ? (int64_t)t * 1000000000 : 0;
}

const char *export_node_phase(const struct run *r, const struct proc *pr, int32_t i)
{
	int64_t ready_ns = run_ready_ns(r);

	if (pr->nodes[i].flags & NODE_STARTUP || pr->nodes[i].kind == KIND_STARTUP)
		return "startup";
	if (ready_ns < 0 || !pr->timing || pr->timing[i].start_ns < 0)
		return "import";
	return node_after_ready(pr, i, ready_ns) ? "after ready" : "before ready";
}

bool export_has_timing(const struct proc *pr)
{
	size_t i;

	if (!pr->timing)
		return false;
	for (i = 0; i < pr->nr_nodes; i++)
		if (pr->timing[i].start_ns != UNKNOWN && pr->timing[i].end_ns != UNKNOWN)
			return true;
	return false;
}

int64_t export_layout(const struct proc *pr, bool use_timing, int64_t *start, int64_t *end)
{
	int32_t *order, *parent;
	int64_t *width = NULL, *cursor, *span_lo = NULL, *span_hi = NULL, root_cursor = 0;
	size_t n, k, i;

	for (i = 0; i < pr->nr_nodes; i++)
		start[i] = end[i] = -1;
	if (!pr->nr_nodes)
		return 0;
	order = xmalloc(st_mult(pr->nr_nodes, sizeof(*order)));
	parent = xmalloc(st_mult(pr->nr_nodes, sizeof(*parent)));
	cursor = xmalloc(st_mult(pr->nr_nodes, sizeof(*cursor)));
	n = preorder(pr, order, parent, NULL, NULL);
	use_timing = use_timing && pr->timing;

	if (!use_timing) {
		/*
		 * Children follow their parent in pre-order, so in reverse every
		 * child has added itself to width[parent] before the parent is
		 * reached: width = max(own cum, sum of children).
		 */
		width = xcalloc(pr->nr_nodes, sizeof(*width));
		for (k = n; k-- > 0;) {
			int32_t v = order[k];
			int64_t own = i64_mul(nonneg(pr->nodes[v].cum_us), 1000);

			width[v] = max64(width[v], own);
			if (parent[v] >= 0)
				width[parent[v]] = i64_add(width[parent[v]], width[v]);
		}
	}
	if (use_timing) {
		/*
		 * An import without timestamps (importtime saw it, the tracer did
		 * not) may still have timed imports inside it: it must span them.
		 * span_lo/span_hi collect the timed descendants' extent.
		 */
		span_lo = xmalloc(st_mult(pr->nr_nodes, sizeof(*span_lo)));
		span_hi = xmalloc(st_mult(pr->nr_nodes, sizeof(*span_hi)));
		for (i = 0; i < pr->nr_nodes; i++) {
			span_lo[i] = INT64_MAX;
			span_hi[i] = -1;
		}
		for (k = n; k-- > 0;) {
			int32_t v = order[k], up = parent[v];
			const struct imp_timing *t = &pr->timing[v];

			if (t->start_ns != UNKNOWN && t->end_ns != UNKNOWN) {
				span_lo[v] = min64(span_lo[v], t->start_ns);
				span_hi[v] = max64(span_hi[v], t->end_ns);
			}
			if (up >= 0) {
				span_lo[up] = min64(span_lo[up], span_lo[v]);
				span_hi[up] = max64(span_hi[up], span_hi[v]);
			}
		}
	}
	for (k = 0; k < n; k++) {
		int32_t v = order[k], up = parent[v];
		int64_t lo = up >= 0 ? cursor[up] : root_cursor;
		int64_t hi = up >= 0 ? end[up] : INT64_MAX;
		int64_t s, e;

		if (use_timing) {
			const struct imp_timing *t = &pr->timing[v];
			int64_t dur = i64_mul(nonneg(pr->nodes[v].cum_us), 1000);

			if (t->start_ns != UNKNOWN && t->end_ns != UNKNOWN) {
				s = max64(t->start_ns, lo);
				e = t->end_ns;
			} else if (span_hi[v] >= 0) {
				/*
				 * Its untimed part ran before the tracer started
				 * timing (start-up imports around sitecustomize), so
				 * it ends with its timed descendants.
				 */
				e = span_hi[v];
				s = max64(lo, min64(span_lo[v], i64_sub(e, dur)));
				e = max64(e, s);
			} else {
				s = t->start_ns != UNKNOWN ? max64(t->start_ns, lo) : lo;
				e = i64_add(s, dur);
			}
			s = min64(s, hi);
			e = min64(max64(e, s), hi);
		} else {
			s = lo;
			e = i64_add(s, width[v]);
		}
		start[v] = s;
		end[v] = e;
		cursor[v] = s;
		if (up >= 0)
			cursor[up] = e;
		else
			root_cursor = e;
	}
	free(order);
	free(parent);
	free(cursor);
	free(width);
	free(span_lo);
	free(span_hi);
	return root_cursor;
}

void timeline_to_proc(const struct timeline *tl, const struct proc *imports, struct proc *out)
{
	int32_t *map = xmalloc(st_mult(tl->nr_nodes ? tl->nr_nodes : 1, sizeof(*map)));
	struct buf name = BUF_INIT;
	size_t i, threads = 0;

	proc_init(out);
	if (imports) {
		out->pid = imports->pid;
		out->ppid = imports->ppid;
		out->argv = imports->argv ? xstrdup(imports->argv) : NULL;
	}
	out->start_ns = tl->origin_ns;
	for (i = 0; i < tl->nr_nodes; i++)
		if (tl->nodes[i].kind == TL_THREAD && tl->nodes[i].cum_us > 0)
			threads++;
	for (i = 0; i < tl->nr_nodes; i++) {
		const struct tl_node *n = &tl->nodes[i];
		int32_t parent = n->parent >= 0 ? map[n->parent] : -1, v;
		uint8_t kind = KIND_APP;

		map[i] = -1;
		if (n->parent >= 0 && parent < 0 && tl->nodes[n->parent].kind != TL_THREAD)
			continue; /* under a thread that is left out */
		if (n->kind == TL_THREAD && (threads <= 1 || !n->cum_us)) {
			/* One thread: its root is the process; its own samples had no Python frame. */
			if (n->self_us > 0) {
				v = proc_add_node(out, "(no Python frame)", 17, 0, n->self_us, n->self_us);
				out->nodes[v].kind = KIND_STARTUP;
				proc_link_root(out, v);
			}
			continue;
		}
		buf_reset(&name);
		if (n->kind == TL_IMPORT)
			buf_adds(&name, "import ");
		buf_adds(&name, tl_str(tl, n->name));
		v = proc_add_node(out, name.buf, name.len, parent >= 0 ? out->nodes[parent].depth + 1 : 0, n->self_us,
				  n->cum_us);
		if (n->kind == TL_IMPORT) {
			int32_t m = imports ? proc_find(imports, tl_str(tl, n->name)) : -1;

			kind = m >= 0 ? imports->nodes[m].kind : KIND_APP;
		} else if (n->kind == TL_FUNC) {
			kind = func_kind(tl_str(tl, n->file));
		} else if (n->kind == TL_GC) {
			kind = parent >= 0 ? out->nodes[parent].kind : KIND_STARTUP;
		} else if (n->kind != TL_THREAD) {
			kind = KIND_STARTUP;
		}
		out->nodes[v].kind = kind;
		if (parent >= 0)
			proc_link_child(out, parent, v);
		else
			proc_link_root(out, v);
		map[i] = v;
	}
	buf_release(&name);
	free(map);
}

const struct proc *export_tree(const struct proc *pr, struct proc *view)
{
	if (!pr->timeline)
		return pr;
	timeline_to_proc(pr->timeline, pr, view);
	return view;
}

void export_add_target(struct buf *out, const struct profile *p, size_t max)
{
	struct buf t = BUF_INIT;
	size_t i;

	for (i = 0; i < p->target.nr; i++)
		buf_addf(&t, "%s%s", i ? " " : "", p->target.v[i]);
	fit_add_command(out, t.buf, max);
	buf_release(&t);
}

void export_proc_label(const struct proc *pr, size_t idx, struct buf *out)
{
	struct buf tmp = BUF_INIT;

	if (pr->argv && *pr->argv) {
		fit_add_command(&tmp, pr->argv, 80);
	} else {
		buf_addf(&tmp, "process %zu", idx + 1);
	}
	if (pr->pid >= 0)
		buf_addf(&tmp, " (pid %ld)", pr->pid);
	export_add_clean(out, tmp.buf);
	buf_release(&tmp);
}

void export_add_clean(struct buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n) {
		size_t len = utf8_seq_len(p, n);

		if (!len || (len == 1 && (*p < 0x20 || *p == 0x7f))) {
			buf_addch(out, '?');
			len = 1;
		} else {
			buf_add(out, p, len);
		}
		p += len;
		n -= len;
	}
}

void export_add_xml(struct buf *out, const char *s)
{
	struct buf clean = BUF_INIT;
	size_t i;

	export_add_clean(&clean, s);
	for (i = 0; i < clean.len; i++) {
		switch (clean.buf[i]) {
		case '&': buf_adds(out, "&amp;"); break;
		case '<': buf_adds(out, "&lt;"); break;
		case '>': buf_adds(out, "&gt;"); break;
		case '"': buf_adds(out, "&quot;"); break;
		case '\'': buf_adds(out, "&#39;"); break;
		default: buf_addch(out, clean.buf[i]);
		}
	}
	buf_release(&clean);
}

void export_add_json(struct buf *out, const char *s)
{
	struct buf clean = BUF_INIT;

	export_add_clean(&clean, s);
	buf_add_json_str(out, clean.buf, clean.len);
	buf_release(&clean);
}

void export_add_us(struct buf *out, int64_t ns)
{
	if (ns < 0) {
		buf_addch(out, '-');
		ns = -ns;
	}
	buf_add_i64(out, ns / 1000);
	buf_addf(out, ".%03d", (int)(ns % 1000));
}
