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
#include <stddef.h>
#include <sys/types.h>
#include <unistd.h>

#define FILL_BYTES ((size_t)256 * 1024)

struct fill {
	int fd;
	size_t filled; /* bytes of the file written (zeros ahead of the records) */
	int failed; /* a pwrite failed: no more attempts */
	int err; /* its errno (ENOSPC: the file system is full) */
};

static const char fill_zeros[65536];

static void fill_reset(struct fill *f, int fd)
{
	f->fd = fd;
	f->filled = 0;
	f->failed = 0;
	f->err = 0;
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
	while (f->filled < want && !f->failed) {
		size_t n = want - f->filled < sizeof(fill_zeros) ? want - f->filled : sizeof(fill_zeros);
		ssize_t w = pwrite(f->fd, fill_zeros, n, (off_t)f->filled);

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
