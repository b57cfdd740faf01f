/*
 * Where coldstart's Python side lives (bootstrap, tracer, fdk): beside the
 * binary in a source tree, or under share/ once installed.
 */
#include "datadir.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

const char *coldstart_datadir(void)
{
	static char *dir;
	static const char *const candidates[] = { "python", "../share/coldstart/python" };
	const char *env = getenv("COLDSTART_DATADIR");
	char exe[PATH_MAX];
	struct buf probe = BUF_INIT;
	ssize_t n;
	char *slash;
	size_t i;

	if (env && *env)
		return env;
	if (dir)
		return dir;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	/* In the source tree the binary sits beside python/; installed, in bin/. */
	for (i = 0; i < ARRAY_SIZE(candidates) && !dir; i++) {
		buf_reset(&probe);
		buf_addf(&probe, "%s/%s/coldstart/__init__.py", exe, candidates[i]);
		if (!access(probe.buf, R_OK)) {
			buf_reset(&probe);
			buf_addf(&probe, "%s/%s", exe, candidates[i]);
			dir = realpath(probe.buf, NULL);
		}
	}
	buf_release(&probe);
	return dir;
}
