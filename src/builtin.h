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
/* 3 (EXIT_LIMITS) is in cgroup.h; target codes are mapped in docs/exit-codes.md. */

int cmd_profile(int argc, char **argv);
int cmd_parse(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_docker(int argc, char **argv);

/* Directory holding coldstart's python/ tree (bootstrap, tracer, fdk). */
const char *coldstart_datadir(void);

#endif
