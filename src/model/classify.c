/*
 * Classification of a process's imports (interpreter start-up, stdlib,
 * third-party, app, coldstart's bootstrap), importtime's consistency check,
 * and totals by top-level package (classify.h).
 */
#include "model/classify.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "iset.h"
#include "parallel.h"
#include "model/stdlib_names.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Length of the top-level package of name (up to its first '.'), reading no further than end. */
static size_t top_length(const char *name, const char *end)
{
	const char *p = name;

#ifdef __SSE2__
	for (; end - p >= 16; p += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		unsigned m = (unsigned)_mm_movemask_epi8(
			_mm_or_si128(_mm_cmpeq_epi8(v, _mm_setzero_si128()), _mm_cmpeq_epi8(v, _mm_set1_epi8('.'))));

		if (m)
			return (size_t)(p - name) + (size_t)__builtin_ctz(m);
	}
#endif
	while (p < end && *p && *p != '.')
		p++;
	return (size_t)(p - name);
}

/* The first min(len, 8) bytes of s as a number, zero-padded. */
static uint64_t head_word(const char *s, size_t len, const char *end)
{
	uint64_t w = 0;
	size_t i;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (end - s >= 8) {
		memcpy(&w, s, 8);
		return len >= 8 ? w : w & (((uint64_t)1 << (8 * len)) - 1);
	}
#endif
	for (i = 0; i < len && i < 8; i++)
		w |= (uint64_t)(unsigned char)s[i] << (8 * i);
	return w;
}

/* Length of the top-level package part of a dotted module name. */
static size_t top_len(const char *name)
{
	return top_length(name, name + strlen(name));
}

/* Whether two dotted names share their top-level package. */
static bool same_top(const char *a, const char *b)
{
	while (*a && *a != '.' && *a == *b) {
		a++;
		b++;
	}
	return (!*a || *a == '.') && (!*b || *b == '.');
}

static void set_kind_subtree(struct proc *pr, int32_t i, uint8_t kind, uint32_t flag)
{
	int32_t j = i, stop = proc_walk_next(pr, i, false);

	/* The subtree of i is what pre-order visits from i until the node after it. */
	do {
		pr->nodes[j].kind = kind;
		pr->nodes[j].flags |= flag;
		j = proc_walk_next(pr, j, true);
	} while (j >= 0 && j != stop);
}

bool is_stdlib_module(const char *name, const char *const *stdlib_names)
{
	size_t len = top_len(name);
	const char *const *v;

	/* sysconfig's build data, named after the platform: _sysconfigdata__linux_x86_64-linux-gnu. */
	if (starts_with(name, "_sysconfigdata_"))
		return true;
	if (stdlib_names) {
		for (v = stdlib_names; *v; v++)
			if (strlen(*v) == len && !strncmp(*v, name, len))
				return true;
		return false;
	}
	return stdlib_name_known(name, len);
}

/*
 * The top-level names the site directories provide, each directory listed
 * once per classification (looking each unknown name up listed them all
 * again: 900,000 rows took 81 s): an entry "x" (a package, a namespace, a
 * file), "x.py", "x.pyc", or an extension "x.<tag>.so".  Sorted, for
 * bsearch; shared read-only by the classification threads.
 */
struct site_names {
	char **v;
	size_t nr, alloc;
};

static void site_names_add(struct site_names *s, const char *name, size_t len)
{
	if (!len)
		return;
	ALLOC_GROW(s->v, s->nr + 1, s->alloc);
	s->v[s->nr++] = xstrndup(name, len);
}

static int cmp_site_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void site_names_load(struct site_names *s, const char *const *site_dirs)
{
	const char *const *d;
	size_t i, n = 0;

	memset(s, 0, sizeof(*s));
	for (d = site_dirs; d && *d; d++) {
		DIR *dir = opendir(*d);
		struct dirent *de;
		struct stat st;

		while (dir && (de = readdir(dir))) {
			const char *e = de->d_name, *dot = strchr(e, '.');
			size_t len = strlen(e);

			if (e[0] == '.')
				continue;
			/* What stat() would have found: a dangling link is no module. */
			if ((de->d_type == DT_LNK || de->d_type == DT_UNKNOWN) && fstatat(dirfd(dir), e, &st, 0) < 0)
				continue;
			site_names_add(s, e, len);
			if (ends_with(e, ".py"))
				site_names_add(s, e, len - 3);
			else if (ends_with(e, ".pyc"))
				site_names_add(s, e, len - 4);
			else if (ends_with(e, ".so") && dot)
				site_names_add(s, e, (size_t)(dot - e));
		}
		if (dir)
			closedir(dir);
	}
	if (!s->nr)
		return;
	qsort(s->v, s->nr, sizeof(*s->v), cmp_site_name);
	for (i = 0; i < s->nr; i++) {
		if (n && !strcmp(s->v[n - 1], s->v[i]))
			free(s->v[i]);
		else
			s->v[n++] = s->v[i];
	}
	s->nr = n;
}

static void site_names_release(struct site_names *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* Whether the top-level package of name is installed in one of the site directories. */
static bool site_names_have(const struct site_names *s, const char *name)
{
	size_t lo = 0, hi = s->nr, len = top_len(name);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(s->v[mid], name, len);

		if (!c && s->v[mid][len])
			c = 1;
		if (!c)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* A top-level package not in the standard library, not yet looked up in site_dirs. */
#define KIND_SITE_UNKNOWN 0xff

/*
 * The top-level packages of a process's module names, numbered 0, 1, ... in
 * order of first sight: classification caches a verdict per package and the
 * package totals sum per package, and a million nodes have a few hundred
 * packages.  Looked up by the package's first 8 bytes and length.
 */
struct top_table {
	const char *end; /* end of the name pool: reads stop there */
	const char **name; /* per package: the first module seen in it */
	size_t *len;
	uint64_t *head;
	size_t n, alloc;
	struct iset set; /* package numbers */
};

static uint64_t top_hash(uint64_t head, size_t len)
{
	return ((head ^ len) * 0x9e3779b97f4a7c15ULL) >> 32;
}

static uint64_t top_hash_at(const void *ctx, int32_t i)
{
	const struct top_table *t = ctx;

	return top_hash(t->head[i], t->len[i]);
}

/* The number of name's top-level package; a new one is added (and counted in t->n). */
static size_t top_find(struct top_table *t, const char *name)
{
	size_t len = top_length(name, t->end), k;
	uint64_t head = head_word(name, len, t->end);

	if (!t->set.cap)
		iset_init(&t->set, 256);
	else if ((t->n + 1) * 2 > t->set.cap)
		iset_grow(&t->set, top_hash_at, t);
	for (k = top_hash(head, len) & (t->set.cap - 1); t->set.slot[k] >= 0; k = (k + 1) & (t->set.cap - 1)) {
		size_t i = (size_t)t->set.slot[k];

		if (t->head[i] == head && t->len[i] == len && (len <= 8 || !memcmp(t->name[i] + 8, name + 8, len - 8)))
			return i;
	}
	if (t->n == t->alloc) {
		ALLOC_GROW(t->name, t->n + 1, t->alloc);
		t->len = xrealloc(t->len, st_mult(t->alloc, sizeof(*t->len)));
		t->head = xrealloc(t->head, st_mult(t->alloc, sizeof(*t->head)));
	}
	t->name[t->n] = name;
	t->len[t->n] = len;
	t->head[t->n] = head;
	t->set.slot[k] = (int32_t)t->n;
	t->set.used++;
	return t->n++;
}

static void top_table_release(struct top_table *t)
{
	free(t->name);
	free(t->len);
	free(t->head);
	iset_release(&t->set);
}

/*
 * What a module's top-level package alone says about its kind (stdlib, or
 * third-party / app by site_dirs), cached for one classification: the
 * site_dirs lookup costs system calls.
 */
struct top_cache {
	const char *const *stdlib_names;
	const struct site_names *site;
	struct top_table tops;
	uint8_t *kind; /* per package */
	size_t alloc_kind;
};

static void top_cache_init(struct top_cache *c, const struct proc *pr, const char *const *stdlib_names,
			   const struct site_names *site)
{
	memset(c, 0, sizeof(*c));
	c->stdlib_names = stdlib_names;
	c->site = site;
	c->tops.end = pr->names.buf + pr->names.len;
}

static void top_cache_release(struct top_cache *c)
{
	top_table_release(&c->tops);
	free(c->kind);
}

/* The number of name's top-level package, with its stdlib verdict filled on first sight. */
static size_t top_slot(struct top_cache *c, const char *name)
{
	size_t seen = c->tops.n, k = top_find(&c->tops, name);

	if (k == seen) {
		ALLOC_GROW(c->kind, k + 1, c->alloc_kind);
		c->kind[k] = is_stdlib_module(name, c->stdlib_names) ? KIND_STDLIB : KIND_SITE_UNKNOWN;
	}
	return k;
}

static uint8_t top_site_kind(struct top_cache *c, size_t k)
{
	if (c->kind[k] == KIND_SITE_UNKNOWN)
		c->kind[k] = site_names_have(c->site, c->tops.name[k]) ? KIND_THIRDPARTY : KIND_APP;
	return c->kind[k];
}

/* coldstart's own modules: the bootstrap and the tracer. */
static bool is_tool_module(const char *name, bool startup)
{
	if (startup)
		return starts_with(name, "coldstart") || !strcmp(name, "_coldstart_boot");
	return name[0] == 'c' && !strncmp(name, "coldstart", 9) && (!name[9] || (name[9] == '.' && name[10] == '_'));
}

static void classify_node(struct proc *pr, int32_t i, struct top_cache *tops)
{
	struct imp_node *n = &pr->nodes[i];
	const char *name = node_name(pr, i);
	const char *file = pr->timing && pr->timing[i].file ? proc_str(pr, pr->timing[i].file) : NULL;
	int32_t a;
	size_t k;

	/* The collector's pauses take the kind of the import they fell in (classified first: pre-order). */
	if (n->flags & NODE_GC) {
		if (n->parent >= 0)
			n->kind = pr->nodes[n->parent].kind;
		return;
	}
	if (n->flags & NODE_STARTUP) {
		if (is_tool_module(name, true))
			n->kind = KIND_TOOL;
		return;
	}
	if (is_tool_module(name, false)) {
		n->kind = KIND_TOOL;
		return;
	}
	k = top_slot(tops, name);
	if (tops->kind[k] == KIND_STDLIB) {
		n->kind = KIND_STDLIB;
		return;
	}
	/*
	 * A submodule imported by its own package takes the package's kind
	 * when it has no file of its own (the caller classifies parents first
	 * whenever files are known).
	 */
	a = pr->timing ? n->parent : -1;
	if (a >= 0 && (pr->nodes[a].flags & NODE_STARTUP || !same_top(node_name(pr, a), name)))
		a = -1;
	if (file)
		n->kind = strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ? KIND_THIRDPARTY
											     : KIND_APP;
	else if (a >= 0)
		n->kind = pr->nodes[a].kind;
	else
		n->kind = top_site_kind(tops, k);
}

/* Nodes per range of the passes over every node; smaller ranges are not worth a thread. */
#define NODES_PER_RANGE 65536

/*
 * Start-up is every root up to and including the top-level "site" row: the
 * interpreter imports site (and with it .pth files and sitecustomize) before
 * it runs the target.  Without a site row (-S, or a log cut short) nothing is
 * marked.
 */
static void mark_startup(struct proc *pr)
{
	int32_t i, last_startup = -1;

	for (i = pr->first_root; i >= 0; i = pr->nodes[i].next_sibling)
		if (node_name(pr, i)[0] == 's' && !strcmp(node_name(pr, i), "site"))
			last_startup = i;
	if (last_startup < 0)
		return;
	for (i = pr->first_root; i >= 0; i = pr->nodes[i].next_sibling) {
		set_kind_subtree(pr, i, KIND_STARTUP, NODE_STARTUP);
		if (i == last_startup)
			break;
	}
}

/*
 * With a trace, the first "sitecustomize" is coldstart's bootstrap: it
 * imports the one that would have run without coldstart (the next
 * "sitecustomize", its child).  The bootstrap's own time and anything it
 * imported itself are coldstart's, not the app's.
 */
static void mark_bootstrap(struct proc *pr)
{
	int32_t i, c;

	if (!pr->timing)
		return;
	for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i)) {
		bool chained = false;

		if (strcmp(node_name(pr, i), "sitecustomize"))
			continue;
		for (c = pr->nodes[i].first_child; c >= 0; c = pr->nodes[c].next_sibling)
			chained |= !strcmp(node_name(pr, c), "sitecustomize");
		if (!chained)
			return;
		pr->nodes[i].kind = KIND_TOOL;
		for (c = pr->nodes[i].first_child; c >= 0; c = pr->nodes[c].next_sibling)
			if (strcmp(node_name(pr, c), "sitecustomize") && pr->timing[c].start_ns < 0)
				set_kind_subtree(pr, c, KIND_TOOL, 0);
		return;
	}
}

void proc_classify(struct proc *pr, const char *const *stdlib_names, const char *const *site_dirs)
{
	struct top_cache tops;
	struct site_names site;
	int32_t i;

	site_names_load(&site, site_dirs);
	top_cache_init(&tops, pr, stdlib_names, &site);
	mark_startup(pr);
	/*
	 * Without file names a node's kind depends on its own name only, so the
	 * nodes are taken in array order; with a trace, pre-order lets a
	 * submodule inherit its package's kind.
	 */
	if (!pr->timing) {
		for (i = 0; i < (int32_t)pr->nr_nodes; i++)
			classify_node(pr, i, &tops);
	} else {
		for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i))
			classify_node(pr, i, &tops);
		mark_bootstrap(pr);
	}
	top_cache_release(&tops);
	site_names_release(&site);
}

/*
 * Whether node n breaks self == cum - sum(children cum): 1 when it does, 0
 * when not, -1 for nodes the check leaves alone (cached, trace-only).
 */
static int node_inconsistent(const struct proc *pr, const struct imp_node *n, int64_t tolerance_us)
{
	int64_t children = 0, nr_children = 0;
	int32_t c;

	if (n->flags & (NODE_CACHED | NODE_TRACE_ONLY))
		return -1;
	/*
	 * Trace-only children count: the merge sets self from the trace
	 * wherever it added children importtime never printed.
	 */
	for (c = n->first_child; c >= 0; c = pr->nodes[c].next_sibling)
		if (!(pr->nodes[c].flags & NODE_CACHED)) {
			children = i64_add(children, pr->nodes[c].cum_us);
			nr_children++;
		}
	/*
	 * CPython rounds each printed value up to a microsecond, so every
	 * child's cum and the self can each be up to 1 us off.
	 */
	return i64_abs(i64_sub(i64_sub(n->cum_us, children), n->self_us)) > i64_add(tolerance_us, nr_children + 1) ||
	       n->self_us < 0;
}

size_t proc_check_consistency(struct proc *pr, int64_t tolerance_us)
{
	size_t bad = 0, i;

	for (i = 0; i < pr->nr_nodes; i++) {
		struct imp_node *n = &pr->nodes[i];
		int v = node_inconsistent(pr, n, tolerance_us);

		if (v > 0) {
			n->flags |= NODE_INCONSISTENT;
			bad++;
		} else if (!v) {
			n->flags &= ~NODE_INCONSISTENT;
		}
	}
	return bad;
}

/*
 * proc_analyze without a trace: classification and the consistency check in
 * one pass over the nodes, ranges of them in parallel.  A node's check reads
 * its children's flags, which may lie in another range, so flags are not
 * written during the pass: each range lists the nodes whose
 * NODE_INCONSISTENT must flip, and the flips are applied after it.
 */
struct analyze_slot {
	int32_t *flip;
	size_t nr_flip, alloc_flip;
	size_t bad;
};

struct analyze_job {
	struct proc *pr;
	const char *const *stdlib_names;
	const struct site_names *site;
	int64_t tolerance_us;
	struct analyze_slot slot[PARALLEL_MAX];
};

static void analyze_range(void *ctx, size_t begin, size_t end, unsigned slot)
{
	struct analyze_job *job = ctx;
	struct proc *pr = job->pr;
	struct top_cache tops;
	struct analyze_slot out = { NULL, 0, 0, 0 };
	size_t i;

	top_cache_init(&tops, pr, job->stdlib_names, job->site);
	for (i = begin; i < end; i++) {
		const struct imp_node *n = &pr->nodes[i];
		int v;

		classify_node(pr, (int32_t)i, &tops);
		v = node_inconsistent(pr, n, job->tolerance_us);
		if (v < 0)
			continue;
		out.bad += (size_t)v;
		if (v != !!(n->flags & NODE_INCONSISTENT)) {
			ALLOC_GROW(out.flip, out.nr_flip + 1, out.alloc_flip);
			out.flip[out.nr_flip++] = (int32_t)i;
		}
	}
	top_cache_release(&tops);
	job->slot[slot] = out;
}

size_t proc_analyze(struct proc *pr, const char *const *stdlib_names, const char *const *site_dirs,
		    int64_t tolerance_us)
{
	struct site_names site;
	struct analyze_job job = {
		.pr = pr, .stdlib_names = stdlib_names, .site = &site, .tolerance_us = tolerance_us
	};
	unsigned nr, s;
	size_t bad = 0, k;

	if (pr->timing) {
		proc_classify(pr, stdlib_names, site_dirs);
		return proc_check_consistency(pr, tolerance_us);
	}
	mark_startup(pr);
	site_names_load(&site, site_dirs);
	nr = parallel_ranges(pr->nr_nodes, NODES_PER_RANGE);
	parallel_for(pr->nr_nodes, nr, analyze_range, &job);
	site_names_release(&site);
	for (s = 0; s < nr; s++) {
		for (k = 0; k < job.slot[s].nr_flip; k++)
			pr->nodes[job.slot[s].flip[k]].flags ^= NODE_INCONSISTENT;
		bad += job.slot[s].bad;
		free(job.slot[s].flip);
	}
	return bad;
}

static int cmp_pkg(const void *a, const void *b)
{
	const struct pkg_total *x = a, *y = b;

	if (x->cum_us != y->cum_us)
		return x->cum_us < y->cum_us ? 1 : -1;
	return strcmp(x->name, y->name);
}

struct pkg_total *proc_package_totals(const struct proc *pr, enum metric m, size_t *nr)
{
	struct top_table tops = { .end = pr->names.buf + pr->names.len };
	struct pkg_total *t = NULL;
	size_t *open = NULL; /* per package: how many of its nodes are on the current path */
	size_t alloc = 0;
	size_t *pkg_of = xmalloc(st_mult(pr->nr_nodes ? pr->nr_nodes : 1, sizeof(*pkg_of)));
	int32_t i = pr->first_root;

	/*
	 * Depth-first with enter and exit, so "is an ancestor in the same
	 * package" is a counter, not a walk up the tree: only the outermost
	 * node of a package adds its cumulative time.
	 */
	while (i >= 0) {
		const struct imp_node *node = &pr->nodes[i];
		const char *name = node_name(pr, i);
		size_t seen = tops.n, k = top_find(&tops, name);

		if (k == seen) {
			ALLOC_GROW(t, k + 1, alloc);
			open = xrealloc(open, st_mult(alloc, sizeof(*open)));
			memset(&t[k], 0, sizeof(t[k]));
			t[k].name = xstrndup(name, tops.len[k]);
			t[k].kind = node->kind;
			open[k] = 0;
		}
		pkg_of[i] = k;
		if (!(node->flags & NODE_CACHED)) {
			int64_t self = node_self_in(pr, i, m), cum = node_cum_in(pr, i, m);

			t[k].modules += !(node->flags & NODE_GC);
			if (self > 0)
				t[k].self_us = i64_add(t[k].self_us, self);
			if (!open[k] && cum > 0)
				t[k].cum_us = i64_add(t[k].cum_us, cum);
		}
		open[k]++;
		if (node->first_child >= 0) {
			i = node->first_child;
			continue;
		}
		while (i >= 0) {
			open[pkg_of[i]]--;
			if (pr->nodes[i].next_sibling >= 0) {
				i = pr->nodes[i].next_sibling;
				break;
			}
			i = pr->nodes[i].parent;
		}
	}
	*nr = tops.n;
	free(pkg_of);
	free(open);
	top_table_release(&tops);
	if (*nr)
		qsort(t, *nr, sizeof(*t), cmp_pkg);
	return t;
}

void pkg_totals_free(struct pkg_total *t, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(t[i].name);
	free(t);
}
