/*
 * The exit codes of coldstart (docs/exit-codes.md), named once.  The
 * commands return them; the layers below return them where what they report
 * is the status of a whole command (a target that failed, a bad option).
 */
#ifndef COLDSTART_EXIT_H
#define COLDSTART_EXIT_H

/* Exit codes shared by every command. */
#define EXIT_OK 0
#define EXIT_FAIL 1 /* a check failed, a target failed, a file could not be read */
#define EXIT_USAGE 2 /* bad command line */
#define EXIT_LIMITS 3 /* limits asked for and cannot be applied */
/* What happened to a measured target (profile, docker; docs/exit-codes.md). */
#define EXIT_NO_PYTHON 4 /* interpreter or command unusable */
#define EXIT_NO_ENGINE 4 /* docker: engine, image or container unusable */
#define EXIT_TARGET_FAILED 5
#define EXIT_TARGET_SIGNALED 6
#define EXIT_TARGET_OOM 7
#define EXIT_TARGET_TIMEOUT 8
#define EXIT_NOT_READY 9
#define EXIT_NO_IMPORTS 10 /* no measured run recorded an import: nothing to profile */

#endif
