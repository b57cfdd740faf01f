/*
 * Entry point: finds the subcommand in a table and runs it; `coldstart help`
 * and the generators of the man page and the shell completion, which ask
 * every command of the table for its own --help so neither can drift.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd/builtin.h"
#include "render/export/export.h"
#include "sys/launch.h"
#include "util.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static int cmd_help(int argc, char **argv);

static const struct command commands[] = {
	{ "profile", cmd_profile, "run a Python target and profile its start-up" },
	{ "compare", cmd_compare, "run targets, interpreters or limit sets side by side, interleaved" },
	{ "parse", cmd_parse, "turn an existing -X importtime log into a report or profile" },
	{ "report", cmd_report, "render a saved profile (JSON) as a report" },
	{ "export", cmd_export, "write a profile as SVG, folded, speedscope, Chrome trace or HTML" },
	{ "diff", cmd_diff, "compare two profiles" },
	{ "check", cmd_check, "fail when a profile breaks an import-time budget (for CI)" },
	{ "why", cmd_why, "every importer of a module, and what would go away without it" },
	{ "inspect", cmd_inspect, "ELF facts about native extensions and the interpreter" },
	{ "docker", cmd_docker, "profile a command inside a constrained docker run" },
	{ "plan", cmd_plan, "record a start-up plan (lazy imports, module index) from sample requests" },
	{ "help", cmd_help, "a command's help (= coldstart COMMAND --help); the man page" },
};

/* Every exit code of every command (docs/exit-codes.md), for the help and the man page. */
static const struct {
	const char *code;
	const char *meaning;
} exit_codes[] = {
	{ "0", "success" },
	{ "1", "failure: a file unreadable or unwritable, a broken budget, a regression" },
	{ "2", "usage: a bad command line" },
	{ "3", "limits asked for cannot be applied here" },
	{ "4", "the interpreter, command or container engine cannot be used" },
	{ "5", "the target exited with a non-zero status" },
	{ "6", "the target was killed by a signal" },
	{ "7", "the target was killed by the memory limit (OOM)" },
	{ "8", "the target ran past --timeout" },
	{ "9", "--ready was given and readiness was never reached" },
	{ "10", "no measured run recorded an import: nothing to profile" },
	{ "128+N", "coldstart itself got signal N (130: Ctrl-C); the target was stopped" },
};

/* The environment coldstart reads. */
static const struct {
	const char *name;
	const char *meaning;
} environment[] = {
	{ "COLDSTART_PYTHON", "the interpreter profile and compare run when --python is not given" },
	{ "COLDSTART_DATADIR", "the directory holding coldstart's python/ tree (bootstrap, tracer)" },
	{ "COLDSTART_CACHE_DIR", "where tracers built for other interpreters are kept" },
	{ "COLDSTART_THREADS", "threads for big logs and profiles (1 turns threads off)" },
	{ "COLDSTART_KEEP_TRACE", "keep each run's trace directory (for debugging)" },
	{ "COLDSTART_MAX_PROFILE_SIZE", "the most text a profile read back may hold after decompression, e.g. 4g "
					"(default 1g)" },
	{ "NO_COLOR", "no colour in reports, even on a terminal" },
	{ "TMPDIR", "where trace directories are made" },
	{ "DOCKER_HOST", "the engine coldstart docker talks to" },
};

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* The command nearest to name, for "did you mean"; NULL when none is near. */
static const char *nearest_command(const char *name)
{
	size_t i, d, best = SIZE_MAX;
	const char *found = NULL;

	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		d = name_distance(name, commands[i].name);
		if (d < best) {
			best = d;
			found = commands[i].name;
		}
	}
	return found;
}

static void usage(FILE *f)
{
	struct buf b = BUF_INIT, out = BUF_INIT;
	size_t i;

	buf_adds(&b, "usage: coldstart <command> [options] ...\n\n"
		     "Python import-time and cold-start profiler.\n\ncommands:\n");
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		buf_addf(&b, "  %-9s %s\n", commands[i].name, commands[i].summary);
	buf_adds(&b, "\n'coldstart help COMMAND' or 'coldstart COMMAND --help' describes each command;\n"
		     "'man coldstart' describes them all.\n\nexit status:\n");
	for (i = 0; i < ARRAY_SIZE(exit_codes); i++)
		buf_addf(&b, "  %-6s %s\n", exit_codes[i].code, exit_codes[i].meaning);
	buf_adds(&b, "(docs/exit-codes.md says which command uses which)\n");
	text_wrap(b.buf, HELP_WIDTH, &out);
	fwrite(out.buf, 1, out.len, f);
	buf_release(&b);
	buf_release(&out);
}

/* Runs command c with --help, its help written as args_help_request says. */
static int command_help(const struct command *c)
{
	char *argv[] = { (char *)c->name, (char *)"--help", NULL };

	return c->fn(2, argv);
}

static void roff_line(const char *s, struct buf *out)
{
	roff_escape(s, strlen(s), out);
	buf_addch(out, '\n');
}

/* coldstart.1: the overview, then every command's --help as a section of its own. */
static int print_man(void)
{
	struct buf b = BUF_INIT;
	size_t i;
	int rc = EXIT_OK;

	buf_addf(&b, ".TH COLDSTART 1 \"\" \"coldstart %s\" \"User Commands\"\n", COLDSTART_VERSION);
	buf_adds(&b, ".SH NAME\ncoldstart \\- Python import\\-time and cold\\-start profiler\n"
		     ".SH SYNOPSIS\n.B coldstart\n.I command\n[\\fIoptions\\fR] ...\n"
		     ".SH DESCRIPTION\n"
		     "coldstart runs a Python target with \\-X importtime and an in\\-process tracer, "
		     "optionally under CPU and memory limits, and reports where its start\\-up time goes: "
		     "every import with its cost, the interpreter's own start\\-up, native extensions, "
		     "readiness of a server, and findings with a concrete fix.\n"
		     ".SH COMMANDS\n");
	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		buf_addf(&b, ".TP\n.B %s\n", commands[i].name);
		roff_line(commands[i].summary, &b);
	}
	buf_adds(&b, ".SH \"COMMAND OPTIONS\"\n");
	fwrite(b.buf, 1, b.len, stdout);
	buf_reset(&b);
	args_help_request.format = HELP_MAN;
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (commands[i].fn != cmd_help && command_help(&commands[i]))
			rc = EXIT_FAIL;
	args_help_request.format = HELP_TEXT;
	buf_adds(&b, ".SH \"EXIT STATUS\"\n");
	for (i = 0; i < ARRAY_SIZE(exit_codes); i++) {
		buf_addf(&b, ".TP\n.B %s\n", exit_codes[i].code);
		roff_line(exit_codes[i].meaning, &b);
	}
	buf_adds(&b, ".PP\nWhich command uses which code: docs/exit\\-codes.md.\n.SH ENVIRONMENT\n");
	for (i = 0; i < ARRAY_SIZE(environment); i++) {
		buf_addf(&b, ".TP\n.B %s\n", environment[i].name);
		roff_line(environment[i].meaning, &b);
	}
	buf_adds(&b, ".SH \"SEE ALSO\"\n.BR python3 (1)\n.PP\n"
		     "The documents in the source tree's docs/ directory: design, exit codes, the profile "
		     "format, limits, compare, exports, findings.\n");
	fwrite(b.buf, 1, b.len, stdout);
	buf_release(&b);
	return fflush(stdout) ? EXIT_FAIL : rc;
}

/* Values an option's argument can take, for completion (files are the default). */
static const struct {
	const char *option;
	const char *values; /* NULL: no completion, the value is free text */
} completion_values[] = {
	{ "--color", "auto always never" },
	{ "--engine", "docker podman" },
	{ "--preset", "fn lambda:" },
	{ "--ready", "fn tcp: http://127.0.0.1: unix:" },
	{ "--runs", NULL },
	{ "--warmup", NULL },
	{ "--top", NULL },
	{ "--depth", NULL },
	{ "--threshold", NULL },
	{ "--timeout", NULL },
	{ "--ready-timeout", NULL },
	{ "--cpus", NULL },
	{ "--memory", NULL },
	{ "--swap", NULL },
	{ "--pids", NULL },
	{ "--cpuset", NULL },
	{ "--budget", NULL },
	{ "--forbid", NULL },
	{ "--json-fd", NULL },
	{ "--limits", "none preset=fn cpus= memory=" },
	{ "--name", NULL },
	{ "--width", NULL },
	{ "--minwidth", NULL },
	{ "--title", NULL },
	{ "--run", NULL },
	{ "--image", NULL },
};

/* The completion's case for one command, from its option lines ("--long\t-s\tARG"). */
static void completion_case(const char *name, const char *lines, struct buf *out)
{
	struct buf words = BUF_INIT, valued = BUF_INIT, choices = BUF_INIT;
	const char *line = lines;
	size_t i;

	while (*line) {
		size_t len = strcspn(line, "\n");
		char *l = xstrndup(line, len), *s = strchr(l, '\t'), *a = s ? strchr(s + 1, '\t') : NULL;

		if (s && a) {
			*s++ = '\0';
			*a++ = '\0';
			buf_addf(&words, " %s", l);
			if (strcmp(s, "-"))
				buf_addf(&words, " %s", s);
			if (strcmp(a, "-")) {
				bool known = false;

				buf_addf(&valued, " %s%s%s", l, strcmp(s, "-") ? " " : "", strcmp(s, "-") ? s : "");
				for (i = 0; i < ARRAY_SIZE(completion_values); i++)
					if (!strcmp(completion_values[i].option, l)) {
						known = true;
						buf_addf(&choices,
							 "\t\t%s%s%s) COMPREPLY=($(compgen -W '%s' -- \"$cur\"));"
							 " return;;\n",
							 l, strcmp(s, "-") ? "|" : "", strcmp(s, "-") ? s : "",
							 completion_values[i].values ? completion_values[i].values
										     : "");
					}
				if (!known && !strcmp(l, "--format")) {
					size_t nr;
					const struct exporter *e = exporter_list(&nr);

					buf_addf(&choices, "\t\t--format) COMPREPLY=($(compgen -W '");
					for (i = 0; i < nr; i++)
						buf_addf(&choices, "%s%s", i ? " " : "", e[i].name);
					buf_adds(&choices, "' -- \"$cur\")); return;;\n");
				}
			}
		}
		free(l);
		line += len + (line[len] == '\n');
	}
	buf_addf(out, "\t%s)\n\t\topts='%s'\n\t\tvalued='%s'\n\t\tcase $prev in\n%s\t\tesac\n\t\t;;\n", name,
		 words.len ? words.buf + 1 : "", valued.buf, choices.buf);
	buf_release(&words);
	buf_release(&valued);
	buf_release(&choices);
}

/* A bash completion script for every command of the table and its options. */
static int print_completion(void)
{
	struct buf b = BUF_INIT, names = BUF_INIT;
	size_t i;
	int rc = EXIT_OK;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		buf_addf(&names, "%s%s", i ? " " : "", commands[i].name);
	buf_addf(&b,
		 "# bash completion for coldstart %s, generated by 'coldstart help --completion bash'\n"
		 "# from the same option tables as every command's --help.\n"
		 "_coldstart()\n{\n"
		 "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
		 "\tlocal cmd= i opts= valued=\n"
		 "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
		 "\t\tcase ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]}; break;; esac\n"
		 "\tdone\n"
		 "\tif [[ -z $cmd ]]; then\n"
		 "\t\tCOMPREPLY=($(compgen -W '%s --help --version' -- \"$cur\"))\n"
		 "\t\treturn\n"
		 "\tfi\n"
		 "\tcase $cmd in\n"
		 "\thelp)\n"
		 "\t\tCOMPREPLY=($(compgen -W '%s --man --completion' -- \"$cur\"))\n"
		 "\t\treturn;;\n",
		 COLDSTART_VERSION, names.buf, names.buf);
	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		char *text = NULL;
		size_t len = 0;
		FILE *m;

		if (commands[i].fn == cmd_help)
			continue;
		if (!(m = open_memstream(&text, &len)))
			die("out of memory");
		args_help_request.format = HELP_OPTIONS;
		args_help_request.out = m;
		if (command_help(&commands[i]))
			rc = EXIT_FAIL;
		args_help_request.format = HELP_TEXT;
		args_help_request.out = NULL;
		fclose(m);
		completion_case(commands[i].name, text, &b);
		free(text);
	}
	buf_adds(&b, "\t*) return;;\n"
		     "\tesac\n"
		     "\t# The value of an option that takes one: a file unless the case above said otherwise.\n"
		     "\tif [[ \" $valued \" == *\" $prev \"* ]]; then\n"
		     "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
		     "\t\treturn\n"
		     "\tfi\n"
		     "\tif [[ $cur == -* ]]; then\n"
		     "\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
		     "\t\treturn\n"
		     "\tfi\n"
		     "\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
		     "}\n"
		     "complete -o filenames -F _coldstart coldstart\n");
	fwrite(b.buf, 1, b.len, stdout);
	buf_release(&b);
	buf_release(&names);
	return fflush(stdout) ? EXIT_FAIL : rc;
}

static int help_usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "coldstart: error: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'coldstart help --help'.\n");
	return EXIT_USAGE;
}

/*
 * coldstart help [COMMAND], coldstart help --man, coldstart help
 * --completion bash.
 */
static int cmd_help(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		usage(stdout);
		return fflush(stdout) ? EXIT_FAIL : EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		printf("usage: coldstart help [COMMAND]\n"
		       "       coldstart help --man\n"
		       "       coldstart help --completion bash\n\n"
		       "Prints COMMAND's help (the same as 'coldstart COMMAND --help'), or without one\n"
		       "the list of commands and exit codes.  --man writes the whole man page\n"
		       "(coldstart.1) and --completion bash a bash completion script, both made from\n"
		       "the option tables behind every command's --help.\n\n"
		       "Exit status: 0 ok, 2 an unknown command or option.\n");
		return fflush(stdout) ? EXIT_FAIL : EXIT_OK;
	}
	if (!strcmp(argv[1], "--man")) {
		if (argc > 2)
			return help_usage_error("--man takes no argument, not '%s'", argv[2]);
		return print_man();
	}
	if (!strcmp(argv[1], "--completion")) {
		if (argc < 3 || strcmp(argv[2], "bash") || argc > 3)
			return help_usage_error("--completion takes the name of a shell: bash (not '%s')",
						argc > 2 ? argv[argc - 1] : "");
		return print_completion();
	}
	if (argc > 2)
		return help_usage_error("help takes one command, not '%s' too", argv[2]);
	c = find_command(argv[1]);
	if (!c) {
		fprintf(stderr, "coldstart: error: unknown command '%s'", argv[1]);
		if (nearest_command(argv[1]))
			fprintf(stderr, "; did you mean '%s'?", nearest_command(argv[1]));
		fprintf(stderr, "\nTry 'coldstart help --help'.\n");
		return EXIT_USAGE;
	}
	if (c->fn == cmd_help)
		return cmd_help(2, (char *[]){ argv[0], (char *)"--help", NULL });
	return command_help(c);
}

int main(int argc, char **argv)
{
	const struct command *c;

	/* Nothing may be opened before: it would take a closed standard descriptor's place. */
	if (launch_open_std_fds() < 0)
		return EXIT_FAIL;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("coldstart %s\n", COLDSTART_VERSION);
		return EXIT_OK;
	}
	c = find_command(argv[1]);
	if (c)
		return c->fn(argc - 1, argv + 1);
	if (nearest_command(argv[1]))
		fprintf(stderr, "coldstart: error: unknown command '%s'; did you mean '%s'?\n", argv[1],
			nearest_command(argv[1]));
	else
		fprintf(stderr, "coldstart: error: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
