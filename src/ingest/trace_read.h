/*
 * The reader of one trace file (docs/trace-format.md): the records of one
 * process become its own import tree with the tracer's timing, CPU times and
 * events.  It reads whole files or, while the process still writes, what has
 * been written so far; it never prints.
 */
#ifndef COLDSTART_TRACE_READ_H
#define COLDSTART_TRACE_READ_H

#include "model/profile.h"

/* One import that finished (E or F record), in the order they finished. */
struct trace_done {
	int32_t node; /* its node; -1 for an import that was running when the process forked */
	uint32_t name; /* name-pool offset in the trace's proc */
	int64_t end_ns; /* absolute */
	int64_t cum_us; /* end - start, rounded up like importtime; 0 for node -1 */
	uint32_t depth; /* nesting on its thread when it started */
	long tid; /* its thread (the tracer's number) */
};

struct tparse;

/*
 * Garbage collections (G records) that ran inside one import's own time (not
 * inside an import nested in it), or outside every import.
 */
struct trace_gc {
	uint32_t count;
	int64_t first_ns; /* absolute start of the first */
	int64_t wall_ns; /* their pauses, summed */
	int64_t cpu_ns; /* the thread's CPU time in them; UNKNOWN when not recorded */
	int64_t longest_ns;
};

/* One trace file. */
struct trace_proc {
	/*
	 * The tree of the trace alone: pid, ppid, argv, origin, start_ns (exec:
	 * the process start as the tracer estimated it; fork: the fork),
	 * tracer_ns, startup_cpu_ns, cpu_ns, end_ns (last record), nodes with
	 * cum/self from the trace, timing (CPU included) and events.
	 */
	struct proc proc;
	int version; /* of the format */
	char impl[8]; /* "c" or "py" */
	char version_str[32]; /* the interpreter's version */
	bool audit; /* false on 3.7: imports only */
	bool clean_exit; /* a Q record: the interpreter finalised */
	long fork_depth; /* imports open on the forking thread at the fork */
	/*
	 * The traced process this one descends from, as the tracer knew it
	 * (fork: the process forked from; exec: COLDSTART_TRACE_PARENT), 0
	 * when unknown.  It stands for ppid where the parent had exited before
	 * the tracer read getppid(), or was no Python process.
	 */
	long spawner;
	char *stopped; /* the tracer's own error (R record), or NULL */
	int64_t stopped_ns; /* when it stopped, from the process's start_ns */
	struct strvec modules; /* sys.modules when the tracer started (exec'd processes) */
	struct trace_done *done;
	size_t nr_done, alloc_done;
	/*
	 * Per node of proc (nr_gc entries, the rest zero: no collection), and
	 * the collections outside imports.
	 */
	struct trace_gc *gc;
	size_t nr_gc;
	struct trace_gc gc_outside;
	size_t records; /* records read */
	size_t bad_records; /* malformed lines skipped */
	size_t unmatched_ends; /* E/F without their S (imports running at the fork) */
	struct tparse *ps; /* parse state, until trace_proc_finish */
};

/* Ready to be fed. */
void trace_proc_init(struct trace_proc *tp);
/*
 * Reads the complete records at the start of text (up to the last newline
 * before the first NUL byte: a process may be writing the rest).  Returns the
 * number of bytes consumed, which the next call must not pass again, or -1
 * with a message in err when the text is not a coldstart trace.  Malformed
 * records are skipped and counted.
 */
long trace_proc_feed(struct trace_proc *tp, const char *text, size_t len, struct buf *err);
/*
 * After the last feed: imports never finished become NODE_OPEN (the process
 * died or exec'd inside them), self times are computed.  Returns -1 with a
 * message in err when no header was read.
 */
int trace_proc_finish(struct trace_proc *tp, struct buf *err);

/*
 * A whole trace's text at once (feed and finish; a last line without newline
 * is ignored).  Returns 0, or -1 with a message in err.  Release tp with
 * trace_proc_release even after an error.
 */
int trace_parse(struct trace_proc *tp, const char *text, size_t len, struct buf *err);
/* Reads and parses one file; -1 with "cannot read 'x': ..." in err. */
int trace_read_file(struct trace_proc *tp, const char *path, struct buf *err);
void trace_proc_release(struct trace_proc *tp);

#endif
