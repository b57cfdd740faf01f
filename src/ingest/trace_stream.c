/*
 * The shared stderr of a traced target, attributed line by line: rows to the
 * process whose trace recorded the end of that import just before, start-up
 * rows to the interpreter whose importtime header opened them, everything
 * else straight through (trace_stream.h).
 */
#include "ingest/trace_stream.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ingest/importtime.h"
#include "ingest/trace_merge.h"
#include "ingest/trace_rows.h"
#include "ingest/trace_window.h"

#define ROW_MARK "import time:"
#define READ_PAGE 4096

/* "  123" or "cached" up to the next '|'; returns the text after the '|', or NULL. */
static const char *lex_column(const char *p, const char *end, int64_t *v, bool *cached)
{
	bool neg = false;
	int64_t n = 0;
	int digits = 0;

	while (p < end && *p == ' ')
		p++;
	if (end - p >= 6 && !memcmp(p, "cached", 6)) {
		*cached = true;
		p += 6;
	} else {
		if (p < end && *p == '-') {
			neg = true;
			p++;
		}
		while (p < end && *p >= '0' && *p <= '9' && digits < 18) {
			n = n * 10 + (*p++ - '0');
			digits++;
		}
		if (!digits)
			return NULL;
		*v = neg ? -n : n;
	}
	while (p < end && *p == ' ')
		p++;
	return p < end && *p == '|' ? p + 1 : NULL;
}

/*
 * Whether text (from "import time:" to the end of the line) is importtime's
 * header or one of its rows: "import time: %9ld | %10ld | <2*depth spaces>name".
 * A cached row (3.14 -X importtime=2) has its name right-justified in a field
 * of 2 * level: its depth is that level when it is padded, 0 when the name
 * fills the field (the parser bounds it then; see it_cached_row).
 */
static bool lex_row(const char *text, const char *end, struct row_text *rt)
{
	static const char header[] = "self [us] | cumulative | imported package";
	const char *p = text + strlen(ROW_MARK), *q;
	bool cached = false;

	memset(rt, 0, sizeof(*rt));
	while (p < end && *p == ' ')
		p++;
	if ((size_t)(end - p) >= strlen(header) && !memcmp(p, header, strlen(header))) {
		q = p + strlen(header);
		while (q < end && (*q == ' ' || *q == '\r'))
			q++;
		rt->header = q == end;
		return rt->header;
	}
	p = lex_column(p, end, &rt->self_us, &cached);
	if (!p)
		return false;
	p = lex_column(p, end, &rt->cum_us, &cached);
	if (!p || p >= end || *p != ' ')
		return false;
	p++;
	for (q = p; q < end && *q == ' '; q++)
		;
	rt->cached = cached;
	while (end > q && (end[-1] == '\r' || end[-1] == ' '))
		end--;
	if (q == end || memchr(q, ' ', (size_t)(end - q)))
		return false;
	rt->name = q;
	rt->name_len = (size_t)(end - q);
	rt->depth = (uint32_t)(((size_t)(q - p) + (cached && q > p ? rt->name_len : 0)) / 2);
	return true;
}

static uint64_t pend_hash_at(const void *ctx, int32_t k)
{
	return hash_str(pend_name(ctx, k));
}

/* Appends pend entry k to the chain of its name. */
static void pend_link(struct trace_stream *s, int32_t k)
{
	struct iset *set = &s->pend_names;
	const char *nm = pend_name(s, k);
	size_t slot;
	int32_t first;

	if (!set->cap)
		iset_init(set, 1024);
	else if (set->used * 2 >= set->cap)
		iset_grow(set, pend_hash_at, s);
	slot = ts_pend_slot(s, nm, strlen(nm));
	first = set->slot[slot];
	s->pend[k].next = -1;
	if (first < 0) {
		set->slot[slot] = k;
		set->used++;
		s->pend[k].last = k;
	} else {
		s->pend[s->pend[first].last].next = k;
		s->pend[first].last = k;
	}
}

/* Puts the imports a trace finished since the last call in the pending map. */
static void index_done(struct trace_stream *s, size_t li)
{
	struct live *lv = &s->lives[li];

	if (lv->tp.nr_done > lv->alloc_matched) {
		size_t old = lv->alloc_matched;

		lv->alloc_matched = lv->tp.nr_done * 2;
		lv->matched = xrealloc(lv->matched, lv->alloc_matched * sizeof(bool));
		memset(lv->matched + old, 0, (lv->alloc_matched - old) * sizeof(bool));
	}
	for (; lv->indexed < lv->tp.nr_done; lv->indexed++) {
		ALLOC_GROW(s->pend, s->nr_pend + 1, s->alloc_pend);
		s->pend[s->nr_pend].live = (uint32_t)li;
		s->pend[s->nr_pend].done = (uint32_t)lv->indexed;
		s->pend[s->nr_pend].seq = s->seq;
		s->nr_pend++;
		pend_link(s, (int32_t)(s->nr_pend - 1));
	}
}

/*
 * Reads what the process wrote since the last read.  The file is the
 * writer's mapping, its tail not yet written (a hole): reading into it
 * would make the kernel lock and fill pages the writer is about to fault
 * in, so the writer's next records wait on a reader a loaded machine may
 * have descheduled (measured: milliseconds added to one import).  So reads
 * stop at the page holding the first zero byte, a page at a time, with
 * readahead off for this descriptor.
 */
static void read_live(struct trace_stream *s, size_t li)
{
	struct live *lv = &s->lives[li];
	char chunk[READ_PAGE];
	struct buf err = BUF_INIT;

	while (lv->fd >= 0 && !lv->bad) {
		off_t at = lseek(lv->fd, 0, SEEK_CUR);
		size_t want = READ_PAGE - (at > 0 ? (size_t)(at % READ_PAGE) : 0);
		ssize_t n = read(lv->fd, chunk, want);
		const char *nul;
		long used;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		nul = memchr(chunk, '\0', (size_t)n);
		buf_add(&lv->pending, chunk, nul ? (size_t)(nul - chunk) : (size_t)n);
		used = trace_proc_feed(&lv->tp, lv->pending.buf, lv->pending.len, &err);
		if (used < 0) {
			lv->bad = true;
			break;
		}
		if (used) {
			memmove(lv->pending.buf, lv->pending.buf + used, lv->pending.len - (size_t)used);
			buf_setlen(&lv->pending, lv->pending.len - (size_t)used);
		}
		if (nul) {
			/*
			 * The mapped file's zero tail: the rest is not written yet.
			 * Read again from the first zero byte next time.
			 */
			lseek(lv->fd, -(off_t)(n - (nul - chunk)), SEEK_CUR);
			break;
		}
	}
	buf_release(&err);
	if (!lv->bad)
		index_done(s, li);
	if (!lv->bad && lv->tp.stopped)
		s->stopped = (long)li;
}

static bool known_file(const struct trace_stream *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nr_lives; i++)
		if (!strcmp(s->lives[i].file, name))
			return true;
	return false;
}

/* New trace files, and what every process wrote since the last look. */
static void refresh(struct trace_stream *s)
{
	DIR *d = opendir(s->dir);
	struct dirent *de;
	size_t i;

	while (d && (de = readdir(d))) {
		struct buf path = BUF_INIT;
		struct live *lv;

		if (!ends_with(de->d_name, ".trace") || known_file(s, de->d_name))
			continue;
		ALLOC_GROW(s->lives, s->nr_lives + 1, s->alloc_lives);
		lv = &s->lives[s->nr_lives++];
		memset(lv, 0, sizeof(*lv));
		lv->file = xstrdup(de->d_name);
		lv->window = -1;
		buf_init(&lv->pending, 0);
		trace_proc_init(&lv->tp);
		buf_addf(&path, "%s/%s", s->dir, de->d_name);
		lv->fd = open(path.buf, O_RDONLY | O_CLOEXEC);
		lv->bad = lv->fd < 0;
		if (lv->fd >= 0)
			posix_fadvise(lv->fd, 0, 0, POSIX_FADV_RANDOM);
		buf_release(&path);
		s->seen = xrealloc(s->seen, st_mult(s->alloc_lives, sizeof(*s->seen)));
		s->seen[s->nr_lives - 1] = 0;
	}
	if (d)
		closedir(d);
	for (i = 0; i < s->nr_lives; i++)
		read_live(s, i);
	s->refreshed = true;
}

/*
 * A row is printed right after the import's end is recorded, so once a
 * thread's later import has its row, its earlier ones that have none never
 * will (importlib.import_module() loads, failures inside it): they must not
 * take another process's row of the same name.
 */
static void retire_before(struct live *lv, size_t done)
{
	long tid = lv->tp.done[done].tid;
	size_t k;

	for (k = done; k > 0; k--) {
		if (lv->matched[k - 1])
			break;
		if (lv->tp.done[k - 1].tid == tid)
			lv->matched[k - 1] = true;
	}
}

/* Whether a row's cumulative can be the tracer's duration of the same import (importtime's clock is outside). */
static bool plausible(int64_t row_us, int64_t trace_us)
{
	int64_t slack = trace_us / 20 > 50 ? trace_us / 20 : 50;

	return row_us >= trace_us - 2 && row_us <= trace_us + slack;
}

/*
 * Whether taking import done's row now would retire earlier imports of its
 * thread that have none yet (retire_before): the row would come before
 * theirs, out of the order the thread prints its rows in.
 */
static bool out_of_order(const struct live *lv, size_t done)
{
	long tid = lv->tp.done[done].tid;
	size_t k;

	for (k = done; k > 0 && !lv->matched[k - 1]; k--)
		if (lv->tp.done[k - 1].tid == tid)
			return true;
	return false;
}

/*
 * The finished import of a traced process this row was printed for: among
 * the processes whose earliest unmatched import of that name is waiting,
 * the one whose duration is closest to the row's (two forked workers import
 * the same modules at the same time; their durations differ).  Durations
 * within the slack of each other (plausible) do not tell two such workers
 * apart, their order does: a thread prints its rows in the order its imports
 * finish, so of those, one whose earlier imports all have their rows goes
 * first; taking the other's would retire the earlier imports whose rows are
 * still on their way, and lose them.  While an interpreter is starting, its
 * start-up rows may carry the same names as imports other processes are
 * finishing: then only a duration that can be the same import's counts.
 */
static bool match_row(struct trace_stream *s, const struct row_text *rt, bool strict, long *live_out, size_t *done_out)
{
	int64_t best_diff = INT64_MAX, in_order_diff = INT64_MAX;
	long best = -1, in_order = -1;
	int32_t k;

	s->stamp++;
	for (k = ts_pend_first(s, rt->name, rt->name_len); k >= 0; k = s->pend[k].next) {
		const struct pend *e = &s->pend[k];
		struct live *lv = &s->lives[e->live];
		const struct trace_done *d = &lv->tp.done[e->done];
		int64_t diff;

		if (lv->matched[e->done] || s->seen[e->live] == s->stamp)
			continue;
		s->seen[e->live] = s->stamp; /* only a process's earliest waiting import counts */
		if (strict && (d->node < 0 || !plausible(rt->cum_us, d->cum_us)))
			continue;
		diff = d->node < 0 ? INT64_MAX / 2 : llabs(rt->cum_us - d->cum_us);
		if (diff < best_diff) {
			best_diff = diff;
			best = k;
		}
		if (d->node >= 0 && diff < in_order_diff && plausible(rt->cum_us, d->cum_us) &&
		    !out_of_order(lv, e->done)) {
			in_order_diff = diff;
			in_order = k;
		}
	}
	if (in_order >= 0)
		best = in_order;
	if (best < 0)
		return false;
	*live_out = (long)s->pend[best].live;
	*done_out = s->pend[best].done;
	s->lives[*live_out].matched[*done_out] = true;
	retire_before(&s->lives[*live_out], *done_out);
	return true;
}

/* Returns whether the row was taken out of the stream. */
static bool take_row(struct trace_stream *s, const struct row_text *rt)
{
	long li;
	size_t done, row;

	if (rt->header) {
		window_open(s);
		return true;
	}
	if (!rt->cached) {
		if (!s->refreshed)
			refresh(s);
		if (match_row(s, rt, windows_starting(s), &li, &done)) {
			struct live *lv = &s->lives[li];

			row = ts_add_row(s, rt);
			s->rows[row].fork_ghost = lv->tp.done[done].node < 0;
			s->rows[row].tnode = lv->tp.done[done].node;
			rowlist_add(&lv->rows, row);
			window_matched(s, li, row);
			s->last_live = li;
			return true;
		}
	}
	/*
	 * After a tracer stopped recording (a full file system), the imports
	 * its process finishes have no record: their rows are its own, as an
	 * untraced interpreter's are, unless an interpreter is starting.
	 */
	if (s->stopped >= 0 && !windows_starting(s)) {
		rowlist_add(&s->lives[s->stopped].rows, ts_add_row(s, rt));
		s->last_live = s->stopped;
		return true;
	}
	if (window_take(s, rt))
		return true;
	if (rt->cached && s->last_live >= 0) {
		rowlist_add(&s->lives[s->last_live].rows, ts_add_row(s, rt));
		return true;
	}
	return false;
}

static void take_line(struct trace_stream *s, const char *text, size_t len, bool newline, struct buf *pass)
{
	const char *mark = len >= strlen(ROW_MARK) ? memmem(text, len, ROW_MARK, strlen(ROW_MARK)) : NULL;
	struct row_text rt;

	s->seq++;
	if (mark && lex_row(mark, text + len, &rt) && take_row(s, &rt)) {
		/* A prefix glued before the row is the target's own output. */
		buf_add(pass, text, (size_t)(mark - text));
		return;
	}
	buf_add(pass, text, len);
	if (newline)
		buf_addch(pass, '\n');
}

struct trace_stream *trace_stream_new(const char *dir)
{
	struct trace_stream *s = xcalloc(1, sizeof(*s));

	s->dir = dir;
	buf_init(&s->names, 0);
	buf_addch(&s->names, '\0');
	buf_init(&s->line, 0);
	s->last_live = -1;
	s->untraced = -1;
	s->stopped = -1;
	return s;
}

void trace_stream_feed(struct trace_stream *s, const char *data, size_t len, struct buf *pass)
{
	const char *p = data, *end = data + len;

	s->refreshed = false;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl) {
			buf_add(&s->line, p, (size_t)(end - p));
			break;
		}
		if (s->line.len) {
			buf_add(&s->line, p, (size_t)(nl - p));
			take_line(s, s->line.buf, s->line.len, true, pass);
			buf_reset(&s->line);
		} else {
			take_line(s, p, (size_t)(nl - p), true, pass);
		}
		p = nl + 1;
	}
}

/*
 * While an interpreter starts, a row is taken for a trace's import only when
 * its cumulative can be that import's duration (match_row), and nothing bounds
 * the time between the tracer's last clock read and importtime's: the record's
 * write, for a failed import the exception's way back, and on a loaded machine
 * a preemption anywhere in them.  A row made longer than the slack by that
 * went to the open start-up window, of its own process, whose trace kept the
 * import without a row (the failed sitecustomize or usercustomize probe shown
 * twice).  After the stream, a root import of a trace (one that started inside
 * the start-up, after the tracer) that no row was printed for takes the first
 * row of its name in its own window that came after its end was read and is
 * not shorter than it.  A row printed before the tracer started cannot be it:
 * that import ran before, and the start-up imports nothing twice but a
 * module dropped from sys.modules (the bootstrap's own name, whose probe
 * prints its row first).
 */
static void pair_late_rows(struct trace_stream *s)
{
	size_t i, k;

	for (i = 0; i < s->nr_pend; i++) {
		const struct pend *e = &s->pend[i];
		struct live *lv = &s->lives[e->live];
		const struct trace_done *d = &lv->tp.done[e->done];
		const struct window *w;
		const char *nm;
		bool has_row = false;

		if (lv->bad || lv->window < 0 || d->node < 0 || d->depth)
			continue;
		w = &s->wins[lv->window];
		if (w->dropped || w->live != (long)e->live)
			continue;
		for (k = 0; k < lv->rows.nr && !has_row; k++)
			has_row = s->rows[lv->rows.v[k]].tnode == d->node;
		for (k = 0; k < w->rows.nr && !has_row; k++)
			has_row = s->rows[w->rows.v[k]].tnode == d->node;
		if (has_row)
			continue;
		nm = proc_str(&lv->tp.proc, d->name);
		for (k = 0; k < w->rows.nr; k++) {
			struct srow *r = &s->rows[w->rows.v[k]];

			if (r->tnode < 0 && !r->cached && r->seq >= e->seq && r->cum_us >= d->cum_us - 2 &&
			    !strcmp(row_name(s, w->rows.v[k]), nm)) {
				r->tnode = d->node;
				break;
			}
		}
	}
}

void trace_stream_end(struct trace_stream *s, struct buf *pass)
{
	struct buf err = BUF_INIT;
	size_t i;

	if (s->line.len) {
		take_line(s, s->line.buf, s->line.len, false, pass);
		buf_reset(&s->line);
	}
	refresh(s);
	for (i = 0; i < s->nr_lives; i++) {
		struct live *lv = &s->lives[i];

		if (lv->fd >= 0)
			close(lv->fd);
		lv->fd = -1;
		if (!lv->bad && trace_proc_finish(&lv->tp, &err) < 0)
			lv->bad = true;
		buf_reset(&err);
	}
	windows_end(s, pass);
	pair_late_rows(s);
	buf_release(&err);
}

/*
 * Feeds rows (stream order) to a parser of their own: the importtime tree of
 * one process, whose node i is the i-th row fed; match (may be NULL) gets
 * each node's trace node.
 */
static void rows_to_proc(struct trace_stream *s, struct profile *p, const size_t *rows, size_t nr, long depth_shift,
			 const char *who, struct proc *out, int32_t **match)
{
	struct run scratch;
	struct it_parser *ps;
	struct buf text = BUF_INIT;
	const struct it_warning *w;
	size_t i, nw;

	size_t fed = 0;

	memset(&scratch, 0, sizeof(scratch));
	ps = it_parser_new(&scratch);
	if (match)
		*match = xmalloc(st_mult(nr + 1, sizeof(**match)));
	buf_adds(&text, "import time: self [us] | cumulative | imported package\n");
	for (i = 0; i < nr; i++) {
		const struct srow *r = &s->rows[rows[i]];
		long depth = (long)r->depth - depth_shift;

		if (r->fork_ghost)
			continue;
		if (match)
			(*match)[fed] = r->tnode;
		fed++;
		if (depth < 0)
			depth = 0;
		if (r->cached)
			it_cached_row(&text, (uint32_t)depth, row_name(s, rows[i]));
		else
			buf_addf(&text, "import time: %9lld | %10lld | %*s%s\n", (long long)r->self_us,
				 (long long)r->cum_us, (int)(2 * depth), "", row_name(s, rows[i]));
	}
	it_feed(ps, text.buf, text.len, NULL);
	it_finish(ps, NULL);
	w = it_warnings(ps, &nw);
	for (i = 0; i < nw; i++)
		profile_add_warning(p, 0, "importtime (%s): %s", who, w[i].msg);
	it_parser_free(ps);
	buf_release(&text);
	if (scratch.nr_procs) {
		*out = scratch.procs[0];
		for (i = 1; i < scratch.nr_procs; i++)
			proc_release(&scratch.procs[i]);
		free(scratch.procs);
	} else {
		proc_init(out);
	}
	if (match && out->nr_nodes != fed) {
		/* Not one node per row (a line the parser read otherwise): pair by name instead. */
		free(*match);
		*match = NULL;
	}
}

static void warn_about(struct profile *p, const struct trace_proc *tp)
{
	long pid = tp->proc.pid;

	if (tp->stopped)
		profile_add_warning(p, 0,
				    "the trace of pid %ld stopped at %.1f ms: %s; the imports after it are "
				    "importtime's alone (no phases, CPU time or side effects)",
				    pid, (double)tp->stopped_ns / 1e6, tp->stopped);
	if (tp->bad_records)
		profile_add_warning(p, 0, "trace of pid %ld: %zu malformed records skipped", pid, tp->bad_records);
	if (!tp->audit)
		profile_add_warning(p, 0,
				    "trace of pid %ld: Python %s has no audit hooks; imports were traced, "
				    "side effects and compilation were not",
				    pid, tp->version_str);
}

/*
 * A trace that is not readable.  An empty one is a tracer that could not
 * write its first record (the C tracer writes its file ahead of the records
 * and leaves it empty when even that fails): on a file system with no
 * space left that is the reason, and the process's rows are importtime's.
 */
static void warn_unreadable(const struct trace_stream *s, struct profile *p, const struct live *lv)
{
	struct buf path = BUF_INIT;
	struct statvfs vfs;
	struct stat st;
	char *end;
	long pid = strtol(lv->file, &end, 10);

	buf_addf(&path, "%s/%s", s->dir, lv->file);
	if (stat(path.buf, &st) < 0 || st.st_size != 0 || end == lv->file || *end != '-') {
		profile_add_warning(p, 0, "trace '%s': not a readable coldstart trace", lv->file);
	} else if (!statvfs(s->dir, &vfs) && (uint64_t)vfs.f_bavail * vfs.f_frsize < 65536) {
		profile_add_warning(p, 0,
				    "the trace of pid %ld stopped at its start: no space left on the device of "
				    "'%s'; its imports are importtime's alone",
				    pid, s->dir);
	} else {
		profile_add_warning(p, 0,
				    "the trace of pid %ld stopped at its start: its tracer could not write to "
				    "'%s'; its imports are importtime's alone",
				    pid, s->dir);
	}
	buf_release(&path);
}

static bool traced_pid(const struct trace_stream *s, long pid)
{
	size_t i;

	for (i = 0; i < s->nr_lives; i++)
		if (!s->lives[i].bad && s->lives[i].tp.proc.pid == pid)
			return true;
	return false;
}

/*
 * A process whose parent had exited before its tracer read getppid() (a
 * helper the target started just before it ended) names whoever adopted
 * it, coldstart or init: the traced process it descends from, which its
 * trace also names, is its parent among the traced ones.
 */
static void adopt_orphans(struct trace_stream *s)
{
	size_t i;

	for (i = 0; i < s->nr_lives; i++) {
		struct trace_proc *tp = &s->lives[i].tp;

		if (!s->lives[i].bad && tp->spawner > 0 && tp->spawner != tp->proc.pid &&
		    !traced_pid(s, tp->proc.ppid) && traced_pid(s, tp->spawner))
			tp->proc.ppid = tp->spawner;
	}
}

void trace_stream_collect(struct trace_stream *s, struct profile *p, struct run *run)
{
	size_t i, untraced = 0;

	adopt_orphans(s);

	for (i = 0; i < s->nr_lives; i++) {
		struct live *lv = &s->lives[i];
		struct rowlist all = { NULL, 0, 0 };
		struct buf who = BUF_INIT;
		struct proc *pr;
		int32_t *match = NULL;
		size_t k;

		if (lv->bad) {
			warn_unreadable(s, p, lv);
			continue;
		}
		if (lv->window >= 0 && s->wins[lv->window].dropped) {
			/* Its rows cannot be told apart: the tree is the trace's alone. */
		} else {
			if (lv->window >= 0)
				for (k = 0; k < s->wins[lv->window].rows.nr; k++)
					rowlist_add(&all, s->wins[lv->window].rows.v[k]);
			for (k = 0; k < lv->rows.nr; k++)
				rowlist_add(&all, lv->rows.v[k]);
		}
		if (all.nr)
			qsort_r(all.v, all.nr, sizeof(*all.v), ts_cmp_seq, s);
		buf_addf(&who, "pid %ld", lv->tp.proc.pid);
		pr = run_add_proc(run);
		proc_release(pr);
		rows_to_proc(s, p, all.v, all.nr, lv->tp.proc.origin == ORIGIN_FORK ? lv->tp.fork_depth : 0, who.buf,
			     pr, &match);
		trace_merge(pr, &lv->tp, match);
		free(match);
		warn_about(p, &lv->tp);
		free(all.v);
		buf_release(&who);
	}
	for (i = 0; i < s->nr_wins; i++) {
		struct window *w = &s->wins[i];
		struct buf who = BUF_INIT;
		struct proc *pr;

		if (w->live >= 0 || !w->rows.nr)
			continue;
		untraced++;
		buf_addf(&who, "interpreter %zu without a trace", untraced);
		pr = run_add_proc(run);
		proc_release(pr);
		rows_to_proc(s, p, w->rows.v, w->rows.nr, 0, who.buf, pr, NULL);
		buf_release(&who);
	}
	windows_warn(s, p);
	if (untraced)
		profile_add_warning(p, 0,
				    "%zu Python process%s printed importtime rows but wrote no trace (-I, -E or "
				    "-S, or its tracer failed): %s rows are attributed by importtime's header "
				    "lines alone, and rows printed by other processes at the same time may be "
				    "among them",
				    untraced, untraced == 1 ? "" : "es", untraced == 1 ? "its" : "their");
	trace_assign_roles(run);
}

size_t trace_stream_nr_rows(const struct trace_stream *s)
{
	return s->nr_rows;
}

void trace_stream_free(struct trace_stream *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nr_lives; i++) {
		struct live *lv = &s->lives[i];

		if (lv->fd >= 0)
			close(lv->fd);
		free(lv->file);
		buf_release(&lv->pending);
		trace_proc_release(&lv->tp);
		free(lv->matched);
		free(lv->rows.v);
	}
	free(s->lives);
	windows_free(s);
	for (i = 0; i < s->nr_rows; i++)
		if (s->rows[i].kids) {
			free(s->rows[i].kids->v);
			free(s->rows[i].kids);
		}
	free(s->rows);
	buf_release(&s->names);
	buf_release(&s->line);
	free(s->pend);
	iset_release(&s->pend_names);
	free(s->seen);
	free(s);
}
