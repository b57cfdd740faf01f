/*
 * Readiness probes (see ready.h).  Each probe is a small state machine the
 * run loop advances: wait for the listener, then send one request and read
 * its answer, never blocking for more than a poll interval.
 */
#include "ready.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"

enum ready_kind { READY_FN, READY_TCP, READY_HTTP, READY_UNIX };
enum ready_state { ST_WAIT, ST_CONNECTING, ST_SENDING, ST_READING, ST_DONE };

/* How often a connect-probe retries while nothing listens. */
#define RETRY_MS 5
#define MAX_RESPONSE (16u << 20)

struct ready {
	enum ready_kind kind;
	enum ready_state state;
	char *dir; /* fn: private FN_LISTENER directory */
	char *sock_path; /* fn: dir/lsnr.sock; unix: the path */
	char *host;
	int port;
	char *path; /* http: request path */
	int ino_fd;
	int fd;
	int64_t exec_ns, ready_ns, response_ns, next_try_ns;
	struct buf req;
	size_t req_off;
	struct buf resp;
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

/* Empties and removes the private FN_LISTENER directory (no subdirectories). */
static void remove_private_dir(const char *dir)
{
	struct buf path = BUF_INIT;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (d) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			buf_reset(&path);
			buf_addf(&path, "%s/%s", dir, de->d_name);
			unlink(path.buf);
		}
		closedir(d);
	}
	rmdir(dir);
	buf_release(&path);
}

static void rfc3339(int64_t from_now_s, char *out, size_t n)
{
	time_t t = time(NULL) + from_now_s;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

static int start_connect(struct ready *rd, struct buf *err)
{
	int fd;

	if (rd->kind == READY_FN || rd->kind == READY_UNIX) {
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
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS &&
		    errno != EAGAIN) {
			close(fd);
			return 0;
		}
	} else {
		struct sockaddr_in sa;

		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_port = htons((uint16_t)rd->port);
		if (inet_pton(AF_INET, rd->host, &sa.sin_addr) != 1) {
			buf_addf(err, "readiness host '%s' is not an IPv4 address", rd->host);
			return -1;
		}
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			goto fail;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
			close(fd);
			return 0;
		}
	}
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
		buf_addf(err, "'%s' is not a symlink: the Fn agent needs lsnr.sock to be a symlink to the "
			 "socket, created once the server is serving", rd->sock_path);
		return -1;
	}
	target[n] = '\0';
	if (strchr(target, '/')) {
		buf_addf(err, "lsnr.sock points at '%s': the link must be relative, to a file in the same "
			 "directory", target);
		return -1;
	}
	buf_addf(&full, "%s/%s", rd->dir, target);
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
	if (rd->kind == READY_FN) {
		rfc3339(30, deadline, sizeof(deadline));
		buf_addf(&rd->req,
			 "POST /call HTTP/1.1\r\nHost: localhost\r\nFn-Call-Id: coldstart-first-call\r\n"
			 "Fn-Deadline: %s\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n",
			 deadline);
	} else {
		buf_addf(&rd->req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n", rd->path,
			 rd->host, rd->port);
	}
}

/* Returns the HTTP status once the whole response is in, 0 while incomplete. */
static int response_status(const struct buf *resp, bool eof)
{
	const char *hdr_end = memmem(resp->buf, resp->len, "\r\n\r\n", 4);
	const char *cl;
	int status = 0;
	long len = -1;

	if (!hdr_end)
		return 0;
	if (sscanf(resp->buf, "HTTP/1.%*d %d", &status) != 1 || status < 100)
		return -1;
	cl = strcasestr(resp->buf, "\r\ncontent-length:");
	if (cl && cl < hdr_end)
		len = strtol(cl + 17, NULL, 10);
	if (len >= 0 && (size_t)(hdr_end + 4 - resp->buf) + (size_t)len > resp->len)
		return 0;
	if (len < 0 && !eof && !strcasestr(resp->buf, "\r\ntransfer-encoding: chunked"))
		return 0;
	if (len < 0 && !eof && !memmem(resp->buf, resp->len, "\r\n0\r\n\r\n", 7))
		return 0;
	return status;
}

struct ready *ready_new(const char *spec, struct strvec *env, struct buf *err)
{
	struct ready *rd = xcalloc(1, sizeof(*rd));
	char tmpl[] = "/tmp/coldstart-fn-XXXXXX";

	rd->ino_fd = rd->fd = -1;
	buf_init(&rd->req, 0);
	buf_init(&rd->resp, 0);
	if (!strcmp(spec, "fn")) {
		rd->kind = READY_FN;
		if (!mkdtemp(tmpl)) {
			buf_addf(err, "cannot create a private FN_LISTENER directory: %s", strerror(errno));
			goto fail;
		}
		chmod(tmpl, 0755);
		rd->dir = xstrdup(tmpl);
		{
			struct buf sp = BUF_INIT;

			buf_addf(&sp, "%s/lsnr.sock", tmpl);
			rd->sock_path = buf_detach(&sp, NULL);
		}
		rd->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (rd->ino_fd < 0 || inotify_add_watch(rd->ino_fd, rd->dir, IN_CREATE | IN_MOVED_TO) < 0) {
			buf_addf(err, "cannot watch '%s': %s", rd->dir, strerror(errno));
			goto fail;
		}
		strvec_pushf(env, "FN_LISTENER=unix:%s", rd->sock_path);
		strvec_push(env, "FN_FORMAT=http-stream");
		strvec_push(env, "FN_TYPE=sync");
		strvec_push(env, "FN_MEMORY=128");
		strvec_push(env, "FN_APP_ID=coldstart-app");
		strvec_push(env, "FN_FN_ID=coldstart-fn");
		strvec_push(env, "FN_APP_NAME=coldstart");
		strvec_push(env, "FN_FN_NAME=coldstart-probe");
		rd->state = ST_WAIT;
		return rd;
	}
	if (starts_with(spec, "tcp:")) {
		char *end;
		long port = strtol(spec + 4, &end, 10);

		if (end == spec + 4 || *end || port < 1 || port > 65535) {
			buf_addf(err, "--ready tcp:PORT needs a port from 1 to 65535, not '%s'", spec + 4);
			goto fail;
		}
		rd->kind = READY_TCP;
		rd->host = xstrdup("127.0.0.1");
		rd->port = (int)port;
		return rd;
	}
	if (starts_with(spec, "http://")) {
		const char *hp = spec + 7, *slash = strchr(hp, '/'), *colon;
		size_t hlen = slash ? (size_t)(slash - hp) : strlen(hp);
		char *end;
		long port = 80;

		colon = memchr(hp, ':', hlen);
		if (colon) {
			port = strtol(colon + 1, &end, 10);
			if (end != hp + hlen || port < 1 || port > 65535) {
				buf_addf(err, "bad port in '%s'", spec);
				goto fail;
			}
		}
		rd->kind = READY_HTTP;
		rd->host = xstrndup(hp, colon ? (size_t)(colon - hp) : hlen);
		if (!strcmp(rd->host, "localhost")) {
			free(rd->host);
			rd->host = xstrdup("127.0.0.1");
		}
		rd->port = (int)port;
		rd->path = xstrdup(slash ? slash : "/");
		{
			struct in_addr a;

			if (inet_pton(AF_INET, rd->host, &a) != 1 || (ntohl(a.s_addr) >> 24) != 127) {
				buf_addf(err, "--ready http:// probes only loopback addresses (127.x.x.x), not '%s'",
					 rd->host);
				goto fail;
			}
		}
		return rd;
	}
	if (starts_with(spec, "unix:") && spec[5]) {
		rd->kind = READY_UNIX;
		rd->sock_path = xstrdup(spec + 5);
		return rd;
	}
	buf_addf(err, "unknown readiness probe '%s' (fn, tcp:PORT, http://127.0.0.1:PORT/path, unix:PATH)", spec);
fail:
	ready_free(rd);
	return NULL;
}

void ready_started(struct ready *rd, pid_t pid, int64_t exec_ns)
{
	(void)pid;
	rd->exec_ns = exec_ns;
	rd->next_try_ns = exec_ns;
}

int ready_pollfd(struct ready *rd, int *timeout_ms)
{
	*timeout_ms = RETRY_MS;
	switch (rd->state) {
	case ST_WAIT:
		if (rd->kind == READY_FN) {
			*timeout_ms = 50;
			return rd->ino_fd;
		}
		return -1;
	case ST_CONNECTING:
	case ST_SENDING:
	case ST_READING:
		*timeout_ms = 20;
		return rd->fd;
	case ST_DONE:
		*timeout_ms = 1000;
		return -1;
	}
	return -1;
}

int ready_step(struct ready *rd, struct buf *err)
{
	int64_t now = now_ns();

	switch (rd->state) {
	case ST_WAIT:
		if (rd->kind == READY_FN) {
			char evbuf[4096];
			struct stat st;

			while (read(rd->ino_fd, evbuf, sizeof(evbuf)) > 0)
				;
			if (lstat(rd->sock_path, &st) < 0)
				return 0;
			rd->ready_ns = now;
			if (check_fn_link(rd, err) < 0)
				return -1;
			if (start_connect(rd, err) < 0)
				return -1;
			if (rd->state != ST_CONNECTING) {
				buf_addf(err, "lsnr.sock exists but refuses connections");
				return -1;
			}
			return 0;
		}
		if (now < rd->next_try_ns)
			return 0;
		rd->next_try_ns = now + ms_to_ns(RETRY_MS);
		return start_connect(rd, err) < 0 ? -1 : 0;
	case ST_CONNECTING: {
		int soerr = 0;
		socklen_t len = sizeof(soerr);

		if (getsockopt(rd->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (soerr == EINPROGRESS || soerr == EALREADY)
			return 0;
		if (soerr) {
			close_fd(&rd->fd);
			if (rd->kind == READY_FN) {
				buf_addf(err, "cannot connect to lsnr.sock: %s", strerror(soerr));
				return -1;
			}
			rd->state = ST_WAIT;
			return 0;
		}
		{
			/* A non-blocking connect may still be pending: check writability. */
			struct sockaddr_storage peer;
			socklen_t pl = sizeof(peer);

			if (getpeername(rd->fd, (struct sockaddr *)&peer, &pl) < 0) {
				if (errno == ENOTCONN)
					return 0;
			}
		}
		if (rd->kind != READY_FN && !rd->ready_ns)
			rd->ready_ns = now;
		if (rd->kind == READY_TCP || rd->kind == READY_UNIX) {
			rd->response_ns = 0;
			close_fd(&rd->fd);
			rd->state = ST_DONE;
			return 1;
		}
		build_request(rd);
		rd->state = ST_SENDING;
	}
		/* fall through */
	case ST_SENDING:
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
		rd->state = ST_READING;
		/* fall through */
	case ST_READING: {
		char chunk[65536];
		bool eof = false;
		int status;

		for (;;) {
			ssize_t n = recv(rd->fd, chunk, sizeof(chunk), 0);

			if (n > 0) {
				if (rd->resp.len + (size_t)n > MAX_RESPONSE) {
					buf_addf(err, "first response is larger than %u bytes", MAX_RESPONSE);
					return -1;
				}
				buf_add(&rd->resp, chunk, (size_t)n);
				continue;
			}
			if (n == 0) {
				eof = true;
				break;
			}
			if (errno == EAGAIN || errno == EINTR)
				break;
			if (rd->kind == READY_HTTP && !rd->resp.len) {
				/* Reset before any answer: not ready yet. */
				close_fd(&rd->fd);
				rd->state = ST_WAIT;
				return 0;
			}
			buf_addf(err, "reading the first response failed: %s", strerror(errno));
			return -1;
		}
		status = response_status(&rd->resp, eof);
		if (!status) {
			if (eof) {
				if (rd->kind == READY_HTTP) {
					close_fd(&rd->fd);
					rd->state = ST_WAIT;
					return 0;
				}
				buf_addf(err, "the function closed the connection without answering POST /call");
				return -1;
			}
			return 0;
		}
		if (status < 0) {
			buf_addf(err, "the first response is not HTTP");
			return -1;
		}
		close_fd(&rd->fd);
		if (rd->kind == READY_HTTP && status >= 500) {
			/* The port answered but the app is not serving yet. */
			rd->state = ST_WAIT;
			rd->next_try_ns = now + ms_to_ns(RETRY_MS * 2);
			return 0;
		}
		if (rd->kind == READY_HTTP && (status < 200 || status > 299)) {
			buf_addf(err, "GET %s answered %d, not 2xx", rd->path, status);
			return -1;
		}
		rd->response_ns = now;
		rd->state = ST_DONE;
		if (rd->kind == READY_FN && status != 200) {
			buf_addf(err, "the first POST /call was answered %d (the Fn agent takes 502 as a failed "
				 "function, 504 as a timeout, anything else kills the container)", status);
			return -1;
		}
		return 1;
	}
	case ST_DONE:
		return 1;
	}
	return 0;
}

int64_t ready_ready_us(const struct ready *rd)
{
	return rd->ready_ns ? (rd->ready_ns - rd->exec_ns) / 1000 : UNKNOWN;
}

int64_t ready_response_us(const struct ready *rd)
{
	return rd->ready_ns && rd->response_ns ? (rd->response_ns - rd->ready_ns) / 1000 : UNKNOWN;
}

void ready_free(struct ready *rd)
{
	if (!rd)
		return;
	close_fd(&rd->fd);
	close_fd(&rd->ino_fd);
	if (rd->dir)
		remove_private_dir(rd->dir);
	free(rd->dir);
	free(rd->sock_path);
	free(rd->host);
	free(rd->path);
	buf_release(&rd->req);
	buf_release(&rd->resp);
	free(rd);
}

const char *ready_fn_dir(const struct ready *rd)
{
	return rd && rd->kind == READY_FN ? rd->dir : NULL;
}
