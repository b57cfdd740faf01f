/*
 * `coldstart why MODULE PROFILE`: every importer of a module in each process
 * of a profile, what each one's import cost, and what would go away if the
 * module were never imported (why.h); text for a terminal or --json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd/builtin.h"
#include "render/fit.h"
#include "parallel.h"
#include "model/profile.h"
#include "model/stats.h"
#include "analysis/why.h"
#include "render/why_report.h"
#include "analysis/why_scan.h"

#define READER_TIMEOUT_MS (600 * 1000)

struct why_cmd_opts {
	bool json;
	bool no_source;
	bool no_cache;
	bool functions;
	bool wide;
	const char *python;
	int top; /* rows per list, 0 = all */
	int run; /* 1-based, 0 = the median run */
};

static const struct usage why_usage = {
	.command = "why",
	.synopsis = "usage: coldstart why MODULE PROFILE [--json] [--top N] [--run N] [--functions]\n"
		    "                     [--wide] [--python PATH] [--no-source] [--no-cache]\n\n"
		    "Every importer of MODULE in each process of PROFILE (not only the first one,\n"
		    "which is all -X importtime shows), what each one's import cost, and what would\n"
		    "go away if MODULE were never imported: the modules and time only reachable\n"
		    "through it.  Importers come from the recorded import tree and from the import\n"
		    "statements of the profile's modules, read with the profile's interpreter.\n\n",
	.footer = "Exit status: 0 answered, 1 the module is in no process of the profile or the\n"
		  "profile is unreadable, 2 bad command line.  See docs/why.md.\n",
};

/*
 * Whether process i is a fork of another process of the run, and which: its
 * parent is in the run with the same command line (a fork runs no __main__
 * of its own and starts with its parent's modules).
 */
static int fork_parent(const struct run *r, size_t i)
{
	const struct proc *pr = &r->procs[i];
	size_t j;

	if (pr->pid < 0 || !pr->argv)
		return -1;
	for (j = 0; j < r->nr_procs; j++)
		if (j != i && r->procs[j].pid == pr->ppid && r->procs[j].argv && !strcmp(r->procs[j].argv, pr->argv))
			return (int)j;
	return -1;
}

/* Edit distance, bounded: names longer than 64 bytes compare as far apart. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, row[65], prev, tmp;

	if (la > 64 || lb > 64)
		return 64;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t best = prev + (a[i - 1] != b[j - 1]);

			tmp = row[j];
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

/* The last component of a dotted name. */
static const char *last_part(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot ? dot + 1 : name;
}

/*
 * Up to five names of the run close to module: a small edit distance (a
 * typo), the same last component ("tzinfo" for "pytz.tzinfo") or the name as
 * a component; best first.
 */
static void suggest(const struct run *r, const char *module, struct buf *out)
{
	struct cand {
		const char *name;
		size_t score;
	} best[5];
	size_t nr = 0, i, k, j;

	for (i = 0; i < r->nr_procs; i++) {
		const struct proc *pr = &r->procs[i];

		for (k = 0; k < pr->nr_nodes; k++) {
			const char *name = node_name(pr, (int32_t)k);
			size_t d = distance(module, name), dl = distance(module, last_part(name)), score, at;
			size_t lim = strlen(module) / 3 + 1;
			bool dup = false;

			if (pr->nodes[k].flags & (NODE_CACHED | NODE_FAILED | NODE_GC))
				continue;
			if (d <= lim)
				score = d;
			else if (dl <= lim)
				score = 10 + dl;
			else if (strstr(name, module))
				score = 20 + strlen(name);
			else
				continue;
			for (j = 0; j < nr; j++)
				dup |= !strcmp(best[j].name, name);
			if (dup)
				continue;
			for (at = nr; at > 0 && best[at - 1].score > score; at--)
				;
			if (at >= ARRAY_SIZE(best))
				continue;
			if (nr < ARRAY_SIZE(best))
				nr++;
			memmove(&best[at + 1], &best[at], (nr - 1 - at) * sizeof(best[0]));
			best[at] = (struct cand){ .name = name, .score = score };
		}
	}
	for (j = 0; j < nr; j++)
		buf_addf(out, "%s%s", j ? ", " : "", best[j].name);
}

/* What the command works on once the command line is read. */
struct why_cmd {
	struct why_cmd_opts o;
	const char *module, *profile_name;
	struct profile p;
	const struct run *r;
	size_t run_index;
	struct why_graph *graphs; /* one per process of r */
	struct why_proc_answer *pas;
	size_t nr_pas;
	struct why_scan_result res;
	struct buf scan_err;
	bool scanned;
};

/* Reads the profile and picks the run; an exit status on failure, else -1. */
static int why_load(struct why_cmd *c)
{
	struct buf err = BUF_INIT;
	int ret = EXIT_FAIL;

	if (profile_read_json(&c->p, c->profile_name, &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	if (!c->p.nr_runs) {
		error("'%s' holds no runs", c->profile_name);
		goto out;
	}
	if (c->o.run > 0 && (size_t)c->o.run > c->p.nr_runs) {
		ret = usage_error(&why_usage, "--run %d: '%s' holds %zu run%s", c->o.run, c->profile_name, c->p.nr_runs,
				  c->p.nr_runs == 1 ? "" : "s");
		goto out;
	}
	c->run_index = c->o.run ? (size_t)(c->o.run - 1) : profile_median_run(&c->p);
	c->r = &c->p.runs[c->run_index];
	if (!c->r->nr_procs) {
		error("run %zu of '%s' holds no processes", c->run_index + 1, c->profile_name);
		goto out;
	}
	ret = -1;
out:
	buf_release(&err);
	return ret;
}

/*
 * Builds each process's import graph, adds the import statements of the
 * profile's modules unless --no-source, and answers for every process that
 * imported the module; returns how many did.
 */
static size_t why_answer_all(struct why_cmd *c)
{
	const struct run *r = c->r;
	bool *forks = xcalloc(r->nr_procs, sizeof(*forks));
	size_t i;

	c->graphs = xcalloc(r->nr_procs, sizeof(*c->graphs));
	for (i = 0; i < r->nr_procs; i++) {
		why_graph_init(&c->graphs[i], &r->procs[i]);
		forks[i] = fork_parent(r, i) >= 0;
	}
	if (!c->o.no_source) {
		struct why_scan_opts so = {
			.python = c->o.python,
			.datadir = coldstart_datadir(),
			.no_cache = c->o.no_cache,
			.jobs = parallel_cpus(),
			.timeout_ms = READER_TIMEOUT_MS,
		};

		c->scanned = why_scan(&c->p, r, forks, c->graphs, &so, &c->res, &c->scan_err) == 0;
		/* Said on stderr too: --json and a redirected answer would hide it. */
		if (c->res.refused)
			warning("%s", c->scan_err.buf);
	}
	free(forks);
	c->pas = xcalloc(r->nr_procs, sizeof(*c->pas));
	for (i = 0; i < r->nr_procs; i++) {
		struct why_proc_answer *pa = &c->pas[c->nr_pas];
		struct why_opts wo = { .functions_run = c->o.functions };

		pa->index = i;
		pa->parent = fork_parent(r, i);
		pa->inherited = pa->parent >= 0 && why_graph_find(&c->graphs[pa->parent], c->module) >= 0;
		wo.inherited = pa->inherited;
		if (why_answer(&c->graphs[i], c->module, &wo, &pa->a) == 0)
			c->nr_pas++;
	}
	return c->nr_pas;
}

/* The error for a module no process imported, with names close to it. */
static void why_not_imported(const struct why_cmd *c)
{
	struct buf near = BUF_INIT;

	suggest(c->r, c->module, &near);
	error("'%s' is not imported in '%s'%s%s%s", c->module, c->profile_name,
	      c->r->nr_procs > 1 ? " (in none of its processes)" : "", near.len ? "; close names: " : "", near.buf);
	if (!c->scanned && !c->o.no_source && !c->res.refused)
		fprintf(stderr, "coldstart: note: import statements not read: %s\n", c->scan_err.buf);
	buf_release(&near);
}

static void why_print(const struct why_cmd *c)
{
	struct buf out = BUF_INIT;
	struct why_report w = {
		.module = c->module,
		.profile_name = c->profile_name,
		.p = &c->p,
		.r = c->r,
		.run_index = c->run_index,
		.graphs = c->graphs,
		.answers = c->pas,
		.nr_answers = c->nr_pas,
		.res = &c->res,
		.scan_error = c->o.no_source || c->scanned ? NULL : c->scan_err.buf,
		.no_source = c->o.no_source,
		.functions = c->o.functions,
		.top = c->o.top,
		.width = c->o.wide ? WHY_WIDE : fit_width(1),
	};

	if (c->o.json)
		why_report_json(&w, &out);
	else
		why_report_text(&w, &out);
	fwrite(out.buf, 1, out.len, stdout);
	buf_release(&out);
}

static void why_cmd_release(struct why_cmd *c)
{
	size_t i;

	for (i = 0; c->graphs && i < c->r->nr_procs; i++)
		why_graph_release(&c->graphs[i]);
	for (i = 0; i < c->nr_pas; i++)
		why_answer_release(&c->pas[i].a);
	free(c->graphs);
	free(c->pas);
	why_scan_result_release(&c->res);
	profile_release(&c->p);
	buf_release(&c->scan_err);
}

int cmd_why(int argc, char **argv)
{
	struct why_cmd c = { .o = { .top = 20 }, .scan_err = BUF_INIT };
	struct why_cmd_opts *o = &c.o;
	struct buf err = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	int rc, ret = EXIT_USAGE;

	const struct opt options[] = {
		OPT_BOOL("json", 0, &o->json, "write the answer as JSON"),
		OPT_BOOL("wide", 0, &o->wide,
			 "do not fit the answer to the terminal (COLUMNS, else 100 columns when not one)"),
		OPT_INT("top", 0, &o->top, 0, 1000000, "N", "rows in each list (default 20; 0: all)"),
		OPT_INT("run", 0, &o->run, 1, 1000000, "N",
			"the run to answer for, N of the profile with warm-ups counted (default: the run the report shows)"),
		OPT_BOOL("functions", 0, &o->functions, "imports in functions run at start-up too"),
		OPT_STRING("python", 0, &o->python, "PATH", "read source with this interpreter"),
		OPT_BOOL("no-source", 0, &o->no_source, "only the imports the profile recorded"),
		OPT_BOOL("no-cache", 0, &o->no_cache, "read every file again, keep no cache"),
		OPT_HELP("help", 'h', NULL, "this text"),
		OPT_END(),
	};

	profile_init(&c.p);
	rc = args_parse_all(options, argc, argv, &pos, &err);
	if (rc) {
		ret = usage_stop(&why_usage, options, rc, err.buf);
		goto out;
	}
	if (pos.nr != 2 || !*pos.v[0]) {
		if (pos.nr > 2)
			ret = usage_error(&why_usage, "unexpected argument '%s'", pos.v[2]);
		else
			ret = usage_error(&why_usage, "why needs a MODULE and a PROFILE");
		goto out;
	}
	if (o->python && !*o->python) {
		ret = usage_error(&why_usage, "--python needs an interpreter");
		goto out;
	}
	c.module = pos.v[0];
	c.profile_name = pos.v[1];
	ret = why_load(&c);
	if (ret >= 0)
		goto out;
	ret = EXIT_FAIL;
	if (!why_answer_all(&c)) {
		why_not_imported(&c);
		goto out;
	}
	why_print(&c);
	ret = EXIT_OK;
out:
	why_cmd_release(&c);
	strvec_clear(&pos);
	buf_release(&err);
	return ret;
}
