/*
 * Parsing of --ready SPEC and --ready-status LIST into a struct ready_spec
 * (see ready_spec.h): pure, and called when the options are parsed, so a bad
 * spec is a usage error before anything runs.
 */
#include "sys/ready_spec.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_STATUSES "200-399"

bool ready_spec_accepts(const struct ready_spec *rs, int status)
{
	return status >= 100 && status < 640 && (rs->accept[status / 64] >> (status % 64)) & 1;
}

static void accept_range(struct ready_spec *rs, int lo, int hi)
{
	int s;

	for (s = lo; s <= hi; s++)
		rs->accept[s / 64] |= (uint64_t)1 << (s % 64);
}

/* "200", "2xx", "200-299", comma-separated; statuses from 100 to 599. */
static int parse_statuses(struct ready_spec *rs, const char *list, struct buf *err)
{
	const char *p = list;

	memset(rs->accept, 0, sizeof(rs->accept));
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[16];
		int lo, hi, n;

		if (!len || len >= sizeof(item))
			goto bad;
		memcpy(item, p, len);
		item[len] = '\0';
		if (len == 3 && isdigit((unsigned char)item[0]) && tolower((unsigned char)item[1]) == 'x' &&
		    tolower((unsigned char)item[2]) == 'x') {
			lo = (item[0] - '0') * 100;
			hi = lo + 99;
		} else if (sscanf(item, "%3d-%3d%n", &lo, &hi, &n) == 2 && (size_t)n == len) {
			;
		} else if (sscanf(item, "%3d%n", &lo, &n) == 1 && (size_t)n == len) {
			hi = lo;
		} else {
			goto bad;
		}
		if (lo < 100 || hi > 599 || lo > hi)
			goto bad;
		accept_range(rs, lo, hi);
		if (!end)
			break;
		p = end + 1;
	}
	free(rs->statuses);
	rs->statuses = xstrdup(list);
	return 0;
bad:
	buf_addf(err,
		 "--ready-status needs HTTP statuses from 100 to 599 such as 200, 2xx or 200-399, "
		 "comma-separated, not '%s'",
		 list);
	return -1;
}

static int parse_port(const char *s, size_t len, int *port)
{
	char digits[8];
	char *end;
	long v;

	if (!len || len >= sizeof(digits) || !isdigit((unsigned char)*s))
		return -1;
	memcpy(digits, s, len);
	digits[len] = '\0';
	v = strtol(digits, &end, 10);
	if (*end || v < 1 || v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

static int parse_http(struct ready_spec *rs, const char *spec, struct buf *err)
{
	const char *hp = spec + strlen("http://"), *slash = strchr(hp, '/'), *colon;
	size_t hlen = slash ? (size_t)(slash - hp) : strlen(hp);
	struct in_addr a;

	rs->kind = READY_HTTP;
	rs->port = 80;
	colon = memchr(hp, ':', hlen);
	if (colon && parse_port(colon + 1, hlen - (size_t)(colon + 1 - hp), &rs->port) < 0) {
		buf_addf(err, "bad port in --ready '%s': expected 1 to 65535", spec);
		return -1;
	}
	rs->host = xstrndup(hp, colon ? (size_t)(colon - hp) : hlen);
	if (!strcmp(rs->host, "localhost")) {
		free(rs->host);
		rs->host = xstrdup("127.0.0.1");
	}
	if (inet_pton(AF_INET, rs->host, &a) != 1 || (ntohl(a.s_addr) >> 24) != 127) {
		buf_addf(err, "--ready http:// probes only loopback addresses (127.x.x.x), not '%s'", rs->host);
		return -1;
	}
	rs->path = xstrdup(slash ? slash : "/");
	return 0;
}

void ready_spec_init(struct ready_spec *rs)
{
	memset(rs, 0, sizeof(*rs));
}

void ready_spec_release(struct ready_spec *rs)
{
	free(rs->host);
	free(rs->path);
	free(rs->statuses);
	ready_spec_init(rs);
}

int ready_spec_parse(struct ready_spec *rs, const char *spec, const char *statuses, struct buf *err)
{
	int ret = -1;

	ready_spec_release(rs);
	if (!strcmp(spec, "fn")) {
		rs->kind = READY_FN;
	} else if (starts_with(spec, "tcp:")) {
		rs->kind = READY_TCP;
		if (parse_port(spec + 4, strlen(spec + 4), &rs->port) < 0) {
			buf_addf(err, "--ready tcp:PORT needs a port from 1 to 65535, not '%s'", spec + 4);
			goto out;
		}
		rs->host = xstrdup("127.0.0.1");
	} else if (starts_with(spec, "http://")) {
		if (parse_http(rs, spec, err) < 0)
			goto out;
	} else if (starts_with(spec, "unix:") && spec[5]) {
		rs->kind = READY_UNIX;
		rs->path = xstrdup(spec + 5);
	} else {
		buf_addf(err, "unknown readiness probe '%s' (fn, tcp:PORT, http://127.0.0.1:PORT/path, unix:PATH)",
			 spec);
		goto out;
	}
	if (statuses && rs->kind != READY_HTTP) {
		buf_addf(err, "--ready-status applies to http:// probes, not to '%s'", spec);
		goto out;
	}
	if (rs->kind == READY_HTTP && parse_statuses(rs, statuses ? statuses : DEFAULT_STATUSES, err) < 0)
		goto out;
	ret = 0;
out:
	if (ret < 0)
		ready_spec_release(rs);
	return ret;
}
