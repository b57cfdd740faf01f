/*
 * The start-up timeline of one process: what its threads ran from exec (or
 * the fork) until the timeline's end (readiness, the first response, or the
 * exit), as one call tree whose nodes are Python functions and the imports
 * they ran, with wall and CPU time per node, built from the sampler's
 * samples (samples.h) by ingest/timeline_build.h, and the samples
 * themselves in time order for the exports.  A process holds one through
 * struct proc's field timeline; this module does not use the profile.
 */
#ifndef COLDSTART_TIMELINE_H
#define COLDSTART_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/samples.h"
#include "util.h"

struct proc;
struct profile;
struct run;

enum tl_kind {
	TL_THREAD = 0, /* a root: one per sampled thread ("main thread", "thread 2") */
	TL_STARTUP, /* interpreter start-up: until sampling began, then the start-up imports (site) */
	TL_IMPORT, /* an import (importlib's _find_and_load), its module body included */
	TL_FUNC, /* a Python function */
	TL_SHUTDOWN, /* the interpreter's finalisation, after the last sample */
	TL_GC, /* "[gc]": the garbage collector's pauses (the tracer's), under what triggered them */
	TL__COUNT
};
const char *tl_kind_name(enum tl_kind k);
int tl_kind_from_name(const char *s);

/* Where a timeline ends. */
enum tl_end {
	TL_END_EXIT = 0, /* the process exited (finalisation included) */
	TL_END_READY, /* the target became ready (--ready) */
	TL_END_FIRST_RESPONSE, /* the first response was answered */
	TL_END_LAST_SAMPLE, /* the process died without finalising: its last sample */
	TL_END__COUNT
};
const char *tl_end_name(enum tl_end e);
int tl_end_from_name(const char *s);

struct tl_node {
	uint32_t name; /* pool: "package.module.Class.method", or the imported module */
	uint32_t file; /* pool: the function's file; 0 for other kinds */
	int32_t line; /* the function's first line; 0 */
	uint8_t kind;
	int32_t parent, first_child, last_child, next_sibling;
	/* Derived from the samples (timeline_sum). */
	int64_t self_us, cum_us; /* wall time */
	int64_t self_cpu_us, cum_cpu_us; /* the thread's CPU time */
	int64_t self_wait_us, cum_wait_us; /* of the wall time, waiting for a CPU (busy machine, CPU quota) */
	uint32_t samples; /* samples whose innermost node this is */
};

struct tl_sample {
	int64_t t_us; /* when it was taken, since the origin */
	int64_t wall_us; /* the interval it stands for, which ends at t_us */
	int64_t cpu_us; /* the thread's CPU time in that interval */
	int32_t node; /* the innermost node */
	int64_t wait_us; /* of wall_us, the main thread's time waiting for a CPU; 0 when unknown */
};

struct timeline {
	int64_t origin_ns; /* CLOCK_MONOTONIC of time 0: the process's start (exec, or the fork) */
	int64_t start_us; /* when sampling began */
	int64_t end_us; /* the end of the timeline */
	enum tl_end end;
	int64_t interval_us;
	uint64_t dropped; /* samples the sampler could not take */
	uint64_t faults; /* samples it abandoned */
	/* Nodes: each after its parent; a node's children in the order first seen. */
	struct tl_node *nodes;
	size_t nr_nodes, alloc_nodes;
	/* By time on each thread (threads interleaved); the wall_us of one thread's samples add up to its span. */
	struct tl_sample *samples;
	size_t nr_samples, alloc_samples;
	struct buf names; /* NUL-separated; offset 0 is "" */
	/* The pool's strings by content (timeline_intern), so equal names have equal offsets. */
	int32_t *name_slot;
	size_t name_cap, name_used;
};

static inline const char *tl_str(const struct timeline *tl, uint32_t off)
{
	return tl->names.buf + off;
}

/* The thread's root above node i. */
static inline int32_t tl_root_of(const struct timeline *tl, int32_t i)
{
	while (tl->nodes[i].parent >= 0)
		i = tl->nodes[i].parent;
	return i;
}

/* A node's identity (parent, kind, name, file, line) hashed, for sets of nodes or functions. */
static inline uint64_t tl_node_key(int32_t parent, uint8_t kind, uint32_t name, uint32_t file, int32_t line)
{
	uint64_t h = (uint64_t)(uint32_t)parent * 0x9E3779B97F4A7C15ull;

	h ^= ((uint64_t)name << 24 | kind) * 0xC2B2AE3D27D4EB4Full;
	h ^= ((uint64_t)file << 20 ^ (uint32_t)line) * 0x165667B19E3779F9ull;
	return h ^ (h >> 29);
}

void timeline_init(struct timeline *tl);
void timeline_release(struct timeline *tl);
void timeline_free(struct timeline *tl);

/*
 * The offset of s (len bytes, no NUL inside) in the timeline's pool, added
 * on first sight: equal strings have equal offsets (0 for "").
 */
uint32_t timeline_intern(struct timeline *tl, const char *s, size_t len);
/* Appends a node under parent (-1: a root). */
int32_t timeline_add_node(struct timeline *tl, int32_t parent, enum tl_kind kind, uint32_t name, uint32_t file,
			  int32_t line);
/* Recomputes every node's times and sample counts from the samples. */
void timeline_sum(struct timeline *tl);

/* The time to the timeline's end of the main thread, split by what ran. */
struct tl_split {
	int64_t total_us;
	int64_t startup_us; /* interpreter start-up */
	int64_t import_us; /* imports after start-up, their module bodies included */
	int64_t other_us; /* everything else the Python code did */
	int64_t shutdown_us; /* finalisation (only when the timeline ends at the exit) */
	int64_t gc_us; /* the garbage collector's pauses after start-up: in none of the three above */
	int64_t wait_us; /* of total_us, waiting for a CPU (a busy machine, a CPU quota's throttling) */
	/* The same in the main thread's CPU time; UNKNOWN where not measured. */
	int64_t total_cpu_us, startup_cpu_us, import_cpu_us, other_cpu_us, shutdown_cpu_us, gc_cpu_us;
};
void timeline_split(const struct timeline *tl, struct tl_split *sp);

/* A function's time outside imports, over every place it ran on the main thread. */
struct tl_func {
	uint32_t name; /* the timeline's pool */
	uint32_t file;
	int32_t line;
	/*
	 * Wall time less the time waiting for a CPU (which measures the machine
	 * or the quota, not the code): its calls outside imports, callees
	 * included, imports they ran excluded; and itself.
	 */
	int64_t total_us;
	int64_t self_us;
	int64_t total_cpu_us, self_cpu_us;
	int32_t node; /* its node with the most time, for the call chain */
};
/*
 * The functions that ran outside imports on the main thread, the costliest
 * first in wall time less waiting for a CPU, or with by_cpu in CPU time (see
 * timeline.c for the order).  Returns the number filled in out (at most max).
 */
size_t timeline_top_functions(const struct timeline *tl, bool by_cpu, struct tl_func *out, size_t max);
/*
 * Appends "a > b > c", the functions and imports from the thread's root to
 * node i; with max, only the last max of them, after "... > ".
 */
void timeline_chain(const struct timeline *tl, int32_t i, size_t max, struct buf *out);

/* Whether a frame's file is the standard library's: frozen, or under lib/python3 outside site-packages. */
bool timeline_stdlib_file(const char *file);

/*
 * JSON of the timeline (an object), appended to out; see
 * docs/profile-format.md.  Written with the profile (profile_json.c).
 */
void timeline_to_json(const struct timeline *tl, struct buf *out);
/*
 * Reads the JSON text of a timeline object (len bytes) into tl
 * (initialised), with the checks and limits of the profile's reader
 * (profile_read.c, which reads it inside a profile).  Returns 0, or -1 with
 * a message in err when it is not one (tl is then to be released).
 */
int timeline_from_json(struct timeline *tl, const char *text, size_t len, struct buf *err);

#endif
