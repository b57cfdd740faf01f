/*
 * The SVG flamegraph, drawn by coldstart itself: frame width is cumulative
 * import time, colour is the module's kind (or its change, in a diff), and a
 * small inline script adds hover details, click-to-zoom and search.
 */
#include "render/export/formats.h"
#include "render/export/frames.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/diff.h"

#define PAD 10
#define FRAME_H 16
#define HEADER_H 84
#define GRAPH_GAP 30
#define FOOTER_H 30
#define CHAR_W 7.0

struct graph {
	const struct proc *pr;
	size_t idx;
	int32_t *order, *parent, *depth;
	size_t n;
	int64_t *start, *end;
	unsigned char *drawn;
	int64_t extent;
	double scale;
	int maxdepth;
	size_t skipped;
};

struct rgb {
	int r, g, b;
};

static const struct {
	const char *label;
	struct rgb base, spread;
} kind_colours[KIND__COUNT] = {
	[KIND_STARTUP] = { "interpreter start-up", { 185, 185, 175 }, { 35, 35, 35 } },
	[KIND_STDLIB] = { "standard library", { 90, 145, 220 }, { 60, 50, 35 } },
	[KIND_THIRDPARTY] = { "third-party", { 228, 140, 40 }, { 27, 60, 40 } },
	[KIND_APP] = { "the app", { 80, 180, 75 }, { 50, 50, 40 } },
	[KIND_TOOL] = { "coldstart", { 165, 115, 205 }, { 40, 40, 40 } },
};

static unsigned name_hash(const char *s)
{
	unsigned h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int64_t nonneg_us(int64_t v)
{
	return v < 0 ? 0 : v;
}

static int clamp255(int v)
{
	return v < 0 ? 0 : v > 255 ? 255 : v;
}

static struct rgb kind_colour(unsigned kind, const char *name)
{
	struct rgb c = { 200, 200, 200 };
	double v = (double)(name_hash(name) % 1000) / 1000.0;

	if (kind < KIND__COUNT) {
		c.r = clamp255(kind_colours[kind].base.r + (int)(v * kind_colours[kind].spread.r));
		c.g = clamp255(kind_colours[kind].base.g + (int)(v * kind_colours[kind].spread.g));
		c.b = clamp255(kind_colours[kind].base.b + (int)(v * kind_colours[kind].spread.b));
	}
	return c;
}

/*
 * Solid red for a module new in this profile (flagged or not: a new subtree
 * of small modules is still new cost), red for slower, blue for faster, pale
 * grey for changes within the noise (docs/diff-check.md).
 */
static struct rgb diff_colour(const struct diff *d, const struct diff_entry *e)
{
	struct rgb c = { 228, 228, 228 };
	double t;
	int fade;

	if (e && e->added) {
		c.r = 215;
		c.g = 30;
		c.b = 30;
		return c;
	}
	if (!e || !e->flagged)
		return c;
	t = d->max_abs_delta_us > 0 ? (double)i64_abs(e->delta_us) / (double)d->max_abs_delta_us : 1.0;
	if (t > 1.0)
		t = 1.0;
	fade = (int)(205.0 - 175.0 * t);
	if (e->delta_us > 0) {
		c.r = 255;
		c.g = c.b = fade;
	} else {
		c.b = 255;
		c.r = c.g = fade;
	}
	return c;
}

static void graph_release(struct graph *g)
{
	free(g->order);
	free(g->parent);
	free(g->depth);
	free(g->start);
	free(g->end);
	free(g->drawn);
}

static void graph_prepare(struct graph *g, const struct proc *pr, size_t idx, double inner, double min_width)
{
	size_t k, nn = pr->nr_nodes ? pr->nr_nodes : 1;

	memset(g, 0, sizeof(*g));
	g->pr = pr;
	g->idx = idx;
	g->order = xmalloc(st_mult(nn, sizeof(*g->order)));
	g->parent = xmalloc(st_mult(nn, sizeof(*g->parent)));
	g->depth = xmalloc(st_mult(nn, sizeof(*g->depth)));
	g->start = xmalloc(st_mult(nn, sizeof(*g->start)));
	g->end = xmalloc(st_mult(nn, sizeof(*g->end)));
	g->drawn = xcalloc(nn, 1);
	g->extent = export_layout(pr, false, g->start, g->end);
	g->n = export_preorder(pr, g->order, g->parent);
	g->scale = g->extent > 0 ? inner / (double)g->extent : 0.0;
	/*
	 * Like flamegraph.pl's minwidth: a frame narrower than min_width px is
	 * not drawn, and neither is anything above it (its children are
	 * narrower still).  This keeps 5,000-module graphs light.
	 */
	for (k = 0; k < g->n; k++) {
		int32_t v = g->order[k], up = g->parent[v];
		double w = (double)(g->end[v] - g->start[v]) * g->scale;

		g->depth[v] = up >= 0 ? g->depth[up] + 1 : 1;
		if ((up >= 0 && !g->drawn[up]) || w < min_width) {
			g->skipped++;
			continue;
		}
		g->drawn[v] = 1;
		if (g->depth[v] > g->maxdepth)
			g->maxdepth = g->depth[v];
	}
}

static void add_label(struct buf *out, const char *name, double w)
{
	long chars = (long)((w - 6.0) / CHAR_W);
	size_t len = strlen(name);
	struct buf tmp = BUF_INIT;

	if (chars < 3)
		return;
	if ((long)len <= chars) {
		export_add_xml(out, name);
		return;
	}
	buf_add(&tmp, name, (size_t)chars - 2);
	buf_adds(&tmp, "..");
	export_add_xml(out, tmp.buf);
	buf_release(&tmp);
}

static void emit_frame(struct buf *out, const char *name, const char *tip, double x, double w, double y, int depth,
		       size_t gi, struct rgb c, bool root)
{
	buf_addf(out, "<g class=\"cs-f%s\" data-p=\"%zu\" data-d=\"%d\" data-n=\"", root ? " cs-root" : "", gi, depth);
	export_add_xml(out, name);
	buf_adds(out, "\"><title>");
	export_add_xml(out, tip);
	buf_addf(out,
		 "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
		 "fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>",
		 x, y, w, FRAME_H - 1, c.r, c.g, c.b);
	buf_addf(out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3.0, y + FRAME_H - 4.5);
	add_label(out, name, w);
	buf_adds(out, "</text></g>\n");
}

static void add_flags(struct buf *tip, uint32_t flags)
{
	static const struct {
		uint32_t flag;
		const char *word;
	} words[] = {
		{ NODE_FAILED, "failed" },	     { NODE_COMPILED, "compiled from source" },
		{ NODE_NATIVE, "native extension" }, { NODE_CACHED, "cached" },
		{ NODE_OPEN, "never finished" },     { NODE_INCONSISTENT, "inconsistent times" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(words); i++)
		if (flags & words[i].flag)
			buf_addf(tip, ", %s", words[i].word);
}

static void node_tip(const struct graph *g, int32_t v, const struct export_opts *o, struct buf *tip)
{
	const struct imp_node *nd = &g->pr->nodes[v];
	double pct = g->extent > 0 ? 100.0 * (double)(g->end[v] - g->start[v]) / (double)g->extent : 0;

	buf_addf(tip, "%s (%s): cumulative ", node_name(g->pr, v),
		 nd->kind < KIND__COUNT ? kind_colours[nd->kind].label : "unknown");
	buf_add_duration(tip, nonneg_us(nd->cum_us));
	buf_addf(tip, " (%.2f%%), self ", pct);
	buf_add_duration(tip, nonneg_us(nd->self_us));
	add_flags(tip, nd->flags);
	if (o->diff) {
		const struct diff_entry *e = diff_find(o->diff, node_name(g->pr, v));

		if (e && e->added) {
			buf_adds(tip, e->flagged ? "; new in this profile (flagged)" : "; new in this profile");
		} else if (e) {
			buf_adds(tip, "; self change ");
			if (e->delta_us > 0)
				buf_addch(tip, '+');
			buf_add_duration(tip, e->delta_us);
			buf_adds(tip, e->flagged ? " (flagged)" : " (within noise)");
		}
	}
}

static double emit_graph(struct buf *out, const struct graph *g, size_t gi, const struct export_opts *o, double top,
			 double inner)
{
	struct buf tip = BUF_INIT, label = BUF_INIT;
	int64_t total = proc_import_total_us(g->pr, true);
	double area = (double)(g->maxdepth + 1) * FRAME_H;
	struct rgb root_c = { 160, 160, 160 };
	size_t k;

	export_proc_label(g->pr, g->idx, &label);
	buf_addf(out, "<text class=\"cs-glabel\" x=\"%d\" y=\"%.1f\">", PAD, top + 12);
	export_add_xml(out, label.buf);
	buf_adds(&tip, " \xe2\x80\x94 imports ");
	buf_add_duration(&tip, total);
	if (g->skipped)
		buf_addf(&tip, ", %zu frames narrower than %.2g px not drawn", g->skipped,
			 o->min_width < 0 ? 0.1 : o->min_width);
	export_add_xml(out, tip.buf);
	buf_adds(out, "</text>\n");
	top += 20;

	buf_reset(&tip);
	buf_addf(&tip, "%s: imports ", label.buf);
	buf_add_duration(&tip, total);
	emit_frame(out, label.buf, tip.buf, PAD, inner, top + (o->icicle ? 0 : area - FRAME_H), 0, gi, root_c, true);
	for (k = 0; k < g->n; k++) {
		int32_t v = g->order[k];
		const struct imp_node *nd = &g->pr->nodes[v];
		double x, w, y;
		struct rgb c;

		if (!g->drawn[v])
			continue;
		x = PAD + (double)g->start[v] * g->scale;
		w = (double)(g->end[v] - g->start[v]) * g->scale;
		y = o->icicle ? top + g->depth[v] * FRAME_H : top + area - (g->depth[v] + 1) * FRAME_H;
		if (o->diff)
			c = diff_colour(o->diff, diff_find(o->diff, node_name(g->pr, v)));
		else
			c = kind_colour(nd->kind, node_name(g->pr, v));
		buf_reset(&tip);
		node_tip(g, v, o, &tip);
		emit_frame(out, node_name(g->pr, v), tip.buf, x, w, y, g->depth[v], gi, c, false);
	}
	buf_release(&tip);
	buf_release(&label);
	return 20 + area;
}

static void emit_legend(struct buf *out, const struct export_opts *o, double y)
{
	double x = PAD;
	size_t k;

	if (o->diff) {
		buf_addf(out,
			 "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"rgb(255,60,60)\"/>"
			 "<text x=\"%.0f\" y=\"%.0f\">slower than the base</text>",
			 x, y, x + 16, y + 10);
		x += 170;
		buf_addf(out,
			 "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"rgb(60,60,255)\"/>"
			 "<text x=\"%.0f\" y=\"%.0f\">faster</text>",
			 x, y, x + 16, y + 10);
		x += 80;
		buf_addf(out,
			 "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"rgb(215,30,30)\"/>"
			 "<text x=\"%.0f\" y=\"%.0f\">new module</text>",
			 x, y, x + 16, y + 10);
		x += 110;
		buf_addf(out,
			 "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"rgb(228,228,228)\"/>"
			 "<text x=\"%.0f\" y=\"%.0f\">within noise</text>\n",
			 x, y, x + 16, y + 10);
		return;
	}
	for (k = 0; k < KIND__COUNT; k++) {
		struct rgb c = kind_colours[k].base;

		buf_addf(out,
			 "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"rgb(%d,%d,%d)\"/>"
			 "<text x=\"%.0f\" y=\"%.0f\">%s</text>",
			 x, y, c.r, c.g, c.b, x + 16, y + 10, kind_colours[k].label);
		x += 40 + CHAR_W * (double)strlen(kind_colours[k].label);
	}
	buf_addch(out, '\n');
}

static void add_title(const struct profile *p, const struct export_opts *o, struct buf *t)
{
	if (o->title) {
		buf_adds(t, o->title);
		return;
	}
	buf_adds(t, o->diff ? "coldstart differential flamegraph" : "coldstart import flamegraph");
	if (p->target.nr) {
		buf_adds(t, ": ");
		export_add_target(t, p, TITLE_TARGET_COLS);
	}
}

int svg_render(const struct profile *p, const struct export_opts *o, bool standalone, struct buf *out, struct buf *err)
{
	const struct run *r = export_pick_run(p, o, err);
	struct graph *graphs = NULL;
	struct proc *views = NULL;
	struct buf text = BUF_INIT;
	bool timelines = false;
	size_t ng, i;
	int width = o->width > 0 ? o->width : 1200;
	double inner, min_width = o->min_width < 0 ? 0.1 : o->min_width, height, y;

	if (!r)
		return -1;
	if (width < 200 || width > 100000) {
		buf_addf(err, "width %d is out of range (200 to 100000 px)", width);
		return -1;
	}
	inner = width - 2 * PAD;
	ng = o->all_procs ? r->nr_procs : 1;
	graphs = xcalloc(ng, sizeof(*graphs));
	views = xcalloc(ng, sizeof(*views));
	height = HEADER_H + FOOTER_H;
	for (i = 0; i < ng; i++) {
		/* A differential graph compares modules: it keeps the import tree. */
		const struct proc *pr = o->diff ? &r->procs[i] : export_tree(&r->procs[i], &views[i]);

		timelines |= pr != &r->procs[i];
		graph_prepare(&graphs[i], pr, i, inner, min_width);
		height += 20 + (graphs[i].maxdepth + 1) * FRAME_H + GRAPH_GAP;
	}

	buf_addf(out,
		 "<svg class=\"cs-flame\" xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		 "width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" data-width=\"%d\" "
		 "data-pad=\"%d\">\n",
		 width, height, width, height, width, PAD);
	buf_adds(out, "<style>svg.cs-flame text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}"
		      "svg.cs-flame .cs-f text{pointer-events:none}"
		      "svg.cs-flame .cs-f:hover rect{stroke:#000;stroke-width:0.6}"
		      "svg.cs-flame .cs-f{cursor:pointer}"
		      "svg.cs-flame .cs-parent{opacity:0.55}"
		      "svg.cs-flame .cs-title{font-size:17px;text-anchor:middle}"
		      "svg.cs-flame .cs-sub{fill:#555;text-anchor:middle}"
		      "svg.cs-flame .cs-btn{cursor:pointer;fill:#225}"
		      "svg.cs-flame .cs-glabel{font-weight:bold}"
		      "svg.cs-flame .cs-unzoom{opacity:0}</style>\n");
	buf_addf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" fill=\"#f6f6f2\"/>\n", width, height);

	add_title(p, o, &text);
	buf_addf(out, "<text class=\"cs-title\" x=\"%d\" y=\"24\">", width / 2);
	export_add_xml(out, text.buf);
	buf_adds(out, "</text>\n");
	buf_reset(&text);
	if (p->python_version)
		buf_addf(&text, "Python %s, ", p->python_version);
	buf_addf(&text, "run %zu of %zu", (size_t)(r - p->runs) + 1, p->nr_runs);
	/* What an import graph's width adds up to (coldstart's bootstrap left out, as the report does). */
	if (!timelines && !o->diff && r->nr_procs) {
		buf_adds(&text, ", imports ");
		buf_add_duration(&text, proc_import_total_us(&r->procs[0], true) - proc_tool_us(&r->procs[0]));
		if (r->nr_procs > 1)
			buf_adds(&text, " in the target's process");
	}
	if (r->wall_us != UNKNOWN && r->wall_us >= 0) {
		buf_adds(&text, ", wall ");
		buf_add_duration(&text, r->wall_us);
	}
	buf_adds(&text, timelines ? ". Width = time in the function or import (sampled), callees included; "
				    "the uncovered top of a frame is its self time. Click to zoom, Ctrl-F to search."
				  : ". Width = cumulative import time; the uncovered top of a frame is its self time. "
				    "Click to zoom, Ctrl-F to search.");
	buf_adds(out, "<text class=\"cs-sub\" x=\"");
	buf_addf(out, "%d\" y=\"44\">", width / 2);
	export_add_xml(out, text.buf);
	buf_adds(out, "</text>\n");
	buf_addf(out, "<text class=\"cs-btn cs-unzoom\" x=\"%d\" y=\"24\">Reset Zoom</text>\n", PAD);
	buf_addf(out, "<text class=\"cs-btn cs-search\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n",
		 width - PAD);
	emit_legend(out, o, 56);
	if (!o->all_procs && r->nr_procs > 1)
		buf_addf(out,
			 "<text class=\"cs-sub\" x=\"%d\" y=\"66\" style=\"text-anchor:end\">%zu other process%s not "
			 "drawn: coldstart export --all-procs draws every process</text>\n",
			 width - PAD, r->nr_procs - 1, r->nr_procs == 2 ? "" : "es");

	y = HEADER_H;
	for (i = 0; i < ng; i++) {
		y += emit_graph(out, &graphs[i], i, o, y, inner) + GRAPH_GAP;
	}
	buf_addf(out, "<text class=\"cs-details\" x=\"%d\" y=\"%.0f\"> </text>\n", PAD, height - 12);
	buf_addf(out, "<text class=\"cs-matched\" x=\"%d\" y=\"%.0f\" text-anchor=\"end\"> </text>\n", width - PAD,
		 height - 12);
	if (standalone) {
		buf_adds(out, "<script type=\"text/ecmascript\"><![CDATA[\n");
		buf_adds(out, svg_script);
		buf_adds(out, "]]></script>\n");
	}
	buf_adds(out, "</svg>\n");

	for (i = 0; i < ng; i++) {
		graph_release(&graphs[i]);
		if (views[i].names.alloc)
			proc_release(&views[i]);
	}
	free(graphs);
	free(views);
	buf_release(&text);
	return 0;
}

int export_svg(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err)
{
	buf_adds(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	return svg_render(p, o, true, out, err);
}
