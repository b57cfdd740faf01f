/*
 * The import statements of a run's modules, read from their source by the
 * profile's own interpreter (python/coldstart/_imports.py: its `ast` module
 * parses that version's syntax) and joined to each process's why_graph.
 * Runs one child process; never prints.
 */
#ifndef COLDSTART_WHY_SCAN_H
#define COLDSTART_WHY_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "model/profile.h"
#include "analysis/why.h"

struct why_scan_opts {
	const char *python; /* the interpreter to read with; NULL: the profile's */
	const char *datadir; /* coldstart's python/ tree (coldstart_datadir()) */
	bool no_cache; /* parse every file again, and write no cache */
	unsigned jobs; /* processes the reader may parse on */
	int timeout_ms; /* the reader is killed after this long */
};

struct why_scan_result {
	char *python; /* the interpreter that read the source (owned) */
	size_t files; /* distinct files of the modules */
	size_t parsed, cached; /* read now, and answered from the cache */
	size_t sources[WHY_SRC__COUNT]; /* modules by what was read for them */
	size_t pyx; /* native ones read through the Cython source beside them */
	double reader_s; /* the reader's own time, as it measured it */
	int64_t wall_us; /* the whole scan, interpreter start included */
	char *cache; /* "used", "off", or why the cache was refused (owned) */
	/* The profile's interpreter was not run: it fails trust_check_program (the reason is in err). */
	bool refused;
};

/*
 * The modules to read are every loaded module of run r's processes (one
 * list for all of them: a forked worker's modules are mostly its master's)
 * and each process's main script: the profile's target for the target's own
 * process (`-c CODE`, `-m MODULE` or a script), the script in its argv for
 * the others; forks (forks[i] true) have none, their __main__ ran in their
 * parent.  graphs[i] (for r->procs[i], set up with why_graph_init) receive
 * the statements.  Files come from the trace; modules without one are
 * located by name through the interpreter's sys.path and the profile's cwd.
 * The profile's interpreter runs only when it passes trust_check_program
 * (a profile is a file anyone may have edited); o->python always does.
 * Returns 0, or -1 with the reason in err (no interpreter, one refused, the
 * reader failed or timed out): the graphs then hold only what the profile
 * recorded.
 */
int why_scan(const struct profile *p, const struct run *r, const bool *forks, struct why_graph *graphs,
	     const struct why_scan_opts *o, struct why_scan_result *res, struct buf *err);
void why_scan_result_release(struct why_scan_result *res);

#endif
