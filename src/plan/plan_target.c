/*
 * Runs a target for `coldstart plan` (see plan_target.h): the Fn agent's
 * side of http-stream, a loopback HTTP client or a wait for exit, with the
 * sample requests sent one at a time and every response kept.
 */
#include "plan/plan_target.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "plan/plan_http.h"
#include "sys/launch.h"
#include "sys/leftover.h"
#include "sys/cgroup.h"

#define TAIL_MAX 8192
#define RESPONSE_MAX ((size_t)64 << 20)
#define STOP_GRACE_NS ((int64_t)5000000000)
/* The Fn agent's limit on FN_LISTENER's path: a unix socket address. */
#define FN_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

struct io {
	struct child *c;
	struct cgroup *cg; /* the run's own, NULL where none can be made */
	struct plan_outcome *o;
	struct buf out; /* the target's stdout (PLAN_PROBE_EXIT) */
	struct buf err; /* and its stderr, whole (up to RESPONSE_MAX) */
	bool keep_err;
	bool exited;
};

static void keep_tail(struct buf *tail, const char *data, size_t n)
{
	buf_add(tail, data, n);
	if (tail->len > TAIL_MAX) {
		size_t drop = tail->len - TAIL_MAX;

		memmove(tail->buf, tail->buf + drop, TAIL_MAX);
		buf_setlen(tail, TAIL_MAX);
	}
}

static void note_exit(struct io *io)
{
	struct child_exit ex;

	if (io->exited || child_poll(io->c, &ex) != 1)
		return;
	io->exited = true;
	io->c->pid = -1;
	if (ex.signaled)
		io->o->term_signal = ex.term_signal;
	else
		io->o->exit_code = ex.exit_code;
}

/*
 * Waits up to timeout_ms for the target's pipes and, when fd >= 0, for
 * events on fd; drains the pipes.  Returns fd's revents (0 when none).
 */
static int pump(struct io *io, int timeout_ms, int fd, short events)
{
	struct pollfd p[3];
	int n = 0, i, fd_at = -1, ret = 0;
	char chunk[16384];

	if (io->c->err_fd >= 0) {
		p[n].fd = io->c->err_fd;
		p[n++].events = POLLIN;
	}
	if (io->c->out_fd >= 0) {
		p[n].fd = io->c->out_fd;
		p[n++].events = POLLIN;
	}
	if (fd >= 0) {
		fd_at = n;
		p[n].fd = fd;
		p[n++].events = events;
	}
	if (poll(p, n, timeout_ms) <= 0) {
		note_exit(io);
		return 0;
	}
	for (i = 0; i < n; i++) {
		ssize_t got;

		if (i == fd_at) {
			ret = p[i].revents;
			continue;
		}
		if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		got = read(p[i].fd, chunk, sizeof(chunk));
		if (got > 0) {
			if (p[i].fd == io->c->err_fd) {
				keep_tail(&io->o->stderr_tail, chunk, got);
				if (io->keep_err && io->err.len < RESPONSE_MAX)
					buf_add(&io->err, chunk, got);
			} else if (io->out.len < RESPONSE_MAX)
				buf_add(&io->out, chunk, got);
		} else if (got == 0 || errno != EINTR) {
			close(p[i].fd);
			if (p[i].fd == io->c->err_fd)
				io->c->err_fd = -1;
			else
				io->c->out_fd = -1;
		}
	}
	note_exit(io);
	return ret;
}

static int ms_left(int64_t deadline)
{
	int64_t left = (deadline - now_ns()) / 1000000;

	return left < 0 ? 0 : left > 50 ? 50 : (int)left;
}

/* Why the run cannot go on, or PLAN_RUN_OK. */
static enum plan_status check_going(struct io *io, int64_t deadline, enum plan_status late, struct buf *err,
				    const char *waiting_for)
{
	if (got_signal) {
		buf_addf(err, "interrupted by signal %d", (int)got_signal);
		return PLAN_RUN_INTERRUPTED;
	}
	if (io->exited) {
		if (io->o->term_signal)
			buf_addf(err, "the target was killed by signal %d while coldstart waited for %s",
				 io->o->term_signal, waiting_for);
		else
			buf_addf(err, "the target exited with status %d while coldstart waited for %s",
				 io->o->exit_code, waiting_for);
		return PLAN_RUN_EXITED;
	}
	if (now_ns() > deadline) {
		buf_addf(err, "timed out waiting for %s", waiting_for);
		return late;
	}
	return PLAN_RUN_OK;
}

/*
 * The next bytes to send of the request: the rest of head, then of body
 * (read at *off into chunk).  0 when all went out; -1 (err) when the
 * body's file cannot be read or came out short.
 */
static ssize_t next_bytes(const struct buf *head, const struct plan_body *body, uint64_t *off, char *chunk, size_t max,
			  const char **p, struct buf *err)
{
	uint64_t b;
	ssize_t n;

	if (*off < head->len) {
		*p = head->buf + *off;
		return (ssize_t)(head->len - *off);
	}
	b = *off - head->len;
	if (!body || b >= body->size)
		return 0;
	n = pread(body->fd, chunk, body->size - b < max ? (size_t)(body->size - b) : max, (off_t)b);
	if (n <= 0) {
		buf_addf(err, "cannot read request '%s': %s", body->path,
			 n < 0 ? strerror(errno) : "it is shorter than when coldstart opened it");
		return -1;
	}
	*p = chunk;
	return n;
}

/*
 * Sends head and then body (streamed from its file, NULL: none) on fd and
 * reads one response into resp.  A server that answers before it has
 * read the whole body (413 Payload Too Large) ends the sending: *sent
 * says how much of the body went out.
 */
static enum plan_status exchange(struct io *io, int fd, const struct buf *head, const struct plan_body *body,
				 struct buf *resp, uint64_t *sent, int64_t deadline, struct buf *err)
{
	uint64_t off = 0, total = head->len + (body ? body->size : 0);
	char chunk[65536], out[65536];
	enum plan_status st;

	buf_reset(resp);
	while (off < total) {
		const char *p = NULL;
		ssize_t want = next_bytes(head, body, &off, out, sizeof(out), &p, err), n;
		int rev;

		if (want < 0)
			return PLAN_RUN_FAILED;
		n = send(fd, p, want, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			off += n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			/* Closed on us: an answer may be waiting (413). */
			if (errno == EPIPE || errno == ECONNRESET)
				break;
			buf_addf(err, "cannot send the request: %s", strerror(errno));
			return PLAN_RUN_FAILED;
		}
		rev = pump(io, ms_left(deadline), fd, POLLOUT | POLLIN);
		if (rev & (POLLIN | POLLHUP | POLLERR))
			break; /* it answers (or hung up) before reading the rest */
		if ((st = check_going(io, deadline, PLAN_RUN_TIMEOUT, err, "the target to read the request")))
			return st;
	}
	*sent = off > head->len ? off - head->len : 0;
	for (;;) {
		int rev = pump(io, ms_left(deadline), fd, POLLIN);
		ssize_t n;
		int done;

		if (rev & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
			if (n < 0 && errno == ECONNRESET && resp->len)
				n = 0; /* reset after an answer to a body it did not read */
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				buf_addf(err, "cannot read the response: %s", strerror(errno));
				return PLAN_RUN_FAILED;
			}
			if (n > 0 && resp->len < RESPONSE_MAX)
				buf_add(resp, chunk, n);
			done = plan_http_complete(resp, n == 0);
			if (done < 0) {
				buf_addf(err, resp->len ? "the response is not valid HTTP"
							: "the target closed the connection without answering");
				return PLAN_RUN_FAILED;
			}
			if (done)
				return PLAN_RUN_OK;
			continue;
		}
		if ((st = check_going(io, deadline, PLAN_RUN_TIMEOUT, err, "a response")))
			return st;
	}
}

/* Notes the first request whose body the server answered before reading whole. */
static void note_early(struct plan_outcome *o, const struct plan_body *body, size_t i, uint64_t sent)
{
	if (sent < body->size && !o->early_request) {
		o->early_request = i + 1;
		o->early_sent = sent;
	}
}

static void add_response(struct plan_outcome *o, const struct buf *raw)
{
	o->responses = xrealloc(o->responses, st_mult(o->nr_responses + 1, sizeof(*o->responses)));
	buf_init(&o->responses[o->nr_responses], raw->len);
	plan_http_normalise(raw->buf, raw->len, &o->responses[o->nr_responses]);
	o->nr_responses++;
}

static enum plan_status run_fn(const struct plan_target *t, struct io *io, const char *sock_path, int64_t deadline,
			       struct buf *err)
{
	struct buf req = BUF_INIT, resp = BUF_INIT;
	enum plan_status st;
	struct stat sb;
	uint64_t sent = 0;
	size_t i;
	int fd = -1;

	while (lstat(sock_path, &sb) < 0 || !S_ISLNK(sb.st_mode)) {
		pump(io, 5, -1, 0);
		if ((st = check_going(io, deadline, PLAN_RUN_NOT_READY, err, "lsnr.sock (the function's readiness)")))
			goto out;
	}
	io->o->ready_us = (now_ns() - io->c->exec_ns) / 1000;
	fd = plan_http_connect_unix(sock_path);
	if (fd < 0) {
		buf_addf(err, "cannot connect to the function's socket: %s", strerror(errno));
		st = PLAN_RUN_FAILED;
		goto out;
	}
	for (i = 0; i < t->nr_requests; i++) {
		plan_http_fn_request(t->requests[i].size, i, &req);
		if ((st = exchange(io, fd, &req, &t->requests[i], &resp, &sent, deadline, err)))
			goto out;
		note_early(io->o, &t->requests[i], i, sent);
		if (!i)
			io->o->first_us = (now_ns() - io->c->exec_ns) / 1000;
		add_response(io->o, &resp);
	}
	st = PLAN_RUN_OK;
out:
	if (fd >= 0)
		close(fd);
	buf_release(&req);
	buf_release(&resp);
	return st;
}

static enum plan_status run_http(const struct plan_target *t, struct io *io, int64_t deadline, struct buf *err)
{
	struct buf req = BUF_INIT, resp = BUF_INIT;
	enum plan_status st = PLAN_RUN_OK;
	size_t i, n = t->nr_requests ? t->nr_requests : 1;
	uint64_t sent = 0;
	int fd;

	for (i = 0; i < n; i++) {
		while ((fd = plan_http_connect_tcp(t->host, t->port)) < 0) {
			pump(io, 10, -1, 0);
			if ((st = check_going(io, deadline, i ? PLAN_RUN_TIMEOUT : PLAN_RUN_NOT_READY, err,
					      "the server to accept a connection")))
				goto out;
		}
		if (!i)
			io->o->ready_us = (now_ns() - io->c->exec_ns) / 1000;
		plan_http_request(t->host, t->port, t->path, t->nr_requests > 0,
				  t->nr_requests ? t->requests[i].size : 0, &req);
		st = exchange(io, fd, &req, t->nr_requests ? &t->requests[i] : NULL, &resp, &sent, deadline, err);
		close(fd);
		if (st)
			goto out;
		if (t->nr_requests)
			note_early(io->o, &t->requests[i], i, sent);
		if (!i)
			io->o->first_us = (now_ns() - io->c->exec_ns) / 1000;
		add_response(io->o, &resp);
	}
out:
	buf_release(&req);
	buf_release(&resp);
	return st;
}

static enum plan_status run_exit(struct io *io, int64_t deadline, struct buf *err)
{
	enum plan_status st;
	struct buf raw = BUF_INIT;

	while (!io->exited || io->c->out_fd >= 0 || io->c->err_fd >= 0) {
		pump(io, ms_left(deadline), -1, 0);
		if (io->exited && (io->c->out_fd >= 0 || io->c->err_fd >= 0))
			continue;
		if (!io->exited && (st = check_going(io, deadline, PLAN_RUN_TIMEOUT, err, "the target to exit")))
			return st;
	}
	io->o->first_us = io->o->ready_us = (now_ns() - io->c->exec_ns) / 1000;
	if (io->o->term_signal)
		buf_addf(&raw, "signal %d\n", io->o->term_signal);
	else
		buf_addf(&raw, "exit %d\n", io->o->exit_code);
	buf_add(&raw, io->out.buf, io->out.len);
	/* A traceback is never the same answer as a usage error with the same status. */
	buf_adds(&raw, "\n-- stderr\n");
	buf_add(&raw, io->err.buf, io->err.len);
	add_response(io->o, &raw);
	buf_release(&raw);
	return PLAN_RUN_OK;
}

static bool is_string(const char *target, const void *arg)
{
	return !strcmp(target, (const char *)arg);
}

/* True when a process of ours (the target's tree, orphans included) holds the pipe (its link, "pipe:[INO]"). */
static bool pipe_held(const char *pipe_link)
{
	pid_t *tree = NULL;
	size_t nr, i;
	bool found = false;

	nr = launch_descendants(getpid(), &tree);
	for (i = 1; i < nr && !found; i++)
		found = launch_holds(tree[i], is_string, pipe_link);
	free(tree);
	return found;
}

/* True when pid runs a Python interpreter (its executable's name starts with "python"). */
static bool runs_python(pid_t pid)
{
	char path[64], exe[4096];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/exe", (long)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	base = strrchr(exe, '/');
	return starts_with(base ? base + 1 : exe, "python");
}

/* True when pid's environment (as it was executed) holds the entry want ("NAME=value"). */
static bool has_env(pid_t pid, const char *want)
{
	char path[64];
	struct buf env = BUF_INIT;
	size_t at = 0;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	if (buf_read_file(&env, path) < 0)
		goto out;
	while (at < env.len && !found) {
		const char *e = env.buf + at;
		size_t len = strnlen(e, env.len - at);

		found = len == strlen(want) && !memcmp(e, want, len);
		at += len + 1;
	}
out:
	buf_release(&env);
	return found;
}

/* The processes of the target's tree that the planning environment reached but the control pipe did not. */
static void find_unrecorded(const char *record, const char *pipe_link, struct buf *out)
{
	struct buf var = BUF_INIT, cmd = BUF_INIT, path = BUF_INIT;
	pid_t *tree = NULL;
	size_t nr, i, k;

	buf_addf(&var, "COLDSTART_PLAN_RECORD=%s", record);
	nr = launch_descendants(getpid(), &tree);
	for (i = 1; i < nr; i++) {
		if (!runs_python(tree[i]) || launch_holds(tree[i], is_string, pipe_link) || !has_env(tree[i], var.buf))
			continue;
		buf_reset(&path);
		buf_reset(&cmd);
		buf_addf(&path, "/proc/%ld/cmdline", (long)tree[i]);
		if (buf_read_file(&cmd, path.buf) < 0)
			continue;
		for (k = 0; k + 1 < cmd.len; k++)
			if (cmd.buf[k] == '\0')
				cmd.buf[k] = ' ';
		buf_addf(out, "%ld %.*s\n", (long)tree[i], (int)strnlen(cmd.buf, cmd.len), cmd.buf);
	}
	free(tree);
	buf_release(&var);
	buf_release(&cmd);
	buf_release(&path);
}

/*
 * After EOF on the control pipe every recording process (the target and
 * the children it forked) writes its record and closes its end: wait
 * until none holds it, or the deadline.
 */
static enum plan_status wait_recorders(struct io *io, const char *pipe_link, int64_t deadline, struct buf *err)
{
	enum plan_status st;

	while (pipe_held(pipe_link)) {
		pump(io, 10, -1, 0);
		if ((st = check_going(io, deadline, PLAN_RUN_TIMEOUT, err, "the plan to be written")) &&
		    st != PLAN_RUN_EXITED)
			return st;
	}
	return PLAN_RUN_OK;
}

static enum plan_status wait_record(struct io *io, const char *path, int64_t deadline, struct buf *err)
{
	enum plan_status st;

	while (access(path, F_OK) < 0) {
		if (io->exited) {
			if (!access(path, F_OK))
				break;
			buf_addf(err, "the target ended without writing the plan (is it a Python 3.8+ process "
				      "that runs sitecustomize?)");
			return PLAN_RUN_FAILED;
		}
		pump(io, 10, -1, 0);
		if ((st = check_going(io, deadline, PLAN_RUN_TIMEOUT, err, "the plan to be written")) &&
		    st != PLAN_RUN_EXITED)
			return st;
	}
	return PLAN_RUN_OK;
}

static void stop_target(struct io *io)
{
	int64_t until;

	if (!io->exited && io->c->pid >= 0) {
		kill_tree(io->c->pid, SIGTERM, true);
		until = now_ns() + STOP_GRACE_NS;
		while (!io->exited && now_ns() < until)
			pump(io, 20, -1, 0);
	}
	if (!io->exited && io->c->pid >= 0) {
		struct child_exit ex;

		kill_tree(io->c->pid, SIGKILL, true);
		child_finish(io->c, &ex);
		io->exited = true;
		io->c->pid = -1;
	}
	/* What the target left in its cgroup, wherever it went (setsid, daemons). */
	if (io->cg)
		cgroup_kill_all(io->cg);
	/* Descendants the target left behind come back to us (a subreaper). */
	kill_tree(getpid(), SIGKILL, false);
	launch_reap_orphans();
}

/*
 * Every run of the target lives in a cgroup of its own, as profile's do
 * (runner.c), so that what it started is killed with it, and by the next
 * coldstart plan or profile after a SIGKILLed one (cgroup_cleanup_stale).
 * Where none can be made (not root, no cgroupfs) the run goes ahead
 * without, saying so once.
 */
static struct cgroup *run_cgroup(void)
{
	static bool warned;
	struct buf cerr = BUF_INIT;
	struct cgroup *cg = cgroup_create_unlimited(&cerr);

	if (!cg && !warned) {
		warning("plan: the target's runs have no cgroup of their own (%s): what a run leaves running "
			"outlives a SIGKILLed coldstart",
			cerr.buf);
		warned = true;
	}
	buf_release(&cerr);
	return cg;
}

void plan_outcome_init(struct plan_outcome *o)
{
	memset(o, 0, sizeof(*o));
	o->ready_us = o->first_us = -1;
	o->exit_code = -1;
	buf_init(&o->stderr_tail, 0);
	buf_init(&o->unrecorded, 0);
	buf_init(&o->files, 0);
}

void plan_outcome_release(struct plan_outcome *o)
{
	size_t i;

	for (i = 0; i < o->nr_responses; i++)
		buf_release(&o->responses[i]);
	free(o->responses);
	buf_release(&o->stderr_tail);
	buf_release(&o->unrecorded);
	buf_release(&o->files);
	plan_outcome_init(o);
}

void plan_target_setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	launch_become_subreaper();
}

int plan_target_interrupted(void)
{
	return got_signal;
}

enum plan_status plan_target_run(const struct plan_target *t, struct plan_outcome *o, struct buf *err)
{
	struct child c;
	struct io io;
	struct private_dir dir = { NULL, -1 };
	struct buf sock_path = BUF_INIT;
	int ctl[2] = { -1, -1 };
	char ctl_link[48] = ""; /* the control pipe as /proc/PID/fd shows it */
	enum plan_status st = PLAN_RUN_FAILED;
	int64_t deadline;

	child_init(&c);
	memset(&io, 0, sizeof(io));
	io.c = &c;
	io.o = o;
	buf_init(&io.out, 0);
	buf_init(&io.err, 0);
	io.keep_err = t->probe == PLAN_PROBE_EXIT;
	if (got_signal) {
		buf_addf(err, "interrupted by signal %d", (int)got_signal);
		st = PLAN_RUN_INTERRUPTED;
		goto out;
	}
	strvec_pushv(&c.args, t->argv);
	strvec_pushv(&c.env, t->env);
	if (t->probe == PLAN_PROBE_FN) {
		struct buf derr = BUF_INIT;

		if (private_dir_create(&dir, "plan", &derr) < 0) {
			buf_addf(err, "cannot create a private FN_LISTENER directory: %s", derr.buf);
			buf_release(&derr);
			goto out;
		}
		buf_addf(&sock_path, "%s/lsnr.sock", dir.path);
		/* The FDK binds phonylsnr.sock beside it and links lsnr.sock to it. */
		if (sock_path.len + strlen("phony") > FN_PATH_MAX) {
			buf_addf(err,
				 "'%s/phonylsnr.sock', the FDK's socket, would be longer than the %zu bytes a socket "
				 "path may have: set TMPDIR to a shorter directory",
				 dir.path, FN_PATH_MAX);
			goto out;
		}
		strvec_pushf(&c.env, "FN_LISTENER=unix:%s", sock_path.buf);
		strvec_setenv(&c.env, "FN_FORMAT", "http-stream");
	}
	if (t->record_path) {
		struct stat sb;

		/*
		 * The read end stays open across exec: its EOF is the bootstrap's
		 * stop signal, and its inode tells the processes that record (the
		 * target and its forks) from those it starts, which inherit only
		 * the environment.  A script run to its end writes at exit.
		 */
		if (pipe(ctl) < 0 || fcntl(ctl[1], F_SETFD, FD_CLOEXEC) < 0 || fstat(ctl[0], &sb) < 0) {
			buf_addf(err, "cannot create the control pipe: %s", strerror(errno));
			goto out;
		}
		snprintf(ctl_link, sizeof(ctl_link), "pipe:[%llu]", (unsigned long long)sb.st_ino);
		strvec_pushf(&c.env, "COLDSTART_PLAN_CONTROL=%d:%llu", ctl[0], (unsigned long long)sb.st_ino);
	}
	c.capture_stderr = true;
	c.capture_stdout = t->probe == PLAN_PROBE_EXIT;
	c.null_stdin = true;
	io.cg = run_cgroup();
	if (io.cg)
		c.join_files = cgroup_join_files(io.cg);
	if (child_start(&c, err) < 0) {
		st = PLAN_RUN_NO_EXEC;
		goto out;
	}
	if (ctl[0] >= 0) {
		close(ctl[0]);
		ctl[0] = -1;
	}
	deadline = c.start_ns + t->timeout_us * 1000;
	switch (t->probe) {
	case PLAN_PROBE_FN: st = run_fn(t, &io, sock_path.buf, deadline, err); break;
	case PLAN_PROBE_HTTP: st = run_http(t, &io, deadline, err); break;
	case PLAN_PROBE_EXIT: st = run_exit(&io, deadline, err); break;
	}
	if (st == PLAN_RUN_OK && t->record_path) {
		if (t->probe != PLAN_PROBE_EXIT)
			find_unrecorded(t->record_path, ctl_link, &o->unrecorded);
		close(ctl[1]);
		ctl[1] = -1;
		if (t->probe != PLAN_PROBE_EXIT)
			st = wait_recorders(&io, ctl_link, deadline, err);
		if (st == PLAN_RUN_OK)
			st = wait_record(&io, t->record_path, deadline, err);
	}
out:
	stop_target(&io);
	if (c.err_fd >= 0) {
		/* Whatever it wrote last, for the error message. */
		char chunk[4096];
		ssize_t n;

		fcntl(c.err_fd, F_SETFL, O_NONBLOCK);
		while ((n = read(c.err_fd, chunk, sizeof(chunk))) > 0)
			keep_tail(&o->stderr_tail, chunk, n);
	}
	child_release(&c);
	cgroup_destroy(io.cg);
	if (ctl[0] >= 0)
		close(ctl[0]);
	if (ctl[1] >= 0)
		close(ctl[1]);
	private_dir_remove(&dir);
	buf_release(&sock_path);
	buf_release(&io.out);
	buf_release(&io.err);
	return st;
}
