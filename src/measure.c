/*
 * The measuring session of `profile` and `docker`: their shared options, the
 * interpreter probe, the run loop and the exit status (see measure.h).
 */
#include "measure.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "builtin.h"
#include "launch.h"
#include "runlimits.h"
#include "show.h"

/*
 * What the probe asks: the version, sys.executable, the standard library's
 * module names (3.10+), then one site-packages directory a line.
 */
static const char probe_code[] = "import sys\n"
				 "sys.stdout.write('%d.%d.%d\\n' % tuple(sys.version_info[:3]))\n"
				 "sys.stdout.write((sys.executable or '') + '\\n')\n"
				 "sys.stdout.write(' '.join(sorted(getattr(sys, 'stdlib_module_names', ()))) + '\\n')\n"
				 "try:\n"
				 "    import site\n"
				 "    dirs = list(site.getsitepackages()) + [site.getusersitepackages()]\n"
				 "except Exception:\n"
				 "    dirs = [d for d in sys.path if d.endswith(('site-packages', 'dist-packages'))]\n"
				 "sys.stdout.write('\\n'.join(dirs) + '\\n')\n";

/* -E -s rather than -I: Python 2 must get as far as saying its version. */
static const char *const probe_args[] = { "-E", "-s", "-c", probe_code, NULL };

/* The local target's probe: python as a child of ours. */
static int local_probe(void *self, const char *python, const char *const *args, struct buf *out, struct buf *errout,
		       struct buf *err)
{
	struct child c;
	struct child_exit ex;
	char chunk[4096];
	ssize_t n;
	int ret = -1;

	child_init(&c);
	strvec_push(&c.args, python);
	strvec_pushv(&c.args, args);
	c.capture_stdout = true;
	c.capture_stderr = true;
	c.null_stdin = true;
	if (child_start(&c, err) < 0) {
		if (errno == ENOENT)
			buf_addf(err, "; no interpreter '%s': pass --python PATH", python);
		goto out;
	}
	while ((n = read(c.out_fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			buf_add(out, chunk, (size_t)n);
	while ((n = read(c.err_fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && errout->len < 4096)
			buf_add(errout, chunk, (size_t)n);
	child_finish(&c, &ex);
	ret = ex.signaled ? 128 + ex.term_signal : ex.exit_code;
out:
	child_release(&c);
	return ret;
}

const struct measure_target measure_local = {
	.probe = local_probe,
	.paths_on_host = true,
};

/* The next line of *text (cut off in place), NULL at the end. */
static char *cut_line(char **text)
{
	char *line = *text, *nl;

	if (!*line)
		return NULL;
	nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*text = nl + 1;
	} else {
		*text = line + strlen(line);
	}
	return line;
}

/* Reads the probe's answer into s and p; -1 when it is not one. */
static int read_answer(struct measure_session *s, char *text, int *major, int *minor)
{
	char *version = cut_line(&text), *names, *dir;

	if (!version || sscanf(version, "%d.%d", major, minor) != 2 || !cut_line(&text))
		return -1;
	free(s->p->python_version);
	s->p->python_version = xstrdup(version);
	names = cut_line(&text);
	while (names && *names) {
		size_t len = strcspn(names, " ");

		if (len) {
			char *name = xstrndup(names, len);

			strvec_push(&s->stdlib_names, name);
			free(name);
		}
		names += len + (names[len] == ' ');
	}
	while ((dir = cut_line(&text)))
		if (*dir)
			strvec_push(&s->site_dirs, dir);
	return 0;
}

/* --cpus, --memory, ...: the limit the option is named after. */
static int set_limit(const struct opt *opt, const char *v, struct buf *err)
{
	return limits_set(opt->value, opt->long_name, v, err);
}

/* "coldstart: measured run 2/5" on a terminal, rewritten in place. */
static void progress(const struct run *r, int k, int nbase, const struct measure_opts *m)
{
	const char *what = r->baseline ? "unconstrained" : r->warmup ? "warm-up" : "measured";
	int n = r->baseline ? k + 1 : r->warmup ? k - nbase + 1 : k - nbase - m->warmup + 1;
	int of = r->baseline ? nbase : r->warmup ? m->warmup : m->runs;

	fprintf(stderr, "\rcoldstart: %s run %d/%d ", what, n, of);
	fflush(stderr);
}

/* The exit code for a run the runner could not make. */
static int runner_exit_code(const struct runner_failure *why)
{
	return why->no_limits ? EXIT_LIMITS : why->no_exec ? EXIT_NO_PYTHON : EXIT_FAIL;
}

/* The runner's alerts (tracer unavailable, readiness failed, no import) are shown as they happen. */
static void show_alert(void *data, const char *msg)
{
	warning("%s", msg);
}

static bool measured_imports(const struct profile *p)
{
	size_t i, j;

	for (i = 0; i < p->nr_runs; i++)
		for (j = 0; j < p->runs[i].nr_procs && !p->runs[i].warmup; j++)
			if (p->runs[i].procs[j].nr_nodes)
				return true;
	return false;
}

int profile_exit_status(const struct profile *p, bool ready, bool passthrough)
{
	const struct run *worst = NULL;
	size_t i;

	for (i = 0; i < p->nr_runs; i++) {
		const struct run *r = &p->runs[i];

		if ((r->status == RUN_EXITED && !r->exit_code) || r->status == RUN_STOPPED)
			continue;
		worst = r;
		break;
	}
	if (ready)
		for (i = 0; i < p->nr_runs; i++)
			if (p->runs[i].ready_us == UNKNOWN && p->runs[i].status != RUN_OOM &&
			    p->runs[i].status != RUN_TIMEOUT)
				return EXIT_NOT_READY;
	if (!worst)
		return passthrough || measured_imports(p) ? EXIT_OK : EXIT_NO_IMPORTS;
	if (passthrough)
		return worst->status == RUN_EXITED     ? worst->exit_code
		       : worst->status == RUN_SIGNALED ? 128 + worst->term_signal
		       : worst->status == RUN_OOM      ? 128 + SIGKILL
						       : 124;
	switch (worst->status) {
	case RUN_EXITED: return EXIT_TARGET_FAILED;
	case RUN_SIGNALED: return EXIT_TARGET_SIGNALED;
	case RUN_OOM: return EXIT_TARGET_OOM;
	case RUN_TIMEOUT: return EXIT_TARGET_TIMEOUT;
	default: return EXIT_FAIL;
	}
}

void measure_opts_init(struct measure_opts *m)
{
	struct limits *lim = &m->limits;

	memset(m, 0, sizeof(*m));
	ready_spec_init(&m->ready_spec);
	m->runs = 1;
	m->ready_timeout_us = 60 * 1000000LL;
	{
		const struct opt table[] = {
			OPT_BOOL("no-trace", 0, &m->no_trace, "importtime only: do not load the in-process tracer"),
			OPT_BOOL("quiet", 'q', &m->quiet, "do not forward the target's stderr"),
			OPT_INT("runs", 'n', &m->runs, 1, 10000, "N", "measure N runs and report medians and spreads"),
			OPT_INT("warmup", 0, &m->warmup, 0, 10000, "N",
				"unmeasured runs before the measured ones (page cache, .pyc)"),
			OPT_SECONDS("timeout", 0, &m->timeout_us, 86400 * 365,
				    "kill the target and all it started after SECONDS"),
			OPT_CALLBACK("cpus", 0, lim, set_limit, "F", "CPU limit in CPUs, e.g. 0.1"),
			OPT_CALLBACK("memory", 0, lim, set_limit, "SIZE", "memory limit, e.g. 128m, 1g"),
			OPT_CALLBACK("swap", 0, lim, set_limit, "SIZE",
				     "swap allowed beyond --memory (default 0, as docker's memory = memory-swap)"),
			OPT_CALLBACK("pids", 0, lim, set_limit, "N", "process count limit"),
			OPT_CALLBACK("cpuset", 0, lim, set_limit, "LIST", "CPUs to run on, e.g. 0 or 0-1"),
			OPT_CALLBACK("preset", 0, lim, set_limit, "NAME",
				     "fn (0.1 CPU, 128 MiB) or lambda:MB (MB/1769 CPUs, MB MiB)"),
			OPT_BOOL("no-limits", 0, &m->no_limits, "ignore limit options and presets (run unconstrained)"),
			OPT_STRING("ready", 0, &m->ready, "SPEC",
				   "measure readiness: fn, tcp:PORT, http://127.0.0.1:PORT/path, unix:PATH"),
			OPT_SECONDS("ready-timeout", 0, &m->ready_timeout_us, 86400,
				    "give up waiting for readiness (default 60)"),
			OPT_STRING("ready-status", 0, &m->ready_status, "LIST",
				   "http:// readiness: the answers that count, e.g. 200 or 2xx,404 (default 200-399)"),
			OPT_BOOL("exit-code", 0, &m->passthrough_exit,
				 "exit with the target's own status instead of coldstart's codes"),
			OPT_END(),
		};

		_Static_assert(sizeof(table) == sizeof(m->options), "measure_opts.options holds the table");
		memcpy(m->options, table, sizeof(table));
	}
}

void measure_opts_release(struct measure_opts *m)
{
	limits_release(&m->limits);
	memset(&m->limits, 0, sizeof(m->limits));
	ready_spec_release(&m->ready_spec);
}

int measure_opts_finish(struct measure_opts *m, struct limits *out, struct buf *err)
{
	if (m->ready_status && !m->ready) {
		buf_adds(err, "--ready-status needs --ready http://...");
		return -1;
	}
	if (m->ready && ready_spec_parse(&m->ready_spec, m->ready, m->ready_status, err) < 0)
		return -1;
	if (m->no_limits) {
		limits_release(&m->limits);
		memset(&m->limits, 0, sizeof(m->limits));
	} else if (limits_check(&m->limits, err) < 0) {
		return -1;
	}
	*out = m->limits;
	memset(&m->limits, 0, sizeof(m->limits));
	return 0;
}

void measure_session_init(struct measure_session *s, struct profile *p, const char *command,
			  const struct measure_opts *opts, const struct measure_target *target)
{
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->opts = opts;
	s->target = target;
	s->ro.raw_fd = -1;
	strvec_init(&s->stdlib_names);
	strvec_init(&s->site_dirs);
	profile_stamp(p, command);
}

void measure_session_release(struct measure_session *s)
{
	strvec_clear(&s->stdlib_names);
	strvec_clear(&s->site_dirs);
}

int measure_probe(struct measure_session *s, const char *python, const char *where)
{
	const struct measure_target *t = s->target;
	struct buf out = BUF_INIT, errout = BUF_INIT, err = BUF_INIT, why = BUF_INIT;
	int rc, major = 0, minor = 0, ret = EXIT_NO_PYTHON;

	rc = t->probe(t->self, python, probe_args, &out, &errout, &err);
	if (rc < 0) {
		buf_add(&why, err.buf, err.len);
	} else if (rc || read_answer(s, out.buf, &major, &minor) < 0) {
		buf_addf(&why, "status %d", rc);
		if (errout.len || out.len) {
			buf_adds(&why, ": ");
			buf_add_last_line(&why, errout.len ? errout.buf : out.buf);
		}
	}
	if (why.len && t->probe_optional) {
		profile_add_warning(s->p, 0, "cannot ask '%s' %s for its version (%s); importtime only", python, where,
				    why.buf);
		warning("cannot ask '%s' %s for its version (%s); importtime only", python, where, why.buf);
		strvec_clear(&s->stdlib_names);
		strvec_clear(&s->site_dirs);
		ret = -1;
	} else if (why.len) {
		if (rc < 0)
			error("%s", why.buf);
		else
			error("'%s' does not behave like a Python interpreter (%s)", python, why.buf);
	} else if (major < 3 || (major == 3 && minor < 7)) {
		error("Python %s %s has no -X importtime (it needs Python 3.7 or newer)", s->p->python_version, where);
	} else {
		ret = 0;
	}
	buf_release(&out);
	buf_release(&errout);
	buf_release(&err);
	buf_release(&why);
	return ret;
}

int measure_run(struct measure_session *s)
{
	const struct measure_opts *m = s->opts;
	const struct measure_target *t = s->target;
	struct profile *p = s->p;
	struct buf err = BUF_INIT;
	bool tty = isatty(2);
	int nbase = s->baseline ? m->runs : 0, total = nbase + m->warmup + m->runs, k, ret = 0;

	s->ro.timeout_us = m->timeout_us;
	s->ro.ready = m->ready ? &m->ready_spec : NULL;
	s->ro.ready_timeout_us = m->ready_timeout_us;
	s->ro.quiet = m->quiet;
	s->ro.notify = show_alert;
	for (k = 0; k < total && !ret; k++) {
		struct run *r = profile_add_run(p);
		struct runner_failure why;
		int rc = 0, failed;

		r->baseline = k < nbase;
		r->warmup = k < nbase + m->warmup;
		s->ro.use_limits = !t->applies_limits && limits_any(&p->limits) && !r->baseline;
		if (tty && total > 1)
			progress(r, k, nbase, m);
		buf_reset(&err);
		if (t->run_begin && t->run_begin(t->self, r, (size_t)k, &err) < 0) {
			error("%s", err.buf);
			ret = EXIT_FAIL;
			break;
		}
		failed = runner_run(&s->ro, p, r, &err, &why) < 0;
		if (failed)
			error("%s", err.buf);
		if (t->run_end)
			rc = t->run_end(t->self, p, r, failed ? &why : NULL);
		if (failed && why.signo)
			ret = 128 + why.signo;
		else if (failed)
			ret = rc ? rc : runner_exit_code(&why);
		else
			ret = rc;
	}
	if (tty && total > 1)
		fprintf(stderr, "\r%40s\r", "");
	if (!ret) {
		int sig = runner_after_runs();

		if (sig) {
			error("interrupted by signal %d", sig);
			ret = 128 + sig;
		}
	}
	buf_release(&err);
	return ret;
}

int measure_finish(struct measure_session *s, const struct show_opts *so)
{
	const char *const *names = s->stdlib_names.nr ? s->stdlib_names.v : NULL;
	const char *const *dirs = s->target->paths_on_host && s->site_dirs.nr ? s->site_dirs.v : NULL;
	int ret, rc;

	profile_analyze_with(s->p, names, dirs);
	ret = profile_exit_status(s->p, s->opts->ready != NULL, s->opts->passthrough_exit);
	if (ret == EXIT_NO_IMPORTS)
		error("no measured run recorded an import: nothing to profile");
	rc = show_profile(s->p, so);
	/* A target's own failure is more specific than a broken budget. */
	if (rc && ret == EXIT_OK)
		ret = rc;
	return ret;
}
