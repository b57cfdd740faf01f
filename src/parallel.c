/*
 * parallel_for: one POSIX thread per extra range, started by parallel_start
 * with signals blocked, so the run loop's handlers keep running on the main
 * thread.
 */
#include "parallel.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

struct range_job {
	parallel_fn fn;
	void *ctx;
	size_t begin, end;
	unsigned slot;
	pthread_t thread;
	int started;
};

static void *range_main(void *arg)
{
	struct range_job *job = arg;

	job->fn(job->ctx, job->begin, job->end, job->slot);
	return NULL;
}

unsigned parallel_cpus(void)
{
	const char *env = getenv("COLDSTART_THREADS");
	cpu_set_t set;
	long cpus;

	if (env && *env)
		cpus = strtol(env, NULL, 10);
	else if (!sched_getaffinity(0, sizeof(set), &set))
		cpus = CPU_COUNT(&set); /* what taskset or a cpuset leaves us */
	else
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1)
		cpus = 1;
	return cpus > PARALLEL_MAX ? PARALLEL_MAX : (unsigned)cpus;
}

unsigned parallel_ranges(size_t n, size_t min_per_range)
{
	size_t nr = min_per_range ? n / min_per_range : n, cpus = parallel_cpus();

	if (nr > cpus)
		nr = cpus;
	return nr ? (unsigned)nr : 1;
}

int parallel_start(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err ? -1 : 0;
}

void parallel_for(size_t n, unsigned nr, parallel_fn fn, void *ctx)
{
	struct range_job jobs[PARALLEL_MAX];
	unsigned i;

	if (nr < 1)
		nr = 1;
	if (nr > PARALLEL_MAX)
		nr = PARALLEL_MAX;
	for (i = 0; i < nr; i++) {
		jobs[i].fn = fn;
		jobs[i].ctx = ctx;
		jobs[i].begin = n / nr * i;
		jobs[i].end = i + 1 == nr ? n : n / nr * (i + 1);
		jobs[i].slot = i;
		jobs[i].started = 0;
	}
	for (i = 1; i < nr; i++)
		jobs[i].started = !parallel_start(&jobs[i].thread, range_main, &jobs[i]);
	fn(ctx, jobs[0].begin, jobs[0].end, 0);
	for (i = 1; i < nr; i++) {
		if (jobs[i].started)
			pthread_join(jobs[i].thread, NULL);
		else
			fn(ctx, jobs[i].begin, jobs[i].end, i);
	}
}
