// corpus: tests/fixtures/trace
/*
 * libFuzzer target for the trace reader, the merge and the attribution of
 * the shared stderr: the input is a trace file, then (after a "\n\x01\n"
 * line) the target's stderr.  The trace is parsed whole and fed in pieces
 * (the same tree either way); merged into nothing and into the importtime
 * tree of a real run (tests/fixtures/trace/sidefx-311), and the profile
 * that results analysed, written as JSON and read back; then written where
 * the stream reads it live while the stderr is fed in chunks.  Every tree
 * must stay one tree (each node reached once, links that agree), what the
 * writer writes the reader must take, and a stderr with no "import time:"
 * in it must pass through byte for byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analyze.h"
#include "fuzz_check.h"
#include "ingest/importtime.h"
#include "ingest/trace_merge.h"
#include "ingest/trace_read.h"
#include "ingest/trace_stream.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct buf importtime_log;
static char dir[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("COLDSTART_THREADS", "1", 1);
	if (buf_read_file(&importtime_log, "tests/fixtures/trace/sidefx-311.importtime") < 0) {
		fprintf(stderr, "fuzz_trace: run from the repository root (tests/fuzz/run.sh does)\n");
		exit(1);
	}
	return 0;
}

/* The trace fed in growing pieces must give the tree the whole text gives. */
static void check_pieces(const char *text, size_t len)
{
	struct trace_proc whole, pieces;
	struct buf err = BUF_INIT, held = BUF_INIT;
	size_t off = 0, step = 1;
	int a = trace_parse(&whole, text, len, &err);
	long used;

	if (a < 0 && !err.len)
		abort();
	trace_proc_init(&pieces);
	while (off < len) {
		size_t n = len - off < step ? len - off : step;

		buf_add(&held, text + off, n);
		off += n;
		step = step * 3 + 1;
		used = trace_proc_feed(&pieces, held.buf, held.len, &err);
		if (used < 0)
			break;
		memmove(held.buf, held.buf + used, held.len - (size_t)used);
		buf_setlen(&held, held.len - (size_t)used);
	}
	if (trace_proc_finish(&pieces, &err) == 0 && a == 0) {
		if (pieces.proc.nr_nodes != whole.proc.nr_nodes)
			abort();
		check_tree(&pieces.proc);
	}
	if (a == 0)
		check_tree(&whole.proc);
	trace_proc_release(&whole);
	trace_proc_release(&pieces);
	buf_release(&err);
	buf_release(&held);
}

/* Into an empty process, and into a real run's importtime tree the way a profile is made. */
static void check_merge(const char *text, size_t len)
{
	struct trace_proc tp;
	struct buf err = BUF_INIT;
	struct profile p;
	struct it_parser *ps;
	struct proc empty;
	struct run *run;

	if (trace_parse(&tp, text, len, &err) < 0) {
		trace_proc_release(&tp);
		buf_release(&err);
		return;
	}
	proc_init(&empty);
	trace_merge(&empty, &tp, NULL);
	check_tree(&empty);
	proc_release(&empty);

	profile_init(&p);
	run = profile_add_run(&p);
	ps = it_parser_new(run);
	it_feed(ps, importtime_log.buf, importtime_log.len, NULL);
	it_finish(ps, NULL);
	it_parser_free(ps);
	if (run->nr_procs) {
		trace_merge(&run->procs[0], &tp, NULL);
		check_tree(&run->procs[0]);
	}
	profile_analyze_offline(&p, NULL);
	check_round_trip(&p);
	profile_release(&p);
	trace_proc_release(&tp);
	buf_release(&err);
}

/* The trace written where the stream reads it, the stderr fed beside it. */
static void check_stream(const char *text, size_t tlen, const char *stream, size_t slen)
{
	struct trace_stream *ts;
	struct buf pass = BUF_INIT, path = BUF_INIT;
	struct profile p;
	struct run *run;
	size_t off = 0, k;
	FILE *f;

	if (!*dir) {
		snprintf(dir, sizeof(dir), "/tmp/coldstart-fuzz-trace-%ld", (long)getpid());
		mkdir(dir, 0700);
	}
	buf_addf(&path, "%s/1-0.trace", dir);
	f = fopen(path.buf, "w");
	if (f) {
		fwrite(text, 1, tlen, f);
		fclose(f);
	}
	ts = trace_stream_new(dir);
	profile_init(&p);
	run = profile_add_run(&p);
	while (off < slen) {
		size_t n = (slen - off) % 97 + 1;

		if (n > slen - off)
			n = slen - off;
		trace_stream_feed(ts, stream + off, n, &pass);
		off += n;
	}
	trace_stream_end(ts, &pass);
	trace_stream_collect(ts, &p, run);
	for (k = 0; k < run->nr_procs; k++)
		check_tree(&run->procs[k]);
	if (!memmem(stream, slen, "import time:", 12) && (pass.len != slen || memcmp(pass.buf, stream, slen)))
		abort();
	trace_stream_free(ts);
	profile_release(&p);
	unlink(path.buf);
	buf_release(&pass);
	buf_release(&path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *sep = memmem(text, size, "\n\x01\n", 3);
	size_t tlen = sep ? (size_t)(sep - text) + 1 : size;
	const char *stream = sep ? sep + 3 : text + size;

	check_pieces(text, tlen);
	check_merge(text, tlen);
	check_stream(text, tlen, stream, (size_t)(text + size - stream));
	return 0;
}
