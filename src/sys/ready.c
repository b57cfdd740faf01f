/*
 * Readiness probes (see ready.h): each probe is a small state machine the
 * run loop advances: wait for the listener, make sure it is the target's,
 * send one request and read its answer, never blocking for more than a poll
 * interval.  The specs are parsed in ready_spec.c.
 */
#include "sys/ready.h"
#include "sys/http_load.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sys/launch.h"
#include "sys/leftover.h"
#include "sys/listener.h"
#include "model/profile.h"

enum ready_state { ST_WAIT, ST_CONNECTING, ST_SENDING, ST_READING, ST_DONE };

/*
 * How often a connect-probe retries while nothing listens.  A refused
 * connect on loopback costs about 10 us, and the listener's moment is only
 * known to within this interval: 1 ms keeps readiness within a millisecond
 * of the listen() for about 1% of a CPU.
 */
#define RETRY_MS 1
/* How soon an http probe asks again after an answer that is not readiness. */
#define REASK_MS 10
#define MAX_RESPONSE (16u << 20)
/* How much of an answer a message quotes. */
#define QUOTE_MAX 200

struct ready {
	const struct ready_spec *spec;
	enum ready_state state;
	struct private_dir dir; /* fn: the private FN_LISTENER directory */
	char *sock_path; /* fn: dir/lsnr.sock; unix: the path */
	int ino_fd;
	int fd;
	pid_t tree_root; /* 0: the target runs elsewhere */
	/* Listeners that existed before the target started (tree_root 0). */
	struct listeners before;
	/* Listeners already found to be the target's: no second /proc walk. */
	struct listeners own;
	int64_t exec_ns, ready_ns, response_ns, next_try_ns;
	int64_t listening_ns; /* tcp, http, unix: the first connect the target's listener accepted */
	int64_t link_ns; /* fn: when lsnr.sock appeared */
	int64_t connected_ns; /* when the current connection was accepted */
	int64_t connect_ns; /* when the last connect() returned */
	int64_t arrived_ns; /* when the last data read had arrived (SO_TIMESTAMPNS), 0 unknown */
	struct buf req;
	size_t req_off;
	struct buf resp;
	/* http: the last answer that was not readiness, and how often it came. */
	struct buf refused;
	int nr_refused;
};

static int64_t ms_to_ns(int ms)
{
	return (int64_t)ms * 1000000;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void rfc3339(int64_t from_now_s, char *out, size_t n)
{
	time_t t = time(NULL) + from_now_s;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

/*
 * The status line and the start of the body of an answer, on one line and
 * printable: "HTTP/1.1 502 Bad Gateway: {"message": "..."}".
 */
static void quote_answer(const struct buf *resp, struct buf *out)
{
	const char *eol = memmem(resp->buf, resp->len, "\r\n", 2);
	const char *body = memmem(resp->buf, resp->len, "\r\n\r\n", 4);
	size_t i, n;

	n = eol ? (size_t)(eol - resp->buf) : resp->len;
	buf_add(out, resp->buf, n < QUOTE_MAX ? n : QUOTE_MAX);
	if (!body || (size_t)(body + 4 - resp->buf) >= resp->len)
		return;
	body += 4;
	n = resp->len - (size_t)(body - resp->buf);
	while (n && isspace((unsigned char)body[n - 1]))
		n--;
	if (!n)
		return;
	buf_adds(out, ": '");
	for (i = 0; i < n && i < QUOTE_MAX; i++) {
		unsigned char c = (unsigned char)body[i];

		buf_addch(out, c == '\n' || c == '\r' || c == '\t' ? ' ' : c < 0x20 || c >= 0x7f ? '?' : (char)c);
	}
	buf_adds(out, n > QUOTE_MAX ? "...'" : "'");
}

/* "GET / answered HTTP/1.1 500 Internal Server Error" without the protocol. */
static void describe_answer(const struct ready *rd, struct buf *out)
{
	struct buf q = BUF_INIT;
	const char *sp;

	quote_answer(&rd->resp, &q);
	sp = starts_with(q.buf, "HTTP/") ? strchr(q.buf, ' ') : NULL;
	buf_addf(out, "%s %s answered %s", rd->spec->kind == READY_FN ? "POST" : "GET",
		 rd->spec->kind == READY_FN ? "/call" : rd->spec->path, sp ? sp + 1 : q.buf);
	buf_release(&q);
}

static void comm_of(pid_t pid, struct buf *out)
{
	char path[64];
	FILE *f;
	char line[64];

	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
	f = fopen(path, "re");
	if (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		buf_addf(out, " (%s)", line);
	}
	if (f)
		fclose(f);
}

static void find_listeners(const struct ready *rd, struct listeners *ls)
{
	if (rd->spec->kind == READY_UNIX)
		listeners_find_unix(ls, rd->sock_path);
	else
		listeners_find_tcp(ls, rd->spec->port);
}

/*
 * A connection was accepted: was it the target's listener?  0 yes (or, for
 * a target that runs elsewhere, it cannot be told: no listener of that port
 * or path is visible here, as for a socket of another network namespace), 1
 * when no listener is visible although the target runs here (one that
 * closed at once: another process's, on a busy machine where ports are
 * reused; ask again), -1 with the message in err when another process
 * holds it.
 */
static int check_owner(struct ready *rd, struct buf *err)
{
	struct listeners ls = { 0 };
	pid_t *tree = NULL, holder;
	size_t i, nr;
	bool ours = false;
	int ret = -1;

	find_listeners(rd, &ls);
	for (i = 0; i < ls.nr && !ours; i++)
		ours = listeners_has(&rd->own, ls.ino[i]);
	if (!ls.nr && rd->tree_root > 0) {
		ret = 1;
		goto out;
	}
	if (!ls.nr || ours) {
		ret = 0;
		goto out;
	}
	if (rd->tree_root > 0) {
		/* The root is coldstart itself: its own sockets are no listener. */
		nr = launch_descendants(rd->tree_root, &tree);
		ours = nr > 1 && listeners_holder(&ls, tree + 1, nr - 1) > 0;
	} else {
		for (i = 0; i < ls.nr && !ours; i++)
			ours = !listeners_has(&rd->before, ls.ino[i]);
	}
	if (ours) {
		for (i = 0; i < ls.nr; i++)
			if (!listeners_has(&rd->own, ls.ino[i])) {
				ALLOC_GROW(rd->own.ino, rd->own.nr + 1, rd->own.alloc);
				rd->own.ino[rd->own.nr++] = ls.ino[i];
			}
		ret = 0;
		goto out;
	}
	holder = listeners_holder(&ls, NULL, 0);
	if (rd->spec->kind == READY_UNIX)
		buf_addf(err, "'%s' is served by ", rd->sock_path);
	else
		buf_addf(err, "port %d is in use by ", rd->spec->port);
	if (holder > 0) {
		buf_addf(err, "pid %ld", (long)holder);
		comm_of(holder, err);
	} else {
		buf_adds(err, "another process");
	}
	buf_adds(err, ", not by the target");
out:
	listeners_release(&ls);
	free(tree);
	return ret;
}

static int start_connect(struct ready *rd, struct buf *err)
{
	int fd;

	if (rd->spec->kind == READY_FN || rd->spec->kind == READY_UNIX) {
		struct sockaddr_un sa;

		memset(&sa, 0, sizeof(sa));
		sa.sun_family = AF_UNIX;
		if (strlen(rd->sock_path) >= sizeof(sa.sun_path)) {
			buf_addf(err, "socket path '%s' is longer than %zu bytes", rd->sock_path,
				 sizeof(sa.sun_path) - 1);
			return -1;
		}
		memcpy(sa.sun_path, rd->sock_path, strlen(rd->sock_path));
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			goto fail;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS && errno != EAGAIN) {
			close(fd);
			return 0;
		}
	} else {
		struct sockaddr_in sa;

		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_port = htons((uint16_t)rd->spec->port);
		if (inet_pton(AF_INET, rd->spec->host, &sa.sin_addr) != 1) {
			buf_addf(err, "readiness host '%s' is not an IPv4 address", rd->spec->host);
			return -1;
		}
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			goto fail;
		/* The kernel stamps what arrives: an answer's moment is not when we got a CPU to read it. */
		setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &(int){ 1 }, sizeof(int));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
			close(fd);
			return 0;
		}
	}
	/*
	 * After the call, not before: a connection that the call established
	 * is no older than this (a clock read before it, then a wait for a CPU,
	 * put readiness 0.6 ms before the listen() beside CPU hogs).
	 */
	rd->connect_ns = now_ns();
	rd->fd = fd;
	rd->state = ST_CONNECTING;
	return 0;
fail:
	buf_addf(err, "cannot create a socket: %s", strerror(errno));
	return -1;
}

/* The Fn agent's checks: a relative symlink to a 0666 socket in the same directory. */
static int check_fn_link(struct ready *rd, struct buf *err)
{
	char target[PATH_MAX];
	struct stat st;
	struct buf full = BUF_INIT;
	ssize_t n;
	int ret = -1;

	n = readlink(rd->sock_path, target, sizeof(target) - 1);
	if (n < 0) {
		buf_addf(err,
			 "'%s' is not a symlink: the Fn agent needs lsnr.sock to be a symlink to the "
			 "socket, created once the server is serving",
			 rd->sock_path);
		return -1;
	}
	target[n] = '\0';
	if (strchr(target, '/')) {
		buf_addf(err,
			 "lsnr.sock points at '%s': the link must be relative, to a file in the same "
			 "directory",
			 target);
		return -1;
	}
	buf_addf(&full, "%s/%s", rd->dir.path, target);
	if (lstat(full.buf, &st) < 0) {
		buf_addf(err, "lsnr.sock points at '%s', which does not exist", target);
		goto out;
	}
	if (!S_ISSOCK(st.st_mode)) {
		buf_addf(err, "lsnr.sock points at '%s', which is not a socket", target);
		goto out;
	}
	if ((st.st_mode & 0777) != 0666) {
		buf_addf(err, "socket '%s' has mode %03o; the Fn agent needs 0666", target, st.st_mode & 0777);
		goto out;
	}
	ret = 0;
out:
	buf_release(&full);
	return ret;
}

static void build_request(struct ready *rd)
{
	char deadline[64];

	buf_reset(&rd->req);
	rd->req_off = 0;
	if (rd->spec->kind == READY_FN) {
		rfc3339(30, deadline, sizeof(deadline));
		buf_addf(&rd->req,
			 "POST /call HTTP/1.1\r\nHost: localhost\r\nFn-Call-Id: coldstart-first-call\r\n"
			 "Fn-Deadline: %s\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n",
			 deadline);
	} else {
		buf_addf(&rd->req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n", rd->spec->path,
			 rd->spec->host, rd->spec->port);
	}
}

/* The Fn agent's limit on FN_LISTENER's path: a unix socket address. */
#define FN_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

static int fn_prepare(struct ready *rd, struct strvec *env, struct buf *err)
{
	struct buf sp = BUF_INIT, derr = BUF_INIT;

	if (private_dir_create(&rd->dir, "fn", &derr) < 0) {
		buf_addf(err, "cannot create a private FN_LISTENER directory: %s", derr.buf);
		buf_release(&derr);
		return -1;
	}
	/* The function's user may not be ours (docker --user): it must reach the socket. */
	chmod(rd->dir.path, 0755);
	buf_addf(&sp, "%s/lsnr.sock", rd->dir.path);
	rd->sock_path = buf_detach(&sp, NULL);
	if (strlen(rd->sock_path) > FN_PATH_MAX) {
		buf_addf(err,
			 "FN_LISTENER '%s' would be longer than the %zu bytes a socket path may have: set "
			 "TMPDIR to a shorter directory",
			 rd->sock_path, FN_PATH_MAX);
		return -1;
	}
	rd->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (rd->ino_fd < 0 || inotify_add_watch(rd->ino_fd, rd->dir.path, IN_CREATE | IN_MOVED_TO) < 0) {
		buf_addf(err, "cannot watch '%s': %s", rd->dir.path, strerror(errno));
		return -1;
	}
	strvec_pushf(env, "FN_LISTENER=unix:%s", rd->sock_path);
	strvec_push(env, "FN_FORMAT=http-stream");
	strvec_push(env, "FN_TYPE=sync");
	strvec_push(env, "FN_MEMORY=128");
	strvec_push(env, "FN_APP_ID=coldstart-app");
	strvec_push(env, "FN_FN_ID=coldstart-fn");
	strvec_push(env, "FN_APP_NAME=coldstart");
	strvec_push(env, "FN_FN_NAME=coldstart-probe");
	return 0;
}

/* fn: has lsnr.sock appeared?  Then check it and connect. */
static int step_fn_wait(struct ready *rd, int64_t now, struct buf *err)
{
	char evbuf[4096];
	struct stat st;

	while (read(rd->ino_fd, evbuf, sizeof(evbuf)) > 0)
		;
	if (lstat(rd->sock_path, &st) < 0)
		return 0;
	rd->link_ns = now;
	if (check_fn_link(rd, err) < 0 || start_connect(rd, err) < 0)
		return -1;
	if (rd->state != ST_CONNECTING) {
		buf_addf(err, "lsnr.sock exists but refuses connections");
		return -1;
	}
	return 0;
}

/* 1 once the pending connect is done, 0 while pending or refused (back to ST_WAIT), -1 on error. */
static int step_connecting(struct ready *rd, int64_t now, struct buf *err)
{
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);

	if (getsockopt(rd->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	if (soerr == EINPROGRESS || soerr == EALREADY)
		return 0;
	if (soerr) {
		close_fd(&rd->fd);
		if (rd->spec->kind == READY_FN) {
			buf_addf(err, "cannot connect to lsnr.sock: %s", strerror(soerr));
			return -1;
		}
		rd->state = ST_WAIT;
		return 0;
	}
	/* A non-blocking connect may still be pending. */
	if (getpeername(rd->fd, (struct sockaddr *)&peer, &pl) < 0 && errno == ENOTCONN)
		return 0;
	/*
	 * TCP connects a socket to itself when the kernel picks the port it
	 * connects to as its own (a port in the ephemeral range with nothing
	 * listening): no listener accepted that.
	 */
	if (rd->spec->kind != READY_FN && rd->spec->kind != READY_UNIX) {
		struct sockaddr_storage self;
		socklen_t sl = sizeof(self);

		if (!getsockname(rd->fd, (struct sockaddr *)&self, &sl) && sl == pl && !memcmp(&self, &peer, sl)) {
			close_fd(&rd->fd);
			rd->state = ST_WAIT;
			return 0;
		}
	}
	rd->connected_ns = now > rd->connect_ns ? now : rd->connect_ns;
	if (rd->spec->kind != READY_FN) {
		int own = check_owner(rd, err);

		if (own < 0)
			return -1;
		if (own > 0) {
			close_fd(&rd->fd);
			rd->state = ST_WAIT;
			return 0;
		}
	}
	if (rd->spec->kind != READY_FN && !rd->listening_ns)
		rd->listening_ns = rd->connected_ns;
	return 1;
}

/* What an http answer that is complete means; 1 ready, 0 ask again later, -1 never. */
static int judge_http(struct ready *rd, int status, int64_t now, struct buf *err)
{
	struct buf what = BUF_INIT;
	int ret;

	if (ready_spec_accepts(rd->spec, status)) {
		/*
		 * Ready is the answer: a listener that answers later is not ready
		 * before.  Its moment is when its last bytes arrived, if the kernel
		 * said (and it is not before the connect or after it was read).
		 */
		int64_t read_ns = now_ns(); /* not the step's start: connected_ns may be later than that */

		rd->ready_ns = rd->response_ns = rd->arrived_ns > rd->connected_ns && rd->arrived_ns < read_ns
							 ? rd->arrived_ns
							 : read_ns;
		rd->state = ST_DONE;
		return 1;
	}
	describe_answer(rd, &what);
	if (status >= 500) {
		/* The port answers but the app is not serving yet: ask again. */
		if (strcmp(what.buf, rd->refused.buf))
			rd->nr_refused = 0;
		buf_reset(&rd->refused);
		buf_add(&rd->refused, what.buf, what.len);
		rd->nr_refused++;
		rd->state = ST_WAIT;
		/* Backing off to ten times the pause: a warming server is not hammered. */
		rd->next_try_ns = now + ms_to_ns(REASK_MS * (rd->nr_refused < 10 ? rd->nr_refused : 10));
		ret = 0;
	} else {
		buf_addf(err, "%s; readiness needs %s (--ready-status)", what.buf, rd->spec->statuses);
		ret = -1;
	}
	buf_release(&what);
	return ret;
}

/* Reads the answer; 0 while incomplete, else as judge_http or the Fn rule. */
static int step_reading(struct ready *rd, int64_t now, struct buf *err)
{
	int status, rc = http_read_available(rd->fd, &rd->resp, MAX_RESPONSE, &rd->arrived_ns);
	bool eof = rc == 1;

	if (rc < 0 && errno == E2BIG) {
		buf_addf(err, "first response is larger than %u bytes", MAX_RESPONSE);
		return -1;
	}
	if (rc < 0) {
		if (rd->spec->kind == READY_HTTP && !rd->resp.len) {
			/* Reset before any answer: not ready yet. */
			close_fd(&rd->fd);
			rd->state = ST_WAIT;
			return 0;
		}
		buf_addf(err, "reading the first response failed: %s", strerror(errno));
		return -1;
	}
	status = http_response_status(&rd->resp, eof);
	if (!status && !eof)
		return 0;
	if (!status) {
		if (rd->spec->kind == READY_HTTP) {
			close_fd(&rd->fd);
			rd->state = ST_WAIT;
			return 0;
		}
		buf_addf(err, "the function closed the connection without answering POST /call");
		return -1;
	}
	if (status < 0) {
		buf_addf(err, "the first response is not HTTP");
		return -1;
	}
	close_fd(&rd->fd);
	if (rd->spec->kind == READY_HTTP)
		return judge_http(rd, status, now, err);
	if (status != 200) {
		struct buf what = BUF_INIT;

		describe_answer(rd, &what);
		buf_addf(err,
			 "the first call failed: %s (the Fn agent takes 502 as a failed function, 504 as "
			 "a timeout, anything else kills the container)",
			 what.buf);
		buf_release(&what);
		rd->state = ST_DONE;
		return -1;
	}
	rd->ready_ns = rd->link_ns;
	rd->response_ns = now_ns();
	rd->state = ST_DONE;
	return 1;
}

/* Sends the request; 1 when it is all out, 0 to wait for room, -1 on error. */
static int step_sending(struct ready *rd, struct buf *err)
{
	while (rd->req_off < rd->req.len) {
		ssize_t w = send(rd->fd, rd->req.buf + rd->req_off, rd->req.len - rd->req_off, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ENOTCONN)
				return 0;
			buf_addf(err, "cannot send the first request: %s", strerror(errno));
			return -1;
		}
		rd->req_off += (size_t)w;
	}
	buf_reset(&rd->resp);
	rd->arrived_ns = 0;
	rd->state = ST_READING;
	return 1;
}

struct ready *ready_new(const struct ready_spec *spec, struct strvec *env, struct buf *err)
{
	struct ready *rd = xcalloc(1, sizeof(*rd));

	rd->spec = spec;
	rd->ino_fd = rd->fd = -1;
	rd->dir.lock_fd = -1;
	buf_init(&rd->req, 0);
	buf_init(&rd->resp, 0);
	buf_init(&rd->refused, 0);
	rd->state = ST_WAIT;
	switch (spec->kind) {
	case READY_FN:
		if (fn_prepare(rd, env, err) < 0)
			goto fail;
		break;
	case READY_UNIX:
		rd->sock_path = xstrdup(spec->path);
		listeners_find_unix(&rd->before, rd->sock_path);
		break;
	case READY_TCP:
	case READY_HTTP: listeners_find_tcp(&rd->before, spec->port); break;
	}
	return rd;
fail:
	ready_free(rd);
	return NULL;
}

void ready_started(struct ready *rd, pid_t tree_root, int64_t exec_ns)
{
	rd->tree_root = tree_root;
	rd->exec_ns = exec_ns;
	rd->next_try_ns = exec_ns;
}

int ready_pollfd(struct ready *rd, short *events, int64_t *timeout_us)
{
	int64_t now;

	*timeout_us = RETRY_MS * 1000;
	*events = POLLIN;
	switch (rd->state) {
	case ST_WAIT:
		if (rd->spec->kind == READY_FN) {
			*timeout_us = 50000;
			return rd->ino_fd;
		}
		/*
		 * To the microsecond: woken 20 us before the retry (by the target's
		 * output), a sleep rounded up to 1 ms made that retry 1 ms late.
		 */
		now = now_ns();
		*timeout_us = rd->next_try_ns <= now ? 0 : (rd->next_try_ns - now + 999) / 1000;
		return -1;
	case ST_CONNECTING:
	case ST_SENDING:
		/* A non-blocking connect is done when the socket is writable (SO_ERROR says how). */
		*events = POLLOUT;
		/* fall through */
	case ST_READING:
		/* The socket wakes the loop; the timeout is only a safety net. */
		*timeout_us = 100000;
		return rd->fd;
	case ST_DONE: *timeout_us = 1000000; return -1;
	}
	return -1;
}

int ready_step(struct ready *rd, struct buf *err)
{
	int64_t now = now_ns();
	int rc;

	switch (rd->state) {
	case ST_WAIT:
		if (rd->spec->kind == READY_FN)
			return step_fn_wait(rd, now, err);
		if (now < rd->next_try_ns)
			return 0;
		rd->next_try_ns = now + ms_to_ns(RETRY_MS);
		if (start_connect(rd, err) < 0)
			return -1;
		if (rd->state != ST_CONNECTING)
			return 0;
		/* A loopback connect is usually complete when the call returns: look at once. */
		/* fall through */
	case ST_CONNECTING:
		rc = step_connecting(rd, now, err);
		if (rc <= 0)
			return rc;
		if (rd->spec->kind == READY_TCP || rd->spec->kind == READY_UNIX) {
			rd->ready_ns = rd->connected_ns;
			close_fd(&rd->fd);
			rd->state = ST_DONE;
			return 1;
		}
		build_request(rd);
		rd->state = ST_SENDING;
		/* fall through */
	case ST_SENDING:
		rc = step_sending(rd, err);
		if (rc <= 0)
			return rc;
		/* fall through */
	case ST_READING: return step_reading(rd, now, err);
	case ST_DONE: return rd->ready_ns ? 1 : -1;
	}
	return 0;
}

int64_t ready_ready_us(const struct ready *rd)
{
	return rd->ready_ns ? (rd->ready_ns - rd->exec_ns) / 1000 : UNKNOWN;
}

int64_t ready_listening_us(const struct ready *rd)
{
	return rd->listening_ns ? (rd->listening_ns - rd->exec_ns) / 1000 : UNKNOWN;
}

int64_t ready_response_us(const struct ready *rd)
{
	return rd->ready_ns && rd->response_ns ? (rd->response_ns - rd->ready_ns) / 1000 : UNKNOWN;
}

int64_t ready_ready_ns(const struct ready *rd)
{
	return rd->ready_ns ? rd->ready_ns : UNKNOWN;
}

void ready_why_not(const struct ready *rd, struct buf *out)
{
	if (rd->ready_ns || !rd->nr_refused)
		return;
	buf_add(out, rd->refused.buf, rd->refused.len);
	if (rd->nr_refused > 1)
		buf_addf(out, " (%d times)", rd->nr_refused);
}

void ready_free(struct ready *rd)
{
	if (!rd)
		return;
	close_fd(&rd->fd);
	close_fd(&rd->ino_fd);
	private_dir_remove(&rd->dir);
	free(rd->sock_path);
	listeners_release(&rd->before);
	listeners_release(&rd->own);
	buf_release(&rd->req);
	buf_release(&rd->resp);
	buf_release(&rd->refused);
	free(rd);
}

const char *ready_fn_dir(const struct ready *rd)
{
	return rd && rd->spec->kind == READY_FN ? rd->dir.path : NULL;
}
