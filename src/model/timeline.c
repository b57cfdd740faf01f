/*
 * The start-up timeline of one process (timeline.h): a call tree of Python
 * functions and the imports they ran, built from the sampler's samples and
 * cut where the profile's time to ready ends; its split and its costliest
 * functions outside imports, and its JSON.
 */
#include "model/timeline.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "iset.h"
#include "model/profile.h"

static const char *const kind_names[TL__COUNT] = {
	[TL_THREAD] = "thread", [TL_STARTUP] = "startup", [TL_IMPORT] = "import",
	[TL_FUNC] = "function", [TL_SHUTDOWN] = "shutdown",
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
};

static int32_t root_of(const struct timeline *tl, int32_t i);

#define CODE_IMPORTLIB 1u /* a frame of importlib's bootstrap: import machinery */
#define CODE_MODULE 2u /* a module body (<module>) */

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

static uint32_t intern(struct build *b, const char *s, size_t len)
{
	return timeline_intern(b->tl, s, len);
}

static uint64_t node_key(int32_t parent, uint8_t kind, uint32_t name, uint32_t file, int32_t line)
{
	uint64_t h = (uint64_t)(uint32_t)parent * 0x9E3779B97F4A7C15ull;

	h ^= ((uint64_t)name << 24 | kind) * 0xC2B2AE3D27D4EB4Full;
	h ^= ((uint64_t)file << 20 ^ (uint32_t)line) * 0x165667B19E3779F9ull;
	return h ^ (h >> 29);
}

static uint64_t hash_node_at(const void *ctx, int32_t v)
{
	const struct tl_node *n = &((const struct timeline *)ctx)->nodes[v];

	return node_key(n->parent, n->kind, n->name, n->file, n->line);
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

/* The child of parent with this identity, added on first sight. */
static int32_t child(struct build *b, int32_t parent, enum tl_kind kind, uint32_t name, uint32_t file, int32_t line)
{
	struct timeline *tl = b->tl;
	size_t j;
	int32_t i;

	if (b->kids.used * 2 >= b->kids.cap)
		iset_grow(&b->kids, hash_node_at, tl);
	for (j = node_key(parent, (uint8_t)kind, name, file, line) & (b->kids.cap - 1); b->kids.slot[j] >= 0;
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
				t = end_ns;
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
				cpu = cpu * wall / (s->t_ns - b->last_t[1]);
				wait = wait * wall / (s->t_ns - b->last_t[1]);
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
		if (root_of(tl, tl->samples[i].node) == root)
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

int timeline_build(struct timeline *tl, const struct samples_file *sf, const struct proc *pr,
		   const struct tl_cut *cut, struct buf *err)
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

		if (up == TL_STARTUP || up == TL_SHUTDOWN || up == TL_IMPORT)
			cls[i] = up;
		else if (n->kind == TL_STARTUP || n->kind == TL_SHUTDOWN || n->kind == TL_IMPORT)
			cls[i] = n->kind;
		else
			cls[i] = TL_FUNC;
	}
	return cls;
}

static int32_t root_of(const struct timeline *tl, int32_t i)
{
	while (tl->nodes[i].parent >= 0)
		i = tl->nodes[i].parent;
	return i;
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

		if (s->node < 0 || (size_t)s->node >= tl->nr_nodes || root_of(tl, s->node) != main)
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
			UNKNOWN;
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
static bool is_stdlib_file(const char *file)
{
	if (starts_with(file, "<frozen "))
		return true;
	return strstr(file, "/lib/python3") && !strstr(file, "-packages/");
}

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
	return node_key(-1, TL_FUNC, name, file, line);
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
		if (n->kind == TL_IMPORT) {
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
		if (n->kind != TL_FUNC || cls[i] != TL_FUNC || root_of(tl, (int32_t)i) != main)
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
			if (is_stdlib_file(tl_str(tl, tl->nodes[c].file)) && !is_stdlib_file(tl_str(tl, f[j].file)))
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
	if (is_stdlib_file(file))
		return KIND_STDLIB;
	return KIND_APP;
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
