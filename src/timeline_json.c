/*
 * Reads a process's "timeline" object of a profile (docs/profile-format.md)
 * back into struct timeline; the writer is timeline_to_json in timeline.c.
 */
#include <jansson.h>

#include "profile.h"
#include "timeline.h"

static int64_t get_int(json_t *o, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static int64_t at_int(json_t *a, size_t i, int64_t dflt)
{
	json_t *v = json_array_get(a, i);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static uint32_t at_str(struct timeline *tl, json_t *a, size_t i)
{
	json_t *v = json_array_get(a, i);
	const char *s = json_string_value(v);
	size_t len = s ? json_string_length(v) : 0;

	if (!s || memchr(s, '\0', len))
		return 0;
	return timeline_intern(tl, s, len);
}

int timeline_from_json(struct timeline *tl, json_t *js, struct buf *err)
{
	json_t *nodes = json_object_get(js, "nodes");
	json_t *samples = json_object_get(js, "samples");
	const char *end = json_string_value(json_object_get(js, "end"));
	size_t i, nr;
	int e;

	if (!json_is_object(js) || !json_is_array(nodes) || !json_is_array(samples)) {
		buf_addf(err, "a timeline needs 'nodes' and 'samples' arrays");
		return -1;
	}
	tl->origin_ns = get_int(js, "origin_ns", UNKNOWN);
	tl->start_us = get_int(js, "start_us", UNKNOWN);
	tl->end_us = get_int(js, "end_us", UNKNOWN);
	tl->interval_us = get_int(js, "interval_us", UNKNOWN);
	tl->dropped = (uint64_t)get_int(js, "dropped", 0);
	tl->faults = (uint64_t)get_int(js, "faults", 0);
	e = end ? tl_end_from_name(end) : -1;
	tl->end = e >= 0 ? (enum tl_end)e : TL_END_LAST_SAMPLE;
	nr = json_array_size(nodes);
	for (i = 0; i < nr; i++) {
		json_t *n = json_array_get(nodes, i);
		const char *kind = json_string_value(json_array_get(n, 1));
		int k = kind ? tl_kind_from_name(kind) : -1;
		int64_t parent = at_int(n, 2, -2);

		if (!json_is_array(n) || k < 0 || parent < -1 || parent >= (int64_t)i) {
			buf_addf(err, "timeline node %zu is not [name, kind, parent < %zu, file, line]", i, i);
			return -1;
		}
		timeline_add_node(tl, (int32_t)parent, (enum tl_kind)k, at_str(tl, n, 0), at_str(tl, n, 3),
				  (int32_t)at_int(n, 4, 0));
	}
	nr = json_array_size(samples);
	for (i = 0; i < nr; i++) {
		json_t *s = json_array_get(samples, i);
		int64_t node = at_int(s, 3, -1);
		struct tl_sample *ts;

		if (!json_is_array(s) || node < 0 || node >= (int64_t)tl->nr_nodes) {
			buf_addf(err, "timeline sample %zu is not [t_us, wall_us, cpu_us, node]", i);
			return -1;
		}
		ALLOC_GROW(tl->samples, tl->nr_samples + 1, tl->alloc_samples);
		ts = &tl->samples[tl->nr_samples++];
		ts->t_us = at_int(s, 0, 0);
		ts->wall_us = at_int(s, 1, 0);
		ts->cpu_us = at_int(s, 2, UNKNOWN);
		ts->node = (int32_t)node;
		ts->wait_us = at_int(s, 4, 0);
		if (ts->wait_us < 0 || ts->wait_us > ts->wall_us)
			ts->wait_us = 0;
	}
	timeline_sum(tl);
	return 0;
}
