// corpus: tests/fixtures/trace
/*
 * libFuzzer target for the trace reader and the attribution of the shared
 * stderr: the input is a trace file, then (after a "\n\x01\n" line) the
 * target's stderr.  The trace is parsed whole and fed in pieces (the same
 * tree either way), then written where the stream reads it live while the
 * stderr is fed in chunks; every node must sit in one tree, and a stderr
 * with no "import time:" in it must pass through byte for byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_read.h"
#include "trace_stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void check_tree(const struct proc *pr)
{
	size_t seen = 0;
	int32_t i;

	for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i))
		if (++seen > pr->nr_nodes)
			abort();
	if (seen != pr->nr_nodes)
		abort();
}

static void check_pieces(const char *text, size_t len)
{
	struct trace_proc whole, pieces;
	struct buf err = BUF_INIT, held = BUF_INIT;
	size_t off = 0, step = 1;
	int a = trace_parse(&whole, text, len, &err);
	long used;

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *sep = memmem(text, size, "\n\x01\n", 3);
	size_t tlen = sep ? (size_t)(sep - text) + 1 : size;
	const char *stream = sep ? sep + 3 : text + size;
	size_t slen = (size_t)(text + size - stream), off = 0, k;
	struct trace_stream *ts;
	struct buf pass = BUF_INIT, path = BUF_INIT;
	struct profile p;
	struct run *run;
	FILE *f;

	check_pieces(text, tlen);
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
	return 0;
}
