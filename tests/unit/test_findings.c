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

#include "findings.h"
#include "profile.h"
#include "util.h"

static const struct finding_rules *const builtin[] = { &findings_builtin, NULL };

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

static int32_t add(struct proc *pr, int32_t parent, const char *name, int kind, int64_t self_us,
		   int64_t cum_us)
{
	int32_t i = proc_add_node(pr, name, strlen(name), parent >= 0 ? pr->nodes[parent].depth + 1 : 0,
				  self_us, cum_us);

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
	const struct finding *f;

	event(pr, net, "socket.getaddrinfo", "db.example:5432");
	event(pr, net, "socket.connect", "('10.0.0.1', 5432)");
	event(pr, nap, "time.sleep", "0.25");
	event(pr, wr, "open", "w:/var/log/app.log");
	event(pr, wr, "ctypes.dlopen", "libc.so.6"); /* not a side effect rule */
	event(pr, -1, "subprocess.Popen", "['ls']"); /* top-level code, not an import */
	event(pr, app, "open", "r:/x.py"); /* a read */
	findings_run(&p, builtin);

	assert_int_equal(count(&p, "import-side-effect"), 3);
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

static void test_finders(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr = new_proc(&p, &run);
	int32_t a = add(pr, -1, "a", KIND_APP, 50000, 100000);
	int32_t b = add(pr, a, "b", KIND_THIRDPARTY, 50000, 50000);
	const struct finding *f;

	pr->timing[a].find_ns = 20000000;
	pr->timing[b].find_ns = 10000000;
	pr->nodes[b].flags |= NODE_FAILED;
	event(pr, -1, "sys.path", "25 entries: /a:/b");
	findings_run(&p, builtin);
	f = get(&p, "slow-finders", NULL);
	assert_string_equal(f->severity, "warning");
	assert_int_equal(f->cost_us, 30000);
	assert_non_null(strstr(f->evidence, "30.0 ms (30% of"));
	assert_non_null(strstr(f->evidence, "2 imports, 1 of them failed"));
	assert_non_null(strstr(f->evidence, "sys.path has 25 entries: /a:/b"));
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
	const struct finding_rules *const both[] = { &findings_builtin, &custom, NULL };
	const struct finding_rules *const alone[] = { &custom, NULL };
	struct profile p;
	struct run *run;
	size_t i;

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
	for (i = 0; i < findings_builtin.nr; i++)
		assert_non_null(findings_builtin.v[i].id);
	profile_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_side_effects),
		cmocka_unit_test(test_compiled),
		cmocka_unit_test(test_heavy),
		cmocka_unit_test(test_finders),
		cmocka_unit_test(test_config_rejected),
		cmocka_unit_test(test_oom),
		cmocka_unit_test(test_failed_imports),
		cmocka_unit_test(test_clean_profile_is_quiet),
		cmocka_unit_test(test_rerun_does_not_duplicate),
		cmocka_unit_test(test_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
