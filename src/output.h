/*
 * Output paths and descriptors named on a command line, checked as the
 * options are read (by the commands and by the option tables of show.c and
 * ci_format.c), so a long run never ends in an unwritable file.
 */
#ifndef COLDSTART_OUTPUT_H
#define COLDSTART_OUTPUT_H

#include "util.h"

/*
 * Whether path can be written: "-" (stdout), an existing file that is not
 * a directory and may be written, or a new name in a directory that exists
 * and may be written.  0, or -1 with "cannot write 'x/y.json': no directory
 * 'x'" and the like in err.  Commands check their output paths with it as
 * the options are read, so a long run never ends in an unwritable file.
 */
int output_path_check(const char *path, struct buf *err);
/*
 * The value v of --json-fd N: 1 when N is stdout (the caller takes it as
 * --json); otherwise 0 with *fd set when N is open for writing, made
 * close-on-exec so the target never inherits it.  With a message in err: -1
 * when v is not a descriptor number, ARGS_FAILED when N is not open for
 * writing.
 */
int output_fd_arg(const char *v, const char *option, int *fd, struct buf *err);
/*
 * One more output asked for on stdout (*users counts them): only one may
 * have it; -1 with a message naming what in err for the second.
 */
int output_take_stdout(int *users, const char *what, struct buf *err);

#endif
