/*
 * Writing a mapped file ahead of its records, shared by the tracer
 * (_tracer.c) and the sampler (_sampler.c); each includes it once.
 *
 * A store into a page of a sparse file makes the file system allocate the
 * page inside the page fault (on ext4 here 30-170 us a page, some
 * milliseconds for the first), and on a full file system it cannot: the
 * kernel sends SIGBUS, which kills the target.  So the file is written with
 * zeros (pwrite, async-signal-safe) ahead of the records, FILL_BYTES at a
 * time: a store then only ever goes to a page the file system already holds
 * (a plain minor fault), and a full file system fails the pwrite, where the
 * writer stops recording, instead of the store.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define FILL_BYTES ((size_t)256 * 1024)

/*
 * A descriptor this extension opened, and the file it was opened on.  The
 * target may close any descriptor (os.closerange(3, N) when it daemonizes)
 * and get the number back for a file of its own, which must never be
 * written, cut or closed here: every use checks first (own_is).  All of it
 * is async-signal-safe.
 */
struct own_fd {
	int fd; /* -1: none */
	dev_t dev;
	ino_t ino;
};

/* Whether o's descriptor still is the file it was opened on. */
static int own_is(const struct own_fd *o)
{
	struct stat st;

	return o->fd >= 0 && fstat(o->fd, &st) == 0 && st.st_dev == o->dev && st.st_ino == o->ino;
}

/* o becomes fd, just opened; -1 (o without a descriptor) when fd cannot be looked at. */
static int own_take(struct own_fd *o, int fd)
{
	struct stat st;

	o->fd = -1;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	o->fd = fd;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	return 0;
}

/* Opens path into o; -1 when it cannot. */
static int own_open(struct own_fd *o, const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	if (own_take(o, fd) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return 0;
}

/* Forgets o's descriptor, closing it only while it still is o's file (a fork child's inherited one included). */
static void own_close(struct own_fd *o)
{
	if (own_is(o))
		close(o->fd);
	o->fd = -1;
}

/*
 * The file written ahead of its records: a descriptor no longer the file
 * is forgotten and the file opened again by its name (fill_fd).
 */
struct fill {
	struct own_fd own;
	char path[PATH_MAX + 64]; /* its name, to open it again */
	size_t filled; /* bytes of the file written (zeros ahead of the records) */
	int failed; /* a pwrite failed: no more attempts */
	int err; /* its errno (ENOSPC: the file system is full) */
};

static const char fill_zeros[65536];

/* f writes the file at path, just opened as fd; -1 when fd cannot be looked at. */
static int fill_reset(struct fill *f, int fd, const char *path)
{
	f->path[0] = '\0';
	f->filled = 0;
	f->failed = 0;
	f->err = 0;
	if (own_take(&f->own, fd) < 0)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s", path);
	return 0;
}

/*
 * Creates the first free dir/PID-N.ext (N from 0) at bytes, sparse (only
 * the pages written take space), maps it shared and makes it f's file.  The
 * mapping, or NULL when a step fails (nothing is left open then).
 */
static void *fill_create(struct fill *f, const char *dir, long pid, const char *ext, size_t bytes)
{
	char path[PATH_MAX + 64];
	int fd = -1, i;
	void *p;

	for (i = 0; i < 1000; i++) {
		snprintf(path, sizeof(path), "%s/%ld-%d.%s", dir, pid, i, ext);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)bytes) < 0) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	if (fill_reset(f, fd, path) < 0) {
		munmap(p, bytes);
		close(fd);
		return NULL;
	}
	return p;
}

/* A descriptor of f's file (opened again if the target closed it), or -1. */
static int fill_fd(struct fill *f)
{
	struct own_fd again;

	if (own_is(&f->own))
		return f->own.fd;
	f->own.fd = -1;
	if (!f->path[0] || own_open(&again, f->path, O_RDWR) < 0)
		return -1;
	if (again.dev != f->own.dev || again.ino != f->own.ino) {
		/* Another file has the name now: not this writer's to touch. */
		own_close(&again);
		f->path[0] = '\0';
		return -1;
	}
	f->own.fd = again.fd;
	return again.fd;
}

/* Sets the size of f's file (grown sparse or cut); -1 when it cannot. */
static int fill_resize(struct fill *f, size_t len)
{
	int fd = fill_fd(f);

	return fd < 0 ? -1 : ftruncate(fd, (off_t)len);
}

/* Closes f's descriptor when it still is the file's; the file is not opened again. */
static void fill_close(struct fill *f)
{
	own_close(&f->own);
	f->path[0] = '\0';
}

/*
 * Writes the file with zeros up to at least end (and FILL_BYTES beyond, never
 * past limit); 0 when the first end bytes are written, -1 when they cannot be
 * (a full file system): no further attempts are made then.
 */
static int fill_to(struct fill *f, size_t end, size_t limit)
{
	size_t want = end + FILL_BYTES;

	if (want > limit)
		want = limit;
	if (f->filled < want && !f->failed && fill_fd(f) < 0) {
		f->failed = 1;
		f->err = EBADF;
	}
	while (f->filled < want && !f->failed) {
		size_t n = want - f->filled < sizeof(fill_zeros) ? want - f->filled : sizeof(fill_zeros);
		ssize_t w = pwrite(f->own.fd, fill_zeros, n, (off_t)f->filled);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			f->failed = 1;
			f->err = w < 0 ? errno : ENOSPC;
		} else {
			f->filled += (size_t)w;
		}
	}
	return f->filled >= end ? 0 : -1;
}
