/*
 * What every export format shares: the options of an export (struct
 * export_opts), the run to draw, the import tree of a process (or its
 * timeline made a tree) laid out as perfectly nested intervals, walks over
 * it, labels, and text cleaned and escaped.  The formats
 * (render/export/formats.h) use this; it uses none of them, nor the table of
 * formats (render/export/export.h).
 */
#ifndef COLDSTART_EXPORT_FRAMES_H
#define COLDSTART_EXPORT_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "model/profile.h"
#include "model/timeline.h"
#include "util.h"

struct diff;

struct export_opts {
	/*
	 * Which run to draw: -1 picks the representative run (the non-warm-up
	 * run whose main-process import total is the median), otherwise an
	 * index into p->runs.
	 */
	long run;
	/*
	 * SVG, folded and HTML draw the main process (procs[0]) unless
	 * all_procs is set; speedscope and Chrome trace always carry every
	 * process, one profile or track each.
	 */
	bool all_procs;
	bool icicle; /* SVG: root at the top */
	int width; /* SVG width in pixels; 0 = 1200 */
	double min_width; /* SVG: frames narrower than this (px) are not drawn; <0 = 0.1 */
	const char *title; /* NULL = "coldstart: <target>" */
	/*
	 * SVG differential mode (borrowed): colour B's frames by their change
	 * against the diff's base; NULL for an ordinary flamegraph.
	 */
	const struct diff *diff;
	/* OTLP: the resource's service.name; NULL = the target's script or program. */
	const char *service;
	/*
	 * OTLP: when the run began, in Unix nanoseconds, for a run sent as it
	 * ends; 0 = placed from the profile's "created" stamp (to the second).
	 */
	int64_t origin_unix_ns;
	int top; /* Prometheus: modules given their own gauges; 0 = 10 */
};

#define EXPORT_OPTS_INIT                                                                                               \
	{                                                                                                              \
		-1, false, false, 0, -1.0, NULL, NULL, NULL, 0, 0                                                      \
	}

/*
 * export_pick_run returns the run selected by o->run, or NULL with err set
 * (run numbers in messages count from 1, as users give them).
 */
const struct run *export_pick_run(const struct profile *p, const struct export_opts *o, struct buf *err);

/*
 * Perfectly nested intervals, in nanoseconds from the process's start, for
 * every node of pr: a child lies inside its parent and siblings do not
 * overlap.  With use_timing and a tracer's timing the real start/end are
 * used (clamped where the data disagree; an untimed import ends with its
 * timed descendants, or lasts its cumulative time); otherwise the tree is laid out
 * from the cumulative times, each node as wide as max(cum, sum of its
 * children).  start and end must hold pr->nr_nodes entries; nodes that are
 * not reachable from the roots get start = end = -1.  Returns the end of the
 * last root (the process's extent).
 */
int64_t export_layout(const struct proc *pr, bool use_timing, int64_t *start, int64_t *end);

/*
 * Pre-order walk of pr without recursion; the visit callback may return
 * false to skip a node's children.  Cycles in a damaged tree are cut: no
 * node is visited twice.
 */
/*
 * The same walk into arrays: order[] receives the reachable nodes in
 * pre-order (returns how many), parent[node] the node it was reached from
 * (-1 for roots).  Both hold pr->nr_nodes entries; parent may be NULL.
 */
size_t export_preorder(const struct proc *pr, int32_t *order, int32_t *parent);
void export_walk(const struct proc *pr, bool (*visit)(const struct proc *pr, int32_t i, void *data), void *data);

/*
 * The timeline as an import-style tree into out (initialised here; release
 * with proc_release), for the exporters that draw trees: functions by name,
 * imports as "import NAME" with the kind of the same import in imports (the
 * process's import tree, may be NULL), wall times as self and cumulative.
 * With one thread, its functions are the roots.
 */
void timeline_to_proc(const struct timeline *tl, const struct proc *imports, struct proc *out);

/*
 * The tree the flame graphs draw for pr: with a timeline (--timeline), the
 * functions and imports of its start-up as one tree, built into view (the
 * caller releases it with proc_release); else pr itself (view untouched).
 */
const struct proc *export_tree(const struct proc *pr, struct proc *view);

/*
 * The profile's "created" stamp (when it was written, to the second) in
 * nanoseconds since the Unix epoch; 0 when absent or unreadable.
 */
int64_t export_created_unix_ns(const struct profile *p);

/*
 * An import's phase for labels: "startup" (interpreter start-up), "before
 * ready" / "after ready" when the run measured readiness and the tracer
 * timed the import, else "import".
 */
const char *export_node_phase(const struct run *r, const struct proc *pr, int32_t i);

/* True when every node with a finished import has start/end timing. */
bool export_has_timing(const struct proc *pr);

/* The columns of the target in a flame graph's or the HTML report's title. */
#define TITLE_TARGET_COLS 100

/*
 * A label for a process: "python3 app.py (pid 42)", "process 2"; a command
 * longer than 80 columns is shortened in the middle (its start and its end
 * kept: the program and the script or module).
 */
void export_proc_label(const struct proc *pr, size_t idx, struct buf *out);
/* Appends p's target, its arguments joined by spaces, shortened in the middle to at most max columns. */
void export_add_target(struct buf *out, const struct profile *p, size_t max);

/* Appends s with invalid UTF-8 and control bytes replaced by '?'. */
void export_add_clean(struct buf *out, const char *s);
/* Appends s escaped for XML/HTML text and attributes (also cleaned). */
void export_add_xml(struct buf *out, const char *s);
/* Appends s as a JSON string literal (also cleaned). */
void export_add_json(struct buf *out, const char *s);
/* Appends ns as microseconds with three decimals ("12.345"). */
void export_add_us(struct buf *out, int64_t ns);

#endif
