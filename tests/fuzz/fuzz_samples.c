// corpus: tests/fixtures/samples
/*
 * libFuzzer target for the samples reader and the timeline built from it:
 * any input parses or is refused with a message, a built timeline's nodes
 * each come after their parent, its main thread's samples add up to its
 * span, and its JSON reads back to the same tree.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/profile.h"
#include "model/samples.h"
#include "model/timeline.h"
#include "ingest/timeline_build.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct samples_file sf;
	struct timeline tl, back;
	struct tl_cut cut = { .origin_ns = UNKNOWN, .end_ns = UNKNOWN, .end = TL_END_EXIT, .exit_ns = UNKNOWN };
	struct buf err = BUF_INIT, js = BUF_INIT;
	struct tl_split sp;
	struct tl_func f[8];
	size_t i;

	samples_init(&sf);
	if (samples_parse(&sf, (const char *)data, size, &err) < 0) {
		if (!err.len)
			abort();
		goto out;
	}
	for (i = 0; i < sf.nr_frames; i++)
		if (sf.frames[i].code >= sf.nr_codes)
			abort();
	timeline_init(&tl);
	if (size && (data[0] & 1))
		cut.end_ns = sf.start_ns + (int64_t)(data[size - 1]) * 100000;
	if (timeline_build(&tl, &sf, NULL, &cut, &err) == 0) {
		for (i = 0; i < tl.nr_nodes; i++)
			if (tl.nodes[i].parent >= (int32_t)i)
				abort();
		timeline_split(&tl, &sp);
		if (sp.startup_us + sp.import_us + sp.other_us + sp.shutdown_us != sp.total_us)
			abort();
		timeline_top_functions(&tl, false, f, 8);
		timeline_to_json(&tl, &js);
		timeline_init(&back);
		if (timeline_from_json(&back, js.buf, js.len, &err) < 0 || back.nr_nodes != tl.nr_nodes ||
		    back.nr_samples != tl.nr_samples) {
			fprintf(stderr, "round trip: %s (%zu/%zu nodes, %zu/%zu samples)\n", err.buf, back.nr_nodes,
				tl.nr_nodes, back.nr_samples, tl.nr_samples);
			abort();
		}
		timeline_release(&back);
	}
	timeline_release(&tl);
out:
	samples_release(&sf);
	buf_release(&err);
	buf_release(&js);
	return 0;
}
