/*
 * Unit tests of the protocol-buffers writer (src/export/pbuf.c): each case
 * compares the bytes written with the encoding the protobuf documentation
 * gives for the same message ("Encoding", protobuf.dev).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "render/export/pbuf.h"

static void expect_bytes(const struct buf *b, const unsigned char *want, size_t len)
{
	assert_int_equal(b->len, len);
	assert_memory_equal(b->buf, want, len);
}

static void test_varints(void **state)
{
	struct buf b = BUF_INIT;
	/* 150 in field 1: the documentation's first example; 300 = ac 02; 0 and 2^64-1. */
	static const unsigned char want[] = { 0x08, 0x96, 0x01, 0xac, 0x02, 0x00, 0xff, 0xff,
					      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };

	(void)state;
	pb_uint(&b, 1, 150);
	pb_varint(&b, 300);
	pb_varint(&b, 0);
	pb_varint(&b, UINT64_MAX);
	expect_bytes(&b, want, sizeof(want));
	buf_release(&b);
}

static void test_negative_int64_takes_ten_bytes(void **state)
{
	struct buf b = BUF_INIT;
	static const unsigned char want[] = { 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };

	(void)state;
	pb_int(&b, 2, -1);
	expect_bytes(&b, want, sizeof(want));
	buf_release(&b);
}

static void test_fixed_and_strings(void **state)
{
	struct buf b = BUF_INIT;
	/* field 2 "testing" (12 07 74 65 73 74 69 6e 67); fixed64 7 = 1; fixed32 16 = 2; double 1.0 */
	static const unsigned char want[] = { 0x12, 0x07, 't',	'e', 's', 't', 'i', 'n',  'g',	0x39, 1,
					      0,    0,	  0,	0,   0,	  0,   0,   0x85, 0x01, 2,    0,
					      0,    0,	  0x21, 0,   0,	  0,   0,   0,	  0,	0xf0, 0x3f };

	(void)state;
	pb_str(&b, 2, "testing");
	pb_fixed64(&b, 7, 1);
	pb_fixed32(&b, 16, 2);
	pb_double(&b, 4, 1.0);
	expect_bytes(&b, want, sizeof(want));
	buf_release(&b);
}

static void test_nested_messages_get_their_length(void **state)
{
	struct buf b = BUF_INIT;
	size_t outer, inner;
	/* The documentation's Test3 { Test1 c = 3; } with a = 150: 1a 03 08 96 01, nested once more in field 1. */
	static const unsigned char want[] = { 0x0a, 0x05, 0x1a, 0x03, 0x08, 0x96, 0x01, 0x0a, 0x00 };

	(void)state;
	outer = pb_open(&b);
	inner = pb_open(&b);
	pb_uint(&b, 1, 150);
	pb_close(&b, 3, inner);
	pb_close(&b, 1, outer);
	/* An empty message is a zero length. */
	pb_close(&b, 1, pb_open(&b));
	expect_bytes(&b, want, sizeof(want));
	buf_release(&b);
}

static void test_long_body_takes_a_two_byte_length(void **state)
{
	struct buf b = BUF_INIT;
	size_t start, i;

	(void)state;
	start = pb_open(&b);
	for (i = 0; i < 200; i++)
		buf_addch(&b, 'x');
	pb_close(&b, 5, start);
	assert_int_equal(b.len, 203);
	assert_int_equal((unsigned char)b.buf[0], 0x2a);
	assert_int_equal((unsigned char)b.buf[1], 0xc8);
	assert_int_equal((unsigned char)b.buf[2], 0x01);
	assert_int_equal(b.buf[3], 'x');
	assert_int_equal(b.buf[202], 'x');
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varints),
		cmocka_unit_test(test_negative_int64_takes_ten_bytes),
		cmocka_unit_test(test_fixed_and_strings),
		cmocka_unit_test(test_nested_messages_get_their_length),
		cmocka_unit_test(test_long_body_takes_a_two_byte_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
