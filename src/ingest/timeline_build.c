/*
 * Building a process's start-up timeline (model/timeline.h) from the
 * sampler's samples file: the call tree of functions and the imports they
 * ran, named from the process's import tree, cut where the profile's time to
 * ready ends.
 */
#include "ingest/timeline_build.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "iset.h"
#include "model/profile.h"

/* Build state beside the timeline being built. */
struct build {
	struct timeline *tl;
	const struct samples_file *sf;
	const struct proc *pr;
	struct iset kids; /* node indices, by (parent, kind, name, file, line) */
	/* Per code id of the samples file: interned name and file, and what kind of frame it is. */
	uint32_t *code_name, *code_file;
	uint8_t *code_flags;
	/* The proc's modules by file: pool offsets of files and names (parallel, sorted by file). */
	const char **mod_file;
	const char **mod_name;
	size_t nr_mods;
	const char **startup; /* names of the start-up imports (NULL-terminated) */
	int32_t *roots; /* thread number -> root node, -1 */
	int32_t *startup_node; /* thread number -> its start-up node, -1 */
	size_t nr_roots;
	/* Per thread number: the last sample's time and CPU time, whether the thread ended. */
	int64_t *last_t, *last_cpu;
	bool *done;
	int64_t sampled_cpu_ns; /* CPU time of every sample, all threads */
	int64_t last_wait; /* the main thread's time waiting for a CPU at its last sample; UNKNOWN */
	/*
	 * Wait read after its sample's clock: the handler reads the clocks, then
	 * the wait, and a thread throttled in between shows a wait longer than
	 * its interval, the next sample an interval without it.  The excess is
	 * carried into the next samples, so the wait adds up over the run.
	 */
	int64_t wait_carry;
	size_t gc_next; /* the first of the process's collections not yet behind the main thread's samples */
};

#define CODE_IMPORTLIB 1u /* a frame of importlib's bootstrap: import machinery */
#define CODE_MODULE 2u /* a module body (<module>) */

static uint32_t intern(struct build *b, const char *s, size_t len)
{
	return timeline_intern(b->tl, s, len);
}

static uint64_t hash_node_at(const void *ctx, int32_t v)
{
	const struct tl_node *n = &((const struct timeline *)ctx)->nodes[v];

	return tl_node_key(n->parent, n->kind, n->name, n->file, n->line);
}

/* The child of parent with this identity, added on first sight. */
static int32_t child(struct build *b, int32_t parent, enum tl_kind kind, uint32_t name, uint32_t file, int32_t line)
{
	struct timeline *tl = b->tl;
	size_t j;
	int32_t i;

	if (b->kids.used * 2 >= b->kids.cap)
		iset_grow(&b->kids, hash_node_at, tl);
	for (j = tl_node_key(parent, (uint8_t)kind, name, file, line) & (b->kids.cap - 1); b->kids.slot[j] >= 0;
	     j = (j + 1) & (b->kids.cap - 1)) {
		const struct tl_node *n = &tl->nodes[b->kids.slot[j]];

		if (n->parent == parent && n->kind == kind && n->name == name && n->file == file && n->line == line)
			return b->kids.slot[j];
	}
	i = timeline_add_node(tl, parent, kind, name, file, line);
	b->kids.slot[j] = i;
	b->kids.used++;
	return i;
}

static int cmp_mod(const void *a, const void *b, void *ctx)
{
	const struct build *bd = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	return strcmp(bd->mod_file[i], bd->mod_file[j]);
}

/* The modules of the process's trace, by file, so a function's file names its module. */
static void index_modules(struct build *b)
{
	const struct proc *pr = b->pr;
	const char **file, **name;
	size_t *order, i, n = 0;

	if (!pr || !pr->timing)
		return;
	file = xmalloc(st_mult(pr->nr_nodes, sizeof(*file)));
	name = xmalloc(st_mult(pr->nr_nodes, sizeof(*name)));
	for (i = 0; i < pr->nr_nodes; i++) {
		if (!pr->timing[i].file)
			continue;
		file[n] = proc_str(pr, pr->timing[i].file);
		name[n] = node_name(pr, (int32_t)i);
		n++;
	}
	order = xmalloc(st_mult(n ? n : 1, sizeof(*order)));
	for (i = 0; i < n; i++)
		order[i] = i;
	b->mod_file = file;
	b->mod_name = name;
	qsort_r(order, n, sizeof(*order), cmp_mod, b);
	b->mod_file = xmalloc(st_mult(n ? n : 1, sizeof(*file)));
	b->mod_name = xmalloc(st_mult(n ? n : 1, sizeof(*name)));
	for (i = 0; i < n; i++) {
		b->mod_file[i] = file[order[i]];
		b->mod_name[i] = name[order[i]];
	}
	b->nr_mods = n;
	free(order);
	free(file);
	free(name);
}

static const char *module_by_file(const struct build *b, const char *file)
{
	size_t lo = 0, hi = b->nr_mods;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(b->mod_file[mid], file);

		if (!c)
			return b->mod_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * A module name for a file the trace did not name: the path below
 * site-packages, dist-packages or the standard library's directory, else the
 * file's base name; "<frozen x>" is x.
 */
static void module_from_path(const char *file, struct buf *out)
{
	const char *p = NULL, *s;
	size_t len, i, start = out->len;

	if (starts_with(file, "<frozen ")) {
		len = strlen(file);
		buf_add(out, file + 8, len > 9 ? len - 9 : 0);
		return;
	}
	if (*file == '<') {
		buf_adds(out, file);
		return;
	}
	if ((s = strstr(file, "/site-packages/")))
		p = s + 15;
	else if ((s = strstr(file, "/dist-packages/")))
		p = s + 15;
	else if ((s = strstr(file, "/lib/python3"))) {
		const char *slash = strchr(s + 12, '/');

		p = slash ? slash + 1 : NULL;
	}
	if (!p) {
		p = strrchr(file, '/');
		p = p ? p + 1 : file;
	}
	len = strlen(p);
	if (len > 3 && !strcmp(p + len - 3, ".py"))
		len -= 3;
	buf_add(out, p, len);
	for (i = start; i < out->len; i++)
		if (out->buf[i] == '/')
			out->buf[i] = '.';
	if (out->len - start > 9 && !strcmp(out->buf + out->len - 9, ".__init__"))
		buf_setlen(out, out->len - 9);
}

/* Interns the display names of the samples file's code objects, once each. */
static void name_codes(struct build *b)
{
	const struct samples_file *sf = b->sf;
	struct buf name = BUF_INIT;
	size_t i;

	b->code_name = xcalloc(sf->nr_codes, sizeof(*b->code_name));
	b->code_file = xcalloc(sf->nr_codes, sizeof(*b->code_file));
	b->code_flags = xcalloc(sf->nr_codes, sizeof(*b->code_flags));
	for (i = 0; i < sf->nr_codes; i++) {
		const char *file = samples_str(sf, sf->codes[i].file);
		const char *qual = samples_str(sf, sf->codes[i].name);
		const char *mod;

		if (i == 0 || !*qual) {
			b->code_name[i] = intern(b, "?", 1);
			continue;
		}
		if (starts_with(file, "<frozen importlib._bootstrap") || starts_with(file, "<frozen zipimport>"))
			b->code_flags[i] |= CODE_IMPORTLIB;
		if (!strcmp(qual, "<module>"))
			b->code_flags[i] |= CODE_MODULE;
		buf_reset(&name);
		mod = module_by_file(b, file);
		if (mod)
			buf_adds(&name, mod);
		else
			module_from_path(file, &name);
		buf_addch(&name, '.');
		buf_adds(&name, qual);
		b->code_name[i] = intern(b, name.buf, name.len);
		b->code_file[i] = intern(b, file, strlen(file));
	}
	buf_release(&name);
}

/*
 * The start-up imports: the process's start-up roots (the importtime rows up
 * to site), and the modules interpreter start-up always imports.
 */
static bool is_startup_import(const struct build *b, const char *name)
{
	static const char *const always[] = { "site", "sitecustomize", "usercustomize", "encodings", NULL };
	const struct proc *pr = b->pr;
	size_t i;

	for (i = 0; always[i]; i++)
		if (!strcmp(always[i], name) || (starts_with(name, always[i]) && name[strlen(always[i])] == '.'))
			return true;
	if (!pr)
		return false;
	for (int32_t r = pr->first_root; r >= 0; r = pr->nodes[r].next_sibling)
		if ((pr->nodes[r].flags & NODE_STARTUP) && !strcmp(node_name(pr, r), name))
			return true;
	return false;
}

static void grow_threads(struct build *b, int32_t thread)
{
	size_t n = (size_t)thread + 1, i;

	if (n <= b->nr_roots)
		return;
	b->roots = xrealloc(b->roots, st_mult(n, sizeof(*b->roots)));
	b->startup_node = xrealloc(b->startup_node, st_mult(n, sizeof(*b->startup_node)));
	b->last_t = xrealloc(b->last_t, st_mult(n, sizeof(*b->last_t)));
	b->last_cpu = xrealloc(b->last_cpu, st_mult(n, sizeof(*b->last_cpu)));
	b->done = xrealloc(b->done, st_mult(n, sizeof(*b->done)));
	for (i = b->nr_roots; i < n; i++) {
		b->roots[i] = b->startup_node[i] = -1;
		b->last_t[i] = b->last_cpu[i] = UNKNOWN;
		b->done[i] = false;
	}
	b->nr_roots = n;
}

static int32_t thread_root(struct build *b, int32_t thread)
{
	char name[32];

	grow_threads(b, thread);
	if (b->roots[thread] < 0) {
		if (thread == 1)
			snprintf(name, sizeof(name), "main thread");
		else
			snprintf(name, sizeof(name), "thread %d", (int)thread);
		b->roots[thread] = timeline_add_node(b->tl, -1, TL_THREAD, intern(b, name, strlen(name)), 0, 0);
	}
	return b->roots[thread];
}

static int32_t startup_node(struct build *b, int32_t thread)
{
	int32_t root = thread_root(b, thread);

	if (b->startup_node[thread] < 0)
		b->startup_node[thread] = child(b, root, TL_STARTUP, intern(b, "interpreter start-up", 20), 0, 0);
	return b->startup_node[thread];
}

static int64_t us_of(int64_t ns)
{
	return ns >= 0 ? (ns + 500) / 1000 : -((-ns + 500) / 1000);
}

/*
 * A sample for the interval from from_ns to t_ns.  Both ends are rounded to
 * microseconds since the origin before they are subtracted, so the samples
 * of a thread add up to its span exactly.
 */
static void add_sample(struct timeline *tl, int64_t t_ns, int64_t from_ns, int64_t cpu_ns, int64_t wait_ns,
		       int32_t node)
{
	struct tl_sample *s;

	ALLOC_GROW(tl->samples, tl->nr_samples + 1, tl->alloc_samples);
	s = &tl->samples[tl->nr_samples++];
	s->t_us = us_of(t_ns - tl->origin_ns);
	s->wall_us = s->t_us - us_of(from_ns - tl->origin_ns);
	s->cpu_us = cpu_ns >= 0 ? us_of(cpu_ns) : UNKNOWN;
	s->wait_us = wait_ns > 0 ? us_of(wait_ns) : 0;
	if (s->wait_us > s->wall_us)
		s->wait_us = s->wall_us;
	s->node = node;
}

/*
 * The innermost node of one sample: its frames, outermost first, become
 * functions and imports.  An import is importlib's _find_and_load with the
 * module's name; the importlib frames below it and the module's own body
 * (<module>) are the import itself, and what the body calls hangs under it.
 */
static int32_t place(struct build *b, const struct sf_sample *s)
{
	const struct samples_file *sf = b->sf;
	int32_t node = thread_root(b, s->thread);
	bool in_import = false, outermost = true;
	uint32_t k;

	if (s->truncated)
		node = child(b, node, TL_FUNC, intern(b, "...", 3), 0, 0);
	for (k = s->nr; k-- > 0;) {
		const struct sf_frame *fr = &sf->frames[s->first + k];
		uint8_t flags = b->code_flags[fr->code];

		if (flags & CODE_IMPORTLIB) {
			if (fr->module) {
				const char *mod = samples_str(sf, fr->module);

				if (outermost && !s->truncated && is_startup_import(b, mod))
					node = startup_node(b, s->thread);
				node = child(b, node, TL_IMPORT, intern(b, mod, strlen(mod)), 0, 0);
				in_import = true;
				outermost = false;
			}
			continue;
		}
		if (in_import && (flags & CODE_MODULE)) {
			in_import = false;
			continue;
		}
		in_import = false;
		outermost = false;
		node = child(b, node, TL_FUNC, b->code_name[fr->code], b->code_file[fr->code],
			     sf->codes[fr->code].line);
	}
	return node;
}

/* Whether node i lies below node a. */
static bool under(const struct timeline *tl, int32_t i, int32_t a)
{
	if (a < 0)
		return false;
	for (i = tl->nodes[i].parent; i >= 0; i = tl->nodes[i].parent)
		if (i == a)
			return true;
	return false;
}

/*
 * Adds the samples up to the cut.  The main thread is sampled by wall time:
 * a sample stands for the interval since the previous one (a thread that
 * waited gets the signal when it runs again, so its stack is where it
 * waited).  Other threads are sampled by CPU time: a sample stands for the
 * thread's CPU time since its previous one, in both its wall and CPU times.
 */
/*
 * How much of [from, to] (CLOCK_MONOTONIC) the garbage collector paused the
 * main thread (the tracer's thread 1), from the process's G records.  The
 * samples come in time order, so the collections behind them are skipped
 * for good.
 */
static int64_t gc_overlap(struct build *b, int64_t from, int64_t to)
{
	const struct proc *pr = b->pr;
	int64_t sum = 0;
	size_t k;

	if (!pr || pr->start_ns < 0)
		return 0;
	while (b->gc_next < pr->nr_gc_pauses) {
		const struct gc_pause *g = &pr->gc_pauses[b->gc_next];

		if (g->tid == 1 && pr->start_ns + g->start_ns + g->dur_ns > from)
			break;
		b->gc_next++;
	}
	for (k = b->gc_next; k < pr->nr_gc_pauses; k++) {
		const struct gc_pause *g = &pr->gc_pauses[k];
		int64_t s = pr->start_ns + g->start_ns, e = s + g->dur_ns;

		if (g->tid != 1)
			continue;
		if (s >= to)
			break;
		sum += (e < to ? e : to) - (s > from ? s : from);
	}
	return sum > 0 ? sum : 0;
}

/*
 * A main-thread sample: the part of its interval the collector paused goes
 * to a "[gc]" node under what ran (the allocation that triggered it), first,
 * its CPU and wait in proportion; the rest to the node itself.
 */
static void add_main_sample(struct build *b, int64_t t, int64_t wall, int64_t cpu, int64_t wait, int32_t node)
{
	int64_t gc = wall > 0 ? gc_overlap(b, t - wall, t) : 0;
	int32_t kind = b->tl->nodes[node].kind;

	if (gc > wall)
		gc = wall;
	if (gc > 0 && kind != TL_STARTUP && kind != TL_SHUTDOWN && kind != TL_THREAD) {
		int32_t g = child(b, node, TL_GC, intern(b, GC_NODE_NAME, strlen(GC_NODE_NAME)), 0, 0);
		int64_t gcpu = (int64_t)((double)cpu * (double)gc / (double)wall);
		int64_t gwait = (int64_t)((double)wait * (double)gc / (double)wall);

		add_sample(b->tl, t - wall + gc, t - wall, gcpu, gwait, g);
		add_sample(b->tl, t, t - wall + gc, cpu - gcpu, wait - gwait, node);
		return;
	}
	add_sample(b->tl, t, t - wall, cpu, wait, node);
}

static void add_samples(struct build *b, int64_t end_ns)
{
	const struct samples_file *sf = b->sf;
	bool began = false;
	size_t i;

	grow_threads(b, 1);
	if (b->last_t[1] < 0) {
		b->last_t[1] = sf->start_ns;
		b->last_cpu[1] = sf->start_thread_cpu_ns;
	}
	for (i = 0; i < sf->nr_samples; i++) {
		const struct sf_sample *s = &sf->samples[i];
		int64_t wall, cpu, wait = 0, t = s->t_ns;
		int32_t node;

		grow_threads(b, s->thread);
		if (b->done[s->thread])
			continue;
		if (s->thread == 1) {
			if (t < b->last_t[1])
				continue; /* clocks do not go back: a record out of place */
			if (end_ns >= 0 && t > end_ns) {
				/* The interval the cut falls in is this sample's, up to the cut. */
				b->done[1] = true;
				t = end_ns > b->last_t[1] ? end_ns : b->last_t[1];
			}
			wall = t - b->last_t[1];
			cpu = s->cpu_ns >= b->last_cpu[1] ? s->cpu_ns - b->last_cpu[1] : 0;
			if (s->wait_ns >= 0 && b->last_wait >= 0 && s->wait_ns >= b->last_wait)
				wait = s->wait_ns - b->last_wait;
			if (s->wait_ns >= 0)
				b->last_wait = s->wait_ns;
			wait += b->wait_carry;
			b->wait_carry = wait > wall ? wait - wall : 0;
			wait -= b->wait_carry;
			if (b->done[1] && s->t_ns > b->last_t[1]) {
				cpu = i64_share(cpu, wall, s->t_ns - b->last_t[1]);
				wait = i64_share(wait, wall, s->t_ns - b->last_t[1]);
			}
		} else {
			if (end_ns >= 0 && t > end_ns) {
				b->done[s->thread] = true;
				continue;
			}
			cpu = b->last_cpu[s->thread] >= 0 && s->cpu_ns >= b->last_cpu[s->thread]
				      ? s->cpu_ns - b->last_cpu[s->thread]
				      : s->cpu_ns;
			wall = cpu;
		}
		b->last_t[s->thread] = t;
		b->last_cpu[s->thread] = s->cpu_ns;
		/*
		 * No Python frame before the program's own first one: the
		 * interpreter between site and __main__ (reading and compiling
		 * the script, runpy's set-up in C).
		 */
		if (s->thread == 1 && !s->nr && !began && !sf->forked)
			node = startup_node(b, 1);
		else
			node = place(b, s);
		if (s->thread == 1 && !began && node != b->startup_node[1] && !under(b->tl, node, b->startup_node[1]))
			began = true;
		if (s->thread == 1)
			add_main_sample(b, t, wall, cpu, wait, node);
		else
			add_sample(b->tl, t, t - wall, cpu, wait, node);
		b->sampled_cpu_ns += cpu;
	}
}

static int32_t tail_node(struct build *b, int32_t root)
{
	const struct timeline *tl = b->tl;
	size_t i;

	if (b->sf->final_ns >= 0)
		return child(b, root, TL_SHUTDOWN, intern(b, "interpreter shutdown", 20), 0, 0);
	for (i = tl->nr_samples; i-- > 0;)
		if (tl_root_of(tl, tl->samples[i].node) == root)
			return tl->samples[i].node;
	return root;
}

static void build_release(struct build *b)
{
	iset_release(&b->kids);
	free(b->code_name);
	free(b->code_file);
	free(b->code_flags);
	free(b->mod_file);
	free(b->mod_name);
	free(b->roots);
	free(b->startup_node);
	free(b->last_t);
	free(b->last_cpu);
	free(b->done);
}

/*
 * Whether the samples' wall and CPU times add up to at most PROFILE_MAX_US
 * (31 years of thread time), as the profile's reader requires: then no sum
 * of them can overflow.  Only a damaged samples file gives more.
 */
static bool samples_fit(const struct timeline *tl)
{
	int64_t wall = 0, cpu = 0;
	size_t i;

	for (i = 0; i < tl->nr_samples; i++) {
		const struct tl_sample *s = &tl->samples[i];

		if (s->t_us < -PROFILE_MAX_US || s->t_us > PROFILE_MAX_US)
			return false;
		wall = i64_add(wall, i64_abs(s->wall_us));
		cpu = i64_add(cpu, s->cpu_us > 0 ? s->cpu_us : 0);
		if (wall > PROFILE_MAX_US || cpu > PROFILE_MAX_US)
			return false;
	}
	return true;
}

int timeline_build(struct timeline *tl, const struct samples_file *sf, const struct proc *pr, const struct tl_cut *cut,
		   struct buf *err)
{
	struct build b = { .tl = tl, .sf = sf, .pr = pr, .last_wait = sf->start_wait_ns };
	int64_t end_ns = cut->end_ns, last_ns, exit_ns;
	int32_t root;

	if (sf->start_ns < 0) {
		buf_addf(err, "samples of process %ld have no start", sf->pid);
		return -1;
	}
	/*
	 * A fork's sampler starts in the child at the fork itself (os.fork's
	 * after-fork hooks), more exactly than a process start read from /proc.
	 */
	if (cut->origin_ns >= 0)
		tl->origin_ns = cut->origin_ns;
	else if (sf->forked || !pr || pr->start_ns < 0)
		tl->origin_ns = sf->start_ns;
	else
		tl->origin_ns = pr->start_ns;
	if (tl->origin_ns > sf->start_ns)
		tl->origin_ns = sf->start_ns;
	tl->start_us = us_of(sf->start_ns - tl->origin_ns);
	tl->interval_us = sf->interval_us;
	tl->dropped = sf->dropped;
	tl->faults = sf->faults;
	tl->end = cut->end;
	/* The process exited before the cut: its timeline ends at its exit. */
	exit_ns = cut->exit_ns >= 0 ? cut->exit_ns : sf->end_ns;
	if (end_ns >= 0 && exit_ns >= 0 && exit_ns < end_ns)
		end_ns = UNKNOWN;
	if (end_ns < 0)
		tl->end = exit_ns >= 0 ? TL_END_EXIT : TL_END_LAST_SAMPLE;

	iset_init(&b.kids, 1024);
	index_modules(&b);
	name_codes(&b);

	/* Until sampling began: interpreter start-up. */
	root = thread_root(&b, 1);
	if (sf->start_ns > tl->origin_ns) {
		int64_t t = end_ns >= 0 && end_ns < sf->start_ns ? end_ns : sf->start_ns;
		int32_t node = startup_node(&b, 1);

		add_sample(tl, t, tl->origin_ns, sf->start_thread_cpu_ns, sf->start_wait_ns, node);
		b.last_t[1] = t;
		b.last_cpu[1] = sf->start_thread_cpu_ns;
		if (t < sf->start_ns)
			b.done[1] = true;
	}
	add_samples(&b, end_ns);
	last_ns = b.last_t[1];

	/*
	 * After the last sample: finalisation when the interpreter said it
	 * began, else (sampling stopped: a full file, a killed process) more of
	 * the last stack.
	 */
	if (end_ns >= 0 && !b.done[1] && last_ns < end_ns) {
		int32_t node = tail_node(&b, root);

		add_sample(tl, end_ns, last_ns, UNKNOWN, 0, node);
		last_ns = end_ns;
	} else if (end_ns < 0 && exit_ns > last_ns) {
		int32_t node = tail_node(&b, root);
		int64_t cpu = UNKNOWN;

		if (sf->end_proc_cpu_ns >= 0 && sf->start_proc_cpu_ns >= 0) {
			cpu = sf->end_proc_cpu_ns - sf->start_proc_cpu_ns - b.sampled_cpu_ns;
			if (cpu < 0)
				cpu = 0;
		}
		add_sample(tl, exit_ns, last_ns, cpu, 0, node);
		last_ns = exit_ns;
	}
	tl->end_us = us_of(last_ns - tl->origin_ns);
	build_release(&b);
	if (!samples_fit(tl)) {
		buf_addf(err, "samples of process %ld add up to more than %lld us (a damaged file)", sf->pid,
			 (long long)PROFILE_MAX_US);
		return -1;
	}
	timeline_sum(tl);
	return 0;
}
