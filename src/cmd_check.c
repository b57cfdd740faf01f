/*
 * `coldstart check`: the CI gate.  Judges a saved profile against
 * --budget and --forbid rules and exits 0 when every rule holds, 1 when not.
 */
#include <stdio.h>
#include <string.h>

#include "budget.h"
#include "builtin.h"
#include "profile.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: coldstart check PROFILE --budget total=300ms [--budget MODULE=50ms]\n"
		   "                       [--forbid MODULE] ... [-q]\n\n"
		   "Fails (exit 1) when the profile breaks a budget, for CI.  Times are medians\n"
		   "over the non-warm-up runs of the main process.\n\n"
		   "      --budget total=TIME   all imports, interpreter start-up included\n"
		   "      --budget target=TIME  imports after interpreter start-up\n"
		   "      --budget startup=TIME interpreter start-up imports only\n"
		   "      --budget MODULE=TIME  the module's cumulative import time\n"
		   "      --forbid MODULE       the module must not be imported by the main process\n"
		   "  -q, --quiet               print only the rules that fail\n"
		   "  -h, --help                this text\n\n"
		   "TIME: 300ms, 1.5s, 250us; a bare number is milliseconds.\n"
		   "Exit status: 0 every rule holds, 1 a rule failed or the profile is unreadable,\n"
		   "2 bad command line.  See docs/diff-check.md.\n");
}

int cmd_check(int argc, char **argv)
{
	struct budget b;
	struct profile p;
	struct buf err = BUF_INIT, explain = BUF_INIT;
	const char *input = NULL;
	int i, failed, quiet = 0, ret = EXIT_USAGE;

	profile_init(&p);
	budget_init(&b);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			ret = EXIT_OK;
			goto out;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = 1;
		} else if (!strcmp(a, "--budget") || !strcmp(a, "--forbid") || !strncmp(a, "--budget=", 9) ||
			   !strncmp(a, "--forbid=", 9)) {
			const char *eq = strchr(a, '=');
			struct buf flag = BUF_INIT;
			const char *val;
			int bad;

			if (eq) {
				buf_add(&flag, a, (size_t)(eq - a));
				val = eq + 1;
			} else if (i + 1 < argc) {
				buf_adds(&flag, a);
				val = argv[++i];
			} else {
				fprintf(stderr, "coldstart: error: %s needs a value\n", a);
				goto out;
			}
			if (!strcmp(flag.buf, "--forbid")) {
				bad = !*val || strchr(val, '=') || strchr(val, ' ');
				if (bad)
					buf_addf(&err, "--forbid '%s': expected a module name", val);
				else
					budget_forbid(&b, val);
			} else {
				bad = budget_add(&b, val, &err) < 0;
			}
			buf_release(&flag);
			if (bad) {
				fprintf(stderr, "coldstart: error: %s\n", err.buf);
				goto out;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "coldstart: error: unknown option '%s'\n", a);
			usage(stderr);
			goto out;
		} else if (!input) {
			input = a;
		} else {
			fprintf(stderr, "coldstart: error: unexpected argument '%s'\n", a);
			goto out;
		}
	}
	if (!input || !(b.nr + b.forbid.nr)) {
		fprintf(stderr, "coldstart: error: check needs a PROFILE and at least one --budget or --forbid\n");
		usage(stderr);
		goto out;
	}
	ret = EXIT_FAIL;
	if (profile_read_json(&p, input, &err) < 0) {
		fprintf(stderr, "coldstart: error: %s\n", err.buf);
		goto out;
	}
	failed = budget_check(&p, &b, &explain);
	if (failed < 0) {
		fprintf(stderr, "coldstart: error: %s", explain.buf);
		goto out;
	}
	if (quiet) {
		const char *line = explain.buf;

		while (*line) {
			const char *nl = strchr(line, '\n');
			size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);

			if (strstr(line, "FAIL") && strstr(line, "FAIL") < line + len)
				fwrite(line, 1, len, stdout);
			line += len;
		}
	} else {
		fputs(explain.buf, stdout);
	}
	printf("%s (%zu rule%s)\n", failed ? "check failed" : "check passed", b.nr + b.forbid.nr,
	       b.nr + b.forbid.nr == 1 ? "" : "s");
	ret = failed ? EXIT_FAIL : EXIT_OK;
out:
	budget_release(&b);
	profile_release(&p);
	buf_release(&err);
	buf_release(&explain);
	return ret;
}
