/*
 * Sending exports over HTTP/1.1 (send.h): a URL parser, one request per
 * connection with Content-Length and Connection: close, and a deadline that
 * bounds name resolution's aftermath, the connect, the write and the answer.
 */
#include "render/export/send.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "render/export/formats.h"
#include "render/export/frames.h"

struct url {
	char *host; /* without brackets */
	char *port;
	char *path; /* "/" at least */
};

static void url_release(struct url *u)
{
	free(u->host);
	free(u->port);
	free(u->path);
}

static int url_parse(const char *s, struct url *u, struct buf *err)
{
	const char *p, *host, *host_end, *path;
	size_t i;

	memset(u, 0, sizeof(*u));
	for (i = 0; s[i]; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f) {
			buf_addf(err, "'%s': a URL has no spaces or control characters", s);
			return -1;
		}
	if (!strncmp(s, "https://", 8)) {
		buf_addf(err,
			 "'%s': https is not supported; send to a collector or gateway over http "
			 "(a local one, or through a TLS proxy)",
			 s);
		return -1;
	}
	if (strncmp(s, "http://", 7)) {
		buf_addf(err, "'%s': expected http://HOST[:PORT][/PATH]", s);
		return -1;
	}
	host = s + 7;
	path = host + strcspn(host, "/?#");
	if (memchr(host, '@', (size_t)(path - host))) {
		buf_addf(err, "'%s': credentials in the URL are not supported", s);
		return -1;
	}
	if (*host == '[') {
		host_end = memchr(host, ']', (size_t)(path - host));
		if (!host_end) {
			buf_addf(err, "'%s': unclosed '[' in the host", s);
			return -1;
		}
		u->host = xstrndup(host + 1, (size_t)(host_end - host - 1));
		p = host_end + 1;
	} else {
		p = memchr(host, ':', (size_t)(path - host));
		if (!p)
			p = path;
		u->host = xstrndup(host, (size_t)(p - host));
	}
	if (!*u->host) {
		buf_addf(err, "'%s': no host", s);
		url_release(u);
		return -1;
	}
	if (*p == ':') {
		char *end;
		long port;

		errno = 0;
		port = strtol(p + 1, &end, 10);
		if (end == p + 1 || end != path || errno || port < 1 || port > 65535) {
			buf_addf(err, "'%s': the port must be 1 to 65535", s);
			url_release(u);
			return -1;
		}
		u->port = xstrndup(p + 1, (size_t)(end - p - 1));
	} else if (p != path) {
		buf_addf(err, "'%s': expected http://HOST[:PORT][/PATH]", s);
		url_release(u);
		return -1;
	} else {
		u->port = xstrdup("80");
	}
	if (*path == '?' || *path == '#' || !*path) {
		struct buf b = BUF_INIT;

		buf_addf(&b, "/%s", *path == '#' ? "" : path);
		u->path = buf_detach(&b, NULL);
	} else {
		u->path = xstrndup(path, strcspn(path, "#"));
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline: 1 ready, 0 timed out, -1 error (errno). */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int64_t left = deadline - now_ms();
		int rc;

		if (left <= 0)
			return 0;
		rc = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc != 0)
			return rc;
	}
}

static int connect_any(const struct url *u, int64_t deadline, struct buf *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	int rc, fd = -1, saved = 0;
	bool timed_out = false;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(u->host, u->port, &hints, &res);
	if (rc) {
		buf_addf(err, "cannot resolve '%s': %s", u->host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		socklen_t len = sizeof(saved);

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		if (errno == EINPROGRESS) {
			rc = wait_fd(fd, POLLOUT, deadline);
			if (rc > 0 && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &saved, &len) && !saved)
				break;
			if (rc == 0)
				timed_out = true;
			else if (rc < 0)
				saved = errno;
		} else {
			saved = errno;
		}
		close(fd);
		fd = -1;
		if (timed_out)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		if (timed_out)
			buf_adds(err, "the connection timed out");
		else
			buf_addf(err, "cannot connect: %s", strerror(saved ? saved : ECONNREFUSED));
	}
	return fd;
}

/*
 * One request and its answer's status line; 0 for a 2xx answer, -1 with
 * the reason in err (the status line and the start of the body otherwise).
 */
static int http_request(const char *method, const struct url *u, const char *content_type, const char *headers,
			const char *body, size_t len, int timeout_ms, struct buf *err)
{
	int64_t deadline = now_ms() + timeout_ms;
	struct buf req = BUF_INIT, ans = BUF_INIT;
	size_t off = 0;
	int fd, ret = -1, status;
	bool v6 = strchr(u->host, ':') != NULL;

	fd = connect_any(u, deadline, err);
	if (fd < 0)
		return -1;
	buf_addf(&req,
		 "%s %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: coldstart/" COLDSTART_VERSION
		 "\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
		 method, u->path, v6 ? "[" : "", u->host, v6 ? "]" : "", u->port, content_type, len,
		 headers ? headers : "");
	buf_add(&req, body, len);
	while (off < req.len) {
		ssize_t n = send(fd, req.buf + off, req.len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int rc = wait_fd(fd, POLLOUT, deadline);

			if (rc == 0) {
				buf_adds(err, "timed out sending");
				goto out;
			}
			continue;
		}
		if (n < 0) {
			buf_addf(err, "cannot send: %s", strerror(errno));
			goto out;
		}
		off += (size_t)n;
	}
	/* The status line and a little of the body, to quote; the rest is not needed. */
	while (ans.len < 4096) {
		ssize_t n;
		int rc = wait_fd(fd, POLLIN, deadline);

		if (rc == 0) {
			buf_adds(err, ans.len ? "timed out reading the answer" : "no answer before the timeout");
			goto out;
		}
		buf_grow(&ans, 4096);
		n = recv(fd, ans.buf + ans.len, 4096 - ans.len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			buf_addf(err, "cannot read the answer: %s", strerror(errno));
			goto out;
		}
		if (!n)
			break;
		buf_setlen(&ans, ans.len + (size_t)n);
		if (memmem(ans.buf, ans.len, "\r\n\r\n", 4) && ans.len > 512)
			break;
	}
	if (sscanf(ans.buf, "HTTP/1.%*d %d", &status) != 1) {
		buf_adds(err, ans.len ? "the answer is not HTTP" : "the connection closed without an answer");
		goto out;
	}
	if (status < 200 || status > 299) {
		char *eol = strstr(ans.buf, "\r\n"), *body_at = strstr(ans.buf, "\r\n\r\n");
		struct buf quote = BUF_INIT;

		buf_add(&quote, ans.buf + 9, eol ? (size_t)(eol - ans.buf - 9) : 3);
		buf_addf(err, "answered %s", quote.buf);
		if (body_at && body_at[4]) {
			buf_reset(&quote);
			export_add_clean(&quote, body_at + 4);
			if (quote.len > 200)
				buf_setlen(&quote, 200);
			buf_addf(err, ": %s", quote.buf);
		}
		buf_release(&quote);
		goto out;
	}
	ret = 0;
out:
	close(fd);
	buf_release(&req);
	buf_release(&ans);
	return ret;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* OTEL_EXPORTER_OTLP_HEADERS ("k=v,k2=v2", percent-encoded) as header lines. */
static int otlp_headers(const char *spec, struct buf *out, struct buf *err)
{
	const char *p = spec;

	while (p && *p) {
		const char *end = p + strcspn(p, ","), *eq = memchr(p, '=', (size_t)(end - p));
		struct buf key = BUF_INIT, val = BUF_INIT;
		const char *c;

		if (!eq || eq == p) {
			buf_addf(err, "OTEL_EXPORTER_OTLP_HEADERS: expected key=value, got '%.*s'", (int)(end - p), p);
			return -1;
		}
		for (c = p; c < eq; c++)
			if (*c != ' ')
				buf_addch(&key, *c);
		for (c = eq + 1; c < end; c++) {
			int v;

			if (*c == '%' && c + 2 < end && hexval(c[1]) >= 0 && hexval(c[2]) >= 0) {
				v = hexval(c[1]) * 16 + hexval(c[2]);
				c += 2;
			} else {
				v = (unsigned char)*c;
			}
			if (v < 0x20 || v == 0x7f) {
				buf_addf(err, "OTEL_EXPORTER_OTLP_HEADERS: a control character in '%s'", key.buf);
				buf_release(&key);
				buf_release(&val);
				return -1;
			}
			buf_addch(&val, v);
		}
		buf_addf(out, "%s: %s\r\n", key.buf, val.buf);
		buf_release(&key);
		buf_release(&val);
		p = *end ? end + 1 : end;
	}
	return 0;
}

static void base64url(struct buf *out, const char *s, size_t len)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const unsigned char *p = (const unsigned char *)s;
	size_t i;

	for (i = 0; i + 2 < len; i += 3) {
		buf_addch(out, tab[p[i] >> 2]);
		buf_addch(out, tab[((p[i] & 3) << 4) | (p[i + 1] >> 4)]);
		buf_addch(out, tab[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)]);
		buf_addch(out, tab[p[i + 2] & 63]);
	}
	if (len - i == 1) {
		buf_addch(out, tab[p[i] >> 2]);
		buf_addch(out, tab[(p[i] & 3) << 4]);
		buf_adds(out, "==");
	} else if (len - i == 2) {
		buf_addch(out, tab[p[i] >> 2]);
		buf_addch(out, tab[((p[i] & 3) << 4) | (p[i + 1] >> 4)]);
		buf_addch(out, tab[(p[i + 1] & 15) << 2]);
		buf_addch(out, '=');
	}
}

int send_url_check(const char *url, struct buf *err)
{
	struct url u;

	if (url_parse(url, &u, err) < 0)
		return -1;
	url_release(&u);
	return 0;
}

int send_otlp(const struct profile *p, const struct export_opts *o, const char *url, const struct send_opts *so,
	      struct buf *err)
{
	struct buf body = BUF_INIT, headers = BUF_INIT, why = BUF_INIT;
	struct url u;
	int ret = -1;

	if (url_parse(url, &u, &why) < 0)
		goto out;
	if (!strcmp(u.path, "/")) {
		free(u.path);
		u.path = xstrdup("/v1/traces");
	}
	if (so->headers && otlp_headers(so->headers, &headers, &why) < 0)
		goto out_url;
	if ((so->json ? export_otlp_json : export_otlp)(p, o, &body, &why) < 0)
		goto out_url;
	ret = http_request("POST", &u, so->json ? "application/json" : "application/x-protobuf", headers.buf, body.buf,
			   body.len, so->timeout_ms, &why);
out_url:
	url_release(&u);
out:
	if (ret < 0)
		buf_addf(err, "cannot send the trace to '%s': %s", url, why.buf);
	buf_release(&body);
	buf_release(&headers);
	buf_release(&why);
	return ret;
}

int send_push_gateway(const struct profile *p, const struct export_opts *o, const char *url, const struct send_opts *so,
		      struct buf *err)
{
	struct buf body = BUF_INIT, path = BUF_INIT, why = BUF_INIT, target = BUF_INIT, path_label = BUF_INIT;
	struct url u;
	int ret = -1;

	if (url_parse(url, &u, &why) < 0)
		goto out;
	buf_add(&path, u.path, strlen(u.path) - (u.path[strlen(u.path) - 1] == '/'));
	if (!strstr(u.path, "/metrics/job/"))
		buf_adds(&path, "/metrics/job/coldstart");
	/* Each target its own group, whatever other labels the URL groups by (instance). */
	if (!strstr(u.path, "/target/") && !strstr(u.path, "/target@base64/")) {
		buf_adds(&path, "/target@base64/");
		/* The gauges' own target label, so the grouping key agrees with it. */
		export_add_target(&path_label, p, TITLE_TARGET_COLS);
		export_add_clean(&target, path_label.buf);
		/* An empty label value is written "=" in base64, as the Pushgateway documents. */
		if (target.len)
			base64url(&path, target.buf, target.len);
		else
			buf_addch(&path, '=');
	}
	free(u.path);
	u.path = buf_detach(&path, NULL);
	if (export_prometheus(p, o, &body, &why) < 0)
		goto out_url;
	ret = http_request("PUT", &u, "text/plain; version=0.0.4", NULL, body.buf, body.len, so->timeout_ms, &why);
out_url:
	url_release(&u);
out:
	if (ret < 0)
		buf_addf(err, "cannot push the metrics to '%s': %s", url, why.buf);
	buf_release(&body);
	buf_release(&path);
	buf_release(&why);
	buf_release(&target);
	buf_release(&path_label);
	return ret;
}
