// corpus: tests/fixtures/profile
/*
 * libFuzzer target for the profile JSON reader and everything a read profile
 * goes through: the text report (with trees), every exporter, diff (against
 * itself and a real profile, both ways, with its flame graph), the budget
 * gate, the analysis, and JSON again.  Any input gives a profile or an
 * error message; what the writer writes must read back and be stable once
 * read; JSON and SVG outputs must be valid UTF-8.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyze.h"
#include "analysis/budget.h"
#include "analysis/diff.h"
#include "render/export/export.h"
#include "render/export/formats.h"
#include "fuzz_check.h"
#include "model/profile.h"
#include "render/report.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct profile base;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct buf err = BUF_INIT;

	(void)argc;
	(void)argv;
	setenv("COLDSTART_THREADS", "1", 1);
	profile_init(&base);
	if (profile_read_json(&base, "tests/fixtures/profile/sidefx.json", &err) < 0) {
		fprintf(stderr, "fuzz_profile_json: %s (run from the repository root)\n", err.buf);
		exit(1);
	}
	return 0;
}

static void exports(const struct profile *p)
{
	size_t nr, i, k;
	const struct exporter *e = exporter_list(&nr);

	for (i = 0; i < nr; i++)
		for (k = 0; k < 2; k++) {
			struct export_opts o = EXPORT_OPTS_INIT;
			struct buf out = BUF_INIT, err = BUF_INIT;

			o.all_procs = k;
			o.icicle = k;
			if (e[i].write(p, &o, &out, &err) < 0) {
				if (!err.len)
					abort();
			} else if (strcmp(e[i].name, "folded") && !e[i].binary) {
				check_utf8(&out);
			}
			buf_release(&out);
			buf_release(&err);
		}
}

/*
 * The diff's own output, B's flame graph coloured by d.  The plain exports of
 * B are not repeated here: B is the input (exported once already) or the
 * fixed base, and rendering every format of them again for each diff took
 * most of the time of an input.
 */
static void diff_svg(const struct profile *b, const struct diff *d)
{
	struct export_opts o = EXPORT_OPTS_INIT;
	struct buf out = BUF_INIT, err = BUF_INIT;

	o.diff = d;
	if (export_svg(b, &o, &out, &err) == 0)
		check_utf8(&out);
	else if (!err.len)
		abort();
	buf_release(&out);
	buf_release(&err);
}

static void diff_with(const struct profile *a, const struct profile *b)
{
	struct diff d = DIFF_INIT;
	struct buf err = BUF_INIT, out = BUF_INIT;

	if (diff_compute(&d, a, b, 1000, &err) == 0) {
		diff_report(&d, "a", "b", 5, &out);
		diff_regressions(&d);
		diff_svg(b, &d);
	} else if (!err.len) {
		abort();
	}
	diff_release(&d);
	buf_release(&err);
	buf_release(&out);
}

static void gate(const struct profile *p)
{
	static const char *const specs[] = { "total=1ms", "target=1s", "startup=0us", "json=5ms", "app=1us" };
	struct budget b;
	struct buf err = BUF_INIT, explain = BUF_INIT;
	size_t i;

	budget_init(&b);
	for (i = 0; i < ARRAY_SIZE(specs); i++)
		if (budget_add(&b, specs[i], &err) < 0)
			abort();
	budget_forbid(&b, "xml");
	budget_check(p, &b, &explain);
	budget_release(&b);
	buf_release(&err);
	buf_release(&explain);
}

static void render(const struct profile *p)
{
	struct report_opts o;
	struct buf out = BUF_INIT;

	report_opts_init(&o);
	report_render(p, &o, &out);
	buf_reset(&out);
	o.tree = true;
	o.all_processes = true;
	o.color = true;
	o.threshold_us = 1;
	report_render(p, &o, &out);
	buf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile p;
	struct buf err = BUF_INIT;

	profile_init(&p);
	if (profile_from_json(&p, (const char *)data, size, &err) < 0) {
		if (!err.len)
			abort();
		goto out;
	}
	render(&p);
	exports(&p);
	diff_with(&p, &p);
	diff_with(&base, &p);
	diff_with(&p, &base);
	gate(&p);
	check_round_trip(&p);
	/* What a fresh measurement does to it: classification, findings. */
	profile_analyze_offline(&p, NULL);
	render(&p);
	check_round_trip(&p);
out:
	profile_release(&p);
	buf_release(&err);
	return 0;
}
