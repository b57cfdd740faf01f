/*
 * Weak placeholders for commands that are not built yet; each is replaced
 * by its real definition as soon as that file exists.
 */
#include <stdio.h>

#include "builtin.h"

#define PLACEHOLDER(fn, name)                                                        \
	__attribute__((weak)) int fn(int argc, char **argv)                          \
	{                                                                            \
		(void)argc;                                                          \
		(void)argv;                                                          \
		fprintf(stderr, "coldstart: error: '%s' is not available in this build\n", name); \
		return EXIT_FAIL;                                                    \
	}

PLACEHOLDER(cmd_export, "export")
PLACEHOLDER(cmd_diff, "diff")
PLACEHOLDER(cmd_check, "check")
PLACEHOLDER(cmd_inspect, "inspect")
PLACEHOLDER(cmd_docker, "docker")
PLACEHOLDER(cmd_profile, "profile")
PLACEHOLDER(cmd_parse, "parse")
PLACEHOLDER(cmd_report, "report")
