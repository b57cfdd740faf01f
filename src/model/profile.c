/*
 * The profile model: construction, tree links and walkers, names, metrics
 * (wall or CPU time) and readiness.  Classification, the consistency check
 * and package totals live in classify.c, JSON in profile_json.c.
 */
#include "model/profile.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const kind_names[KIND__COUNT] = {
	[KIND_STARTUP] = "startup", [KIND_STDLIB] = "stdlib", [KIND_THIRDPARTY] = "thirdparty",
	[KIND_APP] = "app",	    [KIND_TOOL] = "tool",
};

static const char *const status_names[] = {
	[RUN_EXITED] = "exited",   [RUN_SIGNALED] = "signaled", [RUN_OOM] = "oom",
	[RUN_TIMEOUT] = "timeout", [RUN_STOPPED] = "stopped",	[RUN_NOT_RUN] = "not-run",
};

static void finding_release(struct finding *f)
{
	free(f->id);
	free(f->severity);
	free(f->title);
	free(f->evidence);
	free(f->fix);
	free(f->module);
	free(f->pids);
}

int32_t proc_walk_next(const struct proc *pr, int32_t i, bool descend)
{
	if (descend && pr->nodes[i].first_child >= 0)
		return pr->nodes[i].first_child;
	while (i >= 0 && pr->nodes[i].next_sibling < 0)
		i = pr->nodes[i].parent;
	return i < 0 ? -1 : pr->nodes[i].next_sibling;
}

int32_t proc_preorder_next(const struct proc *pr, int32_t i)
{
	return proc_walk_next(pr, i, true);
}

static int32_t deepest_first(const struct proc *pr, int32_t i)
{
	while (pr->nodes[i].first_child >= 0)
		i = pr->nodes[i].first_child;
	return i;
}

int32_t proc_postorder_first(const struct proc *pr)
{
	return pr->first_root < 0 ? -1 : deepest_first(pr, pr->first_root);
}

int32_t proc_postorder_next(const struct proc *pr, int32_t i)
{
	if (pr->nodes[i].next_sibling >= 0)
		return deepest_first(pr, pr->nodes[i].next_sibling);
	return pr->nodes[i].parent;
}

/* The name of value v in a table of names, "unknown" outside it; and back, -1 for no such name. */
static const char *name_of(const char *const *names, size_t nr, unsigned v)
{
	return v < nr && names[v] ? names[v] : "unknown";
}

static int value_of(const char *const *names, size_t nr, const char *s)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (names[i] && !strcmp(names[i], s))
			return (int)i;
	return -1;
}

const char *kind_name(enum node_kind k)
{
	return name_of(kind_names, KIND__COUNT, (unsigned)k);
}

int kind_from_name(const char *s)
{
	return value_of(kind_names, KIND__COUNT, s);
}

static const char *const origin_names[] = {
	[ORIGIN_UNKNOWN] = "unknown",
	[ORIGIN_EXEC] = "exec",
	[ORIGIN_FORK] = "fork",
};

const char *proc_origin_name(enum proc_origin o)
{
	return name_of(origin_names, ARRAY_SIZE(origin_names), (unsigned)o);
}

int proc_origin_from_name(const char *s)
{
	return value_of(origin_names, ARRAY_SIZE(origin_names), s);
}

const char *run_status_name(enum run_status s)
{
	return name_of(status_names, ARRAY_SIZE(status_names), (unsigned)s);
}

int run_status_from_name(const char *s)
{
	return value_of(status_names, ARRAY_SIZE(status_names), s);
}

void profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
	strvec_init(&p->target);
	p->limits.swap = 0;
	native_set_init(&p->native);
}

void profile_stamp(struct profile *p, const char *command)
{
	char stamp[32];
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	free(p->tool_version);
	free(p->command);
	free(p->created);
	p->tool_version = xstrdup(COLDSTART_VERSION);
	p->command = xstrdup(command);
	p->created = xstrdup(stamp);
}

void profile_release(struct profile *p)
{
	size_t i;

	free(p->tool_version);
	free(p->created);
	free(p->python);
	free(p->python_version);
	free(p->python_launcher);
	free(p->python_executable);
	free(p->cwd);
	free(p->command);
	strvec_clear(&p->target);
	limits_release(&p->limits);
	for (i = 0; i < p->nr_runs; i++)
		run_release(&p->runs[i]);
	free(p->runs);
	for (i = 0; i < p->nr_warnings; i++)
		free(p->warnings[i].msg);
	free(p->warnings);
	for (i = 0; i < p->nr_findings; i++)
		finding_release(&p->findings[i]);
	free(p->findings);
	native_set_release(&p->native);
	profile_init(p);
}

struct run *profile_add_run(struct profile *p)
{
	struct run *r;

	ALLOC_GROW(p->runs, p->nr_runs + 1, p->alloc_runs);
	r = &p->runs[p->nr_runs++];
	memset(r, 0, sizeof(*r));
	r->status = RUN_NOT_RUN;
	r->wall_us = UNKNOWN;
	r->user_us = UNKNOWN;
	r->sys_us = UNKNOWN;
	r->maxrss_kb = UNKNOWN;
	r->ready_us = UNKNOWN;
	r->first_response_us = UNKNOWN;
	r->listening_us = UNKNOWN;
	r->requests_median_us = UNKNOWN;
	r->requests_p95_us = UNKNOWN;
	r->launcher_us = UNKNOWN;
	r->ready_ns = UNKNOWN;
	return r;
}

void profile_add_warning(struct profile *p, long line, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	ALLOC_GROW(p->warnings, p->nr_warnings + 1, p->alloc_warnings);
	p->warnings[p->nr_warnings].line = line;
	p->warnings[p->nr_warnings].msg = buf_detach(&msg, NULL);
	p->nr_warnings++;
}

void profile_add_finding(struct profile *p, struct finding *f)
{
	ALLOC_GROW(p->findings, p->nr_findings + 1, p->alloc_findings);
	p->findings[p->nr_findings++] = *f;
	memset(f, 0, sizeof(*f));
}

struct proc *run_add_proc(struct run *r)
{
	struct proc *pr;

	ALLOC_GROW(r->procs, r->nr_procs + 1, r->alloc_procs);
	pr = &r->procs[r->nr_procs++];
	proc_init(pr);
	return pr;
}

void run_release(struct run *r)
{
	size_t i;

	for (i = 0; i < r->nr_procs; i++)
		proc_release(&r->procs[i]);
	free(r->procs);
	r->procs = NULL;
	r->nr_procs = r->alloc_procs = 0;
}

void proc_init(struct proc *pr)
{
	memset(pr, 0, sizeof(*pr));
	pr->pid = -1;
	pr->ppid = -1;
	pr->start_ns = UNKNOWN;
	pr->end_ns = UNKNOWN;
	pr->tracer_ns = UNKNOWN;
	pr->startup_cpu_ns = UNKNOWN;
	pr->cpu_ns = UNKNOWN;
	pr->first_root = -1;
	pr->last_root = -1;
	pr->children_first = true;
	buf_init(&pr->names, 0);
	/* Offset 0 is the empty string. */
	buf_addch(&pr->names, '\0');
}

void proc_release(struct proc *pr)
{
	free(pr->argv);
	free(pr->role);
	big_free(pr->nodes, pr->alloc_nodes * sizeof(*pr->nodes));
	free(pr->timing);
	free(pr->events);
	free(pr->reads);
	free(pr->gc_pauses);
	timeline_free(pr->timeline);
	if (pr->names.alloc)
		big_free(pr->names.buf, pr->names.alloc);
	memset(pr, 0, sizeof(*pr));
	pr->first_root = pr->last_root = -1;
}

void proc_grow_names(struct proc *pr, size_t len)
{
	struct buf *pool = &pr->names;
	size_t want = pool->len + len + 2, alloc; /* the name, its NUL, the buffer's own NUL */

	if (pool->len + len + 1 > UINT32_MAX)
		die("name pool of one process exceeds 4 GiB");
	if (want <= pool->alloc)
		return;
	alloc = pool->alloc * 3 / 2 > want ? pool->alloc * 3 / 2 : want;
	pool->buf = big_realloc(pool->buf, pool->alloc, alloc);
	pool->alloc = alloc;
}

void proc_grow_nodes(struct proc *pr)
{
	size_t alloc = pr->alloc_nodes < 16 ? 16 : pr->alloc_nodes * 3 / 2;

	if (pr->nr_nodes >= INT32_MAX)
		die("too many import nodes in one process");
	if (pr->nr_nodes < pr->alloc_nodes)
		return;
	pr->nodes = big_realloc(pr->nodes, st_mult(pr->alloc_nodes, sizeof(*pr->nodes)),
				st_mult(alloc, sizeof(*pr->nodes)));
	pr->alloc_nodes = alloc;
	if (pr->timing)
		pr->timing = xrealloc(pr->timing, st_mult(pr->alloc_nodes, sizeof(*pr->timing)));
}

void proc_unlink_all(struct proc *pr)
{
	size_t i;

	for (i = 0; i < pr->nr_nodes; i++) {
		struct imp_node *n = &pr->nodes[i];

		n->parent = n->first_child = n->last_child = n->next_sibling = -1;
	}
	pr->first_root = pr->last_root = -1;
	pr->children_first = true;
	pr->nr_linked = 0;
}

void proc_ensure_timing(struct proc *pr)
{
	size_t i;

	if (pr->timing)
		return;
	pr->timing = xmalloc(st_mult(pr->alloc_nodes ? pr->alloc_nodes : 1, sizeof(*pr->timing)));
	for (i = 0; i < pr->nr_nodes; i++) {
		memset(&pr->timing[i], 0xff, sizeof(pr->timing[i]));
		pr->timing[i].file = 0;
	}
}

void proc_add_event(struct proc *pr, int64_t t_ns, const char *name, const char *detail, int32_t node)
{
	struct proc_event *e;

	ALLOC_GROW(pr->events, pr->nr_events + 1, pr->alloc_events);
	e = &pr->events[pr->nr_events++];
	e->t_ns = t_ns;
	e->name = proc_intern(pr, name, strlen(name));
	e->detail = proc_intern(pr, detail, strlen(detail));
	e->node = node;
}

void proc_add_read(struct proc *pr, const char *path)
{
	ALLOC_GROW(pr->reads, pr->nr_reads + 1, pr->alloc_reads);
	pr->reads[pr->nr_reads++] = proc_intern(pr, path, strlen(path));
}

void proc_chain(const struct proc *pr, int32_t i, const char *sep, struct buf *out)
{
	size_t nr = 0, alloc = 0, k;
	int32_t *path = NULL;

	for (; i >= 0; i = pr->nodes[i].parent) {
		ALLOC_GROW(path, nr + 1, alloc);
		path[nr++] = i;
	}
	for (k = nr; k > 0; k--) {
		buf_adds(out, node_name(pr, path[k - 1]));
		if (k > 1)
			buf_adds(out, sep);
	}
	free(path);
}

int32_t proc_find(const struct proc *pr, const char *name)
{
	int32_t i;

	for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i))
		if (!strcmp(node_name(pr, i), name))
			return i;
	return -1;
}

int64_t proc_import_total_us(const struct proc *pr, bool include_startup)
{
	int64_t total = 0;
	int32_t i;

	for (i = pr->first_root; i >= 0; i = pr->nodes[i].next_sibling) {
		const struct imp_node *n = &pr->nodes[i];

		if (!include_startup && (n->flags & NODE_STARTUP))
			continue;
		if (n->cum_us > 0)
			total = i64_add(total, n->cum_us);
	}
	return total;
}

int64_t proc_tool_us(const struct proc *pr)
{
	int64_t total = 0;
	size_t i;

	for (i = 0; i < pr->nr_nodes; i++)
		if (pr->nodes[i].kind == KIND_TOOL && pr->nodes[i].self_us > 0)
			total = i64_add(total, pr->nodes[i].self_us);
	return total;
}

int64_t node_gc_in(const struct proc *pr, int32_t i, enum metric m)
{
	int32_t c;

	for (c = pr->nodes[i].first_child; c >= 0; c = pr->nodes[c].next_sibling)
		if (pr->nodes[c].flags & NODE_GC)
			return node_cum_in(pr, c, m);
	return 0;
}

void proc_gc_total(const struct proc *pr, bool include_startup, enum metric m, struct gc_total *out)
{
	size_t i;

	*out = (struct gc_total){ .most = -1 };
	for (i = 0; i < pr->nr_nodes; i++) {
		const struct imp_node *n = &pr->nodes[i];
		int64_t us;

		if (!(n->flags & NODE_GC) || n->parent < 0)
			continue;
		if (!include_startup && (n->flags & NODE_STARTUP || n->kind == KIND_TOOL))
			continue;
		us = node_cum_in(pr, (int32_t)i, m);
		if (us <= 0)
			continue;
		out->us = i64_add(out->us, us);
		out->imports++;
		if (us > out->most_us) {
			out->most_us = us;
			out->most = n->parent;
		}
	}
}

int64_t proc_gc_wall_us(const struct proc *pr, int64_t cpu_us, bool *throttled)
{
	struct gc_total wall;

	proc_gc_total(pr, false, METRIC_WALL, &wall);
	*throttled = wall.us >= i64_mul(cpu_us, 2);
	return wall.us;
}

bool profile_has_cpu_times(const struct profile *p)
{
	size_t ri, pi, i, timed = 0, with_cpu = 0;

	for (ri = 0; ri < p->nr_runs; ri++) {
		const struct run *r = &p->runs[ri];

		for (pi = 0; pi < r->nr_procs && !r->baseline; pi++) {
			const struct proc *pr = &r->procs[pi];

			for (i = 0; pr->timing && i < pr->nr_nodes; i++) {
				if (pr->timing[i].start_ns < 0)
					continue;
				timed++;
				with_cpu += pr->timing[i].cpu_ns >= 0;
			}
		}
	}
	return timed && with_cpu * 10 >= timed * 9;
}

enum metric profile_metric(const struct profile *p)
{
	bool limited = p->limits.cpus > 0;
	size_t ri;

	for (ri = 0; ri < p->nr_runs; ri++)
		if (!p->runs[ri].baseline && p->runs[ri].cg.has && p->runs[ri].cg.nr_throttled > 0)
			limited = true;
	return limited && profile_has_cpu_times(p) ? METRIC_CPU : METRIC_WALL;
}

const char *metric_name(enum metric m)
{
	return m == METRIC_CPU ? "CPU" : "wall";
}

static int64_t ns_to_us(int64_t ns)
{
	if (ns < 0)
		return UNKNOWN;
	/* A saturated sum stays saturated (util.h's i64_add). */
	return ns > INT64_MAX - 500 ? INT64_MAX : (ns + 500) / 1000;
}

int64_t node_cum_in(const struct proc *pr, int32_t i, enum metric m)
{
	if (m == METRIC_WALL)
		return pr->nodes[i].cum_us;
	return pr->timing ? ns_to_us(pr->timing[i].cpu_ns) : UNKNOWN;
}

int64_t node_self_in(const struct proc *pr, int32_t i, enum metric m)
{
	int64_t self;
	int32_t c;

	if (m == METRIC_WALL)
		return pr->nodes[i].self_us;
	if (!pr->timing || pr->timing[i].cpu_ns < 0)
		return UNKNOWN;
	self = pr->timing[i].cpu_ns;
	for (c = pr->nodes[i].first_child; c >= 0; c = pr->nodes[c].next_sibling)
		if (pr->timing[c].cpu_ns > 0)
			self -= pr->timing[c].cpu_ns;
	return ns_to_us(self > 0 ? self : 0);
}

int64_t proc_import_total_in(const struct proc *pr, bool include_startup, enum metric m)
{
	int64_t total = 0;
	int32_t i;

	if (m == METRIC_WALL)
		return proc_import_total_us(pr, include_startup);
	if (!pr->timing)
		return UNKNOWN;
	for (i = pr->first_root; i >= 0;) {
		const struct imp_node *n = &pr->nodes[i];
		bool timed = pr->timing[i].cpu_ns >= 0;

		if (timed && (include_startup || !(n->flags & NODE_STARTUP)))
			total = i64_add(total, pr->timing[i].cpu_ns);
		i = proc_walk_next(pr, i, !timed);
	}
	return ns_to_us(total);
}

int64_t node_load_in(const struct proc *pr, int32_t i, enum metric m)
{
	const struct imp_timing *t = pr->timing ? &pr->timing[i] : NULL;

	if (!t || t->load_ns < 0)
		return pr->nodes[i].self_us >= 0 ? pr->nodes[i].self_us : UNKNOWN;
	if (m == METRIC_CPU && t->exec_ns < 0 && t->cpu_ns >= 0)
		return node_self_in(pr, i, m);
	return ns_to_us(t->load_ns);
}

void proc_rebase(struct proc *pr, int64_t start_ns)
{
	int64_t d;
	size_t i;

	if (pr->start_ns < 0 || start_ns < 0)
		return;
	d = pr->start_ns - start_ns;
	for (i = 0; pr->timing && i < pr->nr_nodes; i++) {
		if (pr->timing[i].start_ns >= 0)
			pr->timing[i].start_ns += d;
		if (pr->timing[i].end_ns >= 0)
			pr->timing[i].end_ns += d;
	}
	for (i = 0; i < pr->nr_events; i++)
		pr->events[i].t_ns += d;
	pr->start_ns = start_ns;
}

int64_t proc_lifetime_us(const struct proc *pr)
{
	return pr->start_ns >= 0 && pr->end_ns >= pr->start_ns ? (pr->end_ns - pr->start_ns) / 1000 : UNKNOWN;
}

/*
 * The run's own ready_ns where it was recorded; a profile written before it
 * was has only ready_us, which runs from the moment coldstart knew the exec
 * succeeded, while the target's trace dates its start from /proc (clock
 * ticks, at or before the exec): that estimate is at most about a tick early.
 */
int64_t run_ready_ns(const struct run *r)
{
	if (r->ready_ns >= 0)
		return r->ready_ns;
	if (r->ready_us < 0 || !r->nr_procs || r->procs[0].start_ns < 0 || r->procs[0].pid <= 0)
		return UNKNOWN;
	return r->procs[0].start_ns + r->ready_us * 1000;
}

bool node_after_ready(const struct proc *pr, int32_t i, int64_t ready_ns)
{
	return ready_ns >= 0 && pr->timing && pr->timing[i].start_ns >= 0 && pr->start_ns >= 0 &&
	       pr->start_ns + pr->timing[i].start_ns >= ready_ns;
}
