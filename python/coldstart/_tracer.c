/*
 * coldstart's in-process import tracer, a CPython extension (3.7+).  It wraps
 * importlib's _find_and_load and _find_spec, adds a C audit hook (3.8+), and
 * appends one text record per fact to this process's trace file, mapped
 * MAP_SHARED so a SIGKILLed process still leaves every record it wrote.
 * The record format is docs/trace-format.md; the pure-Python fallback
 * (_pytracer.py) writes the same records.  Any internal failure stops tracing
 * silently: the target must behave as if the tracer were absent.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TRACE_VERSION 1
#define CHUNK ((size_t)256 * 1024)
#define DETAIL_MAX 400
#define REC_MAX 4096

struct tracer {
	int enabled;
	int forked; /* set in the child by pthread_atfork: reopen before writing */
	int fd;
	char *map;
	size_t size, used;
	long pid;
	int statm_fd;
	long page_kb;
	int audit;
	int installed;
	int sleep_wrapped;
	char dir[PATH_MAX];
};

static struct tracer T = { 0, 0, -1, NULL, 0, 0, 0, -1, 4, 0, 0, 0, "" };
static _Thread_local int tls_tno;
static int next_tno; /* only touched with the GIL held */

struct rec {
	char b[REC_MAX];
	size_t n;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void rec_ch(struct rec *r, char c)
{
	if (r->n < REC_MAX - 2)
		r->b[r->n++] = c;
}

static void rec_i64(struct rec *r, int64_t v)
{
	char tmp[24];
	int i = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	if (v < 0)
		rec_ch(r, '-');
	do {
		tmp[i++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	while (i)
		rec_ch(r, tmp[--i]);
}

/* Appends s escaped (\\ \t \n \r, other control bytes as \xHH), at most max bytes of input. */
static void rec_str(struct rec *r, const char *s, size_t len, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (len > max)
		len = max;
	for (i = 0; i < len && r->n < REC_MAX - 8; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\') {
			rec_ch(r, '\\');
			rec_ch(r, '\\');
		} else if (c == '\t') {
			rec_ch(r, '\\');
			rec_ch(r, 't');
		} else if (c == '\n') {
			rec_ch(r, '\\');
			rec_ch(r, 'n');
		} else if (c == '\r') {
			rec_ch(r, '\\');
			rec_ch(r, 'r');
		} else if (c < 0x20) {
			rec_ch(r, '\\');
			rec_ch(r, 'x');
			rec_ch(r, hex[c >> 4]);
			rec_ch(r, hex[c & 15]);
		} else {
			rec_ch(r, (char)c);
		}
	}
}

static void rec_strz(struct rec *r, const char *s)
{
	rec_str(r, s, strlen(s), REC_MAX);
}

static void rec_start(struct rec *r, char type, int64_t t)
{
	r->n = 0;
	rec_ch(r, type);
	rec_ch(r, '\t');
	rec_i64(r, t);
}

static int thread_no(void)
{
	if (!tls_tno)
		tls_tno = ++next_tno;
	return tls_tno;
}

static long rss_kb(void)
{
	char b[128];
	ssize_t n;
	char *p;

	if (T.statm_fd < 0)
		return -1;
	n = pread(T.statm_fd, b, sizeof(b) - 1, 0);
	if (n <= 0)
		return -1;
	b[n] = '\0';
	p = strchr(b, ' ');
	if (!p)
		return -1;
	return strtol(p + 1, NULL, 10) * T.page_kb;
}

/* Stops tracing for good in this process; the hook and wrappers stay but do nothing. */
static void tracer_disable(void)
{
	T.enabled = 0;
}

static int map_reserve(size_t n)
{
	size_t size;
	void *p;

	if (T.used + n + 1 <= T.size)
		return 0;
	size = T.size * 2;
	if (size > T.size + 16 * CHUNK)
		size = T.size + 16 * CHUNK;
	while (size < T.used + n + 1)
		size += CHUNK;
	if (ftruncate(T.fd, (off_t)size) < 0)
		return -1;
	p = mremap(T.map, T.size, size, MREMAP_MAYMOVE);
	if (p == MAP_FAILED)
		return -1;
	T.map = p;
	T.size = size;
	return 0;
}

static int trace_open(void);

/* Appends a finished record (the newline is added here) to the mapping. */
static int map_append(struct rec *r)
{
	r->b[r->n++] = '\n';
	if (map_reserve(r->n) < 0)
		return -1;
	memcpy(T.map + T.used, r->b, r->n);
	T.used += r->n;
	return 0;
}

static void emit(struct rec *r)
{
	if (!T.enabled)
		return;
	if (T.forked) {
		T.forked = 0;
		if (T.map)
			munmap(T.map, T.size);
		if (T.fd >= 0)
			close(T.fd);
		if (T.statm_fd >= 0)
			close(T.statm_fd);
		T.map = NULL;
		T.fd = -1;
		T.statm_fd = -1;
		if (trace_open() < 0) {
			tracer_disable();
			return;
		}
	}
	if (map_append(r) < 0)
		tracer_disable();
}

/* Process start in CLOCK_MONOTONIC, from /proc/self/stat (clock-tick resolution). */
static int64_t process_start_ns(int64_t now_mono)
{
	char b[1024], *p;
	ssize_t n;
	int fd, field;
	unsigned long long ticks;
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec boot;
	int64_t start_boot, now_boot;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return now_mono;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0 || hz <= 0)
		return now_mono;
	b[n] = '\0';
	p = strrchr(b, ')');
	if (!p)
		return now_mono;
	/* After ") " comes field 3 (state); starttime is field 22. */
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return now_mono;
	ticks = strtoull(p + 1, NULL, 10);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	now_boot = (int64_t)boot.tv_sec * 1000000000 + boot.tv_nsec;
	start_boot = (int64_t)(ticks * (1000000000ULL / (unsigned long long)hz));
	if (start_boot > now_boot)
		return now_mono;
	return now_mono - (now_boot - start_boot);
}

static int emit_header(void)
{
	struct rec r;
	char b[REC_MAX];
	ssize_t n;
	int fd, i;
	int64_t t = mono_ns();
	const char *ver = Py_GetVersion();
	size_t vlen = strcspn(ver, " ");

	r.n = 0;
	rec_strz(&r, "#coldstart-trace 1");
	if (map_append(&r) < 0)
		return -1;
	rec_start(&r, 'H', t);
	rec_ch(&r, '\t');
	rec_i64(&r, T.pid);
	rec_ch(&r, '\t');
	rec_i64(&r, getppid());
	rec_ch(&r, '\t');
	rec_i64(&r, process_start_ns(t));
	rec_ch(&r, '\t');
	rec_strz(&r, "c");
	rec_ch(&r, '\t');
	rec_str(&r, ver, vlen, 64);
	rec_ch(&r, '\t');
	rec_strz(&r, T.audit ? "audit" : "noaudit");
	if (map_append(&r) < 0)
		return -1;

	/* The real argv, NUL-separated in /proc/self/cmdline. */
	rec_start(&r, 'V', t);
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, b, sizeof(b) - 1) : -1;
	if (fd >= 0)
		close(fd);
	for (i = 0; n > 0 && i < n;) {
		size_t len = strnlen(b + i, (size_t)(n - i));

		rec_ch(&r, '\t');
		rec_str(&r, b + i, len, DETAIL_MAX);
		i += (int)len + 1;
	}
	return map_append(&r);
}

static int trace_open(void)
{
	char path[PATH_MAX + 64];
	int fd = -1, i;
	void *p;

	T.pid = (long)getpid();
	for (i = 0; i < 1000; i++) {
		snprintf(path, sizeof(path), "%s/%ld-%d.trace", T.dir, T.pid, i);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)CHUNK) < 0) {
		close(fd);
		return -1;
	}
	p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	T.fd = fd;
	T.map = p;
	T.size = CHUNK;
	T.used = 0;
	T.statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	return emit_header();
}

static void atfork_child(void)
{
	/* Only a flag here: the new file is opened at the first record. */
	if (T.enabled)
		T.forked = 1;
}

static void tracer_atexit(void)
{
	struct rec r;

	if (!T.enabled || T.forked)
		return;
	rec_start(&r, 'Q', mono_ns());
	emit(&r);
	T.enabled = 0;
	munmap(T.map, T.size);
	T.map = NULL;
	/* Cut the unused tail; readers stop at the first NUL anyway. */
	if (ftruncate(T.fd, (off_t)T.used) < 0)
		T.used = 0;
	close(T.fd);
	T.fd = -1;
}

static void rec_repr(struct rec *r, PyObject *o)
{
	Py_ssize_t len;
	const char *s;
	PyObject *rep;

	if (PyUnicode_Check(o) && (s = PyUnicode_AsUTF8AndSize(o, &len))) {
		rec_str(r, s, (size_t)len, DETAIL_MAX);
		return;
	}
	rep = PyObject_Repr(o);
	if (rep && (s = PyUnicode_AsUTF8AndSize(rep, &len)))
		rec_str(r, s, (size_t)len, DETAIL_MAX);
	Py_XDECREF(rep);
}

static void emit_import(char type, PyObject *name, const char *extra, size_t extra_len)
{
	struct rec r;
	Py_ssize_t len;
	const char *s = PyUnicode_AsUTF8AndSize(name, &len);
	int64_t t = mono_ns();

	if (!s) {
		PyErr_Clear();
		return;
	}
	rec_start(&r, type, t);
	rec_ch(&r, '\t');
	rec_i64(&r, thread_no());
	if (type != 'f') {
		rec_ch(&r, '\t');
		rec_i64(&r, rss_kb());
	}
	rec_ch(&r, '\t');
	rec_str(&r, s, (size_t)len, DETAIL_MAX);
	if (extra) {
		rec_ch(&r, '\t');
		rec_str(&r, extra, extra_len, DETAIL_MAX);
	}
	emit(&r);
}

static int install_wrapper(PyObject *mod, PyMethodDef *def);

/*
 * Before 3.13 time.sleep raises no audit event: wrap it so a sleep at import
 * is recorded as the same "time.sleep" event.
 */
static PyObject *wrap_sleep(PyObject *orig, PyObject *args, PyObject *kw)
{
	if (T.enabled && PyTuple_GET_SIZE(args) == 1) {
		struct rec r;
		PyObject *et, *ev, *etb;

		PyErr_Fetch(&et, &ev, &etb);
		rec_start(&r, 'A', mono_ns());
		rec_ch(&r, '\t');
		rec_i64(&r, thread_no());
		rec_ch(&r, '\t');
		rec_strz(&r, "time.sleep");
		rec_ch(&r, '\t');
		rec_repr(&r, PyTuple_GET_ITEM(args, 0));
		emit(&r);
		if (PyErr_Occurred())
			PyErr_Clear();
		PyErr_Restore(et, ev, etb);
	}
	return PyObject_Call(orig, args, kw);
}

static PyMethodDef sleep_def = { "sleep", (PyCFunction)(void (*)(void))wrap_sleep, METH_VARARGS | METH_KEYWORDS,
				 NULL };

static void maybe_wrap_sleep(void)
{
	PyObject *mod;

	if (T.sleep_wrapped)
		return;
	mod = PyDict_GetItemString(PyImport_GetModuleDict(), "time");
	if (!mod)
		return;
	T.sleep_wrapped = 1;
	/*
	 * 3.13 raises the event itself (3.12.1 and 3.11 were checked not to).
	 * Probing with time.sleep(0) instead would yield the CPU on a busy
	 * machine: a start-up cost the target would pay.
	 */
	if (PY_VERSION_HEX >= 0x030D0000)
		return;
	if (install_wrapper(mod, &sleep_def) < 0)
		PyErr_Clear();
}

/*
 * importlib._bootstrap._find_and_load(name, import_): import.c calls it
 * through an attribute lookup for every import not yet in sys.modules, and
 * import_module() reaches it through the module's globals.
 */
static PyObject *wrap_find_and_load(PyObject *orig, PyObject *args, PyObject *kw)
{
	PyObject *name = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
	PyObject *res;

	if (!T.enabled || !name || !PyUnicode_Check(name))
		return PyObject_Call(orig, args, kw);
	emit_import('S', name, NULL, 0);
	res = PyObject_Call(orig, args, kw);
	if (res) {
		emit_import('E', name, NULL, 0);
		if (!T.sleep_wrapped && !PyUnicode_CompareWithASCIIString(name, "time"))
			maybe_wrap_sleep();
	} else {
		PyObject *type = PyErr_Occurred();
		const char *tn = type && PyType_Check(type) ? ((PyTypeObject *)type)->tp_name : "?";

		emit_import('F', name, tn, strlen(tn));
	}
	return res;
}

/*
 * The bytes of a str or bytes object, NULL otherwise.  A str that holds
 * surrogate escapes (a file name that is not UTF-8, as os.fsdecode makes
 * it) gives the file system's bytes through *tmp, which the caller
 * releases; the C tool escapes such bytes when it writes them.
 */
static const char *obj_text(PyObject *o, Py_ssize_t *len, PyObject **tmp)
{
	const char *s;

	if (PyBytes_Check(o)) {
		*len = PyBytes_GET_SIZE(o);
		return PyBytes_AS_STRING(o);
	}
	if (!PyUnicode_Check(o))
		return NULL;
	s = PyUnicode_AsUTF8AndSize(o, len);
	if (s || *tmp)
		return s;
	PyErr_Clear();
	*tmp = PyUnicode_EncodeFSDefault(o);
	if (!*tmp) {
		PyErr_Clear();
		return NULL;
	}
	*len = PyBytes_GET_SIZE(*tmp);
	return PyBytes_AS_STRING(*tmp);
}

/* importlib._bootstrap._find_spec(name, path, target=None): the find phase. */
static PyObject *wrap_find_spec(PyObject *orig, PyObject *args, PyObject *kw)
{
	PyObject *name = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
	PyObject *res = PyObject_Call(orig, args, kw);
	PyObject *origin = NULL, *tmp = NULL;
	const char *o = "";
	Py_ssize_t olen = 0;

	if (!res || !T.enabled || !name || !PyUnicode_Check(name))
		return res;
	if (res != Py_None) {
		origin = PyObject_GetAttrString(res, "origin");
		if (origin && PyUnicode_Check(origin)) {
			o = obj_text(origin, &olen, &tmp);
			if (!o) {
				o = "";
				olen = 0;
			}
		}
		if (PyErr_Occurred())
			PyErr_Clear();
	}
	emit_import('f', name, o, (size_t)olen);
	Py_XDECREF(tmp);
	Py_XDECREF(origin);
	return res;
}

static PyMethodDef find_and_load_def = { "_find_and_load", (PyCFunction)(void (*)(void))wrap_find_and_load,
					  METH_VARARGS | METH_KEYWORDS, NULL };
static PyMethodDef find_spec_def = { "_find_spec", (PyCFunction)(void (*)(void))wrap_find_spec,
				     METH_VARARGS | METH_KEYWORDS, NULL };

static int install_wrapper(PyObject *mod, PyMethodDef *def)
{
	PyObject *orig = PyObject_GetAttrString(mod, def->ml_name);
	PyObject *w;
	int rc;

	if (!orig)
		return -1;
	if (PyCFunction_Check(orig) && PyCFunction_GET_FUNCTION(orig) == def->ml_meth) {
		Py_DECREF(orig);
		return 0;
	}
	w = PyCFunction_New(def, orig);
	Py_DECREF(orig);
	if (!w)
		return -1;
	rc = PyObject_SetAttrString(mod, def->ml_name, w);
	Py_DECREF(w);
	return rc;
}

#if PY_VERSION_HEX >= 0x03080000
static _Thread_local int tls_busy;

enum ev_kind { EV_OPEN, EV_COMPILE, EV_EXEC, EV_ARG, EV_HOSTPORT, EV_NOARG };

struct ev {
	const char *name;
	enum ev_kind kind;
	int arg; /* for EV_ARG: the argument shown */
};

/* Audit events that matter at start-up (PEP 578 names). */
static const struct ev events[] = {
	{ "open", EV_OPEN, 0 },
	{ "compile", EV_COMPILE, 1 },
	{ "exec", EV_EXEC, 0 },
	{ "socket.connect", EV_ARG, 1 },
	{ "socket.bind", EV_ARG, 1 },
	{ "socket.getaddrinfo", EV_HOSTPORT, 0 },
	{ "socket.gethostbyname", EV_ARG, 0 },
	{ "subprocess.Popen", EV_ARG, 1 },
	{ "os.system", EV_ARG, 0 },
	{ "os.exec", EV_ARG, 1 },
	{ "os.posix_spawn", EV_ARG, 1 },
	{ "os.spawn", EV_ARG, 2 },
	{ "os.fork", EV_NOARG, 0 },
	{ "os.forkpty", EV_NOARG, 0 },
	{ "os.remove", EV_ARG, 0 },
	{ "os.rename", EV_ARG, 1 },
	{ "os.mkdir", EV_ARG, 0 },
	{ "time.sleep", EV_ARG, 0 },
	{ "ctypes.dlopen", EV_ARG, 0 },
	{ "urllib.Request", EV_ARG, 0 },
};

static const struct ev *ev_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (events[i].name[0] == name[0] && !strcmp(events[i].name, name))
			return &events[i];
	return NULL;
}


static int ends_with(const char *s, Py_ssize_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= (Py_ssize_t)n && !memcmp(s + len - n, suffix, n);
}

static void audit_record(const struct ev *e, const char *event, PyObject *args)
{
	struct rec r;
	Py_ssize_t nargs = PyTuple_Check(args) ? PyTuple_GET_SIZE(args) : 0;
	Py_ssize_t len = 0;
	const char *s;
	PyObject *tmp = NULL;

	rec_start(&r, 'A', mono_ns());
	rec_ch(&r, '\t');
	rec_i64(&r, thread_no());
	rec_ch(&r, '\t');
	rec_strz(&r, event);
	rec_ch(&r, '\t');
	switch (e->kind) {
	case EV_OPEN: {
		PyObject *mode = nargs > 1 ? PyTuple_GET_ITEM(args, 1) : Py_None;
		PyObject *flags = nargs > 2 ? PyTuple_GET_ITEM(args, 2) : Py_None;
		int writing = 0;

		s = nargs > 0 ? obj_text(PyTuple_GET_ITEM(args, 0), &len, &tmp) : NULL;
		if (!s)
			goto out;
		if (PyUnicode_Check(mode)) {
			const char *m = PyUnicode_AsUTF8(mode);

			writing = m && strpbrk(m, "wax+") != NULL;
		} else if (PyLong_Check(flags)) {
			long fl = PyLong_AsLong(flags);

			writing = fl != -1 && (fl & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND));
		}
		if (!writing && !ends_with(s, len, ".py") && !ends_with(s, len, ".pyc"))
			goto out;
		rec_strz(&r, writing ? "w:" : "r:");
		rec_str(&r, s, (size_t)len, DETAIL_MAX);
		break;
	}
	case EV_COMPILE:
		s = nargs > 1 ? obj_text(PyTuple_GET_ITEM(args, 1), &len, &tmp) : NULL;
		if (!s || len == 0 || s[0] == '<')
			goto out;
		rec_str(&r, s, (size_t)len, DETAIL_MAX);
		break;
	case EV_EXEC: {
		PyObject *code = nargs > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
		PyObject *fn;

		if (!code || !PyCode_Check(code))
			goto out;
		fn = ((PyCodeObject *)code)->co_filename;
		s = fn && PyUnicode_Check(fn) ? obj_text(fn, &len, &tmp) : NULL;
		if (!s || len == 0 || s[0] == '<')
			goto out;
		rec_str(&r, s, (size_t)len, DETAIL_MAX);
		break;
	}
	case EV_ARG:
		if (e->arg < nargs)
			rec_repr(&r, PyTuple_GET_ITEM(args, e->arg));
		break;
	case EV_HOSTPORT:
		if (nargs > 1) {
			rec_repr(&r, PyTuple_GET_ITEM(args, 0));
			rec_ch(&r, ':');
			rec_repr(&r, PyTuple_GET_ITEM(args, 1));
		}
		break;
	case EV_NOARG:
		break;
	}
	emit(&r);
out:
	Py_XDECREF(tmp);
}

static int audit_hook(const char *event, PyObject *args, void *data)
{
	const struct ev *e;
	PyObject *et, *ev, *etb;

	if (!T.enabled || tls_busy)
		return 0;
	e = ev_lookup(event);
	if (!e)
		return 0;
	tls_busy = 1;
	PyErr_Fetch(&et, &ev, &etb);
	audit_record(e, event, args);
	if (PyErr_Occurred())
		PyErr_Clear();
	PyErr_Restore(et, ev, etb);
	tls_busy = 0;
	return 0;
}
#endif

PyDoc_STRVAR(start_doc, "start(trace_dir) -> bool\n\nStarts tracing this process (and its forks) into trace_dir.");

static PyObject *tracer_start(PyObject *self, PyObject *args)
{
	const char *dir;
	PyObject *mod;

	if (!PyArg_ParseTuple(args, "s", &dir))
		return NULL;
	if (T.enabled)
		Py_RETURN_TRUE;
	if (strlen(dir) >= sizeof(T.dir))
		Py_RETURN_FALSE;
	memcpy(T.dir, dir, strlen(dir) + 1);
	{
		long ps = sysconf(_SC_PAGESIZE);

		T.page_kb = ps > 0 ? ps / 1024 : 4;
	}
#if PY_VERSION_HEX >= 0x03080000
	T.audit = 1;
#endif
	if (trace_open() < 0)
		Py_RETURN_FALSE;
	T.enabled = 1;
	if (!T.installed) {
		mod = PyDict_GetItemString(PyImport_GetModuleDict(), "_frozen_importlib");
		if (!mod || install_wrapper(mod, &find_and_load_def) < 0 ||
		    install_wrapper(mod, &find_spec_def) < 0)
			goto fail;
#if PY_VERSION_HEX >= 0x03080000
		if (PySys_AddAuditHook(audit_hook, NULL) < 0)
			goto fail;
#endif
		maybe_wrap_sleep();
		pthread_atfork(NULL, NULL, atfork_child);
		Py_AtExit(tracer_atexit);
		T.installed = 1;
	}
	Py_RETURN_TRUE;
fail:
	PyErr_Clear();
	{
		struct rec r;

		rec_start(&r, 'R', mono_ns());
		rec_ch(&r, '\t');
		rec_strz(&r, "cannot install the import wrappers");
		emit(&r);
	}
	tracer_disable();
	Py_RETURN_FALSE;
}

PyDoc_STRVAR(note_doc, "note(tag, text)\n\nWrites a note record (N) into the trace.");

static PyObject *tracer_note(PyObject *self, PyObject *args)
{
	const char *tag, *text;
	Py_ssize_t tlen, xlen;
	struct rec r;

	if (!PyArg_ParseTuple(args, "s#s#", &tag, &tlen, &text, &xlen))
		return NULL;
	rec_start(&r, 'N', mono_ns());
	rec_ch(&r, '\t');
	rec_i64(&r, thread_no());
	rec_ch(&r, '\t');
	rec_str(&r, tag, (size_t)tlen, 64);
	rec_ch(&r, '\t');
	rec_str(&r, text, (size_t)xlen, REC_MAX);
	emit(&r);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(stop_doc, "stop()\n\nStops recording in this process.");

static PyObject *tracer_stop(PyObject *self, PyObject *unused)
{
	tracer_disable();
	Py_RETURN_NONE;
}

static PyObject *tracer_enabled(PyObject *self, PyObject *unused)
{
	return PyBool_FromLong(T.enabled);
}

static PyMethodDef tracer_methods[] = {
	{ "start", tracer_start, METH_VARARGS, start_doc },
	{ "note", tracer_note, METH_VARARGS, note_doc },
	{ "stop", tracer_stop, METH_NOARGS, stop_doc },
	{ "enabled", tracer_enabled, METH_NOARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef tracer_module = {
	PyModuleDef_HEAD_INIT, "_tracer", "coldstart's in-process import tracer.", -1, tracer_methods,
};

PyMODINIT_FUNC PyInit__tracer(void)
{
	PyObject *m = PyModule_Create(&tracer_module);

	if (m && PyModule_AddIntConstant(m, "FORMAT_VERSION", TRACE_VERSION) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	if (m && PyModule_AddStringConstant(m, "IMPL", "c") < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
