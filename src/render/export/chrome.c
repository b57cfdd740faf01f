/*
 * Chrome trace events ("ph":"X") for Perfetto and chrome://tracing: one
 * track (pid = tid) per process, named by metadata events.  Perfetto rejects
 * overlapping slices on one thread, so the shared layout guarantees that a
 * child lies inside its parent and siblings never overlap.  A process with
 * a timeline (--timeline) has a track per sampled thread beside its imports.
 */
#include "render/export/formats.h"
#include "render/export/frames.h"

#include <stdlib.h>
#include <string.h>

static void add_flags(struct buf *out, uint32_t flags)
{
	static const char *const names[] = {
		"cached", "failed",   "startup", "trace_only", "inconsistent",
		"open",	  "compiled", "native",	 "negative",   "gc",
	};
	size_t i;
	bool first = true;

	buf_addch(out, '[');
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (!(flags & (1u << i)))
			continue;
		buf_addf(out, "%s\"%s\"", first ? "" : ",", names[i]);
		first = false;
	}
	buf_addch(out, ']');
}

static void trace_proc(const struct proc *pr, size_t idx, long pid, int64_t offset, struct buf *out)
{
	int32_t *order;
	int64_t *start, *end;
	struct buf label = BUF_INIT;
	size_t n, k;

	export_proc_label(pr, idx, &label);
	buf_addf(out, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%ld,\"tid\":%ld,\"args\":{\"name\":",
		 idx ? ",\n" : "", pid, pid);
	export_add_json(out, label.buf);
	buf_addf(out,
		 "}},\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%ld,\"tid\":%ld,"
		 "\"args\":{\"name\":\"imports\"}}",
		 pid, pid);
	buf_release(&label);
	if (!pr->nr_nodes)
		return;
	order = xmalloc(st_mult(pr->nr_nodes, sizeof(*order)));
	start = xmalloc(st_mult(pr->nr_nodes, sizeof(*start)));
	end = xmalloc(st_mult(pr->nr_nodes, sizeof(*end)));
	export_layout(pr, export_has_timing(pr), start, end);
	n = export_preorder(pr, order, NULL);
	for (k = 0; k < n; k++) {
		int32_t v = order[k];
		const struct imp_node *nd = &pr->nodes[v];

		buf_adds(out, ",\n{\"name\":");
		export_add_json(out, node_name(pr, v));
		buf_addf(out, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", kind_name((enum node_kind)nd->kind));
		export_add_us(out, start[v] + offset);
		buf_adds(out, ",\"dur\":");
		export_add_us(out, end[v] - start[v]);
		buf_addf(out, ",\"pid\":%ld,\"tid\":%ld,\"args\":{\"self_us\":", pid, pid);
		buf_add_i64(out, nd->self_us);
		buf_adds(out, ",\"cum_us\":");
		buf_add_i64(out, nd->cum_us);
		buf_adds(out, ",\"flags\":");
		add_flags(out, nd->flags);
		buf_adds(out, "}}");
	}
	free(order);
	free(start);
	free(end);
}

static void span(struct buf *out, const struct timeline *tl, int32_t v, int64_t from_us, int64_t to_us, long pid,
		 long tid, int64_t offset)
{
	const struct tl_node *n = &tl->nodes[v];

	buf_adds(out, ",\n{\"name\":");
	{
		struct buf name = BUF_INIT;

		if (n->kind == TL_IMPORT)
			buf_adds(&name, "import ");
		buf_adds(&name, tl_str(tl, n->name));
		export_add_json(out, name.buf);
		buf_release(&name);
	}
	buf_addf(out, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", tl_kind_name((enum tl_kind)n->kind));
	export_add_us(out, from_us * 1000 + offset);
	buf_adds(out, ",\"dur\":");
	export_add_us(out, (to_us - from_us) * 1000);
	buf_addf(out, ",\"pid\":%ld,\"tid\":%ld", pid, tid);
	if (n->file)
		buf_addf(out, ",\"args\":{\"file\":");
	if (n->file) {
		export_add_json(out, tl_str(tl, n->file));
		buf_addf(out, ",\"line\":%d}", (int)n->line);
	}
	buf_addch(out, '}');
}

/*
 * The timeline of a process as one track per thread (tid = the thread's
 * number): a span for each stretch of consecutive samples that share a
 * frame, so the spans of one thread nest like its stack did.  offset (ns)
 * puts the timeline's origin on the shared axis.
 */
static void trace_timeline(const struct timeline *tl, long pid, int64_t offset, struct buf *out)
{
	size_t n = tl->nr_nodes ? tl->nr_nodes : 1, i, t;
	int32_t *open = xmalloc(st_mult(n, sizeof(*open))), *path = xmalloc(st_mult(n, sizeof(*path)));
	int64_t *since = xmalloc(st_mult(n, sizeof(*since)));

	for (t = 0; t < tl->nr_nodes; t++) {
		size_t nopen = 0;
		int64_t last = 0;
		long tid;

		if (tl->nodes[t].kind != TL_THREAD || !tl->nodes[t].cum_us)
			continue;
		tid = !strcmp(tl_str(tl, tl->nodes[t].name), "main thread") ? 1 : (long)t + 2;
		buf_addf(out,
			 ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%ld,\"tid\":%ld,\"args\":{\"name\":", pid,
			 tid);
		{
			struct buf name = BUF_INIT;

			buf_addf(&name, "%s (sampled)", tl_str(tl, tl->nodes[t].name));
			export_add_json(out, name.buf);
			buf_release(&name);
		}
		buf_adds(out, "}}");
		for (i = 0; i < tl->nr_samples; i++) {
			const struct tl_sample *sm = &tl->samples[i];
			int64_t from = sm->t_us - sm->wall_us;
			size_t depth = 0, k;
			int32_t v;

			if (sm->wall_us <= 0)
				continue;
			for (v = sm->node; v >= 0 && tl->nodes[v].parent >= 0; v = tl->nodes[v].parent)
				path[depth++] = v;
			if (v != (int32_t)t)
				continue;
			if (from < last)
				from = last;
			/* The common prefix of the open spans and this sample's stack stays open. */
			for (k = 0; k < nopen && k < depth && open[k] == path[depth - 1 - k]; k++)
				;
			while (nopen > k) {
				nopen--;
				span(out, tl, open[nopen], since[nopen], from, pid, tid, offset);
			}
			for (; k < depth; k++) {
				open[nopen] = path[depth - 1 - k];
				since[nopen++] = from;
			}
			last = sm->t_us > from ? sm->t_us : from;
		}
		while (nopen) {
			nopen--;
			span(out, tl, open[nopen], since[nopen], last, pid, tid, offset);
		}
	}
	free(open);
	free(path);
	free(since);
}

int export_chrome(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err)
{
	const struct run *r = export_pick_run(p, o, err);
	int64_t base = INT64_MAX;
	bool aligned = true;
	size_t i;

	if (!r)
		return -1;
	/* Processes share a time axis only when every one has a start time. */
	for (i = 0; i < r->nr_procs; i++) {
		if (r->procs[i].start_ns == UNKNOWN || !export_has_timing(&r->procs[i]))
			aligned = false;
		else if (r->procs[i].start_ns < base)
			base = r->procs[i].start_ns;
	}
	buf_adds(out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"tool\":\"coldstart " COLDSTART_VERSION
		      "\"},\"traceEvents\":[\n");
	for (i = 0; i < r->nr_procs; i++) {
		const struct proc *pr = &r->procs[i];
		/* pids are unique within a run; unknown ones get 1, 2, ... */
		long pid = pr->pid > 0 ? pr->pid : (long)(i + 1);

		trace_proc(pr, i, pid, aligned ? pr->start_ns - base : 0, out);
		if (pr->timeline)
			trace_timeline(pr->timeline, pid, aligned ? pr->timeline->origin_ns - base : 0, out);
	}
	buf_adds(out, "\n]}\n");
	return 0;
}
