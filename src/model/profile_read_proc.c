/*
 * The profile JSON reader's processes (profile_read.c reads the rest): a
 * process's members, its import nodes and their timing, its events and its
 * start-up timeline, each number checked against its range.
 */
#include "model/profile_read_proc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct field proc_fields[] = {
	{ "pid", F_LONG, offsetof(struct proc, pid), -1, INT32_MAX },
	{ "ppid", F_LONG, offsetof(struct proc, ppid), -1, INT32_MAX },
	{ "argv", F_STR, offsetof(struct proc, argv), 0, 0 },
	{ "role", F_STR, offsetof(struct proc, role), 0, 0 },
	{ "mixed", F_BOOL, offsetof(struct proc, mixed), 0, 0 },
	I64(proc, start_ns, -MAX_NS, MAX_NS),
	I64(proc, end_ns, -MAX_NS, MAX_NS),
	I64(proc, tracer_ns, -1, MAX_NS),
	I64(proc, startup_cpu_ns, -1, MAX_NS),
	I64(proc, cpu_ns, -1, MAX_NS),
};

/* [name, depth, parent, self_us, cum_us, flags, kind, ...]: the parent is checked once the version is known. */
static int read_node(struct reader *rd, void *ctx, size_t i)
{
	static const char *const keys[] = { NULL, "depth", "parent", "self_us", "cum_us", "flags" };
	static const int64_t lo[] = { 0, 0, -1, -MAX_US, -MAX_US, 0 };
	static const int64_t hi[] = { 0, INT32_MAX, INT32_MAX - 1, MAX_US, MAX_US, UINT32_MAX };
	static const int64_t dflt[] = { 0, 0, -1, UNKNOWN, UNKNOWN, 0 };
	struct proc *pr = ctx;
	int64_t v[ARRAY_SIZE(keys)];
	struct imp_node *n;
	uint32_t name = 0;
	int32_t idx;
	size_t k;
	int more, kind = KIND_APP;

	rd->node = i;
	if (rd_charge(rd, sizeof(struct imp_node)) < 0)
		return -1;
	if (jr_value(&rd->jr) != JR_ARR || jr_arr_next(&rd->jr) <= 0 || jr_value(&rd->jr) != JR_STR)
		return rd->jr.failed ? -1 : jr_fail(&rd->jr, "node %zu is not [name, depth, parent, ...]", i);
	if (rd_intern_str(rd, pr, &name) < 0)
		return -1;
	memcpy(v, dflt, sizeof(v));
	for (k = 1; (more = jr_arr_next(&rd->jr)) > 0; k++) {
		if (k < ARRAY_SIZE(keys)) {
			if (rd_int(rd, keys[k], lo[k], hi[k], dflt[k], &v[k]) < 0)
				return -1;
		} else if (k == 6 && jr_value(&rd->jr) == JR_STR) {
			int found = kind_from_name(rd->jr.str.buf);

			if (found >= 0)
				kind = found;
		} else if (rd->jr.failed || (k != 6 && jr_value(&rd->jr) == JR_ERROR) || jr_skip(&rd->jr) < 0) {
			return -1;
		}
	}
	if (more < 0)
		return -1;
	idx = proc_add_node(pr, "", 0, (uint32_t)v[1], v[3], v[4]);
	n = &pr->nodes[idx];
	n->name = name;
	n->parent = (int32_t)v[2]; /* checked and linked at the end of the document */
	n->flags = (uint32_t)v[5];
	n->kind = (uint8_t)kind;
	rd->node = SIZE_MAX;
	return 0;
}

/* Timing entries before they are known to match the nodes. */
struct timing_list {
	struct proc *pr;
	struct imp_timing *v;
	size_t nr, alloc;
};

static int read_timing(struct reader *rd, void *ctx, size_t i)
{
	static const char *const keys[] = { "start_ns", "end_ns",     "find_ns",      "load_ns",
					    "exec_ns",	"compile_ns", "rss_start_kb", "rss_end_kb" };
	struct timing_list *tl = ctx;
	struct imp_timing *tm;
	int64_t v[ARRAY_SIZE(keys)], cpu = UNKNOWN;
	size_t k;
	int more;

	if (rd_charge(rd, sizeof(*tm)) < 0)
		return -1;
	ALLOC_GROW(tl->v, tl->nr + 1, tl->alloc);
	tm = &tl->v[tl->nr++];
	for (k = 0; k < ARRAY_SIZE(v); k++)
		v[k] = UNKNOWN;
	tm->file = 0;
	rd->node = i;
	if (jr_value(&rd->jr) != JR_ARR)
		return jr_skip(&rd->jr);
	for (k = 0; (more = jr_arr_next(&rd->jr)) > 0; k++) {
		bool kb = k >= 6;

		if (k < ARRAY_SIZE(keys)) {
			if (rd_int(rd, keys[k], kb ? -1 : -MAX_NS, kb ? MAX_KB : MAX_NS, UNKNOWN, &v[k]) < 0)
				return -1;
		} else if (k == 9) {
			/* The importing thread's CPU time (trace format 2); older profiles stop at 9. */
			if (rd_int(rd, "cpu_ns", -1, MAX_NS, UNKNOWN, &cpu) < 0)
				return -1;
		} else if (jr_value(&rd->jr) == JR_STR && k == 8) {
			if (rd_intern_str(rd, tl->pr, &tm->file) < 0)
				return -1;
		} else if (jr_skip(&rd->jr) < 0) {
			return -1;
		}
	}
	tm->start_ns = v[0];
	tm->end_ns = v[1];
	tm->find_ns = v[2];
	tm->load_ns = v[3];
	tm->exec_ns = v[4];
	tm->compile_ns = v[5];
	tm->rss_start_kb = v[6];
	tm->rss_end_kb = v[7];
	tm->cpu_ns = cpu;
	rd->node = SIZE_MAX;
	return more;
}

/* [t_ns, name, detail, node]; the node is checked when the process ends. */
static int read_event(struct reader *rd, void *ctx, size_t i)
{
	struct proc *pr = ctx;
	struct proc_event *e;
	int64_t node = -1;
	size_t k;
	int more;

	if (rd_charge(rd, sizeof(*e)) < 0)
		return -1;
	if (jr_value(&rd->jr) != JR_ARR)
		return jr_skip(&rd->jr);
	ALLOC_GROW(pr->events, pr->nr_events + 1, pr->alloc_events);
	e = &pr->events[pr->nr_events++];
	e->t_ns = UNKNOWN;
	e->name = e->detail = 0;
	for (k = 0; (more = jr_arr_next(&rd->jr)) > 0; k++) {
		if (k == 0 || k == 3) {
			if (rd_int(rd, k ? "node" : "t_ns", k ? INT64_MIN : -MAX_NS, k ? INT64_MAX : MAX_NS,
				   k ? -1 : UNKNOWN, k ? &node : &e->t_ns) < 0)
				return -1;
		} else if (jr_value(&rd->jr) == JR_STR && k < 3) {
			if (rd_intern_str(rd, pr, k == 1 ? &e->name : &e->detail) < 0)
				return -1;
		} else if (jr_skip(&rd->jr) < 0) {
			return -1;
		}
	}
	e->node = node >= 0 && node < INT32_MAX ? (int32_t)node : -1;
	return more;
}

/*
 * A process's "timeline" (timeline.h).  Nodes come each after its parent;
 * a sample's node is checked once the object is read, as "samples" may come
 * first.  The samples' wall times (and CPU times) add up to at most
 * MAX_US, 31 years of thread time: so no sum the analysis makes of them can
 * overflow, and a file that claims more is damaged.
 */
struct tl_reading {
	struct timeline *tl;
	int64_t wall, cpu; /* sums over the samples so far */
};

static int tl_string(struct reader *rd, struct timeline *tl, uint32_t *off)
{
	struct buf *s = rd_pool_str(rd);

	if (!s)
		return -1;
	*off = timeline_intern(tl, s->buf, s->len);
	return 0;
}

/* [name, kind, parent, file, line] */
static int read_tl_node(struct reader *rd, void *ctx, size_t i)
{
	struct tl_reading *tr = ctx;
	struct timeline *tl = tr->tl;
	uint32_t name = 0, file = 0;
	int64_t parent = -2, line = 0;
	int kind = -1, more;
	size_t k;

	rd->item = "timeline node";
	rd->item_no = i;
	if (rd_charge(rd, sizeof(struct tl_node)) < 0)
		return -1;
	if (jr_value(&rd->jr) != JR_ARR)
		goto bad;
	for (k = 0; (more = jr_arr_next(&rd->jr)) > 0; k++) {
		if (k == 2 || k == 4) {
			if (rd_int(rd, k == 2 ? "parent" : "line", k == 2 ? -1 : INT32_MIN,
				   k == 2 ? (int64_t)i - 1 : INT32_MAX, k == 2 ? -2 : 0, k == 2 ? &parent : &line) < 0)
				return -1;
		} else if (jr_value(&rd->jr) == JR_STR && k < 4) {
			if (k == 1)
				kind = tl_kind_from_name(rd->jr.str.buf);
			else if (tl_string(rd, tl, k ? &file : &name) < 0)
				return -1;
		} else if (rd->jr.failed || jr_skip(&rd->jr) < 0) {
			return -1;
		}
	}
	if (more < 0)
		return -1;
	if (kind < 0 || parent == -2)
		goto bad;
	timeline_add_node(tl, (int32_t)parent, (enum tl_kind)kind, name, file, (int32_t)line);
	rd->item = NULL;
	return 0;
bad:
	if (rd->jr.failed)
		return -1;
	rd->item = NULL;
	return jr_fail(&rd->jr, "timeline node %zu is not [name, kind, parent < %zu, file, line]", i, i);
}

/* [t_us, wall_us, cpu_us, node, wait_us] */
static int read_tl_sample(struct reader *rd, void *ctx, size_t i)
{
	static const char *const keys[] = { "t_us", "wall_us", "cpu_us", "node", "wait_us" };
	static const int64_t lo[] = { -MAX_US, -MAX_US, -MAX_US, 0, 0 };
	static const int64_t hi[] = { MAX_US, MAX_US, MAX_US, INT32_MAX - 1, MAX_US };
	static const int64_t dflt[] = { 0, 0, UNKNOWN, -1, 0 };
	struct tl_reading *tr = ctx;
	struct timeline *tl = tr->tl;
	struct tl_sample *ts;
	int64_t v[ARRAY_SIZE(keys)];
	size_t k;
	int more;

	rd->item = "timeline sample";
	rd->item_no = i;
	if (rd_charge(rd, sizeof(*ts)) < 0)
		return -1;
	memcpy(v, dflt, sizeof(v));
	if (jr_value(&rd->jr) != JR_ARR)
		goto bad;
	for (k = 0; (more = jr_arr_next(&rd->jr)) > 0; k++) {
		if (k < ARRAY_SIZE(keys)) {
			if (rd_int(rd, keys[k], lo[k], hi[k], dflt[k], &v[k]) < 0)
				return -1;
		} else if (jr_value(&rd->jr) == JR_ERROR || jr_skip(&rd->jr) < 0) {
			return -1;
		}
	}
	if (more < 0)
		return -1;
	if (v[3] < 0)
		goto bad;
	tr->wall += i64_abs(v[1]);
	tr->cpu += v[2] > 0 ? v[2] : 0;
	if (tr->wall > MAX_US || tr->cpu > MAX_US)
		return jr_fail(&rd->jr, "timeline sample %zu: the samples add up to more than %lld us", i,
			       (long long)MAX_US);
	ALLOC_GROW(tl->samples, tl->nr_samples + 1, tl->alloc_samples);
	ts = &tl->samples[tl->nr_samples++];
	ts->t_us = v[0];
	ts->wall_us = v[1];
	ts->cpu_us = v[2];
	ts->node = (int32_t)v[3]; /* checked against the nodes at the end */
	ts->wait_us = v[4] <= ts->wall_us ? v[4] : 0;
	rd->item = NULL;
	return 0;
bad:
	if (rd->jr.failed)
		return -1;
	rd->item = NULL;
	return jr_fail(&rd->jr, "timeline sample %zu is not [t_us, wall_us, cpu_us, node, ...]", i);
}

static int read_tl_end(struct reader *rd, struct timeline *tl)
{
	enum jr_type t = jr_value(&rd->jr);

	if (t == JR_STR) {
		int e = tl_end_from_name(rd->jr.str.buf);

		if (e >= 0)
			tl->end = (enum tl_end)e;
	}
	return t == JR_ERROR ? -1 : jr_skip(&rd->jr);
}

int read_timeline_object(struct reader *rd, struct timeline *tl)
{
	static const struct field tl_fields[] = {
		I64(timeline, origin_ns, -MAX_NS, MAX_NS),
		I64(timeline, start_us, -MAX_US, MAX_US),
		I64(timeline, end_us, -MAX_US, MAX_US),
		I64(timeline, interval_us, -1, MAX_US),
	};
	struct tl_reading tr = { .tl = tl };
	bool has_nodes = false, has_samples = false;
	int64_t count;
	size_t i;
	int more, got;

	tl->origin_ns = tl->start_us = tl->end_us = tl->interval_us = UNKNOWN;
	tl->end = TL_END_LAST_SAMPLE;
	if (jr_value(&rd->jr) != JR_OBJ)
		return rd->jr.failed ? -1 : jr_fail(&rd->jr, "'timeline' is not an object");
	while ((more = jr_obj_next(&rd->jr)) > 0) {
		const char *key = rd->jr.key.buf;

		got = READ_FIELD(rd, tl_fields, tl);
		if (got < 0)
			return -1;
		if (got)
			continue;
		if (!strcmp(key, "dropped") || !strcmp(key, "faults")) {
			count = 0;
			more = rd_int(rd, key, 0, MAX_COUNT, 0, &count);
			*(key[0] == 'd' ? &tl->dropped : &tl->faults) = (uint64_t)count;
		} else if (!strcmp(key, "end")) {
			more = read_tl_end(rd, tl);
		} else if (!strcmp(key, "nodes")) {
			has_nodes = true;
			more = rd_array(rd, read_tl_node, &tr);
		} else if (!strcmp(key, "samples")) {
			has_samples = true;
			more = rd_array(rd, read_tl_sample, &tr);
		} else {
			more = jr_value(&rd->jr) == JR_ERROR ? -1 : jr_skip(&rd->jr);
		}
		if (more < 0)
			return -1;
	}
	if (more < 0)
		return -1;
	if (!has_nodes || !has_samples)
		return jr_fail(&rd->jr, "a timeline needs 'nodes' and 'samples' arrays");
	for (i = 0; i < tl->nr_samples; i++)
		if ((size_t)tl->samples[i].node >= tl->nr_nodes)
			return jr_fail(&rd->jr, "timeline sample %zu: node %d of %zu", i, tl->samples[i].node,
				       tl->nr_nodes);
	timeline_sum(tl);
	return 0;
}

static int read_timeline(struct reader *rd, struct proc *pr)
{
	if (rd_charge(rd, sizeof(*pr->timeline)) < 0)
		return -1;
	if (pr->timeline)
		timeline_free(pr->timeline);
	pr->timeline = xmalloc(sizeof(*pr->timeline));
	timeline_init(pr->timeline);
	return read_timeline_object(rd, pr->timeline);
}

int read_proc(struct reader *rd, void *ctx, size_t i)
{
	struct run *r = ctx;
	struct proc *pr;
	struct timing_list tl = { 0 };
	bool timed = false, has_nodes = false;
	int more, ret = -1;
	size_t k;

	if (rd_charge(rd, sizeof(*pr)) < 0)
		return -1;
	pr = run_add_proc(r);
	rd->proc = i;
	tl.pr = pr;
	if (jr_value(&rd->jr) != JR_OBJ) {
		if (!rd->jr.failed)
			jr_fail(&rd->jr, "process %zu is not an object", i);
		return -1;
	}
	while ((more = jr_obj_next(&rd->jr)) > 0) {
		const char *key = rd->jr.key.buf;
		int got = READ_FIELD(rd, proc_fields, pr);

		if (got < 0)
			goto out;
		if (got)
			continue;
		if (!strcmp(key, "nodes")) {
			has_nodes = true;
			if (jr_value(&rd->jr) != JR_ARR) {
				if (!rd->jr.failed)
					jr_fail(&rd->jr, "run %zu, process %zu: 'nodes' is not an array", rd->run, i);
				goto out;
			}
			for (k = pr->nr_nodes; (more = jr_arr_next(&rd->jr)) > 0; k++)
				if (read_node(rd, pr, k) < 0)
					goto out;
			if (more < 0)
				goto out;
			pr->nr_linked = 0;
			continue;
		}
		if (!strcmp(key, "origin")) {
			enum jr_type t = jr_value(&rd->jr);

			/* A name this version does not know is an origin it cannot tell. */
			if (t == JR_STR) {
				int o = proc_origin_from_name(rd->jr.str.buf);

				pr->origin = o > 0 ? (enum proc_origin)o : ORIGIN_UNKNOWN;
			}
			more = t == JR_ERROR ? -1 : jr_skip(&rd->jr);
		} else if (!strcmp(key, "timing")) {
			timed = true;
			more = rd_array(rd, read_timing, &tl);
		} else if (!strcmp(key, "events")) {
			more = rd_array(rd, read_event, pr);
		} else if (!strcmp(key, "timeline")) {
			more = read_timeline(rd, pr);
		} else {
			more = jr_value(&rd->jr) == JR_ERROR ? -1 : jr_skip(&rd->jr);
		}
		if (more < 0)
			goto out;
	}
	if (more < 0)
		goto out;
	if (!has_nodes) {
		jr_fail(&rd->jr, "run %zu, process %zu has no 'nodes' array", rd->run, i);
		goto out;
	}
	if (timed) {
		if (tl.nr != pr->nr_nodes) {
			jr_fail(&rd->jr, "run %zu, process %zu: 'timing' has %zu entries for %zu nodes", rd->run, i,
				tl.nr, pr->nr_nodes);
			goto out;
		}
		proc_ensure_timing(pr);
		if (tl.nr)
			memcpy(pr->timing, tl.v, tl.nr * sizeof(*tl.v));
	}
	for (k = 0; k < pr->nr_events; k++)
		if (pr->events[k].node >= (int32_t)pr->nr_nodes)
			pr->events[k].node = -1;
	ret = 0;
out:
	free(tl.v);
	rd->proc = SIZE_MAX;
	return ret;
}
