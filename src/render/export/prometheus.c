/*
 * Prometheus text exposition (format 0.0.4) of a run: gauges in base units
 * (seconds, bytes) for the start's wall, ready, first-response, import and
 * CPU times and its peak memory, and the top modules by import time, each
 * labelled by target and interpreter, for a Pushgateway or a textfile
 * collector.
 */
#include "render/export/formats.h"
#include "render/export/frames.h"

#include <stdlib.h>
#include <string.h>

#define PROM_TOP_DEFAULT 10

/* A label value: backslash, double quote and newline escaped; invalid UTF-8 cleaned. */
static void add_label_value(struct buf *out, const char *s)
{
	struct buf clean = BUF_INIT;
	size_t i;

	export_add_clean(&clean, s);
	for (i = 0; i < clean.len; i++) {
		char c = clean.buf[i];

		if (c == '\\' || c == '"')
			buf_addch(out, '\\');
		buf_addch(out, c);
	}
	buf_release(&clean);
}

static void family(struct buf *out, const char *name, const char *help)
{
	buf_addf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static void add_seconds(struct buf *out, int64_t us)
{
	buf_add_i64(out, us / 1000000);
	buf_addf(out, ".%06lld", (long long)(us % 1000000));
}

/* name{labels} value, value microseconds written as seconds. */
static void sample_us(struct buf *out, const char *name, const char *labels, int64_t us)
{
	buf_addf(out, "%s{%s} ", name, labels);
	add_seconds(out, us);
	buf_addch(out, '\n');
}

/* A module's import time, summed over the nodes of its name (a series is one name). */
struct module_cost {
	const char *name;
	int32_t node; /* the first node of the name: a stable order for ties */
	int64_t cum_us, self_us;
};

static int by_name(const void *a, const void *b)
{
	const struct module_cost *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->node < y->node ? -1 : x->node > y->node);
}

static int by_cost(const void *a, const void *b)
{
	const struct module_cost *x = a, *y = b;

	if (x->cum_us != y->cum_us)
		return x->cum_us > y->cum_us ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

int export_prometheus(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err)
{
	const struct run *r = export_pick_run(p, o, err);
	const struct proc *pr;
	struct buf labels = BUF_INIT, t = BUF_INIT;
	struct module_cost *mods;
	size_t i, nr = 0, top = o->top > 0 ? (size_t)o->top : PROM_TOP_DEFAULT;

	if (!r)
		return -1;
	pr = &r->procs[0];
	export_add_target(&t, p, TITLE_TARGET_COLS);
	buf_adds(&labels, "target=\"");
	add_label_value(&labels, t.buf);
	buf_adds(&labels, "\",interpreter=\"");
	add_label_value(&labels, p->python ? p->python : "");
	buf_adds(&labels, "\"");

	if (r->wall_us >= 0) {
		family(out, "coldstart_wall_seconds",
		       "Wall time of the target's run, exec to exit (or to its stop after ready).");
		sample_us(out, "coldstart_wall_seconds", labels.buf, r->wall_us);
	}
	if (r->ready_us >= 0) {
		family(out, "coldstart_ready_seconds", "Exec to ready (the port answering, or the --ready condition).");
		sample_us(out, "coldstart_ready_seconds", labels.buf, r->ready_us);
	}
	if (r->first_response_us >= 0) {
		family(out, "coldstart_first_response_seconds", "Ready to the first response answered.");
		sample_us(out, "coldstart_first_response_seconds", labels.buf, r->first_response_us);
	}
	family(out, "coldstart_import_seconds",
	       "Import time of the target's process, interpreter start-up imports included.");
	sample_us(out, "coldstart_import_seconds", labels.buf, proc_import_total_us(pr, true));
	if (r->user_us >= 0 && r->sys_us >= 0) {
		family(out, "coldstart_cpu_seconds", "CPU time (user and system) of the run's processes.");
		sample_us(out, "coldstart_cpu_seconds", labels.buf, r->user_us + r->sys_us);
	}
	if (r->maxrss_kb >= 0 || r->cg.has) {
		int64_t bytes = r->cg.has && r->cg.memory_peak > 0 ? r->cg.memory_peak : r->maxrss_kb * 1024;

		family(out, "coldstart_peak_rss_bytes",
		       "Peak memory: the cgroup's peak under limits, else the largest process's RSS.");
		buf_addf(out, "coldstart_peak_rss_bytes{%s} %lld\n", labels.buf, (long long)bytes);
	}
	family(out, "coldstart_processes", "Python processes of the run.");
	buf_addf(out, "coldstart_processes{%s} %zu\n", labels.buf, r->nr_procs);
	family(out, "coldstart_modules", "Modules imported by the target's process.");
	buf_addf(out, "coldstart_modules{%s} %zu\n", labels.buf, pr->nr_nodes);

	mods = xmalloc(st_mult(pr->nr_nodes + 1, sizeof(*mods)));
	for (i = 0; i < pr->nr_nodes; i++) {
		mods[i].name = node_name(pr, (int32_t)i);
		mods[i].node = (int32_t)i;
		mods[i].cum_us = pr->nodes[i].cum_us > 0 ? pr->nodes[i].cum_us : 0;
		mods[i].self_us = pr->nodes[i].self_us > 0 ? pr->nodes[i].self_us : 0;
	}
	qsort(mods, pr->nr_nodes, sizeof(*mods), by_name);
	for (i = 0; i < pr->nr_nodes; i++) {
		if (nr && !strcmp(mods[nr - 1].name, mods[i].name)) {
			mods[nr - 1].cum_us = i64_add(mods[nr - 1].cum_us, mods[i].cum_us);
			mods[nr - 1].self_us = i64_add(mods[nr - 1].self_us, mods[i].self_us);
		} else {
			mods[nr++] = mods[i];
		}
	}
	qsort(mods, nr, sizeof(*mods), by_cost);
	while (nr && !mods[nr - 1].cum_us)
		nr--;
	if (nr > top)
		nr = top;
	if (nr) {
		family(out, "coldstart_module_import_seconds",
		       "Cumulative import time of the target's costliest modules (nested imports included; "
		       "a name imported twice summed).");
		for (i = 0; i < nr; i++) {
			buf_addf(out, "coldstart_module_import_seconds{%s,module=\"", labels.buf);
			add_label_value(out, mods[i].name);
			buf_adds(out, "\"} ");
			add_seconds(out, mods[i].cum_us);
			buf_addch(out, '\n');
		}
		family(out, "coldstart_module_self_seconds",
		       "Own import time of the same modules (nested imports left out).");
		for (i = 0; i < nr; i++) {
			buf_addf(out, "coldstart_module_self_seconds{%s,module=\"", labels.buf);
			add_label_value(out, mods[i].name);
			buf_adds(out, "\"} ");
			add_seconds(out, mods[i].self_us);
			buf_addch(out, '\n');
		}
	}
	free(mods);
	buf_release(&labels);
	buf_release(&t);
	return 0;
}
