/*
 * pprof: a gzipped perftools.profiles.Profile (google/pprof's
 * proto/profile.proto) of the imports' own time, one sample per import
 * over its import stack (the process as the outermost frame), labelled with
 * the process's pid and role and the import's phase and kind, for go tool
 * pprof and the continuous profilers that read pprof.
 */
#include "render/export/formats.h"
#include "render/export/frames.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "iset.h"
#include "render/export/pbuf.h"

/* As for folded stacks: every sample repeats its whole stack. */
#define PPROF_MAX_DEPTH 2048

/* profile.proto's field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	MAPPING_ID = 1,
	MAPPING_FILENAME = 5,
	MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
};

/*
 * The string table, each string once (index 0 is ""), and the functions,
 * one per distinct frame name: a function's id is its name's index in the
 * table, so the name lookup finds both.
 */
struct pprof {
	struct buf strings; /* the table's encoded entries */
	struct buf functions; /* the encoded Function and Location messages */
	char **names;
	size_t nr_names, alloc_names;
	struct iset by_name; /* indexes into names */
	bool *is_function; /* per name index */
	size_t alloc_is_function;
};

static uint64_t name_hash_at(const void *ctx, int32_t v)
{
	return hash_str(((const struct pprof *)ctx)->names[v]);
}

static uint64_t intern(struct pprof *pp, const char *s)
{
	struct iset *set = &pp->by_name;
	size_t k;

	if (!set->cap)
		iset_init(set, 1024);
	else if (set->used * 2 >= set->cap)
		iset_grow(set, name_hash_at, pp);
	for (k = hash_str(s) & (set->cap - 1); set->slot[k] >= 0; k = (k + 1) & (set->cap - 1))
		if (!strcmp(pp->names[set->slot[k]], s))
			return (uint64_t)set->slot[k];
	ALLOC_GROW(pp->names, pp->nr_names + 1, pp->alloc_names);
	pp->names[pp->nr_names] = xstrdup(s);
	set->slot[k] = (int32_t)pp->nr_names;
	set->used++;
	pb_str(&pp->strings, PROFILE_STRING_TABLE, s);
	return pp->nr_names++;
}

/* The function (and its one location, same id) for a frame name; file may be NULL. */
static uint64_t function(struct pprof *pp, const char *name, const char *file)
{
	struct buf clean = BUF_INIT;
	uint64_t id, file_id = 0;
	size_t m, line;

	export_add_clean(&clean, name);
	id = intern(pp, clean.buf);
	buf_release(&clean);
	if (id >= pp->alloc_is_function) {
		size_t old = pp->alloc_is_function;

		ALLOC_GROW(pp->is_function, id + 1, pp->alloc_is_function);
		memset(pp->is_function + old, 0, (pp->alloc_is_function - old) * sizeof(bool));
	}
	if (pp->is_function[id])
		return id;
	pp->is_function[id] = true;
	if (file && *file) {
		export_add_clean(&clean, file);
		file_id = intern(pp, clean.buf);
		buf_release(&clean);
	}
	m = pb_open(&pp->functions);
	pb_uint(&pp->functions, FUNCTION_ID, id);
	pb_int(&pp->functions, FUNCTION_NAME, (int64_t)id);
	pb_int(&pp->functions, FUNCTION_SYSTEM_NAME, (int64_t)id);
	if (file_id)
		pb_int(&pp->functions, FUNCTION_FILENAME, (int64_t)file_id);
	pb_close(&pp->functions, PROFILE_FUNCTION, m);
	m = pb_open(&pp->functions);
	pb_uint(&pp->functions, LOCATION_ID, id);
	pb_uint(&pp->functions, LOCATION_MAPPING_ID, 1);
	line = pb_open(&pp->functions);
	pb_uint(&pp->functions, LINE_FUNCTION_ID, id);
	pb_close(&pp->functions, LOCATION_LINE, line);
	pb_close(&pp->functions, PROFILE_LOCATION, m);
	return id;
}

static void pprof_release(struct pprof *pp)
{
	size_t i;

	for (i = 0; i < pp->nr_names; i++)
		free(pp->names[i]);
	free(pp->names);
	iset_release(&pp->by_name);
	free(pp->is_function);
	buf_release(&pp->strings);
	buf_release(&pp->functions);
}

static void label_str(struct pprof *pp, struct buf *out, const char *key, const char *value)
{
	size_t m = pb_open(out);

	pb_int(out, LABEL_KEY, (int64_t)intern(pp, key));
	pb_int(out, LABEL_STR, (int64_t)intern(pp, value));
	pb_close(out, SAMPLE_LABEL, m);
}

static void value_type(struct pprof *pp, struct buf *out, uint32_t field, const char *type, const char *unit)
{
	size_t m = pb_open(out);

	pb_int(out, VALUE_TYPE_TYPE, (int64_t)intern(pp, type));
	pb_int(out, VALUE_TYPE_UNIT, (int64_t)intern(pp, unit));
	pb_close(out, field, m);
}

static int add_proc(struct pprof *pp, const struct run *r, size_t idx, struct buf *out, struct buf *err)
{
	const struct proc *pr = &r->procs[idx];
	int32_t *order, *parent, *depth;
	uint64_t *fn;
	uint64_t root;
	struct buf label = BUF_INIT, pid = BUF_INIT;
	size_t n, k;
	int ret = -1;

	if (!pr->nr_nodes)
		return 0;
	order = xmalloc(st_mult(pr->nr_nodes, sizeof(*order)));
	parent = xmalloc(st_mult(pr->nr_nodes, sizeof(*parent)));
	depth = xmalloc(st_mult(pr->nr_nodes, sizeof(*depth)));
	fn = xmalloc(st_mult(pr->nr_nodes, sizeof(*fn)));
	n = export_preorder(pr, order, parent);
	export_proc_label(pr, idx, &label);
	root = function(pp, label.buf, NULL);
	if (pr->pid >= 0)
		buf_addf(&pid, "%ld", pr->pid);
	for (k = 0; k < n; k++) {
		int32_t v = order[k];
		const char *file = pr->timing && pr->timing[v].file ? proc_str(pr, pr->timing[v].file) : NULL;

		depth[v] = parent[v] >= 0 ? depth[parent[v]] + 1 : 1;
		if (depth[v] > PPROF_MAX_DEPTH) {
			buf_addf(err,
				 "import tree of process %zu is deeper than %d levels; "
				 "every sample would repeat its whole stack (use speedscope or chrome)",
				 idx + 1, PPROF_MAX_DEPTH);
			goto out;
		}
		fn[v] = function(pp, node_name(pr, v), file);
	}
	for (k = 0; k < n; k++) {
		int32_t v = order[k], up;
		const struct imp_node *nd = &pr->nodes[v];
		const char *phase;
		size_t m, ids;

		if (nd->self_us <= 0)
			continue;
		phase = export_node_phase(r, pr, v);
		m = pb_open(out);
		/* Leaf first, the process last. */
		ids = pb_open(out);
		for (up = v; up >= 0; up = parent[up])
			pb_varint(out, fn[up]);
		pb_varint(out, root);
		pb_close(out, SAMPLE_LOCATION_ID, ids);
		pb_int(out, SAMPLE_VALUE, nd->self_us);
		if (pid.len) {
			size_t l = pb_open(out);

			pb_int(out, LABEL_KEY, (int64_t)intern(pp, "pid"));
			pb_int(out, LABEL_NUM, pr->pid);
			pb_close(out, SAMPLE_LABEL, l);
		}
		if (pr->role)
			label_str(pp, out, "role", pr->role);
		label_str(pp, out, "phase", phase);
		label_str(pp, out, "kind", kind_name((enum node_kind)nd->kind));
		pb_close(out, PROFILE_SAMPLE, m);
	}
	ret = 0;
out:
	buf_release(&label);
	buf_release(&pid);
	free(order);
	free(parent);
	free(depth);
	free(fn);
	return ret;
}

static int gzip_into(const struct buf *in, struct buf *out, struct buf *err)
{
	z_stream z;
	int rc;

	if (in->len > UINT32_MAX) {
		buf_adds(err, "the pprof profile would exceed 4 GiB");
		return -1;
	}
	memset(&z, 0, sizeof(z));
	/* 15 + 16: a gzip header and trailer, which pprof expects. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		buf_adds(err, "cannot compress the pprof profile: zlib error");
		return -1;
	}
	z.next_in = (unsigned char *)in->buf;
	z.avail_in = (uInt)in->len;
	do {
		buf_grow(out, 1 << 16);
		z.next_out = (unsigned char *)out->buf + out->len;
		z.avail_out = (uInt)buf_avail(out);
		rc = deflate(&z, Z_FINISH);
		buf_setlen(out, (size_t)((char *)z.next_out - out->buf));
	} while (rc == Z_OK || rc == Z_BUF_ERROR);
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		buf_adds(err, "cannot compress the pprof profile: zlib error");
		return -1;
	}
	return 0;
}

int export_pprof(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err)
{
	const struct run *r = export_pick_run(p, o, err);
	struct pprof pp = { .strings = BUF_INIT, .functions = BUF_INIT };
	struct buf samples = BUF_INIT, head = BUF_INIT, doc = BUF_INIT;
	int64_t created;
	size_t i;
	int ret = -1;

	if (!r)
		return -1;
	intern(&pp, "");
	value_type(&pp, &head, PROFILE_SAMPLE_TYPE, "import", "microseconds");
	for (i = 0; i < r->nr_procs; i++)
		if (add_proc(&pp, r, i, &samples, err) < 0)
			goto out;
	created = export_created_unix_ns(p);
	if (created > 0) {
		/* The profile is stamped when written: the run began a wall time before. */
		int64_t wall_ns = r->wall_us > 0 ? r->wall_us * 1000 : 0;

		pb_int(&head, PROFILE_TIME_NANOS, created - wall_ns);
	}
	if (r->wall_us > 0)
		pb_int(&head, PROFILE_DURATION_NANOS, r->wall_us * 1000);
	value_type(&pp, &head, PROFILE_PERIOD_TYPE, "import", "microseconds");
	pb_int(&head, PROFILE_PERIOD, 1);
	{
		struct buf c = BUF_INIT;

		buf_adds(&c, "coldstart: ");
		export_add_target(&c, p, TITLE_TARGET_COLS);
		pb_int(&head, PROFILE_COMMENT, (int64_t)intern(&pp, c.buf));
		buf_release(&c);
	}
	{
		/* One mapping, the interpreter, whose functions are all symbolised: pprof then asks for no binary. */
		size_t m = pb_open(&head);

		pb_uint(&head, MAPPING_ID, 1);
		pb_int(&head, MAPPING_FILENAME, (int64_t)intern(&pp, p->python ? p->python : "python"));
		pb_uint(&head, MAPPING_HAS_FUNCTIONS, 1);
		pb_close(&head, PROFILE_MAPPING, m);
	}
	buf_add(&doc, head.buf, head.len);
	buf_add(&doc, samples.buf, samples.len);
	buf_add(&doc, pp.functions.buf, pp.functions.len);
	buf_add(&doc, pp.strings.buf, pp.strings.len);
	ret = gzip_into(&doc, out, err);
out:
	pprof_release(&pp);
	buf_release(&samples);
	buf_release(&head);
	buf_release(&doc);
	return ret;
}
