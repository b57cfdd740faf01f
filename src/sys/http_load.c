/*
 * HTTP/1.1 to a loopback server (see http_load.h): the response parser and
 * the stamped receive the readiness probe uses too, and the requests that
 * `compare --requests` sends after readiness, one at a time.
 */
#include "sys/http_load.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "model/stats.h"

/* An answer larger than this is not read further: the request fails. */
#define LOAD_MAX_RESPONSE (16u << 20)

enum load_state { LS_NEXT, LS_CONNECTING, LS_SENDING, LS_READING, LS_DONE };

struct http_load {
	const struct ready_spec *spec;
	enum load_state state;
	size_t n, sent, ok;
	int64_t timeout_ns;
	int fd;
	int64_t start_ns; /* the current request's connect */
	int64_t arrived_ns; /* when its last data arrived (SO_TIMESTAMPNS), 0 unknown */
	struct buf req;
	size_t req_off;
	struct buf resp;
	int64_t *latency_us; /* one per ok request */
	char *failure;
	struct summary sum; /* of latency_us, once done */
	int64_t p95_us;
	bool summarized;
};

int http_response_status(const struct buf *resp, bool eof)
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

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/*
 * CLOCK_REALTIME minus CLOCK_MONOTONIC (the kernel stamps what arrives on
 * the first).  The real clock is read between two monotonic readings, the
 * closest pair of a few: one read after a preemption (a loaded machine)
 * would move the moment by as long as this thread waited for a CPU.
 */
static int64_t realtime_offset_ns(void)
{
	struct timespec m1, real, m2;
	int64_t best = 0, gap, best_gap = INT64_MAX;
	int i;

	for (i = 0; i < 4 && best_gap > 20000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &m1);
		clock_gettime(CLOCK_REALTIME, &real);
		clock_gettime(CLOCK_MONOTONIC, &m2);
		gap = ts_ns(&m2) - ts_ns(&m1);
		if (gap < best_gap) {
			best_gap = gap;
			best = ts_ns(&real) - (ts_ns(&m1) + gap / 2);
		}
	}
	return best;
}

ssize_t http_recv_stamped(int fd, char *chunk, size_t size, int64_t *arrived_ns)
{
	char control[CMSG_SPACE(sizeof(struct timespec))];
	struct iovec iov = { .iov_base = chunk, .iov_len = size };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control)
	};
	struct cmsghdr *cm;
	ssize_t n = recvmsg(fd, &msg, 0);

	if (n <= 0)
		return n;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		struct timespec ts;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_TIMESTAMPNS)
			continue;
		memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
		*arrived_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - realtime_offset_ns();
	}
	return n;
}

int http_read_available(int fd, struct buf *resp, size_t max, int64_t *arrived_ns)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = http_recv_stamped(fd, chunk, sizeof(chunk), arrived_ns);

		if (n > 0 && resp->len + (size_t)n > max) {
			errno = E2BIG;
			return -1;
		}
		if (n > 0)
			buf_add(resp, chunk, (size_t)n);
		else if (n == 0)
			return 1;
		else if (errno == EAGAIN || errno == EINTR)
			return 0;
		else
			return -1;
	}
}

static void close_socket(struct http_load *hl)
{
	if (hl->fd >= 0)
		close(hl->fd);
	hl->fd = -1;
}

/* The current request failed (what: a message for the first failure); on to the next. */
__attribute__((format(printf, 2, 3))) static void request_failed(struct http_load *hl, const char *fmt, ...)
{
	close_socket(hl);
	if (!hl->failure) {
		struct buf b = BUF_INIT;
		va_list ap;

		buf_addf(&b, "request %zu: ", hl->sent);
		va_start(ap, fmt);
		buf_vaddf(&b, fmt, ap);
		va_end(ap);
		hl->failure = buf_detach(&b, NULL);
	}
	hl->state = LS_NEXT;
}

static void start_request(struct http_load *hl)
{
	struct sockaddr_in sa;

	if (hl->sent >= hl->n) {
		hl->state = LS_DONE;
		return;
	}
	hl->sent++;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)hl->spec->port);
	if (inet_pton(AF_INET, hl->spec->host, &sa.sin_addr) != 1) {
		request_failed(hl, "host '%s' is not an IPv4 address", hl->spec->host);
		return;
	}
	hl->arrived_ns = 0;
	hl->req_off = 0;
	buf_reset(&hl->resp);
	hl->start_ns = now_ns();
	hl->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (hl->fd < 0) {
		request_failed(hl, "cannot create a socket: %s", strerror(errno));
		return;
	}
	setsockopt(hl->fd, SOL_SOCKET, SO_TIMESTAMPNS, &(int){ 1 }, sizeof(int));
	if (connect(hl->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		request_failed(hl, "connect: %s", strerror(errno));
		return;
	}
	hl->state = LS_CONNECTING;
}

static void step_connecting(struct http_load *hl)
{
	int e = 0;
	socklen_t len = sizeof(e);
	struct pollfd pfd = { .fd = hl->fd, .events = POLLOUT };

	if (poll(&pfd, 1, 0) <= 0)
		return;
	if (getsockopt(hl->fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		e = errno;
	if (e) {
		request_failed(hl, "connect: %s", strerror(e));
		return;
	}
	hl->state = LS_SENDING;
}

static void step_sending(struct http_load *hl)
{
	while (hl->req_off < hl->req.len) {
		ssize_t w = send(hl->fd, hl->req.buf + hl->req_off, hl->req.len - hl->req_off, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno != EAGAIN && errno != EINTR)
				request_failed(hl, "send: %s", strerror(errno));
			return;
		}
		hl->req_off += (size_t)w;
	}
	hl->state = LS_READING;
}

static void step_reading(struct http_load *hl)
{
	int status, rc = http_read_available(hl->fd, &hl->resp, LOAD_MAX_RESPONSE, &hl->arrived_ns);
	bool eof = rc == 1;

	if (rc < 0 && errno == E2BIG) {
		request_failed(hl, "the answer is larger than %u bytes", LOAD_MAX_RESPONSE);
		return;
	}
	if (rc < 0) {
		request_failed(hl, "reading the answer: %s", strerror(errno));
		return;
	}
	status = http_response_status(&hl->resp, eof);
	if (!status && !eof)
		return;
	if (status < 0) {
		request_failed(hl, "the answer is not HTTP");
		return;
	}
	if (!status) {
		request_failed(hl, "%s", hl->resp.len ? "the answer was cut short" : "closed without an answer");
		return;
	}
	if (!ready_spec_accepts(hl->spec, status)) {
		request_failed(hl, "GET %s answered %d", hl->spec->path, status);
		return;
	}
	{
		/* The kernel's stamp of the last byte, unless the stamp is missing or not after the connect. */
		int64_t end = hl->arrived_ns > hl->start_ns ? hl->arrived_ns : now_ns();

		hl->latency_us[hl->ok++] = (end - hl->start_ns) / 1000;
	}
	close_socket(hl);
	hl->state = LS_NEXT;
}

struct http_load *http_load_new(const struct ready_spec *spec, size_t n, int64_t timeout_us)
{
	struct http_load *hl = xcalloc(1, sizeof(*hl));

	hl->spec = spec;
	hl->n = n;
	hl->fd = -1;
	hl->timeout_ns = timeout_us * 1000;
	hl->latency_us = xcalloc(n + 1, sizeof(*hl->latency_us));
	buf_init(&hl->req, 0);
	buf_init(&hl->resp, 0);
	buf_addf(&hl->req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n", spec->path, spec->host,
		 spec->port);
	hl->state = LS_NEXT;
	return hl;
}

int http_load_pollfd(struct http_load *hl, short *events, int *timeout_ms)
{
	*events = POLLIN;
	*timeout_ms = 100; /* a safety net: the socket wakes the loop */
	switch (hl->state) {
	case LS_NEXT: *timeout_ms = 0; return -1;
	case LS_CONNECTING:
	case LS_SENDING: *events = POLLOUT; return hl->fd;
	case LS_READING: return hl->fd;
	case LS_DONE: *timeout_ms = 1000; return -1;
	}
	return -1;
}

int http_load_step(struct http_load *hl)
{
	/* A few requests a turn at most, so the loop still reads the target's output between them. */
	int turns = 0;

	while (hl->state != LS_DONE && turns++ < 8) {
		enum load_state before = hl->state;

		switch (hl->state) {
		case LS_NEXT: start_request(hl); break;
		case LS_CONNECTING: step_connecting(hl); break;
		case LS_SENDING: step_sending(hl); break;
		case LS_READING: step_reading(hl); break;
		case LS_DONE: break;
		}
		if (hl->state != LS_DONE && hl->state != LS_NEXT && hl->timeout_ns > 0 &&
		    now_ns() - hl->start_ns > hl->timeout_ns) {
			request_failed(hl, "no answer within %lld ms", (long long)(hl->timeout_ns / 1000000));
			http_load_abandon(hl);
		}
		if (hl->state == before)
			break; /* waiting for the socket */
	}
	return hl->state == LS_DONE;
}

void http_load_abandon(struct http_load *hl)
{
	close_socket(hl);
	if (hl->ok < hl->n && !hl->failure)
		request_failed(hl, "the server exited");
	hl->state = LS_DONE;
}

void http_load_result(struct http_load *hl, struct http_load_result *out)
{
	if (!hl->summarized && hl->ok) {
		int64_t *copy = xmalloc(st_mult(hl->ok, sizeof(*copy)));
		size_t rank;

		memcpy(copy, hl->latency_us, hl->ok * sizeof(*copy));
		summarize(copy, hl->ok, &hl->sum); /* sorts copy */
		/* Nearest rank: the smallest value at or above 95% of them. */
		rank = (hl->ok * 95 + 99) / 100;
		hl->p95_us = copy[rank ? rank - 1 : 0];
		free(copy);
		hl->summarized = true;
	}
	memset(out, 0, sizeof(*out));
	out->asked = hl->n;
	out->ok = hl->ok;
	out->failed = hl->n - hl->ok;
	out->median_us = hl->ok ? hl->sum.median : UNKNOWN;
	out->p95_us = hl->ok ? hl->p95_us : UNKNOWN;
	out->failure = hl->failure;
}

void http_load_free(struct http_load *hl)
{
	if (!hl)
		return;
	close_socket(hl);
	buf_release(&hl->req);
	buf_release(&hl->resp);
	free(hl->latency_us);
	free(hl->failure);
	free(hl);
}
