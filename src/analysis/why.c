/*
 * Who imports a module and what only it brings (why.h): the name index of a
 * process, the statements joined to its tree, and the reachability that
 * answers "what would go away".
 */
#include "analysis/why.h"

#include <stdlib.h>
#include <string.h>

static const char *const ctx_names[WHY_CTX__COUNT] = {
	[WHY_BODY] = "body",	 [WHY_COND] = "cond",	    [WHY_FUNC] = "func",
	[WHY_TYPING] = "typing", [WHY_MAIN_GUARD] = "main",
};

static const char *const via_names[WHY_VIA__COUNT] = {
	[WHY_VIA_STMT] = "statement",	    [WHY_VIA_CALL] = "call",	     [WHY_VIA_TREE] = "tree",
	[WHY_VIA_AGAIN] = "recorded-again", [WHY_VIA_COMPUTED] = "computed",
};

static const char *const status_names[WHY_STATUS__COUNT] = {
	[WHY_LOADED] = "loaded",     [WHY_FOUND_LOADED] = "found-loaded", [WHY_INHERITED] = "inherited",
	[WHY_CIRCULAR] = "circular", [WHY_NOT_RUN] = "not-run",		  [WHY_IN_FUNCTION] = "in-function",
	[WHY_NEVER] = "never",
};

/* Edges of the reachability graph that are not statements. */
#define EDGE_TREE (-1)
#define EDGE_PACKAGE (-2)

static bool indexed(const struct proc *pr, int32_t i)
{
	return !(pr->nodes[i].flags & (NODE_CACHED | NODE_FAILED | NODE_GC));
}

static size_t slot_of(const struct why_graph *g, const char *name, size_t len)
{
	return (size_t)hash_bytes(name, len) & (g->names.cap - 1);
}

static int32_t find_len(const struct why_graph *g, const char *name, size_t len)
{
	size_t s;

	if (!g->names.cap)
		return -1;
	for (s = slot_of(g, name, len); g->names.slot[s] >= 0; s = (s + 1) & (g->names.cap - 1)) {
		int32_t i = g->names.slot[s];
		const char *n = node_name(g->pr, i);

		if (!strncmp(n, name, len) && !n[len])
			return i;
	}
	return -1;
}

static uint32_t intern(struct why_graph *g, const char *s, size_t len)
{
	size_t off = g->pool.len;

	if (!len)
		return 0;
	buf_add(&g->pool, s, len);
	buf_addch(&g->pool, '\0');
	return (uint32_t)off;
}

/* The deepest loaded prefix of a dotted name ("a.b.c", then "a.b", then "a"), or -1. */
static int32_t resolve(const struct why_graph *g, const char *name, size_t len)
{
	while (len) {
		int32_t i = find_len(g, name, len);

		if (i >= 0)
			return i;
		while (len && name[len - 1] != '.')
			len--;
		if (len)
			len--;
	}
	return -1;
}

static void push_stmt(struct why_graph *g, int32_t importer, int32_t target, uint32_t name, uint32_t line,
		      enum why_ctx ctx, enum why_via via)
{
	struct why_stmt *s;

	ALLOC_GROW(g->stmts, g->nr_stmts + 1, g->alloc_stmts);
	s = &g->stmts[g->nr_stmts++];
	s->importer = importer;
	s->target = target;
	s->name = name;
	s->line = line;
	s->ctx = (uint8_t)ctx;
	s->via = (uint8_t)via;
}

const char *why_ctx_name(enum why_ctx c)
{
	return (unsigned)c < WHY_CTX__COUNT ? ctx_names[c] : "unknown";
}

int why_ctx_from_name(const char *s)
{
	int c;

	for (c = 0; c < WHY_CTX__COUNT; c++)
		if (!strcmp(ctx_names[c], s))
			return c;
	return -1;
}

const char *why_via_name(enum why_via v)
{
	return (unsigned)v < WHY_VIA__COUNT ? via_names[v] : "unknown";
}

const char *why_status_name(enum why_status s)
{
	return (unsigned)s < WHY_STATUS__COUNT ? status_names[s] : "unknown";
}

bool why_in_package(const char *name, const char *module)
{
	size_t len = strlen(module);

	return !strncmp(name, module, len) && (name[len] == '\0' || name[len] == '.');
}

void why_graph_init(struct why_graph *g, const struct proc *pr)
{
	size_t n = pr->nr_nodes, i, cap;

	memset(g, 0, sizeof(*g));
	g->pr = pr;
	g->pool = (struct buf)BUF_INIT;
	buf_addch(&g->pool, '\0');
	g->source = xcalloc(n ? n : 1, sizeof(*g->source));
	g->error = xcalloc(n ? n : 1, sizeof(*g->error));
	g->file = xcalloc(n ? n : 1, sizeof(*g->file));
	for (cap = 16; cap < 2 * n; cap *= 2)
		;
	iset_init(&g->names, cap);
	for (i = 0; i < n; i++) {
		const char *name = node_name(pr, (int32_t)i);
		size_t len = strlen(name), s;

		if (!indexed(pr, (int32_t)i) || !len || find_len(g, name, len) >= 0)
			continue;
		for (s = slot_of(g, name, len); g->names.slot[s] >= 0; s = (s + 1) & (g->names.cap - 1))
			;
		g->names.slot[s] = (int32_t)i;
		g->names.used++;
	}
	/*
	 * A cached row is an import statement that ran and found its module
	 * loaded; so is a tracer-only node of a module loaded before it (3.11's
	 * importlib.import_module() enters _find_and_load, which the tracer
	 * times, even for a loaded module).
	 */
	g->again = xcalloc(n ? n : 1, sizeof(*g->again));
	for (i = 0; i < n; i++) {
		const struct imp_node *c = &pr->nodes[i];
		const char *name = node_name(pr, (int32_t)i);
		size_t len = strlen(name);
		int32_t first = find_len(g, name, len);

		if (!len || (c->flags & NODE_FAILED))
			continue;
		if (!(c->flags & NODE_CACHED) && !((c->flags & NODE_TRACE_ONLY) && first >= 0 && first < (int32_t)i &&
						   (!pr->timing || !pr->timing[i].file)))
			continue;
		g->again[i] = true;
		push_stmt(g, c->parent >= 0 ? c->parent : WHY_TOP, resolve(g, name, len), intern(g, name, len), 0,
			  WHY_BODY, WHY_VIA_AGAIN);
	}
}

void why_graph_release(struct why_graph *g)
{
	free(g->stmts);
	free(g->source);
	free(g->again);
	free(g->error);
	free(g->file);
	iset_release(&g->names);
	buf_release(&g->pool);
	memset(g, 0, sizeof(*g));
}

int32_t why_graph_find(const struct why_graph *g, const char *name)
{
	return find_len(g, name, strlen(name));
}

void why_graph_add_import(struct why_graph *g, int32_t importer, const char *base, const char *names, uint32_t line,
			  enum why_ctx ctx, enum why_via via)
{
	struct buf full = BUF_INIT;
	size_t blen = strlen(base);
	bool any = false;
	const char *p = names ? names : "";

	if (!blen)
		return;
	while (*p) {
		const char *comma = strchrnul(p, ',');
		int32_t t;

		buf_reset(&full);
		buf_add(&full, base, blen);
		buf_addch(&full, '.');
		buf_add(&full, p, (size_t)(comma - p));
		t = comma > p && *p != '*' ? find_len(g, full.buf, full.len) : -1;
		if (t >= 0) {
			push_stmt(g, importer, t, intern(g, full.buf, full.len), line, ctx, via);
			any = true;
		}
		p = *comma ? comma + 1 : comma;
	}
	if (!any)
		push_stmt(g, importer, resolve(g, base, blen), intern(g, base, blen), line, ctx, via);
	buf_release(&full);
}

void why_graph_add_computed(struct why_graph *g, int32_t importer, uint32_t line, enum why_ctx ctx)
{
	push_stmt(g, importer, -1, 0, line, ctx, WHY_VIA_COMPUTED);
}

const struct why_stmt *why_graph_computed(const struct why_graph *g, int32_t importer)
{
	size_t i;

	for (i = 0; i < g->nr_stmts; i++)
		if (g->stmts[i].via == WHY_VIA_COMPUTED && g->stmts[i].importer == importer)
			return &g->stmts[i];
	return NULL;
}

void why_graph_set_error(struct why_graph *g, int32_t i, const char *msg)
{
	g->error[i] = intern(g, msg, strlen(msg));
}

void why_graph_set_file(struct why_graph *g, int32_t i, const char *path)
{
	uint32_t off = intern(g, path, strlen(path));

	if (i >= 0)
		g->file[i] = off;
	else
		g->main_file = off;
}

const char *why_graph_file(const struct why_graph *g, int32_t i)
{
	uint32_t off = i >= 0 ? g->file[i] : g->main_file;

	return off ? why_str(g, off) : NULL;
}

/* What why_answer works with: positions in import order and the module's nodes. */
struct walk {
	const struct why_graph *g;
	const struct why_opts *o;
	size_t n;
	int64_t *pos; /* pre-order position, -1 for a node outside the tree */
	int64_t *end; /* the last position in its subtree */
	int32_t *order; /* node at each position */
	bool *in_r; /* the module or one of its submodules */
};

static void walk_init(struct walk *w, const struct why_graph *g, const char *module, const struct why_opts *o)
{
	const struct proc *pr = g->pr;
	int64_t k = 0, *size;
	size_t i;
	int32_t j;

	w->g = g;
	w->o = o;
	w->n = pr->nr_nodes;
	w->pos = xmalloc(st_mult(w->n + 1, sizeof(*w->pos)));
	w->end = xmalloc(st_mult(w->n + 1, sizeof(*w->end)));
	w->order = xmalloc(st_mult(w->n + 1, sizeof(*w->order)));
	w->in_r = xcalloc(w->n + 1, sizeof(*w->in_r));
	size = xcalloc(w->n + 1, sizeof(*size));
	for (i = 0; i < w->n; i++)
		w->pos[i] = -1;
	for (j = pr->first_root; j >= 0; j = proc_preorder_next(pr, j)) {
		w->order[k] = j;
		w->pos[j] = k++;
	}
	/* Children follow their parents in pre-order: sizes add up from the back. */
	while (k-- > 0) {
		j = w->order[k];
		size[j]++;
		if (pr->nodes[j].parent >= 0)
			size[pr->nodes[j].parent] += size[j];
	}
	for (i = 0; i < w->n; i++) {
		w->end[i] = w->pos[i] + size[i] - 1;
		w->in_r[i] = !g->again[i] && why_in_package(node_name(pr, (int32_t)i), module);
	}
	free(size);
}

static void walk_release(struct walk *w)
{
	free(w->pos);
	free(w->end);
	free(w->order);
	free(w->in_r);
}

/*
 * What statement s did, from where it sits and where its importer and its
 * target are in the import order.  A module-level import runs while its
 * module's body runs: if that body ran after the target's load it found the
 * target loaded; if it ended before the load began, the statement did not
 * run (a branch not taken); inside the target's own import it met a module
 * still loading.  target_is_it: the target stands for what was named (not
 * a loaded prefix of a module that is itself not loaded here).
 */
static enum why_status stmt_status(const struct walk *w, const struct why_stmt *s, bool target_is_it)
{
	const struct proc *pr = w->g->pr;
	int32_t a = s->importer, t = s->target;

	if (s->via == WHY_VIA_TREE)
		return WHY_LOADED;
	if (s->ctx == WHY_TYPING || s->ctx == WHY_MAIN_GUARD)
		return WHY_NEVER;
	if (s->ctx == WHY_FUNC)
		return WHY_IN_FUNCTION;
	if (t < 0 || !target_is_it || w->pos[t] < 0)
		return w->o->inherited ? WHY_INHERITED : s->via == WHY_VIA_AGAIN ? WHY_FOUND_LOADED : WHY_NOT_RUN;
	if (s->via == WHY_VIA_AGAIN) {
		/* The record says it ran and found the module there, loaded or still loading. */
		int64_t at = a >= 0 ? w->pos[a] : -1;

		return at > w->pos[t] && at <= w->end[t] ? WHY_CIRCULAR : WHY_FOUND_LOADED;
	}
	if (a == WHY_TOP)
		return pr->nodes[t].parent < 0 ? WHY_LOADED : WHY_FOUND_LOADED;
	if (a < 0 || w->pos[a] < 0)
		return WHY_NOT_RUN;
	if (pr->nodes[t].parent == a)
		return WHY_LOADED;
	if (w->pos[a] > w->end[t])
		return WHY_FOUND_LOADED;
	if (w->pos[a] > w->pos[t])
		return WHY_CIRCULAR;
	if (w->end[a] >= w->pos[t])
		return WHY_FOUND_LOADED;
	return WHY_NOT_RUN;
}

/* Whether an edge of status st keeps its target in the graph. */
static bool edge_runs(const struct walk *w, enum why_status st)
{
	switch (st) {
	case WHY_LOADED:
	case WHY_FOUND_LOADED:
	case WHY_CIRCULAR: return true;
	case WHY_IN_FUNCTION: return w->o->functions_run;
	default: return false;
	}
}

static int64_t importer_pos(const struct walk *w, int32_t node)
{
	return node >= 0 ? w->pos[node] : -1;
}

/* Sorting of statements: by importer in import order, best status first, then by line. */
struct sorted_stmt {
	struct why_stmt s;
	enum why_status st;
	int64_t ipos;
};

static int cmp_stmt(const void *pa, const void *pb)
{
	const struct sorted_stmt *a = pa, *b = pb;

	if (a->s.importer != b->s.importer)
		return a->ipos < b->ipos ? -1 : a->ipos > b->ipos ? 1 : (a->s.importer < b->s.importer ? -1 : 1);
	if (a->st != b->st)
		return a->st < b->st ? -1 : 1;
	if (a->s.via != b->s.via) /* a statement with a line before the tree edge it explains */
		return a->s.via == WHY_VIA_TREE ? 1 : b->s.via == WHY_VIA_TREE ? -1 : (a->s.via < b->s.via ? -1 : 1);
	return a->s.line < b->s.line ? -1 : a->s.line > b->s.line ? 1 : 0;
}

/* Importers, best status first, then in import order (qsort_r, arg the walk). */
static int cmp_importer(const void *pa, const void *pb, void *arg)
{
	const struct walk *w = arg;
	const struct why_importer *a = pa, *b = pb;
	int64_t x = importer_pos(w, a->node), y = importer_pos(w, b->node);

	if (a->status != b->status)
		return a->status < b->status ? -1 : 1;
	return x < y ? -1 : x > y ? 1 : 0;
}

static void collect_importers(const struct walk *w, const char *module, struct why_answer *a)
{
	const struct why_graph *g = w->g;
	const struct proc *pr = g->pr;
	struct sorted_stmt *v = NULL;
	size_t nr = 0, alloc = 0, i, k;
	struct why_importer *imp = NULL;
	size_t nr_imp = 0, alloc_imp = 0;

	for (i = 0; i < g->nr_stmts; i++) {
		const struct why_stmt *s = &g->stmts[i];
		const char *name;

		if (s->via == WHY_VIA_COMPUTED)
			continue;
		name = s->name ? why_str(g, s->name) : node_name(pr, s->target);
		if (!why_in_package(name, module) || (s->importer >= 0 && w->in_r[s->importer]))
			continue;
		ALLOC_GROW(v, nr + 1, alloc);
		v[nr].s = *s;
		v[nr].st = stmt_status(w, s, s->target >= 0 && w->in_r[s->target]);
		v[nr].ipos = importer_pos(w, s->importer);
		nr++;
	}
	/* The recorded loads: the tree parent of each node of the module from outside it. */
	for (i = 0; i < w->n; i++) {
		int32_t p = pr->nodes[i].parent;

		if (!w->in_r[i] || (p >= 0 && w->in_r[p]) || (pr->nodes[i].flags & NODE_FAILED))
			continue;
		ALLOC_GROW(v, nr + 1, alloc);
		v[nr].s = (struct why_stmt){ .importer = p >= 0 ? p : WHY_TOP,
					     .target = (int32_t)i,
					     .name = 0,
					     .line = 0,
					     .ctx = WHY_BODY,
					     .via = WHY_VIA_TREE };
		v[nr].st = WHY_LOADED;
		v[nr].ipos = importer_pos(w, v[nr].s.importer);
		nr++;
	}
	if (nr)
		qsort(v, nr, sizeof(*v), cmp_stmt);
	a->stmts = xmalloc(st_mult(nr ? nr : 1, sizeof(*a->stmts)));
	a->stmt_status = xmalloc(st_mult(nr ? nr : 1, sizeof(*a->stmt_status)));
	for (i = 0; i < nr; i = k) {
		struct why_importer *im;

		ALLOC_GROW(imp, nr_imp + 1, alloc_imp);
		im = &imp[nr_imp++];
		im->node = v[i].s.importer;
		im->status = v[i].st;
		im->cost_us = 0;
		im->loaded = -1;
		im->first = i;
		for (k = i; k < nr && v[k].s.importer == im->node; k++) {
			a->stmts[k] = v[k].s;
			a->stmt_status[k] = v[k].st;
			if (v[k].s.via == WHY_VIA_TREE) {
				int64_t c = pr->nodes[v[k].s.target].cum_us;

				if (im->loaded < 0)
					im->loaded = v[k].s.target;
				if (c > 0)
					im->cost_us += c;
			}
		}
		im->nr = k - i;
	}
	a->nr_stmts = nr;
	free(v);
	if (nr_imp)
		qsort_r(imp, nr_imp, sizeof(*imp), cmp_importer, (void *)w);
	a->importers = imp;
	a->nr_importers = nr_imp;
}

/* The reachability graph: edges in CSR form, from node (or n, the top level) to node. */
struct edges {
	size_t *first; /* n + 2 offsets */
	int32_t *to;
	int32_t *ref; /* a statement index in g, EDGE_TREE or EDGE_PACKAGE */
	size_t nr;
};

struct raw_edge {
	int32_t from, to, ref;
};

static void add_raw(struct raw_edge **v, size_t *nr, size_t *alloc, int32_t from, int32_t to, int32_t ref)
{
	ALLOC_GROW(*v, *nr + 1, *alloc);
	(*v)[(*nr)++] = (struct raw_edge){ .from = from, .to = to, .ref = ref };
}

static void build_edges(const struct walk *w, struct edges *e)
{
	const struct why_graph *g = w->g;
	const struct proc *pr = g->pr;
	int32_t top = (int32_t)w->n;
	struct raw_edge *v = NULL;
	size_t nr = 0, alloc = 0, i;

	/*
	 * Statements first: the breadth-first walk then names the line that
	 * keeps a module rather than the bare tree edge beside it.
	 */
	for (i = 0; i < g->nr_stmts; i++) {
		const struct why_stmt *s = &g->stmts[i];

		if (s->target < 0 || !edge_runs(w, stmt_status(w, s, true)))
			continue;
		add_raw(&v, &nr, &alloc, s->importer >= 0 ? s->importer : top, s->target, (int32_t)i);
	}
	for (i = 0; i < w->n; i++) {
		const struct imp_node *nd = &pr->nodes[i];
		const char *name = node_name(pr, (int32_t)i);
		const char *dot = strrchr(name, '.');

		if (g->again[i])
			continue;
		add_raw(&v, &nr, &alloc, nd->parent >= 0 ? nd->parent : top, (int32_t)i, EDGE_TREE);
		if (dot) {
			int32_t pkg = resolve(g, name, (size_t)(dot - name));

			if (pkg >= 0)
				add_raw(&v, &nr, &alloc, (int32_t)i, pkg, EDGE_PACKAGE);
		}
	}
	e->first = xcalloc(w->n + 2, sizeof(*e->first));
	e->to = xmalloc(st_mult(nr ? nr : 1, sizeof(*e->to)));
	e->ref = xmalloc(st_mult(nr ? nr : 1, sizeof(*e->ref)));
	e->nr = nr;
	for (i = 0; i < nr; i++)
		e->first[v[i].from + 1]++;
	for (i = 1; i < w->n + 2; i++)
		e->first[i] += e->first[i - 1];
	{
		size_t *fill = xmalloc(st_mult(w->n + 1, sizeof(*fill)));

		memcpy(fill, e->first, (w->n + 1) * sizeof(*fill));
		for (i = 0; i < nr; i++) {
			size_t at = fill[v[i].from]++;

			e->to[at] = v[i].to;
			e->ref[at] = v[i].ref;
		}
		free(fill);
	}
	free(v);
}

static void edges_release(struct edges *e)
{
	free(e->first);
	free(e->to);
	free(e->ref);
}

/* Node indexes by self time, largest first (qsort_r, arg the process). */
static int cmp_self_desc(const void *pa, const void *pb, void *arg)
{
	const struct proc *pr = arg;
	int64_t a = pr->nodes[*(const int32_t *)pa].self_us, b = pr->nodes[*(const int32_t *)pb].self_us;

	return a > b ? -1 : a < b ? 1 : (*(const int32_t *)pa < *(const int32_t *)pb ? -1 : 1);
}

/* Kept modules by cumulative time, largest first (qsort_r, arg the process). */
static int cmp_kept(const void *pa, const void *pb, void *arg)
{
	const struct proc *pr = arg;
	const struct why_kept *a = pa, *b = pb;
	int64_t x = pr->nodes[a->node].cum_us, y = pr->nodes[b->node].cum_us;

	return x > y ? -1 : x < y ? 1 : (a->node < b->node ? -1 : 1);
}

/*
 * Breadth-first from the top level, never entering the module or its
 * submodules: what is not reached would go away.  pred[i] is the edge that
 * first reached i.
 */
static void reach(const struct walk *w, const struct edges *e, bool *seen, size_t *pred_at, int32_t *pred_from)
{
	size_t n = w->n, head = 0, tail = 0, k;
	int32_t *queue = xmalloc(st_mult(n + 1, sizeof(*queue)));

	queue[tail++] = (int32_t)n;
	seen[n] = true;
	while (head < tail) {
		int32_t u = queue[head++];

		for (k = e->first[u]; k < e->first[u + 1]; k++) {
			int32_t t = e->to[k];

			if (seen[t] || w->in_r[t])
				continue;
			seen[t] = true;
			pred_at[t] = k;
			pred_from[t] = u == (int32_t)n ? WHY_TOP : u;
			queue[tail++] = t;
		}
	}
	free(queue);
}

static void go_away(const struct walk *w, struct why_answer *a)
{
	const struct why_graph *g = w->g;
	const struct proc *pr = g->pr;
	struct edges e;
	bool *seen = xcalloc(w->n + 1, sizeof(*seen));
	bool *below = xcalloc(w->n + 1, sizeof(*below));
	size_t *pred_at = xcalloc(w->n + 1, sizeof(*pred_at));
	int32_t *pred_from = xcalloc(w->n + 1, sizeof(*pred_from));
	size_t i, alloc_kept = 0;
	int64_t k;

	build_edges(w, &e);
	reach(w, &e, seen, pred_at, pred_from);
	/* What was imported beneath the module's nodes: the candidates to go. */
	for (i = 0; i < w->n; i++) {
		if (!w->in_r[i] || w->pos[i] < 0)
			continue;
		for (k = w->pos[i]; k <= w->end[i]; k++)
			below[w->order[k]] = true;
	}
	a->gone = xmalloc(st_mult(w->n ? w->n : 1, sizeof(*a->gone)));
	for (i = 0; i < w->n; i++) {
		const struct imp_node *nd = &pr->nodes[i];

		if (g->again[i] || w->pos[i] < 0)
			continue;
		if (!seen[i]) {
			a->gone[a->nr_gone++] = (int32_t)i;
			if (nd->self_us > 0)
				a->gone_self_us += nd->self_us;
		} else if (below[i]) {
			struct why_kept *kp;
			int32_t ref = e.ref[pred_at[i]];

			ALLOC_GROW(a->kept, a->nr_kept + 1, alloc_kept);
			kp = &a->kept[a->nr_kept++];
			kp->node = (int32_t)i;
			kp->by = pred_from[i];
			if (ref >= 0)
				kp->how = g->stmts[ref];
			else
				kp->how = (struct why_stmt){ .importer = kp->by,
							     .target = (int32_t)i,
							     .name = 0,
							     .line = 0,
							     .ctx = WHY_BODY,
							     .via = ref == EDGE_TREE ? WHY_VIA_TREE : WHY_VIA_STMT };
		}
	}
	if (a->nr_gone)
		qsort_r(a->gone, a->nr_gone, sizeof(*a->gone), cmp_self_desc, (void *)pr);
	if (a->nr_kept)
		qsort_r(a->kept, a->nr_kept, sizeof(*a->kept), cmp_kept, (void *)pr);
	edges_release(&e);
	free(seen);
	free(below);
	free(pred_at);
	free(pred_from);
}

int why_answer(const struct why_graph *g, const char *module, const struct why_opts *o, struct why_answer *a)
{
	struct walk w;
	size_t i;

	memset(a, 0, sizeof(*a));
	a->module = why_graph_find(g, module);
	walk_init(&w, g, module, o);
	for (i = 0; i < w.n; i++) {
		if (w.in_r[i] && (g->pr->nodes[i].flags & NODE_FAILED))
			a->nr_failed++;
		else if (w.in_r[i])
			a->nr_loads++;
	}
	collect_importers(&w, module, a);
	if (!a->nr_loads && !a->nr_failed && !a->nr_importers) {
		walk_release(&w);
		why_answer_release(a);
		a->module = -1;
		return -1;
	}
	if (a->nr_loads || a->nr_failed)
		go_away(&w, a);
	/* coldstart's bootstrap left out, as the report's totals leave it out. */
	a->import_total_us = proc_import_total_us(g->pr, true) - proc_tool_us(g->pr);
	walk_release(&w);
	return 0;
}

void why_answer_release(struct why_answer *a)
{
	free(a->importers);
	free(a->stmts);
	free(a->stmt_status);
	free(a->gone);
	free(a->kept);
	memset(a, 0, sizeof(*a));
}
