/*
 * Measuring a target: the shared options of `profile` and `docker`, and the
 * exit status of a measured profile (see measure.h).
 */
#include "measure.h"

#include <signal.h>
#include <string.h>

#include "builtin.h"
#include "runlimits.h"

/* --cpus, --memory, ...: the limit the option is named after. */
static int set_limit(const struct opt *opt, const char *v, struct buf *err)
{
	return limits_set(opt->value, opt->long_name, v, err);
}

int profile_exit_status(const struct profile *p, bool ready, bool passthrough)
{
	const struct run *worst = NULL;
	size_t i;

	for (i = 0; i < p->nr_runs; i++) {
		const struct run *r = &p->runs[i];

		if ((r->status == RUN_EXITED && !r->exit_code) || r->status == RUN_STOPPED)
			continue;
		worst = r;
		break;
	}
	if (ready)
		for (i = 0; i < p->nr_runs; i++)
			if (p->runs[i].ready_us == UNKNOWN && p->runs[i].status != RUN_OOM &&
			    p->runs[i].status != RUN_TIMEOUT)
				return EXIT_NOT_READY;
	if (!worst)
		return EXIT_OK;
	if (passthrough)
		return worst->status == RUN_EXITED ? worst->exit_code
		       : worst->status == RUN_SIGNALED ? 128 + worst->term_signal
		       : worst->status == RUN_OOM ? 128 + SIGKILL : 124;
	switch (worst->status) {
	case RUN_EXITED: return EXIT_TARGET_FAILED;
	case RUN_SIGNALED: return EXIT_TARGET_SIGNALED;
	case RUN_OOM: return EXIT_TARGET_OOM;
	case RUN_TIMEOUT: return EXIT_TARGET_TIMEOUT;
	default: return EXIT_FAIL;
	}
}

void measure_opts_init(struct measure_opts *m)
{
	struct limits *lim = &m->limits;

	memset(m, 0, sizeof(*m));
	m->runs = 1;
	m->ready_timeout_us = 60 * 1000000LL;
	{
		const struct opt table[] = {
			OPT_BOOL("no-trace", 0, &m->no_trace, "importtime only: do not load the in-process tracer"),
			OPT_BOOL("quiet", 'q', &m->quiet, "do not forward the target's stderr"),
			OPT_INT("runs", 'n', &m->runs, 1, 10000, "N", "measure N runs and report medians and spreads"),
			OPT_INT("warmup", 0, &m->warmup, 0, 10000, "N",
				"unmeasured runs before the measured ones (page cache, .pyc)"),
			OPT_SECONDS("timeout", 0, &m->timeout_us, 86400 * 365, "kill the target and all it started after SECONDS"),
			OPT_CALLBACK("cpus", 0, lim, set_limit, "F", "CPU limit in CPUs, e.g. 0.1"),
			OPT_CALLBACK("memory", 0, lim, set_limit, "SIZE", "memory limit, e.g. 128m, 1g"),
			OPT_CALLBACK("swap", 0, lim, set_limit, "SIZE",
				     "swap allowed beyond --memory (default 0, as docker's memory = memory-swap)"),
			OPT_CALLBACK("pids", 0, lim, set_limit, "N", "process count limit"),
			OPT_CALLBACK("cpuset", 0, lim, set_limit, "LIST", "CPUs to run on, e.g. 0 or 0-1"),
			OPT_CALLBACK("preset", 0, lim, set_limit, "NAME",
				     "fn (0.1 CPU, 128 MiB) or lambda:MB (MB/1769 CPUs, MB MiB)"),
			OPT_BOOL("no-limits", 0, &m->no_limits, "ignore limit options and presets (run unconstrained)"),
			OPT_STRING("ready", 0, &m->ready, "SPEC",
				   "measure readiness: fn, tcp:PORT, http://127.0.0.1:PORT/path, unix:PATH"),
			OPT_SECONDS("ready-timeout", 0, &m->ready_timeout_us, 86400,
				    "give up waiting for readiness (default 60)"),
			OPT_BOOL("exit-code", 0, &m->passthrough_exit,
				 "exit with the target's own status instead of coldstart's codes"),
			OPT_END(),
		};

		_Static_assert(sizeof(table) == sizeof(m->options), "measure_opts.options holds the table");
		memcpy(m->options, table, sizeof(table));
	}
}

void measure_opts_release(struct measure_opts *m)
{
	limits_release(&m->limits);
	memset(&m->limits, 0, sizeof(m->limits));
}

int measure_opts_finish(struct measure_opts *m, struct limits *out, struct buf *err)
{
	if (m->no_limits) {
		limits_release(&m->limits);
		memset(&m->limits, 0, sizeof(m->limits));
	} else if (limits_check(&m->limits, err) < 0) {
		return -1;
	}
	*out = m->limits;
	memset(&m->limits, 0, sizeof(m->limits));
	return 0;
}
