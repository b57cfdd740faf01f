/*
 * `coldstart profile`: run a Python target (script, -m module, -c code, or
 * any command) with -X importtime and the tracer, optionally under limits and
 * repeatedly, then report, save and check the profile.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze.h"
#include "args.h"
#include "builtin.h"
#include "cgroup.h"
#include "launch.h"
#include "profile.h"
#include "profile_cmd.h"
#include "report.h"
#include "runner.h"
#include "sampler.h"


struct profile_opts {
	struct measure_ctx c; /* first: the shared callbacks cast ctx to it */
	const char *python;
	bool no_baseline;
	const char *raw_log;
	struct timeline_opts timeline;
};

#define OPTS() struct profile_opts *o = ctx

static int o_python(void *ctx, const char *v, struct buf *err) { OPTS(); o->python = v; return 0; }
static int o_no_baseline(void *ctx, const char *v, struct buf *err) { OPTS(); o->no_baseline = true; return 0; }
static int o_raw_log(void *ctx, const char *v, struct buf *err) { OPTS(); o->raw_log = v; return 0; }
static int o_timeline(void *ctx, const char *v, struct buf *err) { OPTS(); o->timeline.on = true; return 0; }

static int o_timeline_interval(void *ctx, const char *v, struct buf *err)
{
	OPTS();
	char *end;
	double ms = strtod(v, &end);

	if (end == v || (*end && strcmp(end, "ms")) || !(ms >= 0.1 && ms <= 100)) {
		buf_addf(err, "--timeline-interval wants milliseconds from 0.1 to 100, not '%s'", v);
		return -1;
	}
	o->timeline.on = true;
	o->timeline.interval_us = (int64_t)(ms * 1000 + 0.5);
	return 0;
}

static int o_until(void *ctx, const char *v, struct buf *err)
{
	OPTS();
	int u = tl_until_from_name(v);

	if (u < 0) {
		buf_addf(err, "--until wants ready, first-response or exit, not '%s'", v);
		return -1;
	}
	o->timeline.on = true;
	o->timeline.until = (enum tl_until)u;
	return 0;
}

static const struct opt profile_options[] = {
	{ "python", 0, 1, o_python, "PATH", "interpreter to run (default: python3 on PATH)" },
	SHOW_OPTIONS,
	MEASURE_OPTIONS,
	{ "no-baseline", 0, 0, o_no_baseline, NULL, "with limits: skip the unconstrained reference run" },
	{ "raw-log", 0, 1, o_raw_log, "FILE", "also save the target's raw stderr (importtime rows included)" },
	{ "timeline", 0, 0, o_timeline, NULL,
	  "also sample what the Python code runs besides imports, into one timeline with them" },
	{ "timeline-interval", 0, 1, o_timeline_interval, "MS",
	  "timeline: sample every MS milliseconds of wall time (default 1; implies --timeline)" },
	{ "until", 0, 1, o_until, "WHEN",
	  "timeline: end at ready (default with --ready), first-response, or exit (implies --timeline)" },
	{ NULL, 0, 0, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	struct buf h = BUF_INIT;

	args_help(profile_options, &h);
	fprintf(f,
		"usage: coldstart profile [options] script.py [args...]\n"
		"       coldstart profile [options] -m module [args...]\n"
		"       coldstart profile [options] -c code [args...]\n"
		"       coldstart profile [options] -- command [args...]\n\n"
		"Runs the target with -X importtime (PYTHONPROFILEIMPORTTIME for any command)\n"
		"and the in-process tracer, and reports where start-up time goes.  The target's\n"
		"stdin and stdout are untouched; its own stderr is forwarded unchanged.\n\n"
		"options:\n%s\n"
		"Exit status: 0 ok, 1 failure or broken budget, 2 usage, 3 limits unavailable,\n"
		"4 interpreter missing or unsuitable, 5 target exited non-zero, 6 target killed by\n"
		"a signal, 7 target OOM-killed, 8 timeout, 9 readiness not reached\n"
		"(docs/exit-codes.md).  --exit-code passes the target's own status through.\n",
		h.buf);
	buf_release(&h);
}

/*
 * Asks the interpreter for its version and standard-library names.  Returns
 * 0, or an exit code with a message printed.
 */
static int probe_python(const char *python, struct profile *p, struct strvec *stdlib_names,
			struct strvec *site_dirs)
{
	static const char code[] =
		"import sys\n"
		"sys.stdout.write('%d.%d.%d\\n' % tuple(sys.version_info[:3]))\n"
		"sys.stdout.write((sys.executable or '') + '\\n')\n"
		"sys.stdout.write(' '.join(sorted(getattr(sys, 'stdlib_module_names', ()))) + '\\n')\n"
		"try:\n"
		"    import site\n"
		"    dirs = list(site.getsitepackages()) + [site.getusersitepackages()]\n"
		"except Exception:\n"
		"    dirs = [d for d in sys.path if d.endswith(('site-packages', 'dist-packages'))]\n"
		"sys.stdout.write('\\n'.join(dirs) + '\\n')\n";
	struct child c;
	struct child_exit ex;
	struct buf out = BUF_INIT, err = BUF_INIT;
	char chunk[4096];
	ssize_t n;
	int ret = EXIT_NO_PYTHON, major = 0, minor = 0;
	char *nl, *line2, *line3;

	child_init(&c);
	strvec_push(&c.args, python);
	/* -E -s rather than -I: Python 2 must get as far as saying its version. */
	strvec_pushv(&c.args, (const char *const[]){ "-E", "-s", "-c", code, NULL });
	c.capture_stdout = true;
	c.capture_stderr = true;
	c.null_stdin = true;
	if (child_start(&c, &err) < 0) {
		error("%s", err.buf);
		if (errno == ENOENT)
			error("no interpreter '%s': pass --python PATH", python);
		goto out;
	}
	while ((n = read(c.out_fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			buf_add(&out, chunk, (size_t)n);
	buf_reset(&err);
	while ((n = read(c.err_fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && err.len < 4096)
			buf_add(&err, chunk, (size_t)n);
	child_finish(&c, &ex);
	if (ex.signaled || ex.exit_code || sscanf(out.buf, "%d.%d", &major, &minor) != 2) {
		while (err.len && (err.buf[err.len - 1] == '\n' || err.buf[err.len - 1] == '\r'))
			buf_setlen(&err, err.len - 1);
		error("'%s' does not behave like a Python interpreter (status %d)%s%s", python,
		      ex.signaled ? 128 + ex.term_signal : ex.exit_code, err.len ? ": " : "", err.buf);
		goto out;
	}
	nl = strchr(out.buf, '\n');
	*nl = '\0';
	p->python_version = xstrdup(out.buf);
	line2 = nl + 1;
	nl = strchr(line2, '\n');
	if (nl) {
		*nl = '\0';
		line3 = nl + 1;
		nl = strchr(line3, '\n');
		if (nl) {
			char *d = nl + 1;

			*nl = '\0';
			while (*d) {
				char *e = strchr(d, '\n');

				if (e)
					*e = '\0';
				if (*d)
					strvec_push(site_dirs, d);
				if (!e)
					break;
				d = e + 1;
			}
		}
		while (*line3) {
			char *sp = strchr(line3, ' ');
			size_t len = sp ? (size_t)(sp - line3) : strlen(line3);
			char *name = xstrndup(line3, len);

			strvec_push(stdlib_names, name);
			free(name);
			line3 += len + (sp ? 1 : 0);
		}
	}
	if (major < 3 || (major == 3 && minor < 7)) {
		error("Python %s at '%s' has no -X importtime (it needs Python 3.7 or newer)",
		      p->python_version, python);
		goto out;
	}
	ret = 0;
out:
	child_release(&c);
	buf_release(&out);
	buf_release(&err);
	return ret;
}

/* For "-- command": the interpreter named by the command's #! line, if any. */
static char *shebang_python(const char *cmd)
{
	struct buf path = BUF_INIT, line = BUF_INIT;
	char *result = NULL, *interp, *arg;
	FILE *f = NULL;
	char head[512];

	if (strchr(cmd, '/')) {
		buf_adds(&path, cmd);
	} else {
		const char *pathenv = getenv("PATH");
		const char *s = pathenv ? pathenv : "/usr/bin:/bin";

		while (*s) {
			const char *colon = strchr(s, ':');
			size_t len = colon ? (size_t)(colon - s) : strlen(s);

			buf_reset(&path);
			buf_add(&path, s, len);
			buf_addf(&path, "/%s", cmd);
			if (!access(path.buf, X_OK))
				break;
			buf_reset(&path);
			s += len + (colon ? 1 : 0);
		}
	}
	if (!path.len)
		goto out;
	/* The command may be the interpreter itself: python3 -m ..., python3.11 app.py. */
	{
		const char *base = strrchr(path.buf, '/') ? strrchr(path.buf, '/') + 1 : path.buf;

		if (starts_with(base, "python")) {
			result = xstrdup(path.buf);
			goto out;
		}
	}
	if (!(f = fopen(path.buf, "re")) || !fgets(head, sizeof(head), f))
		goto out;
	if (strncmp(head, "#!", 2))
		goto out;
	head[strcspn(head, "\r\n")] = '\0';
	interp = head + 2 + strspn(head + 2, " \t");
	arg = interp + strcspn(interp, " \t");
	if (*arg) {
		*arg++ = '\0';
		arg += strspn(arg, " \t");
	}
	if (ends_with(interp, "/env") && *arg) {
		arg[strcspn(arg, " \t")] = '\0';
		interp = arg;
	}
	if (strstr(interp, "python"))
		result = xstrdup(interp);
out:
	if (f)
		fclose(f);
	buf_release(&path);
	buf_release(&line);
	return result;
}

static void fill_meta(struct profile *p, const char *python)
{
	char cwd[PATH_MAX];
	char stamp[32];
	time_t t = time(NULL);
	struct tm tm;

	p->tool_version = xstrdup(COLDSTART_VERSION);
	p->command = xstrdup("profile");
	p->python = xstrdup(python);
	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	p->created = xstrdup(stamp);
	if (getcwd(cwd, sizeof(cwd)))
		p->cwd = xstrdup(cwd);
}

int cmd_profile(int argc, char **argv)
{
	static const char *const stop_at[] = { "-m", "-c", NULL };
	struct profile_opts o;
	struct profile p;
	struct strvec child_argv = STRVEC_INIT, env = STRVEC_INIT, stdlib_names = STRVEC_INIT;
	struct strvec site_dirs = STRVEC_INIT;
	struct buf err = BUF_INIT;
	struct runner_opts ro;
	char *shebang = NULL;
	int i = 1, ret = EXIT_FAIL, k, total_runs, rc, baseline;
	bool command_mode = false, tty = isatty(2);

	memset(&o, 0, sizeof(o));
	memset(&ro, 0, sizeof(ro));
	o.timeline.interval_us = SAMPLER_DEFAULT_INTERVAL_US;
	ro.raw_fd = -1;
	measure_ctx_init(&o.c);
	profile_init(&p);

	rc = args_parse(profile_options, &o, argc, argv, &i, stop_at, &err);
	if (rc == 1) {
		usage(stdout);
		ret = EXIT_OK;
		goto out;
	}
	if (rc < 0) {
		error("%s", err.buf);
		fprintf(stderr, "Try 'coldstart profile --help'.\n");
		ret = EXIT_USAGE;
		goto out;
	}
	if (i >= argc) {
		error("no target: give a script, -m module, -c code, or -- command");
		usage(stderr);
		ret = EXIT_USAGE;
		goto out;
	}
	if (!o.python)
		o.python = getenv("COLDSTART_PYTHON") ? getenv("COLDSTART_PYTHON") : "python3";

	if (!strcmp(argv[i], "--")) {
		command_mode = true;
		i++;
		if (i >= argc) {
			error("'--' must be followed by a command");
			ret = EXIT_USAGE;
			goto out;
		}
		for (k = i; k < argc; k++) {
			strvec_push(&p.target, argv[k]);
			strvec_push(&child_argv, argv[k]);
		}
		strvec_push(&env, "PYTHONPROFILEIMPORTTIME=1");
		shebang = shebang_python(argv[i]);
	} else {
		if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "-c")) && i + 1 >= argc) {
			error("'%s' needs a %s", argv[i], !strcmp(argv[i], "-m") ? "module name" : "piece of code");
			ret = EXIT_USAGE;
			goto out;
		}
		strvec_push(&child_argv, o.python);
		strvec_push(&child_argv, "-X");
		strvec_push(&child_argv, "importtime");
		for (k = i; k < argc; k++) {
			strvec_push(&p.target, argv[k]);
			strvec_push(&child_argv, argv[k]);
		}
		if (argv[i][0] != '-' && access(argv[i], R_OK) < 0) {
			error("cannot read script '%s': %s", argv[i], strerror(errno));
			ret = EXIT_FAIL;
			goto out;
		}
	}

	if (o.timeline.on && o.c.m.no_trace) {
		error("--timeline needs the tracer: drop --no-trace");
		ret = EXIT_USAGE;
		goto out;
	}
	if (o.timeline.until == TL_UNTIL_FIRST_RESPONSE && !o.c.m.ready) {
		error("--until first-response needs --ready http://... or --ready fn");
		ret = EXIT_USAGE;
		goto out;
	}
	if (measure_opts_finish(&o.c.m, &p.limits, &err) < 0) {
		error("%s", err.buf);
		ret = EXIT_USAGE;
		goto out;
	}

	fill_meta(&p, command_mode ? (shebang ? shebang : argv[i]) : o.python);
	if (!command_mode || shebang) {
		ret = probe_python(command_mode ? shebang : o.python, &p, &stdlib_names, &site_dirs);
		if (ret)
			goto out;
	}

	ro.argv = child_argv.v;
	ro.env = env.v;
	ro.python = command_mode ? shebang : o.python;
	ro.trace = !o.c.m.no_trace;
	ro.timeline = o.timeline.on ? &o.timeline : NULL;
	ro.use_limits = limits_any(&p.limits);
	ro.timeout_us = o.c.m.timeout_us;
	ro.ready = o.c.m.ready;
	ro.ready_timeout_us = o.c.m.ready_timeout_us;
	ro.quiet = o.c.m.quiet;
	ro.raw_fd = -1;
	if (o.raw_log) {
		ro.raw_fd = open(o.raw_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (ro.raw_fd < 0) {
			error("cannot write '%s': %s", o.raw_log, strerror(errno));
			ret = EXIT_FAIL;
			goto out;
		}
	}

	/*
	 * With limits, one unconstrained run first shows what the limits cost
	 * (it also warms the page cache like a warm-up run).
	 */
	baseline = ro.use_limits && !o.no_baseline;
	total_runs = baseline + o.c.m.warmup + o.c.m.runs;
	for (k = 0; k < total_runs; k++) {
		struct run *r = profile_add_run(&p);
		enum runner_error re;
		int sig = 0;

		r->baseline = baseline && k == 0;
		r->warmup = k < baseline + o.c.m.warmup;
		ro.use_limits = limits_any(&p.limits) && !r->baseline;
		if (tty && total_runs > 1) {
			fprintf(stderr, "\rcoldstart: %s run %d/%d ",
				r->baseline ? "unconstrained" : r->warmup ? "warm-up" : "measured",
				r->baseline ? 1 : r->warmup ? k - baseline + 1 : k - baseline - o.c.m.warmup + 1,
				r->baseline ? 1 : r->warmup ? o.c.m.warmup : o.c.m.runs);
			fflush(stderr);
		}
		re = runner_run(&ro, &p, r, &err, &sig);
		if (re == RUNNER_INTERRUPTED) {
			error("%s", err.buf);
			profile_release(&p);
			ret = 128 + sig;
			goto out;
		}
		if (re != RUNNER_OK) {
			error("%s", err.buf);
			ret = re == RUNNER_NO_LIMITS ? EXIT_LIMITS : re == RUNNER_NO_EXEC ? EXIT_NO_PYTHON : EXIT_FAIL;
			goto out;
		}
	}
	if (tty && total_runs > 1)
		fprintf(stderr, "\r%40s\r", "");

	{
		const char **names = stdlib_names.nr ? stdlib_names.v : NULL;

		profile_analyze_with(&p, names, site_dirs.nr ? site_dirs.v : NULL);
	}
	ret = profile_exit_status(&p, o.c.m.ready != NULL, o.c.m.passthrough_exit);
	rc = show_profile(&p, &o.c.show);
	/* A target's own failure is more specific than a broken budget. */
	if (rc && ret == EXIT_OK)
		ret = rc;
out:
	if (ro.raw_fd >= 0)
		close(ro.raw_fd);
	measure_ctx_release(&o.c);
	profile_release(&p);
	strvec_clear(&child_argv);
	strvec_clear(&env);
	strvec_clear(&stdlib_names);
	strvec_clear(&site_dirs);
	buf_release(&err);
	free(shebang);
	return ret;
}
