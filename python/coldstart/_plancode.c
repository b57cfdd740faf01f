/*
 * Code compiled from strings, answered from a start-up plan (docs/plan.md,
 * "The string table").
 *
 * Module bodies compile source text they build themselves: namedtuple,
 * dataclasses, attrs, SQLAlchemy, enum call compile(), exec() or eval() on a
 * str.  While planning, record() notes the arguments of every such call
 * (the source, file name, mode, the compiler flags in effect and the
 * optimisation level); plan_code.py compiles each once more and stores the
 * code.  Applying the plan, apply() is handed the table and a call whose
 * arguments are in it gets a fresh copy of the stored code (one unmarshal)
 * instead of parsing and compiling; every other call is the builtin's own.
 *
 * Nothing a program can see may change, so this is C and patches the
 * builtin function objects themselves: the same objects (identity, name,
 * doc, signature, pickling) now reach this file's functions through a copy
 * of their PyMethodDef, which run in the caller's frame, as the builtins
 * do, and call the builtins' own functions.  So no Python frame is added
 * (tracebacks, sys._getframe, warnings' stacklevel, profilers and tracers
 * see what they saw), compile() inherits the caller's future flags as it
 * always does (the flags in effect are part of the key), and a call the
 * table does not answer, or whose arguments are anything but the plain
 * case, goes to the builtin untouched, with its own errors.  A hit raises
 * the audit events the builtin would, in the same order: "compile" with the
 * source's bytes and the file name, then (exec and eval, through the
 * builtin given the code) "exec" with the code object.
 *
 * The module also stands in front of the interpreter's arena allocator (see
 * keep_chunks() below): applying a plan is about a first response's CPU time,
 * and on 3.11+ a call chain that crosses a 16 KiB chunk boundary again and
 * again maps and unmaps a chunk each time, and every page of a new object
 * arena is faulted in one at a time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

enum { K_COMPILE, K_EXEC, K_EVAL, K_N };

typedef PyObject *(*fast_fn)(PyObject *, PyObject *const *, Py_ssize_t);
typedef PyObject *(*fast_kw_fn)(PyObject *, PyObject *const *, Py_ssize_t, PyObject *);

/* What is recorded at most: the table is loaded whole by every applied run. */
#define RECORD_MAX_ROWS 20000
#define RECORD_MAX_BYTES (16 << 20)

static struct {
	PyCFunctionObject *fn[K_N]; /* the builtins, patched in place */
	PyMethodDef *orig[K_N]; /* their own method definitions */
	PyMethodDef def[K_N]; /* the copies that lead here */
	int patched;
	PyObject *table; /* applying: {source: ((filename, mode, flags, optimize, marshal), ...)} */
	PyObject *record; /* recording: {(source, filename, mode, flags, optimize): None} */
	Py_ssize_t record_bytes;
	Py_ssize_t hits, misses;
	PyObject *s_exec, *s_eval, *s_single, *s_string; /* "exec" "eval" "single" "<string>" */
} S;

static const char *const names[K_N] = { "compile", "exec", "eval" };

static PyObject *call_orig(int k, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyMethodDef *d = S.orig[k];

	if (d->ml_flags & METH_KEYWORDS)
		return ((fast_kw_fn)(void (*)(void))d->ml_meth)(self, args, nargs, kwnames);
	return ((fast_fn)(void (*)(void))d->ml_meth)(self, args, nargs);
}

/* A plain int (or bool) in *v; 0, or -1 for anything else. */
static int small_int(PyObject *o, long *v)
{
	if (!PyLong_CheckExact(o) && !PyBool_Check(o))
		return -1;
	*v = PyLong_AsLong(o);
	if (*v == -1 && PyErr_Occurred()) {
		PyErr_Clear();
		return -1;
	}
	return 0;
}

/*
 * compile()'s arguments when they are the plain case the table can answer:
 * str source, file name and mode, future flags only, no _feature_version.
 * Fills key[0..4] (borrowed, flags and optimize as C values) and returns 0;
 * -1 hands the call to the builtin as it is.
 */
static int compile_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **src,
			PyObject **filename, PyObject **mode, long *flags, long *optimize)
{
	static const char *const params[] = { "source", "filename", "mode", "flags", "dont_inherit", "optimize" };
	PyObject *a[6] = { NULL, NULL, NULL, NULL, NULL, NULL };
	Py_ssize_t i, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	long dont_inherit = 0;
	int j;

	if (nargs > 6)
		return -1;
	for (i = 0; i < nargs; i++)
		a[i] = args[i];
	for (i = 0; i < nkw; i++) {
		PyObject *kw = PyTuple_GET_ITEM(kwnames, i);

		for (j = 0; j < 6; j++)
			if (PyUnicode_Check(kw) && !PyUnicode_CompareWithASCIIString(kw, params[j]))
				break;
		if (j == 6 || a[j])
			return -1; /* _feature_version, unknown or repeated: the builtin's */
		a[j] = args[nargs + i];
	}
	if (!a[0] || !a[1] || !a[2] || !PyUnicode_CheckExact(a[0]) || !PyUnicode_CheckExact(a[1]) ||
	    !PyUnicode_CheckExact(a[2]))
		return -1;
	if (PyUnicode_Compare(a[2], S.s_exec) && PyUnicode_Compare(a[2], S.s_eval) &&
	    PyUnicode_Compare(a[2], S.s_single))
		return -1;
	if (PyErr_Occurred()) {
		PyErr_Clear();
		return -1;
	}
	*flags = 0;
	*optimize = -1;
	if ((a[3] && small_int(a[3], flags) < 0) || (a[4] && small_int(a[4], &dont_inherit) < 0) ||
	    (a[5] && small_int(a[5], optimize) < 0))
		return -1;
	if (*flags & ~PyCF_MASK || *optimize < -1 || *optimize > 2)
		return -1;
	if (!dont_inherit) {
		PyCompilerFlags cf;

		cf.cf_flags = (int)*flags;
		cf.cf_feature_version = PY_MINOR_VERSION;
		PyEval_MergeCompilerFlags(&cf);
		*flags = cf.cf_flags & PyCF_MASK;
	}
	*src = a[0];
	*filename = a[1];
	*mode = a[2];
	return 0;
}

/*
 * exec(source, globals, locals) and eval(...) as the table can answer them:
 * a str source (for eval without leading blanks, which eval strips), an
 * explicit globals dict and locals None or a mapping, no keywords.  The
 * flags in effect are the caller's future flags, as the builtins merge
 * them.  0, or -1 for the builtin.
 */
static int run_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int k, long *flags)
{
	PyCompilerFlags cf;
	PyObject *src;

	if (nargs < 2 || nargs > 3 || (kwnames && PyTuple_GET_SIZE(kwnames)))
		return -1;
	src = args[0];
	if (!PyUnicode_CheckExact(src) || !PyDict_Check(args[1]) ||
	    (nargs == 3 && args[2] != Py_None && !PyMapping_Check(args[2])))
		return -1;
	if (k == K_EVAL && PyUnicode_GET_LENGTH(src) > 0) {
		Py_UCS4 c = PyUnicode_READ_CHAR(src, 0);

		if (c == ' ' || c == '\t')
			return -1;
	}
	cf.cf_flags = 0;
	cf.cf_feature_version = PY_MINOR_VERSION;
	PyEval_MergeCompilerFlags(&cf);
	*flags = cf.cf_flags & PyCF_MASK;
	return 0;
}

/* Notes a call while planning (bounded); errors are dropped. */
static void record(PyObject *src, PyObject *filename, PyObject *mode, long flags, long optimize)
{
	PyObject *key;
	Py_ssize_t len = PyUnicode_GET_LENGTH(src);

	if (PyDict_GET_SIZE(S.record) >= RECORD_MAX_ROWS || S.record_bytes + len > RECORD_MAX_BYTES)
		return;
	key = Py_BuildValue("(OOOll)", src, filename, mode, flags, optimize);
	if (key) {
		Py_ssize_t before = PyDict_GET_SIZE(S.record);

		if (PyDict_SetDefault(S.record, key, Py_None) && PyDict_GET_SIZE(S.record) > before)
			S.record_bytes += len;
		Py_DECREF(key);
	}
	if (PyErr_Occurred())
		PyErr_Clear();
}

/* A fresh code object for the key from the table, or NULL (no error set). */
static PyObject *lookup(PyObject *src, PyObject *filename, PyObject *mode, long flags, long optimize)
{
	PyObject *rows = PyDict_GetItemWithError(S.table, src), *code = NULL;
	Py_ssize_t i;

	if (!rows || !PyTuple_Check(rows))
		goto miss;
	for (i = 0; i < PyTuple_GET_SIZE(rows); i++) {
		PyObject *r = PyTuple_GET_ITEM(rows, i);
		long f, o;

		if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 5 || !PyBytes_Check(PyTuple_GET_ITEM(r, 4)))
			continue;
		f = PyLong_AsLong(PyTuple_GET_ITEM(r, 2));
		o = PyLong_AsLong(PyTuple_GET_ITEM(r, 3));
		if (PyErr_Occurred())
			break;
		if (f != flags || o != optimize)
			continue;
		if (PyUnicode_Compare(PyTuple_GET_ITEM(r, 0), filename) ||
		    PyUnicode_Compare(PyTuple_GET_ITEM(r, 1), mode))
			continue;
		if (PyErr_Occurred())
			break;
		code = PyMarshal_ReadObjectFromString(PyBytes_AS_STRING(PyTuple_GET_ITEM(r, 4)),
						      PyBytes_GET_SIZE(PyTuple_GET_ITEM(r, 4)));
		if (code && !PyCode_Check(code))
			Py_CLEAR(code);
		break;
	}
miss:
	if (PyErr_Occurred())
		PyErr_Clear();
	if (code)
		S.hits++;
	else
		S.misses++;
	return code;
}

/* The "compile" audit event the parser raises: the source's UTF-8 bytes and the file name. */
static int audit_compile(PyObject *src, PyObject *filename)
{
	const char *s = PyUnicode_AsUTF8(src);

	return s ? PySys_Audit("compile", "yO", s, filename) : -1;
}

/* What exec and eval do to globals before compiling: put __builtins__ in it. */
static int ensure_builtins(PyObject *globals)
{
	PyObject *b = PyDict_GetItemString(globals, "__builtins__");

	if (b)
		return 0;
	if (PyErr_Occurred())
		return -1;
	return PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
}

static PyObject *hook(int k, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *src, *filename, *mode, *code, *res;
	PyObject *run[3];
	long flags, optimize = -1;

	if (!S.table && !S.record)
		return call_orig(k, self, args, nargs, kwnames);
	if (k == K_COMPILE) {
		if (compile_args(args, nargs, kwnames, &src, &filename, &mode, &flags, &optimize) < 0)
			return call_orig(k, self, args, nargs, kwnames);
	} else {
		if (run_args(args, nargs, kwnames, k, &flags) < 0)
			return call_orig(k, self, args, nargs, kwnames);
		src = args[0];
		filename = S.s_string;
		mode = k == K_EXEC ? S.s_exec : S.s_eval;
	}
	if (S.record) {
		record(src, filename, mode, flags, optimize);
		return call_orig(k, self, args, nargs, kwnames);
	}
	code = lookup(src, filename, mode, flags, optimize);
	if (!code)
		return call_orig(k, self, args, nargs, kwnames);
	if (k == K_COMPILE) {
		if (audit_compile(src, filename) < 0)
			Py_CLEAR(code);
		return code;
	}
	/* The builtin's order: __builtins__ into globals, compile, then run. */
	if (ensure_builtins(args[1]) < 0 || audit_compile(src, filename) < 0) {
		Py_DECREF(code);
		return NULL;
	}
	run[0] = code;
	run[1] = args[1];
	run[2] = nargs == 3 ? args[2] : NULL;
	res = call_orig(k, self, run, nargs, NULL);
	Py_DECREF(code);
	return res;
}

#define ENTRY(name, k)                                                                                          \
	static PyObject *name##_kw(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
	{                                                                                                       \
		return hook(k, self, args, nargs, kwnames);                                                     \
	}                                                                                                       \
	static PyObject *name##_fast(PyObject *self, PyObject *const *args, Py_ssize_t nargs)                  \
	{                                                                                                       \
		return hook(k, self, args, nargs, NULL);                                                        \
	}
ENTRY(compile, K_COMPILE)
ENTRY(exec, K_EXEC)
ENTRY(eval, K_EVAL)

static const fast_kw_fn entry_kw[K_N] = { compile_kw, exec_kw, eval_kw };
static const fast_fn entry_fast[K_N] = { compile_fast, exec_fast, eval_fast };

/*
 * Points builtins.compile, exec and eval at this file's functions (once):
 * only when each is the builtin function it should be, called the fast
 * way; otherwise nothing is changed and the reason is raised.
 */
static int patch(void)
{
	PyObject *builtins, *f[K_N];
	int k;

	if (S.patched)
		return 0;
	builtins = PyImport_ImportModule("builtins");
	if (!builtins)
		return -1;
	for (k = 0; k < K_N; k++) {
		f[k] = PyObject_GetAttrString(builtins, names[k]);
		if (!f[k] || Py_TYPE(f[k]) != &PyCFunction_Type ||
		    strcmp(((PyCFunctionObject *)f[k])->m_ml->ml_name, names[k]) ||
		    (((PyCFunctionObject *)f[k])->m_ml->ml_flags & ~METH_KEYWORDS) != METH_FASTCALL) {
			if (!PyErr_Occurred())
				PyErr_Format(PyExc_RuntimeError, "builtins.%s is not the builtin function", names[k]);
			while (k >= 0)
				Py_XDECREF(f[k--]);
			Py_DECREF(builtins);
			return -1;
		}
	}
	Py_DECREF(builtins);
	S.s_exec = PyUnicode_InternFromString("exec");
	S.s_eval = PyUnicode_InternFromString("eval");
	S.s_single = PyUnicode_InternFromString("single");
	S.s_string = PyUnicode_FromString("<string>");
	if (!S.s_exec || !S.s_eval || !S.s_single || !S.s_string) {
		for (k = 0; k < K_N; k++)
			Py_DECREF(f[k]);
		return -1;
	}
	for (k = 0; k < K_N; k++) {
		PyCFunctionObject *fn = (PyCFunctionObject *)f[k];

		S.fn[k] = fn; /* the reference is kept: the object must outlive its patch */
		S.orig[k] = fn->m_ml;
		S.def[k] = *fn->m_ml;
		S.def[k].ml_meth = fn->m_ml->ml_flags & METH_KEYWORDS ? (PyCFunction)(void (*)(void))entry_kw[k]
									: (PyCFunction)(void (*)(void))entry_fast[k];
		fn->m_ml = &S.def[k];
	}
	S.patched = 1;
	return 0;
}

PyDoc_STRVAR(record_doc, "record()\n\nNotes the compile(), exec() and eval() calls on strings from now on.");

static PyObject *pc_record(PyObject *self, PyObject *unused)
{
	if (S.table) {
		PyErr_SetString(PyExc_RuntimeError, "a plan's table is in use");
		return NULL;
	}
	if (patch() < 0)
		return NULL;
	if (!S.record) {
		S.record = PyDict_New();
		if (!S.record)
			return NULL;
	}
	Py_RETURN_NONE;
}

PyDoc_STRVAR(recorded_doc, "recorded() -> list\n\nStops recording and returns the calls noted, in order, as tuples\n"
			   "(source, filename, mode, flags, optimize).");

static PyObject *pc_recorded(PyObject *self, PyObject *unused)
{
	PyObject *keys;

	if (!S.record)
		return PyList_New(0);
	keys = PyDict_Keys(S.record);
	Py_CLEAR(S.record);
	return keys;
}

PyDoc_STRVAR(apply_doc, "apply(fd, offset, length) -> int\n\nReads the plan's string table (marshal data) from the "
			"file fd at offset and answers\nthe calls it holds from now on.  Returns the number of sources.");

static PyObject *pc_apply(PyObject *self, PyObject *args)
{
	long long off;
	Py_ssize_t len, got = 0;
	int fd;
	char *data;
	PyObject *table;

	if (!PyArg_ParseTuple(args, "iLn", &fd, &off, &len))
		return NULL;
	if (S.record || S.table) {
		PyErr_SetString(PyExc_RuntimeError, "already recording or applying");
		return NULL;
	}
	if (off < 0 || len <= 0 || len > (Py_ssize_t)256 << 20) {
		PyErr_SetString(PyExc_ValueError, "bad table offset or length");
		return NULL;
	}
	data = PyMem_Malloc((size_t)len);
	if (!data)
		return PyErr_NoMemory();
	while (got < len) {
		ssize_t n = pread(fd, data + got, (size_t)(len - got), (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			PyMem_Free(data);
			if (n < 0)
				return PyErr_SetFromErrno(PyExc_OSError);
			PyErr_SetString(PyExc_ValueError, "the table is cut short");
			return NULL;
		}
		got += n;
	}
	table = PyMarshal_ReadObjectFromString(data, len);
	PyMem_Free(data);
	if (!table)
		return NULL;
	if (!PyDict_CheckExact(table)) {
		Py_DECREF(table);
		PyErr_SetString(PyExc_ValueError, "the table is not a dict");
		return NULL;
	}
	if (patch() < 0) {
		Py_DECREF(table);
		return NULL;
	}
	S.table = table;
	return PyLong_FromSsize_t(PyDict_GET_SIZE(table));
}

PyDoc_STRVAR(stats_doc, "stats() -> (hits, misses)\n\nCalls answered from the table and calls on strings it did not "
			"hold.");

static PyObject *pc_stats(PyObject *self, PyObject *unused)
{
	return Py_BuildValue("(nn)", S.hits, S.misses);
}

/*
 * Frame stack chunks.  From 3.11 on, CPython keeps its frames in chunks of
 * 16 KiB (larger when one frame needs more) taken from the object arena
 * allocator, which maps them with mmap, and a chunk is unmapped as soon as
 * the stack falls back below it.  An import chain running about a chunk
 * boundary (importlib's frames over a module body's over another's) maps,
 * faults in and unmaps one chunk per crossing: 315 times in the benchmark's
 * SQLAlchemy function's first call, 326 in boto3's.  keep_chunks() puts an
 * allocator in front of the interpreter's that keeps the last few freed
 * blocks of up to KEEP_BLOCK_MAX bytes for the next request of the same
 * size.  Object arenas (256 KiB before 3.10, 1 MiB after) are larger and go
 * to the interpreter's allocator as before; the blocks kept are at most
 * KEEP_MAX * KEEP_BLOCK_MAX bytes of memory, never returned.  A chunk's
 * memory is never assumed to be zero by CPython (without mmap the default
 * allocator is malloc).  Callers hold their interpreter's GIL; interpreters
 * with a GIL of their own (3.12+) may call at once, hence the lock.
 *
 * Object arenas.  While prefault(True) holds (the plan sets it from its
 * install until the first response), a new object arena is faulted in
 * whole with one madvise(MADV_POPULATE_WRITE) instead of a page fault per
 * 4 KiB page as its pools are first used: a start-up fills the arenas it
 * takes, and the kernel populates a range for less than the faults cost.
 * At most the last arena taken is resident beyond what is used (1 MiB;
 * 256 KiB before 3.10).  A kernel without MADV_POPULATE_WRITE (before
 * 5.14) answers EINVAL once, and nothing is tried again.
 */
#define KEEP_MAX 4
#define KEEP_BLOCK_MAX ((size_t)64 << 10)
/* The smallest object arena (256 KiB before 3.10, 1 MiB from 3.10 on). */
#define ARENA_MIN ((size_t)256 << 10)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static struct {
	PyObjectArenaAllocator prev; /* the allocator in place before */
	struct {
		void *ptr;
		size_t size;
	} block[KEEP_MAX];
	int n;
	int lock;
	int prefault; /* populate new object arenas (set by prefault()) */
	int no_populate; /* the kernel refused MADV_POPULATE_WRITE */
} K;

static void keep_lock(void)
{
	while (__atomic_exchange_n(&K.lock, 1, __ATOMIC_ACQUIRE))
		;
}

static void keep_unlock(void)
{
	__atomic_store_n(&K.lock, 0, __ATOMIC_RELEASE);
}

static void *keep_alloc(void *ctx, size_t size)
{
	void *ptr = NULL;

	if (size <= KEEP_BLOCK_MAX) {
		keep_lock();
		for (int i = K.n - 1; i >= 0; i--) {
			if (K.block[i].size == size) {
				ptr = K.block[i].ptr;
				K.block[i] = K.block[--K.n];
				break;
			}
		}
		keep_unlock();
	}
	if (ptr)
		return ptr;
	ptr = K.prev.alloc(K.prev.ctx, size);
	if (ptr && size >= ARENA_MIN && __atomic_load_n(&K.prefault, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&K.no_populate, __ATOMIC_RELAXED) && madvise(ptr, size, MADV_POPULATE_WRITE) < 0 &&
	    errno == EINVAL)
		__atomic_store_n(&K.no_populate, 1, __ATOMIC_RELAXED);
	return ptr;
}

static void keep_free(void *ctx, void *ptr, size_t size)
{
	if (ptr && size <= KEEP_BLOCK_MAX) {
		keep_lock();
		if (K.n < KEEP_MAX) {
			K.block[K.n].ptr = ptr;
			K.block[K.n++].size = size;
			ptr = NULL;
		}
		keep_unlock();
	}
	if (ptr)
		K.prev.free(K.prev.ctx, ptr, size);
}

PyDoc_STRVAR(keep_chunks_doc, "keep_chunks() -> bool\n\nKeeps the last few freed frame stack chunks for reuse instead of "
			      "unmapping them\n(once per process; False when it already did).");

static PyObject *pc_keep_chunks(PyObject *self, PyObject *unused)
{
	PyObjectArenaAllocator ours = { NULL, keep_alloc, keep_free };
	PyObjectArenaAllocator cur;

	PyObject_GetArenaAllocator(&cur);
	if (cur.alloc == keep_alloc)
		Py_RETURN_FALSE;
	K.prev = cur;
	PyObject_SetArenaAllocator(&ours);
	Py_RETURN_TRUE;
}

PyDoc_STRVAR(prefault_doc, "prefault(on) -> bool\n\nWhether keep_chunks()'s allocator faults in new object arenas whole "
			  "from now on;\nreturns the setting before.");

static PyObject *pc_prefault(PyObject *self, PyObject *arg)
{
	int on = PyObject_IsTrue(arg);

	if (on < 0)
		return NULL;
	return PyBool_FromLong(__atomic_exchange_n(&K.prefault, on, __ATOMIC_RELAXED));
}

PyDoc_STRVAR(kept_doc, "kept() -> int\n\nHow many freed chunks are kept now (for tests).");

static PyObject *pc_kept(PyObject *self, PyObject *unused)
{
	int n;

	keep_lock();
	n = K.n;
	keep_unlock();
	return PyLong_FromLong(n);
}

/*
 * The import of a planned module.  importlib's _find_and_load runs some
 * thirty Python functions per module (the lock manager, the parent, the
 * finders' loop, the spec's properties, module_from_spec and
 * _init_module_attrs, _load_unlocked): 127 thousand instructions for an
 * empty module answered by the plan, most of a planned module's cost when
 * its body is small.  fast_imports() puts find_and_load() below in its
 * place: for a name the plan's finder (the first of sys.meta_path) answers,
 * it does what those functions do, in C, with importlib's own module locks
 * (the same objects, so threads and the original path see each other), the
 * global import lock around the finder, the finder's own spec and loader,
 * and the same order of events: the parent is imported first, the module
 * is in sys.modules while its body runs and leaves it when the body fails,
 * moves to the end of sys.modules after, and is bound on its parent.
 * Everything else (a name already in sys.modules, a module the plan does
 * not answer, a loader of another kind, a parent that is not a package,
 * a meta path that changed) goes to importlib's functions as before.  Being
 * C, it adds no frame to a traceback: an exception from a body shows the
 * same frames as without the plan.  Known difference: a parent module that
 * refuses the child's attribute gets its ImportWarning from the caller's
 * line, not from importlib's (the warning filters see the caller).
 */
static struct {
	PyObject *orig; /* importlib's _find_and_load */
	PyObject *finder; /* the plan's PlanFinder */
	PyObject *rows; /* finder.rows: the names it may answer */
	PyObject *get_lock; /* _bootstrap._get_module_lock */
	PyObject *unlocked; /* _bootstrap._find_and_load_unlocked */
	PyObject *load_unlocked; /* _bootstrap._load_unlocked */
	PyObject *init_attrs; /* _bootstrap._init_module_attrs */
	PyObject *verbose; /* _bootstrap._verbose_message */
	PyObject *imp_acquire, *imp_release; /* _imp.acquire_lock / release_lock */
	PyObject *fast_types; /* tuple: loaders whose modules are made here */
	int unin; /* ModuleSpec has _uninitialized_submodules (3.11+) */
	int warn_setattr; /* a failed setattr on the parent warns (3.9+) */
	PyObject *s_path, *s_spec, *s_loader, *s_package, *s_file, *s_cached, *s_parent, *s_origin;
	PyObject *s_has_location, *s_search, *s_initializing, *s_unin, *s_create, *s_exec, *s_acquire;
	PyObject *s_release, *s_find_spec, *s_msg, *s_dot, *s_loader_attr, *s_cached_attr;
} F;

static PyObject *call1(PyObject *f, PyObject *a)
{
	return PyObject_CallFunctionObjArgs(f, a, NULL);
}

/* sys.modules when it is a dict (else NULL, no error: importlib's path). */
static PyObject *modules_dict(void)
{
	PyObject *m = PySys_GetObject("modules");

	return m && PyDict_Check(m) ? m : NULL;
}

static int first_finder_is_ours(void)
{
	PyObject *meta = PySys_GetObject("meta_path");

	return meta && PyList_Check(meta) && PyList_GET_SIZE(meta) > 0 && PyList_GET_ITEM(meta, 0) == F.finder;
}

/* The finder's spec, with the global import lock held as _find_spec
 * holds it around each finder. */
static PyObject *find_spec(PyObject *name, PyObject *path)
{
	PyObject *spec, *r = PyObject_CallObject(F.imp_acquire, NULL);

	if (!r)
		return NULL;
	Py_DECREF(r);
	spec = PyObject_CallMethodObjArgs(F.finder, F.s_find_spec, name, path, Py_None, NULL);
	if (spec) {
		r = PyObject_CallObject(F.imp_release, NULL);
		if (!r)
			Py_CLEAR(spec);
		Py_XDECREF(r);
	} else {
		PyObject *t, *v, *tb;

		PyErr_Fetch(&t, &v, &tb);
		r = PyObject_CallObject(F.imp_release, NULL);
		Py_XDECREF(r);
		PyErr_Restore(t, v, tb);
	}
	return spec;
}

static int set_initializing(PyObject *spec, int on)
{
	return PyObject_SetAttr(spec, F.s_initializing, on ? Py_True : Py_False);
}

/* _init_module_attrs(spec, module) for a module just made by
 * PyModule_New: __name__ is set, __loader__, __package__ and __spec__ are
 * None, and there is no __path__, __file__ or __cached__ yet. */
static int init_new_module(PyObject *spec, PyObject *module)
{
	PyObject *d = PyModule_GetDict(module); /* borrowed */
	PyObject *v;
	int has;

	v = PyObject_GetAttr(spec, F.s_loader_attr);
	if (!v || PyDict_SetItem(d, F.s_loader, v) < 0)
		goto fail;
	Py_DECREF(v);
	v = PyObject_GetAttr(spec, F.s_parent);
	if (!v || PyDict_SetItem(d, F.s_package, v) < 0)
		goto fail;
	Py_DECREF(v);
	if (PyDict_SetItem(d, F.s_spec, spec) < 0)
		return -1;
	v = PyObject_GetAttr(spec, F.s_search);
	if (!v || (v != Py_None && PyDict_SetItem(d, F.s_path, v) < 0))
		goto fail;
	Py_DECREF(v);
	v = PyObject_GetAttr(spec, F.s_has_location);
	if (!v)
		return -1;
	has = PyObject_IsTrue(v);
	Py_DECREF(v);
	if (has < 0)
		return -1;
	if (has) {
		v = PyObject_GetAttr(spec, F.s_origin);
		if (!v || PyDict_SetItem(d, F.s_file, v) < 0)
			goto fail;
		Py_DECREF(v);
		v = PyObject_GetAttr(spec, F.s_cached_attr);
		if (!v || (v != Py_None && PyDict_SetItem(d, F.s_cached, v) < 0))
			goto fail;
		Py_DECREF(v);
	}
	return 0;
fail:
	Py_XDECREF(v);
	return -1;
}

/* _load_unlocked(spec) for a loader of F.fast_types. */
static PyObject *load_unlocked(PyObject *modules, PyObject *name, PyObject *spec, PyObject *loader)
{
	PyObject *module, *r, *moved;
	int verbose = 0;

	module = PyObject_CallMethodObjArgs(loader, F.s_create, spec, NULL);
	if (!module)
		return NULL;
	if (module == Py_None) {
		Py_DECREF(module);
		module = PyModule_NewObject(name);
		if (!module || init_new_module(spec, module) < 0)
			goto fail;
	} else {
		r = PyObject_CallFunctionObjArgs(F.init_attrs, spec, module, NULL);
		if (!r)
			goto fail;
		Py_DECREF(r);
	}
	/* Before sys.modules holds it: import.c's shortcut for a module in
	 * sys.modules looks at _initializing. */
	if (set_initializing(spec, 1) < 0)
		goto fail;
	if (PyDict_SetItem(modules, name, module) < 0)
		goto fail_initializing;
	r = PyObject_CallMethodObjArgs(loader, F.s_exec, module, NULL);
	if (!r) {
		PyObject *t, *v, *tb;

		PyErr_Fetch(&t, &v, &tb);
		if (PyDict_DelItem(modules, name) < 0)
			PyErr_Clear(); /* KeyError: the body took itself out */
		PyErr_Restore(t, v, tb);
		goto fail_initializing;
	}
	Py_DECREF(r);
	/* The body may have put another object in its place: that one is
	 * the import's answer, moved to the end of sys.modules. */
	moved = PyDict_GetItemWithError(modules, name);
	if (!moved) {
		if (!PyErr_Occurred())
			PyErr_SetObject(PyExc_KeyError, name);
		goto fail_initializing;
	}
	Py_INCREF(moved);
	Py_SETREF(module, moved);
	if (PyDict_DelItem(modules, name) < 0 || PyDict_SetItem(modules, name, module) < 0)
		goto fail_initializing;
	{
		PyObject *flags = PySys_GetObject("flags");
		PyObject *v = flags ? PyObject_GetAttrString(flags, "verbose") : NULL;

		if (v) {
			verbose = PyObject_IsTrue(v);
			Py_DECREF(v);
		} else {
			PyErr_Clear();
		}
	}
	if (verbose > 0) {
		r = PyObject_CallFunctionObjArgs(F.verbose, F.s_msg, name, loader, NULL);
		if (!r)
			goto fail_initializing;
		Py_DECREF(r);
	}
	if (set_initializing(spec, 0) < 0)
		goto fail;
	return module;
fail_initializing: {
	PyObject *t, *v, *tb;

	PyErr_Fetch(&t, &v, &tb);
	if (set_initializing(spec, 0) < 0)
		PyErr_Clear();
	PyErr_Restore(t, v, tb);
}
fail:
	Py_XDECREF(module);
	return NULL;
}

/* _find_and_load_unlocked(name, import_) for a name the plan answers, with
 * the module's lock held. */
static PyObject *find_and_load_unlocked(PyObject *modules, PyObject *name, PyObject *import_)
{
	PyObject *parts = NULL, *parent = NULL, *child = NULL, *path = Py_None, *parent_module = NULL;
	PyObject *parent_spec = NULL, *unin = NULL, *spec = NULL, *loader = NULL, *module = NULL;
	int r;

	Py_INCREF(path);
	parts = PyUnicode_RPartition(name, F.s_dot);
	if (!parts)
		goto out;
	parent = PyTuple_GET_ITEM(parts, 0);
	child = PyTuple_GET_ITEM(parts, 2);
	if (PyUnicode_GET_LENGTH(parent) > 0) {
		if ((r = PyDict_Contains(modules, parent)) < 0)
			goto out;
		if (!r) {
			PyObject *x = call1(import_, parent);

			if (!x)
				goto out;
			Py_DECREF(x);
		}
		/* The parent's import may have imported this one. */
		module = PyDict_GetItemWithError(modules, name);
		if (module || PyErr_Occurred()) {
			Py_XINCREF(module);
			goto out;
		}
		parent_module = PyObject_GetItem(modules, parent);
		if (!parent_module)
			goto out;
		Py_SETREF(path, PyObject_GetAttr(parent_module, F.s_path));
		if (!path) {
			/* Not a package: importlib says so. */
			PyErr_Clear();
			Py_INCREF(Py_None);
			path = Py_None;
			module = PyObject_CallFunctionObjArgs(F.unlocked, name, import_, NULL);
			goto out;
		}
		if (F.unin) {
			parent_spec = PyObject_GetAttr(parent_module, F.s_spec);
			if (!parent_spec)
				goto out;
		}
	}
	if (!first_finder_is_ours())
		goto importlib;
	spec = find_spec(name, path);
	if (!spec)
		goto out;
	if (spec == Py_None)
		goto importlib;
	/* Found while the finder ran: importlib's _find_spec has its way. */
	if ((r = PyDict_Contains(modules, name)) != 0) {
		if (r < 0)
			goto out;
		goto importlib;
	}
	loader = PyObject_GetAttr(spec, F.s_loader_attr);
	if (!loader)
		goto out;
	if (parent_spec && parent_spec != Py_None) {
		unin = PyObject_GetAttr(parent_spec, F.s_unin);
		if (!unin)
			goto out;
		if (PyList_Check(unin)) {
			if (PyList_Append(unin, child) < 0)
				goto out;
		} else {
			Py_CLEAR(unin);
		}
	}
	r = PySequence_Contains(F.fast_types, (PyObject *)Py_TYPE(loader));
	if (r > 0)
		module = load_unlocked(modules, name, spec, loader);
	else if (r == 0)
		module = call1(F.load_unlocked, spec);
	if (unin) {
		PyObject *t, *v, *tb;
		Py_ssize_t n = PyList_GET_SIZE(unin);

		PyErr_Fetch(&t, &v, &tb);
		if (n > 0 && PyList_SetSlice(unin, n - 1, n, NULL) < 0)
			PyErr_Clear();
		PyErr_Restore(t, v, tb);
	}
	if (!module)
		goto out;
	if (PyUnicode_GET_LENGTH(parent) > 0) {
		PyObject *p = PyObject_GetItem(modules, parent);

		if (!p || PyObject_SetAttr(p, child, module) < 0) {
			if (p && F.warn_setattr && PyErr_ExceptionMatches(PyExc_AttributeError)) {
				PyErr_Clear();
				if (PyErr_WarnFormat(PyExc_ImportWarning, 1,
						     "Cannot set an attribute on %R for child module %R", parent, child) < 0)
					Py_CLEAR(module);
			} else {
				Py_CLEAR(module);
			}
		}
		Py_XDECREF(p);
	}
	goto out;
importlib:
	module = PyObject_CallFunctionObjArgs(F.unlocked, name, import_, NULL);
out:
	Py_XDECREF(parts);
	Py_XDECREF(path);
	Py_XDECREF(parent_module);
	Py_XDECREF(parent_spec);
	Py_XDECREF(unin);
	Py_XDECREF(spec);
	Py_XDECREF(loader);
	return module;
}

static PyObject *pc_find_and_load(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *name, *import_, *modules, *lock, *r, *module;
	int in;

	if (nargs != 2) {
		PyErr_SetString(PyExc_TypeError, "_find_and_load takes 2 arguments");
		return NULL;
	}
	name = args[0];
	import_ = args[1];
	modules = modules_dict();
	if (!modules || !PyUnicode_CheckExact(name) || !first_finder_is_ours())
		return PyObject_CallFunctionObjArgs(F.orig, name, import_, NULL);
	in = PyDict_Contains(F.rows, name);
	if (in == 1)
		in = !PyDict_Contains(modules, name);
	if (in != 1) {
		if (in < 0)
			return NULL;
		return PyObject_CallFunctionObjArgs(F.orig, name, import_, NULL);
	}
	/* _ModuleLockManager(name): importlib's lock for the name. */
	lock = call1(F.get_lock, name);
	if (!lock)
		return NULL;
	r = PyObject_CallMethodObjArgs(lock, F.s_acquire, NULL);
	if (!r) {
		Py_DECREF(lock);
		return NULL;
	}
	Py_DECREF(r);
	in = PyDict_Contains(modules, name);
	if (in == 0)
		module = find_and_load_unlocked(modules, name, import_);
	else
		module = NULL; /* loaded meanwhile (or an error): importlib's */
	{
		PyObject *t, *v, *tb;

		PyErr_Fetch(&t, &v, &tb);
		r = PyObject_CallMethodObjArgs(lock, F.s_release, NULL);
		Py_DECREF(lock);
		if (!r) {
			Py_CLEAR(module);
			if (v) {
				/* The release failed with the import's exception
				 * in flight: keep both, as a with statement does. */
				PyObject *t2, *v2, *tb2;

				PyErr_NormalizeException(&t, &v, &tb);
				PyErr_Fetch(&t2, &v2, &tb2);
				PyErr_NormalizeException(&t2, &v2, &tb2);
				PyException_SetContext(v2, v);
				Py_XDECREF(t);
				Py_XDECREF(tb);
				PyErr_Restore(t2, v2, tb2);
				return NULL;
			}
			return NULL;
		}
		Py_DECREF(r);
		PyErr_Restore(t, v, tb);
	}
	if (in != 0) {
		if (in < 0)
			return NULL;
		return PyObject_CallFunctionObjArgs(F.orig, name, import_, NULL);
	}
	return module;
}

static PyMethodDef find_and_load_def = { "_find_and_load", (PyCFunction)(void (*)(void))pc_find_and_load, METH_FASTCALL,
					 "Find and load the module (coldstart's plan: python/coldstart/_plancode.c)." };

PyDoc_STRVAR(fast_imports_doc, "fast_imports(finder, bootstrap, imp, loader_types) -> bool\n\n"
			       "Puts this module's _find_and_load in place of importlib's in bootstrap\n"
			       "(importlib._bootstrap) for the names finder answers; False when it\n"
			       "already did.");

static PyObject *intern_all(void)
{
	static const char *const names[] = { "__path__", "__spec__", "__loader__", "__package__", "__file__",
					     "__cached__", "parent", "origin", "has_location",
					     "submodule_search_locations", "_initializing", "_uninitialized_submodules",
					     "create_module", "exec_module", "acquire", "release", "find_spec",
					     "import {!r} # {!r}", ".", "loader", "cached" };
	PyObject **slots[] = { &F.s_path, &F.s_spec, &F.s_loader, &F.s_package, &F.s_file, &F.s_cached, &F.s_parent,
			       &F.s_origin, &F.s_has_location, &F.s_search, &F.s_initializing, &F.s_unin,
			       &F.s_create, &F.s_exec, &F.s_acquire, &F.s_release, &F.s_find_spec, &F.s_msg,
			       &F.s_dot, &F.s_loader_attr, &F.s_cached_attr };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!*slots[i] && !(*slots[i] = PyUnicode_InternFromString(names[i])))
			return NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *pc_fast_imports(PyObject *self, PyObject *args)
{
	PyObject *finder, *bootstrap, *imp, *types, *fn = NULL, *spec = NULL, *r;

	if (!PyArg_ParseTuple(args, "OOOO!", &finder, &bootstrap, &imp, &PyTuple_Type, &types))
		return NULL;
	if (F.orig)
		Py_RETURN_FALSE;
	if (!(r = intern_all()))
		return NULL;
	Py_DECREF(r);
#define GET(dst, obj, attr)                                             \
	do {                                                            \
		if (!((dst) = PyObject_GetAttrString((obj), (attr)))) \
			goto fail;                                      \
	} while (0)
	GET(F.orig, bootstrap, "_find_and_load");
	GET(F.rows, finder, "rows");
	GET(F.get_lock, bootstrap, "_get_module_lock");
	GET(F.unlocked, bootstrap, "_find_and_load_unlocked");
	GET(F.load_unlocked, bootstrap, "_load_unlocked");
	GET(F.init_attrs, bootstrap, "_init_module_attrs");
	GET(F.verbose, bootstrap, "_verbose_message");
	GET(F.imp_acquire, imp, "acquire_lock");
	GET(F.imp_release, imp, "release_lock");
#undef GET
	if (!PyDict_Check(F.rows)) {
		PyErr_SetString(PyExc_TypeError, "finder.rows is not a dict");
		goto fail;
	}
	/* What this interpreter's importlib does that older ones did not. */
	{
		PyObject *ms = PyObject_GetAttrString(bootstrap, "ModuleSpec");

		spec = ms ? PyObject_CallFunction(ms, "sO", "x", Py_None) : NULL;
		Py_XDECREF(ms);
		if (!spec)
			goto fail;
		F.unin = PyObject_HasAttr(spec, F.s_unin);
		Py_CLEAR(spec);
	}
	F.warn_setattr = PY_VERSION_HEX >= 0x03090000;
	Py_INCREF(finder);
	F.finder = finder;
	Py_INCREF(types);
	F.fast_types = types;
	fn = PyCFunction_New(&find_and_load_def, NULL);
	if (!fn || PyObject_SetAttrString(bootstrap, "_find_and_load", fn) < 0)
		goto fail;
	Py_DECREF(fn);
	Py_RETURN_TRUE;
fail:
	Py_XDECREF(fn);
	Py_XDECREF(spec);
	Py_CLEAR(F.orig);
	Py_CLEAR(F.rows);
	Py_CLEAR(F.get_lock);
	Py_CLEAR(F.unlocked);
	Py_CLEAR(F.load_unlocked);
	Py_CLEAR(F.init_attrs);
	Py_CLEAR(F.verbose);
	Py_CLEAR(F.imp_acquire);
	Py_CLEAR(F.imp_release);
	Py_CLEAR(F.finder);
	Py_CLEAR(F.fast_types);
	return NULL;
}

static PyMethodDef pc_methods[] = {
	{ "fast_imports", pc_fast_imports, METH_VARARGS, fast_imports_doc },
	{ "keep_chunks", pc_keep_chunks, METH_NOARGS, keep_chunks_doc },
	{ "kept", pc_kept, METH_NOARGS, kept_doc },
	{ "prefault", pc_prefault, METH_O, prefault_doc },
	{ "record", pc_record, METH_NOARGS, record_doc },
	{ "recorded", pc_recorded, METH_NOARGS, recorded_doc },
	{ "apply", pc_apply, METH_VARARGS, apply_doc },
	{ "stats", pc_stats, METH_NOARGS, stats_doc },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef pc_module = {
	PyModuleDef_HEAD_INIT, "_plancode", "code compiled from strings, answered from a start-up plan.", -1,
	pc_methods,
};

PyMODINIT_FUNC PyInit__plancode(void)
{
	return PyModule_Create(&pc_module);
}
