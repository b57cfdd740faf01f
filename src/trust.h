/*
 * Whether a program or library that a file's content names (a profile's
 * interpreter, a recorded extension) may be run or loaded on that say-so:
 * the rule sshd's StrictModes and sudo apply to what they run.
 */
#ifndef COLDSTART_TRUST_H
#define COLDSTART_TRUST_H

#include "util.h"

/*
 * 0 when path (a name without '/' is looked up in PATH, as exec would)
 * resolves, links followed, to a regular file owned by root or the
 * effective user and writable by nobody else, in directories that are
 * likewise owned by root or the effective user and writable by nobody else
 * (a root-owned sticky directory such as /tmp excepted: others can add
 * entries there but not replace ours).  Otherwise -1 with the reason in why,
 * naming the file or directory at fault: "'/tmp/x/evilpy' is owned by uid
 * 65534, not by root or uid 0 who runs coldstart".
 */
int trust_check_program(const char *path, struct buf *why);

#endif
