/*
 * Unit tests of `coldstart why`'s analysis (why.c) over import trees built
 * in memory: what each importer's statement did given where it sits and when
 * its module ran, the recorded loads and repeats, and what would go away.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/profile.h"
#include "tree.h"
#include "util.h"
#include "analysis/why.h"

static const struct why_importer *importer(const struct why_answer *a, int32_t node)
{
	size_t i;

	for (i = 0; i < a->nr_importers; i++)
		if (a->importers[i].node == node)
			return &a->importers[i];
	return NULL;
}

static bool gone(const struct why_answer *a, int32_t node)
{
	size_t i;

	for (i = 0; i < a->nr_gone; i++)
		if (a->gone[i] == node)
			return true;
	return false;
}

static const struct why_kept *kept(const struct why_answer *a, int32_t node)
{
	size_t i;

	for (i = 0; i < a->nr_kept; i++)
		if (a->kept[i].node == node)
			return &a->kept[i];
	return NULL;
}

/*
 * The tree, in import order:
 *   early          (finished before m loaded; a module-level `if` imports m)
 *   app
 *     pkg
 *       m          (loaded by pkg: 100 us self, 400 cumulative)
 *         m.sub
 *         only     (only m imports it)
 *         shared   (b imports it too)
 *         circ     (imports m at module level while m is loading)
 *     b            (imports m and shared at module level)
 *     lazy         (imports m and only in a function)
 *     typed        (imports m under TYPE_CHECKING)
 */
struct fixture {
	struct proc pr;
	int32_t early, app, pkg, m, sub, only, shared, circ, b, lazy, typed;
};

static void build(struct fixture *f)
{
	proc_init(&f->pr);
	f->early = add(&f->pr, -1, "early", 50, 50);
	f->app = add(&f->pr, -1, "app", 10, 700);
	f->pkg = add(&f->pr, f->app, "pkg", 20, 420);
	f->m = add(&f->pr, f->pkg, "m", 100, 400);
	f->sub = add(&f->pr, f->m, "m.sub", 30, 30);
	f->only = add(&f->pr, f->m, "only", 70, 70);
	f->shared = add(&f->pr, f->m, "shared", 150, 150);
	f->circ = add(&f->pr, f->m, "circ", 50, 50);
	f->b = add(&f->pr, f->app, "b", 40, 40);
	f->lazy = add(&f->pr, f->app, "lazy", 5, 5);
	f->typed = add(&f->pr, f->app, "typed", 5, 5);
}

static void statements(struct fixture *f, struct why_graph *g)
{
	why_graph_init(g, &f->pr);
	why_graph_add_import(g, f->early, "m", NULL, 3, WHY_COND, WHY_VIA_STMT);
	why_graph_add_import(g, f->pkg, "m", NULL, 1, WHY_BODY, WHY_VIA_STMT);
	why_graph_add_import(g, f->circ, "m", "thing", 2, WHY_BODY, WHY_VIA_STMT);
	why_graph_add_import(g, f->b, "m", NULL, 1, WHY_BODY, WHY_VIA_STMT);
	why_graph_add_import(g, f->b, "shared", NULL, 2, WHY_BODY, WHY_VIA_STMT);
	why_graph_add_import(g, f->lazy, "m", NULL, 10, WHY_FUNC, WHY_VIA_STMT);
	why_graph_add_import(g, f->lazy, "only", NULL, 11, WHY_FUNC, WHY_VIA_STMT);
	why_graph_add_import(g, f->typed, "m", NULL, 4, WHY_TYPING, WHY_VIA_STMT);
	/* Inside the package: not an importer of m. */
	why_graph_add_import(g, f->sub, "m", NULL, 1, WHY_BODY, WHY_VIA_STMT);
}

static void test_importers(void **state)
{
	struct fixture f;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };
	const struct why_importer *im;

	build(&f);
	statements(&f, &g);
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	assert_int_equal(a.module, f.m);
	assert_int_equal(a.nr_loads, 2); /* m and m.sub */
	assert_int_equal(a.nr_importers, 6);
	assert_null(importer(&a, f.sub));

	im = importer(&a, f.pkg);
	assert_non_null(im);
	assert_int_equal(im->status, WHY_LOADED);
	assert_int_equal(im->cost_us, 400);
	assert_int_equal(im->loaded, f.m);
	/* The loader comes first, its line before the tree edge it explains. */
	assert_ptr_equal(im, &a.importers[0]);
	assert_int_equal(a.stmts[im->first].via, WHY_VIA_STMT);
	assert_int_equal(a.stmts[im->first].line, 1);

	assert_int_equal(importer(&a, f.b)->status, WHY_FOUND_LOADED);
	assert_int_equal(importer(&a, f.b)->cost_us, 0);
	assert_int_equal(importer(&a, f.circ)->status, WHY_CIRCULAR);
	assert_int_equal(importer(&a, f.early)->status, WHY_NOT_RUN);
	assert_int_equal(importer(&a, f.lazy)->status, WHY_IN_FUNCTION);
	assert_int_equal(importer(&a, f.typed)->status, WHY_NEVER);
	/* Sorted by status, then import order. */
	assert_int_equal(a.importers[1].node, f.b);
	assert_int_equal(a.importers[a.nr_importers - 1].node, f.typed);
	why_answer_release(&a);
	why_graph_release(&g);
	proc_release(&f.pr);
}

static void test_go_away(void **state)
{
	struct fixture f;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };
	const struct why_kept *k;

	build(&f);
	statements(&f, &g);
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	/* m, m.sub, only and circ go; shared stays for b. */
	assert_int_equal(a.nr_gone, 4);
	assert_true(gone(&a, f.m));
	assert_true(gone(&a, f.sub));
	assert_true(gone(&a, f.only));
	assert_true(gone(&a, f.circ));
	assert_false(gone(&a, f.shared));
	assert_false(gone(&a, f.b));
	assert_int_equal(a.gone_self_us, 100 + 30 + 70 + 50);
	/* By self time, largest first. */
	assert_int_equal(a.gone[0], f.m);
	k = kept(&a, f.shared);
	assert_non_null(k);
	assert_int_equal(k->by, f.b);
	assert_int_equal(k->how.line, 2);
	assert_int_equal(a.nr_kept, 1);
	assert_int_equal(a.import_total_us, 750);
	why_answer_release(&a);

	/* With imports in functions counted, lazy keeps only. */
	o.functions_run = true;
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	assert_false(gone(&a, f.only));
	assert_int_equal(kept(&a, f.only)->by, f.lazy);
	assert_int_equal(a.nr_gone, 3);
	why_answer_release(&a);
	why_graph_release(&g);
	proc_release(&f.pr);
}

/* The early module's `if` did not run (its body ended before the load): it keeps nothing. */
static void test_not_run_keeps_nothing(void **state)
{
	struct fixture f;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };

	build(&f);
	statements(&f, &g);
	why_graph_add_import(&g, f.early, "only", NULL, 5, WHY_COND, WHY_VIA_STMT);
	/* The same line in a module that ran after it does keep it. */
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	assert_true(gone(&a, f.only));
	why_answer_release(&a);
	why_graph_add_import(&g, f.typed, "only", NULL, 5, WHY_COND, WHY_VIA_STMT);
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	assert_false(gone(&a, f.only));
	assert_int_equal(kept(&a, f.only)->by, f.typed);
	why_answer_release(&a);
	why_graph_release(&g);
	proc_release(&f.pr);
}

/* Without any statement (no source read) the tree alone answers. */
static void test_tree_only(void **state)
{
	struct fixture f;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };

	build(&f);
	why_graph_init(&g, &f.pr);
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	assert_int_equal(a.nr_importers, 1);
	assert_int_equal(a.importers[0].node, f.pkg);
	assert_int_equal(a.importers[0].status, WHY_LOADED);
	assert_int_equal(a.stmts[0].via, WHY_VIA_TREE);
	/* Everything beneath m goes: nothing says b imports shared. */
	assert_int_equal(a.nr_gone, 5);
	assert_int_equal(a.gone_self_us, 400);
	assert_int_equal(a.nr_kept, 0);
	why_answer_release(&a);
	why_graph_release(&g);
	proc_release(&f.pr);
}

static void test_unknown_module(void **state)
{
	struct fixture f;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };

	build(&f);
	statements(&f, &g);
	assert_int_equal(why_answer(&g, "nothere", &o, &a), -1);
	assert_int_equal(a.nr_importers, 0);
	assert_null(a.importers);
	/* A prefix of a name is not the module. */
	assert_int_equal(why_answer(&g, "sh", &o, &a), -1);
	why_graph_release(&g);
	proc_release(&f.pr);
}

/* Named in a statement but not loaded: not run here, or inherited from the parent at a fork. */
static void test_named_not_loaded(void **state)
{
	struct fixture f;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };

	build(&f);
	statements(&f, &g);
	why_graph_add_import(&g, f.b, "ghost", NULL, 7, WHY_BODY, WHY_VIA_STMT);
	why_graph_add_import(&g, f.lazy, "ghost.part", NULL, 12, WHY_FUNC, WHY_VIA_STMT);
	assert_int_equal(why_answer(&g, "ghost", &o, &a), 0);
	assert_int_equal(a.module, -1);
	assert_int_equal(a.nr_loads, 0);
	assert_int_equal(a.nr_importers, 2);
	assert_int_equal(importer(&a, f.b)->status, WHY_NOT_RUN);
	assert_int_equal(importer(&a, f.lazy)->status, WHY_IN_FUNCTION);
	assert_int_equal(a.nr_gone, 0);
	why_answer_release(&a);
	o.inherited = true;
	assert_int_equal(why_answer(&g, "ghost", &o, &a), 0);
	assert_int_equal(importer(&a, f.b)->status, WHY_INHERITED);
	why_answer_release(&a);
	why_graph_release(&g);
	proc_release(&f.pr);
}

/* A submodule loaded later from outside the package is a load of its own, by its importer. */
static void test_submodule_loaded_elsewhere(void **state)
{
	struct fixture f;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };
	int32_t late, user, extra;
	const struct why_importer *im;

	build(&f);
	user = add(&f.pr, f.app, "user", 5, 65);
	late = add(&f.pr, user, "m.late", 20, 60);
	extra = add(&f.pr, late, "extra", 40, 40);
	statements(&f, &g);
	why_graph_add_import(&g, user, "m.late", NULL, 3, WHY_BODY, WHY_VIA_STMT);
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	assert_int_equal(a.nr_loads, 3);
	im = importer(&a, user);
	assert_non_null(im);
	assert_int_equal(im->status, WHY_LOADED);
	assert_int_equal(im->loaded, late);
	assert_int_equal(im->cost_us, 60);
	assert_int_equal(a.stmts[im->first].name ? strcmp(why_str(&g, a.stmts[im->first].name), "m.late") : 1, 0);
	assert_true(gone(&a, late));
	assert_true(gone(&a, extra));
	why_answer_release(&a);
	why_graph_release(&g);
	proc_release(&f.pr);
}

/* A kept submodule keeps its package. */
static void test_package_edge(void **state)
{
	struct proc pr;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };
	int32_t root, m, lib, libsub, other;

	proc_init(&pr);
	root = add(&pr, -1, "root", 1, 100);
	m = add(&pr, root, "m", 10, 60);
	lib = add(&pr, m, "lib", 20, 50);
	libsub = add(&pr, lib, "lib.sub", 30, 30);
	other = add(&pr, root, "other", 5, 5);
	why_graph_init(&g, &pr);
	why_graph_add_import(&g, other, "lib.sub", NULL, 1, WHY_BODY, WHY_VIA_STMT);
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	assert_int_equal(a.nr_gone, 1);
	assert_true(gone(&a, m));
	assert_int_equal(kept(&a, libsub)->by, other);
	assert_int_equal(kept(&a, lib)->by, libsub);
	assert_int_equal(kept(&a, lib)->how.via, WHY_VIA_STMT);
	assert_int_equal(kept(&a, lib)->how.line, 0);
	why_answer_release(&a);
	why_graph_release(&g);
	proc_release(&pr);
}

/*
 * Repeats of a loaded import in the tree (a 3.14 cached row; the tracer's
 * node of an import_module() call for a loaded module) are importers that
 * found it loaded, and neither loads nor candidates to go.
 */
static void test_recorded_again(void **state)
{
	struct fixture f;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };
	int32_t user, cached, user2, again, inner;

	build(&f);
	user = add(&f.pr, f.app, "user", 5, 5);
	cached = add(&f.pr, user, "m", 0, 0);
	f.pr.nodes[cached].flags |= NODE_CACHED;
	inner = add(&f.pr, f.circ, "m", 0, 0);
	f.pr.nodes[inner].flags |= NODE_CACHED;
	user2 = add(&f.pr, f.app, "user2", 5, 15);
	again = add(&f.pr, user2, "m", 10, 10);
	f.pr.nodes[again].flags |= NODE_TRACE_ONLY;
	proc_ensure_timing(&f.pr);
	why_graph_init(&g, &f.pr);
	assert_true(g.again[cached]);
	assert_true(g.again[again]);
	assert_false(g.again[f.m]);
	assert_int_equal(why_graph_find(&g, "m"), f.m);
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	assert_int_equal(a.nr_loads, 2);
	assert_int_equal(importer(&a, user)->status, WHY_FOUND_LOADED);
	assert_int_equal(a.stmts[importer(&a, user)->first].via, WHY_VIA_AGAIN);
	assert_int_equal(importer(&a, user2)->status, WHY_FOUND_LOADED);
	/* A repeat inside the module's own import met it still loading. */
	assert_int_equal(importer(&a, f.circ)->status, WHY_CIRCULAR);
	assert_false(gone(&a, cached));
	assert_false(gone(&a, again));
	why_answer_release(&a);
	why_graph_release(&g);

	/* A tracer-only node with a file of its own is a load (a module imported anew), not a repeat. */
	f.pr.timing[again].file = proc_intern(&f.pr, "/x/m.py", 7);
	why_graph_init(&g, &f.pr);
	assert_false(g.again[again]);
	why_graph_release(&g);
	proc_release(&f.pr);
}

/* The main script: its statements come from the top level, the roots it imported are its loads. */
static void test_main_script(void **state)
{
	struct proc pr;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };
	int32_t site, first, m, dep;

	proc_init(&pr);
	site = add(&pr, -1, "site", 5, 5);
	pr.nodes[site].flags |= NODE_STARTUP;
	first = add(&pr, -1, "first", 5, 30);
	dep = add(&pr, first, "dep", 25, 25);
	m = add(&pr, -1, "m", 10, 10);
	why_graph_init(&g, &pr);
	why_graph_add_import(&g, WHY_TOP, "first", NULL, 1, WHY_BODY, WHY_VIA_STMT);
	why_graph_add_import(&g, WHY_TOP, "m", NULL, 2, WHY_FUNC, WHY_VIA_STMT);
	why_graph_add_import(&g, WHY_TOP, "dep", NULL, 3, WHY_BODY, WHY_VIA_STMT);
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	assert_int_equal(a.nr_importers, 1);
	assert_int_equal(a.importers[0].node, WHY_TOP);
	assert_int_equal(a.importers[0].status, WHY_LOADED);
	assert_int_equal(a.importers[0].loaded, m);
	why_answer_release(&a);
	assert_int_equal(why_answer(&g, "dep", &o, &a), 0);
	assert_int_equal(importer(&a, WHY_TOP)->status, WHY_FOUND_LOADED);
	assert_int_equal(importer(&a, first)->status, WHY_LOADED);
	assert_int_equal(importer(&a, first)->loaded, dep);
	assert_int_equal(a.nr_gone, 1);
	why_answer_release(&a);
	/* __main__ imports dep itself: without first, dep stays. */
	assert_int_equal(why_answer(&g, "first", &o, &a), 0);
	assert_int_equal(a.nr_gone, 1);
	assert_true(gone(&a, first));
	assert_int_equal(kept(&a, dep)->by, WHY_TOP);
	assert_int_equal(kept(&a, dep)->how.line, 3);
	why_answer_release(&a);
	why_graph_release(&g);
	proc_release(&pr);
}

static void test_add_import_resolution(void **state)
{
	struct proc pr;
	struct why_graph g;
	int32_t a, ab, root;

	proc_init(&pr);
	root = add(&pr, -1, "root", 1, 1);
	a = add(&pr, -1, "a", 1, 1);
	ab = add(&pr, a, "a.b", 1, 1);
	why_graph_init(&g, &pr);
	/* from a import b, x: b is a loaded submodule, x an attribute. */
	why_graph_add_import(&g, root, "a", "b,x", 1, WHY_BODY, WHY_VIA_STMT);
	assert_int_equal(g.nr_stmts, 1);
	assert_int_equal(g.stmts[0].target, ab);
	assert_string_equal(why_str(&g, g.stmts[0].name), "a.b");
	/* from a import x, y: no submodule, the package itself. */
	why_graph_add_import(&g, root, "a", "x,y", 2, WHY_BODY, WHY_VIA_STMT);
	assert_int_equal(g.nr_stmts, 2);
	assert_int_equal(g.stmts[1].target, a);
	/* import a.b.c with a.b.c not loaded: the deepest loaded prefix, the name as written. */
	why_graph_add_import(&g, root, "a.b.c", NULL, 3, WHY_COND, WHY_VIA_CALL);
	assert_int_equal(g.stmts[2].target, ab);
	assert_string_equal(why_str(&g, g.stmts[2].name), "a.b.c");
	assert_int_equal(g.stmts[2].ctx, WHY_COND);
	assert_int_equal(g.stmts[2].via, WHY_VIA_CALL);
	/* Nothing of it loaded. */
	why_graph_add_import(&g, root, "zz.top", "*", 4, WHY_BODY, WHY_VIA_STMT);
	assert_int_equal(g.stmts[3].target, -1);
	/* An empty base (a relative import beyond the top) adds nothing; a computed call has no target. */
	why_graph_add_import(&g, root, "", NULL, 5, WHY_BODY, WHY_VIA_STMT);
	assert_int_equal(g.nr_stmts, 4);
	why_graph_add_computed(&g, root, 6, WHY_BODY);
	assert_int_equal(g.stmts[4].target, -1);
	assert_int_equal(why_graph_computed(&g, root)->line, 6);
	assert_null(why_graph_computed(&g, a));
	why_graph_release(&g);
	proc_release(&pr);
}

/* The name index skips failed imports: a later successful load is the module. */
static void test_failed_then_loaded(void **state)
{
	struct proc pr;
	struct why_graph g;
	struct why_answer a;
	struct why_opts o = { 0 };
	int32_t root, bad, good;

	proc_init(&pr);
	root = add(&pr, -1, "root", 1, 100);
	bad = add(&pr, root, "m", 5, 5);
	pr.nodes[bad].flags |= NODE_FAILED;
	good = add(&pr, root, "m", 50, 50);
	why_graph_init(&g, &pr);
	assert_int_equal(why_graph_find(&g, "m"), good);
	assert_int_equal(why_answer(&g, "m", &o, &a), 0);
	assert_int_equal(a.nr_loads, 1);
	assert_int_equal(a.nr_failed, 1);
	assert_int_equal(a.module, good);
	/* The failed attempt goes too, with its time. */
	assert_true(gone(&a, bad));
	assert_int_equal(a.gone_self_us, 55);
	why_answer_release(&a);
	why_graph_release(&g);
	proc_release(&pr);
}

static void test_names(void **state)
{
	assert_true(why_in_package("a", "a"));
	assert_true(why_in_package("a.b", "a"));
	assert_false(why_in_package("ab", "a"));
	assert_false(why_in_package("a", "a.b"));
	assert_int_equal(why_ctx_from_name("typing"), WHY_TYPING);
	assert_int_equal(why_ctx_from_name("main"), WHY_MAIN_GUARD);
	assert_int_equal(why_ctx_from_name("nonsense"), -1);
	assert_string_equal(why_status_name(WHY_FOUND_LOADED), "found-loaded");
	assert_string_equal(why_via_name(WHY_VIA_AGAIN), "recorded-again");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_importers),
		cmocka_unit_test(test_go_away),
		cmocka_unit_test(test_not_run_keeps_nothing),
		cmocka_unit_test(test_tree_only),
		cmocka_unit_test(test_unknown_module),
		cmocka_unit_test(test_named_not_loaded),
		cmocka_unit_test(test_submodule_loaded_elsewhere),
		cmocka_unit_test(test_package_edge),
		cmocka_unit_test(test_recorded_again),
		cmocka_unit_test(test_main_script),
		cmocka_unit_test(test_add_import_resolution),
		cmocka_unit_test(test_failed_then_loaded),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
