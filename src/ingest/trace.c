/*
 * The tracer session of one run: the traced child's environment, its stderr
 * while it runs, and the trace files after it (trace.h).
 */
#include "ingest/trace.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datadir.h"
#include "sys/leftover.h"
#include "ingest/trace_build.h"
#include "ingest/trace_stream.h"
#include "sys/launch.h"

static void write_note(const char *dir, const char *name, const char *text)
{
	struct buf path = BUF_INIT;
	FILE *f;

	buf_addf(&path, "%s/%s", dir, name);
	f = fopen(path.buf, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	buf_release(&path);
}

static bool keep_trace(void)
{
	const char *keep = getenv("COLDSTART_KEEP_TRACE");

	return keep && *keep && strcmp(keep, "0");
}

int trace_prepare(struct trace_session *ts, const char *python, struct strvec *env, struct buf *err)
{
	const char *datadir = coldstart_datadir(), *old;
	struct buf path = BUF_INIT, berr = BUF_INIT, pp = BUF_INIT, note = BUF_INIT;
	struct private_dir pd;
	char *so = NULL, *boot = NULL, *slash;
	int ret = -1;

	memset(ts, 0, sizeof(*ts));
	ts->lock_fd = -1;
	if (!datadir) {
		buf_addf(err, "cannot find coldstart's python directory (set COLDSTART_DATADIR)");
		goto out;
	}
	buf_addf(&path, "%s/coldstart/_boot/sitecustomize.py", datadir);
	if (access(path.buf, R_OK) < 0) {
		buf_addf(err, "cannot read '%s': %s", path.buf, strerror(errno));
		goto out;
	}
	buf_reset(&path);
	if (private_dir_create(&pd, keep_trace() ? "trace-kept" : "trace", err) < 0)
		goto out;
	ts->dir = pd.path;
	ts->lock_fd = pd.lock_fd;
	buf_addf(&path, "%s/coldstart/_boot", datadir);
	ts->boot_dir = buf_detach(&path, NULL);

	if (python && trace_build_ensure(python, datadir, ts->dir, &so, &boot, &note, &berr) < 0)
		write_note(ts->dir, "fallback.txt", berr.buf);
	if (note.len)
		write_note(ts->dir, "cache.txt", note.buf);
	/* The cached copy with its bytecode, else the source bootstrap. */
	buf_addf(&pp, "%s", boot ? boot : ts->boot_dir);
	old = strvec_getenv(env, "PYTHONPATH");
	if (old && *old)
		buf_addf(&pp, ":%s", old);
	strvec_setenv(env, "PYTHONPATH", pp.buf);
	strvec_setenv(env, "COLDSTART_TRACE_DIR", ts->dir);
	/* Filled by launch in the child: the target's process counts from its exec (launch.h). */
	strvec_setenv(env, LAUNCH_EXEC_ENV, LAUNCH_EXEC_PLACEHOLDER + sizeof(LAUNCH_EXEC_ENV));
	/* Where the bootstrap finds the rest of coldstart when it runs from the cache. */
	buf_reset(&path);
	buf_addf(&path, "%s/coldstart", datadir);
	strvec_setenv(env, "COLDSTART_PYDIR", path.buf);
	if (so) {
		slash = strrchr(so, '/');
		if (slash)
			*slash = '\0';
		strvec_setenv(env, "COLDSTART_TRACER_PATH", so);
		strvec_setenv(env, "COLDSTART_TRACER", "");
	} else if (python) {
		strvec_setenv(env, "COLDSTART_TRACER", "py");
	}
	ret = 0;
out:
	free(so);
	free(boot);
	buf_release(&path);
	buf_release(&berr);
	buf_release(&note);
	buf_release(&pp);
	return ret;
}

void trace_feed(struct trace_session *ts, const char *data, size_t len, struct buf *passthrough)
{
	if (!ts->stream)
		ts->stream = trace_stream_new(ts->dir);
	trace_stream_feed(ts->stream, data, len, passthrough);
}

void trace_feed_end(struct trace_session *ts, struct buf *passthrough)
{
	if (!ts->stream)
		ts->stream = trace_stream_new(ts->dir);
	trace_stream_end(ts->stream, passthrough);
}

size_t trace_nr_rows(const struct trace_session *ts)
{
	return ts->stream ? trace_stream_nr_rows(ts->stream) : 0;
}

int trace_collect(struct trace_session *ts, struct profile *p, struct run *run, struct buf *err)
{
	struct buf path = BUF_INIT, note = BUF_INIT;
	DIR *d;
	struct dirent *de;
	size_t nr = 0;

	if (!ts->dir) {
		buf_addf(err, "no trace session");
		return -1;
	}
	d = opendir(ts->dir);
	if (!d) {
		buf_addf(err, "cannot open '%s': %s", ts->dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)))
		if (ends_with(de->d_name, ".trace"))
			nr++;
	closedir(d);
	buf_addf(&path, "%s/fallback.txt", ts->dir);
	if (!buf_read_file(&note, path.buf) && note.len)
		profile_add_warning(p, 0, "the C tracer is unavailable, the pure-Python tracer was used: %s", note.buf);
	buf_reset(&path);
	buf_reset(&note);
	buf_addf(&path, "%s/cache.txt", ts->dir);
	if (!buf_read_file(&note, path.buf) && note.len)
		profile_add_warning(p, 0, "tracer build cache: %s", note.buf);
	if (!nr)
		profile_add_warning(p, 0, "no process wrote a trace (not Python 3.7+, or run with -I, -E or -S)");
	if (!ts->stream) {
		struct buf none = BUF_INIT;

		trace_feed_end(ts, &none);
		buf_release(&none);
	}
	trace_stream_collect(ts->stream, p, run);
	if (keep_trace())
		profile_add_warning(p, 0, "trace files kept in '%s' (COLDSTART_KEEP_TRACE)", ts->dir);
	buf_release(&path);
	buf_release(&note);
	return 0;
}

void trace_session_release(struct trace_session *ts)
{
	DIR *d;
	struct dirent *de;
	struct buf path = BUF_INIT;

	if (ts->dir && !keep_trace()) {
		d = opendir(ts->dir);
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			buf_reset(&path);
			buf_addf(&path, "%s/%s", ts->dir, de->d_name);
			unlink(path.buf);
		}
		if (d)
			closedir(d);
		rmdir(ts->dir);
	}
	trace_stream_free(ts->stream);
	ts->stream = NULL;
	/* Only a prepared session has a lock: a zeroed one must not close fd 0. */
	if (ts->dir && ts->lock_fd >= 0)
		close(ts->lock_fd);
	ts->lock_fd = -1;
	free(ts->dir);
	free(ts->boot_dir);
	ts->dir = ts->boot_dir = NULL;
	buf_release(&path);
}
