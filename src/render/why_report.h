/*
 * `coldstart why`'s answer, rendered: text fitted to a width (the
 * terminal's, fit.h), or JSON (the format is in docs/why.md).  Writes into a buffer;
 * never prints.
 */
#ifndef COLDSTART_WHY_REPORT_H
#define COLDSTART_WHY_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "model/profile.h"
#include "analysis/why.h"
#include "analysis/why_scan.h"

/* One process's answer. */
struct why_proc_answer {
	size_t index; /* in the run */
	int parent; /* the index of the process it is a fork of, -1 */
	bool inherited; /* the module came loaded from that parent */
	struct why_answer a;
};

/* Everything the answer shows; all borrowed. */
struct why_report {
	const char *module;
	const char *profile_name; /* as the user named the file */
	const struct profile *p;
	const struct run *r;
	size_t run_index;
	const struct why_graph *graphs; /* one per process of r */
	const struct why_proc_answer *answers; /* the processes answered, in the run's order */
	size_t nr_answers;
	const struct why_scan_result *res;
	const char *scan_error; /* why no statements were read; NULL when they were or with no_source */
	bool no_source; /* --no-source: none were asked for */
	bool functions; /* --functions */
	int top; /* rows per list, 0 = all */
	size_t width; /* of the text: fit_width(), or WHY_WIDE */
};

/* The text width of `why --wide`: nothing is shortened or wrapped. */
#define WHY_WIDE ((size_t)1 << 20)

void why_report_text(const struct why_report *w, struct buf *out);
void why_report_json(const struct why_report *w, struct buf *out);

#endif
