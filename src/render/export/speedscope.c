/*
 * speedscope's evented format: shared frames, one profile per process, "O"
 * and "C" events.  Real timestamps are used when the tracer recorded them,
 * otherwise the tree is laid out from cumulative times; either way the
 * layout nests perfectly, so `at` never decreases and events balance.  A
 * process with a timeline (--timeline) also gets a sampled profile per
 * thread, listed first: its functions and imports in time order.
 */
#include "render/export/formats.h"
#include "render/export/frames.h"

#include <stdlib.h>
#include <string.h>

#include "iset.h"

/* Interned frame names: a set of indexes into names. */
struct frames {
	char **names;
	size_t nr, alloc;
	struct iset set;
};

static uint64_t frame_hash_at(const void *ctx, int32_t v)
{
	return hash_str(((const struct frames *)ctx)->names[v]);
}

static size_t frames_intern(struct frames *f, const char *name)
{
	size_t h;

	if (!f->set.cap)
		iset_init(&f->set, 1024);
	else if (f->set.used * 2 >= f->set.cap)
		iset_grow(&f->set, frame_hash_at, f);
	for (h = hash_str(name) & (f->set.cap - 1); f->set.slot[h] >= 0; h = (h + 1) & (f->set.cap - 1))
		if (!strcmp(f->names[f->set.slot[h]], name))
			return (size_t)f->set.slot[h];
	ALLOC_GROW(f->names, f->nr + 1, f->alloc);
	f->names[f->nr] = xstrdup(name);
	f->set.slot[h] = (int32_t)f->nr;
	f->set.used++;
	return f->nr++;
}

static void frames_release(struct frames *f)
{
	size_t i;

	for (i = 0; i < f->nr; i++)
		free(f->names[i]);
	free(f->names);
	iset_release(&f->set);
}

static void add_event(struct buf *ev, bool *first, char type, size_t frame, int64_t at)
{
	if (!*first)
		buf_addch(ev, ',');
	*first = false;
	buf_addf(ev, "{\"type\":\"%c\",\"frame\":%zu,\"at\":", type, frame);
	export_add_us(ev, at);
	buf_addch(ev, '}');
}

static void profile_proc(const struct proc *pr, size_t idx, struct frames *fr, struct buf *out)
{
	int32_t *order = NULL, *parent = NULL, *open = NULL;
	int64_t *start = NULL, *end = NULL, extent;
	size_t n = 0, k, nopen = 0, *frame_of = NULL;
	struct buf label = BUF_INIT, ev = BUF_INIT;
	bool first = true;

	if (pr->nr_nodes) {
		order = xmalloc(st_mult(pr->nr_nodes, sizeof(*order)));
		parent = xmalloc(st_mult(pr->nr_nodes, sizeof(*parent)));
		open = xmalloc(st_mult(pr->nr_nodes, sizeof(*open)));
		start = xmalloc(st_mult(pr->nr_nodes, sizeof(*start)));
		end = xmalloc(st_mult(pr->nr_nodes, sizeof(*end)));
		frame_of = xmalloc(st_mult(pr->nr_nodes, sizeof(*frame_of)));
	}
	extent = pr->nr_nodes ? export_layout(pr, export_has_timing(pr), start, end) : 0;
	if (pr->nr_nodes)
		n = export_preorder(pr, order, parent);
	for (k = 0; k < n; k++) {
		int32_t v = order[k];
		struct buf clean = BUF_INIT;

		export_add_clean(&clean, node_name(pr, v));
		frame_of[v] = frames_intern(fr, clean.buf);
		buf_release(&clean);
		/* Close everything that is not an ancestor of v. */
		while (nopen && open[nopen - 1] != parent[v]) {
			nopen--;
			add_event(&ev, &first, 'C', frame_of[open[nopen]], end[open[nopen]]);
		}
		add_event(&ev, &first, 'O', frame_of[v], start[v]);
		open[nopen++] = v;
		if (end[v] > extent)
			extent = end[v];
	}
	while (nopen) {
		nopen--;
		add_event(&ev, &first, 'C', frame_of[open[nopen]], end[open[nopen]]);
	}
	export_proc_label(pr, idx, &label);
	buf_adds(out, "{\"type\":\"evented\",\"name\":");
	export_add_json(out, label.buf);
	buf_adds(out, ",\"unit\":\"microseconds\",\"startValue\":0,\"endValue\":");
	export_add_us(out, extent);
	buf_adds(out, ",\"events\":[");
	buf_add(out, ev.buf, ev.len);
	buf_adds(out, "]}");
	buf_release(&label);
	buf_release(&ev);
	free(order);
	free(parent);
	free(open);
	free(start);
	free(end);
	free(frame_of);
}

/* The frame of timeline node i: its name, "import NAME" for an import. */
static size_t tl_frame(const struct timeline *tl, int32_t i, struct frames *fr, size_t *cache)
{
	struct buf name = BUF_INIT;

	if (cache[i] != SIZE_MAX)
		return cache[i];
	if (tl->nodes[i].kind == TL_IMPORT)
		buf_adds(&name, "import ");
	export_add_clean(&name, tl_str(tl, tl->nodes[i].name));
	cache[i] = frames_intern(fr, name.buf);
	buf_release(&name);
	return cache[i];
}

/*
 * A timeline as speedscope's sampled profiles, one per thread: each sample
 * is the stack from the thread's root (left out) to its innermost node,
 * weighted by the wall time it stands for, in time order.
 */
static void profile_timeline(const struct proc *pr, size_t idx, struct frames *fr, struct buf *out, bool *first)
{
	const struct timeline *tl = pr->timeline;
	size_t *cache = xmalloc(st_mult(tl->nr_nodes ? tl->nr_nodes : 1, sizeof(*cache)));
	int32_t *stack = xmalloc(st_mult(tl->nr_nodes ? tl->nr_nodes : 1, sizeof(*stack)));
	struct buf label = BUF_INIT, samples = BUF_INIT, weights = BUF_INIT;
	size_t i, t;

	for (i = 0; i < tl->nr_nodes; i++)
		cache[i] = SIZE_MAX;
	export_proc_label(pr, idx, &label);
	for (t = 0; t < tl->nr_nodes; t++) {
		int64_t total = 0;
		bool any = false;

		if (tl->nodes[t].kind != TL_THREAD)
			continue;
		buf_reset(&samples);
		buf_reset(&weights);
		for (i = 0; i < tl->nr_samples; i++) {
			const struct tl_sample *sm = &tl->samples[i];
			size_t depth = 0;
			int32_t v;

			if (sm->wall_us <= 0)
				continue;
			for (v = sm->node; v >= 0 && tl->nodes[v].parent >= 0; v = tl->nodes[v].parent)
				stack[depth++] = v;
			if (v != (int32_t)t)
				continue;
			buf_adds(&samples, any ? ",[" : "[");
			buf_adds(&weights, any ? "," : "");
			any = true;
			while (depth--)
				buf_addf(&samples, "%zu%s", tl_frame(tl, stack[depth], fr, cache), depth ? "," : "");
			buf_addch(&samples, ']');
			buf_add_i64(&weights, sm->wall_us);
			total += sm->wall_us;
		}
		if (!any)
			continue;
		if (!*first)
			buf_addch(out, ',');
		*first = false;
		buf_adds(out, "{\"type\":\"sampled\",\"name\":");
		{
			struct buf name = BUF_INIT;

			buf_addf(&name, "%s, %s (timeline)", label.buf, tl_str(tl, tl->nodes[t].name));
			export_add_json(out, name.buf);
			buf_release(&name);
		}
		buf_adds(out, ",\"unit\":\"microseconds\",\"startValue\":0,\"endValue\":");
		buf_add_i64(out, total);
		buf_adds(out, ",\"samples\":[");
		buf_add(out, samples.buf, samples.len);
		buf_adds(out, "],\"weights\":[");
		buf_add(out, weights.buf, weights.len);
		buf_adds(out, "]}");
	}
	buf_release(&label);
	buf_release(&samples);
	buf_release(&weights);
	free(cache);
	free(stack);
}

int export_speedscope(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err)
{
	const struct run *r = export_pick_run(p, o, err);
	struct frames fr = { .names = NULL };
	struct buf profiles = BUF_INIT, name = BUF_INIT;
	size_t i;
	bool first = true;

	if (!r)
		return -1;
	/* The timelines first: speedscope opens the first profile. */
	for (i = 0; i < r->nr_procs; i++)
		if (r->procs[i].timeline)
			profile_timeline(&r->procs[i], i, &fr, &profiles, &first);
	for (i = 0; i < r->nr_procs; i++) {
		if (!first)
			buf_addch(&profiles, ',');
		first = false;
		profile_proc(&r->procs[i], i, &fr, &profiles);
	}
	if (o->title)
		buf_adds(&name, o->title);
	else if (p->target.nr)
		for (i = 0; i < p->target.nr; i++)
			buf_addf(&name, "%s%s", i ? " " : "", p->target.v[i]);
	else
		buf_adds(&name, "coldstart profile");
	buf_adds(out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		      "\"exporter\":\"coldstart " COLDSTART_VERSION "\",\"name\":");
	export_add_json(out, name.buf);
	buf_adds(out, ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
	for (i = 0; i < fr.nr; i++) {
		if (i)
			buf_addch(out, ',');
		buf_adds(out, "{\"name\":");
		/* Names were cleaned when interned. */
		buf_add_json_str(out, fr.names[i], strlen(fr.names[i]));
		buf_addch(out, '}');
	}
	buf_adds(out, "]},\"profiles\":[");
	buf_add(out, profiles.buf, profiles.len);
	buf_adds(out, "]}\n");
	buf_release(&profiles);
	buf_release(&name);
	frames_release(&fr);
	return 0;
}
