/*
 * Unit tests of the choice among the records of a planning run's processes
 * (src/plan/plan_pick.h), on real files in a temporary directory: the record
 * of the process whose requests used the most modules is kept with its code
 * archive moved into place, a recorder's failure is kept before any plan,
 * a script's run keeps the started process's, and no other record is left.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/plan_pick.h"
#include "plan/plan_verify.h"
#include "util.h"

static char *tmp;
static char record[512], code[512];

static int setup(void **state)
{
	char tmpl[] = "/tmp/test_plan_pick.XXXXXX";

	tmp = xstrdup(mkdtemp(tmpl));
	snprintf(record, sizeof(record), "%s/p.json.tmp-1", tmp);
	snprintf(code, sizeof(code), "%s/p.json.code.tmp-1", tmp);
	return 0;
}

static int teardown(void **state)
{
	DIR *d = opendir(tmp);
	struct dirent *de;
	char path[1024];

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", tmp, de->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(tmp);
	free(tmp);
	return 0;
}

/* A record of process pid (0: the started one) that used `used` modules, with an archive holding tag. */
static void put_record(long pid, int used, const char *tag)
{
	char path[600], arch[600];
	json_t *root;
	FILE *f;

	snprintf(path, sizeof(path), pid ? "%s.pid%ld" : "%s", record, pid);
	snprintf(arch, sizeof(arch), pid ? "%s.pid%ld" : "%s", code, pid);
	root = json_pack("{s:s, s:{s:s}, s:{s:i}, s:s}", "format", "coldstart-plan", "code", "path", arch, "summary",
			 "load", used, "tag", tag);
	assert_int_equal(json_dump_file(root, path, JSON_COMPACT), 0);
	json_decref(root);
	f = fopen(arch, "w");
	assert_non_null(f);
	fputs(tag, f);
	fclose(f);
}

static void put_failure(long pid)
{
	char path[600];
	json_t *root = json_pack("{s:s, s:s}", "format", "coldstart-plan-error", "code", "recorder");

	snprintf(path, sizeof(path), "%s.pid%ld", record, pid);
	assert_int_equal(json_dump_file(root, path, JSON_COMPACT), 0);
	json_decref(root);
}

static size_t count_files(void)
{
	DIR *d = opendir(tmp);
	struct dirent *de;
	size_t n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* The kept record's tag, and that its code archive is at code holding the same tag. */
static char *kept_tag(void)
{
	json_t *root = json_load_file(record, 0, NULL);
	char got[64] = "";
	char *tag;
	FILE *f;

	assert_non_null(root);
	assert_string_equal(json_string_value(json_object_get(json_object_get(root, "code"), "path")), code);
	tag = xstrdup(json_string_value(json_object_get(root, "tag")));
	f = fopen(code, "r");
	assert_non_null(f);
	assert_non_null(fgets(got, sizeof(got), f));
	fclose(f);
	assert_string_equal(got, tag);
	json_decref(root);
	return tag;
}

/* An error record in place of a plan: what it says, and which exit it means. */
static void test_error_records_always_say_something(void **state)
{
	static const struct {
		const char *json;
		int rc;
		const char *msg;
	} cases[] = {
		/* The bootstrap of an interpreter too old to plan. */
		{ "{\"format\": \"coldstart-plan-error\", \"error\": \"Python 3.7 cannot be planned\"}", -2,
		  "Python 3.7 cannot be planned" },
		/* The recorder's failure. */
		{ "{\"format\": \"coldstart-plan-error\", \"code\": \"recorder\", \"error\": \"boom\"}", -1, "boom" },
		/* Odd fields: no message, a code of another type. */
		{ "{\"format\": \"coldstart-plan-error\", \"code\": 5}", -1,
		  "the planning run wrote an error record without a message" },
		{ "{\"format\": \"coldstart-plan-error\", \"error\": 7}", -1,
		  "the planning run wrote an error record without a message" },
		{ "{\"format\": \"coldstart-plan-error\", \"code\": \"other\", \"error\": \"x\"}", -1, "x" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct plan_doc d = { 0 };
		struct buf err = BUF_INIT;
		FILE *f = fopen(record, "w");

		assert_non_null(f);
		fputs(cases[i].json, f);
		fclose(f);
		assert_int_equal(plan_load(record, &d, &err), cases[i].rc);
		assert_null(d.root);
		assert_non_null(strstr(err.buf, cases[i].msg));
		buf_release(&err);
	}
	unlink(record);
}

static void test_the_worker_that_used_most_is_kept(void **state)
{
	struct buf note = BUF_INIT, err = BUF_INIT;
	char *tag;

	put_record(0, 40, "master");
	put_record(4242, 76, "answered");
	put_record(4243, 60, "idle");
	assert_int_equal(plan_pick_record(record, true, &note, &err), 0);
	tag = kept_tag();
	assert_string_equal(tag, "answered");
	assert_int_equal(count_files(), 2);
	assert_non_null(strstr(note.buf, "3 processes recorded (the target and 2 it forked)"));
	assert_non_null(strstr(note.buf, "a forked child, whose requests used the most modules (76)"));
	free(tag);
	buf_release(&note);
	buf_release(&err);
}

static void test_a_tie_keeps_the_started_process(void **state)
{
	struct buf note = BUF_INIT, err = BUF_INIT;
	char *tag;

	put_record(0, 10, "started");
	put_record(77, 10, "child");
	assert_int_equal(plan_pick_record(record, true, &note, &err), 0);
	tag = kept_tag();
	assert_string_equal(tag, "started");
	assert_int_equal(count_files(), 2);
	free(tag);
	buf_release(&note);
	buf_release(&err);
}

static void test_a_failure_is_kept_before_any_plan(void **state)
{
	struct buf note = BUF_INIT, err = BUF_INIT;
	json_t *root;

	put_record(0, 90, "started");
	put_failure(31);
	assert_int_equal(plan_pick_record(record, true, &note, &err), 0);
	root = json_load_file(record, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(root, "format")), "coldstart-plan-error");
	json_decref(root);
	/* The started process's archive stays for the command to remove; no child's file is left. */
	assert_int_equal(count_files(), 2);
	buf_release(&note);
	buf_release(&err);
}

static void test_a_script_keeps_the_started_process(void **state)
{
	struct buf note = BUF_INIT, err = BUF_INIT;
	char *tag;

	put_record(0, 3, "started");
	put_record(12, 50, "forked");
	assert_int_equal(plan_pick_record(record, false, &note, &err), 0);
	tag = kept_tag();
	assert_string_equal(tag, "started");
	assert_int_equal(note.len, 0);
	assert_int_equal(count_files(), 2);
	free(tag);
	buf_release(&note);
	buf_release(&err);
}

static void test_other_files_are_left_alone(void **state)
{
	struct buf note = BUF_INIT, err = BUF_INIT;
	char path[600];
	FILE *f;

	put_record(0, 3, "started");
	/* Not a child's record: a name that merely starts the same way. */
	snprintf(path, sizeof(path), "%s.pid12.tmp12", record);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(plan_pick_record(record, true, &note, &err), 0);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(note.len, 0);
	buf_release(&note);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_error_records_always_say_something, setup, teardown),
		cmocka_unit_test_setup_teardown(test_the_worker_that_used_most_is_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_tie_keeps_the_started_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_failure_is_kept_before_any_plan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_script_keeps_the_started_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_files_are_left_alone, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
