/*
 * The C side of the in-process tracer: prepares a traced child's environment,
 * reads every process's trace file (docs/trace-format.md) and merges the
 * traces with the importtime trees of the run.
 */
#include "trace.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builtin.h"
#include "leftover.h"
#include "trace_build.h"

#define MAX_FIELDS 64

/* Per-thread stack of open imports while parsing. */
struct tstack {
	long tid;
	int32_t *v;
	size_t nr, alloc;
};

/* Parse state beside the proc being built. */
struct tparse {
	struct trace_proc *tp;
	struct tstack *stacks;
	size_t nr_stacks, alloc_stacks;
	int64_t *find_end; /* absolute, per node; UNKNOWN */
	int64_t *exec_at;
	size_t alloc_side;
	int64_t base; /* proc.start_ns */
	int64_t last_t;
	int32_t compile_node; /* a compile event waiting for its end */
	long compile_tid;
	int64_t compile_t;
	bool header;
};

/* Splits a line into TAB-separated fields and unescapes each in place. */
static size_t split_fields(char *line, char **f, size_t max)
{
	size_t nr = 0;
	char *p = line;

	for (;;) {
		char *tab = strchr(p, '\t');
		char *r, *w;

		if (nr == max)
			break;
		if (tab)
			*tab = '\0';
		f[nr++] = p;
		for (r = w = p; *r; r++) {
			if (*r != '\\' || !r[1]) {
				*w++ = *r;
				continue;
			}
			r++;
			if (*r == 't')
				*w++ = '\t';
			else if (*r == 'n')
				*w++ = '\n';
			else if (*r == 'r')
				*w++ = '\r';
			else if (*r == 'x' && r[1] && r[2]) {
				char hex[3] = { r[1], r[2], '\0' };
				long c = strtol(hex, NULL, 16);

				*w++ = c > 0 ? (char)c : '?';
				r += 2;
			} else
				*w++ = *r;
		}
		*w = '\0';
		if (!tab)
			break;
		p = tab + 1;
	}
	return nr;
}

static int parse_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

static struct tstack *stack_for(struct tparse *ps, long tid)
{
	size_t i;

	for (i = 0; i < ps->nr_stacks; i++)
		if (ps->stacks[i].tid == tid)
			return &ps->stacks[i];
	ALLOC_GROW(ps->stacks, ps->nr_stacks + 1, ps->alloc_stacks);
	memset(&ps->stacks[ps->nr_stacks], 0, sizeof(ps->stacks[0]));
	ps->stacks[ps->nr_stacks].tid = tid;
	return &ps->stacks[ps->nr_stacks++];
}

static int32_t stack_top(const struct tstack *st)
{
	return st->nr ? st->v[st->nr - 1] : -1;
}

static void add_event(struct proc *pr, int64_t t_rel, const char *name, const char *detail, int32_t node)
{
	struct proc_event *e;

	ALLOC_GROW(pr->events, pr->nr_events + 1, pr->alloc_events);
	e = &pr->events[pr->nr_events++];
	e->t_ns = t_rel;
	e->name = proc_intern(pr, name, strlen(name));
	e->detail = proc_intern(pr, detail, strlen(detail));
	e->node = node;
}

static void end_pending_compile(struct tparse *ps, long tid, int64_t t)
{
	struct proc *pr = &ps->tp->proc;

	if (ps->compile_node < 0 || ps->compile_tid != tid)
		return;
	pr->timing[ps->compile_node].compile_ns = t - ps->compile_t;
	ps->compile_node = -1;
}

static int64_t ceil_us(int64_t ns)
{
	return ns <= 0 ? 0 : (ns + 999) / 1000;
}

static void on_start(struct tparse *ps, int64_t t, long tid, int64_t rss, const char *name)
{
	struct proc *pr = &ps->tp->proc;
	struct tstack *st = stack_for(ps, tid);
	int32_t parent = stack_top(st);
	int32_t i = proc_add_node(pr, name, strlen(name), (uint32_t)st->nr, 0, 0);

	if (pr->nr_nodes > ps->alloc_side) {
		ps->alloc_side = pr->alloc_nodes;
		ps->find_end = xrealloc(ps->find_end, st_mult(ps->alloc_side, sizeof(int64_t)));
		ps->exec_at = xrealloc(ps->exec_at, st_mult(ps->alloc_side, sizeof(int64_t)));
	}
	ps->find_end[i] = ps->exec_at[i] = UNKNOWN;
	pr->timing[i].start_ns = t - ps->base;
	pr->timing[i].rss_start_kb = rss >= 0 ? rss : UNKNOWN;
	if (parent >= 0)
		proc_link_child(pr, parent, i);
	else
		proc_link_root(pr, i);
	ALLOC_GROW(st->v, st->nr + 1, st->alloc);
	st->v[st->nr++] = i;
}

static void on_find(struct tparse *ps, int64_t t, long tid, const char *name, const char *origin)
{
	struct proc *pr = &ps->tp->proc;
	int32_t i = stack_top(stack_for(ps, tid));

	if (i < 0 || strcmp(node_name(pr, i), name) || ps->find_end[i] != UNKNOWN)
		return;
	ps->find_end[i] = t;
	pr->timing[i].find_ns = t - (pr->timing[i].start_ns + ps->base);
	if (*origin && *origin != '<' && strcmp(origin, "built-in") && strcmp(origin, "frozen")) {
		pr->timing[i].file = proc_intern(pr, origin, strlen(origin));
		if (ends_with(origin, ".so") || ends_with(origin, ".pyd"))
			pr->nodes[i].flags |= NODE_NATIVE;
	}
}

static void close_node(struct tparse *ps, int32_t i, int64_t t, int64_t rss)
{
	struct proc *pr = &ps->tp->proc;
	struct imp_timing *tm = &pr->timing[i];

	tm->end_ns = t - ps->base;
	tm->rss_end_kb = rss >= 0 ? rss : UNKNOWN;
	if (ps->find_end[i] != UNKNOWN) {
		if (ps->exec_at[i] != UNKNOWN) {
			tm->load_ns = ps->exec_at[i] - ps->find_end[i];
			tm->exec_ns = t - ps->exec_at[i];
		} else {
			tm->load_ns = t - ps->find_end[i];
		}
	}
	pr->nodes[i].cum_us = ceil_us(tm->end_ns - tm->start_ns);
}

static void on_end(struct tparse *ps, int64_t t, long tid, int64_t rss, const char *name, const char *exc)
{
	struct proc *pr = &ps->tp->proc;
	struct tstack *st = stack_for(ps, tid);
	size_t k;

	for (k = st->nr; k > 0; k--)
		if (!strcmp(node_name(pr, st->v[k - 1]), name))
			break;
	if (!k) {
		ps->tp->unmatched_ends++;
		return;
	}
	/* Imports above it never reported their end: the tracer missed it. */
	while (st->nr > k) {
		int32_t j = st->v[--st->nr];

		close_node(ps, j, t, -1);
		pr->nodes[j].flags |= NODE_OPEN;
	}
	st->nr--;
	close_node(ps, st->v[st->nr], t, rss);
	if (exc) {
		pr->nodes[st->v[st->nr]].flags |= NODE_FAILED;
		add_event(pr, t - ps->base, "import.failed", exc, st->v[st->nr]);
	}
}

static void on_audit(struct tparse *ps, int64_t t, long tid, const char *event, const char *detail)
{
	struct proc *pr = &ps->tp->proc;
	int32_t i = stack_top(stack_for(ps, tid));
	const char *file = i >= 0 ? proc_str(pr, pr->timing[i].file) : "";

	if (!strcmp(event, "exec")) {
		/* The module body starts: the end of the load phase. */
		if (i >= 0 && ps->exec_at[i] == UNKNOWN && (!*file || !strcmp(file, detail)))
			ps->exec_at[i] = t;
		return;
	}
	if (!strcmp(event, "open")) {
		/* .py/.pyc reads and bytecode-cache writes are import mechanics, not side effects. */
		if (starts_with(detail, "r:") || (strstr(detail, "/__pycache__/") && strstr(detail, ".pyc")))
			return;
	}
	if (!strcmp(event, "compile") && i >= 0 &&
	    (!strcmp(file, detail) || (!*file && ends_with(detail, ".py")))) {
		pr->nodes[i].flags |= NODE_COMPILED;
		ps->compile_node = i;
		ps->compile_tid = tid;
		ps->compile_t = t;
	}
	add_event(pr, t - ps->base, event, detail, i);
}

static void on_note(struct tparse *ps, int64_t t, const char *tag, const char *text)
{
	struct proc *pr = &ps->tp->proc;
	struct buf b = BUF_INIT;
	size_t n = *text ? 1 : 0;
	const char *p;

	if (strcmp(tag, "sys.path"))
		return;
	for (p = text; *p; p++)
		if (*p == '\n')
			n++;
	buf_addf(&b, "%zu entries: ", n);
	for (p = text; *p; p++)
		buf_addch(&b, *p == '\n' ? ':' : *p);
	add_event(pr, t - ps->base, "sys.path", b.buf, -1);
	buf_release(&b);
}

static void copy_field(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* One record; returns -1 when it is malformed. */
static int parse_record(struct tparse *ps, char **f, size_t nf)
{
	struct trace_proc *tp = ps->tp;
	struct proc *pr = &tp->proc;
	int64_t t, tid = 0, rss = -1, v;
	char type = f[0][0];

	if (f[0][0] == '#' || !f[0][0] || f[0][1])
		return f[0][0] == '#' ? 0 : -1;
	if (nf < 2 || parse_i64(f[1], &t) < 0)
		return -1;
	if (type == 'H') {
		if (nf < 8 || parse_i64(f[2], &v) < 0)
			return -1;
		pr->pid = (long)v;
		if (parse_i64(f[3], &v) < 0)
			return -1;
		pr->ppid = (long)v;
		if (parse_i64(f[4], &v) < 0)
			return -1;
		pr->start_ns = v > 0 && v <= t ? v : t;
		ps->base = pr->start_ns;
		copy_field(tp->impl, sizeof(tp->impl), f[5]);
		copy_field(tp->version, sizeof(tp->version), f[6]);
		tp->audit = !strcmp(f[7], "audit");
		ps->header = true;
		ps->last_t = t;
		return 0;
	}
	if (!ps->header)
		return -1;
	if (t > ps->last_t)
		ps->last_t = t;
	if (strchr("SEFfAN", type)) {
		if (nf < 4 || parse_i64(f[2], &tid) < 0)
			return -1;
		end_pending_compile(ps, (long)tid, t);
	}
	switch (type) {
	case 'V': {
		struct buf b = BUF_INIT;
		size_t k;

		for (k = 2; k < nf; k++) {
			if (k > 2)
				buf_addch(&b, ' ');
			buf_adds(&b, f[k]);
		}
		free(pr->argv);
		pr->argv = buf_detach(&b, NULL);
		return 0;
	}
	case 'S':
	case 'E':
	case 'F':
		if (nf < (type == 'F' ? 6u : 5u) || parse_i64(f[3], &rss) < 0 || !*f[4])
			return -1;
		if (type == 'S')
			on_start(ps, t, (long)tid, rss, f[4]);
		else
			on_end(ps, t, (long)tid, rss, f[4], type == 'F' ? f[5] : NULL);
		return 0;
	case 'f':
		on_find(ps, t, (long)tid, f[3], nf > 4 ? f[4] : "");
		return 0;
	case 'A':
		if (nf < 5)
			return -1;
		on_audit(ps, t, (long)tid, f[3], f[4]);
		return 0;
	case 'N':
		if (nf < 5)
			return -1;
		on_note(ps, t, f[3], f[4]);
		return 0;
	case 'Q':
		tp->clean_exit = true;
		return 0;
	case 'R':
		free(tp->stopped);
		tp->stopped = xstrdup(nf > 2 ? f[2] : "unknown error");
		return 0;
	default:
		return 0; /* unknown types are for later versions */
	}
}

/* After the last record: open imports, self times, the end of the process. */
static void parse_finish(struct tparse *ps)
{
	struct proc *pr = &ps->tp->proc;
	size_t i, k;

	if (ps->compile_node >= 0)
		pr->timing[ps->compile_node].compile_ns = ps->last_t - ps->compile_t;
	for (k = 0; k < ps->nr_stacks; k++) {
		struct tstack *st = &ps->stacks[k];

		while (st->nr) {
			int32_t j = st->v[--st->nr];

			/* Never finished: the process died (or exec'd) inside it. */
			pr->nodes[j].flags |= NODE_OPEN;
			pr->nodes[j].cum_us = ceil_us(ps->last_t - ps->base - pr->timing[j].start_ns);
		}
	}
	for (i = 0; i < pr->nr_nodes; i++) {
		int64_t sum = 0;
		int32_t c;

		for (c = pr->nodes[i].first_child; c >= 0; c = pr->nodes[c].next_sibling)
			sum += pr->nodes[c].cum_us;
		if (sum > pr->nodes[i].cum_us)
			pr->nodes[i].cum_us = sum;
		pr->nodes[i].self_us = pr->nodes[i].cum_us - sum;
	}
	pr->end_ns = ps->last_t;
}

struct name_ent {
	const char *name;
	size_t post;
	int32_t node;
};

static int cmp_name_ent(const void *a, const void *b)
{
	const struct name_ent *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->post < y->post ? -1 : x->post > y->post;
}

/* Fills order[] with nodes in post-order (children before parents). */
static size_t postorder(const struct proc *pr, int32_t *order)
{
	size_t nr = 0;
	int32_t i = pr->first_root;

	if (i < 0)
		return 0;
	while (pr->nodes[i].first_child >= 0)
		i = pr->nodes[i].first_child;
	while (i >= 0) {
		order[nr++] = i;
		if (pr->nodes[i].next_sibling >= 0) {
			i = pr->nodes[i].next_sibling;
			while (pr->nodes[i].first_child >= 0)
				i = pr->nodes[i].first_child;
		} else {
			i = pr->nodes[i].parent;
		}
	}
	return nr;
}

struct sort_ctx {
	const int32_t *parent;
	const bool *timed;
	const int64_t *key;
};

static int cmp_child(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	if (c->parent[x] != c->parent[y])
		return c->parent[x] < c->parent[y] ? -1 : 1;
	if (c->timed[x] != c->timed[y])
		return c->timed[x] ? 1 : -1;
	if (c->key[x] != c->key[y])
		return c->key[x] < c->key[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int64_t children_sum(const struct proc *pr, int32_t i)
{
	int64_t sum = 0;
	int32_t c;

	for (c = pr->nodes[i].first_child; c >= 0; c = pr->nodes[c].next_sibling)
		if (pr->nodes[c].cum_us > 0)
			sum += pr->nodes[c].cum_us;
	return sum;
}

/* One merge of a trace into an importtime process (trace_merge). */
struct merge {
	struct proc *it; /* importtime's process, replaced at the end */
	const struct proc *tr; /* the trace's own tree */
	size_t n, m; /* their node counts */
	int32_t *map; /* trace node -> node of out */
	int32_t *it_match; /* importtime node -> trace node, -1 */
	int64_t *old_sum; /* importtime: sum of each node's children's cum */
	struct proc out; /* importtime's nodes keep their indexes, trace-only ones follow */
};

/* The first entry named name in ents (sorted by name, then completion order), or NULL. */
static struct name_ent *first_named(struct name_ent *ents, size_t nr, const char *name)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (strcmp(ents[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nr && !strcmp(ents[lo].name, name) ? &ents[lo] : NULL;
}

/*
 * Pairs trace nodes with importtime rows of the same name, both taken in
 * completion order (rows are printed when an import ends); open trace nodes
 * never have a row.
 */
static void match_by_name(struct merge *mg)
{
	const struct proc *pr = mg->it, *tr = mg->tr;
	int32_t *post = xmalloc(st_mult(mg->n + 1, sizeof(int32_t)));
	int32_t *order = xmalloc(st_mult(mg->m + 1, sizeof(int32_t)));
	struct name_ent *ents = xmalloc(st_mult(mg->n + 1, sizeof(*ents)));
	bool *used = xcalloc(mg->n + 1, sizeof(bool));
	size_t i, a, b, nr_post = postorder(pr, post), nr_ent = 0;

	for (i = 0; i < nr_post; i++) {
		if (pr->nodes[post[i]].flags & NODE_CACHED)
			continue;
		ents[nr_ent].name = node_name(pr, post[i]);
		ents[nr_ent].post = i;
		ents[nr_ent].node = post[i];
		nr_ent++;
	}
	if (nr_ent)
		qsort(ents, nr_ent, sizeof(*ents), cmp_name_ent);
	for (i = 0; i < mg->n; i++)
		mg->it_match[i] = -1;
	for (i = 0; i < mg->m; i++) {
		order[i] = (int32_t)i;
		mg->map[i] = -1;
	}
	/* Insertion sort by end time is fine: a trace is nearly in that order. */
	for (a = 1; a < mg->m; a++) {
		int32_t x = order[a];
		int64_t ex = tr->timing[x].end_ns;

		for (b = a; b > 0 && tr->timing[order[b - 1]].end_ns > ex; b--)
			order[b] = order[b - 1];
		order[b] = x;
	}
	for (i = 0; i < mg->m; i++) {
		int32_t t = order[i];
		const char *name = node_name(tr, t);
		struct name_ent *e;

		if (tr->nodes[t].flags & NODE_OPEN)
			continue;
		for (e = first_named(ents, nr_ent, name); e && e < ents + nr_ent && !strcmp(e->name, name); e++) {
			if (used[e - ents])
				continue;
			used[e - ents] = true;
			mg->map[t] = e->node;
			mg->it_match[e->node] = t;
			break;
		}
	}
	free(post);
	free(order);
	free(ents);
	free(used);
}

static uint32_t intern_from(struct proc *dst, const struct proc *src, uint32_t off)
{
	const char *s = proc_str(src, off);

	return off ? proc_intern(dst, s, strlen(s)) : 0;
}

/* Fills out's nodes: importtime's first (same indexes), then trace-only ones. */
static void copy_nodes(struct merge *mg)
{
	const struct proc *pr = mg->it, *tr = mg->tr;
	struct proc *out = &mg->out;
	size_t i;

	mg->old_sum = xcalloc(mg->n + 1, sizeof(int64_t));
	for (i = 0; i < mg->n; i++) {
		const struct imp_node *s = &pr->nodes[i];
		const char *nm = node_name(pr, (int32_t)i);
		int32_t k = proc_add_node(out, nm, strlen(nm), s->depth, s->self_us, s->cum_us);

		out->nodes[k].flags = s->flags;
		out->nodes[k].kind = s->kind;
		if (pr->timing) {
			out->timing[k] = pr->timing[i];
			out->timing[k].file = intern_from(out, pr, pr->timing[i].file);
		}
		mg->old_sum[i] = children_sum(pr, (int32_t)i);
	}
	for (i = 0; i < mg->m; i++) {
		const struct imp_node *s = &tr->nodes[i];
		int32_t k = mg->map[i];

		if (k < 0) {
			const char *nm = node_name(tr, (int32_t)i);

			k = proc_add_node(out, nm, strlen(nm), s->depth, s->self_us, s->cum_us);
			out->nodes[k].flags = s->flags | NODE_TRACE_ONLY;
			mg->map[i] = k;
		} else {
			out->nodes[k].flags |= s->flags & (NODE_FAILED | NODE_OPEN | NODE_COMPILED | NODE_NATIVE);
		}
		out->timing[k] = tr->timing[i];
		out->timing[k].file = intern_from(out, tr, tr->timing[i].file);
	}
}

/*
 * Links out: parents from the trace where it has one, else importtime's;
 * siblings by start time, untimed rows (from before the tracer started)
 * first in importtime's order; depths recomputed.
 */
static void relink(struct merge *mg)
{
	const struct proc *pr = mg->it, *tr = mg->tr;
	struct proc *out = &mg->out;
	size_t total = out->nr_nodes, i, k = 0;
	int32_t *parent = xmalloc(st_mult(total + 1, sizeof(int32_t)));
	int32_t *sorted = xmalloc(st_mult(total + 1, sizeof(int32_t)));
	bool *timed = xcalloc(total + 1, sizeof(bool));
	int64_t *key = xcalloc(total + 1, sizeof(int64_t));
	struct sort_ctx ctx = { parent, timed, key };
	int32_t j;

	for (j = pr->first_root; j >= 0; j = proc_preorder_next(pr, j))
		key[j] = (int64_t)k++;
	for (i = 0; i < mg->n; i++) {
		int32_t t = mg->it_match[i];

		parent[i] = pr->nodes[i].parent;
		if (t >= 0 && tr->nodes[t].parent >= 0)
			parent[i] = mg->map[tr->nodes[t].parent];
		if (t >= 0) {
			timed[i] = true;
			key[i] = tr->timing[t].start_ns;
		}
	}
	for (i = 0; i < mg->m; i++) {
		int32_t o = mg->map[i];

		if (o < (int32_t)mg->n)
			continue;
		parent[o] = tr->nodes[i].parent >= 0 ? mg->map[tr->nodes[i].parent] : -1;
		timed[o] = true;
		key[o] = tr->timing[i].start_ns;
	}
	/* A contradiction between the two trees must not make a cycle. */
	for (i = 0; i < total; i++) {
		size_t steps = 0;

		for (j = parent[i]; j >= 0 && steps <= total; j = parent[j])
			steps++;
		if (steps > total)
			parent[i] = -1;
	}
	for (i = 0; i < total; i++)
		sorted[i] = (int32_t)i;
	proc_unlink_all(out);
	if (total)
		qsort_r(sorted, total, sizeof(int32_t), cmp_child, &ctx);
	for (i = 0; i < total; i++) {
		if (parent[sorted[i]] >= 0)
			proc_link_child(out, parent[sorted[i]], sorted[i]);
		else
			proc_link_root(out, sorted[i]);
	}
	for (j = out->first_root; j >= 0; j = proc_preorder_next(out, j))
		out->nodes[j].depth = out->nodes[j].parent >= 0 ? out->nodes[out->nodes[j].parent].depth + 1 : 0;
	free(parent);
	free(sorted);
	free(timed);
	free(key);
}

/*
 * self = cum - children's cum where the children changed; importtime's own
 * rounding is kept where they did not.  Children first (post-order).
 */
static void fix_self_times(struct merge *mg)
{
	struct proc *out = &mg->out;
	int32_t *post = xmalloc(st_mult(out->nr_nodes + 1, sizeof(int32_t)));
	size_t i, nr = postorder(out, post);

	for (i = 0; i < nr; i++) {
		int32_t k = post[i];
		struct imp_node *nd = &out->nodes[k];
		int64_t sum = children_sum(out, k);

		if (k < (int32_t)mg->n) {
			if (sum != mg->old_sum[k] && nd->cum_us >= 0)
				nd->self_us = nd->cum_us - sum;
		} else {
			if (sum > nd->cum_us)
				nd->cum_us = sum;
			nd->self_us = nd->cum_us - sum;
		}
		if (nd->self_us < 0 && !(nd->flags & NODE_NEGATIVE))
			nd->self_us = 0;
	}
	free(post);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Number of pr's node names that also name a node of the sorted list. */
static size_t pair_score(const struct proc *pr, const char **names, size_t nr)
{
	size_t i, score = 0;

	for (i = 0; i < pr->nr_nodes; i++) {
		const char *nm = node_name(pr, (int32_t)i);

		if (bsearch(&nm, names, nr, sizeof(*names), cmp_str))
			score++;
	}
	return score;
}

static void warn_about(struct profile *p, const struct trace_proc *tp)
{
	long pid = tp->proc.pid;

	if (tp->stopped)
		profile_add_warning(p, 0, "trace of pid %ld: the tracer stopped itself: %s", pid, tp->stopped);
	if (tp->bad_records)
		profile_add_warning(p, 0, "trace of pid %ld: %zu malformed records skipped", pid,
				    tp->bad_records);
	if (!tp->audit)
		profile_add_warning(p, 0,
				    "trace of pid %ld: Python %s has no audit hooks; imports were traced, "
				    "side effects and compilation were not",
				    pid, tp->version);
}

static void write_note(const char *dir, const char *name, const char *text)
{
	struct buf path = BUF_INIT;
	FILE *f;

	buf_addf(&path, "%s/%s", dir, name);
	f = fopen(path.buf, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	buf_release(&path);
}

static bool keep_trace(void)
{
	const char *keep = getenv("COLDSTART_KEEP_TRACE");

	return keep && *keep && strcmp(keep, "0");
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int trace_parse(struct trace_proc *tp, const char *text, size_t len, struct buf *err)
{
	struct tparse ps;
	const char *end, *p = text;
	char *line = NULL, *f[MAX_FIELDS];
	size_t line_alloc = 0, k;
	int ret = -1;

	memset(tp, 0, sizeof(*tp));
	proc_init(&tp->proc);
	proc_ensure_timing(&tp->proc);
	memset(&ps, 0, sizeof(ps));
	ps.tp = tp;
	ps.compile_node = -1;
	end = memchr(text, '\0', len);
	if (end)
		len = (size_t)(end - text);
	end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n, nf;

		if (!nl)
			break; /* a record cut short by a kill */
		n = (size_t)(nl - p);
		ALLOC_GROW(line, n + 1, line_alloc);
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl + 1;
		if (!ps.header && tp->records == 0 && strcmp(line, "#coldstart-trace 1")) {
			buf_addf(err, "not a coldstart trace (first line '%.40s')", line);
			goto out;
		}
		nf = split_fields(line, f, MAX_FIELDS);
		tp->records++;
		if (parse_record(&ps, f, nf) < 0)
			tp->bad_records++;
	}
	if (!ps.header) {
		buf_addf(err, "not a coldstart trace (no header record)");
		goto out;
	}
	parse_finish(&ps);
	ret = 0;
out:
	for (k = 0; k < ps.nr_stacks; k++)
		free(ps.stacks[k].v);
	free(ps.stacks);
	free(ps.find_end);
	free(ps.exec_at);
	free(line);
	return ret;
}

int trace_read_file(struct trace_proc *tp, const char *path, struct buf *err)
{
	struct buf text = BUF_INIT;
	int ret;

	if (buf_read_file(&text, path) < 0) {
		memset(tp, 0, sizeof(*tp));
		proc_init(&tp->proc);
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		buf_release(&text);
		return -1;
	}
	ret = trace_parse(tp, text.buf, text.len, err);
	buf_release(&text);
	return ret;
}

void trace_proc_release(struct trace_proc *tp)
{
	proc_release(&tp->proc);
	free(tp->stopped);
	tp->stopped = NULL;
}

void trace_merge(struct proc *pr, const struct trace_proc *tp)
{
	struct merge mg;

	memset(&mg, 0, sizeof(mg));
	mg.it = pr;
	mg.tr = &tp->proc;
	mg.n = pr->nr_nodes;
	mg.m = mg.tr->nr_nodes;
	mg.map = xmalloc(st_mult(mg.m + 1, sizeof(int32_t)));
	mg.it_match = xmalloc(st_mult(mg.n + 1, sizeof(int32_t)));
	match_by_name(&mg);
	proc_init(&mg.out);
	proc_ensure_timing(&mg.out);
	copy_nodes(&mg);
	relink(&mg);
	fix_self_times(&mg);
	for (size_t i = 0; i < mg.tr->nr_events; i++) {
		const struct proc_event *e = &mg.tr->events[i];

		add_event(&mg.out, e->t_ns, proc_str(mg.tr, e->name), proc_str(mg.tr, e->detail),
			  e->node >= 0 ? mg.map[e->node] : -1);
	}
	mg.out.pid = mg.tr->pid;
	mg.out.ppid = mg.tr->ppid;
	mg.out.argv = mg.tr->argv ? xstrdup(mg.tr->argv) : (pr->argv ? xstrdup(pr->argv) : NULL);
	mg.out.start_ns = mg.tr->start_ns;
	mg.out.end_ns = mg.tr->end_ns;
	proc_release(pr);
	*pr = mg.out;
	free(mg.map);
	free(mg.it_match);
	free(mg.old_sum);
}

void trace_merge_run(struct profile *p, struct run *run, const struct trace_proc *tps, size_t nr)
{
	size_t orig = run->nr_procs, i, k;
	bool *taken = xcalloc(orig + 1, sizeof(bool));
	size_t *order = xmalloc(st_mult(nr + 1, sizeof(size_t)));
	long *dest = xmalloc(st_mult(nr + 1, sizeof(long)));
	long root = -1;

	/* Trace files by process start, so ties pair in the order processes ran. */
	for (i = 0; i < nr; i++)
		order[i] = i;
	for (i = 1; i < nr; i++) {
		size_t x = order[i];

		for (k = i; k > 0 && tps[order[k - 1]].proc.start_ns > tps[x].proc.start_ns; k--)
			order[k] = order[k - 1];
		order[k] = x;
	}
	for (i = 0; i < nr; i++) {
		const struct trace_proc *tp = &tps[order[i]];
		const char **names = xmalloc(st_mult(tp->proc.nr_nodes + 1, sizeof(char *)));
		size_t best = 0, best_score = 0, j;

		for (j = 0; j < tp->proc.nr_nodes; j++)
			names[j] = node_name(&tp->proc, (int32_t)j);
		if (tp->proc.nr_nodes)
			qsort(names, tp->proc.nr_nodes, sizeof(char *), cmp_str);
		for (j = 0; j < orig; j++) {
			size_t s;

			if (taken[j] || run->procs[j].pid != -1)
				continue;
			s = pair_score(&run->procs[j], names, tp->proc.nr_nodes);
			if (s > best_score) {
				best_score = s;
				best = j;
			}
		}
		free(names);
		if (best_score) {
			taken[best] = true;
			trace_merge(&run->procs[best], tp);
			dest[order[i]] = (long)best;
		} else {
			struct proc *pr = run_add_proc(run);

			trace_merge(pr, tp);
			dest[order[i]] = (long)(run->nr_procs - 1);
		}
		warn_about(p, tp);
	}

	/* The target: the earliest traced process no other traced process started. */
	for (i = 0; i < nr; i++) {
		const struct trace_proc *tp = &tps[order[i]];
		bool child = false;

		for (k = 0; k < nr; k++)
			if (k != order[i] && tps[k].proc.pid == tp->proc.ppid)
				child = true;
		if (!child) {
			root = dest[order[i]];
			break;
		}
	}
	if (root > 0) {
		struct proc tmp = run->procs[root];

		memmove(&run->procs[1], &run->procs[0], (size_t)root * sizeof(struct proc));
		run->procs[0] = tmp;
	}
	free(taken);
	free(order);
	free(dest);
}

int trace_prepare(struct trace_session *ts, const char *python, struct strvec *env, struct buf *err)
{
	const char *datadir = coldstart_datadir(), *old;
	struct buf path = BUF_INIT, berr = BUF_INIT, pp = BUF_INIT, note = BUF_INIT;
	struct private_dir pd;
	char *so = NULL, *slash;
	int ret = -1;

	memset(ts, 0, sizeof(*ts));
	ts->lock_fd = -1;
	if (!datadir) {
		buf_addf(err, "cannot find coldstart's python directory (set COLDSTART_DATADIR)");
		goto out;
	}
	buf_addf(&path, "%s/coldstart/_boot/sitecustomize.py", datadir);
	if (access(path.buf, R_OK) < 0) {
		buf_addf(err, "cannot read '%s': %s", path.buf, strerror(errno));
		goto out;
	}
	buf_reset(&path);
	if (private_dir_create(&pd, keep_trace() ? "trace-kept" : "trace", err) < 0)
		goto out;
	ts->dir = pd.path;
	ts->lock_fd = pd.lock_fd;
	buf_addf(&path, "%s/coldstart/_boot", datadir);
	ts->boot_dir = buf_detach(&path, NULL);

	if (python && trace_build_ensure(python, datadir, ts->dir, &so, &note, &berr) < 0)
		write_note(ts->dir, "fallback.txt", berr.buf);
	if (note.len)
		write_note(ts->dir, "cache.txt", note.buf);
	buf_addf(&pp, "%s", ts->boot_dir);
	old = strvec_getenv(env, "PYTHONPATH");
	if (old && *old)
		buf_addf(&pp, ":%s", old);
	strvec_setenv(env, "PYTHONPATH", pp.buf);
	strvec_setenv(env, "COLDSTART_TRACE_DIR", ts->dir);
	if (so) {
		slash = strrchr(so, '/');
		if (slash)
			*slash = '\0';
		strvec_setenv(env, "COLDSTART_TRACER_PATH", so);
		strvec_setenv(env, "COLDSTART_TRACER", "");
	} else if (python) {
		strvec_setenv(env, "COLDSTART_TRACER", "py");
	}
	ret = 0;
out:
	free(so);
	buf_release(&path);
	buf_release(&berr);
	buf_release(&note);
	buf_release(&pp);
	return ret;
}

int trace_collect(struct trace_session *ts, struct profile *p, struct run *run, struct buf *err)
{
	DIR *d = NULL;
	struct dirent *de;
	char **files = NULL;
	size_t nr = 0, alloc = 0, i, nr_tp = 0;
	struct trace_proc *tps = NULL;
	struct buf path = BUF_INIT, note = BUF_INIT, perr = BUF_INIT;
	int ret = -1;

	if (!ts->dir) {
		buf_addf(err, "no trace session");
		return -1;
	}
	d = opendir(ts->dir);
	if (!d) {
		buf_addf(err, "cannot open '%s': %s", ts->dir, strerror(errno));
		goto out;
	}
	while ((de = readdir(d))) {
		if (!ends_with(de->d_name, ".trace"))
			continue;
		ALLOC_GROW(files, nr + 1, alloc);
		files[nr++] = xstrdup(de->d_name);
	}
	if (nr)
		qsort(files, nr, sizeof(char *), cmp_cstr);
	buf_addf(&path, "%s/fallback.txt", ts->dir);
	if (!buf_read_file(&note, path.buf) && note.len)
		profile_add_warning(p, 0, "the C tracer is unavailable, the pure-Python tracer was used: %s",
				    note.buf);
	buf_reset(&path);
	buf_reset(&note);
	buf_addf(&path, "%s/cache.txt", ts->dir);
	if (!buf_read_file(&note, path.buf) && note.len)
		profile_add_warning(p, 0, "tracer build cache: %s", note.buf);
	if (!nr)
		profile_add_warning(p, 0,
				    "no process wrote a trace (not Python 3.7+, or run with -I, -E or -S)");
	tps = xcalloc(nr + 1, sizeof(*tps));
	for (i = 0; i < nr; i++) {
		buf_reset(&path);
		buf_reset(&perr);
		buf_addf(&path, "%s/%s", ts->dir, files[i]);
		if (trace_read_file(&tps[nr_tp], path.buf, &perr) < 0) {
			profile_add_warning(p, 0, "trace '%s': %s", files[i], perr.buf);
			trace_proc_release(&tps[nr_tp]);
			continue;
		}
		nr_tp++;
	}
	trace_merge_run(p, run, tps, nr_tp);
	if (keep_trace())
		profile_add_warning(p, 0, "trace files kept in '%s' (COLDSTART_KEEP_TRACE)", ts->dir);
	ret = 0;
out:
	if (d)
		closedir(d);
	for (i = 0; i < nr_tp; i++)
		trace_proc_release(&tps[i]);
	free(tps);
	for (i = 0; i < nr; i++)
		free(files[i]);
	free(files);
	buf_release(&path);
	buf_release(&note);
	buf_release(&perr);
	return ret;
}

void trace_session_release(struct trace_session *ts)
{
	DIR *d;
	struct dirent *de;
	struct buf path = BUF_INIT;

	if (ts->dir && !keep_trace()) {
		d = opendir(ts->dir);
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			buf_reset(&path);
			buf_addf(&path, "%s/%s", ts->dir, de->d_name);
			unlink(path.buf);
		}
		if (d)
			closedir(d);
		rmdir(ts->dir);
	}
	/* Only a prepared session has a lock: a zeroed one must not close fd 0. */
	if (ts->dir && ts->lock_fd >= 0)
		close(ts->lock_fd);
	ts->lock_fd = -1;
	free(ts->dir);
	free(ts->boot_dir);
	ts->dir = ts->boot_dir = NULL;
	buf_release(&path);
}
