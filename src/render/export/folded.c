/*
 * Folded stacks, one line per import path: "proc;a;b;c 123".  Each path is
 * weighted by its own (self) microseconds so that a frame's width in any
 * flamegraph tool equals the import's cumulative time.  With a timeline the
 * paths are its functions and imports (export_tree).
 */
#include "render/export/formats.h"
#include "render/export/frames.h"

#include <stdlib.h>
#include <string.h>

/*
 * Every line repeats its whole path, so output grows with depth squared.
 * Real import trees are tens of levels deep; a deeper one is refused rather
 * than written for minutes.
 */
#define FOLDED_MAX_DEPTH 2048

/* Frame names may not contain the separator or a newline. */
static void add_frame(struct buf *out, const char *s)
{
	struct buf clean = BUF_INIT;
	size_t i;

	export_add_clean(&clean, s);
	for (i = 0; i < clean.len; i++)
		if (clean.buf[i] == ';')
			clean.buf[i] = ':';
	buf_add(out, clean.buf, clean.len);
	buf_release(&clean);
}

static void add_path(const struct proc *pr, const int32_t *parent, int32_t v, struct buf *out)
{
	int32_t *chain = NULL;
	size_t nr = 0, alloc = 0;

	/* parent[] comes from a cycle-free walk, so this terminates. */
	for (; v >= 0; v = parent[v]) {
		ALLOC_GROW(chain, nr + 1, alloc);
		chain[nr++] = v;
	}
	while (nr--) {
		buf_addch(out, ';');
		add_frame(out, node_name(pr, chain[nr]));
	}
	free(chain);
}

static int fold_proc(const struct proc *pr, size_t idx, struct buf *out, struct buf *err)
{
	int32_t *order, *parent;
	int64_t *start, *end, *weight;
	struct buf label = BUF_INIT;
	size_t n, k;
	int ret = 0;

	if (!pr->nr_nodes)
		return 0;
	order = xmalloc(st_mult(pr->nr_nodes, sizeof(*order)));
	parent = xmalloc(st_mult(pr->nr_nodes, sizeof(*parent)));
	start = xmalloc(st_mult(pr->nr_nodes, sizeof(*start)));
	end = xmalloc(st_mult(pr->nr_nodes, sizeof(*end)));
	weight = xcalloc(pr->nr_nodes, sizeof(*weight));
	export_layout(pr, false, start, end);
	n = export_preorder(pr, order, parent);
	export_proc_label(pr, idx, &label);
	/* weight[] holds depths first: parents precede children in order[]. */
	for (k = 0; k < n; k++) {
		int32_t v = order[k];

		weight[v] = parent[v] >= 0 ? weight[parent[v]] + 1 : 1;
		if (weight[v] > FOLDED_MAX_DEPTH) {
			buf_addf(err,
				 "import tree of process %zu is deeper than %d levels; "
				 "folded stacks would repeat every path (use speedscope or chrome)",
				 idx + 1, FOLDED_MAX_DEPTH);
			ret = -1;
			goto out;
		}
	}

	/* Self weight = layout width minus the children's widths (never < 0). */
	for (k = 0; k < n; k++)
		weight[order[k]] = end[order[k]] - start[order[k]];
	for (k = 0; k < n; k++)
		if (parent[order[k]] >= 0)
			weight[parent[order[k]]] -= end[order[k]] - start[order[k]];
	for (k = 0; k < n; k++) {
		int32_t v = order[k];
		int64_t us = weight[v] / 1000;

		if (us <= 0)
			continue;
		add_frame(out, label.buf);
		add_path(pr, parent, v, out);
		buf_addch(out, ' ');
		buf_add_i64(out, us);
		buf_addch(out, '\n');
	}
out:
	buf_release(&label);
	free(order);
	free(parent);
	free(start);
	free(end);
	free(weight);
	return ret;
}

int export_folded(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err)
{
	const struct run *r = export_pick_run(p, o, err);
	size_t i;

	if (!r)
		return -1;
	for (i = 0; i < r->nr_procs; i++) {
		struct proc view;
		const struct proc *pr;
		int rc;

		if (i > 0 && !o->all_procs)
			break;
		pr = export_tree(&r->procs[i], &view);
		rc = fold_proc(pr, i, out, err);
		if (pr == &view)
			proc_release(&view);
		if (rc < 0)
			return -1;
	}
	return 0;
}
