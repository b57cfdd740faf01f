/*
 * `coldstart why`'s answer as text fitted to a width, or as JSON: one
 * section per process, its importers with their chains, and what would go
 * away (docs/why.md).
 */
#include "render/why_report.h"

#include <stdlib.h>
#include <string.h>

#include "render/fit.h"

/* The importer table's columns but the statement's: "  cost  what  " and the gap after the statement. */
#define IMPORTER_FIXED (2 + 9 + 2 + 13 + 2 + 2)
/* Where an importer's chain starts, under its statement. */
#define CHAIN_COL 30

/* The columns left of width after used ones, at least 10 (a name still reads). */
static size_t room(size_t width, size_t used)
{
	return width > used + 10 ? width - used : 10;
}

/* Appends text wrapped at width with indent spaces before each line. */
static void add_wrapped(struct buf *out, const char *text, size_t indent, size_t width)
{
	if (*text)
		buf_addf(out, "%*s", (int)indent, "");
	fit_add_wrapped(out, text, indent, indent, width);
}

static bool run_has_trace(const struct run *r)
{
	size_t i;

	for (i = 0; i < r->nr_procs; i++)
		if (r->procs[i].timing)
			return true;
	return false;
}

static const char *status_word(enum why_status s)
{
	static const char *const words[WHY_STATUS__COUNT] = {
		[WHY_LOADED] = "loaded it",  [WHY_FOUND_LOADED] = "found loaded", [WHY_INHERITED] = "inherited",
		[WHY_CIRCULAR] = "circular", [WHY_NOT_RUN] = "not run",		  [WHY_IN_FUNCTION] = "in a function",
		[WHY_NEVER] = "never runs",
	};

	return (unsigned)s < WHY_STATUS__COUNT ? words[s] : "?";
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The importer's name as the user reads it. */
static const char *importer_name(const struct why_graph *g, const struct why_importer *im, const struct why_stmt *first)
{
	if (im->node >= 0)
		return node_name(g->pr, im->node);
	if (first->via == WHY_VIA_TREE && first->target >= 0 && (g->pr->nodes[first->target].flags & NODE_STARTUP))
		return "(interpreter start-up)";
	return "__main__";
}

/*
 * "dtypes.py:12", "dtypes.py:12 cond", "no statement", ... for a statement;
 * " func" for one in a function unless the status already says so.
 */
static void add_where(struct buf *out, const struct why_graph *g, const struct why_stmt *s, bool say_func)
{
	const char *file = why_graph_file(g, s->importer);

	if (s->via == WHY_VIA_AGAIN) {
		buf_adds(out, "recorded again");
		return;
	}
	if (s->via == WHY_VIA_TREE) {
		enum why_source src = s->importer >= 0 ? (enum why_source)g->source[s->importer] : WHY_SRC_NONE;
		const struct why_stmt *computed = why_graph_computed(g, s->importer);

		if (computed)
			buf_addf(out, "%s:%u computed", file ? base_name(file) : "?", computed->line);
		else if (s->importer < 0)
			buf_adds(out, g->have_main ? "no statement" : "recorded");
		else if (src == WHY_SRC_PARSED)
			buf_adds(out, "no statement");
		else if (src == WHY_SRC_NATIVE)
			buf_adds(out, "extension");
		else if (src == WHY_SRC_BUILTIN)
			buf_adds(out, "built-in");
		else if (src == WHY_SRC_NONE)
			buf_adds(out, "recorded");
		else
			buf_adds(out, "no source");
		return;
	}
	buf_addf(out, "%s:%u", file ? base_name(file) : "?", s->line);
	if (s->via == WHY_VIA_CALL)
		buf_adds(out, " call");
	else if (s->ctx == WHY_FUNC && say_func)
		buf_adds(out, " func");
	else if (s->ctx == WHY_COND)
		buf_adds(out, " cond");
	else if (s->ctx == WHY_TYPING)
		buf_adds(out, " typing");
	else if (s->ctx == WHY_MAIN_GUARD)
		buf_adds(out, " main");
}

/*
 * The statement that explains an importer best: a line with the importer's
 * status over the bare tree edge; for a loader, else a line of its body that
 * names what it loaded, else a call with a computed name (the tree edge,
 * which add_where shows as that call), else a line in a function that names
 * it (a function start-up called, as Django's manage.py main()).
 */
static const struct why_stmt *importer_stmt(const struct why_graph *g, const struct why_answer *a,
					    const struct why_importer *im)
{
	const struct why_stmt *in_function = NULL;
	size_t k;

	for (k = im->first; k < im->first + im->nr; k++)
		if (a->stmts[k].via != WHY_VIA_TREE && a->stmt_status[k] == im->status)
			return &a->stmts[k];
	for (k = im->first; im->status == WHY_LOADED && k < im->first + im->nr; k++) {
		const struct why_stmt *s = &a->stmts[k];

		if ((s->via != WHY_VIA_STMT && s->via != WHY_VIA_CALL) || s->target != im->loaded)
			continue;
		if (s->ctx != WHY_FUNC)
			return s;
		if (!in_function)
			in_function = s;
	}
	if (in_function && !why_graph_computed(g, im->node))
		return in_function;
	return &a->stmts[im->first];
}

static void text_importers(struct buf *out, const struct why_graph *g, const struct why_answer *a, int top,
			   size_t width)
{
	const struct proc *pr = g->pr;
	/* The statement column: up to 24 wide, narrower when the width leaves the names under 16 columns. */
	size_t where_max = width >= IMPORTER_FIXED + 24 + 16 ? 24
			   : width > IMPORTER_FIXED + 8 + 16 ? width - IMPORTER_FIXED - 16
							     : 8;
	size_t counts[WHY_STATUS__COUNT] = { 0 }, i, shown, where_w = where_max < 12 ? where_max : 12;
	struct buf where = BUF_INIT;
	bool first = true;
	int s;

	for (i = 0; i < a->nr_importers; i++)
		counts[a->importers[i].status]++;
	buf_addf(out, "  %zu importer%s:", a->nr_importers, a->nr_importers == 1 ? "" : "s");
	for (s = 0; s < WHY_STATUS__COUNT; s++)
		if (counts[s]) {
			buf_addf(out, "%s %zu %s", first ? "" : ",", counts[s], status_word((enum why_status)s));
			first = false;
		}
	buf_addch(out, '\n');
	if (!a->nr_importers)
		return;
	shown = top && (size_t)top < a->nr_importers ? (size_t)top : a->nr_importers;
	for (i = 0; i < shown; i++) {
		buf_reset(&where);
		add_where(&where, g, importer_stmt(g, a, &a->importers[i]), a->importers[i].status != WHY_IN_FUNCTION);
		if (where.len > where_w)
			where_w = where.len > where_max ? where_max : where.len;
	}
	buf_addf(out, "  %9s  %-13s  %-*s  ", "cost", "what", (int)where_w, "where");
	fit_add(out, "importer (and its chain)", room(width, IMPORTER_FIXED + where_w));
	buf_addch(out, '\n');
	for (i = 0; i < shown; i++) {
		const struct why_importer *im = &a->importers[i];
		const struct why_stmt *st = importer_stmt(g, a, im);
		const char *name = importer_name(g, im, st);
		struct buf cost = BUF_INIT;
		size_t used, left;

		if (im->status == WHY_LOADED)
			buf_add_duration(&cost, im->cost_us);
		else if (im->status == WHY_FOUND_LOADED || im->status == WHY_CIRCULAR || im->status == WHY_INHERITED)
			buf_adds(&cost, "0");
		else
			buf_adds(&cost, "-");
		buf_reset(&where);
		add_where(&where, g, st, im->status != WHY_IN_FUNCTION);
		/* +N: the importer's other lines (a tree edge is not one). */
		{
			size_t k, lines = 0;

			for (k = im->first; k < im->first + im->nr; k++)
				lines += a->stmts[k].via != WHY_VIA_TREE && &a->stmts[k] != st;
			if (lines && where.len + 5 <= where_w)
				buf_addf(&where, " +%zu", lines);
		}
		buf_addf(out, "  %9s  %-13s  ", cost.buf, status_word(im->status));
		if (where.len > where_w)
			fit_add(out, where.buf, where_w);
		else
			buf_addf(out, "%-*s", (int)where_w, where.buf);
		buf_adds(out, "  ");
		used = IMPORTER_FIXED + where_w;
		left = room(width, used);
		fit_add(out, name, left);
		buf_addch(out, '\n');
		/*
		 * On a line of its own, under the statement (chains are long): what
		 * it loaded when that is a submodule, and the chain.
		 */
		buf_reset(&where);
		if (im->status == WHY_LOADED && im->loaded >= 0 && im->loaded != a->module)
			buf_addf(&where, "loaded %s%s", node_name(pr, im->loaded),
				 im->node >= 0 && pr->nodes[im->node].parent >= 0 ? "; " : "");
		if (im->node >= 0 && pr->nodes[im->node].parent >= 0)
			buf_adds(&where, "via ");
		if (where.len) {
			buf_addf(out, "%*s", (int)CHAIN_COL, "");
			fit_add(out, where.buf, room(width, CHAIN_COL));
			if (im->node >= 0 && pr->nodes[im->node].parent >= 0 && width > CHAIN_COL + where.len + 8)
				fit_add_chain(out, pr, im->node, width - CHAIN_COL - where.len);
			buf_addch(out, '\n');
		}
		buf_release(&cost);
	}
	if (shown < a->nr_importers)
		buf_addf(out, "  \xe2\x80\xa6 %zu more (--top 0 lists all)\n", a->nr_importers - shown);
	buf_release(&where);
}

static void text_gone(struct buf *out, const struct why_graph *g, const struct why_answer *a, const char *module,
		      int top, size_t width)
{
	const struct proc *pr = g->pr;
	size_t i, shown, runs = 0;
	struct buf line = BUF_INIT;

	for (i = 0; i < a->nr_importers; i++)
		if (a->importers[i].status <= WHY_CIRCULAR && a->importers[i].status != WHY_INHERITED)
			runs++;
	buf_addf(&line, "If %s were never imported, %zu module%s would go away: ", module, a->nr_gone,
		 a->nr_gone == 1 ? "" : "s");
	buf_add_duration(&line, a->gone_self_us);
	buf_adds(&line, " of import time");
	if (a->import_total_us > 0) {
		buf_addf(&line, ", %.1f%% of this process's ",
			 100.0 * (double)a->gone_self_us / (double)a->import_total_us);
		buf_add_duration(&line, a->import_total_us);
	}
	buf_addf(&line, ". %zu importer%s run%s an import of it at start-up", runs, runs == 1 ? "" : "s",
		 runs == 1 ? "s" : "");
	buf_adds(&line, runs ? "; each would have to defer it." : ".");
	add_wrapped(out, line.buf, 2, width);
	shown = top && (size_t)top < a->nr_gone ? (size_t)top : a->nr_gone;
	if (shown)
		buf_addf(out, "  %9s  %9s  %s\n", "self", "cum", "module");
	for (i = 0; i < shown; i++) {
		const struct imp_node *nd = &pr->nodes[a->gone[i]];
		struct buf s = BUF_INIT, c = BUF_INIT;

		buf_add_duration(&s, nd->self_us);
		buf_add_duration(&c, nd->cum_us);
		buf_addf(out, "  %9s  %9s  ", s.buf, c.buf);
		fit_add(out, node_name(pr, a->gone[i]), room(width, 24));
		buf_addch(out, '\n');
		buf_release(&s);
		buf_release(&c);
	}
	if (shown < a->nr_gone)
		buf_addf(out, "  \xe2\x80\xa6 %zu more (--top 0 lists all)\n", a->nr_gone - shown);
	if (a->nr_kept) {
		buf_reset(&line);
		buf_addf(&line,
			 "%zu module%s imported beneath %s would stay, kept by other importers (their time "
			 "moves to them, it does not go away):",
			 a->nr_kept, a->nr_kept == 1 ? "" : "s", module);
		add_wrapped(out, line.buf, 2, width);
		shown = top && (size_t)top < a->nr_kept ? (size_t)top : a->nr_kept;
		buf_addf(out, "  %9s  %-28s  %s\n", "cum", "module", "kept by");
		for (i = 0; i < shown; i++) {
			const struct why_kept *k = &a->kept[i];
			struct buf c = BUF_INIT, by = BUF_INIT;

			buf_add_duration(&c, pr->nodes[k->node].cum_us);
			buf_addf(out, "  %9s  ", c.buf);
			buf_reset(&line);
			fit_add(&line, node_name(pr, k->node), 28);
			buf_addf(out, "%-28s  ", line.buf);
			if (k->how.via == WHY_VIA_STMT && !k->how.line && k->by >= 0)
				buf_addf(&by, "%s (a submodule of it stays)", node_name(pr, k->by));
			else {
				buf_adds(&by, k->by >= 0 ? node_name(pr, k->by) : "__main__");
				buf_adds(&by, " (");
				add_where(&by, g, &k->how, true);
				buf_adds(&by, ")");
			}
			fit_add(out, by.buf, room(width, 43));
			buf_addch(out, '\n');
			buf_release(&c);
			buf_release(&by);
		}
		if (shown < a->nr_kept)
			buf_addf(out, "  \xe2\x80\xa6 %zu more (--top 0 lists all)\n", a->nr_kept - shown);
	}
	buf_release(&line);
}

static void text_process(struct buf *out, const struct run *r, const struct why_graph *g,
			 const struct why_proc_answer *pa, const char *module, int top, size_t width)
{
	const struct proc *pr = g->pr;
	const struct why_answer *a = &pa->a;
	struct buf line = BUF_INIT;

	if (pr->pid >= 0)
		buf_addf(&line, "process %ld", pr->pid);
	else
		buf_adds(&line, "process (no pid: importtime only)");
	if (pa->index == 0)
		buf_adds(&line, ", the target's own");
	else if (pa->parent >= 0)
		buf_addf(&line, ", a fork of %ld", r->procs[pa->parent].pid);
	else if (pr->ppid > 0)
		buf_addf(&line, ", started by %ld", pr->ppid);
	if (pr->argv) {
		buf_adds(&line, ": ");
		fit_add_command(&line, pr->argv, room(width, line.len + 2));
	}
	buf_addf(out, "%s\n", line.buf);
	buf_reset(&line);
	if (a->module >= 0) {
		const struct imp_node *m = &pr->nodes[a->module];
		int32_t top_r;
		size_t i;

		buf_addf(&line, "%s loaded", module);
		if (pr->timing && pr->timing[a->module].start_ns >= 0) {
			buf_adds(&line, " at ");
			buf_add_duration(&line, pr->timing[a->module].start_ns / 1000);
		}
		/* Its loader is the importer of the outermost node of the package around it. */
		for (top_r = a->module;
		     pr->nodes[top_r].parent >= 0 && why_in_package(node_name(pr, pr->nodes[top_r].parent), module);)
			top_r = pr->nodes[top_r].parent;
		for (i = 0; i < a->nr_importers; i++)
			if (a->importers[i].status == WHY_LOADED &&
			    a->importers[i].node ==
				    (pr->nodes[top_r].parent >= 0 ? pr->nodes[top_r].parent : WHY_TOP)) {
				buf_addf(&line, " by %s",
					 importer_name(g, &a->importers[i], importer_stmt(g, a, &a->importers[i])));
				break;
			}
		buf_adds(&line, ": ");
		buf_add_duration(&line, m->cum_us);
		buf_adds(&line, " cumulative, ");
		buf_add_duration(&line, m->self_us);
		buf_addf(&line, " self; %zu module%s of its own", a->nr_loads, a->nr_loads == 1 ? "" : "s");
	} else if (a->nr_loads) {
		buf_addf(&line, "%s itself is not loaded here, %zu of its submodules are", module, a->nr_loads);
	} else if (a->nr_failed) {
		buf_addf(&line, "%s is not loaded here: %zu import%s of it failed", module, a->nr_failed,
			 a->nr_failed == 1 ? "" : "s");
	} else if (pa->inherited) {
		buf_addf(&line, "%s came loaded from process %ld at the fork: nothing to pay here", module,
			 r->procs[pa->parent].pid);
	} else {
		buf_addf(&line, "%s's load is not in this process's tree; its importers below name it", module);
	}
	add_wrapped(out, line.buf, 2, width);
	text_importers(out, g, a, top, width);
	if (a->nr_loads || a->nr_failed)
		text_gone(out, g, a, module, top, width);
	buf_release(&line);
}

static void text_sources(struct buf *out, const struct why_report *w)
{
	const struct why_scan_result *res = w->res;
	struct buf line = BUF_INIT;

	if (w->no_source) {
		buf_adds(&line, "Import statements not read (--no-source): the importers are the recorded ones, "
				"the first import of each module.");
	} else if (w->scan_error) {
		buf_addf(&line,
			 "Import statements not read: %s.  The importers are the recorded ones, the first "
			 "import of each module (--python PATH reads the source with another interpreter).",
			 w->scan_error);
	} else {
		buf_addf(&line, "Statements of %zu files read by %s in ", res->files, res->python);
		buf_add_duration(&line, res->wall_us);
		buf_addf(&line, " (%zu parsed, %zu from the cache).", res->parsed, res->cached);
		if (res->sources[WHY_SRC_NATIVE] > res->pyx)
			buf_addf(&line, " %zu native extension%s cannot be read%s",
				 res->sources[WHY_SRC_NATIVE] - res->pyx,
				 res->sources[WHY_SRC_NATIVE] - res->pyx == 1 ? "" : "s", res->pyx ? ";" : ".");
		if (res->pyx)
			buf_addf(&line, " %zu %s read through the Cython source beside %s.", res->pyx,
				 res->sources[WHY_SRC_NATIVE] > res->pyx
					 ? (res->pyx == 1 ? "other was" : "others were")
					 : (res->pyx == 1 ? "native extension was" : "native extensions were"),
				 res->pyx == 1 ? "it" : "them");
		if (strcmp(res->cache, "used") && strcmp(res->cache, "off"))
			buf_addf(&line, " The cache was refused: %s.", res->cache);
		if (res->sources[WHY_SRC_ERROR])
			buf_addf(&line, " %zu file%s could not be read or parsed (--json names them and why).",
				 res->sources[WHY_SRC_ERROR], res->sources[WHY_SRC_ERROR] == 1 ? "" : "s");
		if (res->sources[WHY_SRC_NOTFOUND])
			buf_addf(&line, " %zu module%s without a file in the profile %s not found by name.",
				 res->sources[WHY_SRC_NOTFOUND], res->sources[WHY_SRC_NOTFOUND] == 1 ? "" : "s",
				 res->sources[WHY_SRC_NOTFOUND] == 1 ? "was" : "were");
		if (!run_has_trace(w->r))
			buf_adds(&line, " The profile has no trace: module files were located by name in the "
					"profile's directory, the current one and the interpreter's sys.path.");
	}
	add_wrapped(out, line.buf, 0, w->width);
	buf_release(&line);
}

/* "pytz is not imported in process 12 (the target's own), 14, 15." */
static void text_elsewhere(struct buf *out, const struct run *r, const struct why_proc_answer *pas, size_t nr,
			   const char *module, size_t width)
{
	struct buf line = BUF_INIT;
	size_t i, k, listed = 0, left = r->nr_procs - nr;

	buf_addf(&line, "%s is not imported in process%s", module, left == 1 ? "" : "es");
	for (i = 0; i < r->nr_procs && listed < 8; i++) {
		bool answered = false;

		for (k = 0; k < nr; k++)
			answered |= pas[k].index == i;
		if (answered)
			continue;
		buf_addf(&line, "%s %ld%s", listed ? "," : "", r->procs[i].pid, i == 0 ? " (the target's own)" : "");
		listed++;
	}
	if (left > listed)
		buf_addf(&line, " and %zu more", left - listed);
	buf_addch(&line, '.');
	buf_addch(out, '\n');
	add_wrapped(out, line.buf, 0, width);
	buf_release(&line);
}

static const char *assumption_text(bool functions)
{
	return functions
		       ? "Assumes: every import statement in a loaded module's body and in its functions runs "
			 "(TYPE_CHECKING and __main__ blocks excepted, and module-level ones whose module finished "
			 "before the import), the recorded import tree's edges hold, and a submodule keeps its package. "
			 "What C extensions without Cython source beside them and computed names import is seen only "
			 "where they loaded a module first."
		       : "Assumes: import statements in a loaded module's body run, conditional ones included "
			 "(TYPE_CHECKING and __main__ blocks excepted, and module-level ones whose module finished "
			 "before the import), imports inside functions do not run at start-up (--functions counts "
			 "them), the recorded import tree's edges hold, and a submodule keeps its package. What C "
			 "extensions without Cython source beside them and computed names import is seen only where "
			 "they loaded a module first.";
}

static void json_str(struct buf *out, const char *s)
{
	if (s)
		buf_add_json_str(out, s, strlen(s));
	else
		buf_adds(out, "null");
}

static void json_stmt(struct buf *out, const struct why_graph *g, const struct why_stmt *s, enum why_status st)
{
	buf_adds(out, "{\"imports\":");
	json_str(out, s->name ? why_str(g, s->name) : s->target >= 0 ? node_name(g->pr, s->target) : NULL);
	buf_adds(out, ",\"file\":");
	json_str(out, s->via == WHY_VIA_TREE || s->via == WHY_VIA_AGAIN ? NULL : why_graph_file(g, s->importer));
	buf_addf(out, ",\"line\":%u,\"context\":\"%s\",\"via\":\"%s\",\"status\":\"%s\"}", s->line,
		 why_ctx_name((enum why_ctx)s->ctx), why_via_name((enum why_via)s->via), why_status_name(st));
}

static void json_chain(struct buf *out, const struct proc *pr, int32_t i)
{
	struct buf chain = BUF_INIT;
	const char *p;

	buf_addch(out, '[');
	if (i >= 0) {
		proc_chain(pr, i, "\n", &chain);
		for (p = chain.buf; *p;) {
			const char *e = strchrnul(p, '\n');

			if (p != chain.buf)
				buf_addch(out, ',');
			buf_add_json_str(out, p, (size_t)(e - p));
			p = *e ? e + 1 : e;
		}
	}
	buf_addch(out, ']');
	buf_release(&chain);
}

static const char *source_name(enum why_source s)
{
	static const char *const names[WHY_SRC__COUNT] = {
		[WHY_SRC_NONE] = "none",       [WHY_SRC_PARSED] = "parsed",	[WHY_SRC_NATIVE] = "native",
		[WHY_SRC_BUILTIN] = "builtin", [WHY_SRC_NOSOURCE] = "nosource", [WHY_SRC_NOTFOUND] = "notfound",
		[WHY_SRC_ERROR] = "error",
	};

	return (unsigned)s < WHY_SRC__COUNT ? names[s] : "none";
}

static void json_process(struct buf *out, const struct run *r, const struct why_graph *g,
			 const struct why_proc_answer *pa)
{
	const struct proc *pr = g->pr;
	const struct why_answer *a = &pa->a;
	size_t i, k;

	buf_addf(out, "{\"pid\":%ld,\"ppid\":%ld,\"argv\":", pr->pid, pr->ppid);
	json_str(out, pr->argv);
	buf_addf(out, ",\"role\":\"%s\"", pa->index == 0 ? "target" : pa->parent >= 0 ? "fork" : "child");
	buf_addf(out, ",\"inherited\":%s,\"loads\":%zu,\"failed\":%zu,\"module\":", pa->inherited ? "true" : "false",
		 a->nr_loads, a->nr_failed);
	if (a->module >= 0) {
		const struct imp_node *m = &pr->nodes[a->module];

		buf_addf(out, "{\"start_us\":%lld,\"cum_us\":%lld,\"self_us\":%lld}",
			 (long long)(pr->timing && pr->timing[a->module].start_ns >= 0
					     ? pr->timing[a->module].start_ns / 1000
					     : UNKNOWN),
			 (long long)m->cum_us, (long long)m->self_us);
	} else {
		buf_adds(out, "null");
	}
	buf_adds(out, ",\"importers\":[");
	for (i = 0; i < a->nr_importers; i++) {
		const struct why_importer *im = &a->importers[i];

		buf_adds(out, i ? ",{\"module\":" : "{\"module\":");
		json_str(out, importer_name(g, im, importer_stmt(g, a, im)));
		buf_adds(out, ",\"chain\":");
		json_chain(out, pr, im->node);
		buf_addf(out, ",\"status\":\"%s\",\"cost_us\":%lld,\"loaded\":", why_status_name(im->status),
			 (long long)im->cost_us);
		json_str(out, im->loaded >= 0 ? node_name(pr, im->loaded) : NULL);
		buf_addf(out, ",\"source\":\"%s\",\"statements\":[",
			 source_name(im->node >= 0  ? (enum why_source)g->source[im->node]
				     : g->have_main ? WHY_SRC_PARSED
						    : WHY_SRC_NONE));
		for (k = im->first; k < im->first + im->nr; k++) {
			if (k > im->first)
				buf_addch(out, ',');
			json_stmt(out, g, &a->stmts[k], a->stmt_status[k]);
		}
		buf_adds(out, "]}");
	}
	buf_adds(out, "],\"gone\":");
	if (a->nr_loads || a->nr_failed) {
		buf_addf(out, "{\"self_us\":%lld,\"import_total_us\":%lld,\"modules\":[", (long long)a->gone_self_us,
			 (long long)a->import_total_us);
		for (i = 0; i < a->nr_gone; i++) {
			const struct imp_node *nd = &pr->nodes[a->gone[i]];

			buf_adds(out, i ? ",{\"name\":" : "{\"name\":");
			json_str(out, node_name(pr, a->gone[i]));
			buf_addf(out, ",\"self_us\":%lld,\"cum_us\":%lld}", (long long)nd->self_us,
				 (long long)nd->cum_us);
		}
		buf_adds(out, "],\"kept\":[");
		for (i = 0; i < a->nr_kept; i++) {
			const struct why_kept *kp = &a->kept[i];

			buf_adds(out, i ? ",{\"name\":" : "{\"name\":");
			json_str(out, node_name(pr, kp->node));
			buf_addf(out, ",\"cum_us\":%lld,\"by\":", (long long)pr->nodes[kp->node].cum_us);
			json_str(out, kp->by >= 0 ? node_name(pr, kp->by) : "__main__");
			buf_addf(out, ",\"edge\":\"%s\",\"statement\":",
				 kp->how.via == WHY_VIA_TREE ? "tree"
				 : kp->how.via == WHY_VIA_STMT && !kp->how.line && kp->how.target == kp->node &&
						 kp->by >= 0 &&
						 why_in_package(node_name(pr, kp->by), node_name(pr, kp->node))
					 ? "package"
					 : "statement");
			if (kp->how.via == WHY_VIA_TREE || !kp->how.line)
				buf_adds(out, "null");
			else
				json_stmt(out, g, &kp->how, WHY_FOUND_LOADED);
			buf_addch(out, '}');
		}
		buf_adds(out, "]}");
	} else {
		buf_adds(out, "null");
	}
	buf_addch(out, '}');
	(void)r;
}

void why_report_json(const struct why_report *w, struct buf *out)
{
	const struct why_scan_result *res = w->res;
	const struct run *r = w->r;
	bool scanned = !w->no_source && !w->scan_error;
	size_t i, s;
	bool first = true;

	buf_adds(out, "{\"module\":");
	json_str(out, w->module);
	buf_addf(out, ",\"run\":%zu,\"runs\":%zu,\"source\":{\"read\":%s", w->run_index + 1, w->p->nr_runs,
		 scanned ? "true" : "false");
	buf_adds(out, ",\"python\":");
	json_str(out, res->python);
	buf_adds(out, ",\"error\":");
	json_str(out, scanned ? NULL : w->no_source ? "--no-source" : w->scan_error);
	if (scanned) {
		buf_addf(out,
			 ",\"files\":%zu,\"parsed\":%zu,\"cached\":%zu,\"reader_s\":%.3f,\"wall_us\":%lld,\"cache\":",
			 res->files, res->parsed, res->cached, res->reader_s, (long long)res->wall_us);
		json_str(out, res->cache);
		buf_adds(out, ",\"modules\":{");
		for (s = 1; s < WHY_SRC__COUNT; s++)
			buf_addf(out, "%s\"%s\":%zu", s > 1 ? "," : "", source_name((enum why_source)s),
				 res->sources[s]);
		buf_addf(out, "},\"pyx\":%zu,\"unreadable\":[", res->pyx);
		for (i = 0; i < w->nr_answers; i++) {
			const struct why_graph *g = &w->graphs[w->answers[i].index];
			size_t k;

			for (k = 0; k < g->pr->nr_nodes; k++) {
				if (g->source[k] != WHY_SRC_ERROR)
					continue;
				buf_adds(out, first ? "{\"module\":" : ",{\"module\":");
				first = false;
				json_str(out, node_name(g->pr, (int32_t)k));
				buf_adds(out, ",\"error\":");
				json_str(out, g->error[k] ? why_str(g, g->error[k]) : NULL);
				buf_addch(out, '}');
			}
			if (!first)
				break; /* the processes share their files: one process's list is the list */
		}
		buf_addch(out, ']');
	}
	buf_addf(out, "},\"assumes\":{\"functions_run\":%s,\"text\":", w->functions ? "true" : "false");
	json_str(out, assumption_text(w->functions));
	buf_adds(out, "},\"processes\":[");
	for (i = 0; i < w->nr_answers; i++) {
		if (i)
			buf_addch(out, ',');
		json_process(out, r, &w->graphs[w->answers[i].index], &w->answers[i]);
	}
	buf_adds(out, "],\"elsewhere\":[");
	first = true;
	for (i = 0; i < r->nr_procs; i++) {
		size_t k;
		bool answered = false;

		for (k = 0; k < w->nr_answers; k++)
			answered |= w->answers[k].index == i;
		if (answered)
			continue;
		buf_addf(out, "%s%ld", first ? "" : ",", r->procs[i].pid);
		first = false;
	}
	buf_adds(out, "]}\n");
}

void why_report_text(const struct why_report *w, struct buf *out)
{
	const struct profile *p = w->p;
	struct buf line = BUF_INIT;
	size_t i;

	buf_addf(&line, "why %s \xe2\x80\x94 %s", w->module, w->profile_name);
	if (p->nr_runs > 1)
		buf_addf(&line, ", run %zu of %zu", w->run_index + 1, p->nr_runs);
	if (p->python_version)
		buf_addf(&line, " (Python %s)", p->python_version);
	fit_add(out, line.buf, w->width);
	buf_addch(out, '\n');
	buf_release(&line);
	text_sources(out, w);
	for (i = 0; i < w->nr_answers; i++) {
		buf_addch(out, '\n');
		text_process(out, w->r, &w->graphs[w->answers[i].index], &w->answers[i], w->module, w->top, w->width);
	}
	if (w->nr_answers < w->r->nr_procs)
		text_elsewhere(out, w->r, w->answers, w->nr_answers, w->module, w->width);
	buf_addch(out, '\n');
	add_wrapped(out, assumption_text(w->functions), 0, w->width);
}
