/*
 * Unit tests of the pure parts of readiness: --ready / --ready-status
 * parsing (src/sys/ready.h) and the kernel's socket tables read by
 * src/sys/listener.h (rows as Linux 6.x prints them in /proc/net/tcp, tcp6 and
 * unix).
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sys/listener.h"
#include "sys/ready.h"

static void test_specs(void **state)
{
	struct ready_spec rs;
	struct buf err = BUF_INIT;

	(void)state;
	ready_spec_init(&rs);
	assert_int_equal(ready_spec_parse(&rs, "fn", NULL, &err), 0);
	assert_int_equal(rs.kind, READY_FN);
	assert_int_equal(rs.port, 0);

	assert_int_equal(ready_spec_parse(&rs, "tcp:8080", NULL, &err), 0);
	assert_int_equal(rs.kind, READY_TCP);
	assert_int_equal(rs.port, 8080);
	assert_string_equal(rs.host, "127.0.0.1");

	assert_int_equal(ready_spec_parse(&rs, "http://localhost:8000/health?x=1", NULL, &err), 0);
	assert_int_equal(rs.kind, READY_HTTP);
	assert_int_equal(rs.port, 8000);
	assert_string_equal(rs.host, "127.0.0.1");
	assert_string_equal(rs.path, "/health?x=1");
	assert_string_equal(rs.statuses, "200-399");
	assert_true(ready_spec_accepts(&rs, 200) && ready_spec_accepts(&rs, 204) && ready_spec_accepts(&rs, 302) &&
		    ready_spec_accepts(&rs, 399));
	assert_false(ready_spec_accepts(&rs, 199) || ready_spec_accepts(&rs, 400) || ready_spec_accepts(&rs, 500) ||
		     ready_spec_accepts(&rs, 503));

	assert_int_equal(ready_spec_parse(&rs, "http://127.0.0.2", NULL, &err), 0);
	assert_int_equal(rs.port, 80);
	assert_string_equal(rs.path, "/");

	assert_int_equal(ready_spec_parse(&rs, "unix:/run/app.sock", NULL, &err), 0);
	assert_int_equal(rs.kind, READY_UNIX);
	assert_string_equal(rs.path, "/run/app.sock");
	assert_int_equal(err.len, 0);
	ready_spec_release(&rs);
}

static void test_bad_specs(void **state)
{
	static const struct {
		const char *spec, *statuses, *msg;
	} bad[] = {
		{ "tcp:0", NULL, "needs a port from 1 to 65535, not '0'" },
		{ "tcp:65536", NULL, "not '65536'" },
		{ "tcp:80x", NULL, "not '80x'" },
		{ "tcp:", NULL, "not ''" },
		{ "http://127.0.0.1:0/", NULL, "bad port" },
		{ "http://127.0.0.1:/", NULL, "bad port" },
		{ "http://10.0.0.1:80/", NULL, "only loopback addresses" },
		{ "http://example.com/", NULL, "not 'example.com'" },
		{ "unix:", NULL, "unknown readiness probe 'unix:'" },
		{ "ftp://x", NULL, "unknown readiness probe" },
		{ "tcp:80", "200", "--ready-status applies to http:// probes, not to 'tcp:80'" },
		{ "fn", "2xx", "--ready-status applies to http://" },
		{ "http://127.0.0.1:80/", "", "not ''" },
		{ "http://127.0.0.1:80/", "99", "not '99'" },
		{ "http://127.0.0.1:80/", "600", "not '600'" },
		{ "http://127.0.0.1:80/", "300-200", "not '300-200'" },
		{ "http://127.0.0.1:80/", "200,", "not '200,'" },
		{ "http://127.0.0.1:80/", "6xx", "not '6xx'" },
		{ "http://127.0.0.1:80/", "2x", "not '2x'" },
		{ "http://127.0.0.1:80/", "200 ", "not '200 '" },
	};
	struct ready_spec rs;
	size_t i;

	(void)state;
	ready_spec_init(&rs);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct buf err = BUF_INIT;

		assert_int_equal(ready_spec_parse(&rs, bad[i].spec, bad[i].statuses, &err), -1);
		if (!strstr(err.buf, bad[i].msg))
			fail_msg("'%s' / '%s': %s", bad[i].spec, bad[i].statuses ? bad[i].statuses : "", err.buf);
		/* A failed parse leaves nothing behind. */
		assert_null(rs.host);
		assert_null(rs.path);
		buf_release(&err);
	}
}

static void test_statuses(void **state)
{
	struct ready_spec rs;
	struct buf err = BUF_INIT;
	int s;

	(void)state;
	ready_spec_init(&rs);
	assert_int_equal(ready_spec_parse(&rs, "http://127.0.0.1:9/", "2XX,404,500-502", &err), 0);
	assert_string_equal(rs.statuses, "2XX,404,500-502");
	for (s = 100; s < 600; s++)
		assert_int_equal(ready_spec_accepts(&rs, s),
				 (s >= 200 && s <= 299) || s == 404 || (s >= 500 && s <= 502));
	assert_int_equal(ready_spec_parse(&rs, "http://127.0.0.1:9/", "200", &err), 0);
	for (s = 100; s < 600; s++)
		assert_int_equal(ready_spec_accepts(&rs, s), s == 200);
	ready_spec_release(&rs);
}

/* /proc/net/tcp as Linux prints it: LISTEN is 0A, the inode is the tenth field. */
static const char tcp_table[] =
	"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	"   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1286 1 0000000000000000 100 0 0 10 0\n"
	"   1: 0100007F:1F90 0100007F:C2B6 06 00000000:00000000 03:00000882 00000000     0        0 0 3 0000000000000000\n"
	"   2: 0100007F:1F90 0100007F:C19A 01 00000000:00000000 00:00000000 00000000     0        0 5551 1 0000000000000000\n"
	"   3: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7777 1 0000000000000000\n"
	"   4: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9999 1 0000000000000000\n"
	"   5: garbage\n"
	"   6: 0100007F:ZZZZ 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0\n";

static const char tcp6_table[] =
	"  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	"   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 31337 1 0000000000000000 100 0 0 10 0\n";

static void test_tcp_listeners(void **state)
{
	struct listeners ls = { 0 };

	(void)state;
	listeners_parse_tcp(&ls, tcp_table, 8080);
	/* Listening rows on port 8080 only: not the established (06) or SYN_SENT (01) ones. */
	assert_int_equal(ls.nr, 2);
	assert_true(listeners_has(&ls, 1286));
	assert_true(listeners_has(&ls, 9999));
	assert_false(listeners_has(&ls, 5551));
	assert_false(listeners_has(&ls, 7777));
	listeners_parse_tcp(&ls, tcp6_table, 8080);
	assert_int_equal(ls.nr, 3);
	assert_true(listeners_has(&ls, 31337));
	/* The same table twice adds nothing. */
	listeners_parse_tcp(&ls, tcp_table, 8080);
	assert_int_equal(ls.nr, 3);
	listeners_release(&ls);
	listeners_parse_tcp(&ls, "header only\n", 8080);
	listeners_parse_tcp(&ls, "", 8080);
	assert_int_equal(ls.nr, 0);
	listeners_release(&ls);
}

static void test_unix_listeners(void **state)
{
	static const char table[] = "Num       RefCount Protocol Flags    Type St Inode Path\n"
				    "0000000034d6302c: 00000002 00000000 00010000 0001 01 287001 /run/app.sock\n"
				    "00000000fc476a03: 00000003 00000000 00000000 0001 03 286979 /run/app.sock\n"
				    "0000000047ba0a55: 00000002 00000000 00010000 0001 01 287002 /run/my app.sock\n"
				    "0000000047ba0a56: 00000002 00000000 00010000 0001 01 287003 @abstract\n"
				    "0000000047ba0a57: 00000002 00000000 00010000 0001 01 287004\n";
	struct listeners ls = { 0 };

	(void)state;
	listeners_parse_unix(&ls, table, "/run/app.sock");
	/* The connected socket (flags 0) with the same path is not a listener. */
	assert_int_equal(ls.nr, 1);
	assert_true(listeners_has(&ls, 287001));
	listeners_release(&ls);
	listeners_parse_unix(&ls, table, "/run/my app.sock");
	assert_int_equal(ls.nr, 1);
	assert_true(listeners_has(&ls, 287002));
	listeners_release(&ls);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_specs),	       cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_statuses),       cmocka_unit_test(test_tcp_listeners),
		cmocka_unit_test(test_unix_listeners),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
