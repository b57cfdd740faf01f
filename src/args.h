/*
 * The command-line parser every command uses: options that point at the
 * value they set (git's parse-options: OPT_BOOL(&flag), OPT_STRING(&s)),
 * tables that include other tables, "--name value", "--name=value", short
 * aliases; and a command's --help text and usage errors, written once.
 * Parsing stops at the first argument that is not an option (or at "--"),
 * so a target's own arguments are never taken for coldstart's.
 */
#ifndef COLDSTART_ARGS_H
#define COLDSTART_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "util.h"

/* A callback's answer for a value that is well-formed but unusable (see struct opt). */
#define ARGS_FAILED (-2)

enum opt_type {
	OPT_T_END,
	OPT_T_BOOL, /* bool *: set to true */
	OPT_T_STRING, /* const char **: the argument, borrowed from argv */
	OPT_T_STRINGS, /* struct strvec *: each argument appended (repeatable) */
	OPT_T_INT, /* int *: a whole number from min to max */
	OPT_T_DURATION, /* int64_t *: microseconds, from "300ms", "1.5s", "250us", "20" (ms) */
	OPT_T_SECONDS, /* int64_t *: microseconds, from a positive number of seconds up to max */
	OPT_T_CALLBACK, /* cb(opt, argument, err); without argh a flag: cb(opt, NULL, err) */
	OPT_T_INCLUDE, /* the rows of another table, in place */
	OPT_T_HELP, /* a line of --help only: the parser never matches it */
};

struct opt {
	enum opt_type type;
	const char *long_name; /* without "--" */
	char short_name; /* 0 for none */
	void *value; /* what the option sets; its type follows from type */
	const char *argh; /* the argument's name in --help, e.g. "PATH"; NULL: no argument */
	const char *help; /* NULL: the row is left out of --help */
	int64_t min, max; /* OPT_T_INT bounds; OPT_T_SECONDS: max seconds */
	/*
	 * OPT_T_CALLBACK: 0, or -1 with a message in err (a default one if err
	 * stays empty), or ARGS_FAILED when the value is well-formed but cannot
	 * be used (args_parse then returns -2: not a usage error).
	 */
	int (*cb)(const struct opt *opt, const char *arg, struct buf *err);
	const void *data; /* for cb, e.g. an exporter name */
	const struct opt *include; /* OPT_T_INCLUDE */
};

/*
 * The rows.  The value pointer's type is checked at compile time: passing
 * an int * to OPT_BOOL is an error (a pointer mismatch in ?:).
 */
/* clang-format off */
#define OPT_TYPED_(type, v) (1 ? (v) : (type *)NULL)
#define OPT_END() { .type = OPT_T_END }
#define OPT_BOOL(l, s, v, h) \
	{ .type = OPT_T_BOOL, .long_name = (l), .short_name = (s), .value = OPT_TYPED_(bool, v), .help = (h) }
#define OPT_STRING(l, s, v, a, h) \
	{ .type = OPT_T_STRING, .long_name = (l), .short_name = (s), .value = OPT_TYPED_(const char *, v), \
	  .argh = (a), .help = (h) }
#define OPT_STRINGS(l, s, v, a, h) \
	{ .type = OPT_T_STRINGS, .long_name = (l), .short_name = (s), .value = OPT_TYPED_(struct strvec, v), \
	  .argh = (a), .help = (h) }
#define OPT_INT(l, s, v, lo, hi, a, h) \
	{ .type = OPT_T_INT, .long_name = (l), .short_name = (s), .value = OPT_TYPED_(int, v), .min = (lo), \
	  .max = (hi), .argh = (a), .help = (h) }
#define OPT_DURATION(l, s, v, a, h) \
	{ .type = OPT_T_DURATION, .long_name = (l), .short_name = (s), .value = OPT_TYPED_(int64_t, v), \
	  .argh = (a), .help = (h) }
#define OPT_SECONDS(l, s, v, max_seconds, h) \
	{ .type = OPT_T_SECONDS, .long_name = (l), .short_name = (s), .value = OPT_TYPED_(int64_t, v), \
	  .max = (max_seconds), .argh = "SECONDS", .help = (h) }
#define OPT_CALLBACK(l, s, v, fn, a, h) \
	{ .type = OPT_T_CALLBACK, .long_name = (l), .short_name = (s), .value = (v), .cb = (fn), .argh = (a), \
	  .help = (h) }
#define OPT_CALLBACK_DATA(l, s, v, fn, d, a, h) \
	{ .type = OPT_T_CALLBACK, .long_name = (l), .short_name = (s), .value = (v), .cb = (fn), .data = (d), \
	  .argh = (a), .help = (h) }
#define OPT_INCLUDE(table) { .type = OPT_T_INCLUDE, .include = (table) }
#define OPT_HELP(l, s, a, h) \
	{ .type = OPT_T_HELP, .long_name = (l), .short_name = (s), .argh = (a), .help = (h) }
/* clang-format on */

/*
 * Parses options from argv[*i] on, advancing *i past them.  Returns 0 when a
 * non-option (or "--", left in place) is reached or argv ends, 1 when
 * --help (-h) was given, -1 on a usage error with a message in err, -2
 * when a callback said ARGS_FAILED (message in err).
 * Arguments listed in stop_at (e.g. "-m", "-c") also end option parsing.
 * Never prints.
 */
int args_parse(const struct opt *opts, int argc, char **argv, int *i, const char *const *stop_at, struct buf *err);
/*
 * After args_parse stopped at "-c CODE" (argv[*i]): parses the options that
 * follow the code too (a user writes `-c 'import x' --json`); the code's own
 * arguments come after "--" or the first argument that is no option.  The
 * parsed options' slots are then taken by "-c" and the code, so the target
 * starts at *i.  Does nothing (returns 0) unless argv[*i] is "-c" with a
 * code; same returns as args_parse.
 */
int args_parse_after_code(const struct opt *opts, int argc, char **argv, int *i, struct buf *err);
/*
 * Parses options anywhere among argv[1..]: non-options (and everything after
 * "--") are collected in positional.  Same returns as args_parse.
 */
int args_parse_all(const struct opt *opts, int argc, char **argv, struct strvec *positional, struct buf *err);
/* Help text is laid out for this many columns (tests hold every command to it). */
#define HELP_WIDTH 80

/*
 * Writes "  --name VALUE   help" lines for every row with a help text, the
 * help wrapped within HELP_WIDTH columns under its own column.
 */
void args_help(const struct opt *opts, struct buf *out);
/*
 * Appends text with every line longer than width broken at spaces; a
 * broken line goes on under its own text column (after the first run of
 * two spaces, as in "  svg        interactive ..."), else two columns in.
 */
void text_wrap(const char *text, size_t width, struct buf *out);

/* A command's --help around its option table. */
struct usage {
	const char *command; /* "profile": for "Try 'coldstart profile --help'." */
	const char *synopsis; /* the usage lines and what the command does, ending in a blank line */
	const char *footer; /* after the options: exit status, documents; may be NULL */
	void (*more)(FILE *f); /* prints what follows the footer when it is not fixed text; may be NULL */
};

/*
 * What usage_stop prints for --help, and where.  A command's help is
 * written once, as its usage and option table; the generators (`coldstart
 * help --man`, `--completion bash`) set this and call the command with
 * --help to have the same table written as a man page section, or as one
 * line per option ("--long<TAB>-s<TAB>ARG", "-" for none).  out NULL: stdout.
 */
enum help_format { HELP_TEXT, HELP_MAN, HELP_OPTIONS };
struct help_request {
	enum help_format format;
	FILE *out;
};
extern struct help_request args_help_request;

/* Prints the synopsis, "options:", the table's help and the footer on f. */
void usage_show(const struct usage *u, const struct opt *opts, FILE *f);
/* The same in format (see struct help_request). */
void usage_render(const struct usage *u, const struct opt *opts, enum help_format format, FILE *f);
/* Appends text as roff: escaped, "usage:" lines and indented lines kept as they are, blank lines as .PP. */
void roff_text(const char *text, struct buf *out);
/* Appends s with roff's special characters escaped (backslash, a leading dot, hyphens). */
void roff_escape(const char *s, size_t len, struct buf *out);
/*
 * Prints "coldstart: error: MESSAGE" and "Try 'coldstart COMMAND --help'."
 * on stderr.  Returns EXIT_USAGE, for `return usage_error(...)`.
 */
int usage_error(const struct usage *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * What a command does when args_parse returned rc != 0: the help (as
 * args_help_request says) and EXIT_OK for 1, usage_error(msg) and
 * EXIT_USAGE for -1, and for -2 (a callback's ARGS_FAILED: the value is
 * well-formed but unusable, such as an output path in a missing directory)
 * the message alone and EXIT_FAIL.
 */
int usage_stop(const struct usage *u, const struct opt *opts, int rc, const char *msg);
/*
 * args_parse_all for a command of one argument (what: "profile"): returns
 * -1 with it in positional->v[0], else the exit status after the help or
 * the usage error ("no profile given", "give exactly one profile").
 */
int usage_parse_one(const struct usage *u, const struct opt *opts, int argc, char **argv, const char *what,
		    struct strvec *positional, struct buf *err);

#endif
