/*
 * Unit tests of the head part's writer (src/plan/plan_head.h): the
 * CRC-32C's check value, and the marshal bytes of each kind of JSON value
 * (format 4, as CPython's marshal.loads reads them; the e2e tests in
 * tests/e2e/test_plan_head.py load real plans' parts with real
 * interpreters).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "plan/plan_head.h"
#include "util.h"

static void test_crc32c_check_value(void **state)
{
	/* The CRC-32C catalogue's check value (iSCSI, RFC 3720). */
	assert_int_equal(plan_head_crc32c("123456789", 9), 0xE3069283u);
	assert_int_equal(plan_head_crc32c("", 0), 0);
}

static void expect_marshal(const char *json, const unsigned char *want, size_t n)
{
	struct buf sb = BUF_INIT, err = BUF_INIT;
	json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);

	assert_non_null(v);
	assert_int_equal(plan_head_marshal(&sb, v, &err), 0);
	assert_int_equal(sb.len, n);
	assert_memory_equal(sb.buf, want, n);
	json_decref(v);
	buf_release(&sb);
	buf_release(&err);
}

static void test_integers_at_the_edges_of_32_bits(void **state)
{
	static const unsigned char want[] = {
		'[', 6,	   0,	 0,    0,    'i',  0xff, 0xff, 0xff, 0x7f, /* 2**31 - 1 */
		'l', 3,	   0,	 0,    0,    0,	   0,	 0,    0,    2,	   0, /* 2**31: 15-bit digits 0, 0, 2 */
		'i', 0,	   0,	 0,    0x80, /* -2**31 */
		'l', 0xfd, 0xff, 0xff, 0xff, 1,	   0,	 0,    0,    2,	   0, /* -(2**31 + 1) */
		'i', 0xff, 0xff, 0xff, 0xff, /* -1 */
		'l', 5,	   0,	 0,    0,    0xff, 0x7f, 0xff, 0x7f, 0xff, 0x7f, 0xff, 0x7f, 0x07, 0, /* 2**63 - 1 */
	};

	expect_marshal("[2147483647, 2147483648, -2147483648, -2147483649, -1, 9223372036854775807]", want,
		       sizeof(want));
}

static void test_strings_are_written_once_then_referred_to(void **state)
{
	static const unsigned char want[] = {
		'{',	    'z' | 0x80, 1, 'a', /* key "a": reference 0 */
		'[',	    4,		0, 0,	0, 'r',	       0,    0, 0, 0, /* "a" again */
		'u' | 0x80, 2,		0, 0,	0, 0xc3,       0xa9, /* "\u00e9" in UTF-8: reference 1 */
		'r',	    1,		0, 0,	0, 'z' | 0x80, 0, /* "": reference 2 */
		'0',
	};

	expect_marshal("{\"a\": [\"a\", \"\\u00e9\", \"\\u00e9\", \"\"]}", want, sizeof(want));
}

static void test_constants_and_reals(void **state)
{
	static const unsigned char want[] = {
		'[', 4, 0, 0, 0, 'N', 'T', 'F', 'g', 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, /* 1.5 */
	};

	expect_marshal("[null, true, false, 1.5]", want, sizeof(want));
}

static void test_a_long_ascii_string(void **state)
{
	struct buf sb = BUF_INIT, err = BUF_INIT;
	char text[300];
	json_t *v;

	memset(text, 'x', sizeof(text));
	v = json_stringn(text, sizeof(text));
	assert_int_equal(plan_head_marshal(&sb, v, &err), 0);
	assert_int_equal(sb.len, 5 + sizeof(text));
	assert_int_equal((unsigned char)sb.buf[0], 'a' | 0x80);
	assert_int_equal((unsigned char)sb.buf[1], 300 & 0xff);
	assert_int_equal((unsigned char)sb.buf[2], 300 >> 8);
	json_decref(v);
	buf_release(&sb);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_check_value),
		cmocka_unit_test(test_integers_at_the_edges_of_32_bits),
		cmocka_unit_test(test_strings_are_written_once_then_referred_to),
		cmocka_unit_test(test_constants_and_reals),
		cmocka_unit_test(test_a_long_ascii_string),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
