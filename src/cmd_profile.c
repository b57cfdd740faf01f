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
#include "builtin.h"
#include "measure.h"
#include "profile.h"
#include "runlimits.h"
#include "sampler.h"
#include "show.h"

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
		    "       coldstart profile [options] -c code [args...]\n"
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

int cmd_profile(int argc, char **argv)
{
	static const char *const stop_at[] = { "-m", "-c", NULL };
	struct profile_opts o;
	struct profile p;
	struct measure_session s;
	struct strvec child_argv = STRVEC_INIT, env = STRVEC_INIT;
	struct buf err = BUF_INIT, where = BUF_INIT;
	char *shebang = NULL, cwd[PATH_MAX];
	bool python_given;
	const char *python;
	int i = 1, ret = EXIT_FAIL, rc;
	bool command_mode = false;
	const struct opt options[] = {
		OPT_STRING("python", 0, &o.python, "PATH", "interpreter to run (default: python3 on PATH)"),
		OPT_INCLUDE(o.show.options),
		OPT_INCLUDE(o.m.options),
		OPT_BOOL("no-baseline", 0, &o.no_baseline, "with limits: skip the unconstrained reference runs"),
		OPT_STRING("raw-log", 0, &o.raw_log, "FILE",
			   "also save the target's raw stderr (importtime rows included)"),
		OPT_BOOL("timeline", 0, &o.timeline.on,
			 "also sample what the Python code runs besides imports, into one timeline with them"),
		OPT_CALLBACK("timeline-interval", 0, &o.timeline, o_timeline_interval, "MS",
			     "timeline: sample every MS milliseconds of wall time (default 1; implies --timeline)"),
		OPT_CALLBACK("until", 0, &o.timeline, o_until, "WHEN",
			     "timeline: end at ready (default with --ready), first-response, or exit (implies --timeline)"),
		OPT_END(),
	};

	memset(&o, 0, sizeof(o));
	show_opts_init(&o.show);
	measure_opts_init(&o.m);
	o.timeline.interval_us = SAMPLER_DEFAULT_INTERVAL_US;
	profile_init(&p);
	measure_session_init(&s, &p, "profile", &o.m, &o.show, &measure_local);

	rc = args_parse(options, argc, argv, &i, stop_at, &err);
	if (rc) {
		ret = usage_stop(&profile_usage, options, rc, err.buf);
		goto out;
	}
	if (i >= argc) {
		error("no target: give a script, -m module, -c code, or -- command");
		usage_show(&profile_usage, options, stderr);
		ret = EXIT_USAGE;
		goto out;
	}
	python_given = o.python != NULL;
	if (!o.python)
		o.python = getenv("COLDSTART_PYTHON") ? getenv("COLDSTART_PYTHON") : "python3";

	command_mode = !strcmp(argv[i], "--");
	ret = measure_target_argv(argc, argv, command_mode ? i + 1 : i, command_mode ? NULL : o.python, &p, &child_argv, &env);
	if (ret)
		goto out;
	if (command_mode)
		shebang = measure_command_python(argv[i + 1]);
	/* A command names its interpreter; --python is for one that does not say (a launcher, a shim). */
	if (command_mode && python_given) {
		if (!shebang)
			shebang = xstrdup(o.python);
		else if (!same_program(shebang, o.python))
			warning("--python %s does not apply: '%s' runs %s (its #! line, or itself)", o.python,
				argv[i + 1], shebang);
	}

	if (o.timeline.on && o.m.no_trace) {
		error("--timeline needs the tracer: drop --no-trace");
		ret = EXIT_USAGE;
		goto out;
	}
	if (o.timeline.until == TL_UNTIL_FIRST_RESPONSE && !o.m.ready) {
		error("--until first-response needs --ready http://... or --ready fn");
		ret = EXIT_USAGE;
		goto out;
	}
	if (measure_opts_finish(&o.m, &p.limits, &err) < 0) {
		error("%s", err.buf);
		ret = EXIT_USAGE;
		goto out;
	}

	/* The interpreter that runs: a command's own (#!, or itself), else --python. */
	python = command_mode ? shebang : o.python;
	p.python = xstrdup(command_mode ? (shebang ? shebang : argv[i + 1]) : o.python);
	if (getcwd(cwd, sizeof(cwd)))
		p.cwd = xstrdup(cwd);
	if (python) {
		buf_addf(&where, "at '%s'", python);
		ret = measure_probe(&s, python, where.buf);
		if (ret)
			goto out;
	}

	s.ro.argv = child_argv.v;
	s.ro.env = env.v;
	s.ro.python = python;
	s.ro.trace = !o.m.no_trace;
	s.ro.timeline = o.timeline.on ? &o.timeline : NULL;
	if (o.raw_log) {
		s.ro.raw_fd = open(o.raw_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (s.ro.raw_fd < 0) {
			error("cannot write '%s': %s", o.raw_log, strerror(errno));
			ret = EXIT_FAIL;
			goto out;
		}
	}
	/*
	 * With limits, as many unconstrained runs first show what the limits
	 * cost (they warm the page cache too).
	 */
	s.baseline = limits_any(&p.limits) && !o.no_baseline;
	ret = measure_run(&s);
	if (!ret)
		ret = measure_finish(&s, &o.show);
out:
	if (s.ro.raw_fd >= 0)
		close(s.ro.raw_fd);
	measure_session_release(&s);
	show_opts_release(&o.show);
	measure_opts_release(&o.m);
	profile_release(&p);
	strvec_clear(&child_argv);
	strvec_clear(&env);
	buf_release(&err);
	buf_release(&where);
	free(shebang);
	return ret;
}
