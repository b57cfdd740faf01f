/*
 * The arena allocator of an applied plan (docs/plan.md, "Frame stack chunks
 * and object arenas"), part of the _plancode extension (_plancode.c
 * includes it once): keep_chunks() installs it, prefault() switches the
 * faulting in of new object arenas, kept() says how many chunks it holds;
 * and gc_merge(), the collector's side of the first response.
 */
#include <sys/mman.h>

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

PyDoc_STRVAR(keep_chunks_doc,
	     "keep_chunks() -> bool\n\nKeeps the last few freed frame stack chunks for reuse instead of "
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

PyDoc_STRVAR(prefault_doc,
	     "prefault(on) -> bool\n\nWhether keep_chunks()'s allocator faults in new object arenas whole "
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
 * The collector at the first response (docs/plan.md, "The collector during
 * the first call").  While the plan's start held the collector back, the
 * objects it made stayed in the young generation; putting the thresholds
 * back makes the next allocation walk all of them (2-24 ms of CPU in the
 * Lambda benchmark's functions, right after the answer), and the next
 * middle collection walks them again, to find 12 to 1640 objects of
 * garbage (bench/lambda_gc_at_answer.py).
 * gc_merge() moves every object the collector tracks into its oldest
 * generation without walking them: gc.freeze() then gc.unfreeze(), called
 * from here so that no other thread runs between the two (neither runs
 * Python code nor lets go of the GIL).  They are walked at the next full
 * collection, as they would be; garbage in cycles made before the first
 * response waits for that collection.  A program that froze objects itself
 * (gc.get_freeze_count()) keeps them frozen: nothing is done.  The
 * free-threaded build has no generations to skip: nothing is done.
 */
PyDoc_STRVAR(gc_merge_doc, "gc_merge(gc) -> bool\n\nMoves every object the collector tracks into its oldest generation "
			   "without\nwalking them (gc.freeze() then gc.unfreeze(), no thread in between);\nFalse, and "
			   "nothing done, when the program has frozen objects of its own.");

static PyObject *pc_gc_merge(PyObject *self, PyObject *gc)
{
#ifdef Py_GIL_DISABLED
	Py_RETURN_FALSE;
#else
	PyObject *r = PyObject_CallMethod(gc, "get_freeze_count", NULL);
	long n;

	if (!r)
		return NULL;
	n = PyLong_AsLong(r);
	Py_DECREF(r);
	if (n == -1 && PyErr_Occurred())
		return NULL;
	if (n != 0)
		Py_RETURN_FALSE;
	r = PyObject_CallMethod(gc, "freeze", NULL);
	if (!r)
		return NULL;
	Py_DECREF(r);
	r = PyObject_CallMethod(gc, "unfreeze", NULL);
	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_TRUE;
#endif
}
