/*
 * Unit tests of the shared helpers in src/util.h that readers and writers of
 * user files lean on: saturating arithmetic, JSON strings that are always
 * UTF-8, and zlib reads that stop at a limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "iset.h"
#include "util.h"

/* Sizes and durations share their number's rules: no sign, no space, finite. */
static void test_sizes_and_durations(void **state)
{
	static const char *const bad[] = { "", " 1", "-1", "+", "nan", "inf", "1e999", "x", "1 ", NULL };
	const char *const *b;
	int64_t v;

	for (b = bad; *b; b++) {
		assert_int_equal(parse_size(*b, &v), -1);
		assert_int_equal(parse_duration_us(*b, &v), -1);
	}
	assert_int_equal(parse_size("512m", &v), 0);
	assert_int_equal(v, 512 * 1024 * 1024);
	assert_int_equal(parse_size("1.5KiB", &v), 0);
	assert_int_equal(v, 1536);
	assert_int_equal(parse_size("7", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(parse_size("2q", &v), -1);
	assert_int_equal(parse_duration_us("1.5s", &v), 0);
	assert_int_equal(v, 1500000);
	assert_int_equal(parse_duration_us("250", &v), 0);
	assert_int_equal(v, 250000);
	assert_int_equal(parse_duration_us("3ns", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_duration_us("2h", &v), -1);
}

static void test_saturation(void **state)
{
	(void)state;
	assert_true(i64_add(INT64_MAX, 1) == INT64_MAX);
	assert_true(i64_add(INT64_MIN, -1) == INT64_MIN);
	assert_true(i64_add(40, 2) == 42);
	assert_true(i64_sub(INT64_MIN, 1) == INT64_MIN);
	assert_true(i64_sub(INT64_MAX, -1) == INT64_MAX);
	assert_true(i64_sub(0, INT64_MIN) == INT64_MAX);
	assert_true(i64_mul(INT64_C(1) << 62, 4) == INT64_MAX);
	assert_true(i64_mul(INT64_C(1) << 62, -4) == INT64_MIN);
	assert_true(i64_mul(-3, 1000) == -3000);
	assert_true(i64_neg(INT64_MIN) == INT64_MAX);
	assert_true(i64_abs(INT64_MIN) == INT64_MAX);
	assert_true(i64_abs(-7) == 7);
	assert_true(i64_mid(INT64_MAX, INT64_MAX) == INT64_MAX);
	assert_true(i64_mid(INT64_MIN, INT64_MIN) == INT64_MIN);
	assert_true(i64_mid(3, 4) == 3);
	/* A share of a sample's CPU time at a cut: no overflow of a * num. */
	assert_true(i64_share(376422323721641, 1000000, 2000000) == 188211161860820);
	assert_true(i64_share(INT64_MAX, 3, 3) == INT64_MAX);
	assert_true(i64_share(INT64_MAX, 0, 5) == 0);
	assert_true(i64_share(10, 1, 3) == 3);
	assert_true(i64_from_double(1e300) == INT64_MAX);
	assert_true(i64_from_double(-1e300) == INT64_MIN);
	assert_true(i64_from_double(9223372036854775807.0) == INT64_MAX);
	assert_true(i64_from_double(0.0 / 0.0) == 0);
	assert_true(i64_from_double(-2.9) == -2);
}

static void expect_json(const char *in, size_t len, const char *want, size_t want_escaped)
{
	struct buf out = BUF_INIT;
	size_t escaped = buf_add_json_str(&out, in, len);

	assert_string_equal(out.buf, want);
	assert_int_equal(escaped, want_escaped);
	buf_release(&out);
}

static void test_json_strings_are_utf8(void **state)
{
	(void)state;
	expect_json("plain", 5, "\"plain\"", 0);
	expect_json("q\"\\\n\t\x01\x7f", 7, "\"q\\\"\\\\\\n\\t\\u0001\\u007f\"", 0);
	expect_json("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
		    0);
	/* Latin-1, a cut sequence, an overlong '/', a UTF-16 surrogate, past U+10FFFF. */
	expect_json("caf\xe9", 4, "\"caf\\\\xe9\"", 1);
	expect_json("\xe2\x82", 2, "\"\\\\xe2\\\\x82\"", 2);
	expect_json("\xc0\xaf", 2, "\"\\\\xc0\\\\xaf\"", 2);
	expect_json("\xed\xa0\x80", 3, "\"\\\\xed\\\\xa0\\\\x80\"", 3);
	expect_json("\xf4\x90\x80\x80", 4, "\"\\\\xf4\\\\x90\\\\x80\\\\x80\"", 4);
	/* A NUL inside the length is escaped like any control byte. */
	expect_json("a\0b", 3, "\"a\\u0000b\"", 0);
}

static void test_zfile_limit(void **state)
{
	char path[] = "/tmp/coldstart-test-zfile-XXXXXX";
	char chunk[4096];
	struct zfile zf;
	struct buf err = BUF_INIT;
	long n, total = 0;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	memset(chunk, 'x', sizeof(chunk));
	assert_int_equal(write(fd, chunk, 3000), 3000);
	close(fd);

	/* Exactly the limit reads; one byte more fails. */
	assert_int_equal(zfile_open(&zf, path, 3000, &err), 0);
	while ((n = zfile_read(&zf, chunk, sizeof(chunk), &err)) > 0)
		total += n;
	assert_int_equal(n, 0);
	assert_int_equal(total, 3000);
	zfile_close(&zf);

	assert_int_equal(zfile_open(&zf, path, 2999, &err), 0);
	while ((n = zfile_read(&zf, chunk, sizeof(chunk), &err)) > 0)
		;
	assert_int_equal(n, -1);
	assert_true(zf.over_limit);
	assert_string_equal(err.buf, "more than 2.9 KiB of text (after decompression), the limit");
	zfile_close(&zf);

	buf_reset(&err);
	assert_int_equal(zfile_open(&zf, "/nonexistent/x", 10, &err), -1);
	assert_string_equal(err.buf, "No such file or directory");
	unlink(path);
	buf_release(&err);
}

/* Every value of a set grown from 8 slots to hold 5000 is found again, in the one slot it has. */
static uint64_t weak_hash(const void *ctx, int32_t v)
{
	return (uint64_t)v % 97; /* many collisions: the probing is what is tested */
}

static size_t iset_slot_of(const struct iset *s, int32_t v)
{
	size_t k;

	for (k = weak_hash(NULL, v) & (s->cap - 1); s->slot[k] >= 0; k = (k + 1) & (s->cap - 1))
		if (s->slot[k] == v)
			return k;
	return SIZE_MAX;
}

static void test_iset_grows_and_finds(void **state)
{
	struct iset s;
	int32_t v;
	size_t k, filled = 0;

	iset_init(&s, 8);
	for (v = 0; v < 5000; v++) {
		if (s.used * 2 >= s.cap)
			iset_grow(&s, weak_hash, NULL);
		assert_int_equal(iset_slot_of(&s, v), SIZE_MAX);
		for (k = weak_hash(NULL, v) & (s.cap - 1); s.slot[k] >= 0; k = (k + 1) & (s.cap - 1))
			;
		s.slot[k] = v;
		s.used++;
	}
	assert_int_equal(s.used, 5000);
	assert_true(s.cap >= 10000 && (s.cap & (s.cap - 1)) == 0);
	for (v = 0; v < 5000; v++)
		assert_int_not_equal(iset_slot_of(&s, v), SIZE_MAX);
	assert_int_equal(iset_slot_of(&s, 5000), SIZE_MAX);
	for (k = 0; k < s.cap; k++)
		filled += s.slot[k] >= 0;
	assert_int_equal(filled, 5000);
	iset_release(&s);
	assert_null(s.slot);
	assert_int_equal(s.cap, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_saturation),	    cmocka_unit_test(test_iset_grows_and_finds),
		cmocka_unit_test(test_sizes_and_durations), cmocka_unit_test(test_json_strings_are_utf8),
		cmocka_unit_test(test_zfile_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
