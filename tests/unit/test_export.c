/*
 * Unit tests of the exporters' shared layout, each format's invariants, file
 * writing (plain and gzip) and the diff statistics, on profiles built in C.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "analysis/diff.h"
#include "render/export/export.h"
#include "render/export/formats.h"
#include "render/export/frames.h"
#include "model/profile.h"
#include "tree.h"
#include "model/stats.h"

/* a (cum 10: b 4, c 3), d 5: consistent importtime-like numbers. */
static struct proc *simple_proc(struct profile *p)
{
	struct run *r;
	struct proc *pr;
	int32_t a;

	profile_init(p);
	r = profile_add_run(p);
	pr = run_add_proc(r);
	pr->pid = 42;
	pr->argv = xstrdup("python3 app.py");
	a = add(pr, -1, "a", 3, 10);
	add(pr, a, "b", 4, 4);
	add(pr, a, "c", 3, 3);
	add(pr, -1, "d", 5, 5);
	return pr;
}

static void test_layout_nests_when_children_exceed_parent(void **state)
{
	struct profile p;
	struct proc *pr = simple_proc(&p);
	int64_t start[8], end[8], extent;

	(void)state;
	/* importtime can claim a parent smaller than its children. */
	pr->nodes[0].cum_us = 2;
	extent = export_layout(pr, false, start, end);
	assert_int_equal(end[0] - start[0], 7000); /* max(2, 4 + 3) us, in ns */
	assert_int_equal(start[1], start[0]);
	assert_int_equal(start[2], end[1]);
	assert_true(end[2] <= end[0]);
	assert_int_equal(start[3], end[0]);
	assert_int_equal(extent, end[3]);
	profile_release(&p);
}

static void test_layout_clamps_contradicting_timestamps(void **state)
{
	struct profile p;
	struct proc *pr = simple_proc(&p);
	int64_t start[8], end[8];

	(void)state;
	proc_ensure_timing(pr);
	pr->timing[0].start_ns = 1000;
	pr->timing[0].end_ns = 9000;
	pr->timing[1].start_ns = 500; /* before its parent */
	pr->timing[1].end_ns = 20000; /* after its parent */
	pr->timing[2].start_ns = 600; /* overlaps its sibling */
	pr->timing[2].end_ns = 700;
	/* d has no timing: it follows a, as long as its cum. */
	assert_true(export_has_timing(pr));
	export_layout(pr, true, start, end);
	assert_int_equal(start[0], 1000);
	assert_int_equal(end[0], 9000);
	assert_int_equal(start[1], 1000);
	assert_int_equal(end[1], 9000);
	assert_int_equal(start[2], 9000);
	assert_int_equal(end[2], 9000);
	assert_int_equal(start[3], 9000);
	assert_int_equal(end[3], 9000 + 5000);
	profile_release(&p);
}

static void test_layout_untimed_parent_ends_with_timed_children(void **state)
{
	struct profile p;
	struct proc *pr = simple_proc(&p);
	int64_t start[8], end[8];

	(void)state;
	/* a: importtime only (start-up, before the tracer); c timed inside it. */
	proc_ensure_timing(pr);
	pr->timing[2].start_ns = 50000;
	pr->timing[2].end_ns = 53000;
	export_layout(pr, true, start, end);
	assert_int_equal(start[2], 50000);
	assert_int_equal(end[2], 53000);
	assert_int_equal(end[0], 53000); /* a ends with c */
	assert_int_equal(start[0], 53000 - 10000); /* and lasts its cum */
	assert_int_equal(start[1], start[0]); /* b, untimed, from a's start */
	assert_int_equal(end[1], start[0] + 4000);
	assert_int_equal(start[3], 53000); /* d follows a */
	profile_release(&p);
}

static bool skip_b(const struct proc *pr, int32_t i, void *data)
{
	int32_t *seen = data;

	seen[++seen[0]] = i;
	return strcmp(node_name(pr, i), "b");
}

/*
 * The exporters walk the tree with profile.h's walker: the same pre-order,
 * trusting the links (the link functions and the JSON reader only make
 * trees), and a visit that says no skips the node's children.
 */
static void test_walk_is_the_profiles(void **state)
{
	struct profile p;
	struct proc *pr = simple_proc(&p);
	int32_t order[8], parent[8], seen[9] = { 0 }, i;
	size_t n, k = 0;

	(void)state;
	n = export_preorder(pr, order, parent);
	assert_int_equal(n, pr->nr_nodes);
	for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i), k++) {
		assert_int_equal(order[k], i);
		assert_int_equal(parent[i], pr->nodes[i].parent);
	}
	assert_int_equal(k, n);
	export_walk(pr, skip_b, seen);
	assert_int_equal(seen[0], (int32_t)n);
	profile_release(&p);
}

/*
 * Under a CPU limit the exports weigh modules by the importing thread's CPU
 * time: a throttled module's wall does not make it wide.
 */
static void test_cpu_limit_weighs_by_cpu(void **state)
{
	struct profile p;
	struct proc *pr = simple_proc(&p);
	struct export_opts o = EXPORT_OPTS_INIT;
	struct buf err = BUF_INIT, text = BUF_INIT;
	char path[] = "/tmp/coldstart-test-export-XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	p.limits.cpus = 0.1;
	proc_ensure_timing(pr);
	for (size_t i = 0; i < pr->nr_nodes; i++)
		pr->timing[i].start_ns = 1000;
	pr->timing[0].cpu_ns = 9000; /* a: 9 us of CPU, of which b 2, c 1 */
	pr->timing[1].cpu_ns = 2000;
	pr->timing[2].cpu_ns = 1000;
	pr->timing[3].cpu_ns = 1000; /* d: 5 us of wall, 1 of CPU */
	assert_int_equal(export_to_path(&p, exporter_find("folded"), &o, path, &err), 0);
	assert_int_equal(buf_read_file(&text, path), 0);
	assert_string_equal(text.buf, "python3 app.py (pid 42);a 6\n"
				      "python3 app.py (pid 42);a;b 2\n"
				      "python3 app.py (pid 42);a;c 1\n"
				      "python3 app.py (pid 42);d 1\n");
	/* The profile itself is not changed. */
	assert_int_equal(pr->nodes[0].cum_us, 10);
	unlink(path);
	buf_release(&err);
	buf_release(&text);
	profile_release(&p);
}

static void test_folded_weights_are_self(void **state)
{
	struct profile p;
	struct export_opts o = EXPORT_OPTS_INIT;
	struct buf out = BUF_INIT, err = BUF_INIT;

	(void)state;
	simple_proc(&p);
	assert_int_equal(export_folded(&p, &o, &out, &err), 0);
	assert_string_equal(out.buf, "python3 app.py (pid 42);a 3\n"
				     "python3 app.py (pid 42);a;b 4\n"
				     "python3 app.py (pid 42);a;c 3\n"
				     "python3 app.py (pid 42);d 5\n");
	buf_release(&out);
	buf_release(&err);
	profile_release(&p);
}

static void test_speedscope_events_balance(void **state)
{
	struct profile p;
	struct export_opts o = EXPORT_OPTS_INIT;
	struct buf out = BUF_INIT, err = BUF_INIT;
	json_t *root, *events;
	json_error_t jerr;
	double last = 0;
	int depth = 0;
	size_t i;

	(void)state;
	simple_proc(&p);
	assert_int_equal(export_speedscope(&p, &o, &out, &err), 0);
	root = json_loads(out.buf, 0, &jerr);
	assert_non_null(root);
	assert_int_equal(json_array_size(json_object_get(json_object_get(root, "shared"), "frames")), 4);
	events = json_object_get(json_array_get(json_object_get(root, "profiles"), 0), "events");
	assert_int_equal(json_array_size(events), 8);
	for (i = 0; i < json_array_size(events); i++) {
		json_t *e = json_array_get(events, i);
		double at = json_number_value(json_object_get(e, "at"));

		assert_true(at >= last);
		last = at;
		depth += !strcmp(json_string_value(json_object_get(e, "type")), "O") ? 1 : -1;
		assert_true(depth >= 0);
	}
	assert_int_equal(depth, 0);
	assert_true(last == 15.0);
	json_decref(root);
	buf_release(&out);
	buf_release(&err);
	profile_release(&p);
}

static void test_chrome_events_nest(void **state)
{
	struct profile p;
	struct export_opts o = EXPORT_OPTS_INIT;
	struct buf out = BUF_INIT, err = BUF_INIT;
	json_t *root, *ev;
	json_error_t jerr;
	size_t i, slices = 0;

	(void)state;
	simple_proc(&p);
	p.runs[0].procs[0].nodes[0].cum_us = 1; /* inconsistent on purpose */
	assert_int_equal(export_chrome(&p, &o, &out, &err), 0);
	root = json_loads(out.buf, 0, &jerr);
	assert_non_null(root);
	ev = json_object_get(root, "traceEvents");
	for (i = 0; i < json_array_size(ev); i++) {
		json_t *e = json_array_get(ev, i);
		const char *name = json_string_value(json_object_get(e, "name"));
		double ts = json_number_value(json_object_get(e, "ts"));
		double dur = json_number_value(json_object_get(e, "dur"));

		if (strcmp(json_string_value(json_object_get(e, "ph")), "X"))
			continue;
		slices++;
		assert_int_equal(json_integer_value(json_object_get(e, "pid")), 42);
		if (!strcmp(name, "a"))
			assert_true(ts == 0.0 && dur == 7.0);
		if (!strcmp(name, "c"))
			assert_true(ts == 4.0 && ts + dur <= 7.0);
		if (!strcmp(name, "d"))
			assert_true(ts == 7.0);
	}
	assert_int_equal(slices, 4);
	json_decref(root);
	buf_release(&out);
	buf_release(&err);
	profile_release(&p);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (hay = strstr(hay, needle); hay; hay = strstr(hay + 1, needle))
		n++;
	return n;
}

static void test_svg_leaves_out_subpixel_frames(void **state)
{
	struct profile p;
	struct proc *pr = simple_proc(&p);
	struct export_opts o = EXPORT_OPTS_INIT;
	struct buf out = BUF_INIT, err = BUF_INIT;

	(void)state;
	pr->nodes[3].self_us = pr->nodes[3].cum_us = 20000; /* c is 0.18 px wide */
	add(pr, 0, "tiny", 0, 0);
	assert_int_equal(export_svg(&p, &o, &out, &err), 0);
	/* Root frame + a, b, c, d; the zero-width "tiny" is left out. */
	assert_int_equal(count(out.buf, "<g class=\"cs-f"), 5);
	assert_non_null(strstr(out.buf, "1 frames narrower than 0.1 px not drawn"));
	assert_null(strstr(out.buf, "data-n=\"tiny\""));
	buf_reset(&out);
	o.min_width = 0;
	assert_int_equal(export_svg(&p, &o, &out, &err), 0);
	assert_int_equal(count(out.buf, "<g class=\"cs-f"), 6);
	buf_release(&out);
	buf_release(&err);
	profile_release(&p);
}

static void test_table_and_names(void **state)
{
	size_t nr, i;
	const struct exporter *list = exporter_list(&nr);

	(void)state;
	assert_int_equal(nr, 9);
	for (i = 0; i < nr; i++) {
		assert_ptr_equal(exporter_find(list[i].name), &list[i]);
		assert_non_null(list[i].write);
	}
	assert_null(exporter_find("png"));
	assert_null(exporter_find(NULL));
	assert_string_equal(exporter_for_path("a/b.svg.gz")->name, "svg");
	assert_string_equal(exporter_for_path("x.speedscope.json")->name, "speedscope");
	assert_string_equal(exporter_for_path("x.trace.json.gz")->name, "chrome");
	assert_string_equal(exporter_for_path("r.htm")->name, "html");
	/* pprof's name ends in .gz: the format, not a compression to add. */
	assert_string_equal(exporter_for_path("cpu.pb.gz")->name, "pprof");
	assert_true(exporter_for_path("cpu.pb.gz")->gzipped);
	assert_string_equal(exporter_for_path("t.otlp.json")->name, "otlp-json");
	assert_string_equal(exporter_for_path("t.otlp.pb")->name, "otlp");
	assert_string_equal(exporter_for_path("m.prom")->name, "prometheus");
	assert_null(exporter_for_path("x.json"));
	assert_null(exporter_for_path("svg"));
}

static void test_export_to_path_gzip_and_plain(void **state)
{
	struct profile p;
	struct export_opts o = EXPORT_OPTS_INIT;
	struct buf direct = BUF_INIT, back = BUF_INIT, err = BUF_INIT;
	char dir[] = "/tmp/coldstart-export-XXXXXX", path[128];
	unsigned char magic[2] = { 0, 0 };
	FILE *f;

	(void)state;
	simple_proc(&p);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(export_folded(&p, &o, &direct, &err), 0);

	snprintf(path, sizeof(path), "%s/x.folded.gz", dir);
	assert_int_equal(export_to_path(&p, exporter_find("folded"), &o, path, &err), 0);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(magic, 1, 2, f), 2);
	fclose(f);
	assert_true(magic[0] == 0x1f && magic[1] == 0x8b);
	assert_int_equal(buf_read_file(&back, path), 0);
	assert_string_equal(back.buf, direct.buf);
	unlink(path);

	snprintf(path, sizeof(path), "%s/x.folded", dir);
	assert_int_equal(export_to_path(&p, exporter_find("folded"), &o, path, &err), 0);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(magic, 1, 1, f), 1);
	fclose(f);
	assert_int_equal(magic[0], 'p'); /* plain text, not gzip */
	unlink(path);

	snprintf(path, sizeof(path), "%s/missing/x.svg", dir);
	assert_int_equal(export_to_path(&p, exporter_find("svg"), &o, path, &err), -1);
	assert_non_null(strstr(err.buf, "cannot write"));
	rmdir(dir);
	buf_release(&direct);
	buf_release(&back);
	buf_release(&err);
	profile_release(&p);
}

static void test_clean_text(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	export_add_clean(&b, "ok \xc3\xa9 \xff \xe2\x82 \x01 \xf0\x9f\x98\x80 \xed\xa0\x80");
	assert_string_equal(b.buf, "ok \xc3\xa9 ? ?? ? \xf0\x9f\x98\x80 ???");
	buf_reset(&b);
	export_add_xml(&b, "<a href=\"x\">&'");
	assert_string_equal(b.buf, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
	buf_reset(&b);
	export_add_us(&b, 1234567);
	assert_string_equal(b.buf, "1234.567");
	buf_release(&b);
}

static void test_pick_run_takes_the_median(void **state)
{
	struct profile p;
	struct export_opts o = EXPORT_OPTS_INIT;
	struct buf err = BUF_INIT;
	int64_t totals[] = { 30, 10, 20, 1 }, walls[] = { 200, 100, 300, 50 };
	size_t i;

	(void)state;
	profile_init(&p);
	for (i = 0; i < ARRAY_SIZE(totals); i++) {
		struct run *r = profile_add_run(&p);

		add(run_add_proc(r), -1, "m", totals[i], totals[i]);
		r->wall_us = walls[i];
		r->warmup = i == 3;
	}
	/* The run the text report shows, the median by wall time, not the median import total (run 3). */
	assert_ptr_equal(export_pick_run(&p, &o, &err), &p.runs[0]);
	assert_ptr_equal(export_pick_run(&p, &o, &err), &p.runs[profile_median_run(&p)]);
	/* When the report's run holds no process: the median import total of the others (10 and 20: the lower). */
	p.runs[0].nr_procs = 0;
	assert_ptr_equal(export_pick_run(&p, &o, &err), &p.runs[1]);
	p.runs[0].nr_procs = 1;
	o.run = 3;
	assert_ptr_equal(export_pick_run(&p, &o, &err), &p.runs[3]);
	o.run = 4;
	assert_null(export_pick_run(&p, &o, &err));
	assert_string_equal(err.buf, "run 5 does not exist (the profile holds 4)");
	buf_release(&err);
	profile_release(&p);
}

static void test_median_and_mad(void **state)
{
	int64_t v[] = { 5, 1, 100, 3, 2 }, w[] = { 4, 2 };

	(void)state;
	assert_int_equal(diff_median(v, 5), 3);
	assert_int_equal(diff_mad(v, 5, 3), 2); /* |dev| = 0 1 2 2 97 */
	assert_int_equal(diff_median(w, 2), 3);
	assert_int_equal(diff_median(w, 0), 0);
	assert_int_equal(diff_mad(w, 1, 4), 0);
}

/* n runs; extra_us goes to "slow" in every run, jitter to "steady". */
static void make_runs(struct profile *p, size_t n, int64_t extra_us, int64_t jitter, bool with_new)
{
	size_t i;

	profile_init(p);
	for (i = 0; i < n; i++) {
		struct proc *pr = run_add_proc(profile_add_run(p));
		int64_t j = (int64_t)((i * 7919) % 5) * jitter / 4;
		int32_t app = add(pr, -1, "app", 100, 100 + 2000 + j + 3000 + extra_us);

		add(pr, app, "steady", 2000 + j, 2000 + j);
		add(pr, app, "slow", 3000 + extra_us, 3000 + extra_us);
		if (with_new)
			add(pr, -1, "newdep", 5000, 5000);
		else
			add(pr, -1, "olddep", 50, 50);
	}
}

static void test_diff_flags_only_real_changes(void **state)
{
	struct profile a, b;
	struct diff d = DIFF_INIT;
	struct buf err = BUF_INIT, report = BUF_INIT;
	const struct diff_entry *e;

	(void)state;
	make_runs(&a, 5, 0, 800, false);
	make_runs(&b, 5, 20000, 800, true);
	assert_int_equal(diff_compute(&d, &a, &b, DIFF_MIN_DELTA_US, &err), 0);
	e = diff_find(&d, "slow");
	assert_non_null(e);
	assert_true(e->flagged && e->delta_us == 20000 && e->superiority == 1.0);
	e = diff_find(&d, "steady");
	assert_true(!e->flagged && e->delta_us == 0);
	e = diff_find(&d, "newdep");
	assert_true(e->added && e->flagged);
	e = diff_find(&d, "olddep");
	assert_true(e->removed && !e->flagged); /* 50 us is below --min-delta */
	assert_null(diff_find(&d, "absent"));
	assert_true(d.total_flagged);
	assert_int_equal(diff_regressions(&d), 3); /* total, slow, newdep */
	diff_report(&d, "a.json", "b.json", 0, &report);
	assert_non_null(strstr(report.buf, "slower (flagged) (1):"));
	assert_non_null(strstr(report.buf, "3 regressions flagged"));
	diff_release(&d);
	profile_release(&b);

	/* The same profile against itself: nothing. */
	d = (struct diff)DIFF_INIT;
	assert_int_equal(diff_compute(&d, &a, &a, DIFF_MIN_DELTA_US, &err), 0);
	assert_int_equal(diff_regressions(&d), 0);
	diff_release(&d);
	profile_release(&a);

	/* No runs: an error, not a crash. */
	profile_init(&a);
	d = (struct diff)DIFF_INIT;
	assert_int_equal(diff_compute(&d, &a, &a, DIFF_MIN_DELTA_US, &err), -1);
	assert_non_null(strstr(err.buf, "no run"));
	diff_release(&d);
	profile_release(&a);
	buf_release(&err);
	buf_release(&report);
}

/*
 * A new subtree of small modules, none flagged on its own (every self time
 * under the threshold), is drawn solid red in the diff flamegraph, as
 * docs/diff-check.md says; a module within the noise stays grey.
 */
static void test_diff_flamegraph_new_modules_red(void **state)
{
	struct profile a, b;
	struct diff d = DIFF_INIT;
	struct buf err = BUF_INIT, svg = BUF_INIT;
	struct export_opts o = EXPORT_OPTS_INIT;
	const char *at;
	size_t i;

	(void)state;
	make_runs(&a, 5, 0, 800, false);
	make_runs(&b, 5, 0, 800, false);
	for (i = 0; i < b.nr_runs; i++) {
		struct proc *pr = &b.runs[i].procs[0];
		int32_t root = add(pr, -1, "newpkg", 300, 900);

		add(pr, root, "newpkg.a", 300, 300);
		add(pr, root, "newpkg.b", 300, 300);
	}
	assert_int_equal(diff_compute(&d, &a, &b, DIFF_MIN_DELTA_US, &err), 0);
	assert_true(diff_find(&d, "newpkg.a")->added && !diff_find(&d, "newpkg.a")->flagged);
	o.diff = &d;
	assert_int_equal(export_svg(&b, &o, &svg, &err), 0);
	at = strstr(svg.buf, "newpkg.a (");
	assert_non_null(at);
	/* The frame's rectangle comes after its tooltip, within its group. */
	assert_non_null(strstr(at, "rgb(215,30,30)"));
	assert_true(strstr(at, "rgb(215,30,30)") < strstr(at, "</g>"));
	at = strstr(svg.buf, "steady (");
	assert_non_null(at);
	assert_true(!strstr(at, "rgb(215,30,30)") || strstr(at, "</g>") < strstr(at, "rgb(215,30,30)"));
	assert_non_null(strstr(svg.buf, ">new module</text>"));
	diff_release(&d);
	profile_release(&a);
	profile_release(&b);
	buf_release(&err);
	buf_release(&svg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_nests_when_children_exceed_parent),
		cmocka_unit_test(test_diff_flamegraph_new_modules_red),
		cmocka_unit_test(test_layout_clamps_contradicting_timestamps),
		cmocka_unit_test(test_layout_untimed_parent_ends_with_timed_children),
		cmocka_unit_test(test_walk_is_the_profiles),
		cmocka_unit_test(test_cpu_limit_weighs_by_cpu),
		cmocka_unit_test(test_folded_weights_are_self),
		cmocka_unit_test(test_speedscope_events_balance),
		cmocka_unit_test(test_chrome_events_nest),
		cmocka_unit_test(test_svg_leaves_out_subpixel_frames),
		cmocka_unit_test(test_table_and_names),
		cmocka_unit_test(test_export_to_path_gzip_and_plain),
		cmocka_unit_test(test_clean_text),
		cmocka_unit_test(test_pick_run_takes_the_median),
		cmocka_unit_test(test_median_and_mad),
		cmocka_unit_test(test_diff_flags_only_real_changes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
