/*
 * `coldstart compare`: two or more variants of a start-up (commands, one
 * target under several interpreters, or under several limit sets), each a
 * measuring session, run interleaved round by round; then medians, spreads,
 * outliers, ratios and the Mann-Whitney U test (compare.h), down to the
 * modules whose time differs, as a table, Markdown and JSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "builtin.h"
#include "compare.h"
#include "measure.h"
#include "profile.h"
#include "runlimits.h"
#include "show.h"
#include "stats.h"

#define MAX_VARIANTS 26
#define ALPHA 0.05

struct compare_opts {
	struct measure_opts m;
	struct strvec pythons;
	struct strvec limit_sets;
	struct strvec names;
	int top;
	bool show_output;
	const char *output; /* JSON file, "-" for stdout */
	bool json_stdout;
	int json_fd;
	const char *markdown; /* Markdown file, "-" for stdout */
	int stdout_users;
};

/* What is measured of each run, and compared. */
enum metric { M_WALL, M_IMPORTS, M_CPU, M_READY, M__COUNT };

static const char *const metric_key[] = {
	[M_WALL] = "wall_us",
	[M_IMPORTS] = "imports_us",
	[M_CPU] = "cpu_us",
	[M_READY] = "ready_us",
};

static const char *const metric_name[] = {
	[M_WALL] = "wall",
	[M_IMPORTS] = "imports",
	[M_CPU] = "CPU",
	[M_READY] = "ready",
};

struct sample {
	int64_t *v; /* one value a measured run, UNKNOWN skipped */
	size_t nr;
	struct summary s;
};

/* One variant against the first (A). */
struct versus {
	double ratio[M__COUNT]; /* median of this variant / median of A; 0 when unknown */
	struct mw_result mw[M__COUNT];
	double p_adj[M__COUNT]; /* Holm over the variants compared with A */
};

struct variant {
	char id[2];
	char *label;
	char *python; /* the interpreter to probe, NULL for a command that is none */
	struct profile p;
	struct measure_session s;
	struct strvec argv, env;
	struct sample metric[M__COUNT];
	bool *outlier; /* per wall sample */
	size_t nr_outliers;
	struct versus vs;
};

/* One module's self time per measured run, in each variant. */
struct module_row {
	char *name;
	int64_t **v; /* [variant][run] */
	int64_t *median; /* [variant] */
	size_t *present; /* [variant]: runs it was imported in */
};

/* A module's difference between variant j and A. */
struct module_diff {
	size_t row;
	int64_t delta;
	struct mw_result mw;
	double p_adj;
	bool tested;
};

struct comparison {
	struct variant *v;
	size_t nr;
	struct module_row *rows;
	size_t nr_rows, alloc_rows;
	/* For each variant j >= 1: its differences with A, sorted by |delta|. */
	struct module_diff **diffs;
	size_t *nr_tested;
	const struct compare_opts *o;
	const char *what; /* "interpreters", "limit sets", "commands", ... */
};

static const struct usage compare_usage = {
	.command = "compare",
	.synopsis = "usage: coldstart compare [options] --python A --python B TARGET\n"
		    "       coldstart compare [options] --limits SET --limits SET TARGET\n"
		    "       coldstart compare [options] 'COMMAND A' 'COMMAND B' ...\n\n"
		    "Runs every variant round by round, interleaved (the order rotates each round),\n"
		    "after warm-up rounds, and compares the medians of their measured runs: wall\n"
		    "time, import time, CPU time (and readiness with --ready), with outliers marked,\n"
		    "the ratio to the first variant and whether the difference is significant\n"
		    "(Mann-Whitney U test, two-sided, Holm-adjusted, at 5%), then the modules whose\n"
		    "self time differs most.  TARGET is as profile takes it (script.py, -m module,\n"
		    "-c code, -- command); with --python and --limits both, each interpreter runs\n"
		    "under each set.  A COMMAND is one argument, split into words as a shell would\n"
		    "(quotes, backslashes) but run without one.  The targets' stdout and stderr are\n"
		    "discarded unless --show-output.  Defaults: -n 10, --warmup 1.\n\n"
		    "SET: none, or a comma-separated list of cpus=F, memory=SIZE, swap=SIZE,\n"
		    "pids=N, cpuset=LIST, preset=NAME, on top of --cpus, --memory, ... if given.\n\n",
	.footer = "Exit status: as profile's (docs/exit-codes.md): 0 ok, 2 usage, 3 limits\n"
		  "unavailable, 4 interpreter unusable, 5-9 a target failed in a run (the\n"
		  "comparison is still printed).  See docs/compare.md.\n",
};

static int set_output(const struct opt *opt, const char *v, struct buf *err)
{
	struct compare_opts *o = opt->value;

	if (!strcmp(v, "-")) {
		if (output_take_stdout(&o->stdout_users, "-o -", err) < 0)
			return -1;
	} else if (output_path_check(v, err) < 0) {
		return ARGS_FAILED;
	}
	o->output = v;
	return 0;
}

static int set_json(const struct opt *opt, const char *v, struct buf *err)
{
	struct compare_opts *o = opt->value;

	if (!o->json_stdout && output_take_stdout(&o->stdout_users, "--json", err) < 0)
		return -1;
	o->json_stdout = true;
	return 0;
}

static int set_json_fd(const struct opt *opt, const char *v, struct buf *err)
{
	struct compare_opts *o = opt->value;
	char *end;
	long fd;

	errno = 0;
	fd = strtol(v, &end, 10);
	if (errno || end == v || *end || fd < 0 || fd > 1000000) {
		buf_addf(err, "--json-fd needs a descriptor number, not '%s'", v);
		return -1;
	}
	if (fd == 1)
		return set_json(opt, NULL, err);
	if (output_fd_claim((int)fd, "--json-fd", err) < 0)
		return ARGS_FAILED;
	o->json_fd = (int)fd;
	return 0;
}

static int set_markdown(const struct opt *opt, const char *v, struct buf *err)
{
	struct compare_opts *o = opt->value;

	if (!strcmp(v, "-")) {
		if (output_take_stdout(&o->stdout_users, "--markdown -", err) < 0)
			return -1;
	} else if (output_path_check(v, err) < 0) {
		return ARGS_FAILED;
	}
	o->markdown = v;
	return 0;
}

/*
 * Splits a command line into words as a POSIX shell would for a simple
 * command: blanks separate, '...' is literal, "..." keeps \", \\, \$ and \`
 * escapes, a backslash quotes the next character.  Nothing is expanded, and
 * an unquoted operator (| & ; < > ( ) $ `) is an error: no shell runs it.
 */
static int split_words(const char *line, struct strvec *out, struct buf *err)
{
	struct buf w = BUF_INIT;
	const char *s = line;
	bool in_word = false;
	int ret = -1;

	for (;;) {
		char c = *s;

		if (!c || c == ' ' || c == '\t' || c == '\n') {
			if (in_word)
				strvec_push(out, w.buf);
			buf_reset(&w);
			in_word = false;
			if (!c)
				break;
			s++;
			continue;
		}
		in_word = true;
		if (c == '\'') {
			const char *end = strchr(s + 1, '\'');

			if (!end) {
				buf_addf(err, "command '%s': a ' is not closed", line);
				goto out;
			}
			buf_add(&w, s + 1, (size_t)(end - s - 1));
			s = end + 1;
		} else if (c == '"') {
			for (s++; *s && *s != '"'; s++) {
				if (*s == '\\' && s[1] && strchr("\"\\$`", s[1]))
					s++;
				buf_addch(&w, *s);
			}
			if (!*s) {
				buf_addf(err, "command '%s': a \" is not closed", line);
				goto out;
			}
			s++;
		} else if (c == '\\') {
			if (s[1])
				buf_addch(&w, s[1]);
			s += s[1] ? 2 : 1;
		} else if (strchr("|&;<>()$`", c)) {
			buf_addf(err,
				 "command '%s': '%c' needs a shell, and compare runs none "
				 "(quote it, or run the command as sh -c '...')",
				 line, c);
			goto out;
		} else {
			buf_addch(&w, c);
			s++;
		}
	}
	ret = out->nr ? 0 : -1;
	if (ret)
		buf_addf(err, "an empty command");
out:
	buf_release(&w);
	return ret;
}

/* A deep copy of the limits in src into dst. */
static void limits_copy(struct limits *dst, const struct limits *src)
{
	*dst = *src;
	dst->cpuset = src->cpuset ? xstrdup(src->cpuset) : NULL;
	dst->preset = src->preset ? xstrdup(src->preset) : NULL;
	dst->backend = src->backend ? xstrdup(src->backend) : NULL;
}

/* Applies a --limits SET ("none" or "cpus=0.1,memory=128m") over lim. */
static int apply_limit_set(struct limits *lim, const char *set, struct buf *err)
{
	char *copy, *item, *next;
	int ret = 0;

	if (!strcmp(set, "none")) {
		limits_release(lim);
		memset(lim, 0, sizeof(*lim));
		return 0;
	}
	copy = xstrdup(set);
	for (item = copy; item && !ret; item = next) {
		char *eq;

		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		eq = strchr(item, '=');
		if (!eq || eq == item) {
			buf_addf(err,
				 "--limits '%s': '%s' is not NAME=VALUE (cpus, memory, swap, pids, cpuset, preset)",
				 set, item);
			ret = -1;
			break;
		}
		*eq = '\0';
		if (strcmp(item, "cpus") && strcmp(item, "memory") && strcmp(item, "swap") && strcmp(item, "pids") &&
		    strcmp(item, "cpuset") && strcmp(item, "preset")) {
			buf_addf(err, "--limits '%s': no limit '%s' (cpus, memory, swap, pids, cpuset, preset)", set,
				 item);
			ret = -1;
		} else if (limits_set(lim, item, eq + 1, err) < 0) {
			ret = -1;
		}
	}
	free(copy);
	if (!ret && limits_check(lim, err) < 0)
		ret = -1;
	return ret;
}

static void sample_add(struct sample *s, int64_t v)
{
	if (v == UNKNOWN)
		return;
	s->v = xrealloc(s->v, st_mult(s->nr + 1, sizeof(*s->v)));
	s->v[s->nr++] = v;
}

static int64_t run_metric(const struct run *r, enum metric m)
{
	switch (m) {
	case M_WALL: return r->wall_us;
	case M_IMPORTS: return run_import_total_us(r, 1);
	case M_CPU: return r->user_us == UNKNOWN || r->sys_us == UNKNOWN ? UNKNOWN : r->user_us + r->sys_us;
	case M_READY: return r->ready_us;
	default: return UNKNOWN;
	}
}

static void variant_release(struct variant *v)
{
	size_t m;

	measure_session_release(&v->s);
	profile_release(&v->p);
	strvec_clear(&v->argv);
	strvec_clear(&v->env);
	free(v->label);
	free(v->python);
	free(v->outlier);
	for (m = 0; m < M__COUNT; m++)
		free(v->metric[m].v);
}

/* The summaries of every variant's measured runs and each one against A. */
static void compare_runs(struct comparison *c, bool ready)
{
	size_t j, m, i;

	for (j = 0; j < c->nr; j++) {
		struct variant *v = &c->v[j];

		for (i = 0; i < v->p.nr_runs; i++)
			if (!v->p.runs[i].warmup)
				for (m = 0; m < M__COUNT; m++)
					sample_add(&v->metric[m], run_metric(&v->p.runs[i], (enum metric)m));
		v->outlier = xcalloc(v->metric[M_WALL].nr + 1, sizeof(*v->outlier));
		v->nr_outliers = mark_outliers(v->metric[M_WALL].v, v->metric[M_WALL].nr, v->outlier);
		for (m = 0; m < M__COUNT; m++) {
			int64_t *copy = xmalloc(st_mult(v->metric[m].nr + 1, sizeof(*copy)));

			memcpy(copy, v->metric[m].v, v->metric[m].nr * sizeof(*copy));
			summarize(copy, v->metric[m].nr, &v->metric[m].s);
			free(copy);
		}
	}
	for (m = 0; m < M__COUNT; m++) {
		double *p = xcalloc(c->nr, sizeof(*p));
		const struct sample *a = &c->v[0].metric[m];

		if (m == M_READY && !ready) {
			free(p);
			continue;
		}
		for (j = 1; j < c->nr; j++) {
			struct variant *v = &c->v[j];
			const struct sample *b = &v->metric[m];

			p[j - 1] = 1;
			if (!a->nr || !b->nr)
				continue;
			v->vs.ratio[m] = a->s.median > 0 ? (double)b->s.median / (double)a->s.median : 0;
			mann_whitney(a->v, a->nr, b->v, b->nr, &v->vs.mw[m]);
			p[j - 1] = v->vs.mw[m].p;
		}
		holm_adjust(p, c->nr - 1);
		for (j = 1; j < c->nr; j++)
			c->v[j].vs.p_adj[m] = p[j - 1];
		free(p);
	}
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

static int64_t median_of(const int64_t *v, size_t n)
{
	int64_t *copy, med;

	if (!n)
		return 0;
	copy = xmalloc(st_mult(n, sizeof(*copy)));
	memcpy(copy, v, n * sizeof(*copy));
	qsort(copy, n, sizeof(*copy), cmp_i64);
	med = n % 2 ? copy[n / 2] : (copy[n / 2 - 1] + copy[n / 2]) / 2;
	free(copy);
	return med;
}

/* The row of module name, added when new (a linear probe over a table sized by the caller). */
static size_t module_row(struct comparison *c, size_t *slots, size_t nr_slots, const char *name)
{
	size_t i = (size_t)hash_str(name) & (nr_slots - 1), k;

	while (slots[i] && strcmp(c->rows[slots[i] - 1].name, name))
		i = (i + 1) & (nr_slots - 1);
	if (slots[i])
		return slots[i] - 1;
	ALLOC_GROW(c->rows, c->nr_rows + 1, c->alloc_rows);
	c->rows[c->nr_rows].name = xstrdup(name);
	c->rows[c->nr_rows].v = xcalloc(c->nr, sizeof(int64_t *));
	for (k = 0; k < c->nr; k++)
		c->rows[c->nr_rows].v[k] = xcalloc(c->v[k].metric[M_WALL].nr + c->v[k].p.nr_runs + 1, sizeof(int64_t));
	c->rows[c->nr_rows].median = xcalloc(c->nr, sizeof(int64_t));
	c->rows[c->nr_rows].present = xcalloc(c->nr, sizeof(size_t));
	slots[i] = ++c->nr_rows;
	return c->nr_rows - 1;
}

static int cmp_diff(const void *x, const void *y)
{
	const struct module_diff *a = x, *b = y;
	int64_t da = a->delta < 0 ? -a->delta : a->delta, db = b->delta < 0 ? -b->delta : b->delta;

	return da > db ? -1 : da < db;
}

/* Every module's self time per measured run (0 where a run did not import it), and the differences with A. */
static void compare_modules(struct comparison *c)
{
	size_t nr_slots = 1024, *slots, j, i, k, total = 0;
	size_t *runs = xcalloc(c->nr, sizeof(*runs));

	for (j = 0; j < c->nr; j++)
		for (i = 0; i < c->v[j].p.nr_runs; i++)
			if (!c->v[j].p.runs[i].warmup && c->v[j].p.runs[i].nr_procs)
				total += c->v[j].p.runs[i].procs[0].nr_nodes;
	while (nr_slots < total * 2)
		nr_slots *= 2;
	slots = xcalloc(nr_slots, sizeof(*slots));
	for (j = 0; j < c->nr; j++) {
		const struct profile *p = &c->v[j].p;

		for (i = 0; i < p->nr_runs; i++) {
			const struct run *r = &p->runs[i];
			const struct proc *pr;

			if (r->warmup)
				continue;
			if (r->nr_procs) {
				pr = &r->procs[0];
				for (k = 0; k < pr->nr_nodes; k++) {
					struct module_row *row;
					size_t ri;

					if (pr->nodes[k].kind == KIND_TOOL || pr->nodes[k].self_us == UNKNOWN)
						continue;
					ri = module_row(c, slots, nr_slots, node_name(pr, (int32_t)k));
					row = &c->rows[ri];
					if (!row->v[j][runs[j]])
						row->present[j]++;
					row->v[j][runs[j]] += pr->nodes[k].self_us > 0 ? pr->nodes[k].self_us : 0;
				}
			}
			runs[j]++;
		}
	}
	for (i = 0; i < c->nr_rows; i++)
		for (j = 0; j < c->nr; j++)
			c->rows[i].median[j] = median_of(c->rows[i].v[j], runs[j]);
	c->diffs = xcalloc(c->nr, sizeof(*c->diffs));
	c->nr_tested = xcalloc(c->nr, sizeof(*c->nr_tested));
	for (j = 1; j < c->nr; j++) {
		struct module_diff *d = xcalloc(c->nr_rows + 1, sizeof(*d));
		double *p = xcalloc(c->nr_rows + 1, sizeof(*p));
		size_t nt = 0;

		for (i = 0; i < c->nr_rows; i++) {
			const struct module_row *row = &c->rows[i];

			d[i].row = i;
			d[i].delta = row->median[j] - row->median[0];
			d[i].p_adj = 1;
			if (runs[0] && runs[j] && (row->present[0] || row->present[j])) {
				mann_whitney(row->v[0], runs[0], row->v[j], runs[j], &d[i].mw);
				d[i].tested = true;
				p[nt++] = d[i].mw.p;
			}
		}
		holm_adjust(p, nt);
		for (i = 0, k = 0; i < c->nr_rows; i++)
			if (d[i].tested)
				d[i].p_adj = p[k++];
		qsort(d, c->nr_rows, sizeof(*d), cmp_diff);
		c->diffs[j] = d;
		c->nr_tested[j] = nt;
		free(p);
	}
	free(slots);
	free(runs);
}

static void comparison_release(struct comparison *c)
{
	size_t i, j;

	for (i = 0; i < c->nr_rows; i++) {
		for (j = 0; j < c->nr; j++)
			free(c->rows[i].v[j]);
		free(c->rows[i].v);
		free(c->rows[i].median);
		free(c->rows[i].present);
		free(c->rows[i].name);
	}
	free(c->rows);
	if (c->diffs)
		for (j = 0; j < c->nr; j++)
			free(c->diffs[j]);
	free(c->diffs);
	free(c->nr_tested);
}

/* "1.23x slower", "1.10x faster", "same" from the ratio of medians. */
static void add_ratio(struct buf *out, double ratio)
{
	if (ratio <= 0)
		buf_adds(out, "?");
	else if (fabs(ratio - 1) < 0.005)
		buf_adds(out, "same");
	else if (ratio > 1)
		buf_addf(out, "%.2fx slower", ratio);
	else
		buf_addf(out, "%.2fx faster", 1 / ratio);
}

/* What a p-value says, in words: significant, cannot be with so few runs, or within noise. */
static void add_verdict(struct buf *out, const struct mw_result *mw, double p_adj)
{
	if (p_adj < ALPHA)
		buf_adds(out, "significant");
	else if (mw->exact && mw->p_min >= ALPHA)
		buf_adds(out, "cannot be significant, too few runs");
	else
		buf_adds(out, "not significant");
}

static void add_p(struct buf *out, double p)
{
	if (p < 0.0001)
		buf_adds(out, "<0.0001");
	else
		buf_addf(out, "%.4f", p);
}

static void add_signed_duration(struct buf *out, int64_t us)
{
	buf_addch(out, us < 0 ? '-' : '+');
	buf_add_duration(out, us < 0 ? -us : us);
}

static void rtrim_spaces(struct buf *out)
{
	while (out->len && out->buf[out->len - 1] == ' ')
		buf_setlen(out, out->len - 1);
}

/* s, then spaces up to width columns (counting UTF-8 characters, not bytes). */
static void add_padded(struct buf *out, const char *s, int width)
{
	int n = 0;
	const char *c;

	for (c = s; *c; c++)
		n += ((unsigned char)*c & 0xc0) != 0x80;
	buf_adds(out, s);
	if (n < width)
		buf_addf(out, "%*s", width - n, "");
}

/* "41.2 ms ± 0.5 ms" of a summary. */
static void add_median(struct buf *out, const struct summary *s, const char *pm)
{
	if (!s->n) {
		buf_adds(out, "-");
		return;
	}
	buf_add_duration(out, s->median);
	buf_addf(out, " %s ", pm);
	buf_add_duration(out, s->mad);
}

static void add_range(struct buf *out, const struct summary *s, const char *dots)
{
	if (!s->n) {
		buf_adds(out, "-");
		return;
	}
	buf_add_duration(out, s->min);
	buf_addf(out, " %s ", dots);
	buf_add_duration(out, s->max);
}

static size_t measured_runs(const struct variant *v)
{
	return v->metric[M_WALL].nr;
}

static void render_table(const struct comparison *c, bool ready, struct buf *out)
{
	const struct compare_opts *o = c->o;
	size_t j, i, m;

	buf_addf(out, "coldstart compare: %zu %s, %d measured runs each, interleaved", c->nr, c->what, o->m.runs);
	buf_addf(out, " after %d warm-up round%s%s\n", measure_warmups(&o->m), measure_warmups(&o->m) == 1 ? "" : "s",
		 o->m.cold ? ", page cache evicted before each run (--cold)" : "");
	for (j = 0; j < c->nr; j++)
		buf_addf(out, "  %s  %s\n", c->v[j].id, c->v[j].label);
	buf_addch(out, '\n');
	for (m = 0; m < M__COUNT; m++) {
		if (m == M_READY && !ready)
			continue;
		buf_addf(out, "  %-8s ", metric_name[m]);
		add_padded(out, "median ± MAD", 24);
		buf_addch(out, ' ');
		add_padded(out, m == M_WALL ? "min … max" : "min … max", 26);
		buf_adds(out, m == M_WALL ? " outliers" : "");
		rtrim_spaces(out);
		buf_addch(out, '\n');
		for (j = 0; j < c->nr; j++) {
			const struct variant *v = &c->v[j];
			struct buf a = BUF_INIT, b = BUF_INIT;

			add_median(&a, &v->metric[m].s, "±");
			add_range(&b, &v->metric[m].s, "…");
			buf_addf(out, "  %-8s ", v->id);
			add_padded(out, a.buf, 24);
			buf_addch(out, ' ');
			add_padded(out, b.buf, 26);
			if (m == M_WALL && v->nr_outliers) {
				bool first = true;

				buf_addf(out, " %zu (run", v->nr_outliers);
				for (i = 0; i < v->metric[M_WALL].nr; i++)
					if (v->outlier[i]) {
						buf_addf(out, "%s %zu", first ? "" : ",", i + 1);
						first = false;
					}
				buf_addch(out, ')');
			}
			rtrim_spaces(out);
			buf_addch(out, '\n');
			buf_release(&a);
			buf_release(&b);
		}
	}
	buf_addch(out, '\n');
	for (j = 1; j < c->nr; j++) {
		const struct variant *v = &c->v[j];
		bool first = true;

		for (m = 0; m < M__COUNT; m++) {
			if ((m == M_READY && !ready) || !v->metric[m].nr || !c->v[0].metric[m].nr)
				continue;
			if (first)
				buf_addf(out, "  %s vs A   %-8s ", v->id, metric_name[m]);
			else
				buf_addf(out, "           %-8s ", metric_name[m]);
			first = false;
			add_ratio(out, v->vs.ratio[m]);
			buf_adds(out, " (");
			add_signed_duration(out, v->metric[m].s.median - c->v[0].metric[m].s.median);
			buf_adds(out, "), p ");
			add_p(out, v->vs.p_adj[m]);
			buf_adds(out, ": ");
			add_verdict(out, &v->vs.mw[m], v->vs.p_adj[m]);
			buf_addch(out, '\n');
		}
	}
	for (j = 1; j < c->nr; j++) {
		const struct module_diff *d = c->diffs[j];
		size_t shown = 0, significant = 0;

		if (!o->top || !c->nr_rows)
			continue;
		buf_addf(out, "\nmodules that differ most, %s against A (self time, median of the measured runs):\n",
			 c->v[j].id);
		buf_addf(out, "  %-38s %10s %10s %11s %9s\n", "module", "A", c->v[j].id, "difference", "p");
		for (i = 0; i < c->nr_rows && shown < (size_t)o->top; i++) {
			const struct module_row *row = &c->rows[d[i].row];
			struct buf name = BUF_INIT, x = BUF_INIT;

			if (!d[i].delta)
				break;
			significant += d[i].p_adj < ALPHA;
			if (strlen(row->name) > 38)
				buf_addf(&name, "…%s", row->name + strlen(row->name) - 37);
			else
				buf_adds(&name, row->name);
			buf_adds(out, "  ");
			add_padded(out, name.buf, 38);
			buf_reset(&x);
			if (row->present[0])
				buf_add_duration(&x, row->median[0]);
			else
				buf_adds(&x, "absent");
			buf_addf(out, " %10s", x.buf);
			buf_reset(&x);
			if (row->present[j])
				buf_add_duration(&x, row->median[j]);
			else
				buf_adds(&x, "absent");
			buf_addf(out, " %10s", x.buf);
			buf_reset(&x);
			add_signed_duration(&x, d[i].delta);
			buf_addf(out, " %11s ", x.buf);
			buf_reset(&x);
			if (d[i].tested)
				add_p(&x, d[i].p_adj);
			buf_addf(out, "%8s%s\n", x.buf, d[i].p_adj < ALPHA ? " *" : "");
			buf_release(&name);
			buf_release(&x);
			shown++;
		}
		if (!shown)
			buf_adds(out, "  (no module's median differs)\n");
		else if (significant)
			buf_addf(out, "  * significant at 5%% after Holm's adjustment over the %zu modules compared\n",
				 c->nr_tested[j]);
		else
			buf_addf(out,
				 "  none significant at 5%% after Holm's adjustment over the %zu modules compared\n",
				 c->nr_tested[j]);
	}
	buf_addf(out, "\ntest: Mann-Whitney U, two-sided, %s; p adjusted (Holm) for the %zu comparison%s with A\n",
		 measured_runs(&c->v[0]) * 2 <= COMPARE_EXACT_MAX ? "exact" : "normal approximation", c->nr - 1,
		 c->nr == 2 ? "" : "s");
	for (j = 1; j < c->nr; j++)
		if (c->v[j].vs.mw[M_WALL].exact && c->v[j].vs.mw[M_WALL].p_min >= ALPHA) {
			buf_addf(out,
				 "with %zu and %zu runs the exact test cannot go below p = %.2g, whatever the times: "
				 "use -n 5 or more\n",
				 measured_runs(&c->v[0]), measured_runs(&c->v[j]), c->v[j].vs.mw[M_WALL].p_min);
			break;
		}
}

/* Markdown cells must not break the table: a '|' is escaped, newlines become spaces. */
static void md_cell(struct buf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			buf_adds(out, "\\|");
		else if (*s == '\n')
			buf_addch(out, ' ');
		else
			buf_addch(out, *s);
	}
}

static void render_markdown(const struct comparison *c, bool ready, struct buf *out)
{
	const struct compare_opts *o = c->o;
	size_t j, i, m;

	buf_addf(out, "### coldstart compare: %zu %s\n\n", c->nr, c->what);
	buf_adds(out, "| | variant | wall (median ± MAD) | min … max | imports | CPU |");
	if (ready)
		buf_adds(out, " ready |");
	buf_adds(out, " vs A | p |\n|---|---|---:|---:|---:|---:|");
	if (ready)
		buf_adds(out, "---:|");
	buf_adds(out, "---|---:|\n");
	for (j = 0; j < c->nr; j++) {
		const struct variant *v = &c->v[j];

		buf_addf(out, "| %s | ", v->id);
		md_cell(out, v->label);
		buf_adds(out, " | ");
		add_median(out, &v->metric[M_WALL].s, "±");
		buf_adds(out, " | ");
		add_range(out, &v->metric[M_WALL].s, "…");
		for (m = M_IMPORTS; m < M__COUNT; m++) {
			if (m == M_READY && !ready)
				continue;
			buf_adds(out, " | ");
			if (v->metric[m].nr)
				buf_add_duration(out, v->metric[m].s.median);
			else
				buf_adds(out, "-");
		}
		buf_adds(out, " | ");
		if (j) {
			bool sig = v->vs.p_adj[M_WALL] < ALPHA;

			buf_adds(out, sig ? "**" : "");
			add_ratio(out, v->vs.ratio[M_WALL]);
			buf_adds(out, sig ? "**" : "");
			buf_adds(out, " | ");
			add_p(out, v->vs.p_adj[M_WALL]);
		} else {
			buf_adds(out, "baseline | ");
		}
		buf_adds(out, " |\n");
	}
	for (j = 1; j < c->nr; j++) {
		const struct module_diff *d = c->diffs[j];
		size_t shown = 0;

		if (!o->top || !c->nr_rows)
			continue;
		buf_addf(out, "\n<details><summary>Modules that differ most, %s against A (self time)</summary>\n\n",
			 c->v[j].id);
		buf_addf(out, "| module | A | %s | difference | p |\n|---|---:|---:|---:|---:|\n", c->v[j].id);
		for (i = 0; i < c->nr_rows && shown < (size_t)o->top && d[i].delta; i++, shown++) {
			const struct module_row *row = &c->rows[d[i].row];

			buf_adds(out, "| `");
			md_cell(out, row->name);
			buf_adds(out, "` | ");
			if (row->present[0])
				buf_add_duration(out, row->median[0]);
			else
				buf_adds(out, "absent");
			buf_adds(out, " | ");
			if (row->present[j])
				buf_add_duration(out, row->median[j]);
			else
				buf_adds(out, "absent");
			buf_adds(out, " | ");
			add_signed_duration(out, d[i].delta);
			buf_adds(out, " | ");
			if (d[i].tested)
				add_p(out, d[i].p_adj);
			buf_adds(out, d[i].p_adj < ALPHA ? " **\\***" : "");
			buf_adds(out, " |\n");
		}
		buf_adds(out, "\n</details>\n");
	}
	buf_addf(out,
		 "\n%d measured runs each, interleaved, after %d warm-up round%s%s. Mann-Whitney U test, "
		 "two-sided, Holm-adjusted; **bold** and \\* mark p < 0.05.\n",
		 o->m.runs, measure_warmups(&o->m), measure_warmups(&o->m) == 1 ? "" : "s",
		 o->m.cold ? "; page cache evicted before each run" : "");
}

static json_t *json_i64(int64_t v)
{
	return v == UNKNOWN ? json_null() : json_integer((json_int_t)v);
}

static json_t *json_summary(const struct sample *s)
{
	json_t *o = json_object(), *values = json_array();
	size_t i;

	for (i = 0; i < s->nr; i++)
		json_array_append_new(values, json_integer((json_int_t)s->v[i]));
	json_object_set_new(o, "n", json_integer((json_int_t)s->s.n));
	json_object_set_new(o, "median", s->s.n ? json_integer(s->s.median) : json_null());
	json_object_set_new(o, "mad", s->s.n ? json_integer(s->s.mad) : json_null());
	json_object_set_new(o, "min", s->s.n ? json_integer(s->s.min) : json_null());
	json_object_set_new(o, "max", s->s.n ? json_integer(s->s.max) : json_null());
	json_object_set_new(o, "values", values);
	return o;
}

static json_t *json_test(const struct mw_result *mw, double p_adj)
{
	json_t *o = json_object();

	json_object_set_new(o, "u", json_real(mw->u));
	json_object_set_new(o, "p", json_real(mw->p));
	json_object_set_new(o, "p_adjusted", json_real(p_adj));
	json_object_set_new(o, "exact", json_boolean(mw->exact));
	json_object_set_new(o, "significant", json_boolean(p_adj < ALPHA));
	if (mw->exact)
		json_object_set_new(o, "p_min", json_real(mw->p_min));
	return o;
}

static char *render_json(const struct comparison *c, bool ready)
{
	const struct compare_opts *o = c->o;
	json_t *root = json_object(), *vars = json_array(), *cmps = json_array();
	struct buf lim = BUF_INIT;
	size_t j, i, m;
	char *text;

	json_object_set_new(root, "format", json_string("coldstart-compare"));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "tool_version", json_string(COLDSTART_VERSION));
	json_object_set_new(root, "created", json_string(c->v[0].p.created ? c->v[0].p.created : ""));
	json_object_set_new(root, "runs", json_integer(o->m.runs));
	json_object_set_new(root, "warmup", json_integer(measure_warmups(&o->m)));
	json_object_set_new(root, "cold", json_boolean(o->m.cold));
	json_object_set_new(root, "interleaved", json_true());
	json_object_set_new(root, "test", json_string("mann-whitney-u"));
	json_object_set_new(root, "alternative", json_string("two-sided"));
	json_object_set_new(root, "adjustment", json_string("holm"));
	json_object_set_new(root, "alpha", json_real(ALPHA));
	for (j = 0; j < c->nr; j++) {
		const struct variant *v = &c->v[j];
		json_t *jv = json_object(), *target = json_array(), *runs = json_array(), *metrics = json_object();
		size_t k = 0;

		json_object_set_new(jv, "id", json_string(v->id));
		json_object_set_new(jv, "label", json_string(v->label));
		json_object_set_new(jv, "python", v->p.python ? json_string(v->p.python) : json_null());
		json_object_set_new(jv, "python_version",
				    v->p.python_version ? json_string(v->p.python_version) : json_null());
		for (i = 0; i < v->p.target.nr; i++)
			json_array_append_new(target, json_string(v->p.target.v[i]));
		json_object_set_new(jv, "target", target);
		buf_reset(&lim);
		limits_describe(&v->p.limits, &lim);
		json_object_set_new(jv, "limits", json_string(lim.buf));
		for (m = 0; m < M__COUNT; m++)
			if (m != M_READY || ready)
				json_object_set_new(metrics, metric_key[m], json_summary(&v->metric[m]));
		json_object_set_new(jv, "metrics", metrics);
		for (i = 0; i < v->p.nr_runs; i++) {
			const struct run *r = &v->p.runs[i];
			json_t *jr = json_object();

			json_object_set_new(jr, "warmup", json_boolean(r->warmup));
			json_object_set_new(jr, "status", json_string(run_status_name(r->status)));
			json_object_set_new(jr, "exit_code", json_integer(r->exit_code));
			for (m = 0; m < M__COUNT; m++)
				if (m != M_READY || ready)
					json_object_set_new(jr, metric_key[m], json_i64(run_metric(r, (enum metric)m)));
			json_object_set_new(jr, "cold",
					    r->cold.asked ? json_boolean(cold_figures_took(&r->cold)) : json_null());
			if (!r->warmup) {
				json_object_set_new(jr, "outlier",
						    json_boolean(r->wall_us != UNKNOWN && v->outlier[k]));
				if (r->wall_us != UNKNOWN)
					k++;
			}
			json_array_append_new(runs, jr);
		}
		json_object_set_new(jv, "runs", runs);
		json_array_append_new(vars, jv);
	}
	json_object_set_new(root, "variants", vars);
	for (j = 1; j < c->nr; j++) {
		const struct variant *v = &c->v[j];
		json_t *jc = json_object(), *mods = json_array();

		json_object_set_new(jc, "a", json_string("A"));
		json_object_set_new(jc, "b", json_string(v->id));
		for (m = 0; m < M__COUNT; m++) {
			json_t *jm;

			if ((m == M_READY && !ready) || !v->metric[m].nr || !c->v[0].metric[m].nr)
				continue;
			jm = json_test(&v->vs.mw[m], v->vs.p_adj[m]);
			json_object_set_new(jm, "ratio", json_real(v->vs.ratio[m]));
			json_object_set_new(jm, "difference_us",
					    json_integer(v->metric[m].s.median - c->v[0].metric[m].s.median));
			json_object_set_new(jc, metric_key[m], jm);
		}
		for (i = 0; i < c->nr_rows; i++) {
			const struct module_diff *d = &c->diffs[j][i];
			const struct module_row *row = &c->rows[d->row];
			json_t *jm;

			if (!d->tested)
				continue;
			jm = d->tested ? json_test(&d->mw, d->p_adj) : json_object();
			json_object_set_new(jm, "module", json_string(row->name));
			json_object_set_new(jm, "a_self_us", json_integer(row->median[0]));
			json_object_set_new(jm, "b_self_us", json_integer(row->median[j]));
			json_object_set_new(jm, "difference_us", json_integer(d->delta));
			json_object_set_new(jm, "a_present", json_integer((json_int_t)row->present[0]));
			json_object_set_new(jm, "b_present", json_integer((json_int_t)row->present[j]));
			json_array_append_new(mods, jm);
		}
		json_object_set_new(jc, "modules", mods);
		json_array_append_new(cmps, jc);
	}
	json_object_set_new(root, "comparisons", cmps);
	text = json_dumps(root, JSON_INDENT(1) | JSON_ENSURE_ASCII);
	json_decref(root);
	buf_release(&lim);
	return text;
}

/* Writes text to path ("-": stdout) or fd (>= 0). */
static int write_out(const char *path, int fd, const char *text)
{
	size_t n = strlen(text);
	FILE *f;

	if (fd >= 0) {
		while (n) {
			ssize_t w = write(fd, text, n);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				error("cannot write to descriptor %d: %s", fd, strerror(errno));
				return -1;
			}
			text += w;
			n -= (size_t)w;
		}
		return 0;
	}
	f = strcmp(path, "-") ? fopen(path, "we") : stdout;
	if (!f || fwrite(text, 1, n, f) != n || (f == stdout ? fflush(f) : fclose(f))) {
		error("cannot write '%s': %s", path, strerror(errno));
		if (f && f != stdout)
			fclose(f);
		return -1;
	}
	return 0;
}

/* The label of a variant: what makes it differ, or its --name. */
static char *variant_label(const struct compare_opts *o, size_t j, const char *python, const char *limit_set,
			   const char *command)
{
	struct buf b = BUF_INIT;

	if (j < o->names.nr)
		return xstrdup(o->names.v[j]);
	if (command)
		buf_adds(&b, command);
	if (python && o->pythons.nr > 1)
		buf_addf(&b, "%s%s", b.len ? ", " : "", python);
	if (limit_set && o->limit_sets.nr > 1)
		buf_addf(&b, "%s%s", b.len ? ", " : "", limit_set);
	if (!b.len)
		buf_adds(&b, python ? python : "");
	return buf_detach(&b, NULL);
}

/* Sets up variant v to run: its profile, session, argv; 0 or an exit code after a message. */
static int variant_setup(struct compare_opts *o, struct variant *v, size_t j, const struct limits *common,
			 const char *limit_set, int argc, char **argv, int i, const char *python, const char *command)
{
	struct buf err = BUF_INIT, where = BUF_INIT;
	char cwd[PATH_MAX];
	int ret = 0;
	bool command_mode = command || !strcmp(argv[i], "--");

	v->id[0] = (char)('A' + j);
	profile_init(&v->p);
	strvec_init(&v->argv);
	strvec_init(&v->env);
	measure_session_init(&v->s, &v->p, "compare", &o->m, NULL, &measure_local);
	limits_copy(&v->p.limits, common);
	if (limit_set && apply_limit_set(&v->p.limits, limit_set, &err) < 0) {
		error("%s", err.buf);
		ret = EXIT_USAGE;
		goto out;
	}
	if (command) {
		struct strvec words = STRVEC_INIT;

		if (split_words(command, &words, &err) < 0) {
			strvec_clear(&words);
			error("%s", err.buf);
			ret = EXIT_USAGE;
			goto out;
		}
		ret = measure_target_argv((int)words.nr, (char **)words.v, 0, NULL, &v->p, &v->argv, &v->env);
		v->python = measure_command_python(words.v[0]);
		strvec_clear(&words);
	} else {
		int k = command_mode ? i + 1 : i;

		ret = measure_target_argv(argc, argv, k, command_mode ? NULL : python, &v->p, &v->argv, &v->env);
		v->python = command_mode ? (k < argc ? measure_command_python(argv[k]) : NULL) : xstrdup(python);
	}
	if (ret)
		goto out;
	v->p.python = xstrdup(v->python ? v->python : v->p.target.v[0]);
	if (getcwd(cwd, sizeof(cwd)))
		v->p.cwd = xstrdup(cwd);
	v->label = variant_label(o, j, v->python, limit_set, command);
	if (v->python) {
		buf_addf(&where, "at '%s'", v->python);
		ret = measure_probe(&v->s, v->python, where.buf);
		if (ret)
			goto out;
		if (!command && v->p.python_version && o->pythons.nr > 1 && o->names.nr <= j) {
			char *l = v->label;
			struct buf b = BUF_INIT;

			buf_addf(&b, "%s (Python %s)", l, v->p.python_version);
			v->label = buf_detach(&b, NULL);
			free(l);
		}
	}
	v->s.ro.argv = v->argv.v;
	v->s.ro.env = v->env.v;
	v->s.ro.python = v->python;
	v->s.ro.trace = !o->m.no_trace;
out:
	buf_release(&err);
	buf_release(&where);
	return ret;
}

/* Round by round, the order rotating, so no variant always runs first (or right after another). */
static int run_rounds(struct comparison *c)
{
	const struct compare_opts *o = c->o;
	int w = measure_warmups(&o->m), rounds = w + o->m.runs, r, ret = 0;
	bool tty = isatty(2);
	size_t j;

	for (r = 0; r < rounds && !ret; r++)
		for (j = 0; j < c->nr && !ret; j++) {
			struct variant *v = &c->v[((size_t)r + j) % c->nr];

			if (tty) {
				fprintf(stderr, "\rcoldstart: %s round %d/%d, %s ", r < w ? "warm-up" : "measured",
					r < w ? r + 1 : r - w + 1, r < w ? w : o->m.runs, v->id);
				fflush(stderr);
			}
			ret = measure_run_one(&v->s, r < w ? MEASURE_WARMUP : MEASURE_MEASURED);
		}
	if (tty)
		fprintf(stderr, "\r%50s\r", "");
	return ret;
}

int cmd_compare(int argc, char **argv)
{
	static const char *const stop_at[] = { "-m", "-c", NULL };
	struct compare_opts o;
	struct comparison c;
	struct limits common;
	struct buf err = BUF_INIT, out = BUF_INIT;
	int i = 1, rc, ret = EXIT_FAIL, devnull = -1;
	size_t np, nl, j, nv = 0, ncmd = 0;
	bool ready;
	const struct opt options[] = {
		OPT_STRINGS("python", 0, &o.pythons, "PATH", "an interpreter to compare; give two or more"),
		OPT_STRINGS("limits", 0, &o.limit_sets, "SET",
			    "a limit set to compare: none, or cpus=F,memory=SIZE,..."),
		OPT_STRINGS("name", 0, &o.names, "NAME", "the name of each variant in turn (default: what differs)"),
		OPT_INCLUDE(o.m.options),
		OPT_INT("top", 0, &o.top, 0, 100000, "N", "modules in each table of differences (default 10)"),
		OPT_CALLBACK("output", 'o', &o, set_output, "FILE", "write the comparison as JSON (- for stdout)"),
		OPT_CALLBACK("json", 0, &o, set_json, NULL, "print the JSON on stdout instead of the table"),
		OPT_CALLBACK("json-fd", 0, &o, set_json_fd, "N", "write the JSON to descriptor N (e.g. 3>cmp.json)"),
		OPT_CALLBACK("markdown", 0, &o, set_markdown, "FILE",
			     "write the comparison as Markdown, for a pull-request comment (- for stdout)"),
		OPT_BOOL("show-output", 0, &o.show_output, "forward the targets' stdout and stderr to stderr"),
		OPT_END(),
	};

	memset(&o, 0, sizeof(o));
	memset(&c, 0, sizeof(c));
	memset(&common, 0, sizeof(common));
	measure_opts_init(&o.m);
	strvec_init(&o.pythons);
	strvec_init(&o.limit_sets);
	strvec_init(&o.names);
	o.m.runs = 10;
	o.m.warmup = 1;
	o.top = 10;
	o.json_fd = -1;
	c.o = &o;

	rc = args_parse(options, argc, argv, &i, stop_at, &err);
	if (rc) {
		ret = usage_stop(&compare_usage, options, rc, err.buf);
		goto out;
	}
	if (measure_opts_finish(&o.m, &common, &err) < 0) {
		ret = usage_error(&compare_usage, "%s", err.buf);
		goto out;
	}
	if (o.show_output)
		o.m.quiet = false;
	else
		o.m.quiet = true;
	np = o.pythons.nr ? o.pythons.nr : 1;
	nl = o.limit_sets.nr ? o.limit_sets.nr : 1;
	if (i >= argc) {
		ret = usage_error(&compare_usage, "nothing to compare: give a TARGET with --python or --limits twice, "
						  "or two or more commands");
		goto out;
	}
	if (np * nl < 2) {
		/* Commands: every argument left is one. */
		if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "-c") || !strcmp(argv[i], "--") || argc - i < 2) {
			ret = usage_error(&compare_usage, "one target is one variant: give --python or --limits twice "
							  "or more, or two or more commands");
			goto out;
		}
		ncmd = (size_t)(argc - i);
		nv = ncmd * nl;
	} else {
		nv = np * nl;
		if (!strcmp(argv[i], "--") && o.pythons.nr) {
			ret = usage_error(&compare_usage, "'-- command' names its own interpreter: --python does not "
							  "apply (give commands, or a script, -m or -c)");
			goto out;
		}
	}
	if (nv > MAX_VARIANTS) {
		ret = usage_error(&compare_usage, "%zu variants: compare takes at most %d", nv, MAX_VARIANTS);
		goto out;
	}
	if (o.names.nr > nv) {
		ret = usage_error(&compare_usage, "%zu names for %zu variants", o.names.nr, nv);
		goto out;
	}
	c.what = ncmd		    ? "commands"
		 : np > 1 && nl > 1 ? "interpreters × limit sets"
		 : np > 1	    ? "interpreters"
				    : "limit sets";
	if (!o.show_output && (devnull = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0) {
		error("cannot open /dev/null: %s", strerror(errno));
		goto out;
	}
	c.v = xcalloc(nv, sizeof(*c.v));
	for (j = 0; j < nv; j++) {
		const char *py = o.pythons.nr		      ? o.pythons.v[j / nl % np]
				 : getenv("COLDSTART_PYTHON") ? getenv("COLDSTART_PYTHON")
							      : "python3";
		const char *set = o.limit_sets.nr ? o.limit_sets.v[j % nl] : NULL;

		c.nr = j + 1;
		ret = variant_setup(&o, &c.v[j], j, &common, set, argc, argv, i, py, ncmd ? argv[i + j / nl] : NULL);
		if (ret)
			goto out;
		c.v[j].s.ro.stdout_fd = o.show_output ? 2 : devnull;
	}
	ret = run_rounds(&c);
	if (!ret)
		ret = measure_runs_done();
	if (ret)
		goto out;
	ready = o.m.ready != NULL;
	for (j = 0; j < c.nr; j++)
		measure_analyze(&c.v[j].s);
	compare_runs(&c, ready);
	compare_modules(&c);
	if (!o.json_stdout && !(o.output && !strcmp(o.output, "-")) && !(o.markdown && !strcmp(o.markdown, "-"))) {
		render_table(&c, ready, &out);
		if (write_out("-", -1, out.buf) < 0)
			ret = EXIT_FAIL;
	}
	if (o.markdown) {
		buf_reset(&out);
		render_markdown(&c, ready, &out);
		if (write_out(o.markdown, -1, out.buf) < 0)
			ret = EXIT_FAIL;
	}
	if (o.output || o.json_stdout || o.json_fd >= 0) {
		char *json = render_json(&c, ready);
		struct buf text = BUF_INIT;

		buf_addf(&text, "%s\n", json);
		free(json);
		if (o.output && write_out(o.output, -1, text.buf) < 0)
			ret = EXIT_FAIL;
		if (o.json_stdout && write_out("-", -1, text.buf) < 0)
			ret = EXIT_FAIL;
		if (o.json_fd >= 0 && write_out(NULL, o.json_fd, text.buf) < 0)
			ret = EXIT_FAIL;
		buf_release(&text);
	}
	/* A target's own failure is said after the comparison, as profile does. */
	for (j = 0; j < c.nr && !ret; j++)
		ret = profile_exit_status(&c.v[j].p, ready, o.m.passthrough_exit);
out:
	comparison_release(&c);
	for (j = 0; j < c.nr; j++)
		variant_release(&c.v[j]);
	free(c.v);
	if (devnull >= 0)
		close(devnull);
	limits_release(&common);
	measure_opts_release(&o.m);
	strvec_clear(&o.pythons);
	strvec_clear(&o.limit_sets);
	strvec_clear(&o.names);
	buf_release(&err);
	buf_release(&out);
	return ret;
}
