/*
 * The measuring session of `profile` and `docker`: their shared options, the
 * interpreter probe, the run loop and the exit status (see measure.h).
 */
#include "session/measure.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "analysis/analyze.h"
#include "exit.h"
#include "session/measure_cold.h"
#include "sys/cold.h"
#include "sys/launch.h"
#include "sys/ready.h"
#include "model/runlimits.h"
#include "session/show.h"

/*
 * What the probe asks: the version, sys.executable, the standard library's
 * module names (3.10+), the bytecode cache tag, the extension suffixes,
 * sys.path (tab-separated), then one site-packages directory a line.
 */
static const char probe_code[] = "import sys\n"
				 "sys.stdout.write('%d.%d.%d\\n' % tuple(sys.version_info[:3]))\n"
				 "sys.stdout.write((sys.executable or '') + '\\n')\n"
				 "sys.stdout.write(' '.join(sorted(getattr(sys, 'stdlib_module_names', ()))) + '\\n')\n"
				 "impl = getattr(sys, 'implementation', None)\n"
				 "sys.stdout.write((getattr(impl, 'cache_tag', '') or '') + '\\n')\n"
				 "try:\n"
				 "    import importlib.machinery as m\n"
				 "    sys.stdout.write(' '.join(m.EXTENSION_SUFFIXES) + '\\n')\n"
				 "except Exception:\n"
				 "    sys.stdout.write('\\n')\n"
				 "sys.stdout.write('\\t'.join(p for p in sys.path if p) + '\\n')\n"
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
		int e = errno;
		struct stat st;

		/* One sentence, about the interpreter, whatever exec said. */
		buf_reset(err);
		if (e == ENOENT && !strchr(python, '/'))
			buf_addf(err, "no interpreter '%s' on PATH: pass --python PATH", python);
		else if (e == ENOENT)
			buf_addf(err, "no interpreter '%s': no such file", python);
		else if (!stat(python, &st) && S_ISDIR(st.st_mode))
			buf_addf(err, "interpreter '%s' is a directory", python);
		else if (e == EACCES)
			buf_addf(err, "interpreter '%s' is not executable", python);
		else
			buf_addf(err, "cannot run interpreter '%s': %s", python, strerror(e));
		errno = e;
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
/* Appends the words of line, split at sep, to v. */
static void split_into(struct strvec *v, const char *line, char sep)
{
	while (line && *line) {
		size_t len = strcspn(line, (char[]){ sep, '\0' });

		if (len) {
			char *word = xstrndup(line, len);

			strvec_push(v, word);
			free(word);
		}
		line += len + (line[len] == sep);
	}
}

static int read_answer(struct measure_session *s, char *text, int *major, int *minor)
{
	char *version = cut_line(&text), *exe, *dir, *tag;

	if (!version || sscanf(version, "%d.%d", major, minor) != 2 || !(exe = cut_line(&text)))
		return -1;
	free(s->p->python_version);
	s->p->python_version = xstrdup(version);
	free(s->executable);
	s->executable = *exe ? xstrdup(exe) : NULL;
	split_into(&s->stdlib_names, cut_line(&text), ' ');
	tag = cut_line(&text);
	free(s->cache_tag);
	s->cache_tag = tag && *tag ? xstrdup(tag) : NULL;
	split_into(&s->ext_suffixes, cut_line(&text), ' ');
	split_into(&s->search_dirs, cut_line(&text), '\t');
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
static void progress(enum measure_kind kind, int n, int of)
{
	static const char *const what[] = {
		[MEASURE_BASELINE] = "unconstrained",
		[MEASURE_WARMUP] = "warm-up",
		[MEASURE_MEASURED] = "measured",
	};

	fprintf(stderr, "\rcoldstart: %s run %d/%d ", what[kind], n, of);
	fflush(stderr);
}

/* Whether CPU n exists and is online here (/sys/devices/system/cpu/online, "0-1,4"). */
static int cpu_online(long n, struct buf *online)
{
	const char *s;

	if (!online->len && buf_read_file(online, "/sys/devices/system/cpu/online") < 0)
		return -1;
	for (s = online->buf; *s;) {
		char *end;
		long lo = strtol(s, &end, 10), hi = lo;

		if (end == s)
			break;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (n >= lo && n <= hi)
			return 1;
		s = end + strspn(end, ",\n ");
	}
	return 0;
}

/* A --cpuset naming a CPU this machine does not have: said as such, before the kernel says "out of range". */
static int check_cpuset(const char *list, struct buf *err)
{
	struct buf online = BUF_INIT;
	const char *s = list;
	int ret = 0;

	while (*s && !ret) {
		char *end;
		long lo = strtol(s, &end, 10), hi = lo, n;

		if (end == s)
			break;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		for (n = lo; n <= hi && n - lo < 100000; n++)
			if (cpu_online(n, &online) == 0) {
				while (online.len && online.buf[online.len - 1] == '\n')
					buf_setlen(&online, online.len - 1);
				buf_addf(err, "--cpuset %s: CPU %ld does not exist here (online: %s)", list, n,
					 online.buf);
				ret = -1;
				break;
			}
		s = end + (*end == ',');
	}
	buf_release(&online);
	return ret;
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

/* For "-- command": the interpreter named by the command's #! line, if any. */
char *measure_command_python(const char *cmd)
{
	struct buf path = BUF_INIT, line = BUF_INIT;
	char *result = NULL, *interp, *arg, *prog;
	FILE *f = NULL;
	char head[512];

	prog = find_program(cmd);
	if (!prog)
		goto out;
	buf_adds(&path, prog);
	free(prog);
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

/*
 * The child's argv for the target at argv[i..]: with python, a script, -m
 * module or -c code under `python -X importtime`; without (after "--"), a
 * command as it is, with PYTHONPROFILEIMPORTTIME=1 in env.  Records the
 * target in p.  Returns 0, or the exit code after a message.
 */
int measure_target_argv(int argc, char **argv, int i, const char *python, struct profile *p, struct strvec *child_argv,
			struct strvec *env)
{
	int k;

	if (i >= argc) {
		error("'--' must be followed by a command");
		return EXIT_USAGE;
	}
	if (!python) {
		strvec_push(env, "PYTHONPROFILEIMPORTTIME=1");
	} else {
		if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "-c")) && i + 1 >= argc) {
			error("'%s' needs a %s", argv[i], !strcmp(argv[i], "-m") ? "module name" : "piece of code");
			return EXIT_USAGE;
		}
		strvec_pushv(child_argv, (const char *const[]){ python, "-X", "importtime", NULL });
	}
	for (k = i; k < argc; k++) {
		strvec_push(&p->target, argv[k]);
		strvec_push(child_argv, argv[k]);
	}
	if (python && argv[i][0] != '-' && access(argv[i], R_OK) < 0) {
		error("cannot read script '%s': %s", argv[i], strerror(errno));
		return EXIT_FAIL;
	}
	return 0;
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
				   "measure readiness: fn, tcp:PORT, unix:PATH (a connection accepted), "
				   "http://127.0.0.1:PORT/path (the first 2xx/3xx answer)"),
			OPT_SECONDS("ready-timeout", 0, &m->ready_timeout_us, 86400,
				    "give up waiting for readiness (default 60)"),
			OPT_STRING("ready-status", 0, &m->ready_status, "LIST",
				   "http:// readiness: the answers that count, e.g. 200 or 2xx,404 (default 200-399)"),
			OPT_BOOL("exit-code", 0, &m->passthrough_exit,
				 "exit with the target's own status instead of coldstart's codes"),
			OPT_BOOL("cold", 0, &m->cold,
				 "evict the files the target read from the page cache before each run "
				 "(checked with mincore; a measured run that read others is made again; docs/cold.md)"),
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
			  const struct measure_opts *opts, const struct show_opts *show,
			  const struct measure_target *target)
{
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->opts = opts;
	s->show = show;
	s->target = target;
	s->ro.raw_fd = -1;
	s->ro.stdout_fd = -1;
	strvec_init(&s->stdlib_names);
	strvec_init(&s->site_dirs);
	strvec_init(&s->ext_suffixes);
	strvec_init(&s->search_dirs);
	profile_stamp(p, command);
}

void measure_session_release(struct measure_session *s)
{
	strvec_clear(&s->stdlib_names);
	strvec_clear(&s->site_dirs);
	strvec_clear(&s->ext_suffixes);
	strvec_clear(&s->search_dirs);
	free(s->executable);
	free(s->cache_tag);
	s->executable = s->cache_tag = NULL;
	cold_set_free(s->cold);
	s->cold = NULL;
}

/* Whether the session's runs evict the target's files first: --cold, or the command's choice for it. */
static bool evicts(const struct measure_session *s)
{
	return s->evict || s->opts->cold;
}

/* --cold where the target's files are not this host's (a container): a usage error, said once. */
static int cold_check(struct measure_session *s, struct buf *err)
{
	if (!evicts(s) || s->target->paths_on_host)
		return 0;
	buf_adds(err, "--cold evicts this host's page cache, and the target's files are not on this host "
		      "(a container's image): run it with 'coldstart profile'");
	return EXIT_USAGE;
}

/*
 * Whether python (a name on PATH or a path) is a script that execs the
 * interpreter the probe answered from (exe, sys.executable): a pyenv shim
 * costs a shell and pyenv's own lookup before Python starts, which the
 * report must not call the interpreter's.
 */
static void note_launcher(struct profile *p, const char *python, const char *exe)
{
	char *prog = find_program(python);
	char head[512], rp[PATH_MAX], re[PATH_MAX];
	size_t n = 0;
	FILE *f;

	if (!prog || !exe || !*exe || !realpath(prog, rp) || !realpath(exe, re) || !strcmp(rp, re))
		goto out;
	f = fopen(prog, "re");
	if (f) {
		n = fread(head, 1, sizeof(head) - 1, f);
		fclose(f);
	}
	head[n] = '\0';
	if (n < 2 || strncmp(head, "#!", 2))
		goto out;
	free(p->python_launcher);
	free(p->python_executable);
	p->python_launcher = xstrdup(strstr(prog, "/shims/") && strstr(head, "pyenv") ? "pyenv shim"
										      : "launcher script");
	p->python_executable = xstrdup(exe);
out:
	free(prog);
}

int measure_probe(struct measure_session *s, const char *python, const char *where, struct buf *err)
{
	const struct measure_target *t = s->target;
	struct buf out = BUF_INIT, errout = BUF_INIT, perr = BUF_INIT, why = BUF_INIT;
	int rc, major = 0, minor = 0, ret = EXIT_NO_PYTHON;

	if ((rc = cold_check(s, err))) {
		s->checked = true;
		return rc;
	}
	rc = t->probe(t->self, python, probe_args, &out, &errout, &perr);
	if (rc < 0) {
		buf_add(&why, perr.buf, perr.len);
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
		strvec_clear(&s->ext_suffixes);
		strvec_clear(&s->search_dirs);
		ret = -1;
	} else if (why.len) {
		if (rc < 0)
			buf_add(err, why.buf, why.len);
		else
			buf_addf(err, "'%s' does not behave like a Python interpreter (%s)", python, why.buf);
	} else if (major < 3 || (major == 3 && minor < 7)) {
		buf_addf(err, "Python %s %s has no -X importtime (it needs Python 3.7 or newer)", s->p->python_version,
			 where);
	} else {
		note_launcher(s->p, python, s->executable);
		ret = 0;
	}
	buf_release(&out);
	buf_release(&errout);
	buf_release(&perr);
	buf_release(&why);
	return ret;
}

/* --cold: what is known before any run (the interpreter, its libraries, the script or command). */
static void cold_start(struct measure_session *s)
{
	const struct profile *p = s->p;

	s->cold = cold_set_new();
	cold_set_search(s->cold, s->search_dirs.v, s->cache_tag, s->ext_suffixes.v);
	if (s->executable)
		cold_add_binary(s->cold, s->executable);
	if (s->ro.python) {
		char *exe = find_program(s->ro.python);

		if (exe)
			cold_add_binary(s->cold, exe);
		free(exe);
	}
	cold_add_pth_files(s->cold, s->site_dirs.v);
	if (p->target.nr && strcmp(p->target.v[0], "-c") && strcmp(p->target.v[0], "-m")) {
		char *prog = find_program(p->target.v[0]);

		/* A script, or a command: an ELF brings its libraries, a script is read. */
		if (prog)
			cold_add_binary(s->cold, prog);
		free(prog);
	}
}

/* The checks that need the target, once, before its first run. */
static int first_run_checks(struct measure_session *s)
{
	const struct limits *lim = &s->p->limits;
	struct buf err = BUF_INIT;
	int ret = 0;

	s->checked = true;
	ret = cold_check(s, &err);
	if (ret)
		error("%s", err.buf);
	else if (lim->cpuset && !s->target->applies_limits && check_cpuset(lim->cpuset, &err) < 0) {
		error("%s", err.buf);
		ret = EXIT_LIMITS;
	}
	buf_release(&err);
	return ret;
}

int measure_warmups(const struct measure_opts *m, bool evict)
{
	return evict && m->warmup < 1 ? 1 : m->warmup;
}

int measure_run_one(struct measure_session *s, enum measure_kind kind)
{
	const struct measure_opts *m = s->opts;
	const struct measure_target *t = s->target;
	struct profile *p = s->p;
	struct buf err = BUF_INIT;
	struct measure_cold_run ev;
	struct runner_failure why;
	struct run *r;
	int rc = 0, ret, failed;

	if (!s->checked && (ret = first_run_checks(s)))
		return ret;
	if (s->show && show_stdout_taken(s->show))
		s->ro.stdout_fd = 2;
	s->ro.timeout_us = m->timeout_us;
	s->ro.ready = m->ready ? &m->ready_spec : NULL;
	s->ro.ready_timeout_us = m->ready_timeout_us;
	s->ro.quiet = m->quiet;
	s->ro.notify = show_alert;
	r = profile_add_run(p);
	r->baseline = kind == MEASURE_BASELINE;
	r->warmup = kind != MEASURE_MEASURED;
	s->ro.use_limits = !t->applies_limits && limits_any(&p->limits) && !r->baseline;
	if (evicts(s)) {
		if (!s->cold)
			cold_start(s);
		measure_cold_arm(&ev, s->cold, &s->ro, p, r);
	}
	if (t->run_begin && t->run_begin(t->self, r, p->nr_runs - 1, &err) < 0) {
		error("%s", err.buf);
		buf_release(&err);
		return EXIT_FAIL;
	}
	failed = runner_run(&s->ro, p, r, &err, &why) < 0;
	if (failed)
		error("%s", err.buf);
	if (t->run_end)
		rc = t->run_end(t->self, p, r, failed ? &why : NULL);
	if (evicts(s))
		measure_cold_after_run(&ev, failed);
	buf_release(&err);
	if (failed && why.signo)
		return 128 + why.signo;
	if (failed)
		return rc ? rc : runner_exit_code(&why);
	return rc;
}

int measure_runs_done(void)
{
	int sig = runner_after_runs();

	if (!sig)
		return 0;
	error("interrupted by signal %d", sig);
	return 128 + sig;
}

int measure_run(struct measure_session *s)
{
	const struct measure_opts *m = s->opts;
	struct {
		enum measure_kind kind;
		int n;
	} seq[3] = {
		{ MEASURE_BASELINE, s->baseline ? m->runs : 0 },
		{ MEASURE_WARMUP, measure_warmups(m, evicts(s)) },
		{ MEASURE_MEASURED, m->runs },
	};
	bool tty = isatty(2);
	int total = seq[0].n + seq[1].n + seq[2].n, ret = 0, i, k, reruns = 0;

	/* With --cold the warm-up learns which files to evict, so it goes first. */
	if (evicts(s)) {
		seq[0].kind = MEASURE_WARMUP;
		seq[0].n = measure_warmups(m, true);
		seq[1].kind = MEASURE_BASELINE;
		seq[1].n = s->baseline ? m->runs : 0;
	}
	for (i = 0; i < 3 && !ret; i++)
		for (k = 0; k < seq[i].n && !ret; k++) {
			if (tty && total > 1)
				progress(seq[i].kind, k + 1, seq[i].n);
			ret = measure_run_one(s, seq[i].kind);
			if (!ret && seq[i].kind == MEASURE_MEASURED && evicts(s) &&
			    /* A target that reads new files every run would never settle: at most --runs again. */
			    measure_cold_redo(s->p, k + 1, m->runs, &reruns))
				k--;
		}
	if (tty && total > 1)
		fprintf(stderr, "\r%40s\r", "");
	if (!ret)
		ret = measure_runs_done();
	return ret;
}

void measure_analyze(struct measure_session *s)
{
	const char *const *names = s->stdlib_names.nr ? s->stdlib_names.v : NULL;
	const char *const *dirs = s->target->paths_on_host && s->site_dirs.nr ? s->site_dirs.v : NULL;

	profile_analyze_with(s->p, names, dirs);
}

int measure_finish(struct measure_session *s, const struct show_opts *so)
{
	int ret, rc;

	measure_analyze(s);
	ret = profile_exit_status(s->p, s->opts->ready != NULL, s->opts->passthrough_exit);
	if (ret == EXIT_NO_IMPORTS)
		error("no measured run recorded an import: nothing to profile");
	rc = show_profile(s->p, so);
	/* A target's own failure is more specific than a broken budget. */
	if (rc && ret == EXIT_OK)
		ret = rc;
	return ret;
}
