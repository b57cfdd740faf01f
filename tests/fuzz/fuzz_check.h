/*
 * Checks the fuzz targets share (header only: each target is one file and
 * tests/fuzz/run.sh links it with src/).  Each aborts on a broken invariant,
 * which libFuzzer reports as a crash with the input that caused it.
 */
#ifndef COLDSTART_FUZZ_CHECK_H
#define COLDSTART_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/profile.h"

/* Every node is reached exactly once from the roots, with consistent links; events point at nodes. */
static inline void check_tree(const struct proc *pr)
{
	size_t seen = 0, e;
	int32_t i = pr->first_root;

	while (i >= 0) {
		if (i >= (int32_t)pr->nr_nodes || ++seen > pr->nr_nodes)
			abort();
		if (pr->nodes[i].first_child >= 0) {
			if (pr->nodes[pr->nodes[i].first_child].parent != i)
				abort();
			i = pr->nodes[i].first_child;
			continue;
		}
		while (i >= 0 && pr->nodes[i].next_sibling < 0)
			i = pr->nodes[i].parent;
		if (i >= 0)
			i = pr->nodes[i].next_sibling;
	}
	if (seen != pr->nr_nodes)
		abort();
	for (e = 0; e < pr->nr_events; e++)
		if (pr->events[e].node >= (int32_t)pr->nr_nodes)
			abort();
}

/* Text a JSON or XML reader will take: valid UTF-8 throughout. */
static inline void check_utf8(const struct buf *b)
{
	size_t i, n;

	for (i = 0; i < b->len; i += n) {
		n = utf8_seq_len((const unsigned char *)b->buf + i, b->len - i);
		if (!n)
			abort();
	}
}

static inline void check_reads_back(const struct buf *json, struct profile *q)
{
	struct buf err = BUF_INIT;

	profile_init(q);
	if (profile_from_json(q, json->buf, json->len, &err) < 0) {
		fprintf(stderr, "the writer wrote what the reader refuses: %s\n", err.buf);
		abort();
	}
	buf_release(&err);
}

/*
 * p as JSON and back: the writer's output is UTF-8, reads back, and is
 * stable once read (the first reading turns escaped_bytes into a warning).
 */
static inline void check_round_trip(const struct profile *p)
{
	struct buf first = BUF_INIT, second = BUF_INIT, third = BUF_INIT;
	struct profile q, r;

	profile_to_json(p, &first);
	check_utf8(&first);
	check_reads_back(&first, &q);
	profile_to_json(&q, &second);
	check_reads_back(&second, &r);
	profile_to_json(&r, &third);
	if (second.len != third.len || memcmp(second.buf, third.buf, second.len))
		abort();
	profile_release(&q);
	profile_release(&r);
	buf_release(&first);
	buf_release(&second);
	buf_release(&third);
}

#endif
