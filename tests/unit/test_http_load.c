/*
 * Unit tests of src/sys/http_load.h: when an answer is complete, and the
 * requests `compare --requests` sends, against a server on a real loopback
 * socket in a thread of this test that answers as each test scripts it
 * (some requests slow, some with another status, then gone).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sys/http_load.h"

static int status_of(const char *text, bool eof)
{
	struct buf b = BUF_INIT;
	int st;

	buf_adds(&b, text);
	st = http_response_status(&b, eof);
	buf_release(&b);
	return st;
}

static void test_response_status(void **state)
{
	(void)state;
	assert_int_equal(status_of("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false), 200);
	assert_int_equal(status_of("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok", false), 0);
	/* Cut short: the stream ended before the body did. */
	assert_int_equal(status_of("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok", true), 0);
	assert_int_equal(status_of("HTTP/1.1 500 Oops\r\ncontent-length: 0\r\n\r\n", false), 500);
	assert_int_equal(status_of("HTTP/1.1 200 OK\r\nContent-Len", false), 0);
	/* Neither a length nor chunks: the end of the stream ends it. */
	assert_int_equal(status_of("HTTP/1.0 204 No Content\r\n\r\n", false), 0);
	assert_int_equal(status_of("HTTP/1.0 204 No Content\r\n\r\n", true), 204);
	assert_int_equal(status_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n", false), 0);
	assert_int_equal(status_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false),
			 200);
	assert_int_equal(status_of("SSH-2.0-OpenSSH\r\n\r\n", true), -1);
}

/* The scripted server: answer i waits delay_ms[i] and has status[i]; after nr answers it closes its socket. */
struct server {
	int fd, port;
	size_t nr;
	const int *delay_ms, *status;
};

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0)
		;
}

static void *serve(void *arg)
{
	struct server *sv = arg;
	size_t i;

	for (i = 0; i < sv->nr; i++) {
		char req[4096], resp[128];
		size_t got = 0;
		int c = accept(sv->fd, NULL, NULL);

		if (c < 0)
			break;
		while (got < sizeof(req) - 1) {
			ssize_t n = read(c, req + got, sizeof(req) - 1 - got);

			if (n <= 0)
				break;
			got += (size_t)n;
			req[got] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		sleep_ms(sv->delay_ms[i]);
		snprintf(resp, sizeof(resp), "HTTP/1.1 %d X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
			 sv->status[i]);
		if (write(c, resp, strlen(resp)) < 0)
			break;
		close(c);
	}
	close(sv->fd);
	return NULL;
}

static void server_start(struct server *sv, pthread_t *t)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sv->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(sv->fd >= 0);
	assert_int_equal(bind(sv->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(sv->fd, 16), 0);
	assert_int_equal(getsockname(sv->fd, (struct sockaddr *)&sa, &len), 0);
	sv->port = ntohs(sa.sin_port);
	assert_int_equal(pthread_create(t, NULL, serve, sv), 0);
}

/* Runs a load of n requests against sv to its end, as the runner's loop would. */
static void run_load(struct server *sv, size_t n, struct http_load_result *res, struct http_load **out)
{
	struct ready_spec rs;
	struct buf err = BUF_INIT, spec = BUF_INIT;
	struct http_load *hl;
	pthread_t t;

	server_start(sv, &t);
	ready_spec_init(&rs);
	buf_addf(&spec, "http://127.0.0.1:%d/", sv->port);
	assert_int_equal(ready_spec_parse(&rs, spec.buf, NULL, &err), 0);
	hl = http_load_new(&rs, n, 10 * 1000000LL);
	for (;;) {
		short events;
		int ms, fd = http_load_pollfd(hl, &events, &ms);
		struct pollfd p = { .fd = fd, .events = events };

		if (fd >= 0)
			poll(&p, 1, ms);
		if (http_load_step(hl))
			break;
	}
	http_load_result(hl, res);
	pthread_join(t, NULL);
	ready_spec_release(&rs);
	buf_release(&err);
	buf_release(&spec);
	*out = hl;
}

static void test_latency_median_and_p95(void **state)
{
	/* 20 answers, the last two 300 ms late: the 95th percentile (the 19th of 20) is a late one, the median not. */
	static const int delay[20] = { [18] = 300, [19] = 300 };
	static const int status[20] = { 200, 200, 200, 200, 200, 200, 200, 200, 200, 200,
					200, 200, 200, 200, 200, 200, 200, 200, 200, 200 };
	struct server sv = { .nr = 20, .delay_ms = delay, .status = status };
	struct http_load_result res;
	struct http_load *hl;

	(void)state;
	run_load(&sv, 20, &res, &hl);
	assert_int_equal(res.asked, 20);
	assert_int_equal(res.ok, 20);
	assert_int_equal(res.failed, 0);
	assert_null(res.failure);
	assert_true(res.median_us > 0 && res.median_us < 300000);
	assert_true(res.p95_us >= 300000);
	http_load_free(hl);
}

static void test_failures_are_counted(void **state)
{
	/* The third answer is a 500; after five answers the server is gone: the rest are refused. */
	static const int delay[5] = { 0 };
	static const int status[5] = { 200, 200, 500, 200, 200 };
	struct server sv = { .nr = 5, .delay_ms = delay, .status = status };
	struct http_load_result res;
	struct http_load *hl;

	(void)state;
	run_load(&sv, 8, &res, &hl);
	assert_int_equal(res.asked, 8);
	assert_int_equal(res.ok, 4);
	assert_int_equal(res.failed, 4);
	assert_non_null(res.failure);
	assert_string_equal(res.failure, "request 3: GET / answered 500");
	assert_true(res.median_us > 0 && res.median_us <= res.p95_us);
	http_load_free(hl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_response_status),
		cmocka_unit_test(test_latency_median_and_p95),
		cmocka_unit_test(test_failures_are_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
