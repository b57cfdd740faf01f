/*
 * The resource limits a run is measured under, as the user gives them
 * (--cpus, --memory, --swap, --pids, --cpuset, --preset): parsing, the
 * checks across options, presets, and the one-line description reports
 * print.  Pure: nothing here touches the system.  cgroup.c applies limits
 * to a local run, docker.c turns them into the engine's flags.
 */
#ifndef COLDSTART_RUNLIMITS_H
#define COLDSTART_RUNLIMITS_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/* The CFS period a CPU limit is expressed in, as docker's --cpus does. */
#define LIMITS_CPU_PERIOD_US 100000
/* The kernel refuses a CPU quota below 1 ms per period. */
#define LIMITS_CPU_MIN_QUOTA_US 1000
#define LIMITS_MEMORY_MIN (4LL * 1024 * 1024)
#define LIMITS_PIDS_MAX 4194304L
/* AWS Lambda gives one full vCPU at 1769 MB of memory. */
#define LIMITS_LAMBDA_MB_PER_CPU 1769.0

struct limits {
	double cpus; /* 0 = none */
	int64_t memory; /* bytes, 0 = none */
	int64_t swap; /* bytes beyond memory; -1 = unlimited */
	long pids; /* 0 = none */
	char *cpuset; /* NULL = none */
	char *preset; /* NULL, "fn", "lambda:MB" */
	char *backend; /* what applied them: "cgroup-v1", "cgroup-v2", "docker", "podman"; NULL */
};

/* Frees the strings of a limits struct (NULLs them: the struct can be reused). */
void limits_release(struct limits *lim);

/*
 * Parse one option's value into lim: --cpus, --memory, --swap, --pids,
 * --cpuset, --preset.  Each returns 0, or -1 with a message in err that
 * quotes the value ("invalid --cpus '0.001': the smallest CPU limit is 0.01").
 * A later option overrides what a preset set.
 */
int limits_set_cpus(struct limits *lim, const char *s, struct buf *err);
int limits_set_memory(struct limits *lim, const char *s, struct buf *err);
int limits_set_swap(struct limits *lim, const char *s, struct buf *err);
int limits_set_pids(struct limits *lim, const char *s, struct buf *err);
int limits_set_cpuset(struct limits *lim, const char *s, struct buf *err);
/* "fn" = 0.1 CPU + 128 MiB; "lambda:MB" = MB/1769 CPUs + MB MiB. */
int limits_set_preset(struct limits *lim, const char *s, struct buf *err);
/* The setter of the option named option ("cpus", "memory", ... without "--"). */
int limits_set(struct limits *lim, const char *option, const char *value, struct buf *err);
/*
 * Applies a compare --limits SET: "none" (clears lim), or a comma-separated
 * list of NAME=VALUE (cpus, memory, swap, pids, cpuset, preset) on top of
 * what lim holds, then limits_check.  0, or -1 with a message in err that
 * quotes the set.
 */
int limits_apply_set(struct limits *lim, const char *set, struct buf *err);
/* Records what applied the limits (a copy of backend). */
void limits_set_backend(struct limits *lim, const char *backend);

/*
 * Checks the options together once all are parsed (--swap needs --memory);
 * 0, or -1 with a message in err: a usage error.
 */
int limits_check(const struct limits *lim, struct buf *err);
bool limits_any(const struct limits *lim);
/* The CPU quota in microseconds per LIMITS_CPU_PERIOD_US; 0 without --cpus. */
int64_t limits_cpu_quota_us(const struct limits *lim);
/*
 * Appends the limits as reports show them: "0.1 CPU, 128.0 MiB memory
 * (preset fn) via cgroup-v1"; swap only when it is not the default (none
 * beyond memory); "no limits" when there are none.
 */
void limits_describe(const struct limits *lim, struct buf *out);

#endif
