/*
 * The native-extension part of a profile: reads every loaded extension with
 * elffile, joins it with the measured load time, renders the report section
 * and the native-* findings, and carries the facts through JSON.
 */
#include "analysis/elf_report.h"

#include <stdlib.h>
#include <string.h>

/* One object seen in a process, for the duplicate-library rule. */
struct dup_obj {
	char *key; /* normalised library name */
	const struct elf_facts *facts;
	const char *path;
	const char *module;
};

/* The first run that is not a warm-up and has processes, or NULL. */
static const struct run *measured_run(const struct profile *p, size_t *idx)
{
	size_t i;

	for (i = 0; i < p->nr_runs; i++)
		if (!p->runs[i].warmup && p->runs[i].nr_procs) {
			*idx = i;
			return &p->runs[i];
		}
	for (i = 0; i < p->nr_runs; i++)
		if (p->runs[i].nr_procs) {
			*idx = i;
			return &p->runs[i];
		}
	return NULL;
}

/* Native nodes with a file, in the order they started (else node order). */
static int32_t *native_nodes(const struct proc *pr, size_t *nr)
{
	int32_t *v = NULL;
	size_t n = 0, alloc = 0, i, j;

	if (!pr->timing) {
		*nr = 0;
		return NULL;
	}
	for (i = 0; i < pr->nr_nodes; i++) {
		if (!(pr->nodes[i].flags & NODE_NATIVE) || !pr->timing[i].file)
			continue;
		ALLOC_GROW(v, n + 1, alloc);
		/* Insertion sort by start time: extensions are few. */
		for (j = n;
		     j > 0 && pr->timing[v[j - 1]].start_ns > pr->timing[i].start_ns && pr->timing[i].start_ns >= 0;
		     j--)
			v[j] = v[j - 1];
		v[j] = (int32_t)i;
		n++;
	}
	*nr = n;
	return v;
}

static void add_count(struct buf *out, uint64_t n)
{
	if (n >= 10000)
		buf_addf(out, "%.0fk", (double)n / 1000.0);
	else
		buf_addf(out, "%llu", (unsigned long long)n);
}

/* Sort helper: indexes into the extensions (arg), by load time, longest first. */
static int cmp_load(const void *a, const void *b, void *arg)
{
	const struct native_ext *exts = arg;
	const struct native_ext *x = &exts[*(const size_t *)a];
	const struct native_ext *y = &exts[*(const size_t *)b];

	if (x->load_us != y->load_us)
		return x->load_us < y->load_us ? 1 : -1;
	return strcmp(x->module, y->module);
}

static size_t *exts_by_load(const struct native_set *n)
{
	size_t *order = xcalloc(n->nr ? n->nr : 1, sizeof(*order));
	size_t i;

	for (i = 0; i < n->nr; i++)
		order[i] = i;
	qsort_r(order, n->nr, sizeof(*order), cmp_load, n->exts);
	return order;
}

/*
 * "libgfortran-040039e1.so.5.0.0" and "libgfortran.so.5" are one library:
 * drop the directory, everything from ".so", auditwheel's "-<8 hex>" tags
 * and trailing version numbers.
 */
static char *normalise_lib(const char *name)
{
	const char *base = strrchr(name, '/');
	struct buf out = BUF_INIT;
	size_t len, i;
	const char *so;

	base = base ? base + 1 : name;
	len = strlen(base);
	for (so = strstr(base, ".so"); so; so = strstr(so + 1, ".so"))
		if (so[3] == '\0' || so[3] == '.') {
			len = (size_t)(so - base);
			break;
		}
	for (i = 0; i < len; i++) {
		size_t k = 0;

		if (base[i] == '-') {
			while (k < 8 && i + 1 + k < len && strchr("0123456789abcdef", base[i + 1 + k]) &&
			       base[i + 1 + k])
				k++;
			if (k == 8 && (i + 9 == len || base[i + 9] == '.' || base[i + 9] == '-')) {
				i += 8;
				continue;
			}
		}
		buf_addch(&out, base[i]);
	}
	while (out.len && ((out.buf[out.len - 1] >= '0' && out.buf[out.len - 1] <= '9') ||
			   out.buf[out.len - 1] == '.' || out.buf[out.len - 1] == '-'))
		buf_setlen(&out, out.len - 1);
	if (!out.len)
		buf_adds(&out, base);
	return buf_detach(&out, NULL);
}

static int cmp_dup(const void *a, const void *b)
{
	const struct dup_obj *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return strcmp(x->path, y->path);
}

static void add_finding(struct profile *p, const char *id, const char *severity, struct buf *title,
			struct buf *evidence, struct buf *fix, const char *module, int64_t cost_us)
{
	struct finding f;

	memset(&f, 0, sizeof(f));
	f.id = xstrdup(id);
	f.severity = xstrdup(severity);
	f.title = buf_detach(title, NULL);
	f.evidence = buf_detach(evidence, NULL);
	f.fix = buf_detach(fix, NULL);
	f.module = module ? xstrdup(module) : NULL;
	f.cost_us = cost_us;
	profile_add_finding(p, &f);
}

/* The process whose import node e is, or NULL when a damaged profile does not hold it. */
static const struct proc *ext_proc(const struct profile *p, const struct native_ext *e)
{
	const struct run *r = &p->runs[e->run];
	const struct proc *pr;

	if (e->proc >= r->nr_procs)
		return NULL;
	pr = &r->procs[e->proc];
	return e->node >= 0 && (size_t)e->node < pr->nr_nodes ? pr : NULL;
}

/*
 * Whether e's load time was spent on the CPU: a load timed in wall time
 * (no CPU limit) also needs the extension's CPU self time at the threshold
 * where the trace has it.  The rest of the wall time, with the files in the
 * page cache, is waiting for a CPU on a busy machine, which the extension
 * does not cost; in a --cold run it is reading the files, which it does.
 */
static bool load_on_cpu(const struct profile *p, const struct native_ext *e)
{
	const struct proc *pr = ext_proc(p, e);
	int64_t cpu;

	if (profile_metric(p) == METRIC_CPU || cold_figures_took(&p->runs[e->run].cold) || !pr)
		return true;
	cpu = node_self_in(pr, e->node, METRIC_CPU);
	return cpu == UNKNOWN || cpu >= ELF_HEAVY_LOAD_US;
}

static bool ext_heavy(const struct profile *p, const struct native_ext *e)
{
	struct elf_totals all;

	if (e->error || !e->tree.nr)
		return false;
	elf_tree_totals(&e->tree, true, &all);
	return (e->load_us >= ELF_HEAVY_LOAD_US && load_on_cpu(p, e)) ||
	       (e->load_us == UNKNOWN && (all.mapped_bytes >= ELF_HEAVY_BYTES || all.relocs >= ELF_HEAVY_RELOCS));
}

#define LOADS_NAMED 6 /* processes whose load time one finding lists */

/*
 * "11.2 ms load in pid 12 (worker), 2.8 ms in pid 13 (worker); " for the
 * extensions of n from first on that load module in run; *procs gets their
 * processes, *max_us the longest load.  Returns how many had a load time.
 */
static size_t add_loads(struct buf *ev, const struct native_set *n, size_t first, const struct run *run,
			struct proc_set *procs, int64_t *max_us)
{
	size_t i, named = 0, more = 0;

	for (i = first; i < n->nr; i++) {
		const struct native_ext *e = &n->exts[i];

		if (strcmp(e->module, n->exts[first].module) || e->run != n->exts[first].run)
			continue;
		proc_set_add(procs, e->proc);
		if (e->load_us == UNKNOWN)
			continue;
		if (e->load_us > *max_us)
			*max_us = e->load_us;
		if (named == LOADS_NAMED) {
			more++;
			continue;
		}
		if (named)
			buf_adds(ev, ", ");
		buf_add_duration(ev, e->load_us);
		buf_adds(ev, named++ ? " in " : " load in ");
		if (run->procs[e->proc].pid > 0)
			buf_addf(ev, "pid %ld (%s)", run->procs[e->proc].pid,
				 run->procs[e->proc].role ? run->procs[e->proc].role : "process");
		else
			buf_adds(ev, "the target's process");
	}
	if (more)
		buf_addf(ev, " and %zu more", more);
	if (named)
		buf_adds(ev, "; ");
	return named + more;
}

/*
 * The import to make lazy for e: walking up its import chain, the outermost
 * import that is not the app's own code (where the app's import statement
 * is): 'asyncio' for _ssl loaded through asyncio -> asyncio.base_events ->
 * ssl.  -1 when e is that import itself or its node is unknown.
 */
static int32_t lazy_target(const struct profile *p, const struct native_ext *e)
{
	const struct proc *pr = ext_proc(p, e);
	int32_t k, best = -1;
	size_t steps = 0;

	if (!pr)
		return -1;
	for (k = pr->nodes[e->node].parent; k >= 0 && (size_t)k < pr->nr_nodes && steps++ < pr->nr_nodes;
	     k = pr->nodes[k].parent) {
		if (pr->nodes[k].kind == KIND_APP || pr->nodes[k].kind == KIND_TOOL)
			break;
		best = k;
	}
	return best;
}

/*
 * native-heavy-load: one finding per extension module, however many
 * processes loaded it (two workers importing the same app), each process
 * named with its own load time.
 */
static void heavy_findings(struct profile *p, const struct native_set *n)
{
	size_t i, j;

	for (i = 0; i < n->nr; i++) {
		const struct native_ext *e = &n->exts[i];
		const struct run *run = &p->runs[e->run];
		struct buf title = BUF_INIT, ev = BUF_INIT, fix = BUF_INIT;
		struct proc_set procs = PROC_SET_INIT;
		struct elf_totals all;
		int64_t max_us = UNKNOWN;
		bool heavy = false;
		size_t timed;
		int32_t lazy;

		for (j = 0; j < i && (strcmp(n->exts[j].module, e->module) || n->exts[j].run != e->run); j++)
			;
		if (j < i)
			continue; /* reported with the first */
		for (j = i; j < n->nr; j++)
			if (!strcmp(n->exts[j].module, e->module) && n->exts[j].run == e->run &&
			    ext_heavy(p, &n->exts[j]))
				heavy = true;
		if (!heavy || e->error || !e->tree.nr)
			continue;
		elf_tree_totals(&e->tree, true, &all);
		buf_addf(&title, "native extension '%s' is heavy to load", e->module);
		buf_addf(&ev, "%s: ", e->module);
		timed = add_loads(&ev, n, i, run, &procs, &max_us);
		buf_add_bytes(&ev, e->tree.libs[0].facts->file_size);
		buf_adds(&ev, ", ");
		add_count(&ev, e->tree.libs[0].facts->nr_relocs);
		buf_adds(&ev, " relocs");
		if (all.objects > 1) {
			buf_adds(&ev, "; ");
			elf_render_needs_summary(&e->tree, 4, &ev);
			buf_adds(&ev, "; in all ");
			buf_add_bytes(&ev, (int64_t)all.mapped_bytes);
			buf_adds(&ev, " mapped, ");
			add_count(&ev, all.relocs);
			buf_addf(&ev, " relocations in %zu objects", all.objects);
		}
		if (timed < procs.nr) {
			buf_addf(&ev, "; loaded in ");
			findings_add_procs(&ev, run, &procs);
		}
		lazy = lazy_target(p, e);
		if (lazy >= 0) {
			const struct proc *pr = &run->procs[e->proc];

			buf_adds(&ev, "; import chain ");
			finding_add_chain(&ev, pr, e->node);
			buf_addf(&fix, "import %s lazily, inside the code that needs it (it loads %s)",
				 node_name(pr, lazy), e->module);
		} else {
			buf_addf(&fix, "import %s lazily, inside the code that needs it", e->module);
		}
		buf_adds(&fix, ", so start-up does not pay the dynamic loader; where a library dominates, a build "
			       "linked against a smaller one (or without it) cuts the cost for everyone");
		add_finding(p, "native-heavy-load", "warning", &title, &ev, &fix, e->module, max_us);
		finding_set_pids(p, run, &procs);
		proc_set_release(&procs);
	}
}

/* What native-unstripped has collected so far. */
struct strip_state {
	const struct elf_facts **seen;
	size_t nr_seen, alloc_seen, shown;
	uint64_t total;
	const char *module; /* the one module concerned, NULL when several or none */
	struct buf ev;
};

static void note_unstripped(struct strip_state *st, const struct elf_facts *f, const char *label, const char *module)
{
	uint64_t bytes;
	size_t k;

	if (!f)
		return;
	bytes = elf_facts_strippable_bytes(f);
	if (!elf_facts_unstripped(f) || bytes < ELF_UNSTRIPPED_BYTES)
		return;
	for (k = 0; k < st->nr_seen; k++)
		if (st->seen[k] == f)
			return;
	ALLOC_GROW(st->seen, st->nr_seen + 1, st->alloc_seen);
	st->seen[st->nr_seen++] = f;
	st->total += bytes;
	st->module = st->nr_seen == 1 ? module : NULL;
	if (st->shown++ < 6) {
		if (st->shown > 1)
			buf_adds(&st->ev, "; ");
		buf_addf(&st->ev, "%s (%s): ", label, f->path);
		buf_add_bytes(&st->ev, (int64_t)bytes);
		buf_addf(&st->ev, " in %zu symbols and %zu debug sections", f->nr_symtab, f->nr_debug_sections);
	}
}

static void unstripped_findings(struct profile *p, const struct native_set *n)
{
	struct buf title = BUF_INIT, fix = BUF_INIT;
	struct strip_state st;
	size_t i, j;

	memset(&st, 0, sizeof(st));
	buf_init(&st.ev, 0);
	/* The interpreter ships with the image too (pyenv builds keep debug info). */
	if (n->has_python) {
		note_unstripped(&st, n->py.exe_facts, "the interpreter", NULL);
		note_unstripped(&st, n->py.lib_facts, "libpython", NULL);
	}
	for (i = 0; i < n->nr; i++) {
		const struct native_ext *e = &n->exts[i];

		for (j = 0; j < e->tree.nr; j++)
			if (!e->tree.libs[j].preloaded)
				note_unstripped(&st, e->tree.libs[j].facts, j ? e->tree.libs[j].name : e->module,
						e->module);
	}
	if (st.nr_seen) {
		if (st.shown > 6)
			buf_addf(&st.ev, "; and %zu more", st.shown - 6);
		buf_addf(&title, "%zu native object%s ship ", st.nr_seen, st.nr_seen == 1 ? "" : "s");
		buf_add_bytes(&title, (int64_t)st.total);
		buf_adds(&title, " of symbols and debug info");
		buf_adds(&fix, "strip them (strip --strip-unneeded, or build with -s / "
			       "pip's --config-settings) and keep debug info in separate files: the "
			       "bytes are never mapped, but they are copied into every image, "
			       "cache and cold container pull");
		add_finding(p, "native-unstripped", "info", &title, &st.ev, &fix, st.module, UNKNOWN);
	}
	free(st.seen);
	buf_release(&title);
	buf_release(&st.ev);
	buf_release(&fix);
}

/* A native-duplicate-library finding, in each process where it holds. */
struct dup_finding {
	struct buf title, ev;
	struct proc_set procs;
};

struct dup_findings {
	struct dup_finding *v;
	size_t nr, alloc;
};

/* Adds proc to the finding of that title and evidence, a new one when there is none; title and ev are taken. */
static void dup_note(struct dup_findings *d, struct buf *title, struct buf *ev, size_t proc)
{
	size_t k;

	for (k = 0; k < d->nr; k++)
		if (!strcmp(d->v[k].title.buf, title->buf) && !strcmp(d->v[k].ev.buf, ev->buf))
			break;
	if (k == d->nr) {
		ALLOC_GROW(d->v, d->nr + 1, d->alloc);
		d->v[k].title = *title;
		d->v[k].ev = *ev;
		d->v[k].procs = (struct proc_set)PROC_SET_INIT;
		d->nr++;
		buf_init(title, 0);
		buf_init(ev, 0);
	}
	proc_set_add(&d->v[k].procs, proc);
}

static void dup_findings_for(struct dup_findings *d, const struct native_set *n, size_t run, size_t proc)
{
	struct dup_obj *objs = NULL;
	size_t nr = 0, alloc = 0, i, j, k;

	for (i = 0; i < n->nr; i++) {
		const struct native_ext *e = &n->exts[i];

		if (e->run != run || e->proc != proc)
			continue;
		for (j = 0; j < e->tree.nr; j++) {
			const struct elf_lib *l = &e->tree.libs[j];

			if (!l->path || !j)
				continue;
			for (k = 0; k < nr; k++)
				if (!strcmp(objs[k].path, l->path) || (l->facts && objs[k].facts == l->facts))
					break;
			if (k < nr)
				continue;
			ALLOC_GROW(objs, nr + 1, alloc);
			objs[nr].key = normalise_lib(l->facts && l->facts->soname ? l->facts->soname : l->name);
			objs[nr].facts = l->facts;
			objs[nr].path = l->path;
			objs[nr].module = e->module;
			nr++;
		}
	}
	if (nr > 1)
		qsort(objs, nr, sizeof(*objs), cmp_dup);
	for (i = 0; i < nr; i = j) {
		struct buf title = BUF_INIT, ev = BUF_INIT;

		for (j = i + 1; j < nr && !strcmp(objs[j].key, objs[i].key); j++)
			;
		if (j - i < 2)
			continue;
		buf_addf(&title, "%s is loaded %zu times from different files", objs[i].key, j - i);
		for (k = i; k < j; k++)
			buf_addf(&ev, "%s%s (for %s)", k > i ? "; " : "", objs[k].path, objs[k].module);
		dup_note(d, &title, &ev, proc);
		buf_release(&title);
		buf_release(&ev);
	}
	for (i = 0; i < nr; i++)
		free(objs[i].key);
	free(objs);
}

static void render_lib_line(const struct elf_tree *t, size_t i, const char *indent, struct buf *out)
{
	const struct elf_lib *l = &t->libs[i];

	buf_adds(out, indent);
	for (unsigned d = 1; d < l->depth; d++)
		buf_adds(out, "  ");
	buf_adds(out, l->name);
	if (l->preloaded) {
		buf_addf(out, "  (already loaded: %s)\n", l->path);
		return;
	}
	if (!l->facts) {
		if (l->error && strcmp(l->error, "not found"))
			buf_addf(out, "  NOT FOUND: %s\n", l->error);
		else
			buf_adds(out, "  NOT FOUND\n");
		return;
	}
	buf_addf(out, "  %s  [%s]  ", l->path, l->how);
	elf_render_facts_line(l->facts, out);
	buf_addch(out, '\n');
}

static void render_subtree(const struct elf_tree *t, size_t node, const char *indent, struct buf *out)
{
	size_t i;

	for (i = 1; i < t->nr; i++)
		if (t->libs[i].parent == (int)node) {
			render_lib_line(t, i, indent, out);
			render_subtree(t, i, indent, out);
		}
}

static void rule_heavy(struct profile *p)
{
	if (p->native.annotated)
		heavy_findings(p, &p->native);
}

static void rule_unstripped(struct profile *p)
{
	if (p->native.annotated)
		unstripped_findings(p, &p->native);
}

/* native-duplicate-library: once per library and files, naming the processes that load them so. */
static void rule_duplicate(struct profile *p)
{
	const struct native_set *n = &p->native;
	struct dup_findings d = { NULL, 0, 0 };
	size_t i, j;

	for (i = 0; i < n->nr; i++) {
		/* Once per (run, proc): the first extension of each process. */
		for (j = 0; j < i; j++)
			if (n->exts[j].run == n->exts[i].run && n->exts[j].proc == n->exts[i].proc)
				break;
		if (j == i)
			dup_findings_for(&d, n, n->exts[i].run, n->exts[i].proc);
	}
	for (i = 0; i < d.nr; i++) {
		struct buf fix = BUF_INIT;
		const struct run *run = &p->runs[n->exts[0].run];

		buf_adds(&d.v[i].ev, "; in ");
		findings_add_procs(&d.v[i].ev, run, &d.v[i].procs);
		buf_adds(&fix, "each copy is mapped, relocated and initialised separately; install the "
			       "packages that bundle it from one source (all from Debian, or wheels "
			       "built against one shared copy) so it loads once");
		add_finding(p, "native-duplicate-library", "warning", &d.v[i].title, &d.v[i].ev, &fix, NULL, UNKNOWN);
		finding_set_pids(p, run, &d.v[i].procs);
		proc_set_release(&d.v[i].procs);
	}
	free(d.v);
}

static const struct finding_rule native_rules[] = {
	{ .id = "native-heavy-load", .run = rule_heavy },
	{ .id = "native-unstripped", .run = rule_unstripped },
	{ .id = "native-duplicate-library", .run = rule_duplicate },
};

const struct finding_rules elf_finding_rules = { native_rules, ARRAY_SIZE(native_rules) };

void elf_annotate_profile(struct profile *p, struct strvec *problems)
{
	struct native_set *n = &p->native;
	struct elf_resolver resolver;
	const struct run *run;
	size_t ri = 0, pi, k;

	native_set_release(n);
	n->annotated = true;
	run = measured_run(p, &ri);
	if (!run)
		return;
	elf_resolver_init(&resolver);
	for (pi = 0; pi < run->nr_procs; pi++) {
		const struct proc *pr = &run->procs[pi];
		size_t nr = 0;
		int32_t *nodes = native_nodes(pr, &nr);

		if (!nr) {
			free(nodes);
			continue;
		}
		/* Each process starts with only the interpreter loaded. */
		elf_resolver_unload(&resolver);
		if (p->python) {
			struct buf perr = BUF_INIT;
			/* A launcher script is not the interpreter: read the one it runs. */
			const char *exe = p->python_executable ? p->python_executable : p->python;

			if (!elf_python_inspect(&resolver, exe, &n->py, &perr))
				n->has_python = true;
			else if (!n->has_python && pi == 0)
				strvec_push(problems, perr.buf);
			buf_release(&perr);
		}
		for (k = 0; k < nr; k++) {
			struct native_ext *e = native_set_add(n);
			struct buf eerr = BUF_INIT;
			int32_t i = nodes[k];

			e->run = ri;
			e->proc = pi;
			e->node = i;
			e->module = xstrdup(node_name(pr, i));
			e->file = xstrdup(proc_str(pr, pr->timing[i].file));
			/* The tracer's own load phase; under a CPU limit its CPU time (profile.h). */
			e->load_us = node_load_in(pr, i, profile_metric(p));
			if (elf_resolve(&resolver, e->file, &e->tree, &eerr)) {
				e->error = buf_detach(&eerr, NULL);
				strvec_push(problems, e->error);
			}
			buf_release(&eerr);
		}
		free(nodes);
	}
	/* The profile keeps the facts; the resolver's caches go. */
	elf_resolver_detach_facts(&resolver, &n->facts);
	elf_resolver_release(&resolver);
}

void elf_render_facts_line(const struct elf_facts *f, struct buf *out)
{
	buf_add_bytes(out, f->file_size);
	buf_addf(out, " (%zu load segment%s, ", f->nr_load, f->nr_load == 1 ? "" : "s");
	buf_add_bytes(out, (int64_t)(f->load_memsz > INT64_MAX ? INT64_MAX : f->load_memsz));
	buf_addf(out, " mapped), %zu relocs", f->nr_relocs);
	if (f->nr_relative)
		buf_addf(out, " (%zu relative)", f->nr_relative);
	buf_addf(out, ", %zu dynsyms", f->nr_dynsyms);
	if (elf_facts_unstripped(f)) {
		buf_adds(out, ", unstripped: ");
		buf_add_bytes(out, (int64_t)elf_facts_strippable_bytes(f));
		buf_adds(out, " of symbols/debug info");
	} else {
		buf_adds(out, ", stripped");
	}
}

void elf_render_tree(const struct elf_tree *t, const char *indent, struct buf *out)
{
	if (t->nr)
		render_subtree(t, 0, indent, out);
}

void elf_render_needs_summary(const struct elf_tree *t, size_t max, struct buf *out)
{
	size_t i, shown = 0, more = 0;

	for (i = 1; i < t->nr; i++) {
		const struct elf_lib *l = &t->libs[i];

		if (l->preloaded)
			continue;
		if (shown >= max) {
			more++;
			continue;
		}
		buf_adds(out, shown++ ? ", " : "needs ");
		buf_adds(out, l->name);
		if (!l->facts) {
			buf_adds(out, " (not found)");
			continue;
		}
		buf_adds(out, " (");
		buf_add_bytes(out, l->facts->file_size);
		buf_adds(out, ", ");
		add_count(out, l->facts->nr_relocs);
		buf_adds(out, " relocs)");
	}
	if (more)
		buf_addf(out, " and %zu more", more);
}

/* Whether an extension listed before order[i] (by load time) is the same module, loaded by another process. */
static bool same_module_before(const struct native_set *n, const size_t *order, size_t i)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (!strcmp(n->exts[order[j]].module, n->exts[order[i]].module))
			return true;
	return false;
}

void elf_report_section(const struct profile *p, size_t top, struct buf *out)
{
	const struct native_set *n = &p->native;
	size_t *order, i, modules = 0, shown = 0;
	int64_t total = 0;
	bool any_time = false;

	if (!n->annotated || (!n->nr && !n->has_python))
		return;
	buf_adds(out, "\nNative extensions\n");
	if (n->has_python) {
		buf_addf(out, "  interpreter %s: Python %s, libpython %s", n->py.exe,
			 n->py.version ? n->py.version : "(version unknown)", n->py.shared ? "shared" : "static");
		if (n->py.libpython)
			buf_addf(out, " (%s)", n->py.libpython);
		buf_addch(out, '\n');
	}
	if (!n->nr) {
		buf_adds(out, "  no extension modules with a known file were loaded\n");
		return;
	}
	for (i = 0; i < n->nr; i++)
		if (n->exts[i].load_us != UNKNOWN) {
			total += n->exts[i].load_us;
			any_time = true;
		}
	order = exts_by_load(n);
	for (i = 0; i < n->nr; i++)
		if (!same_module_before(n, order, i))
			modules++;
	buf_addf(out, "  %zu loaded", n->nr);
	if (modules < n->nr)
		buf_addf(out, " (%zu modules, some in several processes: each once below, at its longest load)",
			 modules);
	if (any_time) {
		buf_adds(out, ", ");
		buf_add_duration(out, total);
		buf_adds(out, " measured load");
	}
	buf_adds(out, "\n");
	for (i = 0; i < n->nr && shown < top; i++) {
		const struct native_ext *e = &n->exts[order[i]];
		struct buf t = BUF_INIT;
		size_t procs = 1, j;

		if (same_module_before(n, order, i))
			continue;
		for (j = i + 1; j < n->nr; j++)
			if (!strcmp(n->exts[order[j]].module, e->module))
				procs++;
		shown++;

		if (e->load_us != UNKNOWN)
			buf_add_duration(&t, e->load_us);
		else
			buf_adds(&t, "?");
		buf_addf(out, "  %10s  %s", t.buf, e->module);
		if (procs > 1)
			buf_addf(out, " (in %zu processes)", procs);
		buf_adds(out, ": ");
		buf_release(&t);
		if (e->error || !e->tree.nr) {
			buf_addf(out, "%s\n", e->error ? e->error : "no facts");
			continue;
		}
		buf_add_bytes(out, e->tree.libs[0].facts->file_size);
		buf_adds(out, ", ");
		add_count(out, e->tree.libs[0].facts->nr_relocs);
		buf_adds(out, " relocs");
		if (elf_facts_unstripped(e->tree.libs[0].facts))
			buf_adds(out, ", unstripped");
		{
			struct buf needs = BUF_INIT;

			elf_render_needs_summary(&e->tree, 4, &needs);
			if (needs.len)
				buf_addf(out, "; %s", needs.buf);
			buf_release(&needs);
		}
		buf_addch(out, '\n');
	}
	if (shown < modules)
		buf_addf(out, "  … and %zu more (--top %zu shows them all)\n", modules - shown, modules);
	free(order);
}
