/*
 * Unit tests of the findings rules over profiles built in memory: each rule
 * fires on the evidence it is for, names the right module and fix, and stays
 * quiet on a clean profile.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis/findings.h"
#include "analysis/findings_code.h"
#include "analysis/findings_exit.h"
#include "analysis/findings_heavy.h"
#include "analysis/findings_lookup.h"
#include "model/profile.h"
#include "util.h"

/* The four families of rules, in the order analyze.c runs them. */
static const struct finding_rules *const builtin[] = { &findings_exit_rules, &findings_code_rules,
						       &findings_heavy_rules, &findings_lookup_rules, NULL };

static struct proc *new_proc(struct profile *p, struct run **run)
{
	struct proc *pr;

	profile_init(p);
	*run = profile_add_run(p);
	(*run)->status = RUN_EXITED;
	(*run)->exit_code = 0;
	pr = run_add_proc(*run);
	pr->pid = 4242;
	proc_ensure_timing(pr);
	return pr;
}

static int32_t add(struct proc *pr, int32_t parent, const char *name, int kind, int64_t self_us, int64_t cum_us)
{
	int32_t i = proc_add_node(pr, name, strlen(name), parent >= 0 ? pr->nodes[parent].depth + 1 : 0, self_us,
				  cum_us);

	pr->nodes[i].kind = (uint8_t)kind;
	if (parent >= 0)
		proc_link_child(pr, parent, i);
	else
		proc_link_root(pr, i);
	return i;
}

static void event(struct proc *pr, int32_t node, const char *name, const char *detail)
{
	struct proc_event *e;

	ALLOC_GROW(pr->events, pr->nr_events + 1, pr->alloc_events);
	e = &pr->events[pr->nr_events++];
	e->t_ns = 1000;
	e->name = proc_intern(pr, name, strlen(name));
	e->detail = proc_intern(pr, detail, strlen(detail));
	e->node = node;
}

static size_t count(const struct profile *p, const char *id)
{
	size_t i, n = 0;

	for (i = 0; i < p->nr_findings; i++)
		if (!strcmp(p->findings[i].id, id))
			n++;
	return n;
}

static const struct finding *get(const struct profile *p, const char *id, const char *module)
{
	size_t i;

	for (i = 0; i < p->nr_findings; i++)
		if (!strcmp(p->findings[i].id, id) &&
		    (!module || (p->findings[i].module && !strcmp(p->findings[i].module, module))))
			return &p->findings[i];
	fail_msg("no finding '%s' for '%s'", id, module ? module : "-");
	return NULL;
}

static void test_side_effects(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t app = add(pr, -1, "app", KIND_APP, 100, 400);
	int32_t net = add(pr, app, "app.net", KIND_APP, 100, 100);
	int32_t nap = add(pr, app, "app.nap", KIND_APP, 100, 100);
	int32_t wr = add(pr, app, "app.writer", KIND_APP, 100, 100);
	int32_t probe = add(pr, app, "app.probe", KIND_APP, 100, 100);
	int32_t srv = add(pr, app, "app.server", KIND_APP, 100, 100);
	const struct finding *f;

	event(pr, net, "socket.getaddrinfo", "db.example:5432");
	event(pr, net, "socket.connect", "('10.0.0.1', 5432)");
	event(pr, nap, "time.sleep", "0.25");
	event(pr, wr, "open", "w:/var/log/app.log");
	event(pr, wr, "ctypes.dlopen", "libc.so.6"); /* not a side effect rule */
	event(pr, -1, "subprocess.Popen", "['ls']"); /* top-level code, not an import */
	event(pr, app, "open", "r:/x.py"); /* a read */
	event(pr, app, "open", "w:/dev/null"); /* subprocess.DEVNULL: nothing is written */
	event(pr, probe, "socket.bind", "('::1', 0)"); /* an ephemeral port (urllib3's IPv6 check) */
	event(pr, probe, "socket.bind", "('::1', 0, 0, 0)");
	event(pr, srv, "socket.bind", "('0.0.0.0', 8080)"); /* a listener on a known port */
	findings_run(&p, builtin);

	assert_int_equal(count(&p, "import-side-effect"), 4);
	f = get(&p, "import-side-effect", "app.server");
	assert_non_null(strstr(f->evidence, "socket.bind(('0.0.0.0', 8080))"));
	for (size_t i = 0; i < p.nr_findings; i++)
		assert_true(!p.findings[i].module || strcmp(p.findings[i].module, "app"));
	f = get(&p, "import-side-effect", "app.net");
	assert_string_equal(f->severity, "warning");
	assert_non_null(strstr(f->evidence, "socket.connect(('10.0.0.1', 5432))"));
	assert_non_null(strstr(f->evidence, "socket.getaddrinfo(db.example:5432)"));
	assert_non_null(strstr(f->evidence, "app -> app.net (pid 4242)"));
	assert_non_null(strstr(f->fix, "first use"));
	assert_int_equal(f->cost_us, UNKNOWN);
	f = get(&p, "import-side-effect", "app.nap");
	assert_int_equal(f->cost_us, 250000);
	f = get(&p, "import-side-effect", "app.writer");
	assert_non_null(strstr(f->evidence, "open(/var/log/app.log)"));
	assert_null(strstr(f->evidence, "dlopen"));
	profile_release(&p);
}

static void test_compiled(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t pkg = add(pr, -1, "pkg", KIND_APP, 100, 300);
	int32_t sub = add(pr, pkg, "pkg.sub", KIND_APP, 200, 200);
	int32_t top = add(pr, -1, "top", KIND_APP, 100, 100);
	const struct finding *f;

	p.python = xstrdup("/usr/bin/python3");
	pr->nodes[pkg].flags |= NODE_COMPILED;
	pr->timing[pkg].file = proc_intern(pr, "/srv/app/pkg/__init__.py", 24);
	pr->timing[pkg].compile_ns = 1000000;
	pr->nodes[sub].flags |= NODE_COMPILED;
	pr->timing[sub].file = proc_intern(pr, "/srv/app/pkg/sub.py", 19);
	pr->timing[sub].compile_ns = 2000000;
	pr->nodes[top].flags |= NODE_COMPILED;
	pr->timing[top].file = proc_intern(pr, "/srv/app/top.py", 15);
	findings_run(&p, builtin);

	assert_int_equal(count(&p, "compiled-at-startup"), 1);
	f = get(&p, "compiled-at-startup", NULL);
	assert_int_equal(f->cost_us, 3000);
	assert_non_null(strstr(f->title, "3 modules"));
	assert_non_null(strstr(f->evidence, "'pkg.sub' (2.0 ms)"));
	assert_non_null(strstr(f->fix, "/usr/bin/python3 -m compileall -q /srv/app/pkg /srv/app/top.py "));
	profile_release(&p);
}

/*
 * Two forked workers that import the same app: every finding about the same
 * module is said once, naming both pids; one that holds in one process
 * names its pid.
 */
static void test_workers_said_once(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *m = new_proc(&p, &run), *w;
	const struct finding *f;
	int32_t app, db, x;

	m->role = xstrdup("master");
	x = add(m, -1, "_winapi", KIND_STDLIB, 2000, 2000);
	m->nodes[x].flags |= NODE_FAILED;
	for (int i = 0; i < 2; i++) {
		w = run_add_proc(run);
		w->pid = 5000 + i;
		w->ppid = 4242;
		w->origin = ORIGIN_FORK;
		w->role = xstrdup("worker");
		proc_ensure_timing(w);
		app = add(w, -1, "app", KIND_APP, 100, 3000);
		w->nodes[app].flags |= NODE_COMPILED;
		w->timing[app].file = proc_intern(w, "/srv/app.py", 11);
		w->timing[app].compile_ns = 1000000 + i * 500000;
		db = add(w, app, "app.db", KIND_APP, 100, 100);
		event(w, db, "socket.connect", "('10.0.0.1', 5432)");
		for (int k = 0; k < 2; k++) {
			x = add(w, app, "ujson", KIND_THIRDPARTY, 500, 500);
			w->nodes[x].flags |= NODE_FAILED;
		}
	}
	findings_run(&p, builtin);

	assert_int_equal(count(&p, "compiled-at-startup"), 1);
	f = get(&p, "compiled-at-startup", NULL);
	assert_non_null(strstr(f->title, "1 module compiled"));
	assert_non_null(strstr(f->evidence, "'app' (1.0 ms, in 2 processes)"));
	assert_non_null(strstr(f->evidence, "compiling took 2.5 ms in all, in pids 5000 and 5001 (workers)"));
	assert_int_equal(f->nr_pids, 2);
	assert_int_equal(f->pids[0], 5000);

	assert_int_equal(count(&p, "import-side-effect"), 1);
	f = get(&p, "import-side-effect", "app.db");
	assert_non_null(strstr(f->evidence, "app -> app.db (pid 5000); it did so in pids 5000 and 5001 (workers)"));
	assert_int_equal(f->nr_pids, 2);

	assert_int_equal(count(&p, "failed-imports"), 1);
	f = get(&p, "failed-imports", NULL);
	assert_non_null(strstr(f->evidence, "'_winapi', 'ujson' (4 times) raised"));
	assert_non_null(strstr(f->evidence, "over all 3 processes: pid 4242 (master), pids 5000 and 5001 (workers)"));
	assert_int_equal(f->nr_pids, 3);
	assert_int_equal(f->pids[0], 4242);
	assert_int_equal(f->cost_us, 4000);
	profile_release(&p);
}

static void test_heavy(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t site = add(pr, -1, "site", KIND_STARTUP, 50000, 50000);
	int32_t app = add(pr, -1, "app", KIND_APP, 2000, 100000);
	int32_t np = add(pr, app, "numpy", KIND_THIRDPARTY, 10000, 60000);
	int32_t js = add(pr, app, "json", KIND_STDLIB, 3000, 3000);
	int32_t own = add(pr, app, "app.models", KIND_APP, 35000, 35000);
	const struct finding *f;

	(void)js;
	(void)np;
	(void)own;
	pr->nodes[site].flags |= NODE_STARTUP;
	findings_run(&p, builtin);

	f = get(&p, "heavy-import", "numpy");
	assert_int_equal(f->cost_us, 60000);
	assert_string_equal(f->severity, "warning");
	assert_non_null(strstr(f->evidence, "app -> numpy"));
	assert_non_null(strstr(f->fix, "inside the function"));
	f = get(&p, "heavy-import", "app.models");
	assert_int_equal(f->cost_us, 35000);
	assert_non_null(strstr(f->fix, "module scope"));
	assert_int_equal(count(&p, "heavy-import"), 2); /* not json, not site, not app itself */
	assert_string_equal(p.findings[p.nr_findings - 2].module, "numpy"); /* biggest first */
	profile_release(&p);
}

/* n lookups of find_ns each under a parent (a package that takes nothing itself). */
static struct proc *finders_profile(struct profile *p, size_t n, int64_t find_ns, size_t failed, const char *path)
{
	struct run *run;
	struct proc *pr = new_proc(p, &run);
	int32_t top = add(pr, -1, "pkg", KIND_THIRDPARTY, 1000, 1000 + (int64_t)n * 1000);

	for (size_t i = 0; i < n; i++) {
		char name[32];
		int32_t k;

		snprintf(name, sizeof(name), "pkg.m%zu", i);
		k = add(pr, top, name, KIND_THIRDPARTY, 1000, 1000);
		pr->timing[k].find_ns = find_ns;
		if (i < failed)
			pr->nodes[k].flags |= NODE_FAILED;
	}
	if (path)
		event(pr, -1, "sys.path", path);
	return pr;
}

/* A long sys.path: said so, with the measurement. */
static void test_finders_long_path(void **state)
{
	struct profile p;
	const struct finding *f;

	finders_profile(&p, 60, 400000, 0, "25 entries: /a:/b");
	findings_run(&p, builtin);
	f = get(&p, "slow-finders", NULL);
	assert_int_equal(f->cost_us, 24000);
	assert_non_null(strstr(f->evidence, "24.0 ms (39% of"));
	assert_non_null(strstr(f->evidence, "across 60 lookups, a median of 400 us each"));
	assert_non_null(strstr(f->evidence, "sys.path has 25 entries: /a:/b"));
	assert_non_null(strstr(f->fix, "sys.path has 25 entries"));
	assert_null(strstr(f->fix, "failed"));
	profile_release(&p);
}

/* Failing lookups dominate: the advice is about them, not sys.path. */
static void test_finders_failing(void **state)
{
	struct profile p;
	const struct finding *f;

	finders_profile(&p, 60, 400000, 40, "6 entries: /a");
	findings_run(&p, builtin);
	f = get(&p, "slow-finders", NULL);
	assert_non_null(strstr(f->evidence, "40 failed lookups took 16.0 ms"));
	assert_non_null(strstr(f->fix, "40 imports failed"));
	assert_null(strstr(f->fix, "sys.path has"));
	profile_release(&p);
}

/*
 * Ordinary lookups, many of them: finders cost what the imports cost, no
 * finding; nor for a few lookups, however slow (one preemption would do it).
 */
static void test_finders_ordinary(void **state)
{
	struct profile p;
	struct proc *pr;

	finders_profile(&p, 300, 90000, 2, "6 entries: /a");
	findings_run(&p, builtin);
	assert_int_equal(count(&p, "slow-finders"), 0);
	profile_release(&p);
	pr = finders_profile(&p, 20, 50000, 0, "6 entries: /a");
	pr->timing[proc_find(pr, "pkg.m3")].find_ns = 30000000;
	findings_run(&p, builtin);
	assert_int_equal(count(&p, "slow-finders"), 0);
	profile_release(&p);
}

/* A few slow lookups take most of it: they are named. */
static void test_finders_few(void **state)
{
	struct profile p;
	struct proc *pr = finders_profile(&p, 60, 50000, 0, "6 entries: /a");
	const struct finding *f;
	int32_t slow = proc_find(pr, "pkg.m7");

	pr->timing[slow].find_ns = 30000000;
	findings_run(&p, builtin);
	f = get(&p, "slow-finders", NULL);
	assert_non_null(strstr(f->evidence, "the slowest: 'pkg.m7' 30.0 ms"));
	assert_non_null(strstr(f->fix, "'pkg.m7' first"));
	profile_release(&p);
}

/*
 * The few slow lookups with CPU times: off the CPU for most of them (a
 * preempted or blocked import) the advice says so and asks for another
 * profile; on the CPU, that the lookups computed.
 */
static void test_finders_few_off_cpu(void **state)
{
	for (int on_cpu = 0; on_cpu <= 1; on_cpu++) {
		struct profile p;
		struct proc *pr = finders_profile(&p, 60, 50000, 0, "6 entries: /a");
		const struct finding *f;
		int32_t slow = proc_find(pr, "pkg.m7");

		pr->timing[slow].find_ns = 30000000;
		for (int32_t i = 0; i < (int32_t)pr->nr_nodes; i++) {
			int64_t wall = pr->timing[i].find_ns > 0 ? pr->timing[i].find_ns + 1000000 : 1000000;

			pr->timing[i].start_ns = 1000;
			pr->timing[i].end_ns = 1000 + wall;
			/* Off the CPU for the whole lookup, or on it but for 0.2 ms. */
			pr->timing[i].cpu_ns = on_cpu ? wall - 200000 : 1000000;
		}
		findings_run(&p, builtin);
		f = get(&p, "slow-finders", NULL);
		assert_non_null(strstr(f->fix, "'pkg.m7' first"));
		if (on_cpu) {
			assert_non_null(strstr(f->fix, "off the CPU for up to 400 us of their 30.2 ms: the lookups "
						       "themselves computed"));
		} else {
			assert_non_null(
				strstr(f->fix, "off the CPU for up to 30.2 ms of their 30.2 ms: blocked on I/O"));
			assert_non_null(strstr(f->fix, "profile again"));
		}
		profile_release(&p);
	}
}

/* Two forked workers importing the same heavy app: one finding naming both pids; the master counts its own. */
static void test_heavy_per_process(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *m = new_proc(&p, &run), *w;
	const struct finding *f;
	int32_t k;

	m->role = xstrdup("master");
	add(m, -1, "gunicorn.app", KIND_THIRDPARTY, 1000, 50000);
	add(m, -1, "shared", KIND_THIRDPARTY, 1000, 30000);
	for (int i = 0; i < 2; i++) {
		w = run_add_proc(run);
		w->pid = 5000 + i;
		w->ppid = 4242;
		w->origin = ORIGIN_FORK;
		w->role = xstrdup("worker");
		proc_ensure_timing(w);
		k = add(w, -1, "app", KIND_APP, 100, 300000 + i * 1000);
		add(w, k, "sqlalchemy", KIND_THIRDPARTY, 1000, 250000 + i * 1000);
		add(w, k, "flask", KIND_THIRDPARTY, 1000, 49900);
		add(w, -1, "shared", KIND_THIRDPARTY, 1000, 60000);
	}
	m = &run->procs[0];
	findings_run(&p, builtin);
	assert_int_equal(count(&p, "heavy-import"), 4);
	f = get(&p, "heavy-import", "gunicorn.app");
	assert_non_null(strstr(f->title, "of the target's import time"));
	assert_non_null(strstr(f->evidence, "pid 4242 (master)"));
	f = get(&p, "heavy-import", "sqlalchemy");
	assert_int_equal(f->cost_us, 251000);
	assert_non_null(strstr(f->title, "of 2 workers"));
	assert_non_null(strstr(f->evidence,
			       "in pid 5001 (worker), where it costs most; heavy in pids 5000 and 5001 (workers)"));
	assert_non_null(strstr(f->evidence, "app -> sqlalchemy"));
	assert_int_equal(f->nr_pids, 2);
	assert_int_equal(f->pids[0], 5000);
	assert_int_equal(f->pids[1], 5001);
	/* Heavy in the master and in both workers: said once, the target's process first. */
	f = get(&p, "heavy-import", "shared");
	assert_non_null(strstr(f->title, "'shared' takes up to 37% of the import time of all 3 processes"));
	assert_non_null(strstr(f->evidence, "all 3 processes: pid 4242 (master), pids 5000 and 5001 (workers)"));
	assert_int_equal(f->nr_pids, 3);
	assert_int_equal(f->pids[0], 4242);
	profile_release(&p);
}

/* A module imported only after the target was ready gets no advice to defer it. */
static void test_heavy_after_ready(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t a = add(pr, -1, "early", KIND_THIRDPARTY, 40000, 40000);
	int32_t b = add(pr, -1, "late", KIND_THIRDPARTY, 60000, 60000);

	pr->start_ns = 1000000000;
	pr->timing[a].start_ns = 10000000;
	pr->timing[b].start_ns = 500000000;
	run->ready_us = 200000; /* ready 200 ms after exec; "late" starts at 500 ms */
	findings_run(&p, builtin);
	assert_int_equal(count(&p, "heavy-import"), 1);
	get(&p, "heavy-import", "early");
	assert_true(node_after_ready(pr, b, run_ready_ns(run)));
	assert_false(node_after_ready(pr, a, run_ready_ns(run)));
	profile_release(&p);
}

/* Under a CPU limit the CPU time decides and is the cost; a throttled module's wall does not. */
static void test_heavy_cpu_under_limit(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t a = add(pr, -1, "pprint", KIND_STDLIB, 197000, 197000); /* throttled: 2 ms of CPU */
	int32_t b = add(pr, -1, "pandas", KIND_THIRDPARTY, 1000, 900000);
	int32_t c = add(pr, b, "numpy", KIND_THIRDPARTY, 400000, 400000);
	const struct finding *f;

	p.limits.cpus = 0.1;
	pr->timing[a].start_ns = pr->timing[b].start_ns = pr->timing[c].start_ns = 1000;
	pr->timing[a].cpu_ns = 2000000;
	pr->timing[b].cpu_ns = 90000000;
	pr->timing[c].cpu_ns = 40000000;
	assert_int_equal(profile_metric(&p), METRIC_CPU);
	assert_int_equal(node_self_in(pr, b, METRIC_CPU), 50000);
	assert_int_equal(proc_import_total_in(pr, false, METRIC_CPU), 92000);
	findings_run(&p, builtin);
	assert_int_equal(count(&p, "heavy-import"), 1);
	f = get(&p, "heavy-import", "pandas");
	assert_int_equal(f->cost_us, 90000);
	assert_non_null(strstr(f->title, "import CPU time"));
	assert_non_null(strstr(f->evidence, "90.0 ms of CPU of the 92.0 ms of CPU"));
	profile_release(&p);
}

/* An import with a [gc] child: wall and CPU of the import and of its pauses. */
static int32_t gc_import(struct proc *pr, const char *name, int64_t wall_us, int64_t cpu_us, int64_t gc_wall_us,
			 int64_t gc_cpu_us)
{
	int32_t i = add(pr, -1, name, KIND_THIRDPARTY, wall_us - gc_wall_us, wall_us);
	int32_t g = add(pr, i, "[gc]", KIND_THIRDPARTY, gc_wall_us, gc_wall_us);

	pr->nodes[g].flags |= NODE_GC;
	pr->timing[i].start_ns = pr->timing[g].start_ns = 1000;
	pr->timing[i].cpu_ns = cpu_us * 1000;
	pr->timing[g].cpu_ns = gc_cpu_us * 1000;
	return i;
}

/*
 * Under a CPU limit gc-pauses judges by CPU: a throttled period that fell
 * in a pause (400 ms of wall for 3 ms of CPU) is no finding, and when the
 * CPU share is large the finding says CPU, gives the wall beside and names
 * the longest pause by CPU.
 */
static void test_gc_cpu_under_limit(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t a = gc_import(pr, "asyncio", 450000, 48000, 400000, 3000);
	const struct finding *f;

	p.limits.cpus = 0.1;
	event(pr, a, "gc", "generation 2, 300000 us, 1000 us of CPU, 4 collected, 0 uncollectable");
	assert_int_equal(profile_metric(&p), METRIC_CPU);
	findings_run(&p, builtin);
	assert_int_equal(count(&p, "gc-pauses"), 0);
	profile_release(&p);

	/* The same by wall, without a limit: the rule as before. */
	pr = new_proc(&p, &run);
	gc_import(pr, "asyncio", 450000, 448000, 400000, 399000);
	findings_run(&p, builtin);
	assert_int_equal(count(&p, "gc-pauses"), 1);
	assert_non_null(strstr(get(&p, "gc-pauses", NULL)->title, "89% of the imports' time"));
	profile_release(&p);

	pr = new_proc(&p, &run);
	a = gc_import(pr, "sqlalchemy", 500000, 60000, 300000, 20000);
	p.limits.cpus = 0.1;
	event(pr, a, "gc", "generation 2, 200000 us, 2000 us of CPU, 4 collected, 0 uncollectable");
	event(pr, a, "gc", "generation 1, 90000 us, 9000 us of CPU, 5 collected, 0 uncollectable");
	event(pr, a, "gc", "generation 0, 95000 us, 7 collected, 0 uncollectable"); /* no CPU: not by CPU */
	event(pr, a, "gc", "generation 0, 80000 us, 15000 collected, 0 uncollectable"); /* 15000 objects, not us */
	findings_run(&p, builtin);
	assert_int_equal(count(&p, "gc-pauses"), 1);
	f = get(&p, "gc-pauses", NULL);
	assert_int_equal(f->cost_us, 20000);
	assert_non_null(strstr(f->title, "33% of the imports' CPU time"));
	assert_non_null(strstr(f->evidence, "20.0 ms of CPU of the 60.0 ms of CPU"));
	assert_non_null(strstr(f->evidence, "took 300.0 ms of wall, throttled periods that began in them included"));
	assert_non_null(strstr(f->evidence, "the longest pause: generation 1, 90000 us, 9000 us of CPU"));
	profile_release(&p);
}

static void test_config_rejected(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t app = add(pr, -1, "app", KIND_APP, 100, 200);
	int32_t settings = add(pr, app, "app.settings", KIND_APP, 100, 100);
	const struct finding *f;

	run->exit_code = 78;
	pr->nodes[settings].flags |= NODE_FAILED;
	pr->nodes[app].flags |= NODE_FAILED;
	event(pr, settings, "import.failed", "SystemExit");
	event(pr, app, "import.failed", "SystemExit");
	findings_run(&p, builtin);
	f = get(&p, "config-rejected", "app.settings");
	assert_string_equal(f->severity, "error");
	assert_non_null(strstr(f->evidence, "status 78 (EX_CONFIG) in 1 of 1 run"));
	assert_non_null(strstr(f->evidence, "while importing app -> app.settings"));
	profile_release(&p);

	/* Another exit status is not this finding. */
	pr = new_proc(&p, &run);
	add(pr, -1, "app", KIND_APP, 100, 100);
	run->exit_code = 1;
	findings_run(&p, builtin);
	assert_int_equal(count(&p, "config-rejected"), 0);
	profile_release(&p);
}

static void test_oom(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t a = add(pr, -1, "app", KIND_APP, 100, 100);
	int32_t b = add(pr, a, "pandas", KIND_THIRDPARTY, 100, 100);
	int32_t c = add(pr, a, "json", KIND_STDLIB, 10, 10);
	const struct finding *f;

	(void)c;
	run->status = RUN_OOM;
	p.limits.memory = 64 << 20;
	pr->nodes[a].flags |= NODE_OPEN;
	pr->nodes[b].flags |= NODE_OPEN;
	pr->timing[b].rss_start_kb = 30 * 1024;
	findings_run(&p, builtin);
	f = get(&p, "oom-during-import", "pandas");
	assert_string_equal(f->severity, "error");
	assert_non_null(strstr(f->evidence, "limit 64.0 MiB"));
	assert_non_null(strstr(f->evidence, "it was importing app -> pandas (pid 4242), RSS 30.0 MiB"));
	assert_null(strstr(f->evidence, "json"));
	profile_release(&p);

	/* Without a trace there is nothing open: the finding says so. */
	pr = new_proc(&p, &run);
	add(pr, -1, "app", KIND_APP, 100, 100);
	run->status = RUN_OOM;
	findings_run(&p, builtin);
	assert_non_null(strstr(get(&p, "oom-during-import", NULL)->evidence, "no trace"));
	profile_release(&p);
}

static void test_failed_imports(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t app = add(pr, -1, "app", KIND_APP, 100, 5000);
	int32_t x = add(pr, app, "ujson", KIND_THIRDPARTY, 3000, 3000);
	int32_t sc = add(pr, -1, "sitecustomize", KIND_STARTUP, 3000, 3000);

	pr->nodes[x].flags |= NODE_FAILED;
	pr->nodes[sc].flags |= NODE_FAILED;
	findings_run(&p, builtin);
	assert_int_equal(count(&p, "failed-imports"), 1);
	assert_non_null(strstr(get(&p, "failed-imports", NULL)->evidence, "'ujson' raised"));
	assert_null(strstr(get(&p, "failed-imports", NULL)->evidence, "sitecustomize"));
	profile_release(&p);
}

static void test_clean_profile_is_quiet(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t app = add(pr, -1, "app", KIND_APP, 1000, 3000);

	add(pr, app, "json", KIND_STDLIB, 2000, 2000);
	findings_run(&p, builtin);
	assert_int_equal(p.nr_findings, 0);
	profile_release(&p);

	/* No runs at all. */
	profile_init(&p);
	findings_run(&p, builtin);
	assert_int_equal(p.nr_findings, 0);
	profile_release(&p);
}

static void test_rerun_does_not_duplicate(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t app = add(pr, -1, "app", KIND_APP, 100, 100);
	size_t n;

	event(pr, app, "time.sleep", "1");
	findings_run(&p, builtin);
	n = p.nr_findings;
	assert_true(n >= 1);
	findings_run(&p, builtin);
	assert_int_equal(p.nr_findings, n);
	profile_release(&p);
}

static int custom_calls;

static void custom_rule(struct profile *p)
{
	custom_calls++;
	finding_add(p, "custom-rule", "info", "m", UNKNOWN, "title", "evidence", "fix");
}

static const struct finding_rule custom_rule_v[] = { { .id = "custom-rule", .run = custom_rule } };
static const struct finding_rules custom = { custom_rule_v, ARRAY_SIZE(custom_rule_v) };

/* Tables run in order, each rule once per call, and a second call replaces what the first added. */
static void test_tables(void **state)
{
	const struct finding_rules *const both[] = { &findings_exit_rules, &custom, NULL };
	const struct finding_rules *const alone[] = { &custom, NULL };
	struct profile p;
	struct run *run;
	size_t i, t;

	new_proc(&p, &run);
	run->status = RUN_EXITED;
	run->exit_code = EX_CONFIG_STATUS;
	custom_calls = 0;
	findings_run(&p, both);
	findings_run(&p, both);
	assert_int_equal(custom_calls, 2);
	assert_int_equal(count(&p, "custom-rule"), 1);
	assert_int_equal(count(&p, "config-rejected"), 1);
	/* The built-in finding comes first: its table runs first. */
	assert_string_equal(p.findings[p.nr_findings - 1].id, "custom-rule");
	/* A table alone touches only its own findings. */
	findings_run(&p, alone);
	assert_int_equal(custom_calls, 3);
	assert_int_equal(count(&p, "custom-rule"), 1);
	assert_int_equal(count(&p, "config-rejected"), 1);
	/* An empty list runs nothing. */
	{
		const struct finding_rules *const none[] = { NULL };
		size_t before = p.nr_findings;

		findings_run(&p, none);
		assert_int_equal(p.nr_findings, before);
	}
	for (t = 0; builtin[t]; t++)
		for (i = 0; i < builtin[t]->nr; i++)
			assert_non_null(builtin[t]->v[i].id);
	profile_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_side_effects),
		cmocka_unit_test(test_compiled),
		cmocka_unit_test(test_heavy),
		cmocka_unit_test(test_finders_long_path),
		cmocka_unit_test(test_finders_failing),
		cmocka_unit_test(test_finders_ordinary),
		cmocka_unit_test(test_finders_few),
		cmocka_unit_test(test_finders_few_off_cpu),
		cmocka_unit_test(test_heavy_per_process),
		cmocka_unit_test(test_workers_said_once),
		cmocka_unit_test(test_heavy_after_ready),
		cmocka_unit_test(test_heavy_cpu_under_limit),
		cmocka_unit_test(test_gc_cpu_under_limit),
		cmocka_unit_test(test_config_rejected),
		cmocka_unit_test(test_oom),
		cmocka_unit_test(test_failed_imports),
		cmocka_unit_test(test_clean_profile_is_quiet),
		cmocka_unit_test(test_rerun_does_not_duplicate),
		cmocka_unit_test(test_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
