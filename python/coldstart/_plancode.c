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
 * The extension does four more things for an applied plan, each in a part
 * of its own included below: _plan_arena.h stands in front of the
 * interpreter's arena allocator (frame stack chunks kept, new object arenas
 * faulted in whole), _plan_import.h imports the modules the plan's finder
 * answers in place of importlib's _find_and_load, _plan_crc.h computes the
 * CRC-32C the code archive's parts are checked with, and _plan_check.h
 * checks the plan's tables when it is read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include <errno.h>
#include <unistd.h>

#include "_plan_marshal.h"

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
	int checked; /* the table's bytes matched the plan's checksum */
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
static int compile_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **src, PyObject **filename,
			PyObject **mode, long *flags, long *optimize)
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
		/*
		 * A row's code is walked only in a table no checksum vouched
		 * for: with one, it is the bytes coldstart plan wrote, as a
		 * module's code from the archive is (apply_checked()).
		 */
		if (!S.checked &&
		    !marshal_ok(PyBytes_AS_STRING(PyTuple_GET_ITEM(r, 4)), PyBytes_GET_SIZE(PyTuple_GET_ITEM(r, 4))))
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

#define ENTRY(name, k)                                                                                                 \
	static PyObject *name##_kw(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)         \
	{                                                                                                              \
		return hook(k, self, args, nargs, kwnames);                                                            \
	}                                                                                                              \
	static PyObject *name##_fast(PyObject *self, PyObject *const *args, Py_ssize_t nargs)                          \
	{                                                                                                              \
		return hook(k, self, args, nargs, NULL);                                                               \
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

/*
 * The string table in data (marshal): a dict {str source: tuple of rows
 * (str filename, str mode, int flags, int optimize, bytes code)}.  Every key
 * and row is checked here, so lookup() only meets what it expects; a table
 * with anything else is refused whole (ValueError).  The caller has checked
 * the bytes' CRC against the plan; this (with marshal_ok(), for the table,
 * and for each row's code when no CRC vouched for it: S.checked) is the
 * second line, for a plan whose archive was damaged in a way the CRC did
 * not see.
 */
static PyObject *table_load(const char *data, Py_ssize_t len)
{
	PyObject *table, *key, *rows;
	Py_ssize_t pos = 0, i;

	if (!marshal_ok(data, len)) {
		PyErr_SetString(PyExc_ValueError, "the string table is malformed");
		return NULL;
	}
	table = PyMarshal_ReadObjectFromString(data, len);
	if (!table)
		return NULL;
	if (!PyDict_CheckExact(table))
		goto bad;
	while (PyDict_Next(table, &pos, &key, &rows)) {
		if (!PyUnicode_CheckExact(key) || !PyTuple_CheckExact(rows))
			goto bad;
		for (i = 0; i < PyTuple_GET_SIZE(rows); i++) {
			PyObject *r = PyTuple_GET_ITEM(rows, i);

			if (!PyTuple_CheckExact(r) || PyTuple_GET_SIZE(r) != 5 ||
			    !PyUnicode_CheckExact(PyTuple_GET_ITEM(r, 0)) ||
			    !PyUnicode_CheckExact(PyTuple_GET_ITEM(r, 1)) ||
			    !PyLong_CheckExact(PyTuple_GET_ITEM(r, 2)) || !PyLong_CheckExact(PyTuple_GET_ITEM(r, 3)) ||
			    !PyBytes_CheckExact(PyTuple_GET_ITEM(r, 4)))
				goto bad;
		}
	}
	return table;
bad:
	Py_DECREF(table);
	PyErr_SetString(PyExc_ValueError, "the string table is malformed");
	return NULL;
}

PyDoc_STRVAR(apply_doc,
	     "apply(data) -> int\n\nTakes the plan's string table (marshal data) and answers the calls it holds "
	     "from\nnow on; the table and each row's code are walked (check_marshal) before they\nare read.  Returns "
	     "the number of sources.");

static PyObject *table_apply(PyObject *args, int checked)
{
	Py_buffer buf;
	PyObject *table;

	if (!PyArg_ParseTuple(args, "y*", &buf))
		return NULL;
	if (S.record || S.table) {
		PyBuffer_Release(&buf);
		PyErr_SetString(PyExc_RuntimeError, "already recording or applying");
		return NULL;
	}
	if (buf.len <= 0 || buf.len > (Py_ssize_t)256 << 20) {
		PyBuffer_Release(&buf);
		PyErr_SetString(PyExc_ValueError, "bad table length");
		return NULL;
	}
	table = table_load(buf.buf, buf.len);
	PyBuffer_Release(&buf);
	if (!table)
		return NULL;
	if (patch() < 0) {
		Py_DECREF(table);
		return NULL;
	}
	S.table = table;
	S.checked = checked;
	return PyLong_FromSsize_t(PyDict_GET_SIZE(table));
}

static PyObject *pc_apply(PyObject *self, PyObject *args)
{
	return table_apply(args, 0);
}

PyDoc_STRVAR(apply_checked_doc,
	     "apply_checked(data) -> int\n\napply(data) for a table whose bytes matched the plan's checksum: the "
	     "table's\nstructure is walked before it is read, each row's code is not (the bytes are\nthose coldstart "
	     "plan wrote, as a module's code in the archive is).");

static PyObject *pc_apply_checked(PyObject *self, PyObject *args)
{
	return table_apply(args, 1);
}

PyDoc_STRVAR(stats_doc, "stats() -> (hits, misses)\n\nCalls answered from the table and calls on strings it did not "
			"hold.");

static PyObject *pc_stats(PyObject *self, PyObject *unused)
{
	return Py_BuildValue("(nn)", S.hits, S.misses);
}

PyDoc_STRVAR(check_marshal_doc,
	     "check_marshal(data) -> bool\n\nWhether marshal can read data (bytes) without the hazards of damaged\n"
	     "data: what the string table and its code pass before they are read.");

static PyObject *pc_check_marshal(PyObject *self, PyObject *arg)
{
	if (!PyBytes_Check(arg)) {
		PyErr_SetString(PyExc_TypeError, "check_marshal() takes bytes");
		return NULL;
	}
	return PyBool_FromLong(marshal_ok(PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg)));
}

#include "_plan_arena.h"
#include "_plan_import.h"
#include "_plan_crc.h"
#include "_plan_check.h"

static PyMethodDef pc_methods[] = {
	{ "fast_imports", pc_fast_imports, METH_VARARGS, fast_imports_doc },
	{ "keep_chunks", pc_keep_chunks, METH_NOARGS, keep_chunks_doc },
	{ "kept", pc_kept, METH_NOARGS, kept_doc },
	{ "prefault", pc_prefault, METH_O, prefault_doc },
	{ "gc_merge", pc_gc_merge, METH_O, gc_merge_doc },
	{ "record", pc_record, METH_NOARGS, record_doc },
	{ "recorded", pc_recorded, METH_NOARGS, recorded_doc },
	{ "apply", pc_apply, METH_VARARGS, apply_doc },
	{ "apply_checked", pc_apply_checked, METH_VARARGS, apply_checked_doc },
	{ "stats", pc_stats, METH_NOARGS, stats_doc },
	{ "check_marshal", pc_check_marshal, METH_O, check_marshal_doc },
	{ "crc32c", pc_crc32c, METH_O, crc32c_doc },
	{ "crc32c_table", pc_crc32c_table, METH_O, crc32c_table_doc },
	{ "crc32c_hw", pc_crc32c_hw, METH_NOARGS, crc32c_hw_doc },
	{ "check_index", pc_check_index, METH_VARARGS, check_index_doc },
	{ "check_spans", pc_check_spans, METH_VARARGS, check_spans_doc },
	{ "parse_at", pc_parse_at, METH_O, parse_at_doc },
	{ "check_all", pc_check_all, METH_O, check_all_doc },
	{ "check_from", pc_check_from, METH_O, check_from_doc },
	{ "stale", pc_stale, METH_VARARGS, stale_doc },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef pc_module = {
	PyModuleDef_HEAD_INIT,
	"_plancode",
	"code compiled from strings, answered from a start-up plan.",
	-1,
	pc_methods,
};

PyMODINIT_FUNC PyInit__plancode(void)
{
	return PyModule_Create(&pc_module);
}
