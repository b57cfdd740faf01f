/*
 * The profile model: a profile holds runs, a run holds processes, a process
 * holds a tree of import nodes.  Everything coldstart measures lands here, and
 * every exporter and rule reads from here.
 */
#ifndef COLDSTART_PROFILE_H
#define COLDSTART_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "model/native.h"
#include "model/runlimits.h"
#include "model/timeline.h"
#include "util.h"

/* Version 2 lists a node before its parent (version 1, still read: after). */
#define PROFILE_FORMAT_VERSION 2

/*
 * The range of each kind of figure in a profile file: the writer clamps to
 * it and the reader refuses anything outside it (docs/profile-format.md,
 * "Limits"), so sums over a file's figures stay far from overflow and
 * saturate (util.h) where they could not.
 */
#define PROFILE_MAX_US INT64_C(1000000000000000) /* 10^15 us: 31 years */
#define PROFILE_MAX_NS INT64_C(1000000000000000000) /* 10^18 ns: 31 years */
#define PROFILE_MAX_KB (INT64_C(1) << 40) /* 1 PiB */
#define PROFILE_MAX_BYTES (INT64_C(1) << 60)
#define PROFILE_MAX_COUNT INT64_C(1000000000000000)

static inline int64_t profile_clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Node flags. */
#define NODE_CACHED (1u << 0) /* 3.14 -X importtime=2 "cached" row */
#define NODE_FAILED (1u << 1) /* the import raised (trace) */
#define NODE_STARTUP (1u << 2) /* interpreter start-up, before the target's code */
#define NODE_TRACE_ONLY (1u << 3) /* importtime printed no row for it */
#define NODE_INCONSISTENT (1u << 4) /* self != cum - sum(children cum) */
#define NODE_OPEN (1u << 5) /* started, never finished: the process died */
#define NODE_COMPILED (1u << 6) /* compiled from source at import */
#define NODE_NATIVE (1u << 7) /* an extension module (.so) */
#define NODE_NEGATIVE (1u << 8) /* importtime printed a negative number */
/*
 * "[gc]": no import but the garbage collector's pauses inside its parent's
 * own time (the tracer's G records), taken out of the parent's self time;
 * one per import that had any, its timing spanning their sum.
 */
#define NODE_GC (1u << 9)
#define GC_NODE_NAME "[gc]"

/* Whether node i is the garbage collector's pause, not an import. */
#define node_is_gc(pr, i) (((pr)->nodes[(i)].flags & NODE_GC) != 0)

enum node_kind {
	KIND_STARTUP = 0, /* encodings, site, .pth imports, sitecustomize */
	KIND_STDLIB,
	KIND_THIRDPARTY,
	KIND_APP,
	KIND_TOOL, /* coldstart's own bootstrap */
	KIND__COUNT
};
const char *kind_name(enum node_kind k);
int kind_from_name(const char *s);

/*
 * One import.  Strings are offsets into the owning process's name pool so a
 * million nodes stay compact.  Links are indexes into proc->nodes, -1 for none.
 * Children are kept in import order.
 */
struct imp_node {
	uint32_t name;
	uint32_t depth;
	int32_t parent;
	int32_t first_child;
	int32_t last_child;
	int32_t next_sibling;
	uint32_t flags;
	uint8_t kind;
	int64_t self_us;
	int64_t cum_us;
};

/* Tracer facts per node; a parallel array that exists only with a trace. */
struct imp_timing {
	int64_t start_ns; /* since the process's start_ns; UNKNOWN without */
	int64_t end_ns;
	int64_t find_ns; /* phase durations; UNKNOWN where not measured */
	int64_t load_ns;
	int64_t exec_ns;
	int64_t compile_ns;
	int64_t rss_start_kb;
	int64_t rss_end_kb;
	uint32_t file; /* name-pool offset of the module's file, 0 = none */
	/*
	 * The importing thread's CPU time from start to end, like cum_us
	 * (nested imports included; the tracer reads CLOCK_THREAD_CPUTIME_ID);
	 * UNKNOWN before the tracer started or where it did not run.
	 */
	int64_t cpu_ns;
};

/* An audit event seen by the tracer, attributed to the import running it. */
struct proc_event {
	int64_t t_ns; /* since the process's start_ns */
	uint32_t name; /* name-pool offsets */
	uint32_t detail;
	int32_t node; /* innermost open import, -1 at top level */
};

/*
 * A garbage collection the tracer recorded (a G record): what the timeline
 * needs to show the pauses as a phase of their own.  Not written to the
 * profile file: the "[gc]" nodes and the timeline carry what it means.
 */
struct gc_pause {
	int64_t start_ns; /* since the process's start_ns */
	int64_t dur_ns;
	long tid; /* the tracer's thread number (1: the first that recorded, normally the main thread) */
};

/* How a process came to be, as its trace says. */
enum proc_origin {
	ORIGIN_UNKNOWN = 0, /* importtime only */
	ORIGIN_EXEC, /* an interpreter of its own: its tree starts at its interpreter's start-up */
	ORIGIN_FORK, /* a fork of a traced process: its tree starts at the fork */
};
const char *proc_origin_name(enum proc_origin o);
int proc_origin_from_name(const char *s);

struct proc {
	long pid; /* -1 when unknown (importtime only) */
	long ppid;
	char *argv; /* space-joined, NULL when unknown */
	/* "main", "master", "worker", "fork", "subprocess", ... (trace_merge.c); NULL when unknown */
	char *role;
	enum proc_origin origin;
	/*
	 * Rows of several processes that could not be told apart ended up in
	 * this tree (importtime without the tracer); a warning names them.
	 */
	bool mixed;
	int64_t start_ns; /* absolute CLOCK_MONOTONIC (exec, or the fork), UNKNOWN without trace */
	int64_t end_ns; /* the last record of its trace */
	int64_t tracer_ns; /* when its tracer started (absolute); UNKNOWN */
	int64_t startup_cpu_ns; /* CPU time of its thread before the tracer started (exec'd: the start-up) */
	int64_t cpu_ns; /* CPU time of the whole process at a clean exit; UNKNOWN */
	struct imp_node *nodes;
	size_t nr_nodes, alloc_nodes;
	struct imp_timing *timing; /* NULL, or nr_nodes entries */
	struct proc_event *events;
	size_t nr_events, alloc_events;
	/*
	 * The files other than modules the process opened for reading (data:
	 * time zones, certificates, configuration), name-pool offsets of
	 * absolute paths, in the order read; what --cold evicts beside the
	 * modules (cold.h).  From the C tracer; not in the profile format.
	 */
	uint32_t *reads;
	size_t nr_reads, alloc_reads;
	/* In the order the tracer wrote them (each thread's in time order); none without the C tracer. */
	struct gc_pause *gc_pauses;
	size_t nr_gc_pauses, alloc_gc_pauses;
	int32_t first_root, last_root;
	/*
	 * Kept by the link functions: every node is linked, each before its
	 * parent in the array, and siblings (and roots) in array order.  The
	 * parser's trees are like that (a row follows the rows of what it
	 * imported), and the JSON writer then writes the array as it is.
	 */
	bool children_first;
	size_t nr_linked;
	/* NUL-separated strings; offset 0 is the empty string. */
	struct buf names;
	/* What its threads ran until the profile's end, with --timeline (timeline.h); NULL. Owned. */
	struct timeline *timeline;
};

/* Resource figures from a cgroup; has == false when no cgroup was used. */
struct cg_figures {
	bool has;
	int64_t cpu_usage_us;
	int64_t nr_periods;
	int64_t nr_throttled;
	int64_t throttled_us;
	int64_t memory_peak; /* bytes */
	int64_t oom_kills;
};

/*
 * The page-cache eviction before a run (--cold, cold.h); asked is false
 * for a run with a warm cache.  Bytes are counted over the files mincore
 * checked after the eviction (all of them up to COLD_CHECK_MAX).
 */
struct cold_figures {
	bool asked;
	bool partial; /* no run before: only the interpreter, its libraries and the script were known */
	int64_t files; /* files evicted */
	int64_t bytes; /* their size */
	int64_t failed; /* files that could not be opened or advised */
	int64_t checked_files;
	int64_t module_bytes; /* module files: sources, bytecode, extensions, the script */
	int64_t module_resident; /* of those, still in the page cache after the eviction */
	int64_t binary_bytes; /* the interpreter and shared libraries */
	int64_t binary_resident;
	/*
	 * Files another process maps (an extension or libc used by some other
	 * running Python): DONTNEED cannot drop pages in use, so they are
	 * counted here and in neither class above.
	 */
	int64_t mapped_files;
	int64_t mapped_bytes;
	int64_t mapped_resident;
	/*
	 * Files the run read that were not evicted before it: learnt from the
	 * run itself, after it (a module imported only now, by a child, or on
	 * a path this run took).  They may have come from the page cache, so
	 * a run with any is not cold.
	 */
	int64_t unevicted;
};

/* A run counts as cold when at most this share (percent) of its module bytes stayed cached. */
#define COLD_RESIDENT_MAX_PCT 5
/*
 * Whether the run was cold: every file it read was evicted before it
 * (none unevicted, none that could not be evicted) and the check found at
 * most COLD_RESIDENT_MAX_PCT of the module bytes still cached (cold.h says
 * why only module bytes decide).
 */
static inline bool cold_figures_took(const struct cold_figures *c)
{
	return c->asked && !c->partial && c->module_bytes > 0 && !c->unevicted && !c->failed &&
	       c->module_resident * 100 <= c->module_bytes * COLD_RESIDENT_MAX_PCT;
}

enum run_status {
	RUN_EXITED = 0, /* exit_code holds the code */
	RUN_SIGNALED, /* term_signal holds the signal */
	RUN_OOM, /* killed by the memory limit */
	RUN_TIMEOUT, /* killed by --timeout */
	RUN_STOPPED, /* stopped by coldstart after --ready was measured */
	RUN_NOT_RUN, /* parsed from a log: nothing is known */
};
const char *run_status_name(enum run_status s);
int run_status_from_name(const char *s);

struct run {
	enum run_status status;
	int exit_code;
	int term_signal;
	bool warmup; /* left out of statistics (warm-up and baseline runs) */
	bool baseline; /* the unconstrained reference run of a limited profile */
	int64_t wall_us;
	int64_t user_us;
	int64_t sys_us;
	int64_t maxrss_kb;
	int64_t ready_us; /* exec -> ready, UNKNOWN without --ready */
	int64_t first_response_us; /* ready -> first response (0 for http://: the answer is ready) */
	/* exec -> the first connection the target's listener accepted (tcp, http, unix); UNKNOWN. */
	int64_t listening_us;
	/* The moment of readiness on CLOCK_MONOTONIC, the clock of proc start_ns; UNKNOWN. */
	int64_t ready_ns;
	/*
	 * compare --requests: the requests sent one at a time once ready, and
	 * of those answered with an accepted status the latency (connect to
	 * the answer's last byte): its median and 95th percentile, UNKNOWN
	 * without.  Not in the profile format; compare's JSON carries them.
	 */
	size_t requests_asked, requests_ok;
	int64_t requests_median_us, requests_p95_us;
	/*
	 * exec -> the exec of the interpreter, where the command is a launcher
	 * that execs it in the same process (a pyenv shim): procs[0] then starts
	 * at the interpreter's exec; UNKNOWN otherwise or where not measured.
	 */
	int64_t launcher_us;
	struct cg_figures cg;
	struct cold_figures cold;
	struct proc *procs; /* procs[0] is the target's own process */
	size_t nr_procs, alloc_procs;
};

/* A warning attached to the profile, e.g. from the parser. */
struct pwarn {
	long line; /* 0 when not about a line */
	char *msg;
};

struct finding {
	char *id; /* stable rule id, e.g. "compiled-at-startup" */
	char *severity; /* "info", "warning", "error" */
	char *title;
	char *evidence;
	char *fix;
	char *module; /* NULL when not about one module */
	int64_t cost_us; /* UNKNOWN when not about time */
	/* The processes it holds in, the target's first; none when not about a process. */
	long *pids;
	size_t nr_pids;
};

struct profile {
	char *tool_version;
	char *created; /* ISO 8601 UTC */
	char *python; /* interpreter path */
	char *python_version; /* "3.11.2" */
	/*
	 * Where python is a launcher script that execs the interpreter (a pyenv
	 * shim): what it is ("pyenv shim", "launcher script") and the
	 * interpreter it runs (sys.executable); both NULL otherwise.
	 */
	char *python_launcher;
	char *python_executable;
	char *cwd;
	char *command; /* "profile", "parse", "docker" */
	struct strvec target; /* the target argv as the user gave it */
	struct limits limits;
	struct run *runs;
	size_t nr_runs, alloc_runs;
	struct pwarn *warnings;
	size_t nr_warnings, alloc_warnings;
	struct finding *findings;
	size_t nr_findings, alloc_findings;
	struct native_set native; /* native extensions with ELF facts (filled by elf_report.c) */
};

void profile_init(struct profile *p);
void profile_release(struct profile *p);
/* Records which coldstart made p, with which command, and when (ISO 8601 UTC, now). */
void profile_stamp(struct profile *p, const char *command);
/* Returns the new run, zeroed with UNKNOWN measurements. */
struct run *profile_add_run(struct profile *p);
void profile_add_warning(struct profile *p, long line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Takes ownership of every string in f. */
void profile_add_finding(struct profile *p, struct finding *f);

struct proc *run_add_proc(struct run *r);
void run_release(struct run *r);

void proc_init(struct proc *pr);
void proc_release(struct proc *pr);
/* Out-of-line growth for the inline functions below; both die beyond their limits. */
void proc_grow_names(struct proc *pr, size_t len);
void proc_grow_nodes(struct proc *pr);

/*
 * Copies s into the process's pool and returns its offset.  s must not hold
 * a NUL byte (the pool is NUL-separated): every caller passes a C string or
 * text it has checked.  Inline, with the next three: the parser calls them
 * once per row.
 */
static inline uint32_t proc_intern(struct proc *pr, const char *s, size_t len)
{
	struct buf *pool = &pr->names;
	size_t off;

	if (!len)
		return 0;
	if (buf_avail(pool) < len + 1 || pool->len + len + 1 > UINT32_MAX)
		proc_grow_names(pr, len);
	off = pool->len;
	memcpy(pool->buf + off, s, len);
	pool->buf[off + len] = '\0';
	pool->len = off + len + 1;
	pool->buf[pool->len] = '\0';
	return (uint32_t)off;
}

static inline const char *proc_str(const struct proc *pr, uint32_t off)
{
	return pr->names.buf + off;
}

static inline const char *node_name(const struct proc *pr, int32_t i)
{
	return pr->names.buf + pr->nodes[i].name;
}

/*
 * Appends a node with no links; the caller links it with proc_link_child or
 * proc_link_root.  Returns its index.  name follows proc_intern's rule.
 */
static inline int32_t proc_add_node(struct proc *pr, const char *name, size_t len, uint32_t depth, int64_t self_us,
				    int64_t cum_us)
{
	struct imp_node *n;

	if (pr->nr_nodes >= pr->alloc_nodes || pr->nr_nodes >= INT32_MAX)
		proc_grow_nodes(pr);
	n = &pr->nodes[pr->nr_nodes];
	n->name = proc_intern(pr, name, len);
	n->depth = depth;
	n->parent = n->first_child = n->last_child = n->next_sibling = -1;
	n->flags = 0;
	n->kind = KIND_APP;
	n->self_us = self_us;
	n->cum_us = cum_us;
	if (pr->timing) {
		memset(&pr->timing[pr->nr_nodes], 0xff, sizeof(*pr->timing));
		pr->timing[pr->nr_nodes].file = 0;
	}
	return (int32_t)pr->nr_nodes++;
}

/* Appends child as the last child of parent.  Each node is linked once. */
static inline void proc_link_child(struct proc *pr, int32_t parent, int32_t child)
{
	struct imp_node *p = &pr->nodes[parent];
	struct imp_node *c = &pr->nodes[child];

	if (child > parent || child < p->last_child)
		pr->children_first = false;
	pr->nr_linked++;
	c->parent = parent;
	c->next_sibling = -1;
	if (p->last_child >= 0)
		pr->nodes[p->last_child].next_sibling = child;
	else
		p->first_child = child;
	p->last_child = child;
}

static inline void proc_link_root(struct proc *pr, int32_t node)
{
	struct imp_node *n = &pr->nodes[node];

	if (node < pr->last_root)
		pr->children_first = false;
	pr->nr_linked++;
	n->parent = -1;
	n->next_sibling = -1;
	if (pr->last_root >= 0)
		pr->nodes[pr->last_root].next_sibling = node;
	else
		pr->first_root = node;
	pr->last_root = node;
}
/* Unlinks every node, to link them all again. */
void proc_unlink_all(struct proc *pr);
/* Whether every node is linked, each before its parent, siblings in array order. */
static inline bool proc_children_first(const struct proc *pr)
{
	return pr->children_first && pr->nr_linked == pr->nr_nodes;
}
/* Appends an event; name and detail are copied into the pool. */
void proc_add_event(struct proc *pr, int64_t t_ns, const char *name, const char *detail, int32_t node);
/* Records that pr read the file at path (a copy is kept). */
void proc_add_read(struct proc *pr, const char *path);
/* Allocates the timing array (all UNKNOWN) if absent. */
void proc_ensure_timing(struct proc *pr);
/* Appends "a -> b -> c" for the chain from the root to node i. */
void proc_chain(const struct proc *pr, int32_t i, const char *sep, struct buf *out);
/*
 * The node after i in pre-order (import order: a parent before its children,
 * siblings in order), -1 after the last; start from first_root.  Iterative:
 * the tree can be thousands of levels deep.
 */
int32_t proc_preorder_next(const struct proc *pr, int32_t i);
/*
 * The tree walker every pass over a tree uses.  Pre-order like
 * proc_preorder_next, but with descend false the subtree of i is skipped.
 * The links are trusted: the link functions only ever make trees (each node
 * linked once, to a parent that exists), and readers of files check them.
 */
int32_t proc_walk_next(const struct proc *pr, int32_t i, bool descend);
/* Post-order (each node after its children, siblings in order): the first node, or -1. */
int32_t proc_postorder_first(const struct proc *pr);
int32_t proc_postorder_next(const struct proc *pr, int32_t i);
/* First node with this name in pre-order, -1 if none. */
int32_t proc_find(const struct proc *pr, const char *name);
/* Sum of cum_us over roots that are not start-up, and over all roots. */
/*
 * coldstart's own bootstrap and tracer in pr (its KIND_TOOL nodes' self
 * time): part of the interpreter start-up that every total shown to a user
 * leaves out, as the target without coldstart would not pay it.
 */
int64_t proc_tool_us(const struct proc *pr);
int64_t proc_import_total_us(const struct proc *pr, bool include_startup);

/*
 * What a module's time is measured in.  Under a CPU limit the wall time of
 * an import measures the CFS scheduler as much as the code (a module that
 * needs 1 ms of CPU takes 100 ms of wall when the quota ran out just before
 * it); the importing thread's CPU time, which the tracer records, is what a
 * user can act on, and the throttling explains the rest.
 */
enum metric {
	METRIC_WALL = 0,
	METRIC_CPU,
};
/*
 * METRIC_CPU for a profile taken under a CPU limit (or whose runs were
 * throttled) when its trace recorded CPU times; METRIC_WALL otherwise.
 */
enum metric profile_metric(const struct profile *p);
/* Whether the trace recorded CPU times for (nearly) every import it timed. */
bool profile_has_cpu_times(const struct profile *p);
/* "CPU" or "wall". */
const char *metric_name(enum metric m);
/* A node's cumulative and self time in microseconds in metric m; UNKNOWN where not measured. */
int64_t node_cum_in(const struct proc *pr, int32_t i, enum metric m);
int64_t node_self_in(const struct proc *pr, int32_t i, enum metric m);
/*
 * The process's import time in metric m: for wall, proc_import_total_us;
 * for CPU, the CPU time of its outermost imports with a CPU time (the
 * start-up rows importtime printed before the tracer have none).
 */
int64_t proc_import_total_in(const struct proc *pr, bool include_startup, enum metric m);
/*
 * An import's own load phase in microseconds (dlopen and init for an
 * extension, reading and unmarshalling for a module): the tracer's load
 * phase, or under METRIC_CPU for a module without an exec phase (an
 * extension) its CPU self time; importtime's self time without a trace.
 */
int64_t node_load_in(const struct proc *pr, int32_t i, enum metric m);

/*
 * The garbage collector's pauses inside import i's own time (its "[gc]"
 * child) in metric m; 0 when none, UNKNOWN where not measured in m.
 */
int64_t node_gc_in(const struct proc *pr, int32_t i, enum metric m);
/* The collector's pauses during a process's imports ("[gc]" nodes, tracer only). */
struct gc_total {
	int64_t us; /* in the metric asked for */
	size_t imports; /* imports that had any */
	int32_t most; /* the import with the most, -1 when none */
	int64_t most_us;
};
/* Over pr's imports, interpreter start-up and coldstart's bootstrap left out unless include_startup. */
void proc_gc_total(const struct proc *pr, bool include_startup, enum metric m, struct gc_total *out);
/*
 * Under a CPU limit, for pauses of cpu_us of CPU after start-up: their wall
 * time, and (*throttled) whether it is at least twice the CPU, mostly
 * throttled periods that began in them (the tracer's reads of the CPU clock
 * are where the kernel throttles).
 */
int64_t proc_gc_wall_us(const struct proc *pr, int64_t cpu_us, bool *throttled);

/* From the start of the process (exec, or the fork) to its last trace record; UNKNOWN without. */
int64_t proc_lifetime_us(const struct proc *pr);
/*
 * Moves pr's start to start_ns (absolute), keeping every recorded moment
 * where it was: its imports' and events' times, which count from the start,
 * are shifted by the difference.  Used when a better dating of the start
 * (its exec as the kernel saw it) arrives after the trace was read.
 */
void proc_rebase(struct proc *pr, int64_t start_ns);

/*
 * When the target became ready, in CLOCK_MONOTONIC nanoseconds, UNKNOWN
 * without --ready or a trace.  The one place that converts readiness to the
 * tracer's clock.
 */
int64_t run_ready_ns(const struct run *r);
/* Whether node i of pr started after the run's ready time (ready_ns from run_ready_ns). */
bool node_after_ready(const struct proc *pr, int32_t i, int64_t ready_ns);

/*
 * JSON (written with .gz through zlib).  Both return 0 or -1 with err set.
 * The reader streams and stops with an error past PROFILE_SIZE_LIMIT bytes
 * of text, or of memory for the model (COLDSTART_MAX_PROFILE_SIZE, such as
 * "4g", sets another limit); numbers out of their field's range are errors
 * (docs/profile-format.md, "Limits").
 */
#define PROFILE_SIZE_LIMIT ((uint64_t)1 << 30)
int profile_write_json(const struct profile *p, const char *path, struct buf *err);
int profile_read_json(struct profile *p, const char *path, struct buf *err);
/* The same into/out of memory, for tests and pipes. */
void profile_to_json(const struct profile *p, struct buf *out);
int profile_from_json(struct profile *p, const char *text, size_t len, struct buf *err);

#endif
