/*
 * The start-up timeline of one process (timeline.h): a call tree of Python
 * functions and the imports they ran, its nodes and interned names, its
 * split and its costliest functions outside imports.  It is built by
 * ingest/timeline_build.c, written with the profile (profile_json.c), read
 * by profile_read.c, and drawn as a tree by render/export/frames.c; it uses
 * none of them, nor the profile.
 */
#include "model/timeline.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "iset.h"

static const char *const kind_names[TL__COUNT] = {
	[TL_THREAD] = "thread", [TL_STARTUP] = "startup",   [TL_IMPORT] = "import",
	[TL_FUNC] = "function", [TL_SHUTDOWN] = "shutdown", [TL_GC] = "gc",
};

static const char *const end_names[TL_END__COUNT] = {
	[TL_END_EXIT] = "exit",
	[TL_END_READY] = "ready",
	[TL_END_FIRST_RESPONSE] = "first-response",
	[TL_END_LAST_SAMPLE] = "last-sample",
};

const char *tl_kind_name(enum tl_kind k)
{
	return k < TL__COUNT ? kind_names[k] : "?";
}

int tl_kind_from_name(const char *s)
{
	int i;

	for (i = 0; i < TL__COUNT; i++)
		if (!strcmp(kind_names[i], s))
			return i;
	return -1;
}

const char *tl_end_name(enum tl_end e)
{
	return e < TL_END__COUNT ? end_names[e] : "?";
}

int tl_end_from_name(const char *s)
{
	int i;

	for (i = 0; i < TL_END__COUNT; i++)
		if (!strcmp(end_names[i], s))
			return i;
	return -1;
}

static uint64_t hash_str_at(const void *ctx, int32_t v)
{
	const struct timeline *tl = ctx;

	return hash_str(tl->names.buf + v);
}

uint32_t timeline_intern(struct timeline *tl, const char *s, size_t len)
{
	struct iset set = { tl->name_slot, tl->name_cap, tl->name_used };
	size_t j;
	uint32_t off;

	if (!len)
		return 0;
	if (!set.cap)
		iset_init(&set, 1024);
	else if (set.used * 2 >= set.cap)
		iset_grow(&set, hash_str_at, tl);
	for (j = hash_bytes(s, len) & (set.cap - 1); set.slot[j] >= 0; j = (j + 1) & (set.cap - 1)) {
		const char *t = tl->names.buf + set.slot[j];

		if (!strncmp(t, s, len) && !t[len])
			goto out;
	}
	off = (uint32_t)tl->names.len;
	buf_add(&tl->names, s, len);
	buf_addch(&tl->names, '\0');
	set.slot[j] = (int32_t)off;
	set.used++;
out:
	tl->name_slot = set.slot;
	tl->name_cap = set.cap;
	tl->name_used = set.used;
	return (uint32_t)set.slot[j];
}

int32_t timeline_add_node(struct timeline *tl, int32_t parent, enum tl_kind kind, uint32_t name, uint32_t file,
			  int32_t line)
{
	struct tl_node *n;
	int32_t i = (int32_t)tl->nr_nodes;

	ALLOC_GROW(tl->nodes, tl->nr_nodes + 1, tl->alloc_nodes);
	n = &tl->nodes[tl->nr_nodes++];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->file = file;
	n->line = line;
	n->kind = (uint8_t)kind;
	n->parent = parent;
	n->first_child = n->last_child = n->next_sibling = -1;
	if (parent >= 0) {
		struct tl_node *p = &tl->nodes[parent];

		if (p->last_child >= 0)
			tl->nodes[p->last_child].next_sibling = i;
		else
			p->first_child = i;
		p->last_child = i;
	}
	return i;
}

void timeline_sum(struct timeline *tl)
{
	size_t i;

	for (i = 0; i < tl->nr_nodes; i++) {
		struct tl_node *n = &tl->nodes[i];

		n->self_us = n->cum_us = n->self_cpu_us = n->cum_cpu_us = n->self_wait_us = n->cum_wait_us = 0;
		n->samples = 0;
	}
	for (i = 0; i < tl->nr_samples; i++) {
		const struct tl_sample *s = &tl->samples[i];
		struct tl_node *n;

		if (s->node < 0 || (size_t)s->node >= tl->nr_nodes)
			continue;
		n = &tl->nodes[s->node];
		n->samples++;
		n->self_us += s->wall_us;
		n->self_cpu_us += s->cpu_us > 0 ? s->cpu_us : 0;
		n->self_wait_us += s->wait_us;
	}
	/* Children come after their parents: one backward pass adds them up. */
	for (i = 0; i < tl->nr_nodes; i++) {
		tl->nodes[i].cum_us = tl->nodes[i].self_us;
		tl->nodes[i].cum_cpu_us = tl->nodes[i].self_cpu_us;
		tl->nodes[i].cum_wait_us = tl->nodes[i].self_wait_us;
	}
	for (i = tl->nr_nodes; i-- > 0;) {
		const struct tl_node *n = &tl->nodes[i];

		if (n->parent >= 0) {
			tl->nodes[n->parent].cum_us += n->cum_us;
			tl->nodes[n->parent].cum_cpu_us += n->cum_cpu_us;
			tl->nodes[n->parent].cum_wait_us += n->cum_wait_us;
		}
	}
}

/* What each node is part of, for the split: the kind of its outermost non-function ancestor. */
static uint8_t *classify(const struct timeline *tl)
{
	uint8_t *cls = xmalloc(tl->nr_nodes ? tl->nr_nodes : 1);
	size_t i;

	for (i = 0; i < tl->nr_nodes; i++) {
		const struct tl_node *n = &tl->nodes[i];
		uint8_t up = n->parent >= 0 ? cls[n->parent] : TL_THREAD;

		/* The collector's pauses are a phase of their own but in start-up and shutdown. */
		if (up == TL_STARTUP || up == TL_SHUTDOWN)
			cls[i] = up;
		else if (n->kind == TL_GC)
			cls[i] = TL_GC;
		else if (up == TL_IMPORT)
			cls[i] = up;
		else if (n->kind == TL_STARTUP || n->kind == TL_SHUTDOWN || n->kind == TL_IMPORT)
			cls[i] = n->kind;
		else
			cls[i] = TL_FUNC;
	}
	return cls;
}

/* The main thread's root, -1 when there is none. */
static int32_t main_root(const struct timeline *tl)
{
	size_t i;

	for (i = 0; i < tl->nr_nodes; i++)
		if (tl->nodes[i].kind == TL_THREAD && !strcmp(tl_str(tl, tl->nodes[i].name), "main thread"))
			return (int32_t)i;
	return -1;
}

void timeline_split(const struct timeline *tl, struct tl_split *sp)
{
	uint8_t *cls = classify(tl);
	int32_t main = main_root(tl);
	bool cpu_known = true;
	size_t i;

	memset(sp, 0, sizeof(*sp));
	for (i = 0; i < tl->nr_samples; i++) {
		const struct tl_sample *s = &tl->samples[i];
		int64_t *w, *c;

		if (s->node < 0 || (size_t)s->node >= tl->nr_nodes || tl_root_of(tl, s->node) != main)
			continue;
		switch (cls[s->node]) {
		case TL_STARTUP:
			w = &sp->startup_us;
			c = &sp->startup_cpu_us;
			break;
		case TL_IMPORT:
			w = &sp->import_us;
			c = &sp->import_cpu_us;
			break;
		case TL_SHUTDOWN:
			w = &sp->shutdown_us;
			c = &sp->shutdown_cpu_us;
			break;
		case TL_GC:
			w = &sp->gc_us;
			c = &sp->gc_cpu_us;
			break;
		default:
			w = &sp->other_us;
			c = &sp->other_cpu_us;
			break;
		}
		*w += s->wall_us;
		sp->total_us += s->wall_us;
		sp->wait_us += s->wait_us;
		if (s->cpu_us >= 0) {
			*c += s->cpu_us;
			sp->total_cpu_us += s->cpu_us;
		} else if (cls[s->node] != TL_SHUTDOWN) {
			cpu_known = false;
		}
	}
	if (!cpu_known)
		sp->total_cpu_us = sp->startup_cpu_us = sp->import_cpu_us = sp->other_cpu_us = sp->shutdown_cpu_us =
			sp->gc_cpu_us = UNKNOWN;
	free(cls);
}

static int cmp_func(const void *a, const void *b)
{
	const struct tl_func *x = a, *y = b;

	if (x->total_us != y->total_us)
		return x->total_us > y->total_us ? -1 : 1;
	if (x->self_us != y->self_us)
		return x->self_us > y->self_us ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* A comprehension or generator expression: a part of the function it is written in. */
static bool is_comprehension(const char *name)
{
	return ends_with(name, "<listcomp>") || ends_with(name, "<genexpr>") || ends_with(name, "<dictcomp>") ||
	       ends_with(name, "<setcomp>");
}

/* A file of the standard library: frozen, or under lib/pythonX.Y but not in a site directory. */
static int cmp_func_cpu(const void *a, const void *b)
{
	const struct tl_func *x = a, *y = b;

	if (x->total_cpu_us != y->total_cpu_us)
		return x->total_cpu_us > y->total_cpu_us ? -1 : 1;
	return cmp_func(a, b);
}

static bool same_func(const struct tl_node *a, const struct tl_node *b)
{
	return a->name == b->name && a->file == b->file && a->line == b->line;
}

static uint64_t func_key(uint32_t name, uint32_t file, int32_t line)
{
	return tl_node_key(-1, TL_FUNC, name, file, line);
}

/* ctx is the array of functions; it moves as it grows, so iset_grow gets it anew each time. */
static uint64_t hash_func_at(const void *ctx, int32_t v)
{
	const struct tl_func *g = &((const struct tl_func *)ctx)[v];

	return func_key(g->name, g->file, g->line);
}

static int64_t busy(const struct tl_node *n)
{
	return n->cum_us - n->cum_wait_us;
}

static int64_t busy_self(const struct tl_node *n)
{
	return n->self_us - n->self_wait_us;
}

static int64_t own_time(const struct timeline *tl, const int64_t *imp, const int64_t *impc, int32_t i, bool by_cpu)
{
	return by_cpu ? tl->nodes[i].cum_cpu_us - impc[i] : busy(&tl->nodes[i]) - imp[i];
}

/*
 * Functions outside imports, by their time outside imports less the time
 * they waited for a CPU: a function's calls (callees included, the imports
 * they ran not) over every place it ran, a recursive call counted once; a
 * module body that is not an import (the script, code run by runpy or exec)
 * counts its own lines only, as it holds everything else.  Then the ones
 * that mostly pass the time on: a function with 70% of its time or more in
 * one function it calls is left out for that callee, so "main > run > setup"
 * shows setup and the entry points of a program or library do not fill the
 * list; but a standard library function is the means of its caller
 * (re.compile, json.loads, time.sleep), so a function outside the standard
 * library stays beside it.  Comprehensions are part of the function they
 * are written in.
 */
size_t timeline_top_functions(const struct timeline *tl, bool by_cpu, struct tl_func *out, size_t max)
{
	uint8_t *cls = classify(tl);
	int64_t *imp = xcalloc(tl->nr_nodes ? tl->nr_nodes : 1, sizeof(*imp));
	int64_t *impc = xcalloc(tl->nr_nodes ? tl->nr_nodes : 1, sizeof(*impc));
	int32_t *agg = xmalloc(st_mult(tl->nr_nodes ? tl->nr_nodes : 1, sizeof(*agg)));
	struct tl_func *f = NULL;
	struct iset funcs;
	bool *drop;
	size_t nr = 0, alloc = 0, i, j, k, kept = 0;
	int32_t main = main_root(tl);

	iset_init(&funcs, 256);
	/* Time in the outermost imports below each node. */
	for (i = tl->nr_nodes; i-- > 0;) {
		const struct tl_node *n = &tl->nodes[i];

		if (n->parent < 0)
			continue;
		/* The collector's pauses are not the function's time either. */
		if (n->kind == TL_IMPORT || n->kind == TL_GC) {
			imp[n->parent] += busy(n);
			impc[n->parent] += n->cum_cpu_us;
		} else {
			imp[n->parent] += imp[i];
			impc[n->parent] += impc[i];
		}
	}
	for (i = 0; i < tl->nr_nodes; i++) {
		const struct tl_node *n = &tl->nodes[i];
		int32_t a;
		bool recursive = false;

		agg[i] = -1;
		if (n->kind != TL_FUNC || cls[i] != TL_FUNC || tl_root_of(tl, (int32_t)i) != main)
			continue;
		for (a = n->parent; a >= 0; a = tl->nodes[a].parent)
			if (same_func(&tl->nodes[a], n))
				recursive = true;
		if (funcs.used * 2 >= funcs.cap)
			iset_grow(&funcs, hash_func_at, f);
		for (k = func_key(n->name, n->file, n->line) & (funcs.cap - 1); funcs.slot[k] >= 0;
		     k = (k + 1) & (funcs.cap - 1)) {
			const struct tl_func *g = &f[funcs.slot[k]];

			if (g->name == n->name && g->file == n->file && g->line == n->line)
				break;
		}
		if (funcs.slot[k] >= 0) {
			j = (size_t)funcs.slot[k];
		} else {
			ALLOC_GROW(f, nr + 1, alloc);
			memset(&f[nr], 0, sizeof(f[nr]));
			f[nr].name = n->name;
			f[nr].file = n->file;
			f[nr].line = n->line;
			f[nr].node = (int32_t)i;
			funcs.slot[k] = (int32_t)nr;
			funcs.used++;
			j = nr++;
		}
		agg[i] = (int32_t)j;
		f[j].self_us += busy_self(n);
		f[j].self_cpu_us += n->self_cpu_us;
		if (ends_with(tl_str(tl, n->name), ".<module>")) {
			/* A body run as a script (__main__, runpy, exec): only its own lines count. */
			f[j].total_us += busy_self(n);
			f[j].total_cpu_us += n->self_cpu_us;
		} else if (!recursive) {
			f[j].total_us += busy(n) - imp[i];
			f[j].total_cpu_us += n->cum_cpu_us - impc[i];
		}
		if (own_time(tl, imp, impc, (int32_t)i, by_cpu) > own_time(tl, imp, impc, f[j].node, by_cpu))
			f[j].node = (int32_t)i;
	}
	/* Pass-through functions: most of their time in one function they call. */
	drop = xcalloc(nr ? nr : 1, sizeof(*drop));
	for (j = 0; j < nr; j++) {
		int32_t node = f[j].node, c;
		int64_t own = own_time(tl, imp, impc, node, by_cpu);
		const char *name = tl_str(tl, f[j].name);

		if (is_comprehension(name)) {
			drop[j] = true; /* part of the function it is written in */
			continue;
		}
		for (c = tl->nodes[node].first_child; c >= 0 && own > 0; c = tl->nodes[c].next_sibling) {
			const char *callee = tl_str(tl, tl->nodes[c].name);

			if (agg[c] < 0 || agg[c] == (int32_t)j || is_comprehension(callee))
				continue;
			if (timeline_stdlib_file(tl_str(tl, tl->nodes[c].file)) &&
			    !timeline_stdlib_file(tl_str(tl, f[j].file)))
				continue;
			if (own_time(tl, imp, impc, c, by_cpu) * 10 >= own * 7) {
				drop[j] = true;
				break;
			}
		}
	}
	for (j = 0; j < nr; j++)
		if (!drop[j] && (by_cpu ? f[j].total_cpu_us : f[j].total_us) > 0)
			f[kept++] = f[j];
	if (kept)
		qsort(f, kept, sizeof(*f), by_cpu ? cmp_func_cpu : cmp_func);
	if (kept > max)
		kept = max;
	if (kept)
		memcpy(out, f, kept * sizeof(*f));
	iset_release(&funcs);
	free(f);
	free(drop);
	free(agg);
	free(imp);
	free(impc);
	free(cls);
	return kept;
}

void timeline_chain(const struct timeline *tl, int32_t i, size_t max, struct buf *out)
{
	int32_t path[512];
	size_t n = 0;

	for (; i >= 0 && tl->nodes[i].kind != TL_THREAD && n < ARRAY_SIZE(path); i = tl->nodes[i].parent)
		path[n++] = i;
	if (max && n > max) {
		n = max;
		buf_adds(out, "... > ");
	}
	while (n--) {
		const struct tl_node *nd = &tl->nodes[path[n]];

		if (nd->kind == TL_IMPORT)
			buf_adds(out, "import ");
		buf_adds(out, tl_str(tl, nd->name));
		if (n)
			buf_adds(out, " > ");
	}
}

bool timeline_stdlib_file(const char *file)
{
	if (starts_with(file, "<frozen "))
		return true;
	return strstr(file, "/lib/python3") && !strstr(file, "-packages/");
}

void timeline_init(struct timeline *tl)
{
	memset(tl, 0, sizeof(*tl));
	buf_init(&tl->names, 1024);
	buf_addch(&tl->names, '\0');
	tl->origin_ns = UNKNOWN;
	tl->start_us = tl->end_us = tl->interval_us = UNKNOWN;
}

void timeline_release(struct timeline *tl)
{
	free(tl->nodes);
	free(tl->samples);
	free(tl->name_slot);
	buf_release(&tl->names);
	memset(tl, 0, sizeof(*tl));
}

void timeline_free(struct timeline *tl)
{
	if (!tl)
		return;
	timeline_release(tl);
	free(tl);
}
