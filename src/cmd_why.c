/*
 * `coldstart why MODULE PROFILE`: every importer of a module in each process
 * of a profile, what each one's import cost, and what would go away if the
 * module were never imported (why.h); text for a terminal or --json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "builtin.h"
#include "parallel.h"
#include "profile.h"
#include "stats.h"
#include "why.h"
#include "why_report.h"
#include "why_scan.h"

#define READER_TIMEOUT_MS (600 * 1000)

struct why_cmd_opts {
	bool json;
	bool no_source;
	bool no_cache;
	bool functions;
	const char *python;
	int top; /* rows per list, 0 = all */
	int run; /* 1-based, 0 = the median run */
};

static const struct usage why_usage = {
	.command = "why",
	.synopsis = "usage: coldstart why MODULE PROFILE [--json] [--top N] [--run N] [--functions]\n"
		    "                     [--python PATH] [--no-source] [--no-cache]\n\n"
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

			if (pr->nodes[k].flags & (NODE_CACHED | NODE_FAILED))
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

int cmd_why(int argc, char **argv)
{
	struct why_cmd_opts o = { .top = 20 };
	struct profile p;
	struct buf err = BUF_INIT, scan_err = BUF_INIT, out = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	struct why_graph *graphs = NULL;
	struct why_proc_answer *pas = NULL;
	struct why_scan_result res = { 0 };
	bool *forks = NULL, scanned = false;
	size_t nr_pas = 0, i, run_index;
	const struct run *r = NULL;
	const char *module;
	int rc, ret = EXIT_USAGE;

	const struct opt options[] = {
		OPT_BOOL("json", 0, &o.json, "write the answer as JSON"),
		OPT_INT("top", 0, &o.top, 0, 1000000, "N", "rows in each list (default 20; 0: all)"),
		OPT_INT("run", 0, &o.run, 1, 1000000, "N", "the run to answer for (default: the median)"),
		OPT_BOOL("functions", 0, &o.functions, "imports in functions run at start-up too"),
		OPT_STRING("python", 0, &o.python, "PATH", "read source with this interpreter"),
		OPT_BOOL("no-source", 0, &o.no_source, "only the imports the profile recorded"),
		OPT_BOOL("no-cache", 0, &o.no_cache, "read every file again, keep no cache"),
		OPT_HELP("help", 'h', NULL, "this text"),
		OPT_END(),
	};

	profile_init(&p);
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
	if (o.python && !*o.python) {
		ret = usage_error(&why_usage, "--python needs an interpreter");
		goto out;
	}
	module = pos.v[0];
	ret = EXIT_FAIL;
	if (profile_read_json(&p, pos.v[1], &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	if (!p.nr_runs) {
		error("'%s' holds no runs", pos.v[1]);
		goto out;
	}
	if (o.run > 0 && (size_t)o.run > p.nr_runs) {
		ret = usage_error(&why_usage, "--run %d: '%s' holds %zu run%s", o.run, pos.v[1], p.nr_runs,
				  p.nr_runs == 1 ? "" : "s");
		goto out;
	}
	run_index = o.run ? (size_t)(o.run - 1) : profile_median_run(&p);
	r = &p.runs[run_index];
	if (!r->nr_procs) {
		error("run %zu of '%s' holds no processes", run_index + 1, pos.v[1]);
		goto out;
	}
	graphs = xcalloc(r->nr_procs, sizeof(*graphs));
	forks = xcalloc(r->nr_procs, sizeof(*forks));
	for (i = 0; i < r->nr_procs; i++) {
		why_graph_init(&graphs[i], &r->procs[i]);
		forks[i] = fork_parent(r, i) >= 0;
	}
	if (!o.no_source) {
		struct why_scan_opts so = {
			.python = o.python,
			.datadir = coldstart_datadir(),
			.no_cache = o.no_cache,
			.jobs = parallel_cpus(),
			.timeout_ms = READER_TIMEOUT_MS,
		};

		scanned = why_scan(&p, r, forks, graphs, &so, &res, &scan_err) == 0;
	}
	pas = xcalloc(r->nr_procs, sizeof(*pas));
	for (i = 0; i < r->nr_procs; i++) {
		struct why_proc_answer *pa = &pas[nr_pas];
		struct why_opts wo = { .functions_run = o.functions };

		pa->index = i;
		pa->parent = fork_parent(r, i);
		pa->inherited = pa->parent >= 0 && why_graph_find(&graphs[pa->parent], module) >= 0;
		wo.inherited = pa->inherited;
		if (why_answer(&graphs[i], module, &wo, &pa->a) == 0)
			nr_pas++;
	}
	if (!nr_pas) {
		struct buf near = BUF_INIT;

		suggest(r, module, &near);
		error("'%s' is not imported in '%s'%s%s%s", module, pos.v[1],
		      r->nr_procs > 1 ? " (in none of its processes)" : "", near.len ? "; close names: " : "",
		      near.buf);
		if (!scanned && !o.no_source)
			fprintf(stderr, "coldstart: note: import statements not read: %s\n", scan_err.buf);
		buf_release(&near);
		goto out;
	}
	{
		struct why_report w = {
			.module = module,
			.profile_name = pos.v[1],
			.p = &p,
			.r = r,
			.run_index = run_index,
			.graphs = graphs,
			.answers = pas,
			.nr_answers = nr_pas,
			.res = &res,
			.scan_error = o.no_source || scanned ? NULL : scan_err.buf,
			.no_source = o.no_source,
			.functions = o.functions,
			.top = o.top,
		};

		if (o.json)
			why_report_json(&w, &out);
		else
			why_report_text(&w, &out);
	}
	fwrite(out.buf, 1, out.len, stdout);
	ret = EXIT_OK;
out:
	for (i = 0; graphs && i < r->nr_procs; i++)
		why_graph_release(&graphs[i]);
	for (i = 0; i < nr_pas; i++)
		why_answer_release(&pas[i].a);
	free(graphs);
	free(pas);
	free(forks);
	why_scan_result_release(&res);
	profile_release(&p);
	strvec_clear(&pos);
	buf_release(&err);
	buf_release(&scan_err);
	buf_release(&out);
	return ret;
}
