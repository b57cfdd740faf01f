/*
 * The single-file HTML report: summary, findings, sortable module and
 * package tables and the embedded flamegraph.  Everything (styles, scripts,
 * SVG) is inline, so the file works offline and can be attached to a ticket.
 */
#include "render/export/formats.h"
#include "render/export/frames.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "model/classify.h"

static const char sort_script[] =
	"(function () {\n"
	"  \"use strict\";\n"
	"  function key(td) { var v = td.getAttribute(\"data-v\"); return v === null ? td.textContent : +v; }\n"
	"  function sortBy(table, col) {\n"
	"    var th = table.tHead.rows[0].cells[col], body = table.tBodies[0];\n"
	"    var desc = th.getAttribute(\"data-dir\") !== \"desc\";\n"
	"    [].forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute(\"data-dir\"); });\n"
	"    th.setAttribute(\"data-dir\", desc ? \"desc\" : \"asc\");\n"
	"    var rows = [].slice.call(body.rows);\n"
	"    rows.sort(function (a, b) {\n"
	"      var x = key(a.cells[col]), y = key(b.cells[col]);\n"
	"      var r = typeof x === \"number\" && typeof y === \"number\" ? x - y : String(x).localeCompare(String(y));\n"
	"      return desc ? -r : r;\n"
	"    });\n"
	"    rows.forEach(function (r) { body.appendChild(r); });\n"
	"  }\n"
	"  window.csSort = function (id, col) { sortBy(document.getElementById(id), col); };\n"
	"  [].forEach.call(document.querySelectorAll(\"table.cs-sort\"), function (t) {\n"
	"    [].forEach.call(t.tHead.rows[0].cells, function (th, i) {\n"
	"      th.addEventListener(\"click\", function () { sortBy(t, i); });\n"
	"    });\n"
	"  });\n"
	"})();\n";

static const char style[] = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}"
			    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}"
			    "table{border-collapse:collapse;font-size:0.9em}"
			    "td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}"
			    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
			    "table.cs-sort th{cursor:pointer;background:#f3f3f3}"
			    "th[data-dir=desc]::after{content:\" \\25BC\"}th[data-dir=asc]::after{content:\" \\25B2\"}"
			    ".sev-error{color:#b00}.sev-warning{color:#a60}.sev-info{color:#357}"
			    ".finding{margin:0.6em 0;padding:0.4em 0.8em;border-left:4px solid #ccc;background:#fafafa}"
			    ".finding p{margin:0.2em 0}.muted{color:#777}"
			    ".scroll{max-height:32em;overflow:auto;display:inline-block}"
			    ".flame{overflow-x:auto}";

static void add_cell_dur(struct buf *out, int64_t us)
{
	if (us == UNKNOWN) {
		buf_adds(out, "<td class=\"n\" data-v=\"-1\">\xe2\x80\x94</td>");
		return;
	}
	buf_addf(out, "<td class=\"n\" data-v=\"%lld\">", (long long)us);
	buf_add_duration(out, us);
	buf_adds(out, "</td>");
}

static void add_row(struct buf *out, const char *key, const char *value)
{
	buf_adds(out, "<tr><th>");
	export_add_xml(out, key);
	buf_adds(out, "</th><td>");
	export_add_xml(out, value);
	buf_adds(out, "</td></tr>\n");
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median of a run field over non-warm-up runs; UNKNOWN when none has it. */
static int64_t median_field(const struct profile *p, size_t offset)
{
	int64_t *v = xmalloc(st_mult(p->nr_runs ? p->nr_runs : 1, sizeof(*v))), m = UNKNOWN;
	size_t i, n = 0;

	for (i = 0; i < p->nr_runs; i++) {
		int64_t x;

		memcpy(&x, (const char *)&p->runs[i] + offset, sizeof(x));
		if (!p->runs[i].warmup && x != UNKNOWN && x >= 0)
			v[n++] = x;
	}
	if (n) {
		qsort(v, n, sizeof(*v), cmp_i64);
		m = v[(n - 1) / 2];
	}
	free(v);
	return m;
}

/*
 * The import time of pr's outermost imports begun before and after the
 * ready time, coldstart's bootstrap left out.
 */
static void ready_split(const struct proc *pr, int64_t ready_ns, int64_t *before, int64_t *after)
{
	int32_t i;
	size_t k;

	/* coldstart's own bootstrap (at start-up, before ready) is left out, as the text report does. */
	*before = *after = 0;
	for (k = 0; k < pr->nr_nodes; k++)
		if (pr->nodes[k].kind == KIND_TOOL && pr->nodes[k].self_us > 0)
			*before -= pr->nodes[k].self_us;
	for (i = pr->first_root; i >= 0; i = pr->nodes[i].next_sibling) {
		int64_t v = pr->nodes[i].cum_us;

		if (v <= 0)
			continue;
		if (node_after_ready(pr, i, ready_ns))
			*after += v;
		else
			*before += v;
	}
}

static void summary(const struct profile *p, const struct run *r, struct buf *out)
{
	struct buf v = BUF_INIT;
	size_t i;
	int64_t m;

	buf_adds(out, "<h2>Summary</h2>\n<table>\n");
	if (p->target.nr) {
		for (i = 0; i < p->target.nr; i++)
			buf_addf(&v, "%s%s", i ? " " : "", p->target.v[i]);
		add_row(out, "target", v.buf);
		buf_reset(&v);
	}
	if (p->python || p->python_version) {
		buf_addf(&v, "%s%s%s%s", p->python ? p->python : "", p->python && p->python_version ? " (" : "",
			 p->python_version ? p->python_version : "", p->python && p->python_version ? ")" : "");
		add_row(out, "python", v.buf);
		buf_reset(&v);
	}
	if (p->command)
		add_row(out, "command", p->command);
	if (p->created)
		add_row(out, "created", p->created);
	buf_addf(&v, "%zu (drawn: run %zu, the median by import total unless chosen)", p->nr_runs,
		 (size_t)(r - p->runs) + 1);
	add_row(out, "runs", v.buf);
	buf_reset(&v);
	/* coldstart's bootstrap left out, as the text report does (it is part of the start-up). */
	buf_add_duration(&v, proc_import_total_us(&r->procs[0], true) - proc_tool_us(&r->procs[0]));
	buf_adds(&v, " (without interpreter start-up: ");
	buf_add_duration(&v, proc_import_total_us(&r->procs[0], false));
	buf_addf(&v, "), %zu modules, %zu processes", r->procs[0].nr_nodes, r->nr_procs);
	add_row(out, "imports", v.buf);
	buf_reset(&v);
	if ((m = median_field(p, offsetof(struct run, wall_us))) != UNKNOWN) {
		buf_add_duration(&v, m);
		buf_adds(&v, " (median)");
		add_row(out, "wall time", v.buf);
		buf_reset(&v);
	}
	if ((m = median_field(p, offsetof(struct run, ready_us))) != UNKNOWN) {
		buf_add_duration(&v, m);
		buf_adds(&v, " (median)");
		add_row(out, "ready after", v.buf);
		buf_reset(&v);
	}
	if (r->maxrss_kb != UNKNOWN && r->maxrss_kb > 0) {
		buf_add_bytes(&v, i64_mul(r->maxrss_kb, 1024));
		add_row(out, "max RSS", v.buf);
		buf_reset(&v);
	}
	if (run_ready_ns(r) >= 0 && r->procs[0].timing) {
		int64_t before, after;

		ready_split(&r->procs[0], run_ready_ns(r), &before, &after);
		buf_add_duration(&v, before);
		buf_adds(&v, " before ready, ");
		buf_add_duration(&v, after);
		buf_adds(&v, " after (the target's process; the processes table has each one's)");
		add_row(out, "imports by readiness", v.buf);
		buf_reset(&v);
	}
	if ((m = median_field(p, offsetof(struct run, listening_us))) != UNKNOWN) {
		buf_add_duration(&v, m);
		buf_adds(&v, " (median; the first connection the target's listener accepted)");
		add_row(out, "listening after", v.buf);
		buf_reset(&v);
	}
	if ((m = median_field(p, offsetof(struct run, first_response_us))) > 0) {
		buf_add_duration(&v, m);
		buf_adds(&v, " after ready (median)");
		add_row(out, "first response", v.buf);
		buf_reset(&v);
	}
	limits_describe(&p->limits, &v);
	add_row(out, "limits", v.buf);
	buf_reset(&v);
	buf_adds(out, "</table>\n");
	buf_release(&v);
}

static void findings(const struct profile *p, struct buf *out)
{
	size_t i;

	buf_addf(out, "<h2>Findings (%zu)</h2>\n", p->nr_findings);
	if (!p->nr_findings)
		buf_adds(out, "<p class=\"muted\">No findings.</p>\n");
	for (i = 0; i < p->nr_findings; i++) {
		const struct finding *f = &p->findings[i];
		const char *sev = f->severity ? f->severity : "info";

		buf_adds(out, "<div class=\"finding\"><p><b class=\"sev-");
		export_add_xml(out, sev);
		buf_adds(out, "\">");
		export_add_xml(out, sev);
		buf_adds(out, "</b> ");
		export_add_xml(out, f->title ? f->title : "");
		buf_adds(out, " <span class=\"muted\">[");
		export_add_xml(out, f->id ? f->id : "");
		buf_adds(out, "]</span>");
		if (f->cost_us != UNKNOWN && f->cost_us > 0) {
			buf_adds(out, " \xe2\x80\x94 ");
			buf_add_duration(out, f->cost_us);
		}
		buf_adds(out, "</p>");
		if (f->evidence) {
			buf_adds(out, "<p>");
			export_add_xml(out, f->evidence);
			buf_adds(out, "</p>");
		}
		if (f->fix) {
			buf_adds(out, "<p><b>Fix:</b> ");
			export_add_xml(out, f->fix);
			buf_adds(out, "</p>");
		}
		buf_adds(out, "</div>\n");
	}
	for (i = 0; i < p->nr_warnings; i++) {
		buf_adds(out, i ? "" : "<h2>Warnings</h2>\n");
		buf_adds(out, "<p class=\"muted\">");
		if (p->warnings[i].line > 0)
			buf_addf(out, "line %ld: ", p->warnings[i].line);
		export_add_xml(out, p->warnings[i].msg ? p->warnings[i].msg : "");
		buf_adds(out, "</p>\n");
	}
}

/* One module row of the table: where it sits among the processes drawn. */
struct mod_row {
	const struct proc *pr;
	int32_t node;
	size_t proc; /* 1-based */
};

/* Largest cumulative time first (the cost), then self, then the name, so the page reads the same every time. */
static int cmp_row_cost(const void *a, const void *b)
{
	const struct mod_row *x = a, *y = b;
	const struct imp_node *m = &x->pr->nodes[x->node], *n = &y->pr->nodes[y->node];

	if (m->cum_us != n->cum_us)
		return m->cum_us > n->cum_us ? -1 : 1;
	if (m->self_us != n->self_us)
		return m->self_us > n->self_us ? -1 : 1;
	return strcmp(node_name(x->pr, x->node), node_name(y->pr, y->node));
}

static void module_table(const struct run *r, const struct export_opts *o, struct buf *out)
{
	size_t ng = o->all_procs ? r->nr_procs : 1, i, k, nr = 0, total = 0;
	int64_t ready_ns = run_ready_ns(r);
	struct mod_row *rows;

	for (i = 0; i < ng; i++)
		total += r->procs[i].nr_nodes;
	rows = xmalloc(st_mult(total ? total : 1, sizeof(*rows)));
	for (i = 0; i < ng; i++) {
		const struct proc *pr = &r->procs[i];
		int32_t *order = xmalloc(st_mult(pr->nr_nodes ? pr->nr_nodes : 1, sizeof(*order)));
		size_t n = export_preorder(pr, order, NULL);

		for (k = 0; k < n; k++)
			rows[nr++] = (struct mod_row){ .pr = pr, .node = order[k], .proc = i + 1 };
		free(order);
	}
	qsort(rows, nr, sizeof(*rows), cmp_row_cost);
	buf_adds(out, "<h2>Modules</h2>\n<p class=\"muted\">By cumulative time (the cost of importing the module and "
		      "everything it imported); click any column to sort by it, again to reverse.</p>\n"
		      "<div class=\"scroll\"><table id=\"cs-modules\" class=\"cs-sort\"><thead><tr>"
		      "<th>module</th><th>kind</th><th class=\"n\">self</th>"
		      "<th class=\"n\" data-dir=\"desc\">cumulative</th>"
		      "<th class=\"n\">depth</th><th>process</th>");
	if (ready_ns >= 0)
		buf_adds(out, "<th>began</th>");
	buf_adds(out, "</tr></thead><tbody>\n");
	for (k = 0; k < nr; k++) {
		const struct imp_node *nd = &rows[k].pr->nodes[rows[k].node];

		buf_adds(out, "<tr><td>");
		export_add_xml(out, node_name(rows[k].pr, rows[k].node));
		buf_addf(out, "</td><td>%s</td>", nd->kind < KIND__COUNT ? kind_name((enum node_kind)nd->kind) : "?");
		add_cell_dur(out, nd->self_us);
		add_cell_dur(out, nd->cum_us);
		buf_addf(out, "<td class=\"n\" data-v=\"%u\">%u</td><td data-v=\"%zu\">%zu</td>", nd->depth, nd->depth,
			 rows[k].proc, rows[k].proc);
		if (ready_ns >= 0)
			buf_adds(out, !rows[k].pr->timing || rows[k].pr->timing[rows[k].node].start_ns < 0
					      ? "<td>\xe2\x80\x94</td>"
				      : node_after_ready(rows[k].pr, rows[k].node, ready_ns) ? "<td>after ready</td>"
											     : "<td>before ready</td>");
		buf_adds(out, "</tr>\n");
	}
	buf_adds(out, "</tbody></table></div>\n");
	free(rows);
}

/* Every Python process of the run: the tree drawn is the first's (--all-procs draws them all). */
static void process_table(const struct run *r, struct buf *out)
{
	size_t i, k;
	int64_t ready_ns = run_ready_ns(r);

	buf_addf(out,
		 "<h2>Processes (%zu)</h2>\n"
		 "<table id=\"cs-processes\" class=\"cs-sort\"><thead><tr>"
		 "<th class=\"n\">#</th><th class=\"n\">pid</th><th class=\"n\">modules</th>"
		 "<th class=\"n\" data-dir=\"desc\">imports</th>%s<th>command</th></tr></thead><tbody>\n",
		 r->nr_procs, ready_ns >= 0 ? "<th class=\"n\">before ready</th><th class=\"n\">after ready</th>" : "");
	for (i = 0; i < r->nr_procs; i++) {
		const struct proc *pr = &r->procs[i];
		size_t modules = 0;

		for (k = 0; k < pr->nr_nodes; k++)
			modules += !(pr->nodes[k].flags & (NODE_CACHED | NODE_GC));
		buf_addf(out, "<tr><td class=\"n\" data-v=\"%zu\">%zu</td>", i + 1, i + 1);
		if (pr->pid >= 0)
			buf_addf(out, "<td class=\"n\" data-v=\"%ld\">%ld</td>", pr->pid, pr->pid);
		else
			buf_adds(out, "<td class=\"n\" data-v=\"-1\">\xe2\x80\x94</td>");
		buf_addf(out, "<td class=\"n\" data-v=\"%zu\">%zu</td>", modules, modules);
		add_cell_dur(out, proc_import_total_us(pr, true) - proc_tool_us(pr));
		if (ready_ns >= 0) {
			int64_t before, after;

			ready_split(pr, ready_ns, &before, &after);
			add_cell_dur(out, pr->timing ? before : UNKNOWN);
			add_cell_dur(out, pr->timing ? after : UNKNOWN);
		}
		buf_adds(out, "<td>");
		export_add_xml(out, pr->argv ? pr->argv : (i ? "" : "the target"));
		buf_adds(out, "</td></tr>\n");
	}
	buf_adds(out, "</tbody></table>\n");
}

static void package_table(const struct run *r, struct buf *out)
{
	size_t nr = 0, i;
	struct pkg_total *t = proc_package_totals(&r->procs[0], METRIC_WALL, &nr);

	buf_adds(out, "<h2>Packages (main process)</h2>\n"
		      "<div class=\"scroll\"><table id=\"cs-packages\" class=\"cs-sort\"><thead><tr>"
		      "<th>package</th><th>kind</th><th class=\"n\">cumulative</th><th class=\"n\">self</th>"
		      "<th class=\"n\">modules</th></tr></thead><tbody>\n");
	for (i = 0; i < nr; i++) {
		buf_adds(out, "<tr><td>");
		export_add_xml(out, t[i].name ? t[i].name : "");
		buf_addf(out, "</td><td>%s</td>", t[i].kind < KIND__COUNT ? kind_name((enum node_kind)t[i].kind) : "?");
		add_cell_dur(out, t[i].cum_us);
		add_cell_dur(out, t[i].self_us);
		buf_addf(out, "<td class=\"n\" data-v=\"%zu\">%zu</td></tr>\n", t[i].modules, t[i].modules);
	}
	buf_adds(out, "</tbody></table></div>\n");
	pkg_totals_free(t, nr);
}

int export_html(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err)
{
	const struct run *r = export_pick_run(p, o, err);
	struct buf svg = BUF_INIT, title = BUF_INIT;
	int ret = -1;

	if (!r)
		goto out;
	if (svg_render(p, o, false, &svg, err) < 0)
		goto out;
	if (o->title) {
		buf_adds(&title, o->title);
	} else {
		buf_adds(&title, "coldstart report");
		if (p->target.nr) {
			buf_adds(&title, ": ");
			export_add_target(&title, p, TITLE_TARGET_COLS);
		}
	}
	buf_adds(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
	export_add_xml(out, title.buf);
	buf_addf(out, "</title>\n<style>%s</style>\n</head><body>\n<h1>", style);
	export_add_xml(out, title.buf);
	buf_adds(out, "</h1>\n");
	summary(p, r, out);
	findings(p, out);
	buf_adds(out, "<h2>Flamegraph</h2>\n<div class=\"flame\">\n");
	buf_add(out, svg.buf, svg.len);
	buf_adds(out, "</div>\n");
	process_table(r, out);
	package_table(r, out);
	module_table(r, o, out);
	buf_addf(out, "<p class=\"muted\">Written by coldstart %s.</p>\n", COLDSTART_VERSION);
	buf_adds(out, "<script>\n");
	buf_adds(out, svg_script);
	buf_adds(out, sort_script);
	buf_adds(out, "</script>\n</body></html>\n");
	ret = 0;
out:
	buf_release(&svg);
	buf_release(&title);
	return ret;
}
