/*
 * Data-parallel loops over index ranges for the passes that touch every node
 * of a big profile (classification, the consistency check, JSON formatting).
 * Small inputs and one-CPU machines run on the calling thread alone.
 */
#ifndef COLDSTART_PARALLEL_H
#define COLDSTART_PARALLEL_H

#include <pthread.h>
#include <stddef.h>

/* Most ranges a loop is split into (slots 0 .. PARALLEL_MAX - 1). */
#define PARALLEL_MAX 8

/*
 * Called once per range [begin, end) with the range's slot; slot 0 runs on
 * the calling thread, and ranges are consecutive in slot order.  fn must only
 * write what belongs to its range or its slot.
 */
typedef void (*parallel_fn)(void *ctx, size_t begin, size_t end, unsigned slot);

/*
 * How many threads the work may use: the CPUs this process may run on, or
 * COLDSTART_THREADS (1 turns threads off), at most PARALLEL_MAX.
 */
unsigned parallel_cpus(void);

/*
 * How many ranges a loop over n items with at least min_per_range items per
 * range is split into: 1 below that size, else up to parallel_cpus().
 */
unsigned parallel_ranges(size_t n, size_t min_per_range);

/*
 * Starts fn(arg) on a new thread with every signal blocked in it, so signals
 * keep reaching the calling thread (the run loop's self-pipe handlers).
 * Returns 0, or -1 when no thread could be started.
 */
int parallel_start(pthread_t *thread, void *(*fn)(void *), void *arg);

/*
 * Runs fn over [0, n) split into nr ranges (from parallel_ranges) and waits
 * for all of them.  When a thread cannot be started its range runs on the
 * calling thread, so the work is always done.  Returns when every range is.
 */
void parallel_for(size_t n, unsigned nr, parallel_fn fn, void *ctx);

#endif
