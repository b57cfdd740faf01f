/*
 * The grammar of one line of CPython's -X importtime output (DESIGN.md):
 *   import time: self [us] | cumulative | imported package
 *   import time: %9ld | %10ld | <2*depth spaces><name>
 *   import time: cached    | cached     | <name right-justified in 2*depth>
 * Two recognisers that agree on every line the fast one takes: it_row_parse
 * reads any line and says why a row is malformed; it_row_lex takes the
 * common row in one pass.  Neither keeps state, prints or allocates.
 */
#ifndef COLDSTART_IT_ROW_H
#define COLDSTART_IT_ROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IT_MARKER "import time:"
#define IT_MARKER_LEN (sizeof(IT_MARKER) - 1)
/* "import time: %9ld | %10ld | ": where a common row's indentation starts. */
#define IT_ROW_COLUMNS (IT_MARKER_LEN + 26)

/*
 * A line longer than this that is not a row is passed through in pieces, so
 * one endless line never holds more than this much memory; it_row_lex takes
 * no longer line.  The fuzzer builds with a small limit to reach that path.
 */
#ifndef IT_MAX_LINE
#define IT_MAX_LINE ((size_t)16 << 20)
#endif
_Static_assert(IT_MAX_LINE >= 2 * IT_MARKER_LEN, "IT_MAX_LINE too small");

/* A depth from a count of spaces, kept below the parser's markers. */
static inline uint32_t it_clamp_depth(size_t d)
{
	return d > UINT32_MAX - 2 ? UINT32_MAX - 2 : (uint32_t)d;
}

/* What it_row_parse found on one line. */
struct it_row {
	bool header;
	bool cached;
	bool clamped; /* a number did not fit in int64 */
	bool no_separator; /* no space after the last '|' */
	size_t prefix_len; /* bytes before IT_MARKER, passed through */
	int64_t self_us, cum_us;
	bool negative; /* a column was a negative number */
	uint32_t depth; /* normal rows */
	size_t indent; /* spaces between "| " and the name */
	const char *name;
	size_t name_len;
};

/*
 * Recognises a header or a row in line[0..len) (no newline, no CR).  Only the
 * first IT_MARKER on the line is considered: what precedes it is the target's
 * own text, glued on the same line.  Returns 1 for a row or header, 0 for a
 * line without IT_MARKER, -1 for a line with IT_MARKER that does not parse
 * (why is set to the reason).  Never warns: the parser decides.
 */
int it_row_parse(const char *line, size_t len, struct it_row *r, const char **why);

/* A row it_row_lex recognised: everything the parser needs to add it. */
struct it_fast_row {
	const char *name;
	uint32_t name_len;
	uint32_t depth;
	int64_t self_us, cum_us;
};

/*
 * The common row in one pass: "import time:" at the start of a line, both
 * numbers inside their columns (under 100 s), even indentation and a clean
 * name up to the newline.  Returns the line's length, newline included, or 0
 * to leave the line to it_row_parse, which reads every line this one takes the
 * same way (and the parser, which alone warns).  Only whole lines are taken, and
 * nothing past the newline is looked at, so chunking makes no difference.
 * The parser and the lexing thread of it_feed_from both call it.
 */
size_t it_row_lex(const char *p, const char *end, struct it_fast_row *rec);

#endif
