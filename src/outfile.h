/*
 * Output files written whole or not at all: every writer of a file a user
 * names (-o, exports, --markdown, --raw-log, ...) goes through here.
 *
 *	struct outfile of = OUTFILE_INIT;
 *	if (outfile_open(&of, path, err) < 0)
 *		return -1;
 *	... write to of.fd ...
 *	if (failed)
 *		outfile_abort(&of);		(the old file stays as it was)
 *	else if (outfile_commit(&of, err) < 0)	(fsync, rename over the name)
 *		return -1;
 *
 * A regular file (or a new name) is written to a temporary file created
 * beside it (O_EXCL | O_NOFOLLOW, mode 0600 until it is complete) and renamed
 * over it when complete, so a full disk, a signal or a crash leaves the
 * previous file as it was and (but for SIGKILL or a crash) no temporary
 * behind: while one exists, SIGINT, SIGTERM, SIGHUP and SIGQUIT remove it
 * first, then do what they did before; the new file takes the
 * old one's mode (0666 less the umask for a new name).  A device, FIFO or
 * socket (/dev/null, /dev/stdout, a pipe) is written in place: there is
 * nothing to replace.
 *
 * Symbolic links are followed, as the user's own shell would, except where
 * the kernel's fs.protected_symlinks rule refuses them: a link in a sticky,
 * world-writable directory (/tmp) owned by neither the writer nor the
 * directory's owner, which another user may have planted to point the write
 * at a file of the writer's.  The temporary is made beside the link's final
 * target, so the link stays a link.  By the same rule (the kernel's
 * protected_regular) a file there that belongs to someone else is not
 * replaced or appended to.  A link in /proc (/dev/stdout,
 * /dev/fd/N) stands for an open descriptor: it is written in place,
 * appending (a file the shell opened with >> keeps what it held).
 */
#ifndef COLDSTART_OUTFILE_H
#define COLDSTART_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

struct outfile {
	char *name; /* the path as the user gave it, for messages */
	char *path; /* the file that gets replaced: name with its links followed */
	char *tmp; /* the temporary beside path; NULL when written in place */
	int fd;
	/* An append (outfile_open_append): the length to cut back to on abort. */
	bool append;
	long long append_from;
	/* A temporary's mode and owner once complete: the replaced file's. */
	unsigned mode;
	bool keep_owner;
	unsigned old_uid, old_gid;
};

#define OUTFILE_INIT                                                                                                   \
	{                                                                                                              \
		.fd = -1                                                                                               \
	}

/*
 * The file a write to path would replace, its links followed under the
 * rule above; the result is the caller's to free.  NULL with "cannot write
 * 'x': ..." in err when a link is refused or a loop has no end.  A name
 * that does not exist comes back as is.  *fd_alias (when not NULL) is set
 * for a link in /proc, which names an open descriptor.
 */
char *outfile_resolve(const char *path, bool *fd_alias, struct buf *err);

/* Opens of for writing path as described above; 0, or -1 with err. */
int outfile_open(struct outfile *of, const char *path, struct buf *err);
/*
 * Opens path to append to it (created when missing): a failed append is cut
 * back (outfile_abort) to the length the file had, so the file holds either
 * all of the new text or none of it.  Links follow the same rule.
 */
int outfile_open_append(struct outfile *of, const char *path, struct buf *err);
/*
 * Finishes: fsync and rename over path for a temporary, close in place.
 * 0, or -1 with "cannot write 'x': ..." in err and the temporary removed.
 * Releases of either way.
 */
int outfile_commit(struct outfile *of, struct buf *err);
/* Removes the temporary (or cuts an append back) and releases of; the old file stays. */
void outfile_abort(struct outfile *of);

/*
 * Removes the temporary being written, if any; async-signal-safe, for a
 * handler that ends coldstart.
 */
void outfile_unlink_pending(void);

/* Writes all of data to fd, through EINTR and short writes; 0 or -1 with errno. */
int write_full(int fd, const char *data, size_t len);
/* outfile_open, the data, outfile_commit: 0, or -1 with err and the old file intact. */
int outfile_write(const char *path, const char *data, size_t len, struct buf *err);
/* The same as an append (outfile_open_append). */
int outfile_append(const char *path, const char *data, size_t len, struct buf *err);

#endif
