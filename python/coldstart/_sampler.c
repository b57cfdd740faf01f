/*
 * coldstart's start-up sampler, a CPython extension (3.7+).  A POSIX timer
 * sends a real-time signal to the main thread every interval of wall time,
 * and each thread started through _thread has one of its own CPU time; the
 * handler, on the interrupted thread itself, walks that thread's Python
 * frames and appends one sample to this process's samples file, mapped
 * MAP_SHARED so a SIGKILLed process still leaves every sample it took.
 * The record format is the "Samples" section of docs/trace-format.md; the
 * choice of mechanism is explained in docs/design.md.  Any failure stops
 * sampling silently: the target must behave as if the sampler were absent.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#if PY_VERSION_HEX >= 0x030E0000
/* 3.14 holds a frame's code and locals as tagged stack references: not read here yet. */
#error "coldstart's sampler reads the frames of Python 3.7 to 3.13; this is 3.14 or newer"
#endif

#if PY_VERSION_HEX >= 0x030B0000
/*
 * 3.11 moved the frames the interpreter runs out of frame objects into
 * _PyInterpreterFrame, whose layout only the internal headers describe.  The
 * extension is built per interpreter from that interpreter's own headers, so
 * the layout is the one the interpreter was compiled with.
 */
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "_fill.h"
#include "_module.h"

#define SAMPLES_VERSION 1
/* The samples file is a sparse file of this size, mapped once: no growth in a signal handler. */
#define MAP_BYTES ((size_t)64 * 1024 * 1024)
#define REC_MAX 16384
#define NAME_MAX_BYTES 300
#define MAX_FRAMES 256
#define CODE_SLOTS (1u << 15)
#define THREAD_SLOTS 64

/* sigev_value of each timer: which clock made this signal. */
#define SRC_WALL 1
#define SRC_CPU 2

/* Code cache entry: one per code object seen; the id names it in the samples. */
struct code_slot {
	const void *code;
	/* A freed code object's address can be reused: these must match too. */
	const void *name;
	const void *file;
	int firstline;
	uint32_t id;
	int words; /* 3.11+: the size of its frames on the data stack, in words */
	uint8_t import; /* importlib._bootstrap._find_and_load: its first local is the module name */
};

/* Per-thread state of the handler (no thread-local storage in a signal handler). */
struct thread_slot {
	pid_t tid;
	int no; /* 1 = the main thread, then in order of registration */
	timer_t timer; /* its CPU-time timer (other threads than the main one) */
	int has_timer;
};

struct sampler {
	int enabled;
	char *map;
	size_t used;
	struct fill
		fill; /* the file (its descriptor, checked before each use) written ahead of the records (_fill.h) */
	pid_t pid;
	pid_t main_tid;
	long interval_us;
	timer_t wall_timer;
	int have_wall;
	int installed;
	uint32_t next_id;
	int next_tno;
	uint64_t dropped; /* samples not taken: another handler was running, or a frame was being pushed or popped */
	uint64_t faults; /* samples abandoned after a fault */
	char dir[PATH_MAX];
	int signo; /* the timers' signal */
	/*
	 * The main thread's schedstat, by its /proc/PID/task/TID name: the
	 * descriptor is checked before each read (the target may have closed
	 * it and got the number back for a file of its own) and opened again.
	 */
	struct own_fd sched;
	char sched_path[64];
	/* The main thread's wait for a CPU as last read, and its clocks then (main_wait_ns). */
	int64_t wait_ns, wait_t, wait_cpu;
	pid_t writer_tid; /* the thread writing records: the handler's, or the one opening or closing the file */
	struct sigaction old_action;
	struct code_slot codes[CODE_SLOTS];
	struct thread_slot threads[THREAD_SLOTS];
};

/*
 * Zero-initialised, so in .bss: the code cache (1.3 MiB) is zero pages that
 * cost nothing until used, where an initialiser would put all of it in the
 * extension's file and the first start's clearing would copy every page.
 * The descriptors are set to -1 once, when the module is first made.
 */
static struct sampler S;
static int S_ready;
/* Held by the handler while it samples; a second handler finding it held drops its sample. */
static atomic_flag busy = ATOMIC_FLAG_INIT;

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

static pid_t gettid_raw(void)
{
	return (pid_t)syscall(SYS_gettid);
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

static void rec_byte(struct rec *r, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";

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

static void rec_strz(struct rec *r, const char *s)
{
	while (*s)
		rec_ch(r, *s++);
}

/* UTF-8 of one code point. */
static void rec_utf8(struct rec *r, uint32_t c)
{
	if (c < 0x80) {
		rec_byte(r, (unsigned char)c);
	} else if (c < 0x800) {
		rec_ch(r, (char)(0xc0 | (c >> 6)));
		rec_ch(r, (char)(0x80 | (c & 0x3f)));
	} else if (c < 0x10000) {
		rec_ch(r, (char)(0xe0 | (c >> 12)));
		rec_ch(r, (char)(0x80 | ((c >> 6) & 0x3f)));
		rec_ch(r, (char)(0x80 | (c & 0x3f)));
	} else {
		rec_ch(r, (char)(0xf0 | (c >> 18)));
		rec_ch(r, (char)(0x80 | ((c >> 12) & 0x3f)));
		rec_ch(r, (char)(0x80 | ((c >> 6) & 0x3f)));
		rec_ch(r, (char)(0x80 | (c & 0x3f)));
	}
}

/*
 * Appends a str object's text, escaped.  Only reads the object's memory
 * (no allocation, no API call that could run code): safe in the handler,
 * where the interpreter may be anywhere.  Code names and file names are
 * immutable and compact (ready) strings; anything else gives "?".
 */
static void rec_pystr(struct rec *r, PyObject *o)
{
	Py_ssize_t i, len;
	unsigned int kind;
	const void *data;

	if (!o || Py_TYPE(o) != &PyUnicode_Type || !PyUnicode_IS_READY(o) || !PyUnicode_IS_COMPACT(o)) {
		rec_ch(r, '?');
		return;
	}
	len = PyUnicode_GET_LENGTH(o);
	if (len > NAME_MAX_BYTES)
		len = NAME_MAX_BYTES;
	kind = PyUnicode_KIND(o);
	data = PyUnicode_DATA(o);
	for (i = 0; i < len && r->n < REC_MAX - 16; i++)
		rec_utf8(r, PyUnicode_READ(kind, data, i));
}

/*
 * Faults the sampler survives.  A fault while walking frames (memory the
 * checks below did not foresee going away) abandons the sample; a fault
 * while writing into the mapping (SIGBUS: the file system is full, so the
 * sparse file cannot get the page) stops sampling, as a full mapping does.
 * Either way the target goes on as if the sampler were absent.  Any other
 * fault gets the disposition it had before the sampler: the previous action
 * is put back and the faulting instruction runs again.
 */
static sigjmp_buf walk_env, write_env;
static volatile pid_t walk_tid, write_tid;
static struct sigaction old_segv, old_bus;
static int faults_installed;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	pid_t me = gettid_raw();
	sigset_t set;

	if ((write_tid && write_tid == me) || (walk_tid && walk_tid == me)) {
		sigemptyset(&set);
		sigaddset(&set, sig);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		/* A write fault inside a walk is the write's: it is the innermost. */
		siglongjmp(write_tid == me ? write_env : walk_env, 1);
	}
	sigaction(sig, sig == SIGSEGV ? &old_segv : &old_bus, NULL);
}

/* Before the first write into the mapping. */
static void faults_install(void)
{
	struct sigaction sa;

	if (faults_installed)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	faults_installed = 1;
}

/* Reserves n bytes of the mapping; NULL when it is full (sampling then stops). */
static char *map_take(size_t n)
{
	char *p;

	if (S.used + n + 1 > MAP_BYTES)
		return NULL;
	if (S.used + n > S.fill.filled && fill_to(&S.fill, S.used + n, MAP_BYTES) < 0) {
		S.used = MAP_BYTES;
		return NULL;
	}
	p = S.map + S.used;
	S.used += n;
	return p;
}

/*
 * Appends the record to the mapping; -1 when it is full, or when the page
 * could not be had (then the mapping counts as full from now on).
 */
static int rec_append(struct rec *r)
{
	char *p;

	r->b[r->n++] = '\n';
	p = map_take(r->n);
	if (!p)
		return -1;
	write_tid = S.writer_tid;
	if (sigsetjmp(write_env, 0)) {
		write_tid = 0;
		S.used = MAP_BYTES;
		S.faults++;
		return -1;
	}
	memcpy(p, r->b, r->n);
	write_tid = 0;
	return 0;
}

static void rec_start(struct rec *r, char type, int64_t t)
{
	r->n = 0;
	rec_ch(r, type);
	rec_ch(r, '\t');
	rec_i64(r, t);
}

static void timers_delete(void)
{
	unsigned int i;

	if (S.have_wall)
		timer_delete(S.wall_timer);
	S.have_wall = 0;
	for (i = 0; i < THREAD_SLOTS; i++)
		if (S.threads[i].has_timer) {
			timer_delete(S.threads[i].timer);
			S.threads[i].has_timer = 0;
		}
}

/* The slot of tid, or with add a new one; NULL when the table is full. */
static struct thread_slot *thread_slot(pid_t tid, int add)
{
	unsigned int i, h = (unsigned int)tid % THREAD_SLOTS;

	for (i = 0; i < THREAD_SLOTS; i++) {
		struct thread_slot *t = &S.threads[(h + i) % THREAD_SLOTS];

		if (t->tid == tid)
			return t;
		if (!t->tid) {
			if (!add)
				return NULL;
			t->tid = tid;
			return t;
		}
	}
	return NULL;
}

/* The thread's number in the samples: 1 for the main thread, 0 for one never registered. */
static int thread_no(pid_t tid)
{
	struct thread_slot *t;

	if (tid == S.main_tid)
		return 1;
	t = thread_slot(tid, 0);
	return t ? t->no : 0;
}

#if PY_VERSION_HEX >= 0x030B0000
typedef _PyInterpreterFrame frame_t;
#else
typedef PyFrameObject frame_t;
#endif

static frame_t *frame_first(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030D0000
	return ts->current_frame;
#elif PY_VERSION_HEX >= 0x030B0000
	return ts->cframe ? ts->cframe->current_frame : NULL;
#else
	return ts->frame;
#endif
}

static frame_t *frame_next(frame_t *f)
{
#if PY_VERSION_HEX >= 0x030B0000
	return f->previous;
#else
	return f->f_back;
#endif
}

/* What a frame says it runs: a code object unless it is 3.13's shim or not set up yet. */
static PyObject *frame_code_ptr(frame_t *f)
{
#if PY_VERSION_HEX >= 0x030D0000
	return f->f_executable;
#else
	return (PyObject *)f->f_code;
#endif
}

/*
 * The code object a frame runs, or NULL for frames that are not (yet)
 * Python functions: the C-stack shims of 3.12+, and frames still being set
 * up (_PyFrame_IsIncomplete), which sys._getframe also skips.
 */
static PyCodeObject *frame_code(frame_t *f)
{
	PyObject *code;

#if PY_VERSION_HEX >= 0x030C0000
	if (f->owner == FRAME_OWNED_BY_CSTACK)
		return NULL;
#endif
	code = frame_code_ptr(f);
	if (!code || Py_TYPE(code) != &PyCode_Type)
		return NULL;
#if PY_VERSION_HEX >= 0x030B0000
	if (_PyFrame_IsIncomplete(f))
		return NULL;
#endif
	return (PyCodeObject *)code;
}

/* Where code object co goes in the code cache. */
static unsigned int code_index(const void *co)
{
	uintptr_t h = ((uintptr_t)co >> 4) * 0x9E3779B97F4A7C15ull;

	return (unsigned int)(h >> 40) & (CODE_SLOTS - 1);
}

/* The size of a frame running co on the thread's data stack, in words (_PyFrame_PushUnchecked); 0 before 3.11. */
static int code_words(const PyCodeObject *co)
{
#if PY_VERSION_HEX >= 0x030C0000
	return co->co_framesize;
#elif PY_VERSION_HEX >= 0x030B0000
	return co->co_nlocalsplus + co->co_stacksize + (int)FRAME_SPECIALS_SIZE;
#else
	return 0;
#endif
}

#if PY_VERSION_HEX >= 0x030B0000
/* Copies n bytes at p through the kernel: 0, or -1 where they are not all mapped (EFAULT, never a fault). */
static int peek(const void *p, void *out, size_t n)
{
	struct iovec local, remote;

	local.iov_base = out;
	local.iov_len = n;
	remote.iov_base = (void *)p;
	remote.iov_len = n;
	return process_vm_readv(S.pid, &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

/*
 * A copy of the fixed part of the frame at f: read directly when it lies
 * below the top of the thread's live data stack chunk (mapped), through
 * the kernel otherwise.  -1 when it is not mapped.
 */
static int frame_head(PyThreadState *ts, const frame_t *f, frame_t *head)
{
	_PyStackChunk *c = ts->datastack_chunk;
	PyObject **p = (PyObject **)f, **top = ts->datastack_top;

	if (c && p >= c->data && p + FRAME_SPECIALS_SIZE <= top && top <= (PyObject **)((char *)c + c->size)) {
		memcpy(head, f, offsetof(frame_t, localsplus));
		return 0;
	}
	return peek(f, head, offsetof(frame_t, localsplus));
}

/* Where a frame the thread owns (head its copy) ends on the data stack; NULL when it runs no code object. */
static PyObject **frame_end(const frame_t *f, frame_t *head)
{
	PyCodeObject co;

	if (peek(frame_code_ptr(head), &co, offsetof(PyCodeObject, co_code_adaptive)) < 0 ||
	    Py_TYPE(&co) != &PyCode_Type)
		return NULL;
	return (PyObject **)f + code_words(&co);
}

/* The data stack chunk of the thread's that holds p, NULL for none. */
static _PyStackChunk *chunk_of(PyThreadState *ts, PyObject **p)
{
	_PyStackChunk *c;

	for (c = ts->datastack_chunk; c; c = c->previous)
		if (p >= c->data && p < (PyObject **)((char *)c + c->size))
			return c;
	return NULL;
}

/* Where the frame above one that ends at p starts: p, or the start of the next chunk. */
static PyObject **frame_above(PyThreadState *ts, PyObject **p)
{
	_PyStackChunk *c;

	for (c = ts->datastack_chunk; c && c->previous; c = c->previous)
		if (p == &c->previous->data[c->previous->top])
			return c->data;
	return p;
}

/* The frame size the code cache holds for the code object at co (no read of co itself); 0 when it holds none. */
static int cached_words(const void *co)
{
	unsigned int i, idx = code_index(co);

	for (i = 0; i < 64; i++) {
		const struct code_slot *c = &S.codes[(idx + i) & (CODE_SLOTS - 1)];

		if (c->code == co)
			return c->words;
		if (!c->code)
			return 0;
	}
	return 0;
}

/*
 * Whether the frame at f (head its copy), which the thread owns, ends where
 * the frame at p starts: by the frame size the code cache holds for its code
 * where that fits (no system call), else as its code object, read through
 * the kernel, says (an address the cache holds may be another code object's
 * now).
 */
static int frame_ends_at(PyThreadState *ts, const frame_t *f, frame_t *head, PyObject **p)
{
	int words = cached_words(frame_code_ptr(head));

	if (words > 0 && frame_above(ts, (PyObject **)f + words) == p)
		return 1;
	return frame_above(ts, frame_end(f, head)) == p;
}

/* Whether f, a generator's frame, is that of a generator, coroutine or async generator that runs. */
static int gen_running(const frame_t *f)
{
	PyGenObject gen;

	if (peek((const char *)f - offsetof(PyGenObject, gi_iframe), &gen, offsetof(PyGenObject, gi_iframe)) < 0)
		return 0;
	return (Py_TYPE(&gen) == &PyGen_Type || Py_TYPE(&gen) == &PyCoro_Type || Py_TYPE(&gen) == &PyAsyncGen_Type) &&
	       gen.gi_frame_state == FRAME_EXECUTING;
}

/*
 * Whether frames the thread owns, from p up, each starting where the one
 * below ends, end exactly at the top of its data stack.  Between the
 * current frame and the top there are only the frames of a call from C
 * being set up or taken down (a few): more, or anything else, and p is no
 * frame's end.
 */
static int frames_reach_top(PyThreadState *ts, PyObject **p)
{
	frame_t head;
	int i;

	for (i = 0; i < 8 && p; i++) {
		p = frame_above(ts, p);
		if (p == ts->datastack_top)
			return 1;
		if (!chunk_of(ts, p) || frame_head(ts, (frame_t *)p, &head) < 0 || head.owner != FRAME_OWNED_BY_THREAD)
			return 0;
		p = frame_end((frame_t *)p, &head);
	}
	return 0;
}

/*
 * Whether the thread's current frame and its link to the caller can be
 * read: the walk trusts every frame linked from there on.  A signal can
 * land inside a push or a pop, where the interpreter has not made all its
 * stores yet (in the order the compiler chose, not the source's):
 *
 * - 3.11 and 3.12 make a new evaluation loop's C frame (_PyCFrame, on the C
 *   stack) the thread's current one a few instructions before they store
 *   its current frame, so a signal in between reads whatever the C stack
 *   held there: a frame of an earlier call, popped since, a pointer into
 *   the middle of a live frame, or no frame at all.
 * - Debian's 3.11 stores a called function's frame as the current one
 *   before its link to the caller, so a signal in between sees a current
 *   frame whose caller is whatever the data stack held.
 * - 3.11.0 pops a returning frame, which may unmap its data stack chunk,
 *   before it stores the caller.
 *
 * So a current frame the thread owns must be a frame of its data stack:
 * its code's frame size, and those of the frames above it (a call from C
 * being set up or taken down), end exactly at datastack_top.  One
 * elsewhere must be that of a generator, coroutine or async generator that
 * is executing.  Its caller must be one of these too, and where the thread
 * owns the caller, the caller must end where the frame starts (for a
 * generator's frame: where the frames the thread owns end).  Every read of
 * memory not known to be mapped goes through the kernel (peek).  Anything
 * else drops the sample.
 */
static int frame_first_live(PyThreadState *ts, frame_t *f)
{
	frame_t head, prev;
	PyObject **start = (PyObject **)f;

	if (!ts->datastack_chunk || frame_head(ts, f, &head) < 0)
		return 0;
	if (head.owner == FRAME_OWNED_BY_THREAD) {
		if (!chunk_of(ts, start) ||
		    (!frame_ends_at(ts, f, &head, ts->datastack_top) && !frames_reach_top(ts, frame_end(f, &head))))
			return 0;
	} else if (head.owner == FRAME_OWNED_BY_GENERATOR) {
		if (!gen_running(f))
			return 0;
		start = ts->datastack_top;
	} else {
		return 0;
	}
	if (!head.previous)
		return 1;
	if (frame_head(ts, head.previous, &prev) < 0)
		return 0;
	if (prev.owner == FRAME_OWNED_BY_THREAD)
		return frame_ends_at(ts, head.previous, &prev, start);
	if (prev.owner == FRAME_OWNED_BY_GENERATOR)
		return gen_running(head.previous);
#if PY_VERSION_HEX >= 0x030C0000
	/* The shim an evaluation loop puts below its first frame, on the C stack. */
	return prev.owner == FRAME_OWNED_BY_CSTACK;
#else
	return 0;
#endif
}
#else
static int frame_first_live(PyThreadState *ts, frame_t *f)
{
	return 1;
}
#endif

static PyObject *frame_local0(frame_t *f)
{
#if PY_VERSION_HEX >= 0x030B0000
	return f->localsplus[0];
#else
	return f->f_localsplus[0];
#endif
}

static PyObject *code_name(PyCodeObject *co)
{
#if PY_VERSION_HEX >= 0x030B0000
	return co->co_qualname;
#else
	return co->co_name;
#endif
}

static int str_is(PyObject *o, const char *s)
{
	size_t n = strlen(s);

	return o && Py_TYPE(o) == &PyUnicode_Type && PyUnicode_IS_READY(o) && PyUnicode_IS_COMPACT_ASCII(o) &&
	       (size_t)PyUnicode_GET_LENGTH(o) == n && !memcmp(PyUnicode_DATA(o), s, n);
}

/* The cache slot of co, emitting its C record on first sight; NULL when the cache is full. */
/*
 * The records being built.  Only one handler samples at a time (the busy
 * flag), so they need no stack: a thread deep in recursion has little.
 */
static struct rec sample_rec, code_rec;

/* The cache slot of co, emitting its C record on first sight; NULL when the cache is full. */
static struct code_slot *code_lookup(PyCodeObject *co, int64_t t)
{
	unsigned int i, idx = code_index(co);
	PyObject *name = code_name(co);
	struct rec *r = &code_rec;

	for (i = 0; i < 64; i++) {
		struct code_slot *c = &S.codes[(idx + i) & (CODE_SLOTS - 1)];

		if (c->code == co && c->name == name && c->file == co->co_filename &&
		    c->firstline == co->co_firstlineno)
			return c;
		if (c->code && c->code != co)
			continue;
		/* Empty, or this address now holds another code object: (re)define it. */
		c->code = co;
		c->name = name;
		c->file = co->co_filename;
		c->firstline = co->co_firstlineno;
		c->words = code_words(co);
		c->id = ++S.next_id;
		c->import = str_is(co->co_name, "_find_and_load") &&
			    str_is(co->co_filename, "<frozen importlib._bootstrap>");
		rec_start(r, 'C', t);
		rec_ch(r, '\t');
		rec_i64(r, c->id);
		rec_ch(r, '\t');
		rec_pystr(r, name);
		rec_ch(r, '\t');
		rec_pystr(r, co->co_filename);
		rec_ch(r, '\t');
		rec_i64(r, co->co_firstlineno);
		if (rec_append(r) < 0)
			return NULL;
		return c;
	}
	return NULL;
}

/* In the handler: no more signals, the file stays as it is until exit. */
static void sampler_stop_now(void)
{
	S.enabled = 0;
	timers_delete();
}

/* Appends one sample of ts, the state of thread tno, taken at t with its CPU time cpu. */
static void walk_frames(PyThreadState *ts, int tno, int64_t t, int64_t cpu, int64_t wait)
{
	struct rec *r = &sample_rec;
	frame_t *f = frame_first(ts);
	int depth = 0;

	if (f && !frame_first_live(ts, f)) {
		S.dropped++;
		return;
	}
	rec_start(r, 'S', t);
	rec_ch(r, '\t');
	rec_i64(r, tno);
	rec_ch(r, '\t');
	rec_i64(r, cpu);
	rec_ch(r, '\t');
	rec_i64(r, wait);
	for (; f && depth < MAX_FRAMES; f = frame_next(f)) {
		PyCodeObject *co = frame_code(f);
		struct code_slot *c;

		if (!co)
			continue;
		c = code_lookup(co, t);
		if (!c) {
			sampler_stop_now();
			return;
		}
		rec_ch(r, '\t');
		rec_i64(r, c->id);
		if (c->import) {
			rec_ch(r, ':');
			rec_pystr(r, frame_local0(f));
		}
		depth++;
	}
	if (f)
		rec_strz(r, "\t...");
	if (rec_append(r) < 0)
		sampler_stop_now();
}

static void sample_frames(PyThreadState *ts, pid_t tid, int tno, int64_t t, int64_t cpu, int64_t wait)
{
	walk_tid = tid;
	if (sigsetjmp(walk_env, 0) == 0)
		walk_frames(ts, tno, t, cpu, wait);
	else
		S.faults++;
	walk_tid = 0;
}

static int finalizing(void)
{
#if PY_VERSION_HEX >= 0x030D0000
	return Py_IsFinalizing();
#else
	return _Py_IsFinalizing();
#endif
}

/*
 * The main thread's time spent runnable but not running (waiting for a CPU:
 * a busy machine, or a CPU quota's throttling), the second field of its
 * /proc schedstat; -1 when unknown.  One pread: safe in the handler.
 */
static int64_t run_wait_ns(void)
{
	char b[96], *p;
	ssize_t n;
	int64_t v = 0;

	if (!own_is(&S.sched) && own_open(&S.sched, S.sched_path, O_RDONLY) < 0)
		return -1;
	n = pread(S.sched.fd, b, sizeof(b) - 1, 0);
	if (n <= 0)
		return -1;
	b[n] = '\0';
	p = strchr(b, ' ');
	if (!p)
		return -1;
	for (p++; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	return v;
}

/*
 * The main thread's wait for a CPU at (t, cpu), its clocks now.  The pread
 * of schedstat is the dearest part of a sample (about 8 us of 20 here, the
 * kernel formatting the file each time), and a thread that ran the whole
 * time since the last read cannot have waited: it is read again only once
 * the thread's wall time since then exceeds its CPU time by a quarter of
 * the interval.  So a value is at most that much behind, and the wait it
 * has not seen yet is counted in the next sample that reads it.
 */
static int64_t main_wait_ns(int64_t t, int64_t cpu)
{
	if (S.wait_ns < 0 || t < 0 || cpu < 0 || (t - S.wait_t) - (cpu - S.wait_cpu) >= S.interval_us * 250) {
		S.wait_ns = run_wait_ns();
		S.wait_t = t;
		S.wait_cpu = cpu;
	}
	return S.wait_ns;
}

/*
 * One sample of the calling thread.  Runs in the signal handler, so it only
 * reads memory and makes async-signal-safe system calls.  Once the
 * interpreter finalises (after atexit and the joins of non-daemon threads)
 * thread states go away: the end is recorded and sampling stops.
 */
static void take_sample(pid_t tid)
{
	PyThreadState *ts;
	struct rec *r = &sample_rec;
	int64_t t, cpu;

	if (finalizing()) {
		rec_start(r, 'F', clock_ns(CLOCK_MONOTONIC));
		rec_append(r);
		sampler_stop_now();
		return;
	}
	ts = PyGILState_GetThisThreadState();
	if (!ts)
		return;
	t = clock_ns(CLOCK_MONOTONIC);
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	sample_frames(ts, tid, thread_no(tid), t, cpu, tid == S.main_tid ? main_wait_ns(t, cpu) : -1);
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (si->si_code != SI_TIMER) {
		/* Not ours: whatever handled the signal before the sampler. */
		if (S.old_action.sa_flags & SA_SIGINFO) {
			if (S.old_action.sa_sigaction)
				S.old_action.sa_sigaction(sig, si, uc);
		} else if (S.old_action.sa_handler != SIG_IGN && S.old_action.sa_handler != SIG_DFL) {
			S.old_action.sa_handler(sig);
		}
	} else if (S.enabled) {
		/*
		 * Timers are not inherited by fork(), and a fork's pending signals
		 * are cleared, so a timer signal is this process's own: no getpid()
		 * check.  The thread id is read once, here (a system call).
		 */
		if (!atomic_flag_test_and_set(&busy)) {
			S.writer_tid = gettid_raw();
			if (S.enabled)
				take_sample(S.writer_tid);
			atomic_flag_clear(&busy);
		} else {
			S.dropped++;
		}
	}
	errno = saved;
}

static int timer_make(timer_t *tm, clockid_t clock, int src, pid_t tid, long interval_us)
{
	struct sigevent ev;
	struct itimerspec its;

	memset(&ev, 0, sizeof(ev));
	ev.sigev_signo = S.signo;
	ev.sigev_value.sival_int = src;
	if (tid) {
		ev.sigev_notify = SIGEV_THREAD_ID;
		ev._sigev_un._tid = tid;
	} else {
		ev.sigev_notify = SIGEV_SIGNAL;
	}
	if (timer_create(clock, &ev, tm) < 0)
		return -1;
	memset(&its, 0, sizeof(its));
	its.it_interval.tv_sec = interval_us / 1000000;
	its.it_interval.tv_nsec = (interval_us % 1000000) * 1000;
	its.it_value = its.it_interval;
	if (timer_settime(*tm, 0, &its, NULL) < 0) {
		timer_delete(*tm);
		return -1;
	}
	return 0;
}

/*
 * The main thread, where start-up happens, is sampled every interval of wall
 * time: a thread that waits (for I/O, a lock, or the CPU quota) gets the
 * signal when it runs again, before any more Python code, so the sample
 * shows where it waited.  Other threads are sampled every interval of their
 * own CPU time, from timers they make when they start (thread_started).
 */
static int timers_start(void)
{
	if (timer_make(&S.wall_timer, CLOCK_MONOTONIC, SRC_WALL, S.main_tid, S.interval_us) < 0)
		return -1;
	S.have_wall = 1;
	return 0;
}

static void busy_lock(void)
{
	while (atomic_flag_test_and_set(&busy))
		;
}

/*
 * In a thread that _thread started, with the GIL: a CPU-time timer that
 * sends the signal to this thread.  The table is shared with the handler, so it
 * changes under the handler's own flag.
 */
static void thread_started(void)
{
	pid_t tid = gettid_raw();
	struct thread_slot *t;
	timer_t tm;

	if (!S.enabled || getpid() != S.pid || tid == S.main_tid)
		return;
	if (timer_make(&tm, CLOCK_THREAD_CPUTIME_ID, SRC_CPU, tid, S.interval_us) < 0)
		return;
	busy_lock();
	t = thread_slot(tid, 1);
	if (t) {
		t->no = ++S.next_tno;
		t->timer = tm;
		t->has_timer = 1;
	}
	atomic_flag_clear(&busy);
	if (!t)
		timer_delete(tm);
}

static void thread_ended(void)
{
	pid_t tid = gettid_raw();
	struct thread_slot *t;

	if (getpid() != S.pid)
		return;
	busy_lock();
	t = thread_slot(tid, 0);
	if (t && t->has_timer) {
		timer_delete(t->timer);
		t->has_timer = 0;
	}
	atomic_flag_clear(&busy);
}

/* What a thread started through the wrapped _thread functions runs: fn, between the two calls above. */
static PyObject *thread_entry(PyObject *fn, PyObject *args, PyObject *kw)
{
	PyObject *res;

	thread_started();
	res = PyObject_Call(fn, args, kw);
	thread_ended();
	return res;
}

static PyMethodDef entry_def = { "coldstart_thread_entry", (PyCFunction)(void (*)(void))thread_entry,
				 METH_VARARGS | METH_KEYWORDS, NULL };

/*
 * _thread.start_new_thread(function, args[, kwargs]) and, from 3.13,
 * _thread.start_joinable_thread(function, handle=None, daemon=True): the
 * function is replaced by thread_entry around it.
 */
static PyObject *wrap_start(PyObject *orig, PyObject *args, PyObject *kw)
{
	PyObject *fn = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : NULL;
	PyObject *entry, *nargs, *nkw = NULL, *res;
	int in_kw = 0;

	if (!fn && kw && (fn = PyDict_GetItemString(kw, "function")))
		in_kw = 1;
	if (!S.enabled || !fn || !PyCallable_Check(fn))
		return PyObject_Call(orig, args, kw);
	entry = PyCFunction_New(&entry_def, fn);
	if (!entry)
		return NULL;
	if (in_kw) {
		nargs = args;
		Py_INCREF(nargs);
		nkw = PyDict_Copy(kw);
		if (!nkw || PyDict_SetItemString(nkw, "function", entry) < 0) {
			Py_XDECREF(nkw);
			Py_DECREF(nargs);
			Py_DECREF(entry);
			return NULL;
		}
	} else {
		nargs = PyTuple_GetSlice(args, 0, PyTuple_GET_SIZE(args));
		if (!nargs) {
			Py_DECREF(entry);
			return NULL;
		}
		Py_SETREF(((PyTupleObject *)nargs)->ob_item[0], entry);
		Py_INCREF(entry);
	}
	res = PyObject_Call(orig, nargs, nkw ? nkw : kw);
	Py_DECREF(entry);
	Py_DECREF(nargs);
	Py_XDECREF(nkw);
	return res;
}

static PyMethodDef start_new_def = { "start_new_thread", (PyCFunction)(void (*)(void))wrap_start,
				     METH_VARARGS | METH_KEYWORDS, NULL };
static PyMethodDef start_new_alias_def = { "start_new", (PyCFunction)(void (*)(void))wrap_start,
					   METH_VARARGS | METH_KEYWORDS, NULL };
/* threading's own names for them, bound when it was imported. */
static PyMethodDef threading_start_def = { "_start_new_thread", (PyCFunction)(void (*)(void))wrap_start,
					   METH_VARARGS | METH_KEYWORDS, NULL };
#if PY_VERSION_HEX >= 0x030D0000
static PyMethodDef start_joinable_def = { "start_joinable_thread", (PyCFunction)(void (*)(void))wrap_start,
					  METH_VARARGS | METH_KEYWORDS, NULL };
static PyMethodDef threading_joinable_def = { "_start_joinable_thread", (PyCFunction)(void (*)(void))wrap_start,
					      METH_VARARGS | METH_KEYWORDS, NULL };
#endif

/* Replaces mod.<name> with a C function around it (self = the original); once. */
static void wrap_attr(PyObject *mod, PyMethodDef *def)
{
	PyObject *orig = PyObject_GetAttrString(mod, def->ml_name), *w;

	if (!orig) {
		PyErr_Clear();
		return;
	}
	if (PyCFunction_Check(orig) && PyCFunction_GET_FUNCTION(orig) == def->ml_meth) {
		Py_DECREF(orig);
		return;
	}
	w = PyCFunction_New(def, orig);
	Py_DECREF(orig);
	if (!w || PyObject_SetAttrString(mod, def->ml_name, w) < 0)
		PyErr_Clear();
	Py_XDECREF(w);
}

/*
 * The threads that threading or _thread start get CPU-time timers.
 * threading binds _thread's functions when it is imported, which a .pth
 * file may have made happen before this: its names are wrapped too.
 */
static void wrap_thread_start(void)
{
	PyObject *mod = PyImport_ImportModule("_thread");
	PyObject *threading;

	if (!mod) {
		PyErr_Clear();
		return;
	}
	wrap_attr(mod, &start_new_def);
	wrap_attr(mod, &start_new_alias_def);
#if PY_VERSION_HEX >= 0x030D0000
	wrap_attr(mod, &start_joinable_def);
#endif
	Py_DECREF(mod);
	threading = PyDict_GetItemString(PyImport_GetModuleDict(), "threading");
	if (threading) {
		if (PyObject_HasAttrString(threading, "_start_new_thread"))
			wrap_attr(threading, &threading_start_def);
#if PY_VERSION_HEX >= 0x030D0000
		if (PyObject_HasAttrString(threading, "_start_joinable_thread"))
			wrap_attr(threading, &threading_joinable_def);
#endif
	}
}

/* origin: "exec" for the interpreter's own start, "fork" in an os.fork() child. */
static int file_open(const char *origin)
{
	struct rec r;
	void *p;
	int64_t t = clock_ns(CLOCK_MONOTONIC);
	const char *ver = Py_GetVersion();

	S.pid = getpid();
	S.writer_tid = gettid_raw();
	p = fill_create(&S.fill, S.dir, (long)S.pid, "samples", MAP_BYTES);
	if (!p)
		return -1;
	S.map = p;
	S.used = 0;
	/* Called on the thread that is the main one from now on: the start's, or the fork's. */
	own_close(&S.sched);
	snprintf(S.sched_path, sizeof(S.sched_path), "/proc/%ld/task/%ld/schedstat", (long)S.pid, (long)gettid_raw());
	own_open(&S.sched, S.sched_path, O_RDONLY);
	/* Cleared for a second file (a fork's): the first one's tables are still the zero pages. */
	if (S.next_id || S.next_tno) {
		memset(S.codes, 0, sizeof(S.codes));
		memset(S.threads, 0, sizeof(S.threads));
	}
	S.next_id = 0;
	S.next_tno = 1;
	S.dropped = 0;
	S.faults = 0;
	r.n = 0;
	rec_strz(&r, "#coldstart-samples 1");
	rec_append(&r);
	rec_start(&r, 'H', t);
	rec_ch(&r, '\t');
	rec_i64(&r, S.pid);
	rec_ch(&r, '\t');
	rec_i64(&r, getppid());
	rec_ch(&r, '\t');
	rec_i64(&r, S.interval_us);
	rec_ch(&r, '\t');
	rec_i64(&r, clock_ns(CLOCK_THREAD_CPUTIME_ID));
	rec_ch(&r, '\t');
	rec_i64(&r, clock_ns(CLOCK_PROCESS_CPUTIME_ID));
	rec_ch(&r, '\t');
	while (*ver && *ver != ' ')
		rec_ch(&r, *ver++);
	rec_ch(&r, '\t');
	rec_strz(&r, origin);
	S.wait_t = t;
	S.wait_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	S.wait_ns = run_wait_ns();
	rec_ch(&r, '\t');
	rec_i64(&r, S.wait_ns);
	return rec_append(&r);
}

/* Writes the end record and cuts the file to its length. */
static void file_close(const char *why)
{
	struct rec r;

	if (!S.map)
		return;
	S.writer_tid = gettid_raw();
	rec_start(&r, 'Q', clock_ns(CLOCK_MONOTONIC));
	rec_ch(&r, '\t');
	rec_i64(&r, clock_ns(CLOCK_PROCESS_CPUTIME_ID));
	rec_ch(&r, '\t');
	rec_i64(&r, (int64_t)S.dropped);
	rec_ch(&r, '\t');
	rec_i64(&r, (int64_t)S.faults);
	rec_ch(&r, '\t');
	rec_strz(&r, why);
	rec_append(&r);
	munmap(S.map, MAP_BYTES);
	S.map = NULL;
	if (fill_resize(&S.fill, S.used) < 0)
		S.used = 0;
	fill_close(&S.fill);
}

/* Stops sampling in this process: timers first, then wait out a running handler. */
static void sampler_shutdown(const char *why)
{
	if (!S.map || getpid() != S.pid)
		return;
	S.enabled = 0;
	timers_delete();
	busy_lock();
	file_close(why);
	atomic_flag_clear(&busy);
}

static void sampler_atexit(void)
{
	sampler_shutdown("exit");
}

/*
 * A real-time signal nobody handles, from SIGRTMIN + 5 up: not SIGPROF, so a
 * target's own profiler (setitimer, signal.signal(SIGPROF)) neither displaces
 * the sampler nor gets its ticks.  0 when every one is taken.
 */
static int free_signal(void)
{
	int sig;

	for (sig = SIGRTMIN + 5; sig <= SIGRTMAX; sig++) {
		struct sigaction cur;

		if (sigaction(sig, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL)
			return sig;
	}
	return 0;
}

PyDoc_STRVAR(start_doc, "start(dir, interval_us) -> bool\n\n"
			"Starts sampling this process (and its os.fork() children) into dir.");

static PyObject *sampler_start(PyObject *self, PyObject *args)
{
	const char *dir;
	long interval;
	struct sigaction sa;

	if (!PyArg_ParseTuple(args, "sl", &dir, &interval))
		return NULL;
	if (S.enabled)
		Py_RETURN_TRUE;
	if (strlen(dir) >= sizeof(S.dir) || interval < 50 || interval > 1000000)
		Py_RETURN_FALSE;
	memcpy(S.dir, dir, strlen(dir) + 1);
	S.interval_us = interval;
	S.main_tid = gettid_raw();
	faults_install();
	if (file_open("exec") < 0)
		Py_RETURN_FALSE;
	if (!S.installed) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_signal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		S.signo = free_signal();
		if (!S.signo || sigaction(S.signo, &sa, &S.old_action) < 0) {
			file_close("sigaction");
			Py_RETURN_FALSE;
		}
		Py_AtExit(sampler_atexit);
		wrap_thread_start();
		S.installed = 1;
	}
	S.enabled = 1;
	if (timers_start() < 0) {
		S.enabled = 0;
		file_close("timer_create");
		Py_RETURN_FALSE;
	}
	Py_RETURN_TRUE;
}

PyDoc_STRVAR(after_fork_doc, "after_fork()\n\n"
			     "In an os.fork() child: a samples file of its own and timers for its thread.");

/*
 * Registered with os.register_at_fork(after_in_child=...), which runs for
 * os.fork() (gunicorn, multiprocessing's fork) but not for the fork of
 * subprocess, whose child only execs: that one gets no file of its own.
 */
static PyObject *sampler_after_fork(PyObject *self, PyObject *unused)
{
	if (!S.enabled)
		Py_RETURN_NONE;
	/* Timers are not inherited, nor are the other threads; the parent's mapping is the parent's file. */
	S.have_wall = 0;
	if (S.map)
		munmap(S.map, MAP_BYTES);
	fill_close(&S.fill);
	S.map = NULL;
	atomic_flag_clear(&busy);
	S.enabled = 0;
	S.main_tid = gettid_raw();
	if (file_open("fork") < 0)
		Py_RETURN_NONE;
	S.enabled = 1;
	if (timers_start() < 0) {
		S.enabled = 0;
		file_close("timer_create");
	}
	Py_RETURN_NONE;
}

PyDoc_STRVAR(stop_doc, "stop()\n\nStops sampling in this process and closes its file.");

static PyObject *sampler_stop(PyObject *self, PyObject *unused)
{
	sampler_shutdown("stop");
	Py_RETURN_NONE;
}

static PyObject *sampler_enabled(PyObject *self, PyObject *unused)
{
	return PyBool_FromLong(S.enabled);
}

static PyMethodDef sampler_methods[] = {
	{ "start", sampler_start, METH_VARARGS, start_doc },
	{ "after_fork", sampler_after_fork, METH_NOARGS, after_fork_doc },
	{ "stop", sampler_stop, METH_NOARGS, stop_doc },
	{ "enabled", sampler_enabled, METH_NOARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef sampler_module = {
	PyModuleDef_HEAD_INIT, "_sampler", "coldstart's start-up sampler.", -1, sampler_methods,
};

PyMODINIT_FUNC PyInit__sampler(void)
{
	if (!S_ready) {
		S.fill.own.fd = -1;
		S.sched.fd = -1;
		S_ready = 1;
	}
	return ext_module_create(&sampler_module, SAMPLES_VERSION, NULL);
}
