/*
 * Entry point: finds the subcommand in a table and runs it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "launch.h"
#include "util.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "profile", cmd_profile, "run a Python target and profile its start-up" },
	{ "parse", cmd_parse, "turn an existing -X importtime log into a report or profile" },
	{ "report", cmd_report, "render a saved profile (JSON) as a report" },
	{ "export", cmd_export, "write a profile as SVG, folded, speedscope, Chrome trace or HTML" },
	{ "diff", cmd_diff, "compare two profiles" },
	{ "check", cmd_check, "fail when a profile breaks an import-time budget (for CI)" },
	{ "inspect", cmd_inspect, "ELF facts about native extensions and the interpreter" },
	{ "docker", cmd_docker, "profile a command inside a constrained docker run" },
	{ "plan", cmd_plan, "record a start-up plan (lazy imports, module index) from sample requests" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: coldstart <command> [options] ...\n\n"
		   "Python import-time and cold-start profiler.\n\ncommands:\n");
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'coldstart <command> --help' describes each command.\n"
		   "Exit codes: docs/exit-codes.md (0 ok, 1 failure, 2 usage, 3 limits unavailable).\n");
}

int main(int argc, char **argv)
{
	size_t i;

	/* Nothing may be opened before: it would take a closed standard descriptor's place. */
	if (launch_open_std_fds() < 0)
		return EXIT_FAIL;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("coldstart %s\n", COLDSTART_VERSION);
		return EXIT_OK;
	}
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "coldstart: error: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
