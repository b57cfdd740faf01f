/*
 * The formats `check` and `diff` write for CI besides text: Markdown (a
 * pull-request comment, GitHub's job summary) and GitHub Actions workflow
 * commands ("::error title=...::message", shown as annotations).
 */
#ifndef COLDSTART_CI_FORMAT_H
#define COLDSTART_CI_FORMAT_H

#include "args.h"
#include "util.h"

enum ci_format {
	CI_TEXT,
	CI_MARKDOWN,
	CI_GITHUB,
};

/* "text", "markdown" (or "md"), "github"; -1 with a message in err otherwise. */
int ci_format_parse(const char *s, enum ci_format *out, struct buf *err);
/* The option callbacks of check and diff: --format FMT (an enum ci_format), --markdown FILE (a path checked as an output). */
int ci_format_opt(const struct opt *opt, const char *v, struct buf *err);
int ci_markdown_opt(const struct opt *opt, const char *v, struct buf *err);
/*
 * One workflow command line: "::LEVEL title=TITLE::MESSAGE\n", LEVEL being
 * error, warning or notice; percent signs, CR, LF (and in the title ':' and
 * ',') escaped as the runner wants them.
 */
void ci_annotation(struct buf *out, const char *level, const char *title, const char *message);
/* s inside a Markdown table cell: '|' escaped, newlines as spaces. */
void ci_md_cell(struct buf *out, const char *s);
/*
 * Appends data to the file at path (created if missing), as GitHub's
 * $GITHUB_STEP_SUMMARY is written by every step in turn: all of data or,
 * on a failed write, none of it (outfile_append); -1 with err.
 */
int ci_append_file(const char *path, const char *data, size_t len, struct buf *err);

#endif
