/*
 * The run loop behind `coldstart profile` (and `docker`): one target, one
 * struct run.  A run is a life cycle over one struct run_state: prepare (the
 * environment, tracer, probe and cgroup), start, poll once until the target
 * and its output are done, collect the figures, release.  Signals arrive
 * through a self-pipe so cleanup always runs in the loop, never in a handler.
 */
#include "session/runner.h"
#include "ingest/sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sys/cgroup.h"
#include "sys/exec_dates.h"
#include "ingest/importtime.h"
#include "sys/launch.h"
#include "sys/leftover.h"
#include "sys/http_load.h"
#include "sys/procwatch.h"
#include "sys/ready.h"
#include "ingest/trace.h"
#include "outfile.h"

extern char **environ;

static int sig_pipe[2] = { -1, -1 };
/* One SIGCHLD byte in the pipe is enough to wake the loop; more would fill it. */
static volatile sig_atomic_t chld_pending;

/* Grace given to the target after a forwarded signal, before SIGKILL. */
#define SIGNAL_GRACE_NS (3LL * 1000000000)
/* How long to keep reading stderr after the target exits (grandchildren). */
#define DRAIN_NS (300LL * 1000000)
/*
 * The longest the loop sleeps between looks at the target.  Its exit wakes
 * the loop at once (pidfd, else SIGCHLD through the pipe), so this only
 * bounds the cost of a wake-up lost to a kernel without either.
 */
#define POLL_MAX_MS 1000

/* Everything one run owns, from prepare to release. */
struct run_state {
	const struct runner_opts *o;
	struct profile *p;
	struct run *r;
	struct child c;
	struct child_exit ex; /* valid once exited */
	struct cgroup *cg; /* NULL: the run has no cgroup */
	struct trace_session ts;
	struct procwatch pw; /* the kernel's exec times of the target's processes */
	bool traced; /* ts was prepared */
	bool sampled; /* the sampler was switched on in ts's directory (--timeline) */
	long pid; /* the target's process, kept after it is reaped */
	struct it_parser *ps;
	struct ready *rd; /* NULL without --ready */
	struct http_load *load; /* the requests after ready (runner_opts.requests), once ready */
	struct buf pass; /* parser passthrough, forwarded to our stderr */
	/* Deadlines, CLOCK_MONOTONIC ns; 0 = none. */
	int64_t timeout_at, grace_at, drain_at, ready_at;
	/*
	 * When the target exited: the moment its exit woke the loop.  That is
	 * when poll returned minus the time coldstart then waited for a CPU
	 * (its run delay, /proc/thread-self/schedstat), unless that turn also
	 * read output, which may have been the wake-up instead.  Never before
	 * stop_ns: a target asked to stop did not exit before it was asked.
	 */
	int64_t exit_ns;
	int64_t stop_ns; /* when the stop was sent (after readiness was decided); 0 before */
	int64_t woke_ns; /* when the current turn's poll returned */
	int schedstat_fd; /* -1 where the kernel has no schedstat */
	bool exit_turn; /* this turn found the exit */
	bool exited; /* the target was reaped */
	bool timed_out;
	bool stopping; /* readiness is decided: the target was asked to stop */
	bool raw_failed;
	int got_signal; /* the first signal coldstart received */
};

static void on_signal(int sig, siginfo_t *si, void *uctx)
{
	int saved = errno;
	unsigned char b[2];
	ssize_t w;

	(void)uctx;
	if (sig == SIGCHLD) {
		if (chld_pending)
			return;
		chld_pending = 1;
	}
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

/* Records a warning that says the run went otherwise than asked, and tells the caller. */
__attribute__((format(printf, 2, 3))) static void alert(struct run_state *st, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	profile_add_warning(st->p, 0, "%s", msg.buf);
	if (st->o->notify)
		st->o->notify(st->o->notify_data, msg.buf);
	buf_release(&msg);
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

static void kill_everything(struct run_state *st)
{
	if (st->cg)
		cgroup_kill_all(st->cg);
	if (st->c.pid > 0)
		kill_tree(st->c.pid, SIGKILL, true);
	/* Orphans reparented to us through the subreaper flag. */
	kill_tree(getpid(), SIGKILL, false);
}

/* Asks the target to stop; SIGKILL follows after the grace. */
static void stop_target(struct run_state *st, int64_t now)
{
	st->stopping = true;
	if (st->c.pid > 0)
		kill(st->c.pid, SIGTERM);
	/* After the kill: readiness (its clock read after connect) came first. */
	st->stop_ns = now_ns();
	st->grace_at = now + SIGNAL_GRACE_NS;
}

/*
 * Every run lives in a cgroup of its own, so that its whole tree can be
 * found and killed, also by the next run after a SIGKILLed coldstart: with
 * the limits when asked (no cgroup, no run), else one without limits where
 * this host lets us make one.  Not for a child that is not the target
 * (docker): the container lives elsewhere.  Leftovers of dead owners go
 * first.
 */
static int make_cgroup(struct run_state *st, struct buf *err, struct runner_failure *why)
{
	struct buf cerr = BUF_INIT;

	cgroup_cleanup_stale();
	leftover_cleanup_dirs();
	if (st->o->use_limits) {
		st->cg = cgroup_create(&st->p->limits, err);
		if (!st->cg) {
			why->no_limits = true;
			return -1;
		}
		if (cgroup_note(st->cg) && !has_warning(st->p, cgroup_note(st->cg)))
			profile_add_warning(st->p, 0, "%s", cgroup_note(st->cg));
	} else if (!st->o->before_start) {
		st->cg = cgroup_create_unlimited(&cerr);
		if (!st->cg) {
			struct buf msg = BUF_INIT;

			buf_addf(&msg,
				 "the run has no cgroup of its own (%s): what the target leaves running "
				 "outlives a SIGKILLed coldstart",
				 cerr.buf);
			if (!has_warning(st->p, msg.buf))
				profile_add_warning(st->p, 0, "%s", msg.buf);
			buf_release(&msg);
		}
	}
	if (st->cg)
		st->c.join_files = cgroup_join_files(st->cg);
	buf_release(&cerr);
	return 0;
}

/* The child's environment, the tracer, the probe, the cgroup and the caller's hook. */
static int prepare(struct run_state *st, struct buf *err, struct runner_failure *why)
{
	const struct runner_opts *o = st->o;

	strvec_pushv(&st->c.args, o->argv);
	build_env(o, &st->c.env);
	st->c.capture_stderr = true;
	st->c.stdout_fd = o->stdout_fd;

	if (o->trace) {
		struct buf terr = BUF_INIT;

		if (trace_prepare(&st->ts, o->python, &st->c.env, &terr) < 0)
			alert(st, "tracer unavailable, importtime only: %s", terr.buf);
		else
			st->traced = true;
		if (st->traced && o->trace_reads)
			strvec_setenv(&st->c.env, "COLDSTART_TRACE_READS", "1");
		buf_reset(&terr);
		if (st->traced && o->timeline) {
			struct buf note = BUF_INIT;

			if (sampler_prepare(st->ts.dir, o->python, o->timeline, &st->c.env, &note, &terr) < 0)
				alert(st, "no timeline: %s", terr.buf);
			else
				st->sampled = true;
			if (note.len)
				profile_add_warning(st->p, 0, "sampler build cache: %s", note.buf);
			buf_release(&note);
		}
		buf_release(&terr);
	}
	if (o->ready) {
		st->rd = ready_new(o->ready, &st->c.env, err);
		if (!st->rd)
			return -1;
	}
	if (make_cgroup(st, err, why) < 0)
		return -1;
	if (o->before_start) {
		struct runner_child_view cv = {
			.argv = &st->c.args,
			.env = &st->c.env,
			.trace_dir = st->traced ? st->ts.dir : NULL,
			.boot_dir = st->traced ? st->ts.boot_dir : NULL,
			.ready = st->rd,
		};

		if (o->before_start(o->before_start_data, &cv, err) < 0)
			return -1;
	}
	if (o->before_exec && o->before_exec(o->before_exec_data, err) < 0)
		return -1;
	return 0;
}

static int start(struct run_state *st, struct buf *err, struct runner_failure *why)
{
	const struct runner_opts *o = st->o;
	struct buf pwerr = BUF_INIT;

	st->ps = it_parser_new(st->r);
	/* Before the fork, so that the target's execs are queued from its first on. */
	if (st->traced && procwatch_open(&st->pw, &pwerr) < 0 && st->p->python_launcher)
		profile_add_warning(st->p, 0, "the %s's time is counted in the interpreter's lifetime: %s",
				    st->p->python_launcher, pwerr.buf);
	buf_release(&pwerr);
	if (child_start(&st->c, err) < 0) {
		why->no_exec = true;
		why->exec_errno = errno;
		return -1;
	}
	st->pid = st->c.pid;
	procwatch_follow(&st->pw, st->c.pid);
	/* The loop polls several sources; a read must never block it. */
	fcntl(st->c.err_fd, F_SETFL, fcntl(st->c.err_fd, F_GETFL) | O_NONBLOCK);
	/* Our descendants are the target's tree: orphans are reparented to us. */
	if (st->rd)
		ready_started(st->rd, o->before_start ? 0 : getpid(), st->c.exec_ns);
	/* Deadlines count from exec, as the wall and readiness do. */
	if (o->timeout_us > 0)
		st->timeout_at = st->c.exec_ns + o->timeout_us * 1000;
	if (st->rd && o->ready_timeout_us > 0)
		st->ready_at = st->c.exec_ns + o->ready_timeout_us * 1000;
	return 0;
}

static void read_stderr(struct run_state *st)
{
	char chunk[65536];
	ssize_t n;

	if (st->c.err_fd < 0)
		return;
	n = read(st->c.err_fd, chunk, sizeof(chunk));
	if (n > 0) {
		if (st->exit_turn)
			st->exit_ns = st->stop_ns > st->woke_ns ? st->stop_ns : st->woke_ns;
		if (st->o->raw_fd >= 0 && write(st->o->raw_fd, chunk, (size_t)n) != n && !st->raw_failed) {
			st->raw_failed = true;
			profile_add_warning(st->p, 0, "cannot copy the raw log: %s", strerror(errno));
		}
		if (st->traced)
			trace_feed(&st->ts, chunk, (size_t)n, &st->pass);
		else
			it_feed(st->ps, chunk, (size_t)n, &st->pass);
		forward_text(&st->pass, st->o->quiet);
		buf_reset(&st->pass);
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		close(st->c.err_fd);
		st->c.err_fd = -1;
	}
}

/*
 * Signals coldstart received: the first one ends the run; all go on to the
 * target.  A SIGCHLD only wakes the loop: the exit is looked at after this,
 * and a SIGCHLD is sent after the child became a zombie, so clearing the
 * flag first loses none.
 */
static void read_signals(struct run_state *st, int64_t now)
{
	unsigned char b[2];

	chld_pending = 0;
	while (read(sig_pipe[0], b, 2) == 2) {
		if (b[0] == SIGCHLD)
			continue;
		if (!st->got_signal) {
			st->got_signal = b[0];
			st->grace_at = now + SIGNAL_GRACE_NS;
		}
		if (st->c.pid > 0 && !b[1])
			kill(st->c.pid, b[0]);
	}
}

static void step_ready(struct run_state *st, int64_t now)
{
	struct buf rerr = BUF_INIT;
	int rs;

	if (!st->rd || st->exited || st->stopping || st->load)
		return;
	rs = ready_step(st->rd, &rerr);
	if (rs < 0)
		alert(st, "readiness: %s", rerr.buf);
	if (rs > 0 && st->o->requests && st->o->ready->kind == READY_HTTP)
		st->load = http_load_new(st->o->ready, st->o->requests, st->o->ready_timeout_us);
	else if (rs != 0)
		stop_target(st, now);
	else if (st->ready_at && now > st->ready_at) {
		struct buf why = BUF_INIT;

		ready_why_not(st->rd, &why);
		alert(st, "target not ready after %lld ms%s%s%s", (long long)(st->o->ready_timeout_us / 1000),
		      why.len ? " (" : "", why.buf, why.len ? ")" : "");
		buf_release(&why);
		stop_target(st, now);
	}
	buf_release(&rerr);
}

/* The requests after ready: on to the next; when all are answered (or the target exited), stop it. */
static void step_load(struct run_state *st, int64_t now)
{
	if (!st->load || st->stopping)
		return;
	if (st->exited)
		http_load_abandon(st->load);
	else if (http_load_step(st->load))
		stop_target(st, now);
}

/*
 * Nanoseconds this thread has spent runnable but waiting for a CPU, or -1:
 * the second field of schedstat.
 */
static int64_t run_delay_ns(int fd)
{
	char text[128];
	ssize_t n;
	char *sp;

	if (fd < 0 || (n = pread(fd, text, sizeof(text) - 1, 0)) <= 0)
		return -1;
	text[n] = '\0';
	sp = strchr(text, ' ');
	return sp ? strtoll(sp + 1, NULL, 10) : -1;
}

/* Reaps the target if it exited; late is how long the loop waited for a CPU after it woke. */
static int check_exit(struct run_state *st, int64_t now, int64_t late, struct buf *err)
{
	int rc;

	st->exit_turn = false;
	if (st->exited)
		return 0;
	rc = child_poll(&st->c, &st->ex);
	if (rc < 0) {
		buf_addf(err, "cannot wait for the target: %s", strerror(errno));
		kill_everything(st);
		return -1;
	}
	if (rc > 0) {
		st->exited = true;
		st->exit_turn = true;
		st->exit_ns = late > 0 && late < now - st->c.exec_ns ? now - late : now;
		/* The wait subtracted may have begun before the stop was sent. */
		if (st->stop_ns && st->exit_ns < st->stop_ns)
			st->exit_ns = st->stop_ns;
		st->drain_at = now + DRAIN_NS;
	}
	return 0;
}

static void earliest(int64_t *at, int64_t deadline)
{
	if (deadline && (!*at || deadline < *at))
		*at = deadline;
}

/*
 * How long poll may sleep, in microseconds: until the nearest deadline, the
 * probe's next step, or POLL_MAX_MS.
 */
static int64_t poll_timeout(const struct run_state *st, int64_t probe_us)
{
	int64_t at = 0, now = now_ns(), us;

	if (!st->exited) {
		earliest(&at, st->timeout_at);
		earliest(&at, st->grace_at);
		if (st->rd && !st->stopping && !st->load)
			earliest(&at, st->ready_at);
	} else {
		earliest(&at, st->drain_at);
	}
	us = POLL_MAX_MS * 1000;
	if (at)
		us = at <= now ? 0 : (at - now + 999) / 1000;
	if (probe_us >= 0 && probe_us < us)
		us = probe_us;
	return us < POLL_MAX_MS * 1000 ? us : POLL_MAX_MS * 1000;
}

/*
 * One turn of the loop: sleep until the target exits, writes, a signal
 * arrives, the probe can move or a deadline passes, then act on each.  The
 * exit is looked at before the output, so the wall time ends when the exit
 * woke the loop, not after the output of that turn was parsed.  Returns 1 when the
 * run is over, 0 to go on, -1 with a message in err (everything was killed).
 */
static int poll_once(struct run_state *st, struct buf *err)
{
	struct pollfd pfd[4];
	nfds_t nfd = 0;
	int rfd = -1, load_ms = -1;
	short probe_events = POLLIN;
	int64_t now, delay_before, delay_after, probe_us = -1, sleep_us;
	struct timespec ts;

	if (!st->exited && st->c.pidfd >= 0)
		pfd[nfd++] = (struct pollfd){ .fd = st->c.pidfd, .events = POLLIN };
	if (st->c.err_fd >= 0)
		pfd[nfd++] = (struct pollfd){ .fd = st->c.err_fd, .events = POLLIN };
	pfd[nfd++] = (struct pollfd){ .fd = sig_pipe[0], .events = POLLIN };
	if (st->load && !st->stopping && !st->exited) {
		rfd = http_load_pollfd(st->load, &probe_events, &load_ms);
		probe_us = load_ms >= 0 ? (int64_t)load_ms * 1000 : -1;
		if (rfd >= 0)
			pfd[nfd++] = (struct pollfd){ .fd = rfd, .events = probe_events };
	} else if (st->rd && !st->stopping && !st->exited) {
		rfd = ready_pollfd(st->rd, &probe_events, &probe_us);
		if (rfd >= 0)
			pfd[nfd++] = (struct pollfd){ .fd = rfd, .events = probe_events };
	}
	delay_before = run_delay_ns(st->schedstat_fd);
	sleep_us = poll_timeout(st, probe_us);
	ts.tv_sec = (time_t)(sleep_us / 1000000);
	ts.tv_nsec = (long)(sleep_us % 1000000) * 1000;
	/* ppoll, not poll: the probe's next retry is due to the microsecond, not the next millisecond. */
	if (ppoll(pfd, nfd, &ts, NULL) < 0 && errno != EINTR) {
		buf_addf(err, "poll failed: %s", strerror(errno));
		kill_everything(st);
		return -1;
	}
	/*
	 * The run delay first: a preemption between the two readings then
	 * makes the exit late by its length, where the other order subtracted
	 * a wait that came after now and dated the exit before the target's
	 * last records.
	 */
	delay_after = run_delay_ns(st->schedstat_fd);
	now = st->woke_ns = now_ns();

	read_signals(st, now);
	procwatch_drain(&st->pw);
	/*
	 * The probe before the exit: a target that answers its first request
	 * and exits at once (bench/fdk_floor.py) can wake this poll with both,
	 * and its answer is still in the socket.  Once the exit is taken, the
	 * probe is not stepped again.
	 */
	step_ready(st, now);
	if (check_exit(st, now, delay_before >= 0 && delay_after >= 0 ? delay_after - delay_before : 0, err) < 0)
		return -1;
	read_stderr(st);
	step_load(st, now);
	if (!st->exited && st->timeout_at && now > st->timeout_at) {
		st->timed_out = true;
		kill_everything(st);
		st->timeout_at = 0;
	}
	if (!st->exited && st->grace_at && now > st->grace_at) {
		kill_everything(st);
		st->grace_at = 0;
	}
	return st->exited && (st->c.err_fd < 0 || now >= st->drain_at);
}

static void set_status(struct run *r, const struct child_exit *ex, int64_t wall_ns)
{
	r->wall_us = wall_ns / 1000;
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

static size_t nr_imports(const struct run *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->nr_procs; i++)
		n += r->procs[i].nr_nodes;
	return n;
}

/*
 * A run without importtime rows is either not Python at all (or a Python
 * started with -I or -E, which ignore PYTHONPROFILEIMPORTTIME and
 * PYTHONPATH), or one whose stderr did not reach us while the tracer saw
 * its imports: the first is an empty profile, the second only lacks the
 * rows' view.
 */
static void check_imports(struct run_state *st, size_t from_rows)
{
	if (from_rows)
		return;
	if (!nr_imports(st->r))
		alert(st,
		      "no import was recorded: the target printed no -X importtime rows%s (not Python, or "
		      "Python started with -I or -E, which ignore PYTHONPROFILEIMPORTTIME and PYTHONPATH)",
		      st->traced ? " and no Python process in it wrote a trace" : "");
	else
		profile_add_warning(st->p, 0,
				    "the target printed no -X importtime rows (its stderr did not reach "
				    "coldstart?): the imports are the tracer's alone");
}

/* The figures of the requests after ready, and a warning for those that failed. */
static void collect_load(struct run_state *st)
{
	struct http_load_result res;

	http_load_abandon(st->load); /* none left under way: the target was stopped */
	http_load_result(st->load, &res);
	st->r->requests_asked = res.asked;
	st->r->requests_ok = res.ok;
	st->r->requests_median_us = res.median_us;
	st->r->requests_p95_us = res.p95_us;
	if (res.failed)
		alert(st, "requests after ready: %zu of %zu failed (%s)", res.failed, res.asked,
		      res.failure ? res.failure : "not sent");
}

/* After the target ended: what it left behind, the parser's end, the figures, the trace. */
static void collect(struct run_state *st)
{
	struct run *r = st->r;
	const struct it_warning *w;
	size_t i, nw, from_rows;
	int left = st->cg ? cgroup_nr_procs(st->cg) : 0;

	/* What the target left running gets no life of its own. */
	if (left > 0 || kill_tree(getpid(), 0, false) > 0) {
		kill_everything(st);
		profile_add_warning(st->p, 0, "killed processes the target left running");
	}
	launch_reap_orphans();
	if (st->c.err_fd >= 0) {
		close(st->c.err_fd);
		st->c.err_fd = -1;
	}
	if (st->traced) {
		/* The stream attributes the rows; the processes are made in trace_collect. */
		trace_feed_end(&st->ts, &st->pass);
		from_rows = trace_nr_rows(&st->ts);
	} else {
		it_finish(st->ps, &st->pass);
		w = it_warnings(st->ps, &nw);
		for (i = 0; i < nw; i++)
			profile_add_warning(st->p, w[i].line, "importtime: %s", w[i].msg);
		from_rows = nr_imports(r);
	}
	forward_text(&st->pass, st->o->quiet);

	set_status(r, &st->ex, st->exit_ns - st->c.exec_ns);
	if (st->cg && st->o->use_limits) {
		cgroup_read_figures(st->cg, &r->cg);
		if (r->status == RUN_SIGNALED && r->term_signal == SIGKILL && r->cg.oom_kills > 0)
			r->status = RUN_OOM;
	}
	if (st->timed_out)
		r->status = RUN_TIMEOUT;
	else if (st->stopping && st->rd && !st->got_signal)
		r->status = RUN_STOPPED;
	if (st->rd) {
		r->ready_us = ready_ready_us(st->rd);
		r->first_response_us = ready_response_us(st->rd);
		r->ready_ns = ready_ready_ns(st->rd);
		r->listening_us = ready_listening_us(st->rd);
	}
	if (st->load)
		collect_load(st);
	if (st->traced) {
		struct buf terr = BUF_INIT;

		if (trace_collect(&st->ts, st->p, r, &terr) < 0)
			profile_add_warning(st->p, 0, "cannot read the trace: %s", terr.buf);
		buf_release(&terr);
	}
	exec_dates_apply(&st->pw, st->p, st->r, st->pid, st->c.exec_ns);
	if (st->sampled) {
		/* Where a launcher exec'd the interpreter, the timeline starts at the interpreter. */
		int64_t exec_ns = st->c.exec_ns + (r->launcher_us > 0 ? r->launcher_us * 1000 : 0);
		struct sampler_times t = { .pid = st->pid, .exec_ns = exec_ns, .exit_ns = st->exit_ns };

		sampler_collect(st->ts.dir, st->p, r, &t, st->o->timeline);
	}
	check_imports(st, from_rows);
}

static void release(struct run_state *st)
{
	if (st->c.pid > 0) {
		kill_everything(st);
		child_finish(&st->c, &st->ex);
	}
	if (st->cg)
		cgroup_destroy(st->cg);
	if (st->rd)
		ready_free(st->rd);
	http_load_free(st->load);
	if (st->ps)
		it_parser_free(st->ps);
	if (st->traced || st->ts.dir)
		trace_session_release(&st->ts);
	if (st->schedstat_fd >= 0)
		close(st->schedstat_fd);
	procwatch_release(&st->pw);
	child_release(&st->c);
	buf_release(&st->pass);
}

void runner_setup_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD };
	struct sigaction sa;
	size_t i;

	/* The handlers again each time: runner_after_runs may have changed them. */
	if (sig_pipe[0] < 0 && pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		die("cannot create the signal pipe: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	/* SIGCHLD only for exits: kill_tree stops and continues processes. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	launch_become_subreaper();
}

static void exit_on_signal(int sig)
{
	/* An output half written stays the temporary it is: remove it. */
	outfile_unlink_pending();
	_exit(128 + sig);
}

int runner_after_runs(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa;
	unsigned char b[2];
	int pending = 0;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = exit_on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	/* No probe writes to a socket any more: a reader that stops early (| head) ends coldstart as any filter. */
	signal(SIGPIPE, SIG_DFL);
	/* What came before the handlers changed is in the pipe. */
	while (sig_pipe[0] >= 0 && read(sig_pipe[0], b, 2) == 2)
		if (b[0] != SIGCHLD && !pending)
			pending = b[0];
	return pending;
}

int runner_run(const struct runner_opts *o, struct profile *p, struct run *r, struct buf *err,
	       struct runner_failure *why)
{
	struct run_state st = { .o = o, .p = p, .r = r, .pass = BUF_INIT };
	int ret = -1, rc;

	memset(why, 0, sizeof(*why));
	runner_setup_signals();
	child_init(&st.c);
	procwatch_init(&st.pw);
	st.schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	if (prepare(&st, err, why) < 0 || start(&st, err, why) < 0)
		goto out;
	while (!(rc = poll_once(&st, err)))
		;
	if (rc < 0)
		goto out;
	collect(&st);
	if (st.got_signal) {
		why->signo = st.got_signal;
		buf_addf(err, "interrupted by signal %d; target stopped", st.got_signal);
		goto out;
	}
	ret = 0;
out:
	release(&st);
	return ret;
}
