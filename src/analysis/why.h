/*
 * `coldstart why`'s analysis: every importer of a module in one process, and
 * what would go away if it were never imported.  It works on one process's
 * import tree (who loaded what, as importtime and the tracer saw it) and the
 * import statements read from the modules' source (why_scan.h), joined in a
 * struct why_graph.  Pure: no I/O, nothing printed.
 */
#ifndef COLDSTART_WHY_H
#define COLDSTART_WHY_H

#include <stdbool.h>
#include <stdint.h>

#include "iset.h"
#include "model/profile.h"

/* The importer of what the process imported at top level: its __main__ or the interpreter's start-up. */
#define WHY_TOP (-2)

/* Where a statement sits in its module, which says when it runs. */
enum why_ctx {
	WHY_BODY = 0, /* the module body (a class body, a with or try block included): runs at import */
	WHY_COND, /* in the module body under if / else / except / a loop / a match case */
	WHY_FUNC, /* in a function: runs when the function is called */
	WHY_TYPING, /* under `if TYPE_CHECKING:`: never runs */
	WHY_MAIN_GUARD, /* under `if __name__ == "__main__":` in a module that is not __main__ */
	WHY_CTX__COUNT
};

/* How an import was seen. */
enum why_via {
	WHY_VIA_STMT = 0, /* an import statement in the source */
	WHY_VIA_CALL, /* importlib.import_module("x") or __import__("x") with a literal name */
	WHY_VIA_TREE, /* the recorded tree: it was the importer running when the module loaded */
	/*
	 * The recorded tree shows the import again, finding the module loaded:
	 * a 3.14 `-X importtime=2` cached row, or the tracer's record of an
	 * importlib.import_module() call for a loaded module.
	 */
	WHY_VIA_AGAIN,
	WHY_VIA_COMPUTED, /* import_module(x) / __import__(x) with a computed name: no target, no name */
	WHY_VIA__COUNT
};

/* What one import did in this process. */
enum why_status {
	WHY_LOADED = 0, /* the first import: it loaded the module and paid for it */
	WHY_FOUND_LOADED, /* ran after the module was loaded: cost nothing */
	WHY_INHERITED, /* the module came from the parent process at the fork */
	WHY_CIRCULAR, /* ran while the module was still loading (the importer is inside its import) */
	WHY_NOT_RUN, /* module level, but the importer's body finished before the load: not taken */
	WHY_IN_FUNCTION, /* runs when its function is called */
	WHY_NEVER, /* TYPE_CHECKING or a __main__ guard */
	WHY_STATUS__COUNT
};

const char *why_ctx_name(enum why_ctx c);
int why_ctx_from_name(const char *s);
const char *why_via_name(enum why_via v);
const char *why_status_name(enum why_status s);

/* What was read for a module (why_scan). */
enum why_source {
	WHY_SRC_NONE = 0, /* not asked (no interpreter, or a failed / cached row) */
	WHY_SRC_PARSED, /* its source was read */
	WHY_SRC_NATIVE, /* an extension module: compiled code, no statements to read */
	WHY_SRC_BUILTIN, /* built into the interpreter */
	WHY_SRC_NOSOURCE, /* no source file (frozen, namespace, bytecode only) */
	WHY_SRC_NOTFOUND, /* no file recorded and none found by name */
	WHY_SRC_ERROR, /* unreadable or not valid syntax for this interpreter */
	WHY_SRC__COUNT
};

struct why_stmt {
	int32_t importer; /* node, or WHY_TOP */
	/*
	 * The loaded module it imports, the deepest loaded prefix of what it
	 * names (`import a.b.c` with only a loaded: a), -1 when nothing of it is
	 * loaded in this process.
	 */
	int32_t target;
	uint32_t name; /* the module it names, an offset into the graph's pool */
	uint32_t line; /* 0 when not known */
	uint8_t ctx; /* enum why_ctx */
	uint8_t via; /* enum why_via */
};

/* One process's tree and the statements of its modules. */
struct why_graph {
	const struct proc *pr; /* borrowed; must outlive the graph */
	struct why_stmt *stmts;
	size_t nr_stmts, alloc_stmts;
	uint8_t *source; /* enum why_source per node */
	/* Per node: a repeat of an import already loaded (a cached row, a repeated import_module()), not a load. */
	bool *again;
	uint32_t *error; /* per node: pool offset of why its source could not be read, 0 = none */
	uint32_t *file; /* per node: pool offset of the file that was read, 0 = none */
	uint32_t main_file; /* the same for __main__ ("-c" for code given on the command line) */
	/* Name -> node (the first load of each name: failed and cached rows left out). */
	struct iset names;
	struct buf pool; /* NUL-separated names; offset 0 is the empty string */
	bool have_source; /* statements were read (why_scan succeeded) */
	bool have_main; /* the statements of __main__ were read */
};

/*
 * Indexes pr's nodes by name and adds the recorded repeats of imports
 * (3.14 cached rows; tracer-only nodes of a module loaded before them) as
 * statements of their parent with via WHY_VIA_AGAIN.  The recorded tree
 * needs no statements: why_answer reads it from pr.
 */
void why_graph_init(struct why_graph *g, const struct proc *pr);
void why_graph_release(struct why_graph *g);
/* The first load of a module in the process, or -1. */
int32_t why_graph_find(const struct why_graph *g, const char *name);
/*
 * Adds what one statement imports: `import base` (names NULL or "") or
 * `from base import names` (comma-separated; each name that is a loaded
 * submodule base.name becomes a statement of its own, otherwise base).
 * base is absolute.  importer is a node or WHY_TOP.
 */
void why_graph_add_import(struct why_graph *g, int32_t importer, const char *base, const char *names, uint32_t line,
			  enum why_ctx ctx, enum why_via via);
/* Adds an import call whose module name is computed (WHY_VIA_COMPUTED). */
void why_graph_add_computed(struct why_graph *g, int32_t importer, uint32_t line, enum why_ctx ctx);
/* The first such call of importer, or NULL. */
const struct why_stmt *why_graph_computed(const struct why_graph *g, int32_t importer);
/* Records why node i's source could not be read (copied). */
void why_graph_set_error(struct why_graph *g, int32_t i, const char *msg);
/* Records the file read for node i, or for __main__ with WHY_TOP (copied). */
void why_graph_set_file(struct why_graph *g, int32_t i, const char *path);
/* That file, or NULL. */
const char *why_graph_file(const struct why_graph *g, int32_t i);
static inline const char *why_str(const struct why_graph *g, uint32_t off)
{
	return g->pool.buf + off;
}

struct why_opts {
	/* Imports inside functions keep what they import (default: they are assumed not to run at start-up). */
	bool functions_run;
	/*
	 * The process is a fork of one that had the module loaded, so the
	 * module came with the fork (the caller knows the processes).
	 */
	bool inherited;
};

/* One module that imports the one asked about, with its statements. */
struct why_importer {
	int32_t node; /* or WHY_TOP */
	enum why_status status; /* the best of its statements' */
	int64_t cost_us; /* what its import brought: the cumulative time of what it loaded, 0 else */
	int32_t loaded; /* WHY_LOADED: the node it loaded (the module or one of its submodules), else -1 */
	/* Its statements, best first, in why_answer.stmts[first .. first + nr). */
	size_t first, nr;
};

/* A module in the subtree of the one asked about that would stay, and what keeps it. */
struct why_kept {
	int32_t node;
	int32_t by; /* the importer that keeps it (a node or WHY_TOP) */
	struct why_stmt how; /* the edge: a statement, a tree edge (via WHY_VIA_TREE) or, with line 0
				and via WHY_VIA_STMT, the package of a submodule that stays */
};

struct why_answer {
	/* The first load of the module in the process, -1 when it is not loaded here. */
	int32_t module;
	size_t nr_loads; /* nodes of the module and its submodules in this process, failed ones left out */
	size_t nr_failed; /* failed imports of them */
	struct why_importer *importers;
	size_t nr_importers;
	struct why_stmt *stmts; /* the importers' statements, in importer order */
	enum why_status *stmt_status; /* parallel to stmts */
	size_t nr_stmts;
	/* What would go away: nodes no longer reachable, by self time descending. */
	int32_t *gone;
	size_t nr_gone;
	int64_t gone_self_us;
	/* Modules imported beneath it that something else keeps, by cumulative time descending. */
	struct why_kept *kept;
	size_t nr_kept;
	int64_t import_total_us; /* the process's import time, start-up included, for shares */
};

/*
 * Answers for module in g's process.  Importers are the modules outside the
 * module's own package that import it or one of its submodules; "gone" is
 * what is no longer reachable from the process's top level when the module
 * and its submodules are taken out of the graph of tree edges, statements
 * that may run at import (o->functions_run: also those in functions) and
 * the edge from a submodule to its package.  Returns 0, or -1 when the
 * module is neither loaded in the process nor named by any statement in it
 * (a is then empty).
 */
int why_answer(const struct why_graph *g, const char *module, const struct why_opts *o, struct why_answer *a);
void why_answer_release(struct why_answer *a);

/* Whether name is module or inside it ("a" covers "a" and "a.b", not "ab"). */
bool why_in_package(const char *name, const char *module);

#endif
