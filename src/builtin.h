/*
 * One function per subcommand, each in its own cmd_*.c, dispatched from the
 * table in main.c.  Each returns the process exit status (docs/exit-codes.md).
 */
#ifndef COLDSTART_BUILTIN_H
#define COLDSTART_BUILTIN_H

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

int cmd_profile(int argc, char **argv);
int cmd_parse(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_why(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_docker(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_plan(int argc, char **argv);

#include "datadir.h" /* coldstart_datadir(), for the commands */

#endif
