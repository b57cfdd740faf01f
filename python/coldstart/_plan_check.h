/*
 * The plan's column checks in C, part of the _plancode extension
 * (_plancode.c includes it once): check_index(), check_spans(),
 * check_all() and check_from() answer exactly what plan.py's
 * _good_index(), _good_spans(), _good_all() and _good_from() answer for the
 * same arguments: True when every row passes, False when anything is
 * unusual (plan.py then checks row by row, which says what is wrong; a
 * False here is never the verdict).  Applying a plan, these run once over
 * its index, archive entries, all and from tables: in Python, even a column
 * at a time, that was 2.2 M instructions for a numpy program's plan and 7.2
 * M for a pandas one's, most of it calls of type() and set insertions.
 * parse_at() reads the archive entries from the compact form coldstart
 * plan writes them in, as plan.py's _parse_at_py() does.
 *
 * The rules, as plan.py's: a name is a str, not empty, without NUL, "/" or
 * "..", neither starting nor ending with "."; a path is a str starting with
 * "/" without NUL; an integer is an int (not a bool).  Where plan.py joins
 * strings (which takes str subclasses) the checks here take them too; where
 * it compares types, they take the exact type.  Nothing here raises: an
 * error on the way (an unhashable kind) is a False.
 */
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

/* plan.py's _names_ok() for one item of the joined list. */
static int name_ok(PyObject *s)
{
	Py_ssize_t n, i;
	int kind;
	const void *data;
	Py_UCS4 prev = 0;

	if (!PyUnicode_Check(s) || PyUnicode_READY(s) < 0)
		return 0;
	n = PyUnicode_GET_LENGTH(s);
	if (n == 0)
		return 0;
	kind = PyUnicode_KIND(s);
	data = PyUnicode_DATA(s);
	if (PyUnicode_READ(kind, data, 0) == '.' || PyUnicode_READ(kind, data, n - 1) == '.')
		return 0;
	if (kind == PyUnicode_1BYTE_KIND) {
		/* Nearly every name: a byte loop, not a read through the kind per character. */
		const unsigned char *b = data;

		for (i = 0; i < n; i++) {
			if (b[i] == 0 || b[i] == '/' || (b[i] == '.' && i && b[i - 1] == '.'))
				return 0;
		}
		return 1;
	}
	for (i = 0; i < n; i++) {
		Py_UCS4 c = PyUnicode_READ(kind, data, i);

		if (c == 0 || c == '/' || (c == '.' && prev == '.'))
			return 0;
		prev = c;
	}
	return 1;
}

/* plan.py's _paths_ok() for one item. */
static int path_ok(PyObject *s)
{
	if (!PyUnicode_Check(s) || PyUnicode_READY(s) < 0 || PyUnicode_GET_LENGTH(s) == 0 ||
	    PyUnicode_READ_CHAR(s, 0) != '/')
		return 0;
	return PyUnicode_FindChar(s, 0, 0, PyUnicode_GET_LENGTH(s), 1) == -1;
}

/* A name without a dot at all (a rebound attribute). */
static int attr_ok(PyObject *s)
{
	return name_ok(s) && PyUnicode_FindChar(s, '.', 0, PyUnicode_GET_LENGTH(s), 1) == -1;
}

/* Whether the int o is at least lo (o an exact int). */
static int int_at_least(PyObject *o, long long lo)
{
	int overflow;
	long long v = PyLong_AsLongLongAndOverflow(o, &overflow);

	if (overflow)
		return overflow > 0;
	if (v == -1 && PyErr_Occurred()) {
		PyErr_Clear();
		return 0;
	}
	return v >= lo;
}

/* None, or an exact list whose items all pass ok(). */
static int list_of(PyObject *o, int (*ok)(PyObject *))
{
	if (o == Py_None)
		return 1;
	if (!PyList_CheckExact(o))
		return 0;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); i++)
		if (!ok(PyList_GET_ITEM(o, i)))
			return 0;
	return 1;
}

/* In set (a frozenset of str); an error on the way (unhashable) is a no. */
static int member(PyObject *set, PyObject *o)
{
	int r = PySet_Contains(set, o);

	if (r < 0) {
		PyErr_Clear();
		return 0;
	}
	return r;
}

enum { IX_NAME, IX_KIND, IX_PATH, IX_SIZE, IX_MTIME, IX_ACTION, IX_USED, IX_DIR, IX_SEARCH, IX_EI, IX_REBINDS, IX_N };

static int index_row_ok(PyObject *row, PyObject *kinds, PyObject *actions)
{
	PyObject **f, *o;

	if (!PyList_CheckExact(row) || PyList_GET_SIZE(row) != IX_N)
		return 0;
	f = ((PyListObject *)row)->ob_item;
	if (!name_ok(f[IX_NAME]) || !path_ok(f[IX_PATH]) || !member(kinds, f[IX_KIND]) ||
	    !member(actions, f[IX_ACTION]))
		return 0;
	if (!PyLong_CheckExact(f[IX_SIZE]) || !int_at_least(f[IX_SIZE], 0) || !PyLong_CheckExact(f[IX_MTIME]))
		return 0;
	o = f[IX_USED];
	if (o != Py_None && !PyBool_Check(o))
		return 0;
	o = f[IX_DIR];
	if (o != Py_None && !(PyUnicode_CheckExact(o) && path_ok(o)))
		return 0;
	o = f[IX_EI];
	if (o != Py_None && !(PyLong_CheckExact(o) && int_at_least(o, -1)))
		return 0;
	return list_of(f[IX_SEARCH], path_ok) && list_of(f[IX_REBINDS], attr_ok);
}

PyDoc_STRVAR(check_index_doc, "check_index(index, kinds, actions) -> bool\n\nplan.py's _good_index(index), "
			      "with the frozensets of the\nkinds and actions it knows.");

static PyObject *pc_check_index(PyObject *self, PyObject *args)
{
	PyObject *index, *kinds, *actions;

	if (!PyArg_ParseTuple(args, "OO!O!", &index, &PyFrozenSet_Type, &kinds, &PyFrozenSet_Type, &actions))
		return NULL;
	if (!PyList_CheckExact(index))
		Py_RETURN_FALSE;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(index); i++)
		if (!index_row_ok(PyList_GET_ITEM(index, i), kinds, actions))
			Py_RETURN_FALSE;
	Py_RETURN_TRUE;
}

/* start + length <= size, for exact ints of any size. */
static int span_inside(PyObject *start, PyObject *length, PyObject *size)
{
	int o1, o2, o3, r;
	long long a = PyLong_AsLongLongAndOverflow(start, &o1), b = PyLong_AsLongLongAndOverflow(length, &o2),
		  c = PyLong_AsLongLongAndOverflow(size, &o3);
	PyObject *end;

	if (!o1 && !o2 && !o3 && !PyErr_Occurred() && a <= LLONG_MAX - b)
		return a + b <= c;
	PyErr_Clear();
	end = PyNumber_Add(start, length);
	if (!end) {
		PyErr_Clear();
		return 0;
	}
	r = PyObject_RichCompareBool(end, size, Py_LE);
	Py_DECREF(end);
	if (r < 0) {
		PyErr_Clear();
		return 0;
	}
	return r;
}

PyDoc_STRVAR(check_spans_doc, "check_spans(at, size, n) -> bool\n\nplan.py's _good_spans(at, size, n).");

static PyObject *pc_check_spans(PyObject *self, PyObject *args)
{
	PyObject *at, *size;
	Py_ssize_t n;

	if (!PyArg_ParseTuple(args, "OO!n", &at, &PyLong_Type, &size, &n))
		return NULL;
	if (!PyList_CheckExact(at))
		Py_RETURN_FALSE;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(at); i++) {
		PyObject *e = PyList_GET_ITEM(at, i);
		Py_ssize_t k, len;

		if (e == Py_None)
			continue;
		if (!PyList_CheckExact(e) || (len = PyList_GET_SIZE(e)) < n || len < 2)
			Py_RETURN_FALSE;
		for (k = 0; k < len; k++) {
			PyObject *x = PyList_GET_ITEM(e, k);

			if (!PyLong_CheckExact(x) || !int_at_least(x, 0))
				Py_RETURN_FALSE;
		}
		if (!int_at_least(PyList_GET_ITEM(e, 1), 1) ||
		    !span_inside(PyList_GET_ITEM(e, 0), PyList_GET_ITEM(e, 1), size))
			Py_RETURN_FALSE;
	}
	Py_RETURN_TRUE;
}

PyDoc_STRVAR(parse_at_doc, "parse_at(s) -> list or None\n\n"
			   "plan.py's _parse_at_py(s): the archive entries of code.at in the form\n"
			   "plan_code.encode_at() writes (entries separated by one space, '-' for\n"
			   "none, an entry's integers in lowercase hex separated by commas), as a list\n"
			   "of lists of int and None; None when s is not of that form.");

/* The value of a lowercase hex digit, or -1. */
static int hex_digit(unsigned c)
{
	if (c - '0' < 10)
		return (int)(c - '0');
	if (c - 'a' < 6)
		return (int)(c - 'a' + 10);
	return -1;
}

/*
 * The entry in p[0..n): None, a list of its fields (each 1 to 16
 * lowercase hex digits, an unsigned 64-bit value, as int(x, 16) reads it
 * once plan.py has checked that x is only those digits), or NULL
 * (malformed: no error set; or an error set).
 */
static PyObject *at_entry(const unsigned char *p, Py_ssize_t n)
{
	PyObject *row, *o;
	Py_ssize_t i, k = 1, f = 0, digits = 0;
	unsigned long long v = 0;

	if (n == 1 && p[0] == '-')
		Py_RETURN_NONE;
	for (i = 0; i < n; i++)
		k += p[i] == ',';
	if (!(row = PyList_New(k)))
		return NULL;
	for (i = 0;; i++) {
		int d;

		if (i == n || p[i] == ',') {
			if (digits == 0 || digits > 16 || !(o = PyLong_FromUnsignedLongLong(v)))
				goto bad;
			PyList_SET_ITEM(row, f++, o);
			if (i == n)
				return row;
			v = 0;
			digits = 0;
			continue;
		}
		if ((d = hex_digit(p[i])) < 0)
			goto bad;
		v = v << 4 | (unsigned)d;
		digits++;
	}
bad:
	Py_DECREF(row); /* the items not set yet are NULL, which list_dealloc skips */
	return NULL;
}

/*
 * Applying a plan, this replaces reading the entries as JSON arrays: for
 * a numpy program's 157 entries of seven integers (ctimes of 19 digits)
 * the JSON scanner and int() took about 0.8 M instructions.
 */
static PyObject *pc_parse_at(PyObject *self, PyObject *s)
{
	PyObject *rows, *e;
	const unsigned char *p;
	Py_ssize_t n, a = 0, b;

	if (!PyUnicode_CheckExact(s))
		Py_RETURN_NONE;
	if (PyUnicode_READY(s) < 0)
		return NULL;
	if (!PyUnicode_IS_ASCII(s))
		Py_RETURN_NONE;
	p = PyUnicode_1BYTE_DATA(s);
	n = PyUnicode_GET_LENGTH(s);
	if (!(rows = PyList_New(0)))
		return NULL;
	while (n > 0) {
		for (b = a; b < n && p[b] != ' '; b++)
			;
		e = at_entry(p + a, b - a);
		if (!e) {
			Py_DECREF(rows);
			if (PyErr_Occurred())
				return NULL;
			Py_RETURN_NONE;
		}
		if (PyList_Append(rows, e) < 0) {
			Py_DECREF(e);
			Py_DECREF(rows);
			return NULL;
		}
		Py_DECREF(e);
		if (b == n)
			break;
		a = b + 1; /* past the space: an entry must follow */
	}
	return rows;
}

/* An exact str (the all and from tables' names and attributes). */
static int exact_str(PyObject *s)
{
	return PyUnicode_CheckExact(s);
}

PyDoc_STRVAR(check_all_doc, "check_all(alls) -> bool\n\nplan.py's _good_all(alls).");

static PyObject *pc_check_all(PyObject *self, PyObject *alls)
{
	PyObject *k, *v;
	Py_ssize_t pos = 0;

	if (!PyDict_CheckExact(alls))
		Py_RETURN_FALSE;
	while (PyDict_Next(alls, &pos, &k, &v)) {
		if (PyDict_CheckExact(v)) {
			v = PyDict_GetItemString(v, "tuple"); /* borrowed; NULL when missing */
			if (!v)
				Py_RETURN_FALSE;
		}
		if (!name_ok(k) || !PyList_CheckExact(v) || !list_of(v, exact_str))
			Py_RETURN_FALSE;
	}
	Py_RETURN_TRUE;
}

PyDoc_STRVAR(check_from_doc, "check_from(table) -> bool\n\nplan.py's _good_from(table).");

static PyObject *pc_check_from(PyObject *self, PyObject *table)
{
	PyObject *k, *rows;
	Py_ssize_t pos = 0;

	if (!PyDict_CheckExact(table))
		Py_RETURN_FALSE;
	while (PyDict_Next(table, &pos, &k, &rows)) {
		if (!name_ok(k) || !PyList_CheckExact(rows))
			Py_RETURN_FALSE;
		for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++) {
			PyObject *r = PyList_GET_ITEM(rows, i);
			Py_ssize_t len, j;

			if (!PyList_CheckExact(r) || (len = PyList_GET_SIZE(r)) < 2 || len > 4 ||
			    !name_ok(PyList_GET_ITEM(r, 0)))
				Py_RETURN_FALSE;
			for (j = 1; j < len; j++)
				if (!PyUnicode_CheckExact(PyList_GET_ITEM(r, j)))
					Py_RETURN_FALSE;
			/* A star row carries the names it binds (a third field). */
			if (len == 2 && !PyUnicode_CompareWithASCIIString(PyList_GET_ITEM(r, 1), "*"))
				Py_RETURN_FALSE;
		}
	}
	Py_RETURN_TRUE;
}

/* The int o as a long long in *v; 0 when it is one, -1 when not (too big). */
static int as_ll(PyObject *o, long long *v)
{
	int overflow;

	if (!PyLong_Check(o))
		return -1;
	*v = PyLong_AsLongLongAndOverflow(o, &overflow);
	if (overflow || (*v == -1 && PyErr_Occurred())) {
		PyErr_Clear();
		return -1;
	}
	return 0;
}

static long long ns_of(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

PyDoc_STRVAR(stale_doc,
	     "stale(index, at) -> (i, suspects)\n\nplan.py's check() loop over a checked index: stats every row's "
	     "file as\nos.stat does; i is the first row whose file is gone or whose size or mtime\nis not the "
	     "recorded one (-1: none), suspects the names of the rows before it\nwhose ctime or inode is not the "
	     "one their archive entry (at, or None)\nrecorded.");

static PyObject *pc_stale(PyObject *self, PyObject *args)
{
	PyObject *index, *at, *suspects;
	Py_ssize_t i, n;

	if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &index, &at))
		return NULL;
	n = PyList_GET_SIZE(index);
	if (at != Py_None && (!PyList_Check(at) || PyList_GET_SIZE(at) != n)) {
		PyErr_SetString(PyExc_ValueError, "at is not None or a list as long as index");
		return NULL;
	}
	suspects = PyList_New(0);
	if (!suspects)
		return NULL;
	for (i = 0; i < n; i++) {
		PyObject *row = PyList_GET_ITEM(index, i), *path, *bytes, *a;
		struct stat st;
		long long size, mtime, v;
		PyThreadState *ts;
		int r;

		if (!PyList_Check(row) || PyList_GET_SIZE(row) != IX_N)
			break;
		path = PyList_GET_ITEM(row, IX_PATH);
		if (!PyUnicode_Check(path))
			break;
		bytes = PyUnicode_EncodeFSDefault(path);
		if (!bytes) {
			PyErr_Clear();
			break;
		}
		if ((size_t)PyBytes_GET_SIZE(bytes) != strlen(PyBytes_AS_STRING(bytes))) {
			Py_DECREF(bytes);
			break; /* a NUL: os.stat's ValueError */
		}
		/* Other threads run meanwhile, as around os.stat's. */
		ts = PyEval_SaveThread();
		r = stat(PyBytes_AS_STRING(bytes), &st);
		PyEval_RestoreThread(ts);
		Py_DECREF(bytes);
		if (r != 0 || as_ll(PyList_GET_ITEM(row, IX_SIZE), &size) < 0 ||
		    as_ll(PyList_GET_ITEM(row, IX_MTIME), &mtime) < 0 || (long long)st.st_size != size ||
		    ns_of(&st.st_mtim) != mtime)
			break;
		if (at == Py_None)
			continue;
		a = PyList_GET_ITEM(at, i);
		if (!PyList_Check(a) || PyList_GET_SIZE(a) < 6)
			continue;
		if (as_ll(PyList_GET_ITEM(a, 3), &v) < 0 || v != ns_of(&st.st_ctim) ||
		    as_ll(PyList_GET_ITEM(a, 4), &v) < 0 || (unsigned long long)v != (unsigned long long)st.st_ino) {
			if (PyList_Append(suspects, PyList_GET_ITEM(row, IX_NAME)) < 0) {
				Py_DECREF(suspects);
				return NULL;
			}
		}
	}
	return Py_BuildValue("(nN)", i < n ? i : (Py_ssize_t)-1, suspects);
}
