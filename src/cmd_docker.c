/*
 * `coldstart docker`: profile a command inside a container run under the
 * same limits as `profile` (mapped to the engine's flags), with importtime,
 * the pure-Python tracer and readiness probes, and report it like `profile`.
 */
#include <errno.h>
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
#include "docker.h"
#include "profile.h"
#include "measure.h"
#include "ready.h"
#include "report.h"
#include "runner.h"
#include "show.h"

extern char **environ;

/* The same codes as `profile` (docs/exit-codes.md, docs/docker.md). */

struct docker_opts {
	struct show_opts show;
	struct measure_opts m;
	bool no_init;
	const char *engine;
	int64_t engine_timeout_us;
	int engine_timeout_ms;
	struct strvec env;
	struct strvec volumes;
	struct strvec extra;
	const char *network;
	const char *user;
	const char *entrypoint;
};

/* What the runner's before_start hook needs, and what it leaves behind. */
struct docker_run_ctx {
	const struct docker_opts *o;
	const struct profile *p;
	const char *image;
	const char *const *command;
	const char *image_pythonpath; /* the image's own PYTHONPATH, NULL if none */
	const char *name; /* this run's container */
	int publish_port;
	bool created; /* the container exists and must be removed */
	bool create_failed; /* the engine refused to create it */
};

static int set_engine(const struct opt *opt, const char *v, struct buf *err)
{
	if (strcmp(v, "docker") && strcmp(v, "podman")) {
		buf_addf(err, "--engine is docker or podman, not '%s'", v);
		return -1;
	}
	*(const char **)opt->value = v;
	return 0;
}

static const struct usage docker_usage = {
	.command = "docker",
	.synopsis = "usage: coldstart docker [options] IMAGE [COMMAND [ARGS...]]\n\n"
		    "Creates a container from IMAGE (never pulled) with the limits mapped to the\n"
		    "engine's flags and PYTHONPROFILEIMPORTTIME=1, plus the tracer bootstrap when\n"
		    "COMMAND is a Python 3.7+ of the image; starts it attached, parses its stderr,\n"
		    "reads the end state (OOMKilled) and removes it.  One container per run.\n\n",
	.footer = "Exit status: 0 ok, 1 failure or broken budget, 2 usage, 4 engine, image or\n"
		  "container unusable (no CLI, daemon unreachable, image missing, never started),\n"
		  "5 target exited non-zero, 6 killed by a signal, 7 OOM-killed, 8 timeout,\n"
		  "9 readiness not reached (docs/docker.md).\n",
};

/*
 * Cuts the next line off *text (in place) and returns it, NULL at the end.
 * Empty lines are skipped.
 */
static char *next_line(char **text)
{
	char *line;

	while (**text == '\n')
		(*text)++;
	if (!**text)
		return NULL;
	line = *text;
	*text += strcspn(*text, "\n");
	if (**text)
		*(*text)++ = '\0';
	return line;
}

/*
 * "coldstart.host=<hostname>": stale containers are only judged by pids of
 * this host (DOCKER_HOST may be a daemon shared with other machines).
 */
static void push_owner_labels(struct strvec *argv)
{
	char host[256] = "unknown";

	if (gethostname(host, sizeof(host) - 1) < 0)
		memcpy(host, "unknown", sizeof("unknown"));
	host[sizeof(host) - 1] = '\0';
	strvec_push(argv, "--label");
	strvec_pushf(argv, "coldstart.pid=%ld", (long)getpid());
	strvec_push(argv, "--label");
	strvec_pushf(argv, "coldstart.host=%s", host);
}

static const char *engine_argv0(const struct docker_opts *o)
{
	return o->engine;
}

/*
 * Runs one engine control command.  Returns its exit status, or -1 after
 * printing why it could not run at all.
 */
static int engine(const struct docker_opts *o, const char *const *argv, struct buf *out, struct buf *errout)
{
	struct buf err = BUF_INIT;
	int rc = docker_exec(argv, o->engine_timeout_ms, out, errout, &err);

	if (rc < 0) {
		if (errno == ENOENT)
			error("no '%s' command found on PATH: install it (Debian: docker.io%s) or pick "
			      "another with --engine", argv[0], strcmp(argv[0], "podman") ? "" : ", podman");
		else if (errno == ETIMEDOUT)
			error("%s; is the engine (DOCKER_HOST=%s) stuck? --engine-timeout raises the limit",
			      err.buf, getenv("DOCKER_HOST") ? getenv("DOCKER_HOST") : "default");
		else
			error("%s", err.buf);
	}
	buf_release(&err);
	return rc;
}

/* Removes the named container (killing it first); quiet on success. */
static void engine_remove(const struct docker_opts *o, const char *name)
{
	struct buf errout = BUF_INIT, line = BUF_INIT;
	int rc = engine(o, (const char *const[]){ engine_argv0(o), "rm", "-f", "-v", name, NULL }, NULL, &errout);

	if (rc > 0 && !strstr(errout.buf, "No such container") && !strstr(errout.buf, "no such container")) {
		docker_last_line(errout.buf, &line);
		warning("cannot remove container '%s': %s", name, line.buf);
	}
	buf_release(&errout);
	buf_release(&line);
}

/* Removes containers of coldstart processes that died without cleaning up. */
static void engine_cleanup_stale(const struct docker_opts *o)
{
	struct buf out = BUF_INIT;
	struct strvec argv = STRVEC_INIT, labels = STRVEC_INIT;
	char *line, *rest;
	int rc;

	push_owner_labels(&labels);
	strvec_pushv(&argv, (const char *const[]){ engine_argv0(o), "ps", "-a", "--filter", "label=coldstart.pid",
						   "--filter", NULL });
	strvec_pushf(&argv, "label=%s", labels.v[3]);
	strvec_pushv(&argv, (const char *const[]){ "--format", "{{.Names}} {{.Label \"coldstart.pid\"}}", NULL });
	rc = engine(o, argv.v, &out, NULL);
	if (rc != 0)
		goto out;
	rest = out.buf;
	while ((line = next_line(&rest))) {
		char *sp = strchr(line, ' ');
		long pid;

		if (!sp)
			continue;
		*sp = '\0';
		pid = strtol(sp + 1, NULL, 10);
		if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
			continue;
		engine_remove(o, line);
	}
out:
	strvec_clear(&argv);
	strvec_clear(&labels);
	buf_release(&out);
}

/* Is the engine there and answering?  0, or EXIT_NO_ENGINE after a message. */
static int check_engine(const struct docker_opts *o)
{
	struct buf out = BUF_INIT, errout = BUF_INIT, line = BUF_INIT;
	int ret = EXIT_NO_ENGINE, rc;

	if (!strcmp(o->engine, "docker"))
		rc = engine(o, (const char *const[]){ "docker", "version", "--format", "{{.Server.Version}}", NULL },
			    &out, &errout);
	else
		rc = engine(o, (const char *const[]){ o->engine, "version", NULL }, &out, &errout);
	if (rc < 0)
		goto out;
	if (rc) {
		docker_last_line(errout.len ? errout.buf : out.buf, &line);
		error("the %s engine is unreachable (DOCKER_HOST=%s): %s", o->engine,
		      getenv("DOCKER_HOST") ? getenv("DOCKER_HOST") : "default", line.len ? line.buf : "no message");
		goto out;
	}
	ret = 0;
out:
	buf_release(&out);
	buf_release(&errout);
	buf_release(&line);
	return ret;
}

/*
 * Is the image present?  Returns 0 and the image's PYTHONPATH (or NULL) in
 * *pythonpath, or EXIT_NO_ENGINE after a message.  coldstart never pulls: a
 * pull inside a measured run would be measured.
 */
static int check_image(const struct docker_opts *o, const char *image, char **pythonpath)
{
	struct buf out = BUF_INIT, errout = BUF_INIT, line = BUF_INIT;
	int rc, ret = EXIT_NO_ENGINE;
	char *s, *rest;

	rc = engine(o, (const char *const[]){ engine_argv0(o), "image", "inspect", "--format",
					      "{{range .Config.Env}}{{println .}}{{end}}", image, NULL },
		    &out, &errout);
	if (rc < 0)
		goto out;
	if (rc) {
		docker_last_line(errout.buf, &line);
		error("image '%s' is not in the engine (%s); coldstart never pulls: run '%s pull %s' or "
		      "build it first", image, line.len ? line.buf : "no message", o->engine, image);
		goto out;
	}
	rest = out.buf;
	while ((s = next_line(&rest)))
		if (starts_with(s, "PYTHONPATH="))
			*pythonpath = xstrdup(s + strlen("PYTHONPATH="));
	ret = 0;
out:
	buf_release(&out);
	buf_release(&errout);
	buf_release(&line);
	return ret;
}

/*
 * Asks the image's interpreter for its version and standard-library names
 * (one extra container).  Returns 0 with p->python_version set, 1 when it
 * could not tell (a warning says why), or -1 after printing why the image's
 * Python cannot be profiled (no importtime before 3.7).
 */
static int probe_python(const struct docker_opts *o, const char *image, const char *python, const char *name,
			struct profile *p, struct strvec *stdlib_names)
{
	static const char code[] =
		"import sys\n"
		"sys.stdout.write('%d.%d.%d\\n' % tuple(sys.version_info[:3]))\n"
		"sys.stdout.write((sys.executable or '') + '\\n')\n"
		"sys.stdout.write(' '.join(sorted(getattr(sys, 'stdlib_module_names', ()))) + '\\n')\n";
	struct strvec argv = STRVEC_INIT;
	struct buf out = BUF_INIT, errout = BUF_INIT, line = BUF_INIT;
	int rc, ret = 1, major = 0, minor = 0;
	char *nl, *names;
	size_t i;

	strvec_pushv(&argv, (const char *const[]){ engine_argv0(o), "run", "--rm", "--name", name, "--network",
						   "none", "--entrypoint", python, NULL });
	push_owner_labels(&argv);
	if (o->user) {
		strvec_push(&argv, "--user");
		strvec_push(&argv, o->user);
	}
	/* The interpreter may live in a volume, or need the user's environment. */
	for (i = 0; i < o->env.nr; i++) {
		strvec_push(&argv, "-e");
		strvec_push(&argv, o->env.v[i]);
	}
	for (i = 0; i < o->volumes.nr; i++) {
		strvec_push(&argv, "-v");
		strvec_push(&argv, o->volumes.v[i]);
	}
	strvec_pushv(&argv, (const char *const[]){ image, "-I", "-c", code, NULL });
	rc = engine(o, argv.v, &out, &errout);
	if (rc < 0) {
		engine_remove(o, name);
		goto out;
	}
	if (rc || sscanf(out.buf, "%d.%d", &major, &minor) != 2) {
		docker_last_line(errout.len ? errout.buf : out.buf, &line);
		profile_add_warning(p, 0, "cannot ask '%s' in the image for its version (status %d: %s); "
				    "importtime only", python, rc, line.buf);
		warning("cannot ask '%s' in the image for its version (status %d: %s); importtime only", python, rc,
			line.buf);
		goto out;
	}
	nl = strchr(out.buf, '\n');
	if (!nl)
		goto out;
	*nl = '\0';
	p->python_version = xstrdup(out.buf);
	names = strchr(nl + 1, '\n');
	if (names) {
		names++;
		names[strcspn(names, "\n")] = '\0';
		while (*names) {
			size_t len = strcspn(names, " ");

			if (len) {
				char *tok = xstrndup(names, len);

				strvec_push(stdlib_names, tok);
				free(tok);
			}
			names += len + (names[len] == ' ');
		}
	}
	if (major < 3 || (major == 3 && minor < 7)) {
		error("Python %s in image '%s' has no -X importtime (it needs Python 3.7 or newer)",
		      p->python_version, image);
		ret = -1;
		goto out;
	}
	ret = 0;
out:
	strvec_clear(&argv);
	buf_release(&out);
	buf_release(&errout);
	buf_release(&line);
	return ret;
}

/* True when an environment entry of ours was not in coldstart's own environment. */
static bool env_added(const char *entry)
{
	char **e;

	for (e = environ; *e; e++)
		if (!strcmp(*e, entry))
			return false;
	return true;
}

/*
 * The runner's before_start hook: the trace and Fn directories now exist on
 * this host, so the container can be created with them mounted; the runner
 * then runs `<engine> start -a NAME`.  The engine CLI gets coldstart's own
 * environment back (the probe's FN_* and the tracer's variables are meant
 * for the container and travel as -e).
 */
static int before_start(void *data, struct runner_child_view *cv, struct buf *err)
{
	struct docker_run_ctx *x = data;
	const struct docker_opts *o = x->o;
	struct docker_spec ds;
	struct strvec argv = STRVEC_INIT;
	struct buf out = BUF_INIT, errout = BUF_INIT, line = BUF_INIT;
	char *boot = NULL, *slash;
	const char *fn_dir = x->o->m.ready ? ready_fn_dir(cv->ready) : NULL;
	int ret = -1, rc;
	size_t i;

	docker_spec_init(&ds);
	ds.engine = o->engine;
	ds.name = x->name;
	ds.image = x->image;
	ds.command = x->command;
	ds.limits = &x->p->limits;
	ds.network = o->network;
	ds.user = o->user;
	ds.entrypoint = o->entrypoint;
	ds.init = !o->no_init;
	ds.publish_port = x->publish_port;
	push_owner_labels(&ds.extra);
	strvec_pushv(&ds.extra, o->extra.v);
	strvec_pushv(&ds.volumes, o->volumes.v);

	if (fn_dir) {
		ds.fn_dir = fn_dir;
		strvec_push(&ds.env, "FN_LISTENER=unix:" DOCKER_FN_MOUNT "/lsnr.sock");
		for (i = 0; i < cv->env->nr; i++) {
			const char *e = cv->env->v[i];

			if (!starts_with(e, "FN_") || starts_with(e, "FN_LISTENER=") || !env_added(e))
				continue;
			if (starts_with(e, "FN_MEMORY=") && x->p->limits.memory > 0)
				strvec_pushf(&ds.env, "FN_MEMORY=%lld",
					     (long long)(x->p->limits.memory / (1024 * 1024)));
			else
				strvec_push(&ds.env, e);
		}
	}
	/* The user's -e come after ours: the engines keep the last value. */
	strvec_pushv(&ds.env, o->env.v);
	if (x->image_pythonpath && cv->boot_dir) {
		bool user_set = false;

		for (i = 0; i < o->env.nr; i++)
			if (starts_with(o->env.v[i], "PYTHONPATH"))
				user_set = true;
		if (!user_set)
			strvec_pushf(&ds.env, "PYTHONPATH=%s", x->image_pythonpath);
	}
	if (cv->boot_dir && cv->trace_dir) {
		boot = xstrdup(cv->boot_dir);
		slash = strrchr(boot, '/');
		if (slash && !strcmp(slash, "/_boot"))
			*slash = '\0';
		ds.boot_dir = boot;
		ds.trace_dir = cv->trace_dir;
	}
	/* Another user in the container must be able to write its sockets and traces. */
	if (o->user) {
		if (fn_dir)
			chmod(fn_dir, 01777);
		if (ds.trace_dir)
			chmod(ds.trace_dir, 01777);
	}
	if (docker_create_argv(&ds, &argv, err) < 0)
		goto out;
	rc = docker_exec(argv.v, o->engine_timeout_ms, &out, &errout, err);
	if (rc != 0) {
		x->create_failed = true;
		/* A timed-out create may still have made the container. */
		x->created = true;
		if (rc > 0) {
			docker_last_line(errout.buf, &line);
			buf_addf(err, "'%s create' failed (status %d): %s", o->engine, rc,
				 line.len ? line.buf : "no message");
		} else if (errno == ENOENT) {
			x->created = false;
		}
		goto out;
	}
	x->created = true;

	strvec_clear(cv->argv);
	strvec_pushv(cv->argv, (const char *const[]){ o->engine, "start", "--attach", x->name, NULL });
	strvec_clear(cv->env);
	strvec_pushv(cv->env, (const char *const *)environ);
	ret = 0;
out:
	docker_spec_release(&ds);
	strvec_clear(&argv);
	buf_release(&out);
	buf_release(&errout);
	buf_release(&line);
	free(boot);
	return ret;
}

/*
 * Reads the container's end state into r after the runner measured it.
 * Returns 0, or EXIT_NO_ENGINE after a message when the container never
 * started (the command is missing, the engine refused the limits, ...).
 */
static int read_state(const struct docker_opts *o, const char *name, struct profile *p, struct run *r)
{
	struct buf out = BUF_INIT, errout = BUF_INIT, err = BUF_INIT, line = BUF_INIT;
	struct docker_state st;
	int rc, ret = 0;

	memset(&st, 0, sizeof(st));
	/* These describe the engine CLI, not the container. */
	r->user_us = r->sys_us = UNKNOWN;
	r->maxrss_kb = UNKNOWN;
	rc = engine(o, (const char *const[]){ engine_argv0(o), "inspect", "--type", "container", "--format",
					      DOCKER_STATE_FORMAT, name, NULL },
		    &out, &errout);
	if (rc != 0) {
		docker_last_line(errout.buf, &line);
		profile_add_warning(p, 0, "cannot inspect container '%s': %s", name, line.buf);
		warning("cannot inspect container '%s': %s", name, line.buf);
		goto out;
	}
	if (docker_state_parse(&st, out.buf, &err) < 0) {
		profile_add_warning(p, 0, "cannot read the state of container '%s': %s", name, err.buf);
		goto out;
	}
	if (!st.started) {
		error("the container never started: %s", st.error ? st.error : "the engine gave no reason");
		ret = EXIT_NO_ENGINE;
		goto out;
	}
	if (st.finished_ns > st.started_ns)
		r->wall_us = (st.finished_ns - st.started_ns) / 1000;
	if (r->status == RUN_TIMEOUT || r->status == RUN_STOPPED)
		goto out;
	if (st.oom_killed && st.exit_code != 0) {
		r->status = RUN_OOM;
		r->term_signal = SIGKILL;
		goto out;
	}
	/*
	 * With --init the container starts even when its command cannot: the
	 * init process reports 127 (not found) or 126 (not executable), and no
	 * Python ever printed a row.
	 */
	if ((st.exit_code == 126 || st.exit_code == 127) && !r->nr_procs) {
		error("the container's command could not be run (status %d: %s in the image)", st.exit_code,
		      st.exit_code == 127 ? "not found" : "not executable");
		ret = EXIT_NO_ENGINE;
		goto out;
	}
	if (st.oom_killed)
		profile_add_warning(p, 0, "a process in container '%s' was OOM-killed; the command survived", name);
	/* 128+N is how a container reports its process killed by signal N. */
	if (st.exit_code > 128 && st.exit_code <= 128 + 64) {
		r->status = RUN_SIGNALED;
		r->term_signal = st.exit_code - 128;
	} else if (st.exit_code >= 0) {
		r->status = RUN_EXITED;
		r->exit_code = st.exit_code;
	}
out:
	docker_state_release(&st);
	buf_release(&out);
	buf_release(&errout);
	buf_release(&err);
	buf_release(&line);
	return ret;
}

static void fill_meta(struct profile *p, const char *image, const char *python)
{
	char stamp[32];
	time_t t = time(NULL);
	struct tm tm;
	struct buf b = BUF_INIT;

	p->tool_version = xstrdup(COLDSTART_VERSION);
	p->command = xstrdup("docker");
	buf_addf(&b, "%s in image %s", python ? python : "command", image);
	p->python = buf_detach(&b, NULL);
	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	p->created = xstrdup(stamp);
	/* cwd stays NULL: the host's directory says nothing about the container's. */
}

/* The port a tcp:/http:// probe connects to, to publish on 127.0.0.1; 0 for none. */
static int ready_port(const char *spec)
{
	const char *s;

	if (starts_with(spec, "tcp:"))
		return atoi(spec + 4);
	if (starts_with(spec, "http://")) {
		s = strchr(spec + 7, ':');
		if (s && (!strchr(spec + 7, '/') || s < strchr(spec + 7, '/')))
			return atoi(s + 1);
		return 80;
	}
	return 0;
}

static bool is_python_command(const char *cmd)
{
	const char *base = strrchr(cmd, '/');

	base = base ? base + 1 : cmd;
	return starts_with(base, "python");
}

int cmd_docker(int argc, char **argv)
{
	struct docker_opts o;
	struct profile p;
	struct strvec stdlib_names = STRVEC_INIT, placeholder = STRVEC_INIT;
	struct buf err = BUF_INIT, name = BUF_INIT;
	struct runner_opts ro;
	struct docker_run_ctx x;
	const char *image, *python = NULL;
	char *image_pythonpath = NULL;
	const char *const *command;
	int i = 1, ret = EXIT_FAIL, k, rc, total_runs;
	bool tracer = false, tty = isatty(2);

	const struct opt options[] = {
		OPT_INCLUDE(o.show.options),
		OPT_INCLUDE(o.m.options),
		OPT_CALLBACK("engine", 0, &o.engine, set_engine, "NAME", "docker (default) or podman; DOCKER_HOST is respected"),
		OPT_STRINGS("env", 'e', &o.env, "NAME[=VALUE]", "set an environment variable in the container; repeatable"),
		OPT_STRINGS("volume", 'v', &o.volumes, "SRC:DST[:ro]", "mount into the container; repeatable"),
		OPT_STRING("network", 0, &o.network, "NET", "container network (none, host, ...)"),
		OPT_STRING("user", 0, &o.user, "USER[:GROUP]", "user inside the container"),
		OPT_STRING("entrypoint", 0, &o.entrypoint, "PATH", "override the image's entrypoint"),
		OPT_STRINGS("engine-arg", 0, &o.extra, "ARG", "pass ARG to '<engine> create' verbatim; repeatable"),
		OPT_BOOL("no-init", 0, &o.no_init, "no --init: the command is PID 1 (it may ignore SIGTERM)"),
		OPT_SECONDS("engine-timeout", 0, &o.engine_timeout_us, 3600,
			    "limit for each engine command other than the run itself (default 60)"),
		OPT_END(),
	};

	memset(&o, 0, sizeof(o));
	show_opts_init(&o.show);
	measure_opts_init(&o.m);
	strvec_init(&o.env);
	strvec_init(&o.volumes);
	strvec_init(&o.extra);
	o.engine = "docker";
	o.engine_timeout_us = 60 * 1000000LL;
	profile_init(&p);

	rc = args_parse(options, argc, argv, &i, NULL, &err);
	if (rc) {
		ret = usage_stop(&docker_usage, options, rc, err.buf);
		goto out;
	}
	o.engine_timeout_ms = (int)(o.engine_timeout_us / 1000) ? (int)(o.engine_timeout_us / 1000) : 1;
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		error("no image: coldstart docker [options] IMAGE [COMMAND ARGS...]");
		usage_show(&docker_usage, options, stderr);
		ret = EXIT_USAGE;
		goto out;
	}
	image = argv[i++];
	command = (const char *const *)argv + i;
	if (o.m.ready && strcmp(o.m.ready, "fn") && !ready_port(o.m.ready)) {
		error("--ready '%s' cannot reach into a container: use fn, tcp:PORT or http://127.0.0.1:PORT/...",
		      o.m.ready);
		ret = EXIT_USAGE;
		goto out;
	}
	if (measure_opts_finish(&o.m, &p.limits, &err) < 0) {
		error("%s", err.buf);
		ret = EXIT_USAGE;
		goto out;
	}
	if (limits_any(&p.limits))
		p.limits.backend = xstrdup(o.engine);
	strvec_push(&p.target, image);
	strvec_pushv(&p.target, command);
	if (*command && !o.entrypoint && is_python_command(command[0]))
		python = command[0];
	fill_meta(&p, image, python);

	runner_setup_signals();
	ret = check_engine(&o);
	if (ret)
		goto out;
	ret = check_image(&o, image, &image_pythonpath);
	if (ret)
		goto out;
	engine_cleanup_stale(&o);
	if (python) {
		buf_addf(&name, "coldstart-%ld-probe", (long)getpid());
		rc = probe_python(&o, image, python, name.buf, &p, &stdlib_names);
		if (rc < 0) {
			ret = EXIT_NO_ENGINE;
			goto out;
		}
		tracer = !rc && !o.m.no_trace;
	}

	memset(&x, 0, sizeof(x));
	x.o = &o;
	x.p = &p;
	x.image = image;
	x.command = command;
	x.image_pythonpath = image_pythonpath;
	x.publish_port = o.m.ready ? ready_port(o.m.ready) : 0;

	/* Replaced by before_start once the container exists. */
	strvec_pushv(&placeholder, (const char *const[]){ o.engine, "start", "--attach", "", NULL });
	memset(&ro, 0, sizeof(ro));
	ro.argv = placeholder.v;
	ro.trace = tracer;
	ro.timeout_us = o.m.timeout_us;
	ro.ready = o.m.ready;
	ro.ready_timeout_us = o.m.ready_timeout_us;
	ro.quiet = o.m.quiet;
	ro.raw_fd = -1;
	ro.before_start = before_start;
	ro.before_start_data = &x;

	total_runs = o.m.warmup + o.m.runs;
	for (k = 0; k < total_runs; k++) {
		struct run *r = profile_add_run(&p);
		enum runner_error re;
		int sig = 0;

		r->warmup = k < o.m.warmup;
		if (tty && total_runs > 1) {
			fprintf(stderr, "\rcoldstart: %s run %d/%d ", r->warmup ? "warm-up" : "measured",
				r->warmup ? k + 1 : k - o.m.warmup + 1, r->warmup ? o.m.warmup : o.m.runs);
			fflush(stderr);
		}
		buf_reset(&name);
		buf_addf(&name, "coldstart-%ld-%d", (long)getpid(), k);
		x.name = name.buf;
		x.created = x.create_failed = false;
		buf_reset(&err);
		re = runner_run(&ro, &p, r, &err, &sig);
		if (re == RUNNER_INTERRUPTED) {
			error("%s", err.buf);
			if (x.created)
				engine_remove(&o, x.name);
			ret = 128 + sig;
			goto out;
		}
		if (re != RUNNER_OK) {
			error("%s", err.buf);
			if (x.created)
				engine_remove(&o, x.name);
			ret = x.create_failed || re == RUNNER_NO_EXEC ? EXIT_NO_ENGINE : EXIT_FAIL;
			goto out;
		}
		rc = read_state(&o, x.name, &p, r);
		engine_remove(&o, x.name);
		if (!rc && x.publish_port && r->ready_us == UNKNOWN && r->status != RUN_OOM &&
		    !(o.network && !strcmp(o.network, "host"))) {
			profile_add_warning(&p, 0, "port %d was published on 127.0.0.1 and never answered; an engine "
					    "without a bridge network (dockerd --bridge=none) cannot publish ports: "
					    "try --network host", x.publish_port);
			warning("port %d was published on 127.0.0.1 and never answered; an engine without a bridge "
				"network (dockerd --bridge=none) cannot publish ports: try --network host",
				x.publish_port);
		}
		if (rc) {
			ret = rc;
			goto out;
		}
	}
	if (tty && total_runs > 1)
		fprintf(stderr, "\r%40s\r", "");

	profile_analyze(&p, stdlib_names.nr ? stdlib_names.v : NULL);
	ret = profile_exit_status(&p, o.m.ready != NULL, o.m.passthrough_exit);
	rc = show_profile(&p, &o.show);
	if (rc && ret == EXIT_OK)
		ret = rc;
out:
	show_opts_release(&o.show);
	measure_opts_release(&o.m);
	profile_release(&p);
	strvec_clear(&o.env);
	strvec_clear(&o.volumes);
	strvec_clear(&o.extra);
	strvec_clear(&stdlib_names);
	strvec_clear(&placeholder);
	buf_release(&err);
	buf_release(&name);
	free(image_pythonpath);
	return ret;
}
