// corpus: tests/fixtures/importtime
/*
 * libFuzzer target for the -X importtime parser: feeds the input in chunks of
 * random sizes, and through it_feed_from's lexing thread, and checks that both
 * results equal a one-piece feed, that every node sits in exactly one tree,
 * and that passthrough never invents bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "ingest/importtime.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* it_feed_from uses its lexing thread even on a one-CPU machine. */
	setenv("COLDSTART_THREADS", "2", 1);
	return 0;
}

struct outcome {
	struct run run;
	struct buf pass;
	struct it_parser *ps;
};

static void parse(struct outcome *o, const char *text, size_t len, uint32_t seed)
{
	size_t off = 0;

	memset(&o->run, 0, sizeof(o->run));
	buf_init(&o->pass, 0);
	o->ps = it_parser_new(&o->run);
	while (off < len) {
		size_t n = len - off;

		if (seed) {
			/* xorshift: chunk sizes 1..64, sometimes larger */
			seed ^= seed << 13;
			seed ^= seed >> 17;
			seed ^= seed << 5;
			n = seed % 8 ? seed % 64 + 1 : seed % 4096 + 1;
			if (n > len - off)
				n = len - off;
		}
		it_feed(o->ps, text + off, n, &o->pass);
		off += n;
	}
	it_finish(o->ps, &o->pass);
}

/* A read(2)-like source handing out the input in xorshift-sized pieces. */
struct source {
	const char *text;
	size_t len, off;
	uint32_t seed;
};

static long read_source(void *ctx, char *buf, size_t len)
{
	struct source *src = ctx;
	size_t n;

	src->seed ^= src->seed << 13;
	src->seed ^= src->seed >> 17;
	src->seed ^= src->seed << 5;
	n = src->seed % 4 ? src->seed % 200 + 1 : len;
	if (n > len)
		n = len;
	if (n > src->len - src->off)
		n = src->len - src->off;
	memcpy(buf, src->text + src->off, n);
	src->off += n;
	return (long)n;
}

static void parse_threaded(struct outcome *o, const char *text, size_t len, uint32_t seed)
{
	struct source src = { text, len, 0, seed };

	memset(&o->run, 0, sizeof(o->run));
	buf_init(&o->pass, 0);
	o->ps = it_parser_new(&o->run);
	if (it_feed_from(o->ps, read_source, &src, &o->pass) < 0 || src.off != len)
		abort();
	it_finish(o->ps, &o->pass);
}

static void release(struct outcome *o)
{
	it_parser_free(o->ps);
	run_release(&o->run);
	buf_release(&o->pass);
}

static void check_trees(const struct run *run)
{
	size_t p;

	for (p = 0; p < run->nr_procs; p++)
		check_tree(&run->procs[p]);
}

static void check_same(const struct outcome *a, const struct outcome *b)
{
	const struct it_warning *wa, *wb;
	size_t na, nb, i, p;

	if (a->pass.len != b->pass.len || memcmp(a->pass.buf, b->pass.buf, a->pass.len))
		abort();
	if (it_rows(a->ps) != it_rows(b->ps) || it_headers(a->ps) != it_headers(b->ps))
		abort();
	wa = it_warnings(a->ps, &na);
	wb = it_warnings(b->ps, &nb);
	if (na != nb)
		abort();
	for (i = 0; i < na; i++)
		if (wa[i].line != wb[i].line || strcmp(wa[i].msg, wb[i].msg))
			abort();
	if (a->run.nr_procs != b->run.nr_procs)
		abort();
	for (p = 0; p < a->run.nr_procs; p++) {
		const struct proc *x = &a->run.procs[p], *y = &b->run.procs[p];

		if (x->nr_nodes != y->nr_nodes || x->first_root != y->first_root || x->last_root != y->last_root ||
		    x->names.len != y->names.len || memcmp(x->names.buf, y->names.buf, x->names.len))
			abort();
		/* Field by field: the struct has padding bytes. */
		for (i = 0; i < x->nr_nodes; i++) {
			const struct imp_node *m = &x->nodes[i], *n = &y->nodes[i];

			if (m->name != n->name || m->depth != n->depth || m->parent != n->parent ||
			    m->first_child != n->first_child || m->last_child != n->last_child ||
			    m->next_sibling != n->next_sibling || m->flags != n->flags || m->kind != n->kind ||
			    m->self_us != n->self_us || m->cum_us != n->cum_us)
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome whole, parts, threaded;
	uint32_t seed = 2463534242u;
	size_t i;

	for (i = 0; i < size && i < 8; i++)
		seed = seed * 31 + data[i];
	parse(&whole, (const char *)data, size, 0);
	parse(&parts, (const char *)data, size, seed | 1);
	parse_threaded(&threaded, (const char *)data, size, seed | 1);
	check_trees(&whole.run);
	if (whole.pass.len > size)
		abort();
	check_same(&whole, &parts);
	check_same(&whole, &threaded);
	release(&whole);
	release(&parts);
	release(&threaded);
	return 0;
}
