/*
 * Unit tests of the profile's JSON reader and writer (src/model/profile_json.c,
 * src/json_reader.c): round trips, keys in any order, the range of every
 * figure, strings that are not UTF-8, and the limits that keep a hostile
 * file (a gzip bomb, deep nesting, a huge string) from costing memory.
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

#include "json_reader.h"
#include "model/profile.h"
#include "tree.h"

#define HEAD "{\"format\":\"coldstart-profile\",\"version\":2,"

/* Reads text; returns 0 or -1 with the message in err. */
static int read_text(struct profile *p, const char *text, struct buf *err)
{
	profile_init(p);
	buf_reset(err);
	return profile_from_json(p, text, strlen(text), err);
}

static void expect_error(const char *text, const char *needle)
{
	struct profile p;
	struct buf err = BUF_INIT;

	if (read_text(&p, text, &err) == 0)
		fail_msg("read without error: %s", text);
	if (!strstr(err.buf, needle))
		fail_msg("error '%s' does not say '%s'", err.buf, needle);
	profile_release(&p);
	buf_release(&err);
}

static struct profile *expect_ok(struct profile *p, const char *text)
{
	struct buf err = BUF_INIT;

	if (read_text(p, text, &err) < 0)
		fail_msg("cannot read %s: %s", text, err.buf);
	buf_release(&err);
	return p;
}

static void test_round_trip(void **state)
{
	struct profile p, q;
	struct buf a = BUF_INIT, b = BUF_INIT, err = BUF_INIT;
	struct run *r;
	struct proc *pr;
	int32_t app;

	(void)state;
	profile_init(&p);
	p.command = xstrdup("profile");
	p.python = xstrdup("/usr/bin/python3");
	strvec_push(&p.target, "app.py");
	p.limits.cpus = 0.25;
	p.limits.memory = 128 << 20;
	r = profile_add_run(&p);
	r->wall_us = 81234;
	r->cg.has = true;
	r->cg.memory_peak = 5 << 20;
	pr = run_add_proc(r);
	pr->pid = 42;
	pr->argv = xstrdup("python3 app.py \"q\"");
	app = add(pr, -1, "app", 100, 900);
	add(pr, app, "app.models", 800, 800);
	proc_ensure_timing(pr);
	pr->timing[1].file = proc_intern(pr, "/srv/app/models.py", 18);
	pr->timing[1].start_ns = 5000;
	pr->timing[1].cpu_ns = 4321;
	pr->role = xstrdup("worker");
	pr->origin = ORIGIN_FORK;
	pr->mixed = true;
	pr->tracer_ns = 7000;
	pr->startup_cpu_ns = 8000;
	pr->cpu_ns = 9000;
	pr->events = xcalloc(1, sizeof(*pr->events));
	pr->nr_events = pr->alloc_events = 1;
	pr->events[0].name = proc_intern(pr, "socket.connect", 14);
	pr->events[0].node = 1;
	profile_add_warning(&p, 7, "a warning with \"quotes\"");
	{
		struct finding f = { xstrdup("heavy-import"),
				     xstrdup("info"),
				     xstrdup("t"),
				     xstrdup("e"),
				     xstrdup("f"),
				     xstrdup("app"),
				     800,
				     xcalloc(2, sizeof(long)),
				     2 };

		f.pids[0] = 42;
		f.pids[1] = 43;
		profile_add_finding(&p, &f);
	}
	profile_to_json(&p, &a);
	assert_non_null(strstr(a.buf, "\"pids\":[42,43]"));

	profile_init(&q);
	if (profile_from_json(&q, a.buf, a.len, &err) < 0)
		fail_msg("%s", err.buf);
	profile_to_json(&q, &b);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.buf, b.buf, a.len);
	assert_string_equal(q.runs[0].procs[0].argv, "python3 app.py \"q\"");
	/* Written children first: app.models, then app. */
	assert_string_equal(node_name(&q.runs[0].procs[0], 0), "app.models");
	assert_int_equal(q.runs[0].procs[0].nodes[0].parent, 1);
	assert_string_equal(proc_str(&q.runs[0].procs[0], q.runs[0].procs[0].timing[0].file), "/srv/app/models.py");
	assert_true(q.runs[0].cg.has);
	assert_int_equal(q.runs[0].procs[0].events[0].node, 0);
	/* What the tracer adds per process and per import (trace format 2). */
	assert_string_equal(q.runs[0].procs[0].role, "worker");
	assert_int_equal(q.runs[0].procs[0].origin, ORIGIN_FORK);
	assert_true(q.runs[0].procs[0].mixed);
	assert_int_equal(q.runs[0].procs[0].tracer_ns, 7000);
	assert_int_equal(q.runs[0].procs[0].startup_cpu_ns, 8000);
	assert_int_equal(q.runs[0].procs[0].cpu_ns, 9000);
	assert_int_equal(q.runs[0].procs[0].timing[0].cpu_ns, 4321);
	assert_int_equal(q.runs[0].procs[0].timing[1].cpu_ns, UNKNOWN);
	/* The processes a finding holds in. */
	assert_int_equal(q.findings[0].nr_pids, 2);
	assert_int_equal(q.findings[0].pids[1], 43);
	profile_release(&p);
	profile_release(&q);
	buf_release(&a);
	buf_release(&b);
	buf_release(&err);
}

/* jq -S and other tools reorder keys: "version" may come after "runs". */
static void test_keys_in_any_order(void **state)
{
	struct profile p;
	struct proc *pr;

	(void)state;
	expect_ok(&p, "{\"runs\":[{\"processes\":[{\"timing\":[[1,2,3,4,5,6,7,8,null],[1,2,3,4,5,6,7,8,\"f\"]],"
		      "\"nodes\":[[\"a.b\",1,1,5,5,0,\"app\"],[\"a\",0,-1,5,10,0,\"app\"]]}]}],"
		      "\"version\":2,\"unknown\":{\"x\":[1,{\"y\":null}]},\"format\":\"coldstart-profile\"}");
	pr = &p.runs[0].procs[0];
	assert_int_equal(pr->nr_nodes, 2);
	assert_int_equal(pr->first_root, 1);
	assert_int_equal(pr->nodes[0].parent, 1);
	assert_string_equal(proc_str(pr, pr->timing[1].file), "f");
	profile_release(&p);

	/* Version 1 (parents first) decides how parents are checked even when it comes last. */
	expect_ok(&p, "{\"runs\":[{\"processes\":[{\"nodes\":[[\"a\",0,-1,5,10],[\"a.b\",1,0,5,5]]}]}],"
		      "\"format\":\"coldstart-profile\",\"version\":1}");
	assert_int_equal(p.runs[0].procs[0].nodes[1].parent, 0);
	profile_release(&p);
	expect_error("{\"runs\":[{\"processes\":[{\"nodes\":[[\"a\",0,-1,5,10],[\"a.b\",1,0,5,5]]}]}],"
		     "\"format\":\"coldstart-profile\",\"version\":2}",
		     "node 1 has parent 0, which does not follow it");
}

static void test_errors_say_where(void **state)
{
	(void)state;
	expect_error("", "the document ends where a value was expected");
	expect_error("[]", "not a coldstart profile");
	expect_error("{\"format\":\"other\"}", "not a coldstart profile");
	expect_error(HEAD "\"runs\":[]", "the document ends where ',' or '}' was expected");
	expect_error(HEAD "\"runs\":[]} x", "'x' where the end of the document was expected at line 1 column 54");
	expect_error("{\"format\":\"coldstart-profile\",\"version\":3,\"runs\":[]}", "unsupported profile version 3");
	expect_error("{\"format\":\"coldstart-profile\",\"runs\":[]}", "unsupported profile version 0");
	expect_error(HEAD "\"runs\":{}}", "profile has no 'runs' array");
	expect_error(HEAD "\"x\":1}", "profile has no 'runs' array");
	expect_error(HEAD "\"runs\":[{}]}", "run 0 has no 'processes' array");
	expect_error(HEAD "\"runs\":[{\"processes\":[{}]}]}", "run 0, process 0 has no 'nodes' array");
	expect_error(HEAD "\"runs\":[{\"processes\":[{\"nodes\":{}}]}]}", "run 0, process 0: 'nodes' is not an array");
	expect_error(HEAD "\"runs\":[{\"processes\":[{\"nodes\":[1]}]}]}", "node 0 is not [name, depth, parent");
	expect_error(HEAD "\"runs\":[{\"processes\":[{\"nodes\":[[\"a\",0,-1,1,1]],\"timing\":[]}]}]}",
		     "'timing' has 0 entries for 1 nodes");
	expect_error(HEAD "\n\"x\": [01]}", "bad number '01' at line 2 column 7");
	expect_error(HEAD "\"x\":[tru]}", "expected 'true'");
	expect_error(HEAD "\"x\":[\"a\tb\"]}", "control byte 0x09 inside a string");
	expect_error(HEAD "\"x\":[\"\\q\"]}", "unknown escape");
	expect_error(HEAD "\"x\":[1,]}", "']' where a value was expected");
	expect_error(HEAD "\"x\":[1 2]}", "'2' where ',' or ']' was expected");
	expect_error(HEAD "\"x\" [1]}", "'[' where ':' was expected");
	expect_error(HEAD "\"x\":[1e999]}", "number '1e999' out of range");
}

static void test_ranges(void **state)
{
	static const char *const bad[] = {
		"[\"a\",0,-1,1000000000000001,5]", /* self_us past 10^15 */
		"[\"a\",0,-1,5,-1000000000000001]",
		"[\"a\",0,-1,5,9223372036854775807]",
		"[\"a\",0,-1,5,1e300]",
		"[\"a\",-1,-1,5,5]", /* depth */
		"[\"a\",0,-2,5,5]", /* parent */
		"[\"a\",0,-1,5,5,4294967296]", /* flags */
	};
	struct buf text = BUF_INIT;
	struct profile p;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		buf_reset(&text);
		buf_addf(&text, HEAD "\"runs\":[{\"processes\":[{\"nodes\":[%s]}]}]}", bad[i]);
		expect_error(text.buf, "is out of range");
	}
	expect_error(HEAD "\"runs\":[{\"wall_us\":1e16,\"processes\":[]}]}",
		     "run 0: 'wall_us' 1e+16 is out of range (-1 to 1000000000000000)");
	expect_error(HEAD "\"runs\":[{\"maxrss_kb\":-2,\"processes\":[]}]}", "'maxrss_kb' -2 is out of range");
	expect_error(HEAD "\"runs\":[{\"processes\":[{\"pid\":4294967296,\"nodes\":[]}]}]}",
		     "run 0, process 0: 'pid' 4294967296 is out of range");
	expect_error(HEAD "\"runs\":[{\"processes\":[{\"nodes\":[[\"a\",0,-1,1,1]],"
			  "\"timing\":[[0,0,0,0,0,0,1099511627777,0]]}]}]}",
		     "run 0, process 0, node 0: 'rss_start_kb' 1099511627777 is out of range");
	expect_error(HEAD "\"limits\":{\"cpus\":-1},\"runs\":[]}", "'cpus' -1 is out of range");
	expect_error(HEAD "\"runs\":[{\"processes\":[{\"nodes\":[[\"a\",0,-1,1,1]],"
			  "\"timing\":[[0,0,0,0,0,0,0,0,null,-2]]}]}]}",
		     "run 0, process 0, node 0: 'cpu_ns' -2 is out of range");
	expect_error(HEAD "\"runs\":[{\"processes\":[{\"cpu_ns\":1e19,\"nodes\":[]}]}]}",
		     "run 0, process 0: 'cpu_ns' 1e+19 is out of range");
	expect_error(HEAD "\"runs\":[{\"processes\":[{\"tracer_ns\":-5,\"nodes\":[]}]}]}", "'tracer_ns' -5");
	expect_error(HEAD "\"runs\":[{\"cgroup\":{\"memory_peak\":2e18},\"processes\":[]}]}", "'memory_peak'");

	/* The edges themselves are figures a profile may hold; reals truncate; strings are unknown. */
	expect_ok(&p, HEAD "\"runs\":[{\"wall_us\":12.9,\"user_us\":\"x\",\"processes\":[{\"nodes\":"
			   "[[\"a\",2147483647,-1,-1000000000000000,1000000000000000,4294967295,\"stdlib\"]]}]}]}");
	assert_int_equal(p.runs[0].wall_us, 12);
	assert_int_equal(p.runs[0].user_us, UNKNOWN);
	assert_int_equal(p.runs[0].procs[0].nodes[0].cum_us, PROFILE_MAX_US);
	assert_int_equal(p.runs[0].procs[0].nodes[0].kind, KIND_STDLIB);
	profile_release(&p);
	buf_release(&text);
}

/*
 * A process's timeline is read with the same checks: ranges, nodes after
 * their parents, samples of nodes that exist, a bounded sum of sample
 * times, members in any order.
 */
static void test_timeline(void **state)
{
#define TL_PROC(tl) HEAD "\"runs\":[{\"processes\":[{\"nodes\":[],\"timeline\":" tl "}]}]}"
	static const char ok[] = TL_PROC("{\"samples\":[[10,10,8,1,2],[30,20,-1,2,0]],\"end\":\"ready\","
					 "\"nodes\":[[\"main thread\",\"thread\",-1,null,0],"
					 "[\"app.main\",\"function\",0,\"/app/app.py\",3],"
					 "[\"json\",\"import\",1,null,0]],\"end_us\":30,\"interval_us\":1000}");
	struct profile p, back;
	struct buf out = BUF_INIT, err = BUF_INIT;
	const struct timeline *tl;

	(void)state;
	expect_ok(&p, ok);
	tl = p.runs[0].procs[0].timeline;
	assert_non_null(tl);
	assert_int_equal(tl->nr_nodes, 3);
	assert_int_equal(tl->nr_samples, 2);
	assert_int_equal(tl->end, TL_END_READY);
	assert_int_equal(tl->nodes[0].cum_us, 30);
	assert_int_equal(tl->nodes[1].cum_us, 30);
	assert_int_equal(tl->nodes[1].self_cpu_us, 8);
	assert_string_equal(tl_str(tl, tl->nodes[1].file), "/app/app.py");
	profile_to_json(&p, &out);
	profile_init(&back);
	assert_int_equal(profile_from_json(&back, out.buf, out.len, &err), 0);
	assert_int_equal(back.runs[0].procs[0].timeline->nr_samples, 2);
	assert_int_equal(back.runs[0].procs[0].timeline->nodes[2].cum_us, 20);
	profile_release(&back);
	profile_release(&p);

	expect_error(TL_PROC("{\"nodes\":[[\"a\",\"thread\",-1,null,0]],\"samples\":[[1,1000000000000001,1,0,0]]}"),
		     "run 0, process 0, timeline sample 0: 'wall_us' 1000000000000001 is out of range");
	expect_error(TL_PROC("{\"nodes\":[[\"a\",\"thread\",-1,null,0],[\"b\",\"function\",1,null,0]],\"samples\":[]}"),
		     "timeline node 1: 'parent' 1 is out of range (-1 to 0)");
	expect_error(TL_PROC("{\"nodes\":[[\"a\",\"nonsense\",-1,null,0]],\"samples\":[]}"),
		     "timeline node 0 is not [name, kind, parent < 0, file, line]");
	expect_error(TL_PROC("{\"samples\":[[1,1,1,7,0]],\"nodes\":[[\"a\",\"thread\",-1,null,0]]}"),
		     "timeline sample 0: node 7 of 1");
	expect_error(TL_PROC("{\"nodes\":[[\"a\",\"thread\",-1,null,0]],\"samples\":[[1,600000000000000,1,0,0],"
			     "[2,600000000000000,1,0,0]]}"),
		     "timeline sample 1: the samples add up to more than 1000000000000000 us");
	expect_error(TL_PROC("{\"nodes\":[]}"), "a timeline needs 'nodes' and 'samples' arrays");
	expect_error(TL_PROC("[]"), "'timeline' is not an object");
	buf_release(&out);
	buf_release(&err);
#undef TL_PROC
}

/* What the model holds beyond the file's ranges (importtime clamps to INT64_MAX) is written clamped. */
static void test_writer_clamps(void **state)
{
	struct profile p, q;
	struct buf json = BUF_INIT, err = BUF_INIT;
	struct run *r;
	struct proc *pr;

	(void)state;
	profile_init(&p);
	r = profile_add_run(&p);
	r->wall_us = INT64_MAX;
	r->maxrss_kb = INT64_MIN;
	pr = run_add_proc(r);
	add(pr, -1, "huge", INT64_MAX, INT64_MIN);
	proc_ensure_timing(pr);
	pr->timing[0].start_ns = INT64_MIN;
	pr->timing[0].rss_end_kb = INT64_MAX;
	profile_to_json(&p, &json);
	profile_init(&q);
	if (profile_from_json(&q, json.buf, json.len, &err) < 0)
		fail_msg("the writer wrote what the reader refuses: %s", err.buf);
	assert_int_equal(q.runs[0].wall_us, PROFILE_MAX_US);
	assert_int_equal(q.runs[0].maxrss_kb, -1);
	assert_int_equal(q.runs[0].procs[0].nodes[0].self_us, PROFILE_MAX_US);
	assert_int_equal(q.runs[0].procs[0].nodes[0].cum_us, -PROFILE_MAX_US);
	assert_int_equal(q.runs[0].procs[0].timing[0].start_ns, -PROFILE_MAX_NS);
	assert_int_equal(q.runs[0].procs[0].timing[0].rss_end_kb, PROFILE_MAX_KB);
	profile_release(&p);
	profile_release(&q);
	buf_release(&json);
	buf_release(&err);
}

/*
 * A Latin-1 path is written as valid UTF-8 (each stray byte as \xHH), the
 * count of such bytes is kept and turned into a warning when read back.
 */
static void test_non_utf8_strings(void **state)
{
	struct profile p, q;
	struct buf json = BUF_INIT, err = BUF_INIT;
	struct proc *pr;
	size_t i, len;

	(void)state;
	profile_init(&p);
	strvec_push(&p.target, "/tmp/caf\xe9/app.py");
	p.cwd = xstrdup("/tmp/caf\xc3\xa9"); /* UTF-8 stays as it is */
	pr = run_add_proc(profile_add_run(&p));
	pr->argv = xstrdup("python3 arg\xff");
	add(pr, -1, "m\xe9t\xe9o", 1, 1);
	profile_to_json(&p, &json);
	for (i = 0; i < json.len; i += len) {
		len = utf8_seq_len((const unsigned char *)json.buf + i, json.len - i);
		assert_true(len > 0);
	}
	assert_non_null(strstr(json.buf, "\"/tmp/caf\\\\xe9/app.py\""));
	assert_non_null(strstr(json.buf, "\"/tmp/caf\xc3\xa9\""));
	assert_non_null(strstr(json.buf, "\"escaped_bytes\":4"));
	profile_init(&q);
	if (profile_from_json(&q, json.buf, json.len, &err) < 0)
		fail_msg("%s", err.buf);
	assert_string_equal(q.target.v[0], "/tmp/caf\\xe9/app.py");
	assert_string_equal(node_name(&q.runs[0].procs[0], 0), "m\\xe9t\\xe9o");
	assert_int_equal(q.nr_warnings, 1);
	assert_non_null(strstr(q.warnings[0].msg, "4 bytes that are not UTF-8"));
	profile_release(&p);
	profile_release(&q);
	buf_release(&json);
	buf_release(&err);
}

/*
 * Profiles written before the writer escaped stray bytes hold them raw; they
 * stay readable.  Surrogate escapes: pairs decode, Python's surrogateescape
 * (\udcXX) gives the byte back, other lone surrogates become U+FFFD, \u0000 '?'.
 */
static void test_legacy_and_escapes(void **state)
{
	struct profile p;

	(void)state;
	expect_ok(&p, HEAD "\"cwd\":\"/tmp/caf\xe9\",\"command\":\"\\ud83d\\ude00 \\udce9 \\ud800x \\u0000\","
			   "\"runs\":[]}");
	assert_string_equal(p.cwd, "/tmp/caf\xe9");
	assert_string_equal(p.command, "\xf0\x9f\x98\x80 \xe9 \xef\xbf\xbdx ?");
	profile_release(&p);
}

static void test_nesting_and_string_limits(void **state)
{
	struct buf text = BUF_INIT;
	size_t i;

	(void)state;
	buf_adds(&text, HEAD "\"runs\":[],\"x\":");
	for (i = 0; i < JR_MAX_DEPTH + 1; i++)
		buf_addch(&text, '[');
	expect_error(text.buf, "nested deeper than 256");
	buf_reset(&text);
	buf_adds(&text, HEAD "\"runs\":[],\"x\":\"");
	buf_grow(&text, JR_MAX_STRING + 2);
	memset(text.buf + text.len, 'a', JR_MAX_STRING + 1);
	buf_setlen(&text, text.len + JR_MAX_STRING + 1);
	buf_adds(&text, "\"}");
	expect_error(text.buf, "a string longer than 16 MiB");
	buf_reset(&text);
	buf_adds(&text, HEAD "\"runs\":[],\"x\":1");
	for (i = 0; i < JR_MAX_NUMBER; i++)
		buf_addch(&text, '0');
	buf_addch(&text, '}');
	expect_error(text.buf, "a number longer than 512 characters");
	buf_release(&text);
}

/* The model's memory is bounded by COLDSTART_MAX_PROFILE_SIZE, whatever the file's size. */
static void test_memory_limit(void **state)
{
	struct buf text = BUF_INIT;
	size_t i;

	(void)state;
	buf_adds(&text, HEAD "\"runs\":[{\"processes\":[{\"nodes\":[");
	for (i = 0; i < 100000; i++)
		buf_addf(&text, "%s[\"m%zu\",0,-1,1,1]", i ? "," : "", i);
	buf_adds(&text, "]}]}]}");
	setenv("COLDSTART_MAX_PROFILE_SIZE", "1m", 1);
	expect_error(text.buf, "the profile needs more than 1.0 MiB of memory, the limit");
	expect_error(text.buf, "(COLDSTART_MAX_PROFILE_SIZE raises it)");
	setenv("COLDSTART_MAX_PROFILE_SIZE", "fast", 1);
	expect_error(text.buf, "COLDSTART_MAX_PROFILE_SIZE='fast' is not a size");
	unsetenv("COLDSTART_MAX_PROFILE_SIZE");
	{
		struct profile p;

		expect_ok(&p, text.buf);
		assert_int_equal(p.runs[0].procs[0].nr_nodes, 100000);
		profile_release(&p);
	}
	buf_release(&text);
}

/*
 * A gzip bomb: 64 MiB of zeros in a 64 KiB file.  Read with a 1 MiB limit it
 * stops at the limit; the default limit reads it through a stream and fails
 * on the first byte without holding the text.
 */
static void test_gzip_bomb(void **state)
{
	char path[] = "/tmp/coldstart-test-bomb-XXXXXX.json.gz";
	char *zeros = xcalloc(1, 1 << 20);
	struct profile p;
	struct buf err = BUF_INIT;
	gzFile gz;
	int fd, i;

	(void)state;
	fd = mkstemps(path, 8);
	assert_true(fd >= 0);
	gz = gzdopen(fd, "wb9");
	for (i = 0; i < 64; i++)
		assert_int_equal(gzwrite(gz, zeros, 1 << 20), 1 << 20);
	assert_int_equal(gzclose(gz), Z_OK);

	profile_init(&p);
	setenv("COLDSTART_MAX_PROFILE_SIZE", "1m", 1);
	assert_int_equal(profile_read_json(&p, path, &err), -1);
	unsetenv("COLDSTART_MAX_PROFILE_SIZE");
	profile_release(&p);
	/* Zero bytes are not JSON: the reader stops at the first one. */
	assert_non_null(strstr(err.buf, "byte 0x00 where a value was expected at line 1 column 1"));

	buf_reset(&err);
	gz = gzopen(path, "wb9");
	gzputs(gz, HEAD "\"runs\":[],\"x\":\"");
	for (i = 0; i < 8; i++) {
		memset(zeros, 'a', 1 << 20);
		gzwrite(gz, zeros, 1 << 20);
	}
	gzputs(gz, "\"}");
	assert_int_equal(gzclose(gz), Z_OK);
	profile_init(&p);
	setenv("COLDSTART_MAX_PROFILE_SIZE", "1m", 1);
	assert_int_equal(profile_read_json(&p, path, &err), -1);
	unsetenv("COLDSTART_MAX_PROFILE_SIZE");
	profile_release(&p);
	assert_non_null(strstr(err.buf, "more than 1.0 MiB of text (after decompression), the limit"));
	assert_non_null(strstr(err.buf, "COLDSTART_MAX_PROFILE_SIZE raises it"));
	assert_true(starts_with(err.buf, "cannot read '/tmp/coldstart-test-bomb-"));

	buf_reset(&err);
	profile_init(&p);
	assert_int_equal(profile_read_json(&p, "/nonexistent/x.json", &err), -1);
	assert_string_equal(err.buf, "cannot read '/nonexistent/x.json': No such file or directory");
	profile_release(&p);
	unlink(path);
	free(zeros);
	buf_release(&err);
}

/* The reader and a whole-text read agree on every chunk boundary (tokens cut across chunks). */
static long read_small(void *ctx, char *buf, size_t len, struct buf *err)
{
	const char **text = ctx;
	size_t n = strlen(*text);

	(void)err;
	if (n > 3)
		n = 3;
	if (n > len)
		n = len;
	memcpy(buf, *text, n);
	*text += n;
	return (long)n;
}

static void test_chunk_boundaries(void **state)
{
	const char *doc = "{\"a\" : [ -12345678901234567890, 1.5e3, \"x\\u00e9\\ud83d\\ude00y\", true, false, null,"
			  " {\"k\":[]}, 9223372036854775807 ]\n}";
	const char *src = doc;
	struct jr r;
	int more;

	(void)state;
	jr_init(&r, read_small, &src);
	assert_int_equal(jr_value(&r), JR_OBJ);
	assert_int_equal(jr_obj_next(&r), 1);
	assert_string_equal(r.key.buf, "a");
	assert_int_equal(jr_value(&r), JR_ARR);
	assert_int_equal(jr_arr_next(&r), 1);
	assert_int_equal(jr_value(&r), JR_REAL);
	assert_true(r.d < -1.2e19);
	assert_int_equal(jr_arr_next(&r), 1);
	assert_int_equal(jr_value(&r), JR_REAL);
	assert_true(r.d == 1500.0);
	assert_int_equal(jr_arr_next(&r), 1);
	assert_int_equal(jr_value(&r), JR_STR);
	assert_string_equal(r.str.buf, "x\xc3\xa9\xf0\x9f\x98\x80y");
	assert_int_equal(jr_arr_next(&r), 1);
	assert_int_equal(jr_value(&r), JR_TRUE);
	assert_int_equal(jr_arr_next(&r), 1);
	assert_int_equal(jr_value(&r), JR_FALSE);
	assert_int_equal(jr_arr_next(&r), 1);
	assert_int_equal(jr_value(&r), JR_NULL);
	assert_int_equal(jr_arr_next(&r), 1);
	{
		struct buf copy = BUF_INIT;
		bool cut;

		assert_int_equal(jr_copy_value(&r, &copy, 100, &cut), 0);
		assert_string_equal(copy.buf, "{\"k\":[]}");
		assert_false(cut);
		buf_release(&copy);
	}
	assert_int_equal(jr_arr_next(&r), 1);
	assert_int_equal(jr_value(&r), JR_INT);
	assert_true(r.i == INT64_MAX);
	more = jr_arr_next(&r);
	assert_int_equal(more, 0);
	assert_int_equal(jr_obj_next(&r), 0);
	assert_int_equal(jr_finish(&r), 0);
	jr_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_keys_in_any_order),
		cmocka_unit_test(test_errors_say_where),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_timeline),
		cmocka_unit_test(test_writer_clamps),
		cmocka_unit_test(test_non_utf8_strings),
		cmocka_unit_test(test_legacy_and_escapes),
		cmocka_unit_test(test_nesting_and_string_limits),
		cmocka_unit_test(test_memory_limit),
		cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_chunk_boundaries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
