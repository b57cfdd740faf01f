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

/* Library placeholders, replaced by the real modules as they land. */
#include "profile.h"
#include "trace.h"

void findings_run(struct profile *p);
__attribute__((weak)) void findings_run(struct profile *p)
{
	(void)p;
}

__attribute__((weak)) int trace_prepare(struct trace_session *ts, const char *python, struct strvec *env,
					struct buf *err)
{
	buf_addf(err, "the tracer is not part of this build");
	return -1;
}

__attribute__((weak)) int trace_collect(struct trace_session *ts, struct profile *p, struct run *run,
					struct buf *err)
{
	return 0;
}

__attribute__((weak)) void trace_session_release(struct trace_session *ts)
{
}
