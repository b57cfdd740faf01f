/*
 * One function per subcommand, each in its own cmd_*.c, dispatched from the
 * table in main.c.  Each returns the process exit status (docs/exit-codes.md).
 */
#ifndef COLDSTART_BUILTIN_H
#define COLDSTART_BUILTIN_H

#include "exit.h" /* EXIT_*, the status each command returns */

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
