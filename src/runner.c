/*
 * The run loop behind `coldstart profile` (and `docker`): one target, one
 * struct run.  Signals arrive through a self-pipe so cleanup always runs in
 * the loop, never in a handler.
 */
#include "runner.h"
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "importtime.h"
#include "launch.h"
#include "ready.h"
#include "trace.h"

extern char **environ;

static int sig_pipe[2] = { -1, -1 };

/* Grace given to the target after a forwarded signal, before SIGKILL. */
#define SIGNAL_GRACE_NS (3LL * 1000000000)
/* How long to keep reading stderr after the target exits (grandchildren). */
#define DRAIN_NS (300LL * 1000000)

static void on_signal(int sig, siginfo_t *si, void *uctx)
{
	int saved = errno;
	unsigned char b[2];
	ssize_t w;

	(void)uctx;
	b[0] = (unsigned char)sig;
	/* Terminal-generated signals already reached the target's group. */
	b[1] = si && si->si_code == SI_KERNEL;
	w = write(sig_pipe[1], b, 2);
	(void)w;
	errno = saved;
}

static bool has_warning(const struct profile *p, const char *msg)
{
	size_t i;

	for (i = 0; i < p->nr_warnings; i++)
		if (!strcmp(p->warnings[i].msg, msg))
			return true;
	return false;
}

static void forward_text(const struct buf *text, bool quiet)
{
	const char *s = text->buf;
	size_t n = text->len;

	if (quiet)
		return;
	while (n) {
		ssize_t w = write(2, s, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		s += w;
		n -= (size_t)w;
	}
}

static void build_env(const struct runner_opts *o, struct strvec *env)
{
	char **e;
	const char *const *x;

	for (e = environ; *e; e++) {
		bool overridden = false;

		for (x = o->env; x && *x; x++) {
			const char *eq = strchr(*x, '=');
			size_t len = eq ? (size_t)(eq - *x) : strlen(*x);

			if (!strncmp(*e, *x, len) && (*e)[len] == '=') {
				overridden = true;
				break;
			}
		}
		if (!overridden)
			strvec_push(env, *e);
	}
	for (x = o->env; x && *x; x++)
		strvec_push(env, *x);
}

static void kill_everything(struct child *c, struct cgroup *cg)
{
	if (cg)
		cgroup_kill_all(cg);
	if (c->pid > 0)
		kill_tree(c->pid, SIGKILL, true);
	/* Orphans reparented to us through the subreaper flag. */
	kill_tree(getpid(), SIGKILL, false);
}

static void set_status(struct run *r, const struct child_exit *ex)
{
	r->wall_us = ex->wall_us;
	r->user_us = ex->user_us;
	r->sys_us = ex->sys_us;
	r->maxrss_kb = ex->maxrss_kb;
	if (ex->signaled) {
		r->status = RUN_SIGNALED;
		r->term_signal = ex->term_signal;
	} else {
		r->status = RUN_EXITED;
		r->exit_code = ex->exit_code;
	}
}

void runner_setup_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa;
	size_t i;

	if (sig_pipe[0] >= 0)
		return;
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		die("cannot create the signal pipe: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	launch_become_subreaper();
}

enum runner_error runner_run(const struct runner_opts *o, struct profile *p, struct run *r,
			     struct buf *err, int *signo)
{
	struct child c;
	struct child_exit ex;
	struct cgroup *cg = NULL;
	struct trace_session ts = { 0 };
	struct it_parser *ps = NULL;
	struct ready *rd = NULL;
	struct buf pass = BUF_INIT;
	enum runner_error ret = RUNNER_FAILED;
	int64_t deadline = 0, grace_deadline = 0, drain_deadline = 0, ready_deadline = 0;
	bool exited = false, timed_out = false, stopping = false, traced = false, raw_failed = false;
	bool sampled = false;
	long child_pid = -1;
	int got_signal = 0;
	size_t i;

	runner_setup_signals();
	child_init(&c);
	strvec_pushv(&c.args, o->argv);
	build_env(o, &c.env);
	c.capture_stderr = true;

	if (o->trace) {
		struct buf terr = BUF_INIT;

		if (trace_prepare(&ts, o->python, &c.env, &terr) < 0) {
			profile_add_warning(p, 0, "tracer unavailable, importtime only: %s", terr.buf);
			warning("tracer unavailable, importtime only: %s", terr.buf);
		} else {
			traced = true;
		}
		buf_reset(&terr);
		if (traced && o->timeline) {
			if (sampler_prepare(ts.dir, o->python, o->timeline, &c.env, &terr) < 0) {
				profile_add_warning(p, 0, "no timeline: %s", terr.buf);
				warning("no timeline: %s", terr.buf);
			} else {
				sampled = true;
			}
		}
		buf_release(&terr);
	}
	if (o->ready) {
		rd = ready_new(o->ready, &c.env, err);
		if (!rd)
			goto out;
	}
	if (o->use_limits) {
		cgroup_cleanup_stale();
		cg = cgroup_create(&p->limits, err);
		if (!cg) {
			ret = RUNNER_NO_LIMITS;
			goto out;
		}
		c.join_files = cgroup_join_files(cg);
		if (cgroup_note(cg) && !has_warning(p, cgroup_note(cg)))
			profile_add_warning(p, 0, "%s", cgroup_note(cg));
	}
	if (o->before_start) {
		struct runner_child_view cv = {
			.argv = &c.args,
			.env = &c.env,
			.trace_dir = traced ? ts.dir : NULL,
			.boot_dir = traced ? ts.boot_dir : NULL,
			.ready = rd,
		};

		if (o->before_start(o->before_start_data, &cv, err) < 0)
			goto out;
	}

	ps = it_parser_new(r);
	if (child_start(&c, err) < 0) {
		ret = RUNNER_NO_EXEC;
		goto out;
	}
	child_pid = c.pid;
	/* The loop polls several sources; a read must never block it. */
	fcntl(c.err_fd, F_SETFL, fcntl(c.err_fd, F_GETFL) | O_NONBLOCK);
	if (rd)
		ready_started(rd, c.pid, c.exec_ns);
	if (o->timeout_us > 0)
		deadline = c.start_ns + o->timeout_us * 1000;
	if (rd && o->ready_timeout_us > 0)
		ready_deadline = c.start_ns + o->ready_timeout_us * 1000;

	for (;;) {
		struct pollfd pfd[3];
		nfds_t nfd = 0;
		int timeout_ms = 50, rfd = -1, rt = 50;
		int64_t now;

		if (c.err_fd >= 0) {
			pfd[nfd].fd = c.err_fd;
			pfd[nfd].events = POLLIN;
			nfd++;
		}
		pfd[nfd].fd = sig_pipe[0];
		pfd[nfd].events = POLLIN;
		nfd++;
		if (rd && !stopping && !exited && (rfd = ready_pollfd(rd, &rt)) >= 0) {
			pfd[nfd].fd = rfd;
			pfd[nfd].events = POLLIN;
			nfd++;
		}
		if (rd && rt < timeout_ms)
			timeout_ms = rt;
		if (poll(pfd, nfd, timeout_ms) < 0 && errno != EINTR) {
			buf_addf(err, "poll failed: %s", strerror(errno));
			kill_everything(&c, cg);
			goto out;
		}
		now = now_ns();

		if (c.err_fd >= 0) {
			char chunk[65536];
			ssize_t n = read(c.err_fd, chunk, sizeof(chunk));

			if (n > 0) {
				if (o->raw_fd >= 0 && write(o->raw_fd, chunk, (size_t)n) != n && !raw_failed) {
					raw_failed = true;
					profile_add_warning(p, 0, "cannot copy the raw log: %s", strerror(errno));
				}
				it_feed(ps, chunk, (size_t)n, &pass);
				forward_text(&pass, o->quiet);
				buf_reset(&pass);
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(c.err_fd);
				c.err_fd = -1;
			}
		}

		{
			unsigned char b[2];

			while (read(sig_pipe[0], b, 2) == 2) {
				if (!got_signal) {
					got_signal = b[0];
					grace_deadline = now + SIGNAL_GRACE_NS;
				}
				if (c.pid > 0 && !b[1])
					kill(c.pid, b[0]);
			}
		}

		if (rd && !exited && !stopping) {
			int rs = ready_step(rd, err);

			if (rs < 0) {
				profile_add_warning(p, 0, "readiness: %s", err->buf);
				warning("readiness: %s", err->buf);
				buf_reset(err);
				stopping = true;
			} else if (rs > 0) {
				stopping = true;
			}
			if (stopping && c.pid > 0) {
				kill(c.pid, SIGTERM);
				grace_deadline = now + SIGNAL_GRACE_NS;
			}
		}
		if (ready_deadline && now > ready_deadline && !stopping && !exited) {
			profile_add_warning(p, 0, "target not ready after %lld ms",
					    (long long)(o->ready_timeout_us / 1000));
			warning("target not ready after %lld ms", (long long)(o->ready_timeout_us / 1000));
			stopping = true;
			kill(c.pid, SIGTERM);
			grace_deadline = now + SIGNAL_GRACE_NS;
		}

		if (!exited) {
			int st = child_poll(&c, &ex);

			if (st > 0) {
				exited = true;
				drain_deadline = now + DRAIN_NS;
			} else if (st < 0) {
				buf_addf(err, "cannot wait for the target: %s", strerror(errno));
				kill_everything(&c, cg);
				goto out;
			}
		}
		if (!exited && deadline && now > deadline) {
			timed_out = true;
			kill_everything(&c, cg);
			deadline = 0;
		}
		if (!exited && grace_deadline && now > grace_deadline) {
			kill_everything(&c, cg);
			grace_deadline = 0;
		}
		if (exited && (c.err_fd < 0 || now > drain_deadline))
			break;
	}

	/* What the target left running gets no life of its own. */
	{
		int left = cg ? cgroup_nr_procs(cg) : 0;

		if (left > 0 || kill_tree(getpid(), 0, false) > 0) {
			kill_everything(&c, cg);
			profile_add_warning(p, 0, "killed processes the target left running");
		}
		launch_reap_orphans();
	}
	if (c.err_fd >= 0) {
		close(c.err_fd);
		c.err_fd = -1;
	}
	it_finish(ps, &pass);
	forward_text(&pass, o->quiet);
	{
		size_t nw;
		const struct it_warning *w = it_warnings(ps, &nw);

		for (i = 0; i < nw; i++)
			profile_add_warning(p, w[i].line, "importtime: %s", w[i].msg);
	}

	set_status(r, &ex);
	if (cg) {
		cgroup_read_figures(cg, &r->cg);
		if (r->status == RUN_SIGNALED && r->term_signal == SIGKILL && r->cg.oom_kills > 0)
			r->status = RUN_OOM;
	}
	if (timed_out)
		r->status = RUN_TIMEOUT;
	else if (stopping && rd && !got_signal)
		r->status = RUN_STOPPED;
	if (rd) {
		r->ready_us = ready_ready_us(rd);
		r->first_response_us = ready_response_us(rd);
	}
	if (traced) {
		struct buf terr = BUF_INIT;

		if (trace_collect(&ts, p, r, &terr) < 0)
			profile_add_warning(p, 0, "cannot read the trace: %s", terr.buf);
		buf_release(&terr);
		if (sampled) {
			struct sampler_times st = { .pid = child_pid, .fork_ns = c.start_ns, .exec_ns = c.exec_ns };

			sampler_collect(ts.dir, p, r, &st, o->timeline);
		}
	}
	if (got_signal) {
		*signo = got_signal;
		ret = RUNNER_INTERRUPTED;
		buf_addf(err, "interrupted by signal %d; target stopped", got_signal);
		goto out;
	}
	ret = RUNNER_OK;
out:
	if (c.pid > 0) {
		kill_everything(&c, cg);
		child_finish(&c, &ex);
	}
	if (cg)
		cgroup_destroy(cg);
	if (rd)
		ready_free(rd);
	if (ps)
		it_parser_free(ps);
	if (traced || ts.dir)
		trace_session_release(&ts);
	child_release(&c);
	buf_release(&pass);
	return ret;
}
