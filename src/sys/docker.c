/*
 * The container engine CLI (see docker.h): builds `create` argvs from limits
 * and options, runs control commands with a timeout, and parses the state
 * `inspect` reports after a run.
 */
#include "sys/docker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sys/launch.h"

const char DOCKER_STATE_FORMAT[] =
	"{{.State.OOMKilled}}\t{{.State.ExitCode}}\t{{.State.Status}}\t{{.State.StartedAt}}\t"
	"{{.State.FinishedAt}}\t{{.State.Error}}";

/* Formats a CPU count the way the engines parse it: "0.1", "2", "0.0565". */
static void add_cpus(struct strvec *argv, double cpus)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%.6f", cpus);
	while (b.len && b.buf[b.len - 1] == '0')
		buf_setlen(&b, b.len - 1);
	if (b.len && b.buf[b.len - 1] == '.')
		buf_setlen(&b, b.len - 1);
	strvec_push(argv, b.buf);
	buf_release(&b);
}

static bool env_named(const char *entry, const char *name)
{
	size_t len = strlen(name);

	return !strncmp(entry, name, len) && (entry[len] == '=' || !entry[len]);
}

/* The value the container would see for a user's "-e NAME[=value]". */
static const char *env_value(const char *entry)
{
	const char *eq = strchr(entry, '=');

	if (eq)
		return eq + 1;
	return getenv(entry);
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	/* Howard Hinnant's algorithm: days since 1970-01-01 in the proleptic Gregorian calendar. */
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

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

static const char *docker_host(void)
{
	return getenv("DOCKER_HOST") ? getenv("DOCKER_HOST") : "default";
}

void docker_spec_init(struct docker_spec *ds)
{
	memset(ds, 0, sizeof(*ds));
	strvec_init(&ds->env);
	strvec_init(&ds->volumes);
	strvec_init(&ds->extra);
	ds->engine = "docker";
	ds->init = true;
	ds->importtime = true;
}

void docker_spec_release(struct docker_spec *ds)
{
	strvec_clear(&ds->env);
	strvec_clear(&ds->volumes);
	strvec_clear(&ds->extra);
}

int docker_limit_args(const struct limits *lim, struct strvec *argv, struct buf *err)
{
	if (!lim)
		return 0;
	if (limits_check(lim, err) < 0)
		return -1;
	if (lim->cpus > 0) {
		strvec_push(argv, "--cpus");
		add_cpus(argv, lim->cpus);
	}
	if (lim->memory > 0) {
		strvec_push(argv, "--memory");
		strvec_pushf(argv, "%lld", (long long)lim->memory);
		/* Docker's default swap is twice the memory; coldstart's is none. */
		strvec_push(argv, "--memory-swap");
		if (lim->swap < 0)
			strvec_push(argv, "-1");
		else
			strvec_pushf(argv, "%lld", (long long)(lim->memory + lim->swap));
	}
	if (lim->pids > 0) {
		strvec_push(argv, "--pids-limit");
		strvec_pushf(argv, "%ld", lim->pids);
	}
	if (lim->cpuset) {
		strvec_push(argv, "--cpuset-cpus");
		strvec_push(argv, lim->cpuset);
	}
	return 0;
}

int docker_create_argv(const struct docker_spec *ds, struct strvec *argv, struct buf *err)
{
	const char *user_pythonpath = NULL;
	const char *const *c;
	size_t i;

	if (!ds->image || !*ds->image) {
		buf_addf(err, "no image given");
		return -1;
	}
	if (ds->image[0] == '-') {
		buf_addf(err, "image name '%s' starts with '-'", ds->image);
		return -1;
	}
	strvec_push(argv, ds->engine ? ds->engine : "docker");
	strvec_push(argv, "create");
	if (ds->name) {
		strvec_push(argv, "--name");
		strvec_push(argv, ds->name);
	}
	if (ds->init)
		strvec_push(argv, "--init");
	if (docker_limit_args(ds->limits, argv, err) < 0)
		return -1;
	if (ds->network) {
		strvec_push(argv, "--network");
		strvec_push(argv, ds->network);
	}
	if (ds->user) {
		strvec_push(argv, "--user");
		strvec_push(argv, ds->user);
	}
	if (ds->entrypoint) {
		strvec_push(argv, "--entrypoint");
		strvec_push(argv, ds->entrypoint);
	}
	for (i = 0; i < ds->env.nr; i++) {
		/* Ours goes first on PYTHONPATH; the user's value follows it. */
		if (ds->boot_dir && env_named(ds->env.v[i], "PYTHONPATH")) {
			user_pythonpath = env_value(ds->env.v[i]);
			continue;
		}
		strvec_push(argv, "-e");
		strvec_push(argv, ds->env.v[i]);
	}
	if (ds->importtime) {
		strvec_push(argv, "-e");
		strvec_push(argv, "PYTHONPROFILEIMPORTTIME=1");
	}
	if (ds->boot_dir) {
		strvec_push(argv, "-v");
		strvec_pushf(argv, "%s:%s:ro", ds->boot_dir, DOCKER_BOOT_MOUNT);
		strvec_push(argv, "-e");
		if (user_pythonpath && *user_pythonpath)
			strvec_pushf(argv, "PYTHONPATH=%s:%s", DOCKER_BOOT_PATH, user_pythonpath);
		else
			strvec_pushf(argv, "PYTHONPATH=%s", DOCKER_BOOT_PATH);
		/* The host's tracer extension was built for another interpreter. */
		strvec_push(argv, "-e");
		strvec_push(argv, "COLDSTART_TRACER=py");
	}
	if (ds->trace_dir) {
		strvec_push(argv, "-v");
		strvec_pushf(argv, "%s:%s", ds->trace_dir, DOCKER_TRACE_MOUNT);
		strvec_push(argv, "-e");
		strvec_push(argv, "COLDSTART_TRACE_DIR=" DOCKER_TRACE_MOUNT);
	}
	if (ds->fn_dir) {
		strvec_push(argv, "-v");
		strvec_pushf(argv, "%s:%s", ds->fn_dir, DOCKER_FN_MOUNT);
	}
	if (ds->publish_port > 0 && !(ds->network && !strcmp(ds->network, "host"))) {
		strvec_push(argv, "-p");
		strvec_pushf(argv, "127.0.0.1:%d:%d", ds->publish_port, ds->publish_port);
	}
	for (i = 0; i < ds->volumes.nr; i++) {
		strvec_push(argv, "-v");
		strvec_push(argv, ds->volumes.v[i]);
	}
	strvec_pushv(argv, ds->extra.v);
	strvec_push(argv, ds->image);
	for (c = ds->command; c && *c; c++)
		strvec_push(argv, *c);
	return 0;
}

int docker_parse_time(const char *s, int64_t *ns)
{
	int y, mo, d, h, mi, sec, n = 0;
	int64_t frac = 0, scale = 100000000, days;
	const char *p;

	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || h < 0 || mi < 0 || sec < 0)
		return -1;
	p = s + n;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		for (; *p >= '0' && *p <= '9'; p++) {
			frac += (*p - '0') * scale;
			scale /= 10;
		}
	}
	if (strcmp(p, "Z"))
		return -1;
	if (y < 1970) {
		*ns = 0;
		return 0;
	}
	/* Nanoseconds since 1970 in 64 bits end in April 2262. */
	if (y > 2261)
		return -1;
	days = days_from_civil(y, (unsigned)mo, (unsigned)d);
	*ns = ((days * 86400 + h * 3600 + mi * 60 + sec) * 1000000000LL) + frac;
	return 0;
}

int docker_state_parse(struct docker_state *st, const char *text, struct buf *err)
{
	char *copy = xstrdup(text), *field[6], *s = copy, *end;
	size_t len = strlen(copy), i;
	int ret = -1;
	long code;

	memset(st, 0, sizeof(*st));
	while (len && (copy[len - 1] == '\n' || copy[len - 1] == '\r'))
		copy[--len] = '\0';
	for (i = 0; i < ARRAY_SIZE(field); i++) {
		char *tab = i + 1 < ARRAY_SIZE(field) ? strchr(s, '\t') : NULL;

		field[i] = s;
		if (i + 1 < ARRAY_SIZE(field)) {
			if (!tab) {
				buf_addf(err, "unexpected inspect output '%s'", text);
				goto out;
			}
			*tab = '\0';
			s = tab + 1;
		}
	}
	if (!strcmp(field[0], "true"))
		st->oom_killed = true;
	else if (strcmp(field[0], "false")) {
		buf_addf(err, "unexpected OOMKilled value '%s'", field[0]);
		goto out;
	}
	errno = 0;
	code = strtol(field[1], &end, 10);
	if (errno || end == field[1] || *end || code < -1 || code > 255) {
		buf_addf(err, "unexpected exit code '%s'", field[1]);
		goto out;
	}
	st->exit_code = (int)code;
	st->status = xstrdup(field[2]);
	if (docker_parse_time(field[3], &st->started_ns) < 0 || docker_parse_time(field[4], &st->finished_ns) < 0) {
		buf_addf(err, "unexpected times '%s' / '%s'", field[3], field[4]);
		goto out;
	}
	st->started = st->started_ns > 0;
	if (*field[5])
		st->error = xstrdup(field[5]);
	ret = 0;
out:
	free(copy);
	return ret;
}

void docker_state_release(struct docker_state *st)
{
	free(st->status);
	free(st->error);
	st->status = st->error = NULL;
}

int docker_exec(const char *const *argv, int timeout_ms, struct buf *out, struct buf *errout, struct buf *err)
{
	struct child c;
	struct child_exit ex;
	struct buf junk = BUF_INIT;
	int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
	int ret = -1;
	bool exited = false;

	child_init(&c);
	strvec_pushv(&c.args, argv);
	c.capture_stdout = true;
	c.capture_stderr = true;
	c.null_stdin = true;
	if (child_start(&c, err) < 0) {
		int saved = errno;

		child_release(&c);
		errno = saved;
		return -1;
	}
	fcntl(c.out_fd, F_SETFL, fcntl(c.out_fd, F_GETFL) | O_NONBLOCK);
	fcntl(c.err_fd, F_SETFL, fcntl(c.err_fd, F_GETFL) | O_NONBLOCK);
	while (!exited) {
		struct pollfd pfd[2];
		nfds_t nfd = 0;
		int64_t left = deadline - now_ns();
		int st;
		size_t k;

		if (left <= 0)
			break;
		if (c.out_fd >= 0)
			pfd[nfd++] = (struct pollfd){ .fd = c.out_fd, .events = POLLIN };
		if (c.err_fd >= 0)
			pfd[nfd++] = (struct pollfd){ .fd = c.err_fd, .events = POLLIN };
		/* Short sleeps: the exit is noticed even while a grandchild holds the pipes. */
		if (poll(pfd, nfd, left > 20000000 ? 20 : (int)(left / 1000000) + 1) < 0 && errno != EINTR)
			break;
		st = child_poll(&c, &ex);
		if (st < 0)
			break;
		exited = st > 0;
		/* After the exit, take what is already written and stop. */
		for (k = 0; k < nfd; k++) {
			int *fd = pfd[k].fd == c.out_fd ? &c.out_fd : &c.err_fd;
			struct buf *dst = fd == &c.out_fd ? out : errout;

			if (!exited && !(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			for (;;) {
				char chunk[8192];
				ssize_t n = read(*fd, chunk, sizeof(chunk));

				if (n > 0) {
					buf_add(dst ? dst : &junk, chunk, (size_t)n);
					buf_reset(&junk);
					if (exited)
						continue;
				} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
					close(*fd);
					*fd = -1;
				}
				break;
			}
		}
	}
	if (!exited) {
		kill(c.pid, SIGKILL);
		child_finish(&c, &ex);
		buf_addf(err, "'%s %s' did not finish within %d ms", argv[0], argv[1] ? argv[1] : "", timeout_ms);
		errno = ETIMEDOUT;
		goto out;
	}
	ret = ex.signaled ? 128 + ex.term_signal : ex.exit_code;
out:
	child_release(&c);
	buf_release(&junk);
	return ret;
}

int docker_engine_run(const struct docker_engine *e, const char *const *argv, struct buf *out, struct buf *errout,
		      struct buf *err)
{
	struct buf why = BUF_INIT;
	int rc = docker_exec(argv, e->timeout_ms, out, errout, &why);

	if (rc < 0) {
		if (errno == ENOENT)
			buf_addf(err,
				 "no '%s' command found on PATH: install it (Debian: docker.io%s) or pick another "
				 "with --engine",
				 argv[0], strcmp(argv[0], "podman") ? "" : ", podman");
		else if (errno == ETIMEDOUT)
			buf_addf(err, "%s; is the engine (DOCKER_HOST=%s) stuck? --engine-timeout raises the limit",
				 why.buf, docker_host());
		else
			buf_add(err, why.buf, why.len);
	}
	buf_release(&why);
	return rc;
}

int docker_check_engine(const struct docker_engine *e, struct buf *err)
{
	/* docker's server version says the daemon answered; podman has no daemon to ask. */
	const char *const docker_version[] = { "docker", "version", "--format", "{{.Server.Version}}", NULL };
	const char *const podman_version[] = { "podman", "version", NULL };
	struct buf out = BUF_INIT, errout = BUF_INIT;
	int rc;

	rc = docker_engine_run(e, strcmp(e->cli, "docker") ? podman_version : docker_version, &out, &errout, err);
	if (rc > 0) {
		buf_addf(err, "the %s engine is unreachable (DOCKER_HOST=%s): ", e->cli, docker_host());
		if (errout.len || out.len)
			buf_add_last_line(err, errout.len ? errout.buf : out.buf);
		else
			buf_adds(err, "no message");
	}
	buf_release(&out);
	buf_release(&errout);
	return rc ? -1 : 0;
}

int docker_check_image(const struct docker_engine *e, const char *image, char **pythonpath, struct buf *err)
{
	struct buf out = BUF_INIT, errout = BUF_INIT, line = BUF_INIT;
	char *s, *rest;
	int rc;

	rc = docker_engine_run(e,
			       (const char *const[]){ e->cli, "image", "inspect", "--format",
						      "{{range .Config.Env}}{{println .}}{{end}}", image, NULL },
			       &out, &errout, err);
	if (rc > 0) {
		buf_add_last_line(&line, errout.buf);
		buf_addf(err, "image '%s' is not in the engine (%s); ", image, line.len ? line.buf : "no message");
		buf_addf(err, "coldstart never pulls: run '%s pull %s' or build it first", e->cli, image);
	} else if (!rc) {
		rest = out.buf;
		while ((s = next_line(&rest)))
			if (starts_with(s, "PYTHONPATH=")) {
				free(*pythonpath);
				*pythonpath = xstrdup(s + strlen("PYTHONPATH="));
			}
	}
	buf_release(&out);
	buf_release(&errout);
	buf_release(&line);
	return rc ? -1 : 0;
}

int docker_remove(const struct docker_engine *e, const char *name, struct buf *err)
{
	struct buf errout = BUF_INIT;
	int rc = docker_engine_run(e, (const char *const[]){ e->cli, "rm", "-f", "-v", name, NULL }, NULL, &errout,
				   err);

	if (rc > 0 && (strstr(errout.buf, "No such container") || strstr(errout.buf, "no such container"))) {
		rc = 0;
	} else if (rc > 0) {
		buf_addf(err, "cannot remove container '%s': ", name);
		buf_add_last_line(err, errout.buf);
	}
	buf_release(&errout);
	return rc ? -1 : 0;
}

void docker_owner_labels(struct strvec *argv)
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

int docker_cleanup_stale(const struct docker_engine *e, struct buf *err)
{
	struct buf out = BUF_INIT, why = BUF_INIT;
	struct strvec argv = STRVEC_INIT, labels = STRVEC_INIT;
	char *line, *rest;
	int ret = 0;

	/* Only this host's coldstart processes can be judged by their pids. */
	docker_owner_labels(&labels);
	strvec_pushv(&argv,
		     (const char *const[]){ e->cli, "ps", "-a", "--filter", "label=coldstart.pid", "--filter", NULL });
	strvec_pushf(&argv, "label=%s", labels.v[3]);
	strvec_pushv(&argv, (const char *const[]){ "--format", "{{.Names}} {{.Label \"coldstart.pid\"}}", NULL });
	if (docker_engine_run(e, argv.v, &out, NULL, err) != 0) {
		ret = -1;
		goto out;
	}
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
		buf_reset(&why);
		if (docker_remove(e, line, &why) < 0 && !ret) {
			buf_add(err, why.buf, why.len);
			ret = -1;
		}
	}
out:
	strvec_clear(&argv);
	strvec_clear(&labels);
	buf_release(&out);
	buf_release(&why);
	return ret;
}

int docker_probe(const struct docker_engine *e, const struct docker_spec *ds, const char *python, struct buf *out,
		 struct buf *errout, struct buf *err)
{
	struct strvec argv = STRVEC_INIT;
	struct buf why = BUF_INIT;
	size_t i;
	int rc;

	strvec_pushv(&argv, (const char *const[]){ e->cli, "run", "--rm", "--name", ds->name, "--network", "none",
						   "--entrypoint", python, NULL });
	docker_owner_labels(&argv);
	if (ds->user) {
		strvec_push(&argv, "--user");
		strvec_push(&argv, ds->user);
	}
	for (i = 0; i < ds->env.nr; i++) {
		strvec_push(&argv, "-e");
		strvec_push(&argv, ds->env.v[i]);
	}
	for (i = 0; i < ds->volumes.nr; i++) {
		strvec_push(&argv, "-v");
		strvec_push(&argv, ds->volumes.v[i]);
	}
	strvec_push(&argv, ds->image);
	strvec_pushv(&argv, ds->command);
	rc = docker_engine_run(e, argv.v, out, errout, err);
	/* A timed-out run may have left its container. */
	if (rc < 0)
		docker_remove(e, ds->name, &why);
	strvec_clear(&argv);
	buf_release(&why);
	return rc;
}

int docker_read_state(const struct docker_engine *e, const char *name, struct profile *p, struct run *r,
		      struct buf *err)
{
	struct buf out = BUF_INIT, errout = BUF_INIT, why = BUF_INIT;
	struct docker_state st;
	int ret = 0;

	memset(&st, 0, sizeof(st));
	/* These describe the engine CLI, not the container. */
	r->user_us = r->sys_us = UNKNOWN;
	r->maxrss_kb = UNKNOWN;
	if (docker_engine_run(e,
			      (const char *const[]){ e->cli, "inspect", "--type", "container", "--format",
						     DOCKER_STATE_FORMAT, name, NULL },
			      &out, &errout, &why) != 0) {
		if (!why.len)
			buf_add_last_line(&why, errout.buf);
		profile_add_warning(p, 0, "cannot inspect container '%s': %s", name, why.buf);
		goto out;
	}
	if (docker_state_parse(&st, out.buf, &why) < 0) {
		profile_add_warning(p, 0, "cannot read the state of container '%s': %s", name, why.buf);
		goto out;
	}
	if (!st.started) {
		buf_addf(err, "the container never started: %s", st.error ? st.error : "the engine gave no reason");
		ret = -1;
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
		buf_addf(err, "the container's command could not be run (status %d: %s in the image)", st.exit_code,
			 st.exit_code == 127 ? "not found" : "not executable");
		ret = -1;
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
	buf_release(&why);
	return ret;
}
