/*
 * The findings rules: a table of small functions over a profile, each adding
 * findings with an id, evidence and a concrete fix (docs/findings.md).
 */
#include "analysis/findings.h"
#include "analysis/finding_serving.h"

#include <stdlib.h>
#include <string.h>

#include "model/stats.h"

#define LIST_MAX 5 /* modules named in one evidence line */

static const char *python_of(const struct profile *p)
{
	return p->python && *p->python ? p->python : "python3";
}

static bool node_is_tool(const struct proc *pr, int32_t i)
{
	return pr->nodes[i].kind == KIND_TOOL;
}

/* Processes whose imports are multiprocessing's own business, not the app's start-up. */
static bool helper_process(const struct proc *pr)
{
	return pr->role && (!strcmp(pr->role, "resource tracker") || !strcmp(pr->role, "forkserver"));
}

static const char *role_of(const struct proc *pr)
{
	return pr->role ? pr->role : "process";
}

/* "pid 12 (worker)", or "the target's process" for an importtime-only one. */
static void add_who(struct buf *b, const struct proc *pr)
{
	if (pr->pid > 0)
		buf_addf(b, "pid %ld (%s)", pr->pid, role_of(pr));
	else
		buf_adds(b, "the target's process");
}

/* "a -> b -> c (pid 12)" */
static void add_chain(struct buf *b, const struct proc *pr, int32_t i)
{
	proc_chain(pr, i, " -> ", b);
	if (pr->pid > 0)
		buf_addf(b, " (pid %ld)", pr->pid);
}

/*
 * What to compile for a module's file: the top-level package's directory
 * ("/site/pkg" for pkg.sub at /site/pkg/sub.py), or the file itself for a
 * top-level module.
 */
static void compile_target(const char *name, const char *file, struct buf *out)
{
	size_t cut = 0;
	const char *p;

	for (p = name; *p; p++)
		if (*p == '.')
			cut++;
	if (ends_with(file, "/__init__.py"))
		cut++;
	if (!cut) {
		buf_adds(out, file);
		return;
	}
	p = file + strlen(file);
	while (cut && p > file) {
		p--;
		if (*p == '/')
			cut--;
	}
	if (p == file) {
		buf_adds(out, file);
		return;
	}
	buf_add(out, file, (size_t)(p - file));
}

static bool in_list(const struct strvec *sv, const char *s)
{
	size_t i;

	for (i = 0; i < sv->nr; i++)
		if (!strcmp(sv->v[i], s))
			return true;
	return false;
}

/* A module compiled at import, in each process that compiled it. */
struct compiled {
	const char *name;
	int64_t ns; /* in the first process */
	struct proc_set procs;
};

static struct compiled *compiled_entry(struct compiled **v, size_t *nr, size_t *alloc, const char *name)
{
	size_t k;

	for (k = 0; k < *nr; k++)
		if (!strcmp((*v)[k].name, name))
			return &(*v)[k];
	ALLOC_GROW(*v, *nr + 1, *alloc);
	(*v)[*nr] = (struct compiled){ name, -1, PROC_SET_INIT };
	return &(*v)[(*nr)++];
}

/* The modules compiled in r's processes, each once; *targets gets what to compile, *total_ns the time. */
static struct compiled *collect_compiled(const struct run *r, size_t *nr, struct proc_set *all,
					 struct strvec *targets, int64_t *total_ns)
{
	struct compiled *v = NULL, *c;
	struct buf t = BUF_INIT;
	size_t alloc = 0, pi;
	int32_t i;

	for (pi = 0; pi < r->nr_procs; pi++) {
		const struct proc *pr = &r->procs[pi];

		/* Only the tracer sees compilation: without a trace there is nothing to find. */
		if (!pr->timing)
			continue;
		for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i)) {
			const struct imp_timing *tm = &pr->timing[i];

			if (!(pr->nodes[i].flags & NODE_COMPILED) || node_is_tool(pr, i))
				continue;
			c = compiled_entry(&v, nr, &alloc, node_name(pr, i));
			if (!c->procs.nr)
				c->ns = tm->compile_ns;
			proc_set_add(&c->procs, pi);
			proc_set_add(all, pi);
			if (tm->compile_ns > 0)
				*total_ns = i64_add(*total_ns, tm->compile_ns);
			if (tm->file && targets->nr < 8) {
				buf_reset(&t);
				compile_target(node_name(pr, i), proc_str(pr, tm->file), &t);
				if (!in_list(targets, t.buf))
					strvec_push(targets, t.buf);
			}
		}
	}
	buf_release(&t);
	return v;
}

/*
 * compiled-at-startup: every module once, however many processes compiled
 * it (two workers importing the app), the processes named.
 */
static void rule_compiled(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	struct buf ev = BUF_INIT, fix = BUF_INIT, title = BUF_INIT;
	struct strvec targets = STRVEC_INIT;
	struct proc_set all = PROC_SET_INIT;
	struct compiled *c;
	int64_t total_ns = 0;
	size_t nr = 0, k;

	if (!r)
		return;
	c = collect_compiled(r, &nr, &all, &targets, &total_ns);
	if (!nr)
		goto out;
	for (k = 0; k < nr && k < LIST_MAX; k++) {
		buf_addf(&ev, "%s'%s'", k ? ", " : "", c[k].name);
		if (c[k].ns > 0 || c[k].procs.nr > 1) {
			buf_adds(&ev, " (");
			if (c[k].ns > 0)
				buf_add_duration(&ev, c[k].ns / 1000);
			if (c[k].procs.nr > 1)
				buf_addf(&ev, "%sin %zu processes", c[k].ns > 0 ? ", " : "", c[k].procs.nr);
			buf_adds(&ev, ")");
		}
	}
	if (nr > k)
		buf_addf(&ev, " and %zu more", nr - k);
	buf_addf(&ev, " %s compiled from source at import (no usable .pyc: missing, stale, or not "
		      "writable); compiling took ", nr == 1 ? "was" : "were");
	buf_add_duration(&ev, total_ns / 1000);
	buf_adds(&ev, all.nr > 1 ? " in all, in " : " in ");
	findings_add_procs(&ev, r, &all);
	buf_addf(&title, "%zu module%s compiled from source at start-up", nr, nr == 1 ? "" : "s");
	buf_addf(&fix, "precompile where the code is installed, e.g. in the image build: %s -m compileall -q",
		 python_of(p));
	for (k = 0; k < targets.nr; k++)
		buf_addf(&fix, " %s", targets.v[k]);
	if (!targets.nr)
		buf_adds(&fix, " <code directory>");
	buf_adds(&fix, " (as the user and interpreter that run it; do not set PYTHONDONTWRITEBYTECODE "
		       "there; compile before the directory is made read-only)");
	finding_add_in(p, r, &all, "compiled-at-startup", "warning", NULL, total_ns / 1000, title.buf, ev.buf,
		       fix.buf);
out:
	for (k = 0; k < nr; k++)
		proc_set_release(&c[k].procs);
	free(c);
	proc_set_release(&all);
	buf_release(&ev);
	buf_release(&fix);
	buf_release(&title);
	strvec_clear(&targets);
}

enum effect { FX_NONE = -1, FX_NETWORK, FX_SUBPROCESS, FX_WRITE, FX_SLEEP, FX__COUNT };

static const struct {
	const char *what;
	const char *fix;
} effect_info[FX__COUNT] = {
	[FX_NETWORK] = { "network access",
			 "do not connect or resolve names at import: create the client or connection "
			 "on first use (inside a function, or a cached factory), so a slow or "
			 "unreachable network cannot delay or break start-up" },
	[FX_SUBPROCESS] = { "a subprocess",
			    "do not run commands at import: run them on first use, or compute the "
			    "value at build time and ship it as data" },
	[FX_WRITE] = { "file writes",
		       "do not write files at import: create them on first use or at build time; a "
		       "read-only or full file system must not break start-up" },
	[FX_SLEEP] = { "a sleep",
		       "remove the sleep from module scope; retries and waits belong in the first "
		       "call that needs the resource" },
};

static enum effect effect_of(const char *name, const char *detail)
{
	static const char *const network[] = { "socket.connect", "socket.getaddrinfo",
					       "socket.gethostbyname", "socket.bind", "urllib.Request" };
	static const char *const subprocess[] = { "subprocess.Popen", "os.system", "os.exec",
						  "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(network); i++)
		if (!strcmp(name, network[i]))
			return FX_NETWORK;
	for (i = 0; i < ARRAY_SIZE(subprocess); i++)
		if (!strcmp(name, subprocess[i]))
			return FX_SUBPROCESS;
	/* subprocess.DEVNULL and friends open /dev/null for writing: nothing is written. */
	if (!strcmp(name, "open") && !strcmp(detail, "w:/dev/null"))
		return FX_NONE;
	if ((!strcmp(name, "open") && starts_with(detail, "w:")) || !strcmp(name, "os.remove") ||
	    !strcmp(name, "os.rename") || !strcmp(name, "os.mkdir"))
		return FX_WRITE;
	if (!strcmp(name, "time.sleep"))
		return FX_SLEEP;
	return FX_NONE;
}

/* The events of one (module, kind of effect), in each process where the module had it. */
struct side_effect {
	const char *module;
	enum effect fx;
	size_t proc, event; /* the first process's first such event */
	struct proc_set procs;
};

/* Adds the finding for one (module, kind of effect): the first process's events, every process named. */
static void side_effect_finding(struct profile *p, const struct run *r, const struct side_effect *se)
{
	const struct proc *pr = &r->procs[se->proc];
	const struct proc_event *ev = &pr->events[se->event];
	struct buf evid = BUF_INIT, title = BUF_INIT;
	int64_t cost = UNKNOWN;
	size_t count = 0, k;

	buf_addf(&evid, "while '%s' was being imported it ran ", se->module);
	for (k = se->event; k < pr->nr_events; k++) {
		const struct proc_event *o = &pr->events[k];
		const char *onm = proc_str(pr, o->name), *odet = proc_str(pr, o->detail);

		if (o->node != ev->node || effect_of(onm, odet) != se->fx)
			continue;
		if (count < LIST_MAX)
			buf_addf(&evid, "%s%s(%s)", count ? ", " : "", onm, starts_with(odet, "w:") ? odet + 2 : odet);
		count++;
		if (se->fx == FX_SLEEP) {
			double secs = strtod(odet, NULL);

			if (secs > 0)
				cost = i64_add(cost == UNKNOWN ? 0 : cost, i64_from_double(secs * 1e6));
		}
	}
	if (count > LIST_MAX)
		buf_addf(&evid, " and %zu more", count - LIST_MAX);
	buf_adds(&evid, "; import chain ");
	add_chain(&evid, pr, ev->node);
	if (se->procs.nr > 1) {
		buf_adds(&evid, "; it did so in ");
		findings_add_procs(&evid, r, &se->procs);
	}
	buf_addf(&title, "'%s' has %s at import", se->module, effect_info[se->fx].what);
	finding_add_in(p, r, &se->procs, "import-side-effect", "warning", se->module, cost, title.buf, evid.buf,
		       effect_info[se->fx].fix);
	buf_release(&evid);
	buf_release(&title);
}

/* One finding per (module, kind of effect), naming every process where the module had it. */
static void rule_side_effects(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	struct side_effect *v = NULL;
	size_t nr = 0, alloc = 0, pi, e, k;

	if (!r)
		return;
	for (pi = 0; pi < r->nr_procs; pi++) {
		const struct proc *pr = &r->procs[pi];

		for (e = 0; e < pr->nr_events; e++) {
			const struct proc_event *ev = &pr->events[e];
			enum effect fx;
			const char *nm;

			if (ev->node < 0 || node_is_tool(pr, ev->node))
				continue;
			fx = effect_of(proc_str(pr, ev->name), proc_str(pr, ev->detail));
			if (fx == FX_NONE)
				continue;
			nm = node_name(pr, ev->node);
			for (k = 0; k < nr && (v[k].fx != fx || strcmp(v[k].module, nm)); k++)
				;
			if (k == nr) {
				ALLOC_GROW(v, nr + 1, alloc);
				v[nr++] = (struct side_effect){ nm, fx, pi, e, PROC_SET_INIT };
			}
			proc_set_add(&v[k].procs, pi);
		}
	}
	for (k = 0; k < nr; k++) {
		side_effect_finding(p, r, &v[k]);
		proc_set_release(&v[k].procs);
	}
	free(v);
}

struct heavy {
	size_t proc;
	int32_t node;
	int64_t us;
	int64_t total; /* its process's import time */
	bool done; /* reported with another process's */
};

static int cmp_heavy(const void *a, const void *b)
{
	const struct heavy *x = a, *y = b;

	return x->us < y->us ? 1 : x->us > y->us ? -1 : 0;
}

/* The percentage of its process's import time h takes. */
static int64_t heavy_pct(const struct heavy *h)
{
	return i64_mul(h->us, 100) / h->total;
}

/*
 * One finding for a module that is heavy in h[k]'s process (the costliest)
 * and in the other processes where it is heavy too (two workers import the
 * same app): every pid is named, the target's first.
 */
static void heavy_finding(struct profile *p, const struct run *r, struct heavy *h, size_t nr, size_t k,
			  enum metric m)
{
	struct buf ev = BUF_INIT, title = BUF_INIT, fix = BUF_INIT, who = BUF_INIT;
	struct proc_set procs = PROC_SET_INIT;
	const struct proc *pr = &r->procs[h[k].proc];
	const char *nm = node_name(pr, h[k].node), *role = role_of(pr), *cpu = m == METRIC_CPU ? "CPU " : "";
	int64_t pct = heavy_pct(&h[k]), top = pct;
	bool own = pr->nodes[h[k].node].kind == KIND_APP, one_role = true;
	size_t j;

	proc_set_add(&procs, h[k].proc);
	for (j = k + 1; j < nr; j++) {
		const struct proc *o = &r->procs[h[j].proc];

		if (h[j].done || strcmp(node_name(o, h[j].node), nm))
			continue;
		h[j].done = true;
		proc_set_add(&procs, h[j].proc);
		if (heavy_pct(&h[j]) > top)
			top = heavy_pct(&h[j]);
		if (strcmp(role_of(o), role))
			one_role = false;
	}
	findings_add_procs(&who, r, &procs);
	if (r->nr_procs == 1 || (procs.nr == 1 && procs.v[0] == 0))
		buf_addf(&title, "'%s' takes %lld%% of the target's import %stime", nm, (long long)pct, cpu);
	else if (procs.nr == 1)
		buf_addf(&title, "'%s' takes %lld%% of the import %stime of %s", nm, (long long)pct, cpu, who.buf);
	else {
		buf_addf(&title, "'%s' takes %s%lld%% of the import %stime of ", nm, top > pct ? "up to " : "",
			 (long long)top, cpu);
		if (procs.nr == r->nr_procs && procs.nr == 2)
			buf_adds(&title, "both ");
		else
			buf_addf(&title, "%s%zu ", procs.nr == r->nr_procs ? "all " : "", procs.nr);
		buf_addf(&title, "%s%s", one_role ? role : "process", one_role && !ends_with(role, "s") ? "s" : "es");
	}
	buf_addf(&ev, "'%s' %s ", nm, own ? "runs its own module code for" : "costs");
	buf_add_duration(&ev, h[k].us);
	buf_adds(&ev, *cpu ? " of CPU of the " : " of the ");
	buf_add_duration(&ev, h[k].total);
	buf_adds(&ev, *cpu ? " of CPU its process spent importing after interpreter start-up (under the CPU limit, "
			     "CPU time: the wall time is the scheduler's as much as the code's)"
			   : " its process spent importing after interpreter start-up");
	if (procs.nr > 1) {
		buf_addf(&ev, " in pid %ld (%s), where it costs most; heavy in ", pr->pid, role);
		buf_add(&ev, who.buf, who.len);
		buf_adds(&ev, "; import chain ");
	} else {
		buf_addf(&ev, "; in %s; import chain ", who.buf);
	}
	proc_chain(pr, h[k].node, " -> ", &ev);
	if (own)
		buf_addf(&fix, "move the work done at module scope of '%s' into functions called when it is "
			       "needed, or compute it at build time",
			 nm);
	else if (!finding_serving_fix(&fix, p, nm))
		buf_addf(&fix, "if start-up does not need it, import '%s' inside the function that uses it "
			       "(or defer it with coldstart's lazy loader); otherwise look for a lighter "
			       "module that does the same",
			 nm);
	finding_add_in(p, r, &procs, "heavy-import", top >= 25 ? "warning" : "info", nm, h[k].us, title.buf, ev.buf,
		       fix.buf);
	proc_set_release(&procs);
	buf_release(&ev);
	buf_release(&title);
	buf_release(&fix);
	buf_release(&who);
}

/*
 * The outermost imports that are not the app's own code and take a large
 * share of their process's import time; the app's own modules are
 * descended into (and reported for their self time when that alone is
 * large).  Every process counts by its own imports (a fork's tree starts at
 * the fork), the target first; imports that began after the target was
 * ready are not on the start-up path and get no advice.
 */
static void collect_heavy(const struct run *r, size_t pi, enum metric m, int64_t ready_ns, struct heavy **h,
			  size_t *nr, size_t *alloc)
{
	const struct proc *pr = &r->procs[pi];
	int64_t total = proc_import_total_in(pr, false, m);
	int32_t i;

	if (total <= 0 || helper_process(pr))
		return;
	for (i = pr->first_root; i >= 0;) {
		const struct imp_node *n = &pr->nodes[i];
		int64_t cum = node_cum_in(pr, i, m), self = node_self_in(pr, i, m);
		bool big = i64_mul(cum, 100) >= i64_mul(total, HEAVY_SHARE_PCT) && cum >= HEAVY_MIN_US;
		bool descend = false;

		if (!(n->flags & NODE_STARTUP) && n->kind != KIND_TOOL && big && !node_after_ready(pr, i, ready_ns)) {
			descend = n->kind == KIND_APP;
			if (!descend || (i64_mul(self, 100) >= i64_mul(total, HEAVY_SHARE_PCT) && self >= HEAVY_MIN_US)) {
				ALLOC_GROW(*h, *nr + 1, *alloc);
				(*h)[*nr] = (struct heavy){ pi, i, descend ? self : cum, total, false };
				(*nr)++;
			}
		}
		i = proc_walk_next(pr, i, descend);
	}
}

static void rule_heavy(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	enum metric m = profile_metric(p);
	struct heavy *h = NULL;
	size_t nr = 0, alloc = 0, k, shown = 0, pi;
	int64_t ready_ns;

	if (!r || !r->nr_procs)
		return;
	ready_ns = run_ready_ns(r);
	for (pi = 0; pi < r->nr_procs; pi++)
		collect_heavy(r, pi, m, ready_ns, &h, &nr, &alloc);
	if (nr)
		qsort(h, nr, sizeof(*h), cmp_heavy);
	for (k = 0; k < nr && shown < LIST_MAX; k++) {
		if (h[k].done)
			continue;
		heavy_finding(p, r, h, nr, k, m);
		shown++;
	}
	free(h);
}

static int cmp_i64_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* What finding modules cost one process, from the tracer's find phases (nested imports not counted). */
struct finder_facts {
	int64_t find_ns, failed_ns, top_ns; /* all lookups, failed ones, the FINDER_TOP slowest */
	/*
	 * Of top_ns, at most how much the importing thread was off the CPU
	 * (each slowest lookup's find phase, capped by its import's wall time
	 * less its CPU time); UNKNOWN without CPU times.
	 */
	int64_t top_off_ns;
	int64_t median_ns;
	size_t imports, failed;
	int32_t top[FINDER_TOP]; /* the slowest lookups */
	size_t nr_top;
	const char *path;
	size_t entries;
};

static void finder_facts(const struct proc *pr, struct finder_facts *ff)
{
	int64_t *v = xmalloc(st_mult(pr->nr_nodes + 1, sizeof(*v)));
	size_t e, k;
	int32_t i;

	memset(ff, 0, sizeof(*ff));
	for (i = 0; i < (int32_t)pr->nr_nodes; i++) {
		int64_t f = pr->timing[i].find_ns;
		size_t at;

		if (f < 0 || pr->nodes[i].kind == KIND_TOOL)
			continue;
		v[ff->imports++] = f;
		ff->find_ns = i64_add(ff->find_ns, f);
		if (pr->nodes[i].flags & NODE_FAILED) {
			ff->failed++;
			ff->failed_ns = i64_add(ff->failed_ns, f);
		}
		/* Keep the slowest, largest first. */
		for (at = ff->nr_top; at > 0 && pr->timing[ff->top[at - 1]].find_ns < f; at--)
			if (at < FINDER_TOP)
				ff->top[at] = ff->top[at - 1];
		if (at < FINDER_TOP) {
			ff->top[at] = i;
			if (ff->nr_top < FINDER_TOP)
				ff->nr_top++;
		}
	}
	if (ff->imports) {
		qsort(v, ff->imports, sizeof(*v), cmp_i64_desc);
		ff->median_ns = v[ff->imports / 2];
	}
	for (k = 0; k < ff->nr_top; k++) {
		const struct imp_timing *t = &pr->timing[ff->top[k]];

		ff->top_ns = i64_add(ff->top_ns, t->find_ns);
		if (ff->top_off_ns >= 0 && t->start_ns >= 0 && t->end_ns >= t->start_ns && t->cpu_ns >= 0) {
			int64_t off = t->end_ns - t->start_ns - t->cpu_ns;

			ff->top_off_ns = i64_add(ff->top_off_ns, off < 0 ? 0 : off < t->find_ns ? off : t->find_ns);
		} else {
			ff->top_off_ns = UNKNOWN;
		}
	}
	for (e = 0; e < pr->nr_events; e++)
		if (!strcmp(proc_str(pr, pr->events[e].name), "sys.path")) {
			ff->path = proc_str(pr, pr->events[e].detail);
			ff->entries = strtoul(ff->path, NULL, 10);
		}
	free(v);
}

/* What slow-finders makes of one process's finder facts. */
struct finder_verdict {
	struct finder_facts ff;
	int64_t total, find_us;
	bool share, long_path, failing, slow_each, few;
};

/* Whether finding modules is a finding in pr; v gets the facts either way. */
static bool finder_verdict(const struct proc *pr, struct finder_verdict *v)
{
	struct finder_facts *ff = &v->ff;

	finder_facts(pr, ff);
	v->total = proc_import_total_us(pr, true);
	v->find_us = ff->find_ns / 1000;
	v->share = ff->imports >= FINDER_MIN_LOOKUPS && v->find_us >= FINDER_MIN_US && v->total > 0 &&
		   i64_mul(v->find_us, 100) >= i64_mul(v->total, FINDER_SHARE_PCT);
	v->long_path = ff->entries >= FINDER_PATH_ENTRIES;
	v->failing = v->share && i64_mul(ff->failed_ns, 100) >= i64_mul(ff->find_ns, FINDER_FAILED_PCT);
	v->slow_each = v->share && ff->median_ns / 1000 >= FINDER_SLOW_LOOKUP_US;
	v->few = v->share && i64_mul(ff->top_ns, 100) >= i64_mul(ff->find_ns, FINDER_FEW_PCT);
	return v->long_path || v->failing || v->slow_each || v->few;
}

/*
 * "; in pid 12 (master)", or for several processes whose figures the
 * evidence gives for the first: "; figures of pid 12 (master); the same in
 * all 3 processes: ...".
 */
static void add_held_in(struct buf *ev, const struct run *r, const struct proc_set *s)
{
	if (s->nr > 1) {
		buf_adds(ev, "; figures of ");
		add_who(ev, &r->procs[s->v[0]]);
		buf_adds(ev, "; the same in ");
	} else {
		buf_adds(ev, "; in ");
	}
	findings_add_procs(ev, r, s);
}

/*
 * What the slowest lookups' CPU time says: a thread off the CPU for most of
 * them was blocked (the file system) or, on a busy machine, waiting for a
 * CPU, which one profile cannot tell from a slow finder; one on the CPU was
 * a finder computing.
 */
static void add_off_cpu(struct buf *fix, const struct finder_facts *ff)
{
	if (ff->top_off_ns < 0 || ff->top_ns <= 0)
		return;
	buf_adds(fix, ". Their imports were off the CPU for up to ");
	buf_add_duration(fix, ff->top_off_ns / 1000);
	buf_adds(fix, " of their ");
	buf_add_duration(fix, ff->top_ns / 1000);
	if (i64_mul(ff->top_off_ns, 2) >= ff->top_ns)
		buf_adds(fix, ": blocked on I/O (a slow file system) or, on a busy machine, waiting for a CPU; "
			      "profile again to see whether the same lookups are slow");
	else
		buf_adds(fix, ": the lookups themselves computed (a finder or path hook in Python)");
}

/*
 * slow-finders: finding modules costs a large share of a process's import
 * time, and for a reason the measurement shows: a long sys.path, failing
 * optional imports, lookups slow across the board, or a few very slow ones.
 * Finder time that is just the number of imports times an ordinary lookup
 * is not a finding (heavy-import is about importing less).  The find phase
 * excludes the imports made inside it (a parent package imported first, a
 * finder's own imports).  Every process where it holds is named; the
 * figures are the first one's (the target's when it holds there).  Wall
 * time only: under a CPU limit the phases, which have no CPU times of their
 * own, would measure the scheduler.
 */
static void rule_finders(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	const struct proc *pr = NULL;
	const struct finder_facts *ff;
	struct finder_verdict v, first;
	struct proc_set procs = PROC_SET_INIT;
	struct buf ev = BUF_INIT, fix = BUF_INIT, title = BUF_INIT;
	size_t k, pi;

	if (!r || profile_metric(p) == METRIC_CPU)
		return;
	for (pi = 0; pi < r->nr_procs; pi++) {
		if (!r->procs[pi].timing || helper_process(&r->procs[pi]) || !finder_verdict(&r->procs[pi], &v))
			continue;
		if (!pr) {
			pr = &r->procs[pi];
			first = v;
		}
		proc_set_add(&procs, pi);
	}
	if (!pr)
		return;
	ff = &first.ff;
	buf_adds(&ev, "finding modules took ");
	buf_add_duration(&ev, first.find_us);
	if (first.total > 0)
		buf_addf(&ev, " (%lld%% of ", (long long)(i64_mul(first.find_us, 100) / first.total));
	buf_add_duration(&ev, first.total);
	buf_addf(&ev, " of imports) across %zu lookups, a median of ", ff->imports);
	buf_add_duration(&ev, ff->median_ns / 1000);
	buf_addf(&ev, " each; %zu failed lookups took ", ff->failed);
	buf_add_duration(&ev, ff->failed_ns / 1000);
	buf_adds(&ev, "; the slowest: ");
	for (k = 0; k < ff->nr_top; k++) {
		buf_addf(&ev, "%s'%s' ", k ? ", " : "", node_name(pr, ff->top[k]));
		buf_add_duration(&ev, pr->timing[ff->top[k]].find_ns / 1000);
	}
	if (ff->path)
		buf_addf(&ev, "; sys.path has %s", ff->path);
	add_held_in(&ev, r, &procs);
	if (first.long_path)
		buf_addf(&fix, "sys.path has %zu entries and every top-level import that is not a built-in tries "
			       "them in order: drop unused entries and .pth files, install dependencies into one "
			       "site-packages (or one directory / zipapp), and put the directories most imports "
			       "come from first",
			 ff->entries);
	if (first.failing)
		buf_addf(&fix, "%s%zu imports failed and a failed lookup tries every path entry: install the "
			       "optional dependencies, or stop probing for them at import (see failed-imports)",
			 fix.len ? "; " : "", ff->failed);
	if (first.few) {
		buf_addf(&fix, "%sa few lookups take most of the time (%s'%s' first): look for a meta-path finder "
			       "or path hook that is slow for them (an import hook, a namespace package spread over "
			       "many sys.path entries, a network or overlay file system)",
			 fix.len ? "; " : "", "", node_name(pr, ff->top[0]));
		add_off_cpu(&fix, ff);
	}
	if (first.slow_each && !first.long_path)
		buf_addf(&fix, "%severy lookup is slow (a median of %lld us): check for a slow file system under "
			       "sys.path or an import hook on sys.meta_path that runs before the standard finders",
			 fix.len ? "; " : "", (long long)(ff->median_ns / 1000));
	buf_adds(&title, first.share ? "finders take a large share of import time" : "sys.path is long");
	finding_add_in(p, r, &procs, "slow-finders",
		       first.share && i64_mul(first.find_us, 100) >= i64_mul(first.total, FINDER_WARN_PCT) ? "warning"
													   : "info",
		       NULL, first.find_us, title.buf, ev.buf, fix.buf);
	proc_set_release(&procs);
	buf_release(&ev);
	buf_release(&fix);
	buf_release(&title);
}

/* A module whose import failed, in each process where it did. */
struct failed {
	const char *name;
	size_t times;
};

/*
 * failed-imports: the imports that raised and whose error was caught, each
 * module once (with how often), over every process where it cost time.
 */
static void rule_failed(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	struct buf ev = BUF_INIT, title = BUF_INIT;
	struct proc_set procs = PROC_SET_INIT;
	struct failed *v = NULL;
	int64_t cost = 0;
	size_t nr = 0, alloc = 0, pi, k, times = 0;
	int32_t i;

	if (!r)
		return;
	for (pi = 0; pi < r->nr_procs; pi++) {
		const struct proc *pr = &r->procs[pi];

		/* Only the tracer sees failed imports: without a trace there is nothing to find. */
		if (!pr->timing || helper_process(pr))
			continue;
		for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i)) {
			const struct imp_node *n = &pr->nodes[i];
			const char *nm = node_name(pr, i);

			if (!(n->flags & NODE_FAILED) || (n->flags & NODE_STARTUP) || n->kind == KIND_TOOL ||
			    !strcmp(nm, "sitecustomize") || !strcmp(nm, "usercustomize"))
				continue;
			for (k = 0; k < nr && strcmp(v[k].name, nm); k++)
				;
			if (k == nr) {
				ALLOC_GROW(v, nr + 1, alloc);
				v[nr++] = (struct failed){ nm, 0 };
			}
			v[k].times++;
			times++;
			proc_set_add(&procs, pi);
			if (n->cum_us > 0)
				cost = i64_add(cost, n->cum_us);
		}
	}
	if (!nr || cost < FAILED_MIN_US)
		goto out;
	for (k = 0; k < nr && k < LIST_MAX; k++) {
		buf_addf(&ev, "%s'%s'", k ? ", " : "", v[k].name);
		if (v[k].times > 1)
			buf_addf(&ev, " (%zu times)", v[k].times);
	}
	if (nr > k)
		buf_addf(&ev, " and %zu more", nr - k);
	buf_adds(&ev, " raised while being imported and the error was caught; together ");
	buf_add_duration(&ev, cost);
	buf_adds(&ev, procs.nr > 1 ? " over " : " in ");
	findings_add_procs(&ev, r, &procs);
	buf_addf(&title, "%zu failed import%s cost time at start-up", times, times == 1 ? "" : "s");
	finding_add_in(p, r, &procs, "failed-imports", "info", NULL, cost, title.buf, ev.buf,
		       "install the optional dependency, or stop probing for it at import (decide once, "
		       "e.g. from configuration, and import it where it is used)");
out:
	free(v);
	proc_set_release(&procs);
	buf_release(&ev);
	buf_release(&title);
}

/* The innermost import that raised SystemExit (the first one recorded), -1 if none. */
static int32_t exit_node(const struct proc *pr)
{
	size_t e;

	for (e = 0; e < pr->nr_events; e++)
		if (!strcmp(proc_str(pr, pr->events[e].name), "import.failed") &&
		    !strcmp(proc_str(pr, pr->events[e].detail), "SystemExit") && pr->events[e].node >= 0)
			return pr->events[e].node;
	return -1;
}

static void rule_ex_config(struct profile *p)
{
	struct buf ev = BUF_INIT;
	size_t ri, hits = 0, runs = 0;
	const struct run *first = NULL;
	int32_t node;

	for (ri = 0; ri < p->nr_runs; ri++) {
		const struct run *r = &p->runs[ri];

		if (r->warmup)
			continue;
		runs++;
		if (r->status == RUN_EXITED && r->exit_code == EX_CONFIG_STATUS) {
			hits++;
			if (!first)
				first = r;
		}
	}
	if (!hits)
		return;
	buf_addf(&ev, "the target exited with status 78 (EX_CONFIG) in %zu of %zu run%s", hits, runs,
		 runs == 1 ? "" : "s");
	node = first->nr_procs ? exit_node(&first->procs[0]) : -1;
	if (node >= 0) {
		buf_adds(&ev, "; it exited while importing ");
		add_chain(&ev, &first->procs[0], node);
	}
	finding_add(p, "config-rejected", "error", node >= 0 ? node_name(&first->procs[0], node) : NULL,
		    UNKNOWN, "configuration rejected at start-up (exit status 78)", ev.buf,
		    "the application refused its configuration before serving: its stderr names the "
		    "setting; compare the environment variables and config files it reads with a working "
		    "environment (coldstart passes the environment through unchanged)");
	if (node >= 0) {
		struct proc_set target = PROC_SET_INIT;

		proc_set_add(&target, 0);
		finding_set_pids(p, first, &target);
		proc_set_release(&target);
	}
	buf_release(&ev);
}

/*
 * Appends the innermost open imports: open nodes none of whose children is
 * open.  *first gets the name of the first one.
 */
static void add_open_chains(struct buf *ev, const struct proc *pr, size_t *found, const char **first)
{
	int32_t i, c;

	for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i)) {
		bool inner = true;

		if (!(pr->nodes[i].flags & NODE_OPEN))
			continue;
		for (c = pr->nodes[i].first_child; c >= 0; c = pr->nodes[c].next_sibling)
			if (pr->nodes[c].flags & NODE_OPEN)
				inner = false;
		if (!inner)
			continue;
		if (!*found)
			*first = node_name(pr, i);
		buf_adds(ev, *found ? "; and " : "; it was importing ");
		add_chain(ev, pr, i);
		if (pr->timing && pr->timing[i].rss_start_kb >= 0) {
			buf_adds(ev, ", RSS ");
			buf_add_bytes(ev, i64_mul(pr->timing[i].rss_start_kb, 1024));
			buf_adds(ev, " when that import started");
		}
		(*found)++;
	}
}

static void rule_oom(struct profile *p)
{
	struct buf ev = BUF_INIT;
	struct proc_set procs = PROC_SET_INIT;
	size_t ri, pi, found = 0, hits = 0, before;
	const struct run *r = NULL;
	const char *module = NULL;

	for (ri = 0; ri < p->nr_runs; ri++)
		if (p->runs[ri].status == RUN_OOM) {
			if (!r)
				r = &p->runs[ri];
			hits++;
		}
	if (!r)
		return;
	buf_addf(&ev, "killed by the memory limit in %zu run%s", hits, hits == 1 ? "" : "s");
	if (p->limits.memory > 0) {
		buf_adds(&ev, " (limit ");
		buf_add_bytes(&ev, p->limits.memory);
		buf_adds(&ev, ")");
	}
	if (r->cg.has && r->cg.memory_peak > 0) {
		buf_adds(&ev, ", memory peak ");
		buf_add_bytes(&ev, r->cg.memory_peak);
	}
	for (pi = 0; pi < r->nr_procs; pi++) {
		before = found;
		add_open_chains(&ev, &r->procs[pi], &found, &module);
		if (found > before)
			proc_set_add(&procs, pi);
	}
	if (!found)
		buf_adds(&ev, "; no trace says which import was running (run with the tracer)");
	finding_add(p, "oom-during-import", "error", module, UNKNOWN, "out of memory during start-up", ev.buf,
		    "raise the memory limit above what start-up needs, or stop importing the module named "
		    "above at start-up (import it where it is used); measure again with a higher --memory "
		    "to see the peak");
	finding_set_pids(p, r, &procs);
	proc_set_release(&procs);
	buf_release(&ev);
}

static const struct finding_rule builtin_rules[] = {
	{ .id = "config-rejected", .run = rule_ex_config },
	{ .id = "oom-during-import", .run = rule_oom },
	{ .id = "import-side-effect", .run = rule_side_effects },
	{ .id = "compiled-at-startup", .run = rule_compiled },
	{ .id = "heavy-import", .run = rule_heavy },
	{ .id = "slow-finders", .run = rule_finders },
	{ .id = "failed-imports", .run = rule_failed },
};

const struct finding_rules findings_builtin = { builtin_rules, ARRAY_SIZE(builtin_rules) };

static void drop_findings(struct profile *p, const char *id)
{
	size_t i, w = 0;

	for (i = 0; i < p->nr_findings; i++) {
		struct finding *f = &p->findings[i];

		if (f->id && !strcmp(f->id, id)) {
			free(f->id);
			free(f->severity);
			free(f->title);
			free(f->evidence);
			free(f->fix);
			free(f->module);
			free(f->pids);
			continue;
		}
		p->findings[w++] = *f;
	}
	p->nr_findings = w;
}

void proc_set_add(struct proc_set *s, size_t pi)
{
	size_t k;

	for (k = 0; k < s->nr && s->v[k] < pi; k++)
		;
	if (k < s->nr && s->v[k] == pi)
		return;
	ALLOC_GROW(s->v, s->nr + 1, s->alloc);
	memmove(s->v + k + 1, s->v + k, (s->nr - k) * sizeof(*s->v));
	s->v[k] = pi;
	s->nr++;
}

void proc_set_release(struct proc_set *s)
{
	free(s->v);
	s->v = NULL;
	s->nr = s->alloc = 0;
}

#define PIDS_NAMED 6 /* pids of one role named before "and N more" */

/* "pids 13 and 14 (workers)": the processes of s from k on that have pr's role, marking them done. */
static void add_role_group(struct buf *b, const struct run *r, const struct proc_set *s, size_t k, bool *done)
{
	const char *role = role_of(&r->procs[s->v[k]]);
	size_t j, n = 0, named = 0;

	for (j = k; j < s->nr; j++)
		if (!done[j] && !strcmp(role_of(&r->procs[s->v[j]]), role))
			n++;
	buf_adds(b, n == 1 ? "pid " : "pids ");
	for (j = k; j < s->nr; j++) {
		if (done[j] || strcmp(role_of(&r->procs[s->v[j]]), role))
			continue;
		done[j] = true;
		if (named == PIDS_NAMED)
			continue;
		if (named)
			buf_adds(b, named + 1 == n ? " and " : ", ");
		buf_addf(b, "%ld", r->procs[s->v[j]].pid);
		named++;
	}
	if (n > named)
		buf_addf(b, " and %zu more", n - named);
	buf_addf(b, " (%s%s)", role, n == 1 ? "" : ends_with(role, "s") ? "es" : "s");
}

void findings_add_procs(struct buf *b, const struct run *r, const struct proc_set *s)
{
	bool *done;
	size_t k, groups = 0;

	if (!s->nr)
		return;
	if (s->nr == 1 || r->procs[s->v[0]].pid <= 0) {
		add_who(b, &r->procs[s->v[0]]);
		return;
	}
	if (s->nr == r->nr_procs && s->nr == 2)
		buf_adds(b, "both processes: ");
	else if (s->nr == r->nr_procs)
		buf_addf(b, "all %zu processes: ", s->nr);
	done = xcalloc(s->nr, sizeof(*done));
	for (k = 0; k < s->nr; k++) {
		if (done[k])
			continue;
		if (groups++)
			buf_adds(b, ", ");
		add_role_group(b, r, s, k, done);
	}
	free(done);
}

void finding_set_pids(struct profile *p, const struct run *r, const struct proc_set *s)
{
	struct finding *f = &p->findings[p->nr_findings - 1];
	size_t k;

	free(f->pids);
	f->pids = xcalloc(s->nr ? s->nr : 1, sizeof(*f->pids));
	f->nr_pids = 0;
	for (k = 0; k < s->nr; k++)
		if (r->procs[s->v[k]].pid > 0)
			f->pids[f->nr_pids++] = r->procs[s->v[k]].pid;
}

void finding_add_in(struct profile *p, const struct run *r, const struct proc_set *s, const char *id,
		    const char *severity, const char *module, int64_t cost_us, const char *title,
		    const char *evidence, const char *fix)
{
	finding_add(p, id, severity, module, cost_us, title, evidence, fix);
	finding_set_pids(p, r, s);
}

const struct run *findings_main_run(const struct profile *p)
{
	size_t i = p->nr_runs ? profile_median_run(p) : 0;

	/* The run the report shows (the median by wall with -n), so the findings speak of it. */
	if (p->nr_runs && !p->runs[i].warmup && p->runs[i].nr_procs)
		return &p->runs[i];
	for (i = 0; i < p->nr_runs; i++)
		if (!p->runs[i].warmup && p->runs[i].nr_procs)
			return &p->runs[i];
	return p->nr_runs ? &p->runs[0] : NULL;
}

void finding_add(struct profile *p, const char *id, const char *severity, const char *module,
		 int64_t cost_us, const char *title, const char *evidence, const char *fix)
{
	struct finding f;

	f.id = xstrdup(id);
	f.severity = xstrdup(severity);
	f.title = xstrdup(title);
	f.evidence = xstrdup(evidence);
	f.fix = xstrdup(fix);
	f.module = module ? xstrdup(module) : NULL;
	f.cost_us = cost_us;
	f.pids = NULL;
	f.nr_pids = 0;
	profile_add_finding(p, &f);
}

void findings_run(struct profile *p, const struct finding_rules *const *tables)
{
	size_t t, i;

	for (t = 0; tables[t]; t++)
		for (i = 0; i < tables[t]->nr; i++)
			drop_findings(p, tables[t]->v[i].id);
	for (t = 0; tables[t]; t++)
		for (i = 0; i < tables[t]->nr; i++)
			tables[t]->v[i].run(p);
}
