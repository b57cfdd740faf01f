/*
 * The reader of one samples file of the start-up sampler
 * (python/coldstart/_sampler.c; the format is the "Samples" section of
 * docs/trace-format.md): which Python frames each thread of one process was
 * running, every interval, from the sampler's start to the interpreter's
 * finalisation.  It never prints.
 */
#ifndef COLDSTART_SAMPLES_H
#define COLDSTART_SAMPLES_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/* Thread numbers count the threads a process started; beyond this a record is taken as damaged. */
#define SAMPLES_MAX_THREAD 65536

/* A code object as the sampler first saw it: names are pool offsets. */
struct sf_code {
	uint32_t name; /* co_qualname on 3.11+, co_name before */
	uint32_t file; /* co_filename */
	int32_t line; /* co_firstlineno */
};

/* One frame of a sample. */
struct sf_frame {
	uint32_t code; /* index into codes; 0 is "?" (an id the file never defined) */
	uint32_t module; /* for importlib's _find_and_load: the module being imported (pool), else 0 */
};

struct sf_sample {
	int64_t t_ns; /* CLOCK_MONOTONIC */
	int64_t cpu_ns; /* the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) */
	int64_t wait_ns; /* the main thread's time waiting for a CPU so far (schedstat); UNKNOWN */
	int32_t thread; /* 1 = the main thread (the one that started the sampler, or forked) */
	uint32_t first; /* frames[first .. first + nr), innermost first */
	uint32_t nr;
	bool truncated; /* deeper than the sampler walks: the outermost frames are missing */
};

struct samples_file {
	long pid, ppid;
	int64_t start_ns; /* when sampling started (H) */
	int64_t interval_us;
	int64_t start_thread_cpu_ns; /* CPU time of the main thread when sampling started */
	int64_t start_proc_cpu_ns; /* and of the process */
	int64_t start_wait_ns; /* the main thread's time waiting for a CPU until then; UNKNOWN */
	char version[32]; /* the interpreter's */
	bool forked; /* an os.fork() child: sampling began at the fork (else at interpreter start-up) */
	int64_t final_ns; /* the interpreter began finalising (F); UNKNOWN */
	int64_t end_ns; /* the file was closed (Q); UNKNOWN when the process died first */
	int64_t end_proc_cpu_ns; /* the process's CPU time at Q; UNKNOWN */
	uint64_t dropped; /* samples the sampler did not take (Q) */
	uint64_t faults; /* samples abandoned after a fault (Q) */
	struct sf_code *codes; /* by id; codes[0] is "?" */
	size_t nr_codes, alloc_codes;
	struct sf_sample *samples; /* in file order: by time on each thread */
	size_t nr_samples, alloc_samples;
	struct sf_frame *frames;
	size_t nr_frames, alloc_frames;
	struct buf pool; /* NUL-separated strings; offset 0 is "" */
	size_t bad_records; /* malformed lines skipped */
};

static inline const char *samples_str(const struct samples_file *sf, uint32_t off)
{
	return sf->pool.buf + off;
}

void samples_init(struct samples_file *sf);
/*
 * Parses a samples file's text (up to the first NUL byte; a last line without
 * newline is ignored: the process was writing it).  Returns 0, or -1 with a
 * message in err when the text is not a samples file.  Malformed records are
 * skipped and counted.  Release sf even after an error.
 */
int samples_parse(struct samples_file *sf, const char *text, size_t len, struct buf *err);
/* Reads and parses one file; -1 with "cannot read 'x': ..." in err. */
int samples_read_file(struct samples_file *sf, const char *path, struct buf *err);
void samples_release(struct samples_file *sf);

#endif
