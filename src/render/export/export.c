/*
 * The table of output formats and writing a rendered document to a file
 * (gzip when the name ends in .gz), under a CPU limit from a view of the
 * profile weighed by CPU time.
 */
#include "render/export/export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "render/export/formats.h"
#include "model/stats.h"
#include "outfile.h"

static const struct exporter exporters[] = {
	{
		.name = "svg",
		.ext = "svg",
		.summary = "interactive flamegraph (hover, click to zoom, search)",
		.write = export_svg,
	},
	{
		.name = "folded",
		.ext = "folded",
		.summary = "folded stacks, 'proc;a;b;c <self us>' (flamegraph.pl, inferno, speedscope)",
		.write = export_folded,
	},
	{
		.name = "speedscope",
		.ext = "speedscope.json",
		.summary = "speedscope evented profile, one profile per process",
		.write = export_speedscope,
	},
	{
		.name = "chrome",
		.ext = "trace.json",
		.summary = "Chrome trace events (Perfetto, chrome://tracing), one track per process",
		.write = export_chrome,
	},
	{
		.name = "html",
		.ext = "html",
		.summary = "single-file report: summary, findings, sortable table, flamegraph",
		.write = export_html,
	},
	{
		.name = "pprof",
		.ext = "pb.gz",
		.summary = "gzipped pprof profile of import self time (go tool pprof, Pyroscope, Cloud Profiler)",
		.write = export_pprof,
		.binary = true,
		.gzipped = true,
	},
	{
		.name = "otlp",
		.ext = "otlp.pb",
		.summary = "OpenTelemetry trace, OTLP/protobuf ExportTraceServiceRequest (POST to /v1/traces)",
		.write = export_otlp,
		.binary = true,
	},
	{
		.name = "otlp-json",
		.ext = "otlp.json",
		.summary = "OpenTelemetry trace, OTLP/JSON ExportTraceServiceRequest",
		.write = export_otlp_json,
	},
	{
		.name = "prometheus",
		.ext = "prom",
		.summary = "Prometheus text exposition 0.0.4 gauges (Pushgateway, node_exporter's textfile)",
		.write = export_prometheus,
	},
};

static int write_gz(const char *path, const char *data, size_t len, bool compress, struct buf *err)
{
	struct outfile of = OUTFILE_INIT;
	gzFile gz;
	int fd;

	if (!compress)
		return outfile_write(path, data, len, err);
	if (outfile_open(&of, path, err) < 0)
		return -1;
	errno = 0;
	fd = dup(of.fd);
	gz = fd < 0 ? NULL : gzdopen(fd, "wb");
	if (!gz) {
		buf_addf(err, "cannot write '%s': %s", path, errno ? strerror(errno) : "zlib error");
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	while (len) {
		unsigned chunk = len > (1u << 20) ? (1u << 20) : (unsigned)len;
		int n = gzwrite(gz, data, chunk);

		if (n <= 0) {
			int zerr, saved = errno;
			const char *msg = gzerror(gz, &zerr);

			buf_addf(err, "cannot write '%s': %s", path, zerr == Z_ERRNO && saved ? strerror(saved) : msg);
			gzclose(gz);
			goto fail;
		}
		data += n;
		len -= (size_t)n;
	}
	errno = 0;
	if (gzclose(gz) != Z_OK) {
		buf_addf(err, "cannot write '%s': %s", path, errno ? strerror(errno) : "zlib error");
		goto fail;
	}
	return outfile_commit(&of, err);
fail:
	outfile_abort(&of);
	return -1;
}

const struct exporter *exporter_list(size_t *nr)
{
	*nr = ARRAY_SIZE(exporters);
	return exporters;
}

const struct exporter *exporter_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < ARRAY_SIZE(exporters); i++)
		if (!strcmp(exporters[i].name, name))
			return &exporters[i];
	return NULL;
}

const struct exporter *exporter_for_path(const char *path)
{
	struct buf base = BUF_INIT;
	const struct exporter *found = NULL;
	size_t i, len = strlen(path);

	if (ends_with(path, ".gz"))
		len -= 3;
	buf_add(&base, path, len);
	for (i = 0; i < ARRAY_SIZE(exporters); i++) {
		struct buf suffix = BUF_INIT;

		buf_addf(&suffix, ".%s", exporters[i].ext);
		/* pprof's own ending holds the ".gz". */
		if (ends_with(base.buf, suffix.buf) || ends_with(path, suffix.buf))
			found = &exporters[i];
		buf_release(&suffix);
		if (found)
			break;
	}
	if (!found && (ends_with(base.buf, ".htm")))
		found = exporter_find("html");
	buf_release(&base);
	return found;
}

int export_write_data(const char *path, const char *data, size_t len, struct buf *err)
{
	if (!strcmp(path, "-")) {
		if (fwrite(data, 1, len, stdout) != len || fflush(stdout)) {
			buf_addf(err, "cannot write to standard output: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	return write_gz(path, data, len, ends_with(path, ".gz"), err);
}

/*
 * Under a CPU limit every format weighs modules by the importing thread's
 * CPU time (profile_metric): a view of p whose nodes carry their CPU times
 * as self and cumulative (nothing for rows without one: importtime's rows
 * from before the tracer) and no timestamps, so frames are as wide as the
 * CPU the import used.  Everything but the runs' node arrays is borrowed.
 */
static void cpu_view(const struct profile *p, struct profile *view)
{
	size_t ri, pi, i;

	*view = *p;
	view->runs = xmalloc(st_mult(p->nr_runs + 1, sizeof(*view->runs)));
	for (ri = 0; ri < p->nr_runs; ri++) {
		const struct run *r = &p->runs[ri];
		struct run *vr = &view->runs[ri];

		*vr = *r;
		vr->procs = xmalloc(st_mult(r->nr_procs + 1, sizeof(*vr->procs)));
		for (pi = 0; pi < r->nr_procs; pi++) {
			const struct proc *pr = &r->procs[pi];
			struct proc *vp = &vr->procs[pi];

			*vp = *pr;
			vp->nodes = xmalloc(st_mult(pr->nr_nodes + 1, sizeof(*vp->nodes)));
			memcpy(vp->nodes, pr->nodes, pr->nr_nodes * sizeof(*pr->nodes));
			for (i = 0; i < pr->nr_nodes; i++) {
				int64_t cum = node_cum_in(pr, (int32_t)i, METRIC_CPU);
				int64_t self = node_self_in(pr, (int32_t)i, METRIC_CPU);

				vp->nodes[i].cum_us = cum > 0 ? cum : 0;
				vp->nodes[i].self_us = self > 0 ? self : 0;
			}
			vp->timing = NULL;
		}
	}
}

static void cpu_view_release(struct profile *view)
{
	size_t ri, pi;

	for (ri = 0; ri < view->nr_runs; ri++) {
		for (pi = 0; pi < view->runs[ri].nr_procs; pi++)
			free(view->runs[ri].procs[pi].nodes);
		free(view->runs[ri].procs);
	}
	free(view->runs);
}

int export_to_path(const struct profile *p, const struct exporter *e, const struct export_opts *o, const char *path,
		   struct buf *err)
{
	struct buf out = BUF_INIT, title = BUF_INIT;
	struct export_opts co;
	struct profile view;
	bool cpu = profile_metric(p) == METRIC_CPU;
	int ret = -1;

	if (cpu) {
		size_t i;

		cpu_view(p, &view);
		co = *o;
		if (o->title)
			buf_adds(&title, o->title);
		else {
			buf_adds(&title, "coldstart:");
			for (i = 0; i < p->target.nr; i++)
				buf_addf(&title, " %s", p->target.v[i]);
		}
		buf_adds(&title, " (CPU time of the importing thread, under a CPU limit)");
		co.title = title.buf;
	}
	if (e->write(cpu ? &view : p, cpu ? &co : o, &out, err) < 0)
		goto out;
	if (e->gzipped && strcmp(path, "-"))
		ret = write_gz(path, out.buf, out.len, false, err);
	else
		ret = export_write_data(path, out.buf, out.len, err);
out:
	if (cpu)
		cpu_view_release(&view);
	buf_release(&out);
	buf_release(&title);
	return ret;
}
