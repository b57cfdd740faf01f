/*
 * The profile's JSON form (docs/profile-format.md), read: a streaming reader
 * (json_reader.h) that builds the model as the document goes by, so memory
 * follows the model, never a tree of the text.  Every number is checked
 * against the range its field can hold ("Limits"): a value out of range is an
 * error, so what the analysis adds up later cannot overflow by much, and
 * saturates where it could.  The writer is profile_json.c.  This file reads
 * the document, its runs, findings and warnings; a process, its imports and
 * its timeline are read in profile_read_proc.c; both go through the checked
 * reads of profile_reader.c.
 */
#include "model/profile.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json_reader.h"
#include "model/profile_read_proc.h"
#include "model/profile_reader.h"

#define NATIVE_MAX ((size_t)16 << 20)

static const struct field run_fields[] = {
	{ "exit_code", F_INT, offsetof(struct run, exit_code), INT_MIN, INT_MAX },
	{ "signal", F_INT, offsetof(struct run, term_signal), 0, INT_MAX },
	{ "warmup", F_BOOL, offsetof(struct run, warmup), 0, 0 },
	{ "baseline", F_BOOL, offsetof(struct run, baseline), 0, 0 },
	I64(run, wall_us, -1, MAX_US),
	I64(run, user_us, -1, MAX_US),
	I64(run, sys_us, -1, MAX_US),
	I64(run, maxrss_kb, -1, MAX_KB),
	I64(run, ready_us, -1, MAX_US),
	I64(run, first_response_us, -1, MAX_US),
	I64(run, ready_ns, -1, MAX_NS),
	I64(run, listening_us, -1, MAX_US),
	I64(run, launcher_us, -1, MAX_US),
};

static const struct field cg_fields[] = {
	I64(cg_figures, cpu_usage_us, -1, MAX_US),    I64(cg_figures, nr_periods, -1, MAX_COUNT),
	I64(cg_figures, nr_throttled, -1, MAX_COUNT), I64(cg_figures, throttled_us, -1, MAX_US),
	I64(cg_figures, memory_peak, -1, MAX_BYTES),  I64(cg_figures, oom_kills, -1, MAX_COUNT),
};

static const struct field cold_fields[] = {
	{ "partial", F_BOOL, offsetof(struct cold_figures, partial), 0, 0 },
	I64(cold_figures, files, 0, MAX_COUNT),
	I64(cold_figures, bytes, 0, MAX_BYTES),
	I64(cold_figures, failed, 0, MAX_COUNT),
	I64(cold_figures, checked_files, 0, MAX_COUNT),
	I64(cold_figures, module_bytes, 0, MAX_BYTES),
	I64(cold_figures, module_resident, 0, MAX_BYTES),
	I64(cold_figures, binary_bytes, 0, MAX_BYTES),
	I64(cold_figures, binary_resident, 0, MAX_BYTES),
	I64(cold_figures, mapped_files, 0, MAX_COUNT),
	I64(cold_figures, mapped_bytes, 0, MAX_BYTES),
	I64(cold_figures, mapped_resident, 0, MAX_BYTES),
	I64(cold_figures, unevicted, 0, MAX_COUNT),
};

static const struct field limits_fields[] = {
	{ "cpus", F_REAL, offsetof(struct limits, cpus), 0, 1000000 },
	I64(limits, memory, -1, MAX_BYTES),
	I64(limits, swap, -1, MAX_BYTES),
	{ "pids", F_LONG, offsetof(struct limits, pids), -1, INT32_MAX },
	{ "cpuset", F_STR, offsetof(struct limits, cpuset), 0, 0 },
	{ "preset", F_STR, offsetof(struct limits, preset), 0, 0 },
	{ "backend", F_STR, offsetof(struct limits, backend), 0, 0 },
};

static const struct field finding_fields[] = {
	{ "id", F_STR, offsetof(struct finding, id), 0, 0 },
	{ "severity", F_STR, offsetof(struct finding, severity), 0, 0 },
	{ "title", F_STR, offsetof(struct finding, title), 0, 0 },
	{ "evidence", F_STR, offsetof(struct finding, evidence), 0, 0 },
	{ "fix", F_STR, offsetof(struct finding, fix), 0, 0 },
	{ "module", F_STR, offsetof(struct finding, module), 0, 0 },
	I64(finding, cost_us, -1, MAX_US),
};

static const struct field profile_fields[] = {
	{ "tool_version", F_STR, offsetof(struct profile, tool_version), 0, 0 },
	{ "created", F_STR, offsetof(struct profile, created), 0, 0 },
	{ "command", F_STR, offsetof(struct profile, command), 0, 0 },
	{ "python", F_STR, offsetof(struct profile, python), 0, 0 },
	{ "python_version", F_STR, offsetof(struct profile, python_version), 0, 0 },
	{ "python_launcher", F_STR, offsetof(struct profile, python_launcher), 0, 0 },
	{ "python_executable", F_STR, offsetof(struct profile, python_executable), 0, 0 },
	{ "cwd", F_STR, offsetof(struct profile, cwd), 0, 0 },
};

static int read_cgroup(struct reader *rd, struct cg_figures *cg)
{
	enum jr_type t = jr_value(&rd->jr);
	int more, got;

	if (t != JR_OBJ)
		return jr_skip(&rd->jr);
	cg->has = true;
	cg->cpu_usage_us = cg->nr_periods = cg->nr_throttled = UNKNOWN;
	cg->throttled_us = cg->memory_peak = cg->oom_kills = UNKNOWN;
	while ((more = jr_obj_next(&rd->jr)) > 0) {
		got = READ_FIELD(rd, cg_fields, cg);
		if (got < 0 || (!got && (jr_value(&rd->jr) == JR_ERROR || jr_skip(&rd->jr) < 0)))
			return -1;
	}
	return more;
}

/* "cold": null for a warm run, else the eviction's figures ("took" is derived, not read). */
static int read_cold(struct reader *rd, struct cold_figures *c)
{
	int more, got;

	if (jr_value(&rd->jr) != JR_OBJ)
		return rd->jr.failed ? -1 : jr_skip(&rd->jr);
	c->asked = true;
	while ((more = jr_obj_next(&rd->jr)) > 0) {
		got = READ_FIELD(rd, cold_fields, c);
		if (got < 0 || (!got && (jr_value(&rd->jr) == JR_ERROR || jr_skip(&rd->jr) < 0)))
			return -1;
	}
	return more;
}

static int read_run(struct reader *rd, void *ctx, size_t i)
{
	struct run *r;
	bool has_procs = false;
	int more, got;

	if (rd_charge(rd, sizeof(*r)) < 0)
		return -1;
	r = profile_add_run(rd->p);
	rd->run = i;
	if (jr_value(&rd->jr) != JR_OBJ)
		return rd->jr.failed ? -1 : jr_fail(&rd->jr, "run %zu is not an object", i);
	while ((more = jr_obj_next(&rd->jr)) > 0) {
		const char *key = rd->jr.key.buf;

		got = READ_FIELD(rd, run_fields, r);
		if (got < 0)
			return -1;
		if (got)
			continue;
		if (!strcmp(key, "status")) {
			if (jr_value(&rd->jr) == JR_STR) {
				int st = run_status_from_name(rd->jr.str.buf);

				r->status = st >= 0 ? (enum run_status)st : RUN_NOT_RUN;
			}
			more = jr_skip(&rd->jr);
		} else if (!strcmp(key, "cgroup")) {
			more = read_cgroup(rd, &r->cg);
		} else if (!strcmp(key, "cold")) {
			more = read_cold(rd, &r->cold);
		} else if (!strcmp(key, "processes")) {
			has_procs = true;
			if (jr_value(&rd->jr) != JR_ARR)
				return rd->jr.failed ? -1 : jr_fail(&rd->jr, "run %zu has no 'processes' array", i);
			while ((more = jr_arr_next(&rd->jr)) > 0)
				if (read_proc(rd, r, r->nr_procs) < 0)
					return -1;
		} else {
			more = jr_value(&rd->jr) == JR_ERROR ? -1 : jr_skip(&rd->jr);
		}
		if (more < 0)
			return -1;
	}
	if (more < 0)
		return -1;
	if (!has_procs)
		return jr_fail(&rd->jr, "run %zu has no 'processes' array", i);
	rd->run = SIZE_MAX;
	return 0;
}

static int read_warning(struct reader *rd, void *ctx, size_t i)
{
	char *msg = NULL;
	int64_t line = 0;
	int more;

	if (jr_value(&rd->jr) != JR_OBJ)
		return jr_skip(&rd->jr);
	while ((more = jr_obj_next(&rd->jr)) > 0) {
		if (!strcmp(rd->jr.key.buf, "line"))
			more = rd_int(rd, "line", INT64_MIN, INT64_MAX, 0, &line);
		else if (!strcmp(rd->jr.key.buf, "msg"))
			more = rd_str(rd, &msg);
		else
			more = jr_value(&rd->jr) == JR_ERROR ? -1 : jr_skip(&rd->jr);
		if (more < 0)
			break;
	}
	if (more >= 0 && msg && rd_charge(rd, sizeof(struct pwarn)) == 0)
		profile_add_warning(rd->p, (long)line, "%s", msg);
	free(msg);
	return rd->jr.failed ? -1 : 0;
}

/* One of a finding's "pids". */
static int read_finding_pid(struct reader *rd, void *ctx, size_t i)
{
	struct finding *f = ctx;
	int64_t pid = -1;

	if (rd_int(rd, "pids", 0, INT32_MAX, -1, &pid) < 0 || rd_charge(rd, sizeof(*f->pids)) < 0)
		return -1;
	if (pid > 0) {
		f->pids = xrealloc(f->pids, st_mult(f->nr_pids + 1, sizeof(*f->pids)));
		f->pids[f->nr_pids++] = (long)pid;
	}
	return 0;
}

static int read_finding(struct reader *rd, void *ctx, size_t i)
{
	struct finding f = { 0 };
	int more;

	f.cost_us = UNKNOWN;
	if (jr_value(&rd->jr) != JR_OBJ)
		return jr_skip(&rd->jr);
	while ((more = jr_obj_next(&rd->jr)) > 0) {
		more = READ_FIELD(rd, finding_fields, &f);
		if (!more && !strcmp(rd->jr.key.buf, "pids"))
			more = rd_array(rd, read_finding_pid, &f) < 0 ? -1 : 1;
		if (!more)
			more = jr_value(&rd->jr) == JR_ERROR ? -1 : jr_skip(&rd->jr);
		if (more < 0)
			break;
	}
	if (!f.id)
		f.id = xstrdup("unknown");
	if (more < 0 || rd_charge(rd, sizeof(f)) < 0) {
		free(f.id);
		free(f.severity);
		free(f.title);
		free(f.evidence);
		free(f.fix);
		free(f.module);
		free(f.pids);
		return -1;
	}
	profile_add_finding(rd->p, &f);
	return 0;
}

static int read_target(struct reader *rd, void *ctx, size_t i)
{
	char *s = NULL;

	if (rd_str(rd, &s) < 0)
		return -1;
	if (s)
		strvec_push(&rd->p->target, s);
	free(s);
	return 0;
}

static int read_limits(struct reader *rd)
{
	int more, got;

	if (jr_value(&rd->jr) != JR_OBJ)
		return jr_skip(&rd->jr);
	while ((more = jr_obj_next(&rd->jr)) > 0) {
		got = READ_FIELD(rd, limits_fields, &rd->p->limits);
		if (got < 0 || (!got && (jr_value(&rd->jr) == JR_ERROR || jr_skip(&rd->jr) < 0)))
			return -1;
	}
	return more;
}

/* One member of the top-level object. */
static int read_member(struct reader *rd)
{
	const char *key = rd->jr.key.buf;
	int got = READ_FIELD(rd, profile_fields, rd->p);

	if (got)
		return got < 0 ? -1 : 0;
	if (!strcmp(key, "format")) {
		if (jr_value(&rd->jr) == JR_ERROR)
			return -1;
		rd->is_profile = rd->jr.type == JR_STR && !strcmp(rd->jr.str.buf, "coldstart-profile");
		if (!rd->is_profile)
			return jr_fail(&rd->jr, "not a coldstart profile (no \"format\": \"coldstart-profile\")");
		return 0;
	}
	if (!strcmp(key, "version")) {
		if (rd_int(rd, "version", INT64_MIN, INT64_MAX, 0, &rd->version) < 0)
			return -1;
		if (rd->version < 1 || rd->version > PROFILE_FORMAT_VERSION)
			return jr_fail(&rd->jr, "unsupported profile version %lld (this coldstart reads 1 to %d)",
				       (long long)rd->version, PROFILE_FORMAT_VERSION);
		return 0;
	}
	if (!strcmp(key, "target"))
		return rd_array(rd, read_target, NULL);
	if (!strcmp(key, "limits"))
		return read_limits(rd);
	if (!strcmp(key, "runs")) {
		rd->has_runs = true;
		if (jr_value(&rd->jr) != JR_ARR)
			return rd->jr.failed ? -1 : jr_fail(&rd->jr, "profile has no 'runs' array");
		while ((got = jr_arr_next(&rd->jr)) > 0)
			if (read_run(rd, NULL, rd->p->nr_runs) < 0)
				return -1;
		return got;
	}
	if (!strcmp(key, "warnings"))
		return rd_array(rd, read_warning, NULL);
	if (!strcmp(key, "findings"))
		return rd_array(rd, read_finding, NULL);
	if (!strcmp(key, "escaped_bytes"))
		return rd_int(rd, "escaped_bytes", 0, INT64_MAX, 0, &rd->escaped);
	if (!strcmp(key, "native")) {
		buf_reset(&rd->native);
		return jr_copy_value(&rd->jr, &rd->native, NATIVE_MAX, &rd->native_cut);
	}
	return jr_value(&rd->jr) == JR_ERROR ? -1 : jr_skip(&rd->jr);
}

/*
 * Version 2 lists each node before its parent, version 1 after it; either
 * way a parent index points one way only, so no cycle can be built, and
 * siblings are linked in the order they are listed.  Done once the whole
 * document is read: "version" may come after "runs".
 */
static int link_proc(struct reader *rd, struct proc *pr, size_t run, size_t proc, struct buf *err)
{
	size_t i, nr = pr->nr_nodes;

	for (i = 0; i < nr; i++) {
		int64_t parent = pr->nodes[i].parent;

		if (parent < -1 || (rd->version == 1 && parent >= (int64_t)i) ||
		    (rd->version != 1 && parent >= 0 && (parent <= (int64_t)i || parent >= (int64_t)nr))) {
			buf_addf(err, "node %zu has parent %lld, which does not %s it (run %zu, process %zu)", i,
				 (long long)parent, rd->version == 1 ? "precede" : "follow", run, proc);
			return -1;
		}
	}
	for (i = 0; i < nr; i++) {
		int32_t parent = pr->nodes[i].parent;

		if (parent >= 0)
			proc_link_child(pr, parent, (int32_t)i);
		else
			proc_link_root(pr, (int32_t)i);
	}
	return 0;
}

static int read_document(struct reader *rd, struct buf *err)
{
	struct profile *p = rd->p;
	size_t r, k;
	int more;

	if (jr_value(&rd->jr) != JR_OBJ) {
		if (!rd->jr.failed)
			jr_fail(&rd->jr, "not a coldstart profile (no \"format\": \"coldstart-profile\")");
		goto fail;
	}
	while ((more = jr_obj_next(&rd->jr)) > 0)
		if (read_member(rd) < 0)
			goto fail;
	if (more < 0 || jr_finish(&rd->jr) < 0)
		goto fail;
	if (!rd->is_profile) {
		buf_addf(err, "not a coldstart profile (no \"format\": \"coldstart-profile\")");
		return -1;
	}
	if (rd->version < 1) {
		buf_addf(err, "unsupported profile version 0 (this coldstart reads 1 to %d)", PROFILE_FORMAT_VERSION);
		return -1;
	}
	if (!rd->has_runs) {
		buf_addf(err, "profile has no 'runs' array");
		return -1;
	}
	for (r = 0; r < p->nr_runs; r++)
		for (k = 0; k < p->runs[r].nr_procs; k++)
			if (link_proc(rd, &p->runs[r].procs[k], r, k, err) < 0)
				return -1;
	if (rd->escaped > 0)
		profile_add_warning(p, 0, "%lld %s not UTF-8 (in paths, arguments or output) %s shown as \\xHH",
				    (long long)rd->escaped, rd->escaped == 1 ? "byte that is" : "bytes that are",
				    rd->escaped == 1 ? "is" : "are");
	if (rd->native_cut) {
		profile_add_warning(p, 0, "native extension facts not restored: more than %zu MiB", NATIVE_MAX >> 20);
	} else if (rd->native.len && rd->native.buf[0] == '{') {
		struct buf nerr = BUF_INIT;

		if (native_set_from_json(&p->native, rd->native.buf, rd->native.len, &nerr) < 0)
			profile_add_warning(p, 0, "native extension facts not restored: %s", nerr.buf);
		buf_release(&nerr);
	}
	return 0;
fail:
	buf_add(err, rd->jr.err.buf, rd->jr.err.len);
	if (rd->over_limit || (rd->zf && rd->zf->over_limit))
		buf_adds(err, " (COLDSTART_MAX_PROFILE_SIZE raises it)");
	return -1;
}

/* COLDSTART_MAX_PROFILE_SIZE, else PROFILE_SIZE_LIMIT. */
static int size_limit(uint64_t *limit, struct buf *err)
{
	const char *env = getenv("COLDSTART_MAX_PROFILE_SIZE");
	int64_t v;

	*limit = PROFILE_SIZE_LIMIT;
	if (!env || !*env)
		return 0;
	if (parse_size(env, &v) < 0 || v <= 0) {
		buf_addf(err, "COLDSTART_MAX_PROFILE_SIZE='%s' is not a size such as 4g", env);
		return -1;
	}
	*limit = (uint64_t)v;
	return 0;
}

static void reader_init(struct reader *rd, struct profile *p)
{
	memset(rd, 0, sizeof(*rd));
	rd->p = p;
	rd->run = rd->proc = rd->node = SIZE_MAX;
	buf_init(&rd->native, 0);
}

int profile_from_json(struct profile *p, const char *text, size_t len, struct buf *err)
{
	struct reader rd;
	int ret = -1;

	reader_init(&rd, p);
	jr_init_mem(&rd.jr, text, len);
	if (size_limit(&rd.limit, err) == 0)
		ret = read_document(&rd, err);
	jr_release(&rd.jr);
	buf_release(&rd.native);
	return ret;
}

int profile_read_json(struct profile *p, const char *path, struct buf *err)
{
	struct reader rd;
	struct zfile zf;
	struct buf inner = BUF_INIT;
	struct stat st;
	uint64_t limit;
	int ret = -1;

	if (size_limit(&limit, err) < 0)
		return -1;
	/*
	 * A named FIFO would block until something writes to it, and often
	 * nothing will: say so.  A pipe reached through a link (<(zcat x),
	 * /dev/stdin) and "-" are read as streams.
	 */
	if (strcmp(path, "-") && !lstat(path, &st) && S_ISFIFO(st.st_mode)) {
		buf_addf(err,
			 "cannot read '%s': a named pipe (FIFO), which blocks until something writes to it; give "
			 "a regular file, or - to read standard input (- < '%s')",
			 path, path);
		return -1;
	}
	if (zfile_open(&zf, path, limit, &inner) < 0) {
		buf_addf(err, "cannot read '%s': %s", path, inner.buf);
		buf_release(&inner);
		return -1;
	}
	reader_init(&rd, p);
	rd.limit = limit;
	rd.zf = &zf;
	jr_init(&rd.jr, zfile_read, &zf);
	if (read_document(&rd, &inner) == 0)
		ret = 0;
	else
		buf_addf(err, "cannot read '%s': %s", path, inner.buf);
	jr_release(&rd.jr);
	zfile_close(&zf);
	buf_release(&rd.native);
	buf_release(&inner);
	return ret;
}

int timeline_from_json(struct timeline *tl, const char *text, size_t len, struct buf *err)
{
	struct reader rd;
	int ret = -1;

	reader_init(&rd, NULL);
	jr_init_mem(&rd.jr, text, len);
	if (size_limit(&rd.limit, err) == 0) {
		if (read_timeline_object(&rd, tl) == 0 && jr_finish(&rd.jr) == 0)
			ret = 0;
		else
			buf_add(err, rd.jr.err.buf, rd.jr.err.len);
	}
	jr_release(&rd.jr);
	buf_release(&rd.native);
	return ret;
}
