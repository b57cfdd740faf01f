/*
 * coldstart's in-process import tracer, a CPython extension (3.7+).  It wraps
 * importlib's _find_and_load and _find_spec, adds a C audit hook (3.8+) and a
 * gc.callbacks function (the collector's pauses), and
 * appends one text record per fact to this process's trace file, mapped
 * MAP_SHARED so a SIGKILLed process still leaves every record it wrote.
 * The record format is docs/trace-format.md; the pure-Python fallback
 * (_pytracer.py) writes the same records but G.  Any internal failure stops tracing
 * silently: the target must behave as if the tracer were absent.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "_fill.h"
#include "_module.h"

#define TRACE_VERSION 2
#define CHUNK ((size_t)256 * 1024)
#define DETAIL_MAX 400
#define REC_MAX 4096
#define REC_PREFAULT 512 /* an E or F record: fields and a name of up to DETAIL_MAX */
/* Written bytes kept free behind the records for the R record that says the file system is full. */
#define STOP_RESERVE 128

/* Calling the wrapped function the way it was called (no argument tuple). */
#if PY_VERSION_HEX >= 0x03090000
#define CALL_VECTOR PyObject_Vectorcall
#elif PY_VERSION_HEX >= 0x03080000
#define CALL_VECTOR _PyObject_Vectorcall
#else
#define CALL_VECTOR _PyObject_FastCallKeywords
#endif

struct tracer {
	int enabled;
	int forked; /* set in the child by pthread_atfork: reopen before writing */
	int64_t fork_ns; /* CLOCK_MONOTONIC at the fork, in the child */
	long fork_depth; /* imports open on the forking thread at the fork */
	char *map;
	size_t size, used;
	struct fill
		fill; /* the file (its descriptor, checked before each use) written ahead of the records (_fill.h) */
	long pid;
	int audit;
	int reads; /* COLDSTART_TRACE_READS: record the files read besides modules (for --cold) */
	int installed;
	int sleep_wrapped;
	PyObject *origin_str; /* interned "origin" */
	PyObject *gen_str, *collected_str, *uncollectable_str; /* gc.callbacks' info keys, interned */
	char dir[PATH_MAX];
};

static struct tracer T = { .fill = { .own = { .fd = -1 } } };
/*
 * Thread-locals of a dlopen()ed module go through __tls_get_addr on every
 * access; initial-exec takes glibc's surplus static TLS (a few bytes here)
 * and reads them like a global, on every import and audit event.
 */
#if defined(__GNUC__) && defined(__linux__)
#define TLS _Thread_local __attribute__((tls_model("initial-exec")))
#else
#define TLS _Thread_local
#endif
static TLS int tls_tno;
static TLS long tls_depth; /* imports open on this thread */
static int next_tno; /* only touched with the GIL held */

struct rec {
	char b[REC_MAX];
	size_t n;
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* This thread's CPU time: what an import costs whatever the scheduler did meanwhile. */
static int64_t cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void rec_ch(struct rec *r, char c)
{
	if (r->n < REC_MAX - 2)
		r->b[r->n++] = c;
}

/* Two digits at a time: every record carries a few long numbers (clocks in ns). */
static void rec_i64(struct rec *r, int64_t v)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				    "8081828384858687888990919293949596979899";
	char tmp[24];
	int i = (int)sizeof(tmp);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	while (u >= 100) {
		unsigned d = (unsigned)(u % 100) * 2;

		u /= 100;
		tmp[--i] = pairs[d + 1];
		tmp[--i] = pairs[d];
	}
	if (u >= 10) {
		tmp[--i] = pairs[u * 2 + 1];
		tmp[--i] = pairs[u * 2];
	} else {
		tmp[--i] = (char)('0' + u);
	}
	if (v < 0)
		tmp[--i] = '-';
	if (r->n + (sizeof(tmp) - (size_t)i) < REC_MAX - 2) {
		memcpy(r->b + r->n, tmp + i, sizeof(tmp) - (size_t)i);
		r->n += sizeof(tmp) - (size_t)i;
	}
}

/* A TAB, then v. */
static void rec_field_i64(struct rec *r, int64_t v)
{
	rec_ch(r, '\t');
	rec_i64(r, v);
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
		size_t run = 0;

		/* A run of plain bytes (names and paths are) in one copy. */
		while (i + run < len && (unsigned char)s[i + run] >= 0x20 && s[i + run] != '\\')
			run++;
		if (run) {
			if (run > REC_MAX - 8 - r->n)
				run = REC_MAX - 8 - r->n;
			memcpy(r->b + r->n, s + i, run);
			r->n += run;
			i += run - 1;
			continue;
		}
		r->b[r->n++] = '\\';
		if (c == '\\')
			r->b[r->n++] = '\\';
		else if (c == '\t')
			r->b[r->n++] = 't';
		else if (c == '\n')
			r->b[r->n++] = 'n';
		else if (c == '\r')
			r->b[r->n++] = 'r';
		else {
			r->b[r->n++] = 'x';
			r->b[r->n++] = hex[c >> 4];
			r->b[r->n++] = hex[c & 15];
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
	rec_field_i64(r, t);
}

static int thread_no(void)
{
	if (!tls_tno)
		tls_tno = ++next_tno;
	return tls_tno;
}

/*
 * The process's peak resident set in KiB.  getrusage() costs a third of a
 * read of /proc/self/statm (measured here: 0.7 against 2.4 us, twice per
 * import), and at import memory grows: the peak is the current size but
 * where an import freed more than it took.
 */
static long rss_kb(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return -1;
	return ru.ru_maxrss;
}

/* Stops tracing for good in this process; the hook and wrappers stay but do nothing. */
static void tracer_disable(void)
{
	T.enabled = 0;
}

/*
 * Makes the next n bytes of the mapping (and STOP_RESERVE behind them)
 * mapped and written in the file; -1 when the file cannot grow or the file
 * system cannot give it the pages (full).  The pwrite of zeros ahead of the
 * records comes once per FILL_BYTES, not once per record.
 */
static int map_reserve(size_t n)
{
	size_t size, end = T.used + n + STOP_RESERVE;
	void *p;

	if (end + 1 > T.size) {
		size = T.size * 2;
		if (size > T.size + 16 * CHUNK)
			size = T.size + 16 * CHUNK;
		while (size < end + 1)
			size += CHUNK;
		if (fill_resize(&T.fill, size) < 0)
			return -1;
		p = mremap(T.map, T.size, size, MREMAP_MAYMOVE);
		if (p == MAP_FAILED)
			return -1;
		T.map = p;
		T.size = size;
	}
	if (end > T.fill.filled && fill_to(&T.fill, end, T.size) < 0)
		return -1;
	return 0;
}

/* Unmaps the file and cuts it to the records written. */
static void trace_close(void)
{
	if (T.map)
		munmap(T.map, T.size);
	T.map = NULL;
	if (T.fill.own.fd >= 0 || T.fill.path[0]) {
		if (fill_resize(&T.fill, T.used) < 0)
			T.used = 0;
		fill_close(&T.fill);
	}
}

/*
 * The file system could not give the file more pages: an R record goes
 * into the reserve kept written behind the records (when even the first
 * records could not be written, the file is left empty), and tracing stops.
 */
static void trace_stop_full(void)
{
	struct rec r;

	rec_start(&r, 'R', mono_ns());
	rec_ch(&r, '\t');
	if (T.fill.err == ENOSPC || T.fill.err == EDQUOT)
		rec_strz(&r, T.fill.err == ENOSPC ? "no space left on the device" : "disk quota exceeded");
	else
		rec_strz(&r, "cannot write the trace file");
	r.b[r.n++] = '\n';
	if (T.map && T.used && r.n <= STOP_RESERVE && T.used + r.n <= T.fill.filled) {
		memcpy(T.map + T.used, r.b, r.n);
		T.used += r.n;
	}
	T.enabled = 0;
	trace_close();
}

static int trace_open(void);

/*
 * Makes the next n bytes of the mapping present and writable before a clock
 * is read for the record that goes there: the first write to a page of the
 * file is a page fault that the file system serves (ext4 reserves a block,
 * 20 us here and far more under load), which must fall inside the import it
 * belongs to, as importtime, timing the call from outside, sees it too.
 * The bytes touched are the zeroed tail, written zero again.  Not after a
 * fork before the child's own file is open: the mapping is the parent's.
 */
static void map_prefault(size_t n)
{
	volatile char *m;
	size_t off;

	if (!T.enabled || T.forked || !T.map || map_reserve(n) < 0)
		return;
	m = T.map;
	for (off = T.used; off < T.used + n; off += 4096)
		m[off] = 0;
	m[T.used + n - 1] = 0;
}

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
		/* The parent's file: not cut, not written. */
		if (T.map)
			munmap(T.map, T.size);
		fill_close(&T.fill);
		T.map = NULL;
		if (trace_open() < 0) {
			trace_stop_full();
			return;
		}
	}
	if (map_append(r) < 0)
		trace_stop_full();
}

/*
 * Process start in CLOCK_MONOTONIC: the moment coldstart exec'd this very
 * process (COLDSTART_EXEC=PID:NS, written by coldstart in its child right
 * before execve), so that its times count from exec as the wall does; else
 * from /proc/self/stat (clock-tick resolution, and the fork, not the exec).
 */
static int64_t process_start_ns(int64_t now_mono)
{
	char b[1024], *p;
	ssize_t n;
	int fd, field;
	unsigned long long ticks;
	long hz = sysconf(_SC_CLK_TCK);
	int64_t start_boot, now_boot;
	const char *mark = getenv("COLDSTART_EXEC");

	if (mark) {
		char *end;
		long long pid = strtoll(mark, &end, 10), at = 0;

		if (*end == ':')
			at = strtoll(end + 1, &end, 10);
		if (!*end && pid == (long long)getpid() && at > 0 && at <= now_mono)
			return at;
	}

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
	now_boot = clock_ns(CLOCK_BOOTTIME);
	start_boot = (int64_t)(ticks * (1000000000ULL / (unsigned long long)hz));
	if (start_boot > now_boot)
		return now_mono;
	return now_mono - (now_boot - start_boot);
}

/*
 * The header: pid, ppid, the process's start, how it began (exec'd
 * interpreter or fork), and the thread CPU time used before the tracer.
 */
static int emit_header(int from_fork, long spawner)
{
	struct rec r;
	char b[REC_MAX];
	ssize_t n;
	int fd, i;
	int64_t t = mono_ns();
	const char *ver = Py_GetVersion();
	size_t vlen = strcspn(ver, " ");

	r.n = 0;
	rec_strz(&r, "#coldstart-trace 2");
	if (map_append(&r) < 0)
		return -1;
	rec_start(&r, 'H', t);
	rec_field_i64(&r, T.pid);
	rec_field_i64(&r, getppid());
	rec_field_i64(&r, from_fork ? T.fork_ns : process_start_ns(t));
	rec_ch(&r, '\t');
	rec_strz(&r, "c");
	rec_ch(&r, '\t');
	rec_str(&r, ver, vlen, 64);
	rec_ch(&r, '\t');
	rec_strz(&r, T.audit ? "audit" : "noaudit");
	rec_ch(&r, '\t');
	rec_strz(&r, from_fork ? "fork" : "exec");
	rec_field_i64(&r, cpu_ns());
	rec_field_i64(&r, from_fork ? T.fork_depth : 0);
	rec_field_i64(&r, spawner);
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
	int from_fork = T.pid != 0;
	long spawner = T.pid;
	char own[32];
	void *p;

	/*
	 * The traced process this one descends from: a fork's is the traced
	 * process it was forked from; an exec'd interpreter's is named by
	 * COLDSTART_TRACE_PARENT, which every traced process sets to its own
	 * pid in the C environment (not os.environ) for the processes it
	 * starts.  Its parent may have exited before this tracer started, and
	 * getppid() then names whoever adopted it.
	 */
	if (!from_fork) {
		const char *h = getenv("COLDSTART_TRACE_PARENT");
		char *end;

		spawner = h ? strtol(h, &end, 10) : 0;
		if (!h || end == h || *end || spawner <= 0)
			spawner = 0;
	}
	T.pid = (long)getpid();
	snprintf(own, sizeof(own), "%ld", T.pid);
	setenv("COLDSTART_TRACE_PARENT", own, 1);
	p = fill_create(&T.fill, T.dir, T.pid, "trace", CHUNK);
	if (!p)
		return -1;
	T.map = p;
	T.size = CHUNK;
	T.used = 0;
	if (emit_header(from_fork, spawner) < 0) {
		/* Not even the header: the file is left empty, which coldstart reads as a trace stopped at its start. */
		T.used = 0;
		return -1;
	}
	return 0;
}

static void atfork_child(void)
{
	/* Only a flag and the clock here: the new file is opened at the first record. */
	if (T.enabled) {
		T.forked = 1;
		T.fork_ns = mono_ns();
		T.fork_depth = tls_depth;
	}
}

static void tracer_atexit(void)
{
	struct rec r;

	if (!T.enabled || T.forked)
		return;
	rec_start(&r, 'Q', mono_ns());
	rec_field_i64(&r, clock_ns(CLOCK_PROCESS_CPUTIME_ID));
	emit(&r);
	T.enabled = 0;
	/* Cut the unused tail; readers stop at the first NUL anyway. */
	trace_close();
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

/*
 * S, E or F: the import of name started or ended at t (taken by the caller),
 * with this thread's CPU time and the RSS.
 */
static void emit_import(char type, int64_t t, int64_t cpu, long rss, PyObject *name, const char *exc)
{
	struct rec r;
	Py_ssize_t len;
	const char *s = PyUnicode_AsUTF8AndSize(name, &len);

	if (!s) {
		PyErr_Clear();
		return;
	}
	rec_start(&r, type, t);
	rec_field_i64(&r, thread_no());
	rec_field_i64(&r, cpu);
	rec_field_i64(&r, rss);
	rec_ch(&r, '\t');
	rec_str(&r, s, (size_t)len, DETAIL_MAX);
	if (exc) {
		rec_ch(&r, '\t');
		rec_strz(&r, exc);
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
	if (T.enabled && tls_depth && PyTuple_GET_SIZE(args) == 1) {
		struct rec r;
		PyObject *et, *ev, *etb;

		PyErr_Fetch(&et, &ev, &etb);
		rec_start(&r, 'A', mono_ns());
		rec_field_i64(&r, thread_no());
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

static PyMethodDef sleep_def = { "sleep", (PyCFunction)(void (*)(void))wrap_sleep, METH_VARARGS | METH_KEYWORDS, NULL };

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
 * import_module() reaches it through the module's globals.  The clock is read
 * first at the start and last at the end, and nothing is allocated before
 * it, so the interval covers all the tracer's own work (importtime, which
 * times the call from outside, sees that work too) and a garbage collection
 * triggered by an allocation falls inside, as it would without the tracer.
 */
static PyObject *wrap_find_and_load(PyObject *orig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *name = nargs > 0 ? args[0] : NULL;
	PyObject *res;
	int64_t t = mono_ns(), cpu;
	long rss;

	if (!T.enabled || !name || !PyUnicode_Check(name))
		return CALL_VECTOR(orig, args, (size_t)nargs, kwnames);
	cpu = cpu_ns();
	emit_import('S', t, cpu, rss_kb(), name, NULL);
	tls_depth++;
	res = CALL_VECTOR(orig, args, (size_t)nargs, kwnames);
	tls_depth--;
	/* The end record's page is made ready before the end is read. */
	map_prefault(REC_PREFAULT);
	rss = rss_kb();
	cpu = cpu_ns();
	if (res) {
		emit_import('E', mono_ns(), cpu, rss, name, NULL);
		if (!T.sleep_wrapped && !PyUnicode_CompareWithASCIIString(name, "time"))
			maybe_wrap_sleep();
	} else {
		PyObject *type = PyErr_Occurred();
		const char *tn = type && PyType_Check(type) ? ((PyTypeObject *)type)->tp_name : "?";

		emit_import('F', mono_ns(), cpu, rss, name, tn);
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
static PyObject *wrap_find_spec(PyObject *orig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *name = nargs > 0 ? args[0] : NULL;
	PyObject *res = CALL_VECTOR(orig, args, (size_t)nargs, kwnames);
	PyObject *origin = NULL, *tmp = NULL;
	const char *o = "";
	Py_ssize_t olen = 0, len;
	const char *s;
	struct rec r;

	if (!res || !T.enabled || !name || !PyUnicode_Check(name))
		return res;
	if (res != Py_None) {
		origin = PyObject_GetAttr(res, T.origin_str);
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
	s = PyUnicode_AsUTF8AndSize(name, &len);
	if (s) {
		rec_start(&r, 'f', mono_ns());
		rec_field_i64(&r, thread_no());
		rec_ch(&r, '\t');
		rec_str(&r, s, (size_t)len, DETAIL_MAX);
		rec_ch(&r, '\t');
		rec_str(&r, o, (size_t)olen, DETAIL_MAX);
		emit(&r);
	} else {
		PyErr_Clear();
	}
	Py_XDECREF(tmp);
	Py_XDECREF(origin);
	return res;
}

/*
 * gc.callbacks: a collection's pause, as one G record written when it ends
 * (start, thread, end, the thread's CPU time in it, generation, objects
 * collected and uncollectable).  Only the clocks are read at the start; the
 * info dict CPython builds for the callbacks is read at the end.  Every
 * collection while an import runs on the thread is recorded (it is charged
 * to that import's time, which importtime cannot tell apart); outside
 * imports only pauses of GC_OUTSIDE_MIN_NS or more, so that a server's
 * steady young collections do not grow the file for as long as it runs.
 */
#define GC_OUTSIDE_MIN_NS 1000000
static TLS int64_t gc_start_ns, gc_start_cpu;

static int64_t gc_info(PyObject *info, PyObject *key)
{
	PyObject *v = PyDict_GetItem(info, key);
	long n = v && PyLong_Check(v) ? PyLong_AsLong(v) : -1;

	if (n == -1 && PyErr_Occurred())
		PyErr_Clear();
	return n;
}

static PyObject *gc_callback(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	int64_t t, cpu;
	PyObject *info;
	struct rec r;

	if (nargs != 2 || !T.enabled || !PyUnicode_Check(args[0]))
		Py_RETURN_NONE;
	/*
	 * "start" or "stop".  The CPU interval lies inside the wall one (the
	 * clock first at the start, last at the end), so that a pause's CPU
	 * time never exceeds its wall time.
	 */
	if (PyUnicode_GET_LENGTH(args[0]) == 5) {
		gc_start_ns = mono_ns();
		gc_start_cpu = cpu_ns();
		Py_RETURN_NONE;
	}
	cpu = cpu_ns();
	t = mono_ns();
	info = args[1];
	if (!gc_start_ns || !PyDict_Check(info))
		Py_RETURN_NONE;
	if (tls_depth || t - gc_start_ns >= GC_OUTSIDE_MIN_NS) {
		rec_start(&r, 'G', gc_start_ns);
		rec_field_i64(&r, thread_no());
		rec_field_i64(&r, t);
		rec_field_i64(&r, cpu >= 0 && gc_start_cpu >= 0 ? cpu - gc_start_cpu : -1);
		rec_field_i64(&r, gc_info(info, T.gen_str));
		rec_field_i64(&r, gc_info(info, T.collected_str));
		rec_field_i64(&r, gc_info(info, T.uncollectable_str));
		emit(&r);
	}
	gc_start_ns = 0;
	Py_RETURN_NONE;
}

static PyMethodDef gc_callback_def = { "_coldstart_gc", (PyCFunction)(void (*)(void))gc_callback, METH_FASTCALL, NULL };

/*
 * Appends the callback to gc.callbacks.  The gc module is imported for it
 * (before the import wrappers, so no record) and, as the target had not
 * imported it, taken out of sys.modules again: the target's own `import gc`
 * makes a module whose callbacks are the same list, the interpreter's.
 */
static void install_gc_callback(void)
{
	PyObject *modules = PyImport_GetModuleDict();
	int had = PyDict_GetItemString(modules, "gc") != NULL;
	PyObject *gc = PyImport_ImportModule("gc");
	PyObject *cbs = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
	PyObject *fn = NULL;

	T.gen_str = PyUnicode_InternFromString("generation");
	T.collected_str = PyUnicode_InternFromString("collected");
	T.uncollectable_str = PyUnicode_InternFromString("uncollectable");
	if (cbs && PyList_Check(cbs) && T.gen_str && T.collected_str && T.uncollectable_str) {
		fn = PyCFunction_New(&gc_callback_def, NULL);
		if (fn)
			PyList_Append(cbs, fn);
	}
	if (gc && !had)
		PyDict_DelItemString(modules, "gc");
	PyErr_Clear();
	Py_XDECREF(fn);
	Py_XDECREF(cbs);
	Py_XDECREF(gc);
}

static PyMethodDef find_and_load_def = { "_find_and_load", (PyCFunction)(void (*)(void))wrap_find_and_load,
					 METH_FASTCALL | METH_KEYWORDS, NULL };
static PyMethodDef find_spec_def = { "_find_spec", (PyCFunction)(void (*)(void))wrap_find_spec,
				     METH_FASTCALL | METH_KEYWORDS, NULL };

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
static TLS int tls_busy;

enum ev_kind { EV_OPEN, EV_COMPILE, EV_EXEC, EV_ARG, EV_HOSTPORT, EV_NOARG };

struct ev {
	const char *name;
	enum ev_kind kind;
	int arg; /* for EV_ARG: the argument shown */
};

/*
 * Audit events that matter at start-up (PEP 578 names), by their first two
 * characters: every event of the process reaches the hook, most of them
 * ("object.__getattr__", "marshal.loads", "import", ...) to be dropped at once.
 */
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

	/*
	 * The events every import raises (import, marshal.loads, exec's
	 * neighbours object.__getattr__, code.__new__, builtins.id, sys.*) are
	 * rejected on their first characters.
	 */
	switch (name[0]) {
	case 'o':
		if (name[1] != 'p' && name[1] != 's')
			return NULL;
		break;
	case 'c':
		if (name[1] == 'o' && name[2] == 'd')
			return NULL;
		break;
	case 's':
		if (name[1] == 'y')
			return NULL;
		break;
	case 'e':
	case 't':
	case 'u': break;
	default: return NULL;
	}
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (events[i].name[0] == name[0] && events[i].name[1] == name[1] && !strcmp(events[i].name, name))
			return &events[i];
	return NULL;
}

/* A module's own file (source, bytecode, extension): the import's record says it already. */
static int module_file(const char *s, Py_ssize_t len)
{
	return (len >= 3 && !memcmp(s + len - 3, ".py", 3)) || (len >= 4 && !memcmp(s + len - 4, ".pyc", 4)) ||
	       (len >= 3 && !memcmp(s + len - 3, ".so", 3));
}

/*
 * reads_only: outside any import only the files read are recorded (the
 * data a start reads, which --cold evicts); writes are side effects of an
 * import, so only an import's count.
 */
static void audit_record(const struct ev *e, const char *event, PyObject *args, int reads_only)
{
	struct rec r;
	Py_ssize_t nargs = PyTuple_Check(args) ? PyTuple_GET_SIZE(args) : 0;
	Py_ssize_t len = 0;
	const char *s;
	PyObject *tmp = NULL;

	rec_start(&r, 'A', mono_ns());
	rec_field_i64(&r, thread_no());
	rec_ch(&r, '\t');
	rec_strz(&r, event);
	rec_ch(&r, '\t');
	switch (e->kind) {
	case EV_OPEN: {
		PyObject *mode = nargs > 1 ? PyTuple_GET_ITEM(args, 1) : Py_None;
		PyObject *flags = nargs > 2 ? PyTuple_GET_ITEM(args, 2) : Py_None;
		int writing = 0;

		if (PyUnicode_Check(mode)) {
			const char *m = PyUnicode_AsUTF8(mode);

			writing = m && strpbrk(m, "wax+") != NULL;
		} else if (PyLong_Check(flags)) {
			long fl = PyLong_AsLong(flags);

			writing = fl != -1 && (fl & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND));
		}
		if ((writing && reads_only) || (!writing && !T.reads))
			goto out;
		s = nargs > 0 ? obj_text(PyTuple_GET_ITEM(args, 0), &len, &tmp) : NULL;
		if (!s || !len)
			goto out;
		if (!writing) {
			char cwd[PATH_MAX];

			/* The .py and .pyc reads are import mechanics; other files are data the start reads. */
			if (module_file(s, len))
				goto out;
			rec_strz(&r, "r:");
			if (s[0] != '/') {
				if (!getcwd(cwd, sizeof(cwd)))
					goto out;
				rec_strz(&r, cwd);
				rec_ch(&r, '/');
			}
		} else {
			rec_strz(&r, "w:");
		}
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
	case EV_NOARG: break;
	}
	emit(&r);
out:
	Py_XDECREF(tmp);
}

/*
 * sitecustomize hides coldstart's entry from os.environ's PYTHONPATH, so a
 * child given an environment built from os.environ ({**os.environ, ...}:
 * Django's autoreloader starts its serving process so) would run untraced,
 * though it carries coldstart's other variables.  Such an environment (a
 * dict whose COLDSTART_TRACE_DIR is this process's) gets the entry back
 * first on its PYTHONPATH, as the inherited environment has it.  The boot
 * directory is the first entry of the process environment's PYTHONPATH,
 * checked to hold the bootstrap.
 */
static void keep_boot_path(PyObject *args)
{
	const char *real = getenv("PYTHONPATH"), *dir = getenv("COLDSTART_TRACE_DIR"), *colon, *cur = NULL;
	PyObject *env, *v, *nv = NULL;
	char boot[PATH_MAX];
	size_t len;

	if (!real || !dir || !PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 4)
		return;
	env = PyTuple_GET_ITEM(args, 3);
	if (!PyDict_CheckExact(env))
		return;
	v = PyDict_GetItemString(env, "COLDSTART_TRACE_DIR");
	if (!v || !PyUnicode_Check(v) || !PyUnicode_AsUTF8(v) || strcmp(PyUnicode_AsUTF8(v), dir))
		return;
	colon = strchr(real, ':');
	len = colon ? (size_t)(colon - real) : strlen(real);
	if (!len || len + sizeof("/sitecustomize.py") > sizeof(boot))
		return;
	memcpy(boot, real, len);
	memcpy(boot + len, "/sitecustomize.py", sizeof("/sitecustomize.py"));
	if (access(boot, R_OK) < 0)
		return;
	boot[len] = '\0';
	v = PyDict_GetItemString(env, "PYTHONPATH");
	if (v) {
		if (!PyUnicode_Check(v) || !(cur = PyUnicode_AsUTF8(v)))
			return;
		if (!strncmp(cur, boot, len) && (cur[len] == ':' || !cur[len]))
			return;
	}
	nv = cur && *cur ? PyUnicode_FromFormat("%s:%s", boot, cur) : PyUnicode_FromString(boot);
	if (nv)
		PyDict_SetItemString(env, "PYTHONPATH", nv);
	Py_XDECREF(nv);
}

/* Only events raised while an import runs on this thread are recorded: they are what start-up pays. */
static int audit_hook(const char *event, PyObject *args, void *data)
{
	const struct ev *e;
	PyObject *et, *ev, *etb;

	if (event[0] == 's' && event[1] == 'u' && T.enabled && !tls_busy && !strcmp(event, "subprocess.Popen")) {
		PyErr_Fetch(&et, &ev, &etb);
		keep_boot_path(args);
		if (PyErr_Occurred())
			PyErr_Clear();
		PyErr_Restore(et, ev, etb);
	}
	if (tls_busy || !T.enabled)
		return 0;
	/* Outside imports: the files the process reads alone, when asked (audit_record). */
	if (!tls_depth && (!T.reads || event[0] != 'o' || event[1] != 'p' || strcmp(event, "open")))
		return 0;
	e = ev_lookup(event);
	if (!e)
		return 0;
	tls_busy = 1;
	PyErr_Fetch(&et, &ev, &etb);
	audit_record(e, event, args, !tls_depth);
	if (PyErr_Occurred())
		PyErr_Clear();
	PyErr_Restore(et, ev, etb);
	tls_busy = 0;
	return 0;
}
#endif

#if PY_VERSION_HEX >= 0x03090000
/*
 * importlib's unmarshalling without the audit event's copy.
 *
 * With any audit hook installed CPython builds every event's arguments
 * before it calls the hooks, and unmarshalling from memory raises
 * marshal.loads with its whole input as "y#": a copy of every .pyc the
 * process loads (4.5 MB of memcpy for `import numpy` on 3.11, and for the
 * large files a fresh allocation whose pages fault in), built for this hook
 * alone, which drops the event on its name.  That was most of the tracer's
 * cost.  So importlib's _compile_bytecode, which calls loads through its
 * module global `marshal`, gets a copy of the marshal module whose loads
 * takes this hook off the runtime's list of C hooks for the call when it is
 * the only one there (no arguments built, nothing to copy), and puts it
 * back.  (3.8 raises no marshal.loads.)  Nothing else changes: hooks added with sys.addaudithook (kept
 * apart, per interpreter) and C hooks added before or after this one still
 * get every event, since with any of them present the list is not touched.
 * What this hook does not see is an event raised inside that unmarshal,
 * which only a finalizer run by a collection could raise.
 *
 * CPython's list head lives in _PyRuntime at an offset that changes between
 * versions; it is found as the one word of _PyRuntime that
 * PySys_AddAuditHook turned from NULL into a pointer to an entry holding
 * this hook and its data (read through a pipe, so a word that is no pointer
 * cannot fault).  Not found: loads stays as it is.
 */
struct hook_entry { /* CPython's _Py_AuditHookEntry, the same 3.8-3.13 */
	struct hook_entry *next;
	Py_AuditHookFunction hook;
	void *data;
};

static struct {
	struct hook_entry **head; /* the runtime's list of C hooks */
	struct hook_entry *mine;
} H;

static PyObject *direct_loads(PyObject *orig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	Py_buffer view;
	PyObject *res;
	struct hook_entry *added;

	if (nargs != 1 || kwnames || *H.head != H.mine || H.mine->next)
		return CALL_VECTOR(orig, args, (size_t)nargs, kwnames);
	if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
		PyErr_Clear();
		return CALL_VECTOR(orig, args, (size_t)nargs, kwnames);
	}
	*H.head = NULL;
	res = PyMarshal_ReadObjectFromString(view.buf, view.len);
	/* A hook added meanwhile (a finalizer's thread) stays, behind this one. */
	added = *H.head;
	H.mine->next = added;
	*H.head = H.mine;
	PyBuffer_Release(&view);
	return res;
}

static PyMethodDef direct_loads_def = { "loads", (PyCFunction)(void (*)(void))direct_loads,
					METH_FASTCALL | METH_KEYWORDS, NULL };

/* *e copied from p, 0; -1 when p is not readable memory. */
static int read_entry(const void *p, struct hook_entry *e)
{
	int fds[2], ok;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	ok = write(fds[1], p, sizeof(*e)) == (ssize_t)sizeof(*e) && read(fds[0], e, sizeof(*e)) == (ssize_t)sizeof(*e);
	close(fds[0]);
	close(fds[1]);
	return ok ? 0 : -1;
}

/* The word of the runtime (words now, before[] as it was) that points at this hook's entry; NULL if not one. */
static struct hook_entry **find_hook_head(void **words, void *const *before, size_t n)
{
	struct hook_entry **found = NULL, e;
	size_t i;

	for (i = 0; i < n; i++) {
		if (before[i] || !words[i] || read_entry(words[i], &e) < 0)
			continue;
		if (e.next || e.hook != audit_hook || e.data != &H)
			continue;
		if (found)
			return NULL;
		found = (struct hook_entry **)&words[i];
	}
	return found;
}

static void direct_loads_install(void)
{
	PyObject *ext = PyDict_GetItemString(PyImport_GetModuleDict(), "_frozen_importlib_external");
	PyObject *marshal = ext ? PyObject_GetAttrString(ext, "marshal") : NULL;
	PyObject *copy = NULL, *loads = NULL, *w = NULL;

	if (!marshal || !PyModule_Check(marshal))
		goto out;
	loads = PyObject_GetAttrString(marshal, "loads");
	copy = PyModule_New("marshal");
	if (!loads || !copy || PyDict_Update(PyModule_GetDict(copy), PyModule_GetDict(marshal)) < 0)
		goto out;
	w = PyCFunction_New(&direct_loads_def, loads);
	if (w && !PyObject_SetAttrString(copy, "loads", w))
		PyObject_SetAttrString(ext, "marshal", copy);
out:
	PyErr_Clear();
	Py_XDECREF(w);
	Py_XDECREF(copy);
	Py_XDECREF(loads);
	Py_XDECREF(marshal);
}

/* The audit hook, and importlib's loads without the event's copy when the hook's list entry is found. */
static int install_audit_hook(void)
{
	void *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
	ElfW(Sym) *sym = NULL;
	Dl_info info;
	void **before = NULL;
	size_t n = 0;

	if (rt && dladdr1(rt, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size <= 16 << 20) {
		n = sym->st_size / sizeof(void *);
		before = malloc(n * sizeof(void *) + 1);
		if (before)
			memcpy(before, rt, n * sizeof(void *));
	}
	if (PySys_AddAuditHook(audit_hook, &H) < 0) {
		free(before);
		return -1;
	}
	if (before) {
		H.head = find_hook_head(rt, before, n);
		free(before);
	}
	if (H.head) {
		H.mine = *H.head;
		direct_loads_install();
	}
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
	T.origin_str = PyUnicode_InternFromString("origin");
	if (!T.origin_str) {
		PyErr_Clear();
		Py_RETURN_FALSE;
	}
#if PY_VERSION_HEX >= 0x03080000
	T.audit = 1;
#endif
	T.reads = getenv("COLDSTART_TRACE_READS") != NULL;
	if (trace_open() < 0) {
		trace_stop_full();
		Py_RETURN_FALSE;
	}
	T.enabled = 1;
	if (!T.installed) {
		install_gc_callback();
		mod = PyDict_GetItemString(PyImport_GetModuleDict(), "_frozen_importlib");
		if (!mod || install_wrapper(mod, &find_and_load_def) < 0 || install_wrapper(mod, &find_spec_def) < 0)
			goto fail;
#if PY_VERSION_HEX >= 0x03090000
		if (install_audit_hook() < 0)
			goto fail;
#elif PY_VERSION_HEX >= 0x03080000
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
	rec_field_i64(&r, thread_no());
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
	return ext_module_create(&tracer_module, TRACE_VERSION, "c");
}
