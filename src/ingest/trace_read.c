/*
 * The trace reader: one process's records (docs/trace-format.md) become its
 * import tree, fed whole or as the process writes.  Phases are the import's
 * own: time spent in imports nested inside a phase is not counted in it.
 */
#include "ingest/trace_read.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 64

/* Per-thread stack of open imports while parsing. */
struct tstack {
	long tid;
	int32_t *v;
	size_t nr, alloc;
};

/* Per node, while parsing: phase boundaries and the time nested imports took. */
struct tside {
	int64_t start_cpu;
	int64_t find_end; /* absolute; UNKNOWN until the f record */
	int64_t exec_at; /* absolute; UNKNOWN until the exec event */
	int64_t kids_ns; /* wall time of finished nested imports */
	int64_t kids_at_find, kids_at_exec;
};

struct tparse {
	struct tstack *stacks;
	size_t nr_stacks, alloc_stacks;
	struct tside *side;
	size_t alloc_side;
	char *line;
	size_t line_alloc;
	int64_t base; /* proc.start_ns */
	int64_t last_t;
	int32_t compile_node; /* a compile event waiting for its end */
	long compile_tid;
	int64_t compile_t;
	bool header, magic;
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

static void end_pending_compile(struct trace_proc *tp, long tid, int64_t t)
{
	struct tparse *ps = tp->ps;

	if (ps->compile_node < 0 || ps->compile_tid != tid)
		return;
	tp->proc.timing[ps->compile_node].compile_ns = t - ps->compile_t;
	ps->compile_node = -1;
}

static int64_t ceil_us(int64_t ns)
{
	return ns <= 0 ? 0 : (ns + 999) / 1000;
}

static void on_start(struct trace_proc *tp, int64_t t, long tid, int64_t cpu, int64_t rss, const char *name)
{
	struct tparse *ps = tp->ps;
	struct proc *pr = &tp->proc;
	struct tstack *st = stack_for(ps, tid);
	int32_t parent = stack_top(st);
	int32_t i = proc_add_node(pr, name, strlen(name), (uint32_t)st->nr, 0, 0);

	if (pr->nr_nodes > ps->alloc_side) {
		ps->alloc_side = pr->alloc_nodes;
		ps->side = xrealloc(ps->side, st_mult(ps->alloc_side, sizeof(*ps->side)));
	}
	ps->side[i] = (struct tside){ .start_cpu = cpu, .find_end = UNKNOWN, .exec_at = UNKNOWN };
	pr->timing[i].start_ns = t - ps->base;
	pr->timing[i].rss_start_kb = rss >= 0 ? rss : UNKNOWN;
	if (parent >= 0)
		proc_link_child(pr, parent, i);
	else
		proc_link_root(pr, i);
	ALLOC_GROW(st->v, st->nr + 1, st->alloc);
	st->v[st->nr++] = i;
}

static void on_find(struct trace_proc *tp, int64_t t, long tid, const char *name, const char *origin)
{
	struct tparse *ps = tp->ps;
	struct proc *pr = &tp->proc;
	int32_t i = stack_top(stack_for(ps, tid));
	struct tside *sd;

	if (i < 0 || strcmp(node_name(pr, i), name) || ps->side[i].find_end != UNKNOWN)
		return;
	sd = &ps->side[i];
	sd->find_end = t;
	sd->kids_at_find = sd->kids_ns;
	/* A parent package imported first, or a finder's own imports, are not finding. */
	pr->timing[i].find_ns = t - (pr->timing[i].start_ns + ps->base) - sd->kids_ns;
	if (*origin && *origin != '<' && strcmp(origin, "built-in") && strcmp(origin, "frozen")) {
		pr->timing[i].file = proc_intern(pr, origin, strlen(origin));
		if (ends_with(origin, ".so") || ends_with(origin, ".pyd"))
			pr->nodes[i].flags |= NODE_NATIVE;
	}
}

static void close_node(struct trace_proc *tp, int32_t i, int64_t t, int64_t cpu, int64_t rss)
{
	struct tparse *ps = tp->ps;
	struct proc *pr = &tp->proc;
	struct imp_timing *tm = &pr->timing[i];
	struct tside *sd = &ps->side[i];
	int32_t parent = pr->nodes[i].parent;

	tm->end_ns = t - ps->base;
	tm->rss_end_kb = rss >= 0 ? rss : UNKNOWN;
	if (cpu >= 0 && sd->start_cpu >= 0 && cpu >= sd->start_cpu)
		tm->cpu_ns = cpu - sd->start_cpu;
	if (sd->find_end != UNKNOWN) {
		if (sd->exec_at != UNKNOWN) {
			tm->load_ns = sd->exec_at - sd->find_end - (sd->kids_at_exec - sd->kids_at_find);
			tm->exec_ns = t - sd->exec_at - (sd->kids_ns - sd->kids_at_exec);
		} else {
			tm->load_ns = t - sd->find_end - (sd->kids_ns - sd->kids_at_find);
		}
	}
	pr->nodes[i].cum_us = ceil_us(tm->end_ns - tm->start_ns);
	if (parent >= 0)
		ps->side[parent].kids_ns += tm->end_ns - tm->start_ns;
}

static void add_done(struct trace_proc *tp, int32_t node, const char *name, int64_t t, uint32_t depth, long tid)
{
	struct proc *pr = &tp->proc;
	struct trace_done *d;

	ALLOC_GROW(tp->done, tp->nr_done + 1, tp->alloc_done);
	d = &tp->done[tp->nr_done++];
	d->node = node;
	d->name = node >= 0 ? pr->nodes[node].name : proc_intern(pr, name, strlen(name));
	d->end_ns = t;
	d->cum_us = node >= 0 ? pr->nodes[node].cum_us : 0;
	d->depth = depth;
	d->tid = tid;
}

static void on_end(struct trace_proc *tp, int64_t t, long tid, int64_t cpu, int64_t rss, const char *name,
		   const char *exc)
{
	struct tparse *ps = tp->ps;
	struct proc *pr = &tp->proc;
	struct tstack *st = stack_for(ps, tid);
	size_t k;
	int32_t i;

	for (k = st->nr; k > 0; k--)
		if (!strcmp(node_name(pr, st->v[k - 1]), name))
			break;
	if (!k) {
		/* Started before the fork this process came from: not its import. */
		tp->unmatched_ends++;
		add_done(tp, -1, name, t, (uint32_t)(tp->fork_depth > 0 ? tp->fork_depth - 1 : 0), tid);
		if (tp->fork_depth > 0)
			tp->fork_depth--;
		return;
	}
	/* Imports above it never reported their end: the tracer missed it. */
	while (st->nr > k) {
		int32_t j = st->v[--st->nr];

		close_node(tp, j, t, -1, -1);
		pr->nodes[j].flags |= NODE_OPEN;
	}
	i = st->v[--st->nr];
	close_node(tp, i, t, cpu, rss);
	if (exc) {
		pr->nodes[i].flags |= NODE_FAILED;
		proc_add_event(pr, t - ps->base, "import.failed", exc, i);
	}
	add_done(tp, i, NULL, t, pr->nodes[i].depth, tid);
}

static void on_audit(struct trace_proc *tp, int64_t t, long tid, const char *event, const char *detail)
{
	struct tparse *ps = tp->ps;
	struct proc *pr = &tp->proc;
	int32_t i = stack_top(stack_for(ps, tid));
	const char *file = i >= 0 ? proc_str(pr, pr->timing[i].file) : "";

	if (!strcmp(event, "exec")) {
		/* The module body starts: the end of the load phase. */
		if (i >= 0 && ps->side[i].exec_at == UNKNOWN && (!*file || !strcmp(file, detail))) {
			ps->side[i].exec_at = t;
			ps->side[i].kids_at_exec = ps->side[i].kids_ns;
		}
		return;
	}
	if (!strcmp(event, "open")) {
		/*
		 * Reads are not side effects: the files besides modules (format 2)
		 * are kept apart for --cold; .py/.pyc reads (format 1) and
		 * bytecode-cache writes are import mechanics.
		 */
		if (starts_with(detail, "r:")) {
			if (detail[2] == '/' && !ends_with(detail, ".py") && !ends_with(detail, ".pyc"))
				proc_add_read(pr, detail + 2);
			return;
		}
		if (strstr(detail, "/__pycache__/") && strstr(detail, ".pyc"))
			return;
	}
	if (!strcmp(event, "compile") && i >= 0 && (!strcmp(file, detail) || (!*file && ends_with(detail, ".py")))) {
		pr->nodes[i].flags |= NODE_COMPILED;
		ps->compile_node = i;
		ps->compile_tid = tid;
		ps->compile_t = t;
	}
	proc_add_event(pr, t - ps->base, event, detail, i);
}

static void gc_add(struct trace_gc *g, int64_t t, int64_t wall, int64_t cpu)
{
	if (!g->count) {
		g->first_ns = t;
		g->cpu_ns = 0;
	}
	g->count++;
	g->wall_ns = i64_add(g->wall_ns, wall);
	g->cpu_ns = cpu >= 0 && g->cpu_ns != UNKNOWN ? i64_add(g->cpu_ns, cpu) : UNKNOWN;
	if (wall > g->longest_ns)
		g->longest_ns = wall;
}

/* Collections of at least this long become events too: the evidence a finding names. */
#define GC_EVENT_MIN_NS 1000000

/*
 * G t tid end cpu gen collected uncollectable: a collection paused the
 * thread from t to end.  It is charged to the innermost import open on the
 * thread, as a pause of its own: not part of that import's phases.
 */
static int on_gc(struct trace_proc *tp, char **f, size_t nf, int64_t t)
{
	struct tparse *ps = tp->ps;
	struct proc *pr = &tp->proc;
	int64_t tid, end, cpu, gen, collected, uncollectable;
	int32_t i;

	if (nf < 8 || parse_i64(f[2], &tid) < 0 || parse_i64(f[3], &end) < 0 || parse_i64(f[4], &cpu) < 0 ||
	    parse_i64(f[5], &gen) < 0 || parse_i64(f[6], &collected) < 0 || parse_i64(f[7], &uncollectable) < 0 ||
	    end < t || end - t > PROFILE_MAX_NS || gen < -1 || gen > 9)
		return -1;
	if (end > ps->last_t)
		ps->last_t = end;
	i = stack_top(stack_for(ps, (long)tid));
	ALLOC_GROW(pr->gc_pauses, pr->nr_gc_pauses + 1, pr->alloc_gc_pauses);
	pr->gc_pauses[pr->nr_gc_pauses++] = (struct gc_pause){ t - ps->base, end - t, (long)tid };
	if (i < 0) {
		gc_add(&tp->gc_outside, t, end - t, cpu);
	} else {
		if ((size_t)i >= tp->nr_gc) {
			size_t n = pr->alloc_nodes > (size_t)i ? pr->alloc_nodes : (size_t)i + 1;

			tp->gc = xrealloc(tp->gc, st_mult(n, sizeof(*tp->gc)));
			memset(tp->gc + tp->nr_gc, 0, (n - tp->nr_gc) * sizeof(*tp->gc));
			tp->nr_gc = n;
		}
		gc_add(&tp->gc[i], t, end - t, cpu);
		/* Not the import's own find, load or exec: like a nested import, left out of its phases. */
		ps->side[i].kids_ns += end - t;
	}
	if (end - t >= GC_EVENT_MIN_NS) {
		char d[160], c[48] = "";

		/* The CPU beside the wall: under a CPU quota a throttled period can fall in a pause. */
		if (cpu >= 0)
			snprintf(c, sizeof(c), "%" PRId64 " us of CPU, ", (cpu + 500) / 1000);
		snprintf(d, sizeof(d),
			 "generation %" PRId64 ", %" PRId64 " us, %s%" PRId64 " collected, %" PRId64 " uncollectable",
			 gen, (end - t + 500) / 1000, c, collected, uncollectable);
		proc_add_event(pr, t - ps->base, "gc", d, i);
	}
	return 0;
}

static void on_note(struct trace_proc *tp, int64_t t, const char *tag, const char *text)
{
	struct proc *pr = &tp->proc;
	struct buf b = BUF_INIT;
	size_t n = *text ? 1 : 0;
	const char *p;

	if (!strcmp(tag, "modules")) {
		while (*text) {
			const char *nl = strchr(text, '\n');
			size_t len = nl ? (size_t)(nl - text) : strlen(text);
			char *one = xstrndup(text, len);

			if (*one)
				strvec_push(&tp->modules, one);
			free(one);
			text += len + (nl ? 1 : 0);
		}
		return;
	}
	if (strcmp(tag, "sys.path"))
		return;
	for (p = text; *p; p++)
		if (*p == '\n')
			n++;
	buf_addf(&b, "%zu entries: ", n);
	for (p = text; *p; p++)
		buf_addch(&b, *p == '\n' ? ':' : *p);
	proc_add_event(pr, t - tp->ps->base, "sys.path", b.buf, -1);
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

/* H t pid ppid start impl version audit [origin cpu depth] */
static int parse_header(struct trace_proc *tp, char **f, size_t nf, int64_t t)
{
	struct proc *pr = &tp->proc;
	int64_t pid, ppid, start, cpu = UNKNOWN, depth = 0, spawner = 0;

	if (nf < 8 || parse_i64(f[2], &pid) < 0 || parse_i64(f[3], &ppid) < 0 || parse_i64(f[4], &start) < 0)
		return -1;
	if (nf >= 11 && (parse_i64(f[9], &cpu) < 0 || parse_i64(f[10], &depth) < 0))
		return -1;
	if (nf >= 12 && (parse_i64(f[11], &spawner) < 0 || spawner < 0 || spawner > INT32_MAX))
		return -1;
	pr->pid = (long)pid;
	pr->ppid = (long)ppid;
	pr->start_ns = start > 0 && start <= t ? start : t;
	pr->tracer_ns = t;
	pr->origin = nf >= 9 && !strcmp(f[8], "fork") ? ORIGIN_FORK : ORIGIN_EXEC;
	pr->startup_cpu_ns = pr->origin == ORIGIN_EXEC ? cpu : UNKNOWN;
	tp->fork_depth = pr->origin == ORIGIN_FORK ? (long)depth : 0;
	tp->spawner = (long)spawner;
	tp->ps->base = pr->start_ns;
	copy_field(tp->impl, sizeof(tp->impl), f[5]);
	copy_field(tp->version_str, sizeof(tp->version_str), f[6]);
	tp->audit = !strcmp(f[7], "audit");
	tp->ps->header = true;
	tp->ps->last_t = t;
	return 0;
}

/* S/E/F: "t tid [cpu] rss name [exc]"; returns -1 when malformed. */
static int parse_import(struct trace_proc *tp, char type, char **f, size_t nf, int64_t t, long tid)
{
	size_t at = tp->version >= 2 ? 4 : 3; /* the rss field */
	int64_t cpu = -1, rss;

	if (nf < at + (type == 'F' ? 3u : 2u) || parse_i64(f[at], &rss) < 0 || !*f[at + 1])
		return -1;
	if (tp->version >= 2 && parse_i64(f[3], &cpu) < 0)
		return -1;
	if (type == 'S')
		on_start(tp, t, tid, cpu, rss, f[at + 1]);
	else
		on_end(tp, t, tid, cpu, rss, f[at + 1], type == 'F' ? f[at + 2] : NULL);
	return 0;
}

/* One record; returns -1 when it is malformed. */
static int parse_record(struct trace_proc *tp, char **f, size_t nf)
{
	struct tparse *ps = tp->ps;
	struct proc *pr = &tp->proc;
	int64_t t, tid = 0, v;
	char type = f[0][0];

	if (f[0][0] == '#' || !f[0][0] || f[0][1])
		return f[0][0] == '#' ? 0 : -1;
	if (nf < 2 || parse_i64(f[1], &t) < 0)
		return -1;
	if (type == 'H')
		return parse_header(tp, f, nf, t);
	if (!ps->header)
		return -1;
	if (t > ps->last_t)
		ps->last_t = t;
	if (strchr("SEFfAN", type)) {
		if (nf < 4 || parse_i64(f[2], &tid) < 0)
			return -1;
		end_pending_compile(tp, (long)tid, t);
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
	case 'F': return parse_import(tp, type, f, nf, t, (long)tid);
	case 'f': on_find(tp, t, (long)tid, f[3], nf > 4 ? f[4] : ""); return 0;
	case 'A':
		if (nf < 5)
			return -1;
		on_audit(tp, t, (long)tid, f[3], f[4]);
		return 0;
	case 'N':
		if (nf < 5)
			return -1;
		on_note(tp, t, f[3], f[4]);
		return 0;
	case 'G': return on_gc(tp, f, nf, t);
	case 'Q':
		tp->clean_exit = true;
		if (nf > 2 && !parse_i64(f[2], &v) && v >= 0)
			pr->cpu_ns = v;
		return 0;
	case 'R':
		free(tp->stopped);
		tp->stopped = xstrdup(nf > 2 ? f[2] : "unknown error");
		tp->stopped_ns = t - ps->base;
		return 0;
	default: return 0; /* unknown types are for later versions */
	}
}

void trace_proc_init(struct trace_proc *tp)
{
	memset(tp, 0, sizeof(*tp));
	proc_init(&tp->proc);
	proc_ensure_timing(&tp->proc);
	strvec_init(&tp->modules);
	tp->ps = xcalloc(1, sizeof(*tp->ps));
	tp->ps->compile_node = -1;
}

long trace_proc_feed(struct trace_proc *tp, const char *text, size_t len, struct buf *err)
{
	struct tparse *ps = tp->ps;
	const char *end, *p = text;
	char *f[MAX_FIELDS];

	if (!ps) {
		buf_addf(err, "trace already finished");
		return -1;
	}
	end = memchr(text, '\0', len);
	if (end)
		len = (size_t)(end - text);
	end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n, nf;

		if (!nl)
			break; /* not written yet, or a record cut short by a kill */
		n = (size_t)(nl - p);
		ALLOC_GROW(ps->line, n + 1, ps->line_alloc);
		memcpy(ps->line, p, n);
		ps->line[n] = '\0';
		p = nl + 1;
		if (!ps->magic) {
			if (strcmp(ps->line, "#coldstart-trace 1") && strcmp(ps->line, "#coldstart-trace 2")) {
				buf_addf(err, "not a coldstart trace (first line '%.40s')", ps->line);
				return -1;
			}
			tp->version = ps->line[17] - '0';
			ps->magic = true;
		}
		nf = split_fields(ps->line, f, MAX_FIELDS);
		tp->records++;
		if (parse_record(tp, f, nf) < 0)
			tp->bad_records++;
	}
	return (long)(p - text);
}

int trace_proc_finish(struct trace_proc *tp, struct buf *err)
{
	struct tparse *ps = tp->ps;
	struct proc *pr = &tp->proc;
	size_t i, k;
	int ret = -1;

	if (!ps)
		return 0;
	if (!ps->header) {
		buf_addf(err, "not a coldstart trace (no header record)");
		goto out;
	}
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
	ret = 0;
out:
	for (k = 0; k < ps->nr_stacks; k++)
		free(ps->stacks[k].v);
	free(ps->stacks);
	free(ps->side);
	free(ps->line);
	free(ps);
	tp->ps = NULL;
	return ret;
}

int trace_parse(struct trace_proc *tp, const char *text, size_t len, struct buf *err)
{
	trace_proc_init(tp);
	if (trace_proc_feed(tp, text, len, err) < 0) {
		trace_proc_finish(tp, err);
		return -1;
	}
	return trace_proc_finish(tp, err);
}

int trace_read_file(struct trace_proc *tp, const char *path, struct buf *err)
{
	struct buf text = BUF_INIT;
	int ret;

	if (buf_read_file(&text, path) < 0) {
		trace_proc_init(tp);
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
	if (tp->ps) {
		struct buf err = BUF_INIT;

		trace_proc_finish(tp, &err);
		buf_release(&err);
	}
	proc_release(&tp->proc);
	strvec_clear(&tp->modules);
	free(tp->done);
	free(tp->gc);
	tp->gc = NULL;
	tp->nr_gc = 0;
	free(tp->stopped);
	tp->done = NULL;
	tp->nr_done = tp->alloc_done = 0;
	tp->stopped = NULL;
}
