/*
 * One process's trace merged with the importtime rows it printed: importtime
 * keeps its numbers where it has a row, the trace adds timing, CPU, events
 * and the imports importtime cannot see.  Then the processes of a run are
 * ordered and named.
 */
#include "ingest/trace_merge.h"

#include <stdlib.h>
#include <string.h>

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
	size_t first_gc; /* out's "[gc]" nodes are the last, from here */
	int32_t *gc_parent; /* for each of them, its import in out */
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
	int32_t *order = xmalloc(st_mult(mg->m + 1, sizeof(int32_t)));
	struct name_ent *ents = xmalloc(st_mult(mg->n + 1, sizeof(*ents)));
	bool *used = xcalloc(mg->n + 1, sizeof(bool));
	size_t i, a, b, nr_ent = 0, post = 0;
	int32_t j;

	for (j = proc_postorder_first(pr); j >= 0; j = proc_postorder_next(pr, j), post++) {
		if (pr->nodes[j].flags & NODE_CACHED)
			continue;
		ents[nr_ent].name = node_name(pr, j);
		ents[nr_ent].post = post;
		ents[nr_ent].node = j;
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
	free(order);
	free(ents);
	free(used);
}

static uint32_t intern_from(struct proc *dst, const struct proc *src, uint32_t off)
{
	const char *s = proc_str(src, off);

	return off ? proc_intern(dst, s, strlen(s)) : 0;
}

/*
 * Fills out's nodes: importtime's first (same indexes), then trace-only ones.
 * Where importtime printed nothing at all for the process (importtime was
 * off in it), no node is "without a row".
 */
static void copy_nodes(struct merge *mg)
{
	const struct proc *pr = mg->it, *tr = mg->tr;
	struct proc *out = &mg->out;
	uint32_t trace_only = mg->n ? NODE_TRACE_ONLY : 0;
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
			out->nodes[k].flags = s->flags | trace_only;
			mg->map[i] = k;
		} else {
			out->nodes[k].flags |= s->flags & (NODE_FAILED | NODE_OPEN | NODE_COMPILED | NODE_NATIVE);
		}
		out->timing[k] = tr->timing[i];
		out->timing[k].file = intern_from(out, tr, tr->timing[i].file);
	}
}

/*
 * A "[gc]" node under each import whose own time had collections (the
 * trace's G records): the pauses summed, so that the parent's self time,
 * cum minus its children's, no longer holds them (fix_self_times), and the
 * collector shows where it ran.  Its timing starts with the first pause and
 * lasts their sum; its CPU time is theirs.
 */
static void add_gc_nodes(struct merge *mg, const struct trace_proc *tp)
{
	struct proc *out = &mg->out;
	size_t i, nr = 0;

	mg->first_gc = out->nr_nodes;
	for (i = 0; i < mg->m && i < tp->nr_gc; i++)
		nr += tp->gc[i].count > 0 && mg->map[i] >= 0;
	mg->gc_parent = xmalloc(st_mult(nr + 1, sizeof(int32_t)));
	for (i = 0; i < mg->m && i < tp->nr_gc; i++) {
		const struct trace_gc *g = &tp->gc[i];
		int32_t p = mg->map[i], k;
		struct imp_timing *tm;

		if (!g->count || p < 0)
			continue;
		k = proc_add_node(out, GC_NODE_NAME, strlen(GC_NODE_NAME), out->nodes[p].depth + 1,
				  (g->wall_ns + 500) / 1000, (g->wall_ns + 500) / 1000);
		out->nodes[k].flags = NODE_GC | (out->nodes[p].flags & NODE_STARTUP);
		out->nodes[k].kind = out->nodes[p].kind;
		tm = &out->timing[k];
		tm->start_ns = g->first_ns - mg->tr->start_ns;
		tm->end_ns = tm->start_ns + g->wall_ns;
		tm->cpu_ns = g->cpu_ns;
		mg->gc_parent[(size_t)k - mg->first_gc] = p;
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
	for (i = mg->first_gc; i < total; i++) {
		parent[i] = mg->gc_parent[i - mg->first_gc];
		timed[i] = true;
		key[i] = out->timing[i].start_ns;
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
	int32_t k;

	for (k = proc_postorder_first(out); k >= 0; k = proc_postorder_next(out, k)) {
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
}

/* The pairing the caller knows: each row's trace node. */
static void match_given(struct merge *mg, const int32_t *match)
{
	size_t i;

	for (i = 0; i < mg->m; i++)
		mg->map[i] = -1;
	for (i = 0; i < mg->n; i++) {
		int32_t t = match[i];

		mg->it_match[i] = -1;
		if (t < 0 || (size_t)t >= mg->m || mg->map[t] >= 0 ||
		    strcmp(node_name(mg->it, (int32_t)i), node_name(mg->tr, t)))
			continue;
		mg->map[t] = (int32_t)i;
		mg->it_match[i] = t;
	}
}

/*
 * A trace its tracer stopped (a full file system) ends with imports still
 * open that went on to finish: importtime printed their rows after the stop.
 * Each open trace node takes the last row of its name that no trace node
 * has; the row's numbers stand, and the import is not open.  An open import
 * without such a row is one the process died inside.
 */
static void match_open_stopped(struct merge *mg)
{
	size_t i;

	for (i = 0; i < mg->m; i++) {
		const char *name = node_name(mg->tr, (int32_t)i);
		size_t k;

		if (!(mg->tr->nodes[i].flags & NODE_OPEN) || mg->map[i] >= 0)
			continue;
		for (k = mg->n; k > 0; k--) {
			int32_t j = (int32_t)(k - 1);

			if (mg->it_match[j] < 0 && !(mg->it->nodes[j].flags & NODE_CACHED) &&
			    !strcmp(node_name(mg->it, j), name)) {
				mg->map[i] = j;
				mg->it_match[j] = (int32_t)i;
				break;
			}
		}
	}
}

void trace_merge(struct proc *pr, const struct trace_proc *tp, const int32_t *match)
{
	const struct proc *tr = &tp->proc;
	struct merge mg;
	size_t i;

	memset(&mg, 0, sizeof(mg));
	mg.it = pr;
	mg.tr = tr;
	mg.n = pr->nr_nodes;
	mg.m = tr->nr_nodes;
	mg.map = xmalloc(st_mult(mg.m + 1, sizeof(int32_t)));
	mg.it_match = xmalloc(st_mult(mg.n + 1, sizeof(int32_t)));
	if (match)
		match_given(&mg, match);
	else
		match_by_name(&mg);
	if (tp->stopped)
		match_open_stopped(&mg);
	proc_init(&mg.out);
	proc_ensure_timing(&mg.out);
	copy_nodes(&mg);
	if (tp->stopped)
		for (i = 0; i < mg.m; i++) {
			int32_t k = mg.map[i];

			if (!(tr->nodes[i].flags & NODE_OPEN) || k < 0 || (size_t)k >= mg.n)
				continue;
			/* Finished after the stop: importtime's duration, no CPU time. */
			mg.out.nodes[k].flags &= ~NODE_OPEN;
			mg.out.timing[k].end_ns = mg.out.timing[k].start_ns + mg.out.nodes[k].cum_us * 1000;
			mg.out.timing[k].cpu_ns = UNKNOWN;
			mg.out.timing[k].rss_end_kb = UNKNOWN;
		}
	add_gc_nodes(&mg, tp);
	relink(&mg);
	fix_self_times(&mg);
	for (i = 0; i < tr->nr_events; i++) {
		const struct proc_event *e = &tr->events[i];

		proc_add_event(&mg.out, e->t_ns, proc_str(tr, e->name), proc_str(tr, e->detail),
			       e->node >= 0 ? mg.map[e->node] : -1);
	}
	for (i = 0; i < tr->nr_reads; i++)
		proc_add_read(&mg.out, proc_str(tr, tr->reads[i]));
	if (tr->nr_gc_pauses) {
		mg.out.gc_pauses = xmalloc(st_mult(tr->nr_gc_pauses, sizeof(*tr->gc_pauses)));
		memcpy(mg.out.gc_pauses, tr->gc_pauses, tr->nr_gc_pauses * sizeof(*tr->gc_pauses));
		mg.out.nr_gc_pauses = mg.out.alloc_gc_pauses = tr->nr_gc_pauses;
	}
	mg.out.pid = tr->pid;
	mg.out.ppid = tr->ppid;
	mg.out.argv = tr->argv ? xstrdup(tr->argv) : (pr->argv ? xstrdup(pr->argv) : NULL);
	mg.out.origin = tr->origin;
	mg.out.start_ns = tr->start_ns;
	/* A stopped trace's last record is not the process's end. */
	mg.out.end_ns = tp->stopped ? UNKNOWN : tr->end_ns;
	mg.out.tracer_ns = tr->tracer_ns;
	mg.out.startup_cpu_ns = tr->startup_cpu_ns;
	mg.out.cpu_ns = tr->cpu_ns;
	proc_release(pr);
	*pr = mg.out;
	free(mg.map);
	free(mg.it_match);
	free(mg.old_sum);
	free(mg.gc_parent);
}

/* What multiprocessing's own processes say in their argv. */
static const char *helper_role(const char *argv)
{
	if (!argv)
		return NULL;
	if (strstr(argv, "multiprocessing.forkserver import main"))
		return "forkserver";
	if (strstr(argv, "multiprocessing.resource_tracker import main") ||
	    strstr(argv, "multiprocessing.semaphore_tracker import main"))
		return "resource tracker";
	if (strstr(argv, "--multiprocessing-fork"))
		return "worker";
	return NULL;
}

/* The traced process that started procs[i]: the latest one with its ppid that began before it. */
static long parent_of(const struct run *run, size_t i)
{
	const struct proc *c = &run->procs[i];
	long best = -1;
	size_t k;

	if (c->pid <= 0)
		return -1;
	for (k = 0; k < run->nr_procs; k++) {
		const struct proc *p = &run->procs[k];

		if (k == i || p->pid != c->ppid || p->start_ns > c->start_ns)
			continue;
		if (best < 0 || p->start_ns > run->procs[best].start_ns)
			best = (long)k;
	}
	if (best < 0 && c->origin == ORIGIN_EXEC) {
		/* An exec without a fork: the same pid, an earlier trace. */
		for (k = 0; k < run->nr_procs; k++) {
			const struct proc *p = &run->procs[k];

			if (k != i && p->pid == c->pid && p->start_ns <= c->start_ns &&
			    (best < 0 || p->start_ns > run->procs[best].start_ns))
				best = (long)k;
		}
	}
	return best;
}

static void set_role(struct proc *pr, const char *role)
{
	free(pr->role);
	pr->role = xstrdup(role);
}

/* Appends i and its descendants, children in start order, to order[]. */
static void add_subtree(const struct run *run, const long *parent, size_t i, size_t *order, size_t *nr, bool *placed)
{
	size_t k;

	order[(*nr)++] = i;
	placed[i] = true;
	for (;;) {
		long next = -1;

		for (k = 0; k < run->nr_procs; k++)
			if (!placed[k] && parent[k] == (long)i &&
			    (next < 0 || run->procs[k].start_ns < run->procs[next].start_ns))
				next = (long)k;
		if (next < 0)
			break;
		add_subtree(run, parent, (size_t)next, order, nr, placed);
	}
}

void trace_assign_roles(struct run *run)
{
	size_t n = run->nr_procs, i, nr = 0;
	long *parent = xmalloc(st_mult(n + 1, sizeof(long)));
	size_t *forks = xcalloc(n + 1, sizeof(size_t));
	size_t *order = xmalloc(st_mult(n + 1, sizeof(size_t)));
	bool *placed = xcalloc(n + 1, sizeof(bool));
	struct proc *sorted;
	long root = -1;

	if (!n) {
		free(parent);
		free(forks);
		free(order);
		free(placed);
		return;
	}
	for (i = 0; i < n; i++) {
		parent[i] = parent_of(run, i);
		if (parent[i] >= 0 && run->procs[i].origin == ORIGIN_FORK)
			forks[parent[i]]++;
	}
	/* The target: the earliest traced process no traced process started. */
	for (i = 0; i < n; i++)
		if (run->procs[i].pid > 0 && parent[i] < 0 &&
		    (root < 0 || run->procs[i].start_ns < run->procs[root].start_ns))
			root = (long)i;
	for (i = 0; i < n; i++) {
		struct proc *pr = &run->procs[i];
		const char *helper = helper_role(pr->argv);
		const struct proc *par = parent[i] >= 0 ? &run->procs[parent[i]] : NULL;

		if (pr->pid <= 0)
			continue;
		if ((long)i == root)
			set_role(pr, forks[i] >= 2 ? "master" : "main");
		else if (helper)
			set_role(pr, helper);
		else if (pr->origin == ORIGIN_FORK && par)
			set_role(pr, forks[parent[i]] >= 2 ? "worker" : "fork");
		else if (par && par->pid == pr->pid)
			set_role(pr, "exec");
		else if (par)
			set_role(pr, forks[i] >= 2 ? "master" : "subprocess");
		else
			set_role(pr, "other");
	}
	/* A forkserver's children are workers, whichever was read first. */
	for (i = 0; i < n; i++)
		if (parent[i] >= 0 && run->procs[i].origin == ORIGIN_FORK && run->procs[parent[i]].role &&
		    !strcmp(run->procs[parent[i]].role, "forkserver"))
			set_role(&run->procs[i], "worker");
	if (root >= 0)
		add_subtree(run, parent, (size_t)root, order, &nr, placed);
	/* Then the other traced processes by start, then importtime-only ones in stream order. */
	for (;;) {
		long next = -1;

		for (i = 0; i < n; i++)
			if (!placed[i] && run->procs[i].pid > 0 && parent[i] < 0 &&
			    (next < 0 || run->procs[i].start_ns < run->procs[next].start_ns))
				next = (long)i;
		if (next < 0)
			break;
		add_subtree(run, parent, (size_t)next, order, &nr, placed);
	}
	for (i = 0; i < n; i++)
		if (!placed[i])
			order[nr++] = i;
	sorted = xmalloc(st_mult(n + 1, sizeof(*sorted)));
	for (i = 0; i < n; i++)
		sorted[i] = run->procs[order[i]];
	memcpy(run->procs, sorted, n * sizeof(*sorted));
	free(sorted);
	free(parent);
	free(forks);
	free(order);
	free(placed);
}
