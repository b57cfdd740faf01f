/*
 * `coldstart profile`: run a Python target (script, -m module, -c code, or
 * any command) with -X importtime and the tracer, optionally under limits and
 * repeatedly, then report, save and check the profile.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cmd/builtin.h"
#include "session/measure.h"
#include "model/profile.h"
#include "model/runlimits.h"
#include "ingest/sampler.h"
#include "session/show.h"

struct profile_opts {
	struct show_opts show;
	struct measure_opts m;
	const char *python;
	bool no_baseline;
	const char *raw_log;
	struct timeline_opts timeline;
};

static int o_timeline_interval(const struct opt *opt, const char *v, struct buf *err)
{
	struct timeline_opts *t = opt->value;
	char *end;
	double ms = strtod(v, &end);

	if (end == v || (*end && strcmp(end, "ms")) || !(ms >= 0.1 && ms <= 100)) {
		buf_addf(err, "--timeline-interval wants milliseconds from 0.1 to 100, not '%s'", v);
		return -1;
	}
	t->on = true;
	t->interval_us = (int64_t)(ms * 1000 + 0.5);
	return 0;
}

static int o_until(const struct opt *opt, const char *v, struct buf *err)
{
	struct timeline_opts *t = opt->value;
	int u = tl_until_from_name(v);

	if (u < 0) {
		buf_addf(err, "--until wants ready, first-response or exit, not '%s'", v);
		return -1;
	}
	t->on = true;
	t->until = (enum tl_until)u;
	return 0;
}

static const struct usage profile_usage = {
	.command = "profile",
	.synopsis = "usage: coldstart profile [options] script.py [args...]\n"
		    "       coldstart profile [options] -m module [args...]\n"
		    "       coldstart profile [options] -c code [options] [-- args...]\n"
		    "       coldstart profile [options] -- command [args...]\n\n"
		    "Runs the target with -X importtime (PYTHONPROFILEIMPORTTIME for any command)\n"
		    "and the in-process tracer, and reports where start-up time goes.  The target's\n"
		    "stdin and stdout are untouched (its stdout goes to stderr when stdout carries\n"
		    "the JSON: --json, -o -); its own stderr is forwarded unchanged.\n\n",
	.footer = "Exit status: 0 ok, 1 failure or broken budget, 2 usage, 3 limits unavailable,\n"
		  "4 interpreter missing or unsuitable, 5 target exited non-zero, 6 target killed\n"
		  "by a signal, 7 target OOM-killed, 8 timeout, 9 readiness not reached, 10 no\n"
		  "import recorded (docs/exit-codes.md); --exit-code passes the target's own\n"
		  "status through.\n",
};

/* Whether a and b (paths, or python* names on PATH) are one program. */
static bool same_program(const char *a, const char *b)
{
	char *pa = measure_command_python(a), *pb = measure_command_python(b);
	char ra[PATH_MAX], rb[PATH_MAX];
	bool same;

	same = !strcmp(realpath(pa ? pa : a, ra) ? ra : a, realpath(pb ? pb : b, rb) ? rb : b);
	free(pa);
	free(pb);
	return same;
}

/* One `coldstart profile`: its options, the profile it fills and the target it runs. */
struct profile_cmd {
	struct profile_opts o;
	struct profile p;
	struct measure_session s;
	struct strvec child_argv, env;
	bool command_mode; /* -- command: argv names its own interpreter */
	bool python_given; /* --python on the command line */
	char *shebang; /* a command's interpreter (#!, or itself), or NULL */
	const char *python; /* the interpreter that runs, NULL for a command that is none */
	struct buf err;
};

static void profile_cmd_init(struct profile_cmd *c)
{
	memset(c, 0, sizeof(*c));
	show_opts_init(&c->o.show);
	measure_opts_init(&c->o.m);
	c->o.timeline.interval_us = SAMPLER_DEFAULT_INTERVAL_US;
	profile_init(&c->p);
	measure_session_init(&c->s, &c->p, "profile", &c->o.m, &c->o.show, &measure_local);
	strvec_init(&c->child_argv);
	strvec_init(&c->env);
	buf_init(&c->err, 0);
}

static void profile_cmd_release(struct profile_cmd *c)
{
	if (c->s.ro.raw_fd >= 0)
		close(c->s.ro.raw_fd);
	measure_session_release(&c->s);
	show_opts_release(&c->o.show);
	measure_opts_release(&c->o.m);
	profile_release(&c->p);
	strvec_clear(&c->child_argv);
	strvec_clear(&c->env);
	buf_release(&c->err);
	free(c->shebang);
}

/*
 * The options up to the target, whose index goes to *i.  True when the
 * command ends here (--help, a usage error) with *ret its exit status.
 */
static bool parse_options(struct profile_cmd *c, int argc, char **argv, int *i, int *ret)
{
	static const char *const stop_at[] = { "-m", "-c", NULL };
	struct profile_opts *o = &c->o;
	const struct opt options[] = {
		OPT_STRING("python", 0, &o->python, "PATH", "interpreter to run (default: python3 on PATH)"),
		OPT_INCLUDE(o->show.options),
		OPT_INCLUDE(o->m.options),
		OPT_BOOL("no-baseline", 0, &o->no_baseline, "with limits: skip the unconstrained reference runs"),
		OPT_STRING("raw-log", 0, &o->raw_log, "FILE",
			   "also save the target's raw stderr (importtime rows included)"),
		OPT_BOOL("timeline", 0, &o->timeline.on,
			 "also sample what the Python code runs besides imports, into one timeline with them"),
		OPT_CALLBACK("timeline-interval", 0, &o->timeline, o_timeline_interval, "MS",
			     "timeline: sample every MS milliseconds of wall time (default 1; implies --timeline)"),
		OPT_CALLBACK(
			"until", 0, &o->timeline, o_until, "WHEN",
			"timeline: end at ready (default with --ready), first-response, or exit (implies --timeline)"),
		OPT_END(),
	};
	int rc = args_parse(options, argc, argv, i, stop_at, &c->err);

	/* -c CODE takes coldstart's options after the code too. */
	if (!rc)
		rc = args_parse_after_code(options, argc, argv, i, &c->err);
	if (rc) {
		*ret = usage_stop(&profile_usage, options, rc, c->err.buf);
		return true;
	}
	if (*i >= argc) {
		error("no target: give a script, -m module, -c code, or -- command");
		usage_show(&profile_usage, options, stderr);
		*ret = EXIT_USAGE;
		return true;
	}
	c->python_given = o->python != NULL;
	if (!o->python)
		o->python = getenv("COLDSTART_PYTHON") ? getenv("COLDSTART_PYTHON") : "python3";
	return false;
}

/* The child's argv and environment for the target at argv[i], and a command's interpreter. */
static int resolve_target(struct profile_cmd *c, int argc, char **argv, int i)
{
	int ret;

	c->command_mode = !strcmp(argv[i], "--");
	ret = measure_target_argv(argc, argv, c->command_mode ? i + 1 : i, c->command_mode ? NULL : c->o.python, &c->p,
				  &c->child_argv, &c->env);
	if (ret || !c->command_mode)
		return ret;
	c->shebang = measure_command_python(argv[i + 1]);
	/* A command names its interpreter; --python is for one that does not say (a launcher, a shim). */
	if (c->python_given) {
		if (!c->shebang)
			c->shebang = xstrdup(c->o.python);
		else if (!same_program(c->shebang, c->o.python))
			warning("--python %s does not apply: '%s' runs %s (its #! line, or itself)", c->o.python,
				argv[i + 1], c->shebang);
	}
	return 0;
}

/* The options that only make sense together, and the limits they ask for. */
static int check_options(struct profile_cmd *c)
{
	if (c->o.timeline.on && c->o.m.no_trace) {
		error("--timeline needs the tracer: drop --no-trace");
		return EXIT_USAGE;
	}
	if (c->o.timeline.until == TL_UNTIL_FIRST_RESPONSE && !c->o.m.ready) {
		error("--until first-response needs --ready http://... or --ready fn");
		return EXIT_USAGE;
	}
	if (measure_opts_finish(&c->o.m, &c->p.limits, &c->err) < 0) {
		error("%s", c->err.buf);
		return EXIT_USAGE;
	}
	return 0;
}

/* The interpreter that runs (a command's own, else --python), probed; the run's options. */
static int prepare_run(struct profile_cmd *c, char **argv, int i)
{
	char cwd[PATH_MAX];
	int ret;

	c->python = c->command_mode ? c->shebang : c->o.python;
	c->p.python = xstrdup(c->command_mode ? (c->shebang ? c->shebang : argv[i + 1]) : c->o.python);
	if (getcwd(cwd, sizeof(cwd)))
		c->p.cwd = xstrdup(cwd);
	if (c->python) {
		struct buf where = BUF_INIT, err = BUF_INIT;

		buf_addf(&where, "at '%s'", c->python);
		ret = measure_probe(&c->s, c->python, where.buf, &err);
		if (err.len)
			error("%s", err.buf);
		buf_release(&where);
		buf_release(&err);
		if (ret)
			return ret;
	}
	c->s.ro.argv = c->child_argv.v;
	c->s.ro.env = c->env.v;
	c->s.ro.python = c->python;
	c->s.ro.trace = !c->o.m.no_trace;
	c->s.ro.timeline = c->o.timeline.on ? &c->o.timeline : NULL;
	if (c->o.raw_log) {
		c->s.ro.raw_fd = open(c->o.raw_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (c->s.ro.raw_fd < 0) {
			error("cannot write '%s': %s", c->o.raw_log, strerror(errno));
			return EXIT_FAIL;
		}
	}
	/*
	 * With limits, as many unconstrained runs first show what the limits
	 * cost (they warm the page cache too).
	 */
	c->s.baseline = limits_any(&c->p.limits) && !c->o.no_baseline;
	return 0;
}

int cmd_profile(int argc, char **argv)
{
	struct profile_cmd c;
	int i = 1, ret = 0;

	profile_cmd_init(&c);
	if (parse_options(&c, argc, argv, &i, &ret))
		goto out;
	ret = resolve_target(&c, argc, argv, i);
	if (!ret)
		ret = check_options(&c);
	if (!ret)
		ret = prepare_run(&c, argv, i);
	if (!ret)
		ret = measure_run(&c.s);
	c.o.show.live = true;
	if (!ret)
		ret = measure_finish(&c.s, &c.o.show);
out:
	profile_cmd_release(&c);
	return ret;
}
