/*
 * `coldstart docker`: profile a command inside a container run under the
 * same limits as `profile` (mapped to the engine's flags), with importtime,
 * the pure-Python tracer and readiness probes, and report it like `profile`.
 * This file is the container target of the measuring session (measure.h);
 * the engine itself is docker.c's.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cmd/builtin.h"
#include "sys/docker.h"
#include "session/measure.h"
#include "model/profile.h"
#include "sys/ready.h"
#include "session/runner.h"
#include "session/show.h"

extern char **environ;

/* The same codes as `profile` (docs/exit-codes.md, docs/docker.md). */

struct docker_opts {
	struct show_opts show;
	struct measure_opts m;
	struct docker_engine engine;
	int64_t engine_timeout_us;
	bool no_init;
	struct strvec env;
	struct strvec volumes;
	struct strvec extra;
	const char *network;
	const char *user;
	const char *entrypoint;
};

/* The container target: what its hooks need, and what a run leaves behind. */
struct docker_target {
	const struct docker_opts *o;
	const struct profile *p;
	const char *image;
	const char *const *command;
	const char *image_pythonpath; /* the image's own PYTHONPATH, NULL if none */
	struct buf name; /* this run's container */
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
		  "9 readiness not reached, 10 no import recorded (docs/docker.md).\n",
};

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
	struct docker_target *x = data;
	const struct docker_opts *o = x->o;
	struct docker_spec ds;
	struct strvec argv = STRVEC_INIT;
	struct buf out = BUF_INIT, errout = BUF_INIT, line = BUF_INIT;
	char *boot = NULL, *slash;
	const char *fn_dir = o->m.ready ? ready_fn_dir(cv->ready) : NULL;
	int ret = -1, rc;
	size_t i;

	docker_spec_init(&ds);
	ds.engine = o->engine.cli;
	ds.name = x->name.buf;
	ds.image = x->image;
	ds.command = x->command;
	ds.limits = &x->p->limits;
	ds.network = o->network;
	ds.user = o->user;
	ds.entrypoint = o->entrypoint;
	ds.init = !o->no_init;
	ds.publish_port = x->publish_port;
	docker_owner_labels(&ds.extra);
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
	rc = docker_exec(argv.v, o->engine.timeout_ms, &out, &errout, err);
	if (rc != 0) {
		x->create_failed = true;
		/* A timed-out create may still have made the container. */
		x->created = true;
		if (rc > 0) {
			buf_add_last_line(&line, errout.buf);
			buf_addf(err, "'%s create' failed (status %d): %s", o->engine.cli, rc,
				 line.len ? line.buf : "no message");
		} else if (errno == ENOENT) {
			x->created = false;
		}
		goto out;
	}
	x->created = true;

	strvec_clear(cv->argv);
	strvec_pushv(cv->argv, (const char *const[]){ o->engine.cli, "start", "--attach", x->name.buf, NULL });
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

/* The warnings docker.c recorded in p since the first `from`, echoed on stderr. */
static void echo_warnings(const struct profile *p, size_t from)
{
	for (; from < p->nr_warnings; from++)
		warning("%s", p->warnings[from].msg);
}

static void remove_container(const struct docker_target *x)
{
	struct buf err = BUF_INIT;

	if (docker_remove(&x->o->engine, x->name.buf, &err) < 0)
		warning("%s", err.buf);
	buf_release(&err);
}

/* The target's probe: the image's interpreter in a throw-away container. */
static int probe(void *self, const char *python, const char *const *args, struct buf *out, struct buf *errout,
		 struct buf *err)
{
	struct docker_target *x = self;
	struct docker_spec ds;
	int rc;

	docker_spec_init(&ds);
	buf_reset(&x->name);
	buf_addf(&x->name, "coldstart-%ld-probe", (long)getpid());
	ds.name = x->name.buf;
	ds.image = x->image;
	ds.command = args;
	ds.user = x->o->user;
	strvec_pushv(&ds.env, x->o->env.v);
	strvec_pushv(&ds.volumes, x->o->volumes.v);
	rc = docker_probe(&x->o->engine, &ds, python, out, errout, err);
	docker_spec_release(&ds);
	return rc;
}

/* One container per run, named after the run. */
static int run_begin(void *self, struct run *r, size_t index, struct buf *err)
{
	struct docker_target *x = self;

	buf_reset(&x->name);
	buf_addf(&x->name, "coldstart-%ld-%zu", (long)getpid(), index);
	x->created = x->create_failed = false;
	return 0;
}

/*
 * After the run: the container's end state, its removal, and what the
 * engine could not do (create it, start its command, publish the port).
 */
static int run_end(void *self, struct profile *p, struct run *r, const struct runner_failure *why)
{
	struct docker_target *x = self;
	const struct docker_opts *o = x->o;
	struct buf err = BUF_INIT;
	size_t nw = p->nr_warnings;
	int ret = 0;

	if (why) {
		if (x->created)
			remove_container(x);
		return x->create_failed || why->no_exec ? EXIT_NO_ENGINE : 0;
	}
	if (docker_read_state(&o->engine, x->name.buf, p, r, &err) < 0) {
		error("%s", err.buf);
		ret = EXIT_NO_ENGINE;
	}
	echo_warnings(p, nw);
	remove_container(x);
	if (!ret && x->publish_port && r->ready_us == UNKNOWN && r->status != RUN_OOM &&
	    !(o->network && !strcmp(o->network, "host"))) {
		profile_add_warning(p, 0,
				    "port %d was published on 127.0.0.1 and never answered; an engine "
				    "without a bridge network (dockerd --bridge=none) cannot publish ports: "
				    "try --network host",
				    x->publish_port);
		echo_warnings(p, p->nr_warnings - 1);
	}
	buf_release(&err);
	return ret;
}

static bool is_python_command(const char *cmd)
{
	const char *base = strrchr(cmd, '/');

	base = base ? base + 1 : cmd;
	return starts_with(base, "python");
}

/* A container as the measuring session's target (self: a struct docker_target). */
static const struct measure_target container = {
	.probe = probe,
	.run_begin = run_begin,
	.run_end = run_end,
	/* The engine applies the limits: --cpus, --memory, ... on `create`. */
	.applies_limits = true,
	/* An image's interpreter that cannot tell its version still runs with importtime. */
	.probe_optional = true,
	/* The image's site-packages are paths inside it, not on this host. */
	.paths_on_host = false,
};

/*
 * Is the engine there, and the image?  Then removes what a SIGKILLed
 * coldstart left.  Returns 0 with the image's PYTHONPATH in *pythonpath, or
 * EXIT_NO_ENGINE after a message.
 */
static int engine_ready(const struct docker_engine *e, const char *image, char **pythonpath)
{
	struct buf err = BUF_INIT;
	int ret = 0;

	if (docker_check_engine(e, &err) < 0 || docker_check_image(e, image, pythonpath, &err) < 0) {
		error("%s", err.buf);
		ret = EXIT_NO_ENGINE;
	} else if (docker_cleanup_stale(e, &err) < 0) {
		warning("%s", err.buf);
	}
	buf_release(&err);
	return ret;
}

/* The profile's target and interpreter: the image and its command. */
static void describe_target(struct profile *p, const char *image, const char *const *command, const char *python)
{
	struct buf b = BUF_INIT;

	strvec_push(&p->target, image);
	strvec_pushv(&p->target, command);
	buf_addf(&b, "%s in image %s", python ? python : "command", image);
	p->python = buf_detach(&b, NULL);
	/* cwd stays NULL: the host's directory says nothing about the container's. */
}

/* The options' defaults: docker, 60 s for each engine command. */
static void docker_opts_init(struct docker_opts *o)
{
	memset(o, 0, sizeof(*o));
	show_opts_init(&o->show);
	measure_opts_init(&o->m);
	strvec_init(&o->env);
	strvec_init(&o->volumes);
	strvec_init(&o->extra);
	o->engine.cli = "docker";
	o->engine_timeout_us = 60 * 1000000LL;
}

int cmd_docker(int argc, char **argv)
{
	struct docker_opts o;
	struct profile p;
	struct measure_session s;
	struct docker_target x = { .o = &o, .p = &p, .name = BUF_INIT };
	struct measure_target target = container;
	struct strvec placeholder = STRVEC_INIT;
	struct buf err = BUF_INIT, where = BUF_INIT;
	const char *image, *python = NULL;
	char *image_pythonpath = NULL;
	const char *const *command;
	int i = 1, ret = EXIT_FAIL, rc;
	bool tracer = false;
	const struct opt options[] = {
		OPT_INCLUDE(o.show.options),
		OPT_INCLUDE(o.m.options),
		OPT_CALLBACK("engine", 0, &o.engine.cli, set_engine, "NAME",
			     "docker (default) or podman; DOCKER_HOST is respected"),
		OPT_STRINGS("env", 'e', &o.env, "NAME[=VALUE]",
			    "set an environment variable in the container; repeatable"),
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

	docker_opts_init(&o);
	profile_init(&p);
	target.self = &x;
	measure_session_init(&s, &p, "docker", &o.m, &o.show, &target);

	rc = args_parse(options, argc, argv, &i, NULL, &err);
	if (rc) {
		ret = usage_stop(&docker_usage, options, rc, err.buf);
		goto out;
	}
	o.engine.timeout_ms = (int)(o.engine_timeout_us / 1000) ? (int)(o.engine_timeout_us / 1000) : 1;
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
	if (measure_opts_finish(&o.m, &p.limits, &err) < 0) {
		error("%s", err.buf);
		ret = EXIT_USAGE;
		goto out;
	}
	if (o.m.ready && o.m.ready_spec.kind == READY_UNIX) {
		error("--ready '%s' cannot reach into a container: use fn, tcp:PORT or http://127.0.0.1:PORT/...",
		      o.m.ready);
		ret = EXIT_USAGE;
		goto out;
	}
	if (limits_any(&p.limits))
		limits_set_backend(&p.limits, o.engine.cli);
	if (*command && !o.entrypoint && is_python_command(command[0]))
		python = command[0];
	describe_target(&p, image, command, python);

	runner_setup_signals();
	ret = engine_ready(&o.engine, image, &image_pythonpath);
	if (ret)
		goto out;
	x.image = image;
	x.command = command;
	x.image_pythonpath = image_pythonpath;
	x.publish_port = o.m.ready ? o.m.ready_spec.port : 0;
	if (python) {
		buf_addf(&where, "in image '%s'", image);
		rc = measure_probe(&s, python, where.buf, &err);
		if (rc > 0) {
			error("%s", err.buf);
			ret = rc;
			goto out;
		}
		tracer = !rc && !o.m.no_trace;
	}

	/* Replaced by before_start once the container exists. */
	strvec_pushv(&placeholder, (const char *const[]){ o.engine.cli, "start", "--attach", "", NULL });
	s.ro.argv = placeholder.v;
	s.ro.trace = tracer;
	s.ro.before_start = before_start;
	s.ro.before_start_data = &x;
	ret = measure_run(&s);
	o.show.live = true;
	if (!ret)
		ret = measure_finish(&s, &o.show);
out:
	measure_session_release(&s);
	show_opts_release(&o.show);
	measure_opts_release(&o.m);
	profile_release(&p);
	strvec_clear(&o.env);
	strvec_clear(&o.volumes);
	strvec_clear(&o.extra);
	strvec_clear(&placeholder);
	buf_release(&err);
	buf_release(&where);
	buf_release(&x.name);
	free(image_pythonpath);
	return ret;
}
