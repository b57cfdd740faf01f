/*
 * `coldstart diff` for CI: the report as Markdown (a pull-request comment or
 * GitHub's job summary) and as GitHub annotations (see diff.h).
 */
#include "analysis/diff.h"

#include <stdlib.h>

#include "render/ci_format.h"

static void add_signed(struct buf *out, int64_t us)
{
	if (us > 0)
		buf_addch(out, '+');
	buf_add_duration(out, us);
}

static const char *const list_title[] = {
	[DIFF_SLOWER] = "Slower (flagged)",
	[DIFF_FASTER] = "Faster (flagged)",
	[DIFF_NEW] = "New modules",
	[DIFF_REMOVED] = "Removed modules",
};

static void md_list(const struct diff *d, enum diff_list which, size_t top, struct buf *out)
{
	size_t n, i;
	const struct diff_entry **v = diff_select(d, which, &n);

	if (!n) {
		free(v);
		return;
	}
	buf_addf(out, "\n#### %s (%zu)\n\n", list_title[which], n);
	if (which == DIFF_NEW || which == DIFF_REMOVED)
		buf_adds(out, "| module | cumulative | self |\n|---|---:|---:|\n");
	else
		buf_adds(out, "| module | self change | self | cumulative change | threshold |\n"
			      "|---|---:|---:|---:|---:|\n");
	for (i = 0; i < n && (!top || i < top); i++) {
		const struct diff_entry *e = v[i];

		buf_adds(out, "| `");
		ci_md_cell(out, e->name);
		buf_adds(out, "` | ");
		if (which == DIFF_NEW || which == DIFF_REMOVED) {
			add_signed(out, which == DIFF_NEW ? e->b_cum_us : i64_neg(e->a_cum_us));
			buf_adds(out, " | ");
			buf_add_duration(out, which == DIFF_NEW ? e->b_self_us : e->a_self_us);
			buf_adds(out, e->flagged ? " (flagged) |\n" : " |\n");
			continue;
		}
		add_signed(out, e->delta_us);
		buf_adds(out, " | ");
		buf_add_duration(out, e->a_self_us);
		buf_adds(out, " → ");
		buf_add_duration(out, e->b_self_us);
		buf_adds(out, " | ");
		add_signed(out, e->cum_delta_us);
		buf_adds(out, " | ");
		buf_add_duration(out, e->threshold_us);
		buf_adds(out, " |\n");
	}
	if (top && n > top)
		buf_addf(out, "\n%zu more (`--top 0` shows all).\n", n - top);
	free(v);
}

void diff_report_markdown(const struct diff *d, const char *a_name, const char *b_name, size_t top,
			  const struct strvec *mismatches, struct buf *out)
{
	size_t regressions = diff_regressions(d), quiet, i;
	const struct diff_entry **q = diff_select(d, DIFF_QUIET, &quiet);

	free(q);
	buf_addf(out, "### coldstart diff: %zu regression%s flagged\n\n", regressions, regressions == 1 ? "" : "s");
	buf_adds(out, "`");
	ci_md_cell(out, a_name);
	buf_addf(out, "` (%zu run%s) → `", d->a_runs, d->a_runs == 1 ? "" : "s");
	ci_md_cell(out, b_name);
	buf_addf(out, "` (%zu run%s)\n", d->b_runs, d->b_runs == 1 ? "" : "s");
	for (i = 0; i < mismatches->nr; i++)
		buf_addf(out, "\n> **Warning:** %s; the comparison is not like for like.\n", mismatches->v[i]);
	buf_adds(out, "\n| | A | B | change | verdict |\n|---|---:|---:|---:|---|\n| import total | ");
	buf_add_duration(out, d->a_total_us);
	buf_adds(out, " | ");
	buf_add_duration(out, d->b_total_us);
	buf_adds(out, " | ");
	add_signed(out, i64_sub(d->b_total_us, d->a_total_us));
	buf_adds(out, " | ");
	if (d->total_flagged)
		buf_adds(out, d->b_total_us > d->a_total_us ? "**regression**" : "improvement");
	else
		buf_adds(out, "within noise (threshold ");
	if (!d->total_flagged) {
		buf_add_duration(out, d->total_threshold_us);
		buf_addch(out, ')');
	}
	buf_adds(out, " |\n");
	if (d->a_wall_us != UNKNOWN && d->b_wall_us != UNKNOWN) {
		buf_adds(out, "| wall time | ");
		buf_add_duration(out, d->a_wall_us);
		buf_adds(out, " | ");
		buf_add_duration(out, d->b_wall_us);
		buf_adds(out, " | ");
		add_signed(out, i64_sub(d->b_wall_us, d->a_wall_us));
		buf_adds(out, " | not judged |\n");
	}
	md_list(d, DIFF_SLOWER, top, out);
	md_list(d, DIFF_FASTER, top, out);
	md_list(d, DIFF_NEW, top, out);
	md_list(d, DIFF_REMOVED, top, out);
	if (quiet)
		buf_addf(out, "\n%zu other module%s changed within the noise threshold.\n", quiet,
			 quiet == 1 ? "" : "s");
}

void diff_report_github(const struct diff *d, const char *b_name, size_t top, const struct strvec *mismatches,
			struct buf *out)
{
	struct buf title = BUF_INIT, msg = BUF_INIT;
	size_t i, n, regressions = diff_regressions(d);
	const struct diff_entry **v;

	for (i = 0; i < mismatches->nr; i++)
		ci_annotation(out, "warning", "coldstart diff: not like for like", mismatches->v[i]);
	if (d->total_flagged && d->b_total_us > d->a_total_us) {
		buf_adds(&msg, "import total ");
		buf_add_duration(&msg, d->a_total_us);
		buf_adds(&msg, " -> ");
		buf_add_duration(&msg, d->b_total_us);
		buf_adds(&msg, " (");
		add_signed(&msg, i64_sub(d->b_total_us, d->a_total_us));
		buf_addf(&msg, ") in %s", b_name);
		ci_annotation(out, "error", "coldstart diff: import total regressed", msg.buf);
	}
	v = diff_select(d, DIFF_SLOWER, &n);
	for (i = 0; i < n && (!top || i < top); i++) {
		buf_reset(&title);
		buf_reset(&msg);
		buf_addf(&title, "coldstart diff: %s slower", v[i]->name);
		buf_addf(&msg, "%s: self ", v[i]->name);
		buf_add_duration(&msg, v[i]->a_self_us);
		buf_adds(&msg, " -> ");
		buf_add_duration(&msg, v[i]->b_self_us);
		buf_adds(&msg, " (");
		add_signed(&msg, v[i]->delta_us);
		buf_adds(&msg, ", threshold ");
		buf_add_duration(&msg, v[i]->threshold_us);
		buf_adds(&msg, ")");
		ci_annotation(out, "error", title.buf, msg.buf);
	}
	free(v);
	v = diff_select(d, DIFF_NEW, &n);
	for (i = 0; i < n && (!top || i < top); i++) {
		buf_reset(&title);
		buf_reset(&msg);
		buf_addf(&title, "coldstart diff: %s is new", v[i]->name);
		buf_addf(&msg, "%s: new, cumulative ", v[i]->name);
		buf_add_duration(&msg, v[i]->b_cum_us);
		buf_adds(&msg, ", self ");
		buf_add_duration(&msg, v[i]->b_self_us);
		ci_annotation(out, v[i]->flagged ? "error" : "notice", title.buf, msg.buf);
	}
	free(v);
	buf_addf(out, "%zu regression%s flagged\n", regressions, regressions == 1 ? "" : "s");
	buf_release(&title);
	buf_release(&msg);
}
