/*
 * Streaming parser of `-X importtime` stderr: splits lines, reads each with
 * the row grammar (it_row.c), and builds the post-order rows into
 * per-process import trees with a stack of pending nodes.  it_feed_from lets
 * a second thread read and lex the stream (it_lexer.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/importtime.h"
#include "ingest/it_lexer.h"
#include "ingest/it_row.h"
#include "iset.h"
#include "parallel.h"

/* Warnings beyond this many are only counted, so junk input stays bounded. */
#define IT_MAX_WARNINGS 1000
/* Names quoted in warnings are cut to this many bytes. */
#define IT_QUOTE_MAX 80

/* A node printed but not yet adopted by a parent row. */
struct pending {
	int32_t node;
	uint32_t depth; /* the node's: adopt reads it here, not in the node */
};

/*
 * A cached row whose depth the rows after it still bound (see
 * attach_cached): the deepest level it can have so far, and whether it
 * begins a file read of the import machinery (one level deeper).
 */
struct undecided {
	int32_t node;
	uint32_t hi;
	bool step;
};

/* Where the rows before a cached one leave a run of the loader's `_io` rows. */
enum io_run { IO_NONE, IO_IO, IO_ZLIB };

/*
 * The names of a process's ordinary rows (the nodes that hold them), read
 * from its nodes only when a cached row repeats the bare name of the one
 * before it (see attach_cached), up to the nodes read so far: other rows
 * never pay for it.
 */
struct name_set {
	struct iset nodes; /* one node per name */
	size_t upto; /* the process's nodes before this one are in */
};

struct it_parser {
	struct run *run;
	/* Index of the current process in run->procs; the array may move. */
	size_t proc;
	bool has_proc;
	struct pending *stack;
	size_t nr_stack, alloc_stack;
	/*
	 * The import level the last placed row left (a row at depth d leaves
	 * d, a cached row at L leaves L), the cached rows after it whose level
	 * is still open, and how many of them the log could not decide.
	 */
	uint32_t level;
	struct undecided *group;
	size_t nr_group, alloc_group;
	enum io_run io_run;
	size_t cached, ambiguous;
	/* The last cached row printed bare: its node, else -1 (the row before if it is the node before). */
	int32_t bare_cached;
	struct name_set done;
	/* The start of a line whose newline has not arrived yet. */
	struct buf carry;
	/* The line in carry has passed MAX_LINE and lost its head. */
	bool overlong;
	long lineno;
	size_t rows, headers;
	struct it_warning *warnings;
	size_t nr_warnings, alloc_warnings;
	size_t dropped_warnings;
	bool finished;
};

static void add_warning(struct it_parser *ps, long line, const char *fmt, va_list ap)
{
	struct buf msg = BUF_INIT;

	buf_vaddf(&msg, fmt, ap);
	ALLOC_GROW(ps->warnings, ps->nr_warnings + 1, ps->alloc_warnings);
	ps->warnings[ps->nr_warnings].line = line;
	ps->warnings[ps->nr_warnings].msg = buf_detach(&msg, NULL);
	ps->nr_warnings++;
}

/* Records a warning about line (1-based); beyond the cap it is only counted. */
static void warn_at(struct it_parser *ps, long line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void warn_at(struct it_parser *ps, long line, const char *fmt, ...)
{
	va_list ap;

	if (ps->nr_warnings >= IT_MAX_WARNINGS) {
		ps->dropped_warnings++;
		return;
	}
	va_start(ap, fmt);
	add_warning(ps, line, fmt, ap);
	va_end(ap);
}

#define warn(ps, ...) warn_at((ps), (ps)->lineno, __VA_ARGS__)

static int quote_len(size_t len)
{
	return (int)(len > IT_QUOTE_MAX ? IT_QUOTE_MAX : len);
}

static void pass(struct buf *pt, const char *data, size_t len)
{
	if (pt && len)
		buf_add(pt, data, len);
}

static struct proc *cur_proc(struct it_parser *ps)
{
	return &ps->run->procs[ps->proc];
}

static inline void push_pending(struct it_parser *ps, int32_t node, uint32_t depth)
{
	if (ps->nr_stack == ps->alloc_stack)
		ALLOC_GROW(ps->stack, ps->nr_stack + 1, ps->alloc_stack);
	ps->stack[ps->nr_stack].node = node;
	ps->stack[ps->nr_stack].depth = depth;
	ps->nr_stack++;
}

static uint64_t node_name_hash(const void *ctx, int32_t i)
{
	return hash_str(node_name(ctx, i));
}

/* The slot of name's node in ns, or the empty slot where it would go. */
static size_t name_set_slot(const struct name_set *ns, const struct proc *pr, const char *name, size_t len)
{
	size_t k;

	for (k = hash_bytes(name, len) & (ns->nodes.cap - 1); ns->nodes.slot[k] >= 0;
	     k = (k + 1) & (ns->nodes.cap - 1)) {
		const char *t = node_name(pr, ns->nodes.slot[k]);

		if (!strncmp(t, name, len) && !t[len])
			break;
	}
	return k;
}

/* Whether the current process printed an ordinary row for name so far. */
static bool has_row(struct it_parser *ps, const char *name, size_t len)
{
	struct proc *pr = cur_proc(ps);
	struct name_set *ns = &ps->done;

	if (!ns->nodes.cap)
		iset_init(&ns->nodes, 64);
	for (; ns->upto < pr->nr_nodes; ns->upto++) {
		int32_t i = (int32_t)ns->upto;
		const char *nm = node_name(pr, i);
		size_t k;

		if (pr->nodes[i].flags & NODE_CACHED)
			continue;
		if (ns->nodes.used * 2 >= ns->nodes.cap)
			iset_grow(&ns->nodes, node_name_hash, pr);
		k = name_set_slot(ns, pr, nm, strlen(nm));
		if (ns->nodes.slot[k] < 0) {
			ns->nodes.slot[k] = i;
			ns->nodes.used++;
		}
	}
	return ns->nodes.slot[name_set_slot(ns, pr, name, len)] >= 0;
}

/* A node whose depth is known: a root at 0, else pending until its parent's row. */
static void place(struct it_parser *ps, int32_t node, uint32_t depth)
{
	struct proc *pr = cur_proc(ps);

	pr->nodes[node].depth = depth;
	if (depth == 0)
		proc_link_root(pr, node);
	else
		push_pending(ps, node, depth);
}

/*
 * Decides the undecided cached rows, now that the next row bounds them: it
 * is at most at level upper when the row arrives (an ordinary row at depth d
 * is printed at level d + 1; a cached row at its own level).  Each row's
 * bound is its own and that of every row after it, since levels only rise
 * between printed rows; within [level, bound] a row stays where the rows
 * before it left the level unless it begins a file read (see attach_cached).
 */
static void resolve_group(struct it_parser *ps, uint32_t upper)
{
	uint32_t start = ps->level, cur = start;
	size_t i;

	for (i = ps->nr_group; i-- > 0;) {
		if (ps->group[i].hi > upper)
			ps->group[i].hi = upper;
		upper = ps->group[i].hi;
	}
	for (i = 0; i < ps->nr_group; i++) {
		const struct undecided *u = &ps->group[i];
		uint32_t want = cur + (u->step ? 1 : 0);

		/* Open by the log alone: the level may be anything in [start, hi]. */
		if (start < u->hi)
			ps->ambiguous++;
		if (want > u->hi)
			want = u->hi;
		if (want < cur)
			want = cur;
		place(ps, u->node, want);
		cur = want;
	}
	ps->level = cur;
	ps->nr_group = 0;
}

/*
 * Ends the current process: decides its last cached rows (no import that
 * started after the last row can have ended, or it would have printed one,
 * so they stay at the level that row left), says how many cached rows the
 * log could not place by itself, and links every pending node as a root, in
 * stream order.  A pending node lost its parent's row, which is worth one
 * warning saying why.
 */
static void flush_pending(struct it_parser *ps, const char *why)
{
	struct proc *pr;
	size_t i;

	if (!ps->has_proc)
		return;
	resolve_group(ps, ps->level);
	if (ps->ambiguous)
		warn_at(ps, 0,
			"%zu of %zu cached rows could sit at more than one depth (a name as wide as "
			"its field carries no padding): placed by rule",
			ps->ambiguous, ps->cached);
	pr = cur_proc(ps);
	for (i = 0; i < ps->nr_stack; i++)
		proc_link_root(pr, ps->stack[i].node);
	if (ps->nr_stack)
		warn(ps, "%s: %zu import%s without a parent row linked as root%s", why, ps->nr_stack,
		     ps->nr_stack == 1 ? "" : "s", ps->nr_stack == 1 ? "" : "s");
	ps->nr_stack = 0;
	ps->level = 0;
	ps->io_run = IO_NONE;
	ps->cached = ps->ambiguous = 0;
	ps->bare_cached = -1;
	iset_release(&ps->done.nodes);
	ps->done.upto = 0;
}

static void start_proc(struct it_parser *ps)
{
	run_add_proc(ps->run);
	ps->proc = ps->run->nr_procs - 1;
	ps->has_proc = true;
	ps->bare_cached = -1;
}

/*
 * Adopts pending nodes for a row at depth d: scanning down from the top of
 * the stack, a node at depth d+1 is a child; a node deeper than that lost its
 * own parent's row and is attached here with a warning; a node at depth <= d
 * ends the scan.  The adopted nodes are linked in stream order, which is
 * import order.
 */
static void adopt(struct it_parser *ps, int32_t parent, uint32_t d)
{
	struct proc *pr = cur_proc(ps);
	size_t k = ps->nr_stack, i;

	while (k > 0 && ps->stack[k - 1].depth > d)
		k--;
	for (i = k; i < ps->nr_stack; i++) {
		struct pending *e = &ps->stack[i];
		struct imp_node *n = &pr->nodes[e->node];

		if (n->depth > d + 1) {
			const char *cn = node_name(pr, e->node), *pn = node_name(pr, parent);

			warn(ps, "'%.*s' at depth %u has no parent row at depth %u; attached to '%.*s'",
			     quote_len(strlen(cn)), cn, n->depth, n->depth - 1, quote_len(strlen(pn)), pn);
		}
		proc_link_child(pr, parent, e->node);
	}
	ps->nr_stack = k;
}

/*
 * Places a cached row (3.14 -X importtime=2).  import.c prints it with
 * "%*s" in a field 2 * L wide, L being import_level, the number of imports
 * open at that moment: the row is a leaf child of the innermost open import,
 * at depth L.  A name shorter than its field is padded, and the padding gives
 * L.  A name as wide or wider is printed bare: L can be anything up to
 * len(name) / 2.  The rows around bound it further: the level only falls
 * when an ordinary row is printed (from d + 1 to d), and rises silently as
 * imports start, so L lies between the level the previous row left and the
 * level of the next row (d + 1 for an ordinary row at depth d).  Rows the
 * bounds fix are exact; the others (about half of the cached rows of a real
 * log) wait for the next ordinary row and are then placed by one rule: they
 * stay at the level the rows before them left, except that the import
 * machinery's own cached rows mark where an import began.  3.14's loaders
 * read a module's file with _io.open_code, which imports _io and so prints
 * a cached "_io" row (zipimport: "_io" then "zlib", once or twice) inside
 * the import being loaded, before its body: the first of such a run is one
 * level deeper than the row before it.  And a bare name repeated at once,
 * of a module that has printed no row yet (it is still being imported), is
 * `from pkg import sub` or `from . import sub` inside pkg: the first is the
 * importer's, the second importlib's import of the initializing parent
 * inside the import of pkg.sub (_find_and_load_unlocked), one level deeper.
 *
 * Where an import begins is not in the log: it prints nothing, and a module
 * not read from a file (frozen, built in, served by a finder of its own, or
 * loaded by importlib.import_module, which import.c does not time) marks it
 * with no "_io".  Two programs can print the same rows with a cached row
 * one level apart (tests/fixtures/importtime/py3.14-importtime2-twin-*.log),
 * so no rule places every row.  Checked against what CPython knew as it
 * printed each row (py3.14*.depths: its level, read from its memory, and
 * the import it was inside of, from a hook on its imports), the rule puts
 * three in four of the rows the log leaves open under CPython's parent, so
 * seven in eight of all cached rows; the rest sit within what the log
 * allows, and a warning says how many rows were open.
 */
static void attach_cached(struct it_parser *ps, const struct it_row *r)
{
	struct proc *pr = cur_proc(ps);
	size_t width = r->indent + r->name_len;
	int32_t prev = ps->bare_cached;
	int32_t node = proc_add_node(pr, r->name, r->name_len, 0, 0, 0);
	bool io = r->name_len == 3 && !memcmp(r->name, "_io", 3);
	bool step = io && ps->io_run == IO_NONE;
	struct undecided *u;

	pr->nodes[node].flags |= NODE_CACHED;
	if (!r->indent && prev >= 0 && prev == node - 1 && !strcmp(node_name(pr, prev), node_name(pr, node)) &&
	    !has_row(ps, r->name, r->name_len))
		step = true;
	ps->bare_cached = r->indent ? -1 : node;
	ps->cached++;
	ps->io_run = io									      ? IO_IO
		     : r->name_len == 4 && !memcmp(r->name, "zlib", 4) && ps->io_run == IO_IO ? IO_ZLIB
											      : IO_NONE;
	if (r->indent && width % 2 == 0) {
		uint32_t level = it_clamp_depth(width / 2);

		resolve_group(ps, level);
		place(ps, node, level);
		ps->level = level;
		return;
	}
	if (r->indent)
		warn(ps, "cached row for '%.*s' has an odd field width %zu", quote_len(r->name_len), r->name, width);
	ALLOC_GROW(ps->group, ps->nr_group + 1, ps->alloc_group);
	u = &ps->group[ps->nr_group++];
	u->node = node;
	u->hi = it_clamp_depth(width / 2);
	u->step = step;
}

/* Adds a row that is not cached to the current process (it exists). */
static void add_row(struct it_parser *ps, const char *name, size_t len, uint32_t depth, int64_t self_us, int64_t cum_us,
		    uint32_t flags)
{
	struct proc *pr = cur_proc(ps);
	int32_t node = proc_add_node(pr, name, len, depth, self_us, cum_us);

	pr->nodes[node].flags |= flags;
	if (ps->nr_group)
		resolve_group(ps, depth + 1);
	adopt(ps, node, depth);
	if (depth == 0)
		proc_link_root(pr, node);
	else
		push_pending(ps, node, depth);
	ps->level = depth;
	ps->io_run = IO_NONE;
}

static void handle_row(struct it_parser *ps, const struct it_row *r)
{
	struct proc *pr;

	if (r->header) {
		ps->headers++;
		if (ps->has_proc) {
			/* Only rows of imports whose parent row never came are left. */
			resolve_group(ps, ps->level);
			if (ps->nr_stack)
				warn(ps, "a new process started while the previous one was "
					 "inside an import: process trees interleave");
			flush_pending(ps, "previous process interrupted");
		}
		start_proc(ps);
		return;
	}

	if (!ps->has_proc) {
		warn(ps, "row before any header: the log was cut at the top");
		start_proc(ps);
	}
	pr = cur_proc(ps);
	if (pr->nr_nodes >= INT32_MAX - 1) {
		warn(ps, "too many rows in one process: row dropped");
		return;
	}
	ps->rows++;
	if (r->clamped)
		warn(ps, "number too large for '%.*s': clamped to %lld", quote_len(r->name_len), r->name,
		     (long long)INT64_MAX);
	if (r->negative)
		warn(ps, "negative time for '%.*s'", quote_len(r->name_len), r->name);
	if (r->no_separator)
		warn(ps, "no space after the last '|' before '%.*s'", quote_len(r->name_len), r->name);

	if (r->cached) {
		attach_cached(ps, r);
		return;
	}
	if (r->indent % 2)
		warn(ps, "odd indentation (%zu spaces) before '%.*s'", r->indent, quote_len(r->name_len), r->name);
	add_row(ps, r->name, r->name_len, r->depth, r->self_us, r->cum_us, r->negative ? NODE_NEGATIVE : 0);
}

/* Whether the parser is in the state it_row_lex's rows may be added in. */
static bool fast_ok(struct it_parser *ps)
{
	return ps->has_proc && !ps->carry.len && !ps->overlong && cur_proc(ps)->nr_nodes < INT32_MAX - 1;
}

static void add_fast(struct it_parser *ps, const struct it_fast_row *rec)
{
	ps->lineno++;
	ps->rows++;
	add_row(ps, rec->name, rec->name_len, rec->depth, rec->self_us, rec->cum_us, 0);
}

/* it_row_lex on the parser: adds the row and returns its length, or 0. */
static size_t fast_row(struct it_parser *ps, const char *p, const char *end)
{
	struct it_fast_row rec;
	size_t n;

	if (!fast_ok(ps) || !(n = it_row_lex(p, end, &rec)))
		return 0;
	add_fast(ps, &rec);
	return n;
}

/*
 * Handles one complete line, newline included when it had one.  Rows are
 * consumed; the text glued before a row and every other line go to pt.
 */
static void handle_line(struct it_parser *ps, const char *line, size_t len, struct buf *pt)
{
	size_t body = len;
	const char *why = NULL;
	struct it_row r;
	int ret;

	ps->lineno++;
	if (body && line[body - 1] == '\n')
		body--;
	if (body && line[body - 1] == '\r')
		body--;
	ret = it_row_parse(line, body, &r, &why);
	if (ret <= 0) {
		if (ret < 0)
			warn(ps, "malformed importtime row passed through: %s", why);
		pass(pt, line, len);
		return;
	}
	pass(pt, line, r.prefix_len);
	handle_row(ps, &r);
}

/*
 * carry holds more than IT_MAX_LINE bytes of one line.  Keeps only what may
 * still become a row, the text from the last marker on (unless that text is
 * itself too long to be a row) or the last IT_MARKER_LEN-1 bytes (a marker may
 * be split across chunks), and passes the rest through.
 */
static void trim_carry(struct it_parser *ps, struct buf *pt)
{
	const char *s = ps->carry.buf, *m, *last = NULL;
	size_t len = ps->carry.len, keep_from;

	if (!ps->overlong)
		warn_at(ps, ps->lineno + 1, "line longer than %zu bytes passed through in pieces", IT_MAX_LINE);
	ps->overlong = true;
	for (m = s; (m = memmem(m, len - (size_t)(m - s), IT_MARKER, IT_MARKER_LEN)); m++)
		last = m;
	if (last && last > s)
		keep_from = (size_t)(last - s);
	else
		keep_from = len - (IT_MARKER_LEN - 1);
	pass(pt, s, keep_from);
	memmove(ps->carry.buf, s + keep_from, len - keep_from);
	buf_setlen(&ps->carry, len - keep_from);
}

/* Appends to carry, trimming whenever the line outgrows the limit. */
static void carry_add(struct it_parser *ps, const char *data, size_t len, struct buf *pt)
{
	while (len) {
		size_t room = IT_MAX_LINE + 1 - ps->carry.len;
		size_t n = len < room ? len : room;

		buf_add(&ps->carry, data, n);
		data += n;
		len -= n;
		if (ps->carry.len > IT_MAX_LINE)
			trim_carry(ps, pt);
	}
}

static void finish_carry(struct it_parser *ps, struct buf *pt)
{
	handle_line(ps, ps->carry.buf, ps->carry.len, pt);
	buf_reset(&ps->carry);
	ps->overlong = false;
}

struct it_parser *it_parser_new(struct run *run)
{
	struct it_parser *ps = xcalloc(1, sizeof(*ps));

	ps->run = run;
	ps->bare_cached = -1;
	buf_init(&ps->carry, 0);
	return ps;
}

void it_feed(struct it_parser *ps, const char *data, size_t len, struct buf *passthrough)
{
	const char *p = data, *end = data + len;

	if (ps->finished)
		BUG("it_feed after it_finish");
	while (p < end) {
		const char *nl;
		size_t n;

		if ((n = fast_row(ps, p, end))) {
			p += n;
			continue;
		}
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			carry_add(ps, p, (size_t)(end - p), passthrough);
			return;
		}
		n = (size_t)(nl + 1 - p);
		/*
		 * A line that fits is parsed in place; anything else goes
		 * through carry, which trims at the same bytes however the
		 * input was chunked.
		 */
		if (!ps->carry.len && !ps->overlong && n <= IT_MAX_LINE) {
			handle_line(ps, p, n, passthrough);
		} else {
			carry_add(ps, p, n, passthrough);
			finish_carry(ps, passthrough);
		}
		p = nl + 1;
	}
}

void it_finish(struct it_parser *ps, struct buf *passthrough)
{
	if (ps->finished)
		return;
	if (ps->carry.len || ps->overlong)
		finish_carry(ps, passthrough);
	flush_pending(ps, "process ended inside an import");
	if (ps->dropped_warnings) {
		struct buf msg = BUF_INIT;

		buf_addf(&msg, "%zu more warnings not recorded", ps->dropped_warnings);
		ALLOC_GROW(ps->warnings, ps->nr_warnings + 1, ps->alloc_warnings);
		ps->warnings[ps->nr_warnings].line = 0;
		ps->warnings[ps->nr_warnings].msg = buf_detach(&msg, NULL);
		ps->nr_warnings++;
	}
	ps->finished = true;
}

/* it_feed_from on the calling thread alone. */
static int feed_plain(struct it_parser *ps, it_read_fn read, void *ctx, struct buf *pt)
{
	char *chunk = xmalloc(IT_LEX_CHUNK);
	long n;

	while ((n = read(ctx, chunk, IT_LEX_CHUNK)) > 0)
		it_feed(ps, chunk, (size_t)n, pt);
	free(chunk);
	return n < 0 ? -1 : 0;
}

int it_feed_from(struct it_parser *ps, it_read_fn read, void *ctx, struct buf *pt)
{
	const struct it_lex_slot *sl;
	struct it_lexer *lx;
	size_t i;

	if (parallel_cpus() < 2 || !(lx = it_lexer_start(read, ctx)))
		return feed_plain(ps, read, ctx, pt);
	while ((sl = it_lexer_next(lx))) {
		for (i = 0; i < sl->nr_items; i++) {
			const struct it_lex_item *it = &sl->items[i];
			const char *line = sl->buf + it->off;

			if (it->name_len && fast_ok(ps)) {
				struct it_fast_row rec = { line + it->name_off, it->name_len,
							   it_clamp_depth((it->name_off - IT_ROW_COLUMNS) / 2),
							   it->self_us, it->cum_us };

				add_fast(ps, &rec);
			} else {
				it_feed(ps, line, it->len, pt);
			}
		}
		it_lexer_done(lx);
	}
	return it_lexer_finish(lx);
}

const struct it_warning *it_warnings(const struct it_parser *ps, size_t *nr)
{
	*nr = ps->nr_warnings;
	return ps->warnings;
}

size_t it_rows(const struct it_parser *ps)
{
	return ps->rows;
}

size_t it_headers(const struct it_parser *ps)
{
	return ps->headers;
}

void it_parser_free(struct it_parser *ps)
{
	size_t i;

	if (!ps)
		return;
	for (i = 0; i < ps->nr_warnings; i++)
		free(ps->warnings[i].msg);
	free(ps->warnings);
	free(ps->stack);
	free(ps->group);
	iset_release(&ps->done.nodes);
	buf_release(&ps->carry);
	free(ps);
}

void it_cached_row(struct buf *out, uint32_t level, const char *name)
{
	buf_addf(out, "import time: cached    | cached     | %*s\n", level > INT_MAX / 2 ? INT_MAX : (int)(2 * level),
		 name);
}

void it_parse_buffer(struct profile *p, struct run *run, const char *text, size_t len)
{
	struct it_parser *ps = it_parser_new(run);
	const struct it_warning *w;
	size_t nr, i;

	it_feed(ps, text, len, NULL);
	it_finish(ps, NULL);
	w = it_warnings(ps, &nr);
	for (i = 0; i < nr; i++)
		profile_add_warning(p, w[i].line, "%s", w[i].msg);
	it_parser_free(ps);
}
