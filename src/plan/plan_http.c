/*
 * The wire side of a plan run's requests (see plan_http.h): request heads,
 * whole-response detection, normalising, connecting.
 */
#include "plan/plan_http.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

void plan_http_fn_request(uint64_t body_size, size_t i, struct buf *req)
{
	char deadline[64];
	time_t t = time(NULL) + 600;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(deadline, sizeof(deadline), "%Y-%m-%dT%H:%M:%SZ", &tm);
	buf_reset(req);
	buf_addf(req,
		 "POST /call HTTP/1.1\r\nHost: localhost\r\nFn-Call-Id: coldstart-plan-%zu\r\n"
		 "Fn-Deadline: %s\r\nContent-Type: application/json\r\nContent-Length: %llu\r\n\r\n",
		 i + 1, deadline, (unsigned long long)body_size);
}

void plan_http_request(const char *host, int port, const char *path, bool has_body, uint64_t body_size, struct buf *req)
{
	buf_reset(req);
	if (!has_body) {
		buf_addf(req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n", path, host, port);
		return;
	}
	buf_addf(req,
		 "POST %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\nContent-Type: application/json\r\n"
		 "Content-Length: %llu\r\n\r\n",
		 path, host, port, (unsigned long long)body_size);
}

int plan_http_connect_unix(const char *path)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int plan_http_connect_tcp(const char *host, int port)
{
	struct addrinfo hints, *res = NULL, *ai;
	char ps[16];
	int fd = -1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	snprintf(ps, sizeof(ps), "%d", port);
	if (getaddrinfo(host, ps, &hints, &res))
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

void plan_http_normalise(const char *resp, size_t len, struct buf *out)
{
	const char *end = memmem(resp, len, "\r\n\r\n", 4);
	const char *p = resp, *nl;

	if (!end) {
		buf_add(out, resp, len);
		return;
	}
	while (p < end) {
		nl = memmem(p, end - p, "\r\n", 2);
		if (!nl)
			nl = end;
		if (!(nl - p >= 5 && !strncasecmp(p, "date:", 5))) {
			buf_add(out, p, nl - p);
			buf_adds(out, "\r\n");
		}
		p = nl + 2;
	}
	buf_adds(out, "\r\n");
	buf_add(out, end + 4, len - (end + 4 - resp));
}

int plan_http_complete(const struct buf *resp, bool eof)
{
	const char *hdr_end = memmem(resp->buf, resp->len, "\r\n\r\n", 4);
	const char *cl, *te;
	size_t head;
	int status;

	if (!hdr_end)
		return eof ? -1 : 0;
	if (sscanf(resp->buf, "HTTP/1.%*d %d", &status) != 1 || status < 100)
		return -1;
	head = hdr_end + 4 - resp->buf;
	cl = strcasestr(resp->buf, "\r\ncontent-length:");
	te = strcasestr(resp->buf, "\r\ntransfer-encoding: chunked");
	if (cl && cl < hdr_end) {
		long n = strtol(cl + 17, NULL, 10);

		if (n < 0)
			return -1;
		return resp->len >= head + (size_t)n ? 1 : eof ? -1 : 0;
	}
	if (te && te < hdr_end)
		return memmem(resp->buf + head, resp->len - head, "0\r\n\r\n", 5) ? 1 : eof ? -1 : 0;
	return eof ? 1 : 0;
}
