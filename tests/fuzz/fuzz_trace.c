// corpus: tests/fixtures/trace
/*
 * libFuzzer target for the trace-file reader and the merge: the input is one
 * process's trace file.  It is read on its own, merged into nothing and into
 * the importtime tree of a real run (tests/fixtures/trace/sidefx-311), and
 * the profile that results is analysed, written as JSON and read back.
 * Every tree must stay one tree (each node reached once, links that agree)
 * and what the writer writes the reader must take.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "fuzz_check.h"
#include "importtime.h"
#include "trace.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct buf importtime_log;

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_proc tp;
	struct buf err = BUF_INIT;
	struct profile p;
	struct it_parser *ps;
	struct proc empty;
	struct run *run;
	size_t i;

	memset(&tp, 0, sizeof(tp));
	if (trace_parse(&tp, (const char *)data, size, &err) < 0) {
		if (!err.len)
			abort();
		trace_proc_release(&tp);
		buf_release(&err);
		return 0;
	}
	check_tree(&tp.proc);

	/* Into an empty process: every node is trace-only. */
	proc_init(&empty);
	trace_merge(&empty, &tp);
	check_tree(&empty);
	proc_release(&empty);

	/* Into a real run's importtime tree, the way a profile is made. */
	profile_init(&p);
	run = profile_add_run(&p);
	ps = it_parser_new(run);
	it_feed(ps, importtime_log.buf, importtime_log.len, NULL);
	it_finish(ps, NULL);
	it_parser_free(ps);
	trace_merge_run(&p, run, &tp, 1);
	for (i = 0; i < run->nr_procs; i++)
		check_tree(&run->procs[i]);
	profile_analyze(&p, NULL);
	check_round_trip(&p);
	profile_release(&p);
	trace_proc_release(&tp);
	buf_release(&err);
	return 0;
}
