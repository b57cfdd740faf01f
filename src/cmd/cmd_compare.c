/*
 * `coldstart compare`: two or more variants of a start-up (commands, one
 * target under several interpreters, or under several limit sets), each a
 * measuring session, run interleaved round by round; then medians, spreads,
 * outliers, ratios and the Mann-Whitney U test (compare.h), down to the
 * modules whose time differs, as a table, Markdown and JSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cmd/builtin.h"
#include "render/compare_report.h"
#include "session/measure.h"
#include "session/measure_cold.h"
#include "model/profile.h"
#include "model/runlimits.h"
#include "session/show.h"
#include "sys/http_load.h"
#include "outfile.h"

#define MAX_VARIANTS 26

struct compare_opts {
	struct measure_opts m;
	struct strvec pythons;
	struct strvec limit_sets;
	struct strvec caches; /* --cache: "warm", "cold" */
	struct strvec names;
	int requests; /* --requests N after ready, 0 without */
	int top;
	bool show_output;
	const char *output; /* JSON file, "-" for stdout */
	bool json_stdout;
	int json_fd;
	const char *markdown; /* Markdown file, "-" for stdout */
	int stdout_users;
};

/* One variant: its own measuring session and profile. */
struct variant {
	char id[2];
	char *label;
	char *python; /* the interpreter to probe, NULL for a command that is none */
	struct profile p;
	struct measure_session s;
	struct strvec argv, env;
	int reruns; /* measured cold runs made again (measure_cold_redo) */
};

static const struct usage compare_usage = {
	.command = "compare",
	.synopsis = "usage: coldstart compare [options] --python A --python B TARGET\n"
		    "       coldstart compare [options] --limits SET --limits SET TARGET\n"
		    "       coldstart compare [options] --cache warm --cache cold TARGET\n"
		    "       coldstart compare [options] 'COMMAND A' 'COMMAND B' ...\n\n"
		    "Runs every variant round by round, interleaved (the order rotates each round),\n"
		    "after warm-up rounds, and compares the medians of their measured runs: wall\n"
		    "time, import time, CPU time (and readiness with --ready), with outliers marked,\n"
		    "the ratio to the first variant and whether the difference is significant\n"
		    "(Mann-Whitney U test, two-sided, Holm-adjusted, at 5%), then the modules whose\n"
		    "self time differs most.  TARGET is as profile takes it (script.py, -m module,\n"
		    "-c code, -- command; options may follow -c code too, the code's own arguments\n"
		    "after --); with --python and --limits both, each interpreter runs under each\n"
		    "set.  A COMMAND is one argument, split into words as a shell would\n"
		    "(quotes, backslashes) but run without one; options may come among the\n"
		    "commands.  The targets' stdout and stderr are discarded unless --show-output.\n"
		    "With --ready http://... and --requests N, each run then sends N requests, one\n"
		    "at a time, and their latency (median, p95) is compared too.  --cache warm\n"
		    "--cache cold compares the page cache kept and evicted (--cold) as variants.\n"
		    "Defaults: -n 10, --warmup 1.\n\n"
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
	int rc = output_fd_arg(v, "--json-fd", &o->json_fd, err);

	return rc == 1 ? set_json(opt, NULL, err) : rc;
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

static void variant_release(struct variant *v)
{
	measure_session_release(&v->s);
	profile_release(&v->p);
	strvec_clear(&v->argv);
	strvec_clear(&v->env);
	free(v->label);
	free(v->python);
}

/* Writes text to path ("-": stdout; a file whole or not at all) or fd (>= 0). */
static int write_out(const char *path, int fd, const char *text)
{
	struct buf err = BUF_INIT;
	size_t n = strlen(text);
	int ret = 0;

	if (fd >= 0) {
		if (write_full(fd, text, n) < 0)
			ret = error("cannot write to descriptor %d: %s", fd, strerror(errno));
	} else if (!strcmp(path, "-")) {
		if (fwrite(text, 1, n, stdout) != n || fflush(stdout))
			ret = error("cannot write to stdout: %s", strerror(errno));
	} else if (outfile_write(path, text, n, &err) < 0) {
		ret = error("%s", err.buf);
	}
	buf_release(&err);
	return ret;
}

/* The label of a variant: what makes it differ, or its --name. */
static char *variant_label(const struct compare_opts *o, size_t j, const char *python, const char *limit_set,
			   const char *cache, const char *command)
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
	if (cache && o->caches.nr > 1)
		buf_addf(&b, "%s%s", b.len ? ", " : "", cache);
	if (!b.len)
		buf_adds(&b, python ? python : "");
	return buf_detach(&b, NULL);
}

/* Sets up variant v to run: its profile, session, argv; 0 or an exit code after a message. */
static int variant_setup(struct compare_opts *o, struct variant *v, size_t j, const struct limits *common,
			 const char *limit_set, const char *cache, int argc, char **argv, int i, const char *python,
			 const char *command)
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
	if (cache)
		v->s.evict = !strcmp(cache, "cold");
	v->s.ro.requests = (size_t)o->requests;
	limits_copy(&v->p.limits, common);
	if (limit_set && limits_apply_set(&v->p.limits, limit_set, &err) < 0) {
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
	v->label = variant_label(o, j, v->python, limit_set, cache, command);
	if (v->python) {
		buf_addf(&where, "at '%s'", v->python);
		ret = measure_probe(&v->s, v->python, where.buf, &err);
		if (err.len)
			error("%s", err.buf);
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
static int run_rounds(struct variant *vars, size_t nr, const struct compare_opts *o, int w)
{
	int rounds = w + o->m.runs, r, ret = 0;
	bool tty = isatty(2);
	size_t j;

	for (r = 0; r < rounds && !ret; r++)
		for (j = 0; j < nr && !ret; j++) {
			struct variant *v = &vars[((size_t)r + j) % nr];

			if (tty) {
				fprintf(stderr, "\rcoldstart: %s round %d/%d, %s ", r < w ? "warm-up" : "measured",
					r < w ? r + 1 : r - w + 1, r < w ? w : o->m.runs, v->id);
				fflush(stderr);
			}
			/* A cold run that read files not evicted before it is made again at once (measure_cold.h). */
			do
				ret = measure_run_one(&v->s, r < w ? MEASURE_WARMUP : MEASURE_MEASURED);
			while (!ret && r >= w && measure_cold_redo(&v->p, r - w + 1, o->m.runs, &v->reruns));
		}
	if (tty)
		fprintf(stderr, "\r%50s\r", "");
	return ret;
}

/* Where option parsing stops: the target's own -m and -c. */
static const char *const stop_at[] = { "-m", "-c", NULL };

/*
 * What is compared: with --python or --limits given two or more times, one
 * target (argv from *ip on); otherwise every argument left is a command, and
 * options may come among them.  Sets *nv variants and *ncmd commands; 0, or
 * the exit status of a usage error.
 */
static int read_variants(const struct opt *options, int argc, char **argv, int *ip, struct compare_opts *o,
			 struct strvec *commands, size_t *nv, size_t *ncmd, struct buf *err)
{
	static const char one_variant[] = "one target is one variant: give --python or --limits twice or more, "
					  "or two or more commands";
	size_t np = o->pythons.nr ? o->pythons.nr : 1, nl = o->limit_sets.nr ? o->limit_sets.nr : 1;
	size_t nc = o->caches.nr ? o->caches.nr : 1;
	int rc;

	if (*ip >= argc)
		return usage_error(&compare_usage, "nothing to compare: give a TARGET with --python or --limits twice, "
						   "or two or more commands");
	/*
	 * --limits or --cache given twice before the commands: an argument with
	 * a blank that names no file is a command line, not a script.
	 */
	if (np * nl * nc >= 2 && !o->pythons.nr && strpbrk(argv[*ip], " \t") && access(argv[*ip], F_OK) < 0)
		np = nl = nc = 1;
	if (np * nl * nc >= 2) {
		*nv = np * nl * nc;
		if (!strcmp(argv[*ip], "--") && o->pythons.nr)
			return usage_error(&compare_usage, "'-- command' names its own interpreter: --python does not "
							   "apply (give commands, or a script, -m or -c)");
		return 0;
	}
	/* Commands: every argument left is one, and options may come among them (a command is one word). */
	if (!strcmp(argv[*ip], "-m") || !strcmp(argv[*ip], "-c") || !strcmp(argv[*ip], "--"))
		return usage_error(&compare_usage, "%s", one_variant);
	while (*ip < argc) {
		const char *a = argv[*ip];

		if (a[0] != '-' || !strcmp(a, "-")) {
			strvec_push(commands, a);
			(*ip)++;
			continue;
		}
		if (!strcmp(a, "--") || !strcmp(a, "-m") || !strcmp(a, "-c"))
			return usage_error(&compare_usage,
					   "'%s' among commands: each command is one argument, "
					   "e.g. 'python3 -c \"import json\"'",
					   a);
		rc = args_parse(options, argc, argv, ip, stop_at, err);
		if (rc)
			return usage_stop(&compare_usage, options, rc, err->buf);
	}
	/* --limits and --cache among the commands multiply them as before them; --python twice cannot apply. */
	nl = o->limit_sets.nr ? o->limit_sets.nr : 1;
	nc = o->caches.nr ? o->caches.nr : 1;
	if (o->pythons.nr > 1)
		return usage_error(&compare_usage, "a command names its own interpreter: --python does not apply "
						   "to commands (give one target with --python A --python B)");
	if (commands->nr * nl * nc < 2)
		return usage_error(&compare_usage, "%s", one_variant);
	*ncmd = commands->nr;
	*nv = *ncmd * nl * nc;
	return 0;
}

/* The table on stdout unless stdout carries JSON or Markdown, then each file asked for; EXIT_FAIL when a write failed. */
static int write_outputs(const struct comparison *c, const struct compare_opts *o)
{
	struct buf out = BUF_INIT;
	int ret = 0;

	if (!o->json_stdout && !(o->output && !strcmp(o->output, "-")) && !(o->markdown && !strcmp(o->markdown, "-"))) {
		compare_render_table(c, &out);
		if (write_out("-", -1, out.buf) < 0)
			ret = EXIT_FAIL;
	}
	if (o->markdown) {
		buf_reset(&out);
		compare_render_markdown(c, &out);
		if (write_out(o->markdown, -1, out.buf) < 0)
			ret = EXIT_FAIL;
	}
	if (o->output || o->json_stdout || o->json_fd >= 0) {
		char *json = compare_render_json(c);
		struct buf text = BUF_INIT;

		buf_addf(&text, "%s\n", json);
		free(json);
		if (o->output && write_out(o->output, -1, text.buf) < 0)
			ret = EXIT_FAIL;
		if (o->json_stdout && write_out("-", -1, text.buf) < 0)
			ret = EXIT_FAIL;
		if (o->json_fd >= 0 && write_out(NULL, o->json_fd, text.buf) < 0)
			ret = EXIT_FAIL;
		buf_release(&text);
	}
	buf_release(&out);
	return ret;
}

/* One `coldstart compare`: its options, the variants it runs and the comparison of them. */
struct compare_cmd {
	struct compare_opts o;
	struct comparison c;
	struct variant *vars;
	size_t nr_vars; /* set up so far, released at the end */
	struct limits common; /* the limits every variant has */
	struct strvec commands; /* -- command per variant, when they are commands */
	size_t nv, ncmd; /* variants, and how many are commands */
	size_t np, nl, nc; /* interpreters, limit sets and cache states compared */
	int warmups; /* warm-up rounds: at least one when a variant is cold */
	int devnull;
	char *what; /* "interpreters × limit sets", ... */
	struct buf err;
};

static void compare_cmd_init(struct compare_cmd *cc)
{
	memset(cc, 0, sizeof(*cc));
	measure_opts_init(&cc->o.m);
	strvec_init(&cc->o.pythons);
	strvec_init(&cc->o.limit_sets);
	strvec_init(&cc->o.caches);
	strvec_init(&cc->o.names);
	cc->o.m.runs = 10;
	cc->o.m.warmup = 1;
	cc->o.top = 10;
	cc->o.json_fd = -1;
	strvec_init(&cc->commands);
	cc->devnull = -1;
	buf_init(&cc->err, 0);
}

static void compare_cmd_release(struct compare_cmd *cc)
{
	size_t j;

	comparison_release(&cc->c);
	free(cc->c.v);
	for (j = 0; j < cc->nr_vars; j++)
		variant_release(&cc->vars[j]);
	free(cc->vars);
	if (cc->devnull >= 0)
		close(cc->devnull);
	limits_release(&cc->common);
	measure_opts_release(&cc->o.m);
	strvec_clear(&cc->o.pythons);
	strvec_clear(&cc->o.limit_sets);
	strvec_clear(&cc->o.caches);
	strvec_clear(&cc->o.names);
	strvec_clear(&cc->commands);
	free(cc->what);
	buf_release(&cc->err);
}

/*
 * The options and the variants they make, the target's index going to *i.
 * True when the command ends here (--help, a usage error) with *ret its
 * exit status.
 */
static bool parse_options(struct compare_cmd *cc, int argc, char **argv, int *i, int *ret)
{
	struct compare_opts *o = &cc->o;
	const struct opt options[] = {
		OPT_STRINGS("python", 0, &o->pythons, "PATH", "an interpreter to compare; give two or more"),
		OPT_STRINGS("limits", 0, &o->limit_sets, "SET",
			    "a limit set to compare: none, or cpus=F,memory=SIZE,..."),
		OPT_STRINGS("cache", 0, &o->caches, "STATE",
			    "a page-cache state to compare: warm, or cold (evicted as --cold does)"),
		OPT_STRINGS("name", 0, &o->names, "NAME", "the name of each variant in turn (default: what differs)"),
		OPT_INCLUDE(o->m.options),
		OPT_INT("requests", 0, &o->requests, 1, HTTP_LOAD_MAX, "N",
			"with --ready http://...: once ready, N requests one at a time; compare their latency"),
		OPT_INT("top", 0, &o->top, 0, 100000, "N", "modules in each table of differences (default 10)"),
		OPT_CALLBACK("output", 'o', o, set_output, "FILE", "write the comparison as JSON (- for stdout)"),
		OPT_CALLBACK("json", 0, o, set_json, NULL, "print the JSON on stdout instead of the table"),
		OPT_CALLBACK("json-fd", 0, o, set_json_fd, "N", "write the JSON to descriptor N (e.g. 3>cmp.json)"),
		OPT_CALLBACK("markdown", 0, o, set_markdown, "FILE",
			     "write the comparison as Markdown, for a pull-request comment (- for stdout)"),
		OPT_BOOL("show-output", 0, &o->show_output, "forward the targets' stdout and stderr to stderr"),
		OPT_END(),
	};
	int rc = args_parse(options, argc, argv, i, stop_at, &cc->err);

	/* -c CODE takes compare's options after the code too, as profile's does. */
	if (!rc)
		rc = args_parse_after_code(options, argc, argv, i, &cc->err);
	if (rc) {
		*ret = usage_stop(&compare_usage, options, rc, cc->err.buf);
		return true;
	}
	*ret = read_variants(options, argc, argv, i, o, &cc->commands, &cc->nv, &cc->ncmd, &cc->err);
	return *ret != 0;
}

/* The options that only make sense together; what the variants differ in. */
static int check_variants(struct compare_cmd *cc)
{
	struct compare_opts *o = &cc->o;
	const char *what[4];
	size_t nw = 0, k;
	bool cold = o->m.cold;
	struct buf b = BUF_INIT;

	cc->np = o->pythons.nr ? o->pythons.nr : 1;
	cc->nl = o->limit_sets.nr ? o->limit_sets.nr : 1;
	cc->nc = o->caches.nr ? o->caches.nr : 1;
	if (measure_opts_finish(&o->m, &cc->common, &cc->err) < 0)
		return usage_error(&compare_usage, "%s", cc->err.buf);
	o->m.quiet = !o->show_output;
	for (k = 0; k < o->caches.nr; k++) {
		if (strcmp(o->caches.v[k], "warm") && strcmp(o->caches.v[k], "cold"))
			return usage_error(&compare_usage, "--cache '%s': expected warm or cold", o->caches.v[k]);
		cold |= !strcmp(o->caches.v[k], "cold");
	}
	if (o->caches.nr && o->m.cold)
		return usage_error(&compare_usage, "--cold makes every variant cold: give --cache warm --cache cold "
						   "to compare the two, or --cold alone");
	if (o->requests && (!o->m.ready || o->m.ready_spec.kind != READY_HTTP))
		return usage_error(&compare_usage, "--requests needs --ready http://127.0.0.1:PORT/PATH (the requests "
						   "go where readiness was asked)");
	cc->warmups = measure_warmups(&o->m, cold);
	if (cc->nv > MAX_VARIANTS)
		return usage_error(&compare_usage, "%zu variants: compare takes at most %d", cc->nv, MAX_VARIANTS);
	if (o->names.nr > cc->nv)
		return usage_error(&compare_usage, "%zu names for %zu variants", o->names.nr, cc->nv);
	if (cc->ncmd)
		what[nw++] = "commands";
	if (cc->np > 1)
		what[nw++] = "interpreters";
	if (cc->nl > 1)
		what[nw++] = "limit sets";
	if (cc->nc > 1)
		what[nw++] = "cache states";
	for (k = 0; k < nw; k++)
		buf_addf(&b, "%s%s", k ? " × " : "", what[k]);
	cc->what = buf_detach(&b, NULL);
	cc->c.what = cc->what;
	return 0;
}

/* Each variant's interpreter (probed), limits and session; the targets' output to /dev/null unless shown. */
static int setup_variants(struct compare_cmd *cc, int argc, char **argv, int i)
{
	struct compare_opts *o = &cc->o;
	size_t j;
	int ret;

	if (!o->show_output && (cc->devnull = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0) {
		error("cannot open /dev/null: %s", strerror(errno));
		return EXIT_FAIL;
	}
	cc->vars = xcalloc(cc->nv, sizeof(*cc->vars));
	for (j = 0; j < cc->nv; j++) {
		const char *py = o->pythons.nr		      ? o->pythons.v[j / (cc->nl * cc->nc) % cc->np]
				 : getenv("COLDSTART_PYTHON") ? getenv("COLDSTART_PYTHON")
							      : "python3";
		const char *set = o->limit_sets.nr ? o->limit_sets.v[j / cc->nc % cc->nl] : NULL;
		const char *cache = o->caches.nr ? o->caches.v[j % cc->nc] : NULL;

		cc->nr_vars = j + 1;
		ret = variant_setup(o, &cc->vars[j], j, &cc->common, set, cache, argc, argv, i, py,
				    cc->ncmd ? cc->commands.v[j / (cc->nl * cc->nc)] : NULL);
		if (ret)
			return ret;
		cc->vars[j].s.ro.stdout_fd = o->show_output ? 2 : cc->devnull;
	}
	return 0;
}

/* The variants measured: each one's profile analysed, and the comparison of them. */
static void compare_variants(struct compare_cmd *cc)
{
	struct comparison *c = &cc->c;
	size_t j;

	c->v = xcalloc(cc->nr_vars, sizeof(*c->v));
	c->nr = cc->nr_vars;
	c->runs = cc->o.m.runs;
	c->warmup = cc->warmups;
	c->top = cc->o.top;
	c->cold = cc->o.m.cold;
	c->ready = cc->o.m.ready != NULL;
	c->requests = cc->o.requests;
	for (j = 0; j < cc->nr_vars; j++) {
		measure_analyze(&cc->vars[j].s);
		memcpy(c->v[j].id, cc->vars[j].id, sizeof(c->v[j].id));
		c->v[j].label = cc->vars[j].label;
		c->v[j].p = &cc->vars[j].p;
	}
	comparison_analyze(c);
}

int cmd_compare(int argc, char **argv)
{
	struct compare_cmd cc;
	int i = 1, ret = 0;
	size_t j;

	compare_cmd_init(&cc);
	if (parse_options(&cc, argc, argv, &i, &ret))
		goto out;
	ret = check_variants(&cc);
	if (!ret)
		ret = setup_variants(&cc, argc, argv, i);
	if (!ret)
		ret = run_rounds(cc.vars, cc.nr_vars, &cc.o, cc.warmups);
	if (!ret)
		ret = measure_runs_done();
	if (ret)
		goto out;
	compare_variants(&cc);
	ret = write_outputs(&cc.c, &cc.o);
	/* A target's own failure is said after the comparison, as profile does. */
	for (j = 0; j < cc.nr_vars && !ret; j++)
		ret = profile_exit_status(&cc.vars[j].p, cc.o.m.ready != NULL, cc.o.m.passthrough_exit);
out:
	compare_cmd_release(&cc);
	return ret;
}
