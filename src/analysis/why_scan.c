/*
 * Runs the import reader (python/coldstart/_imports.py) over a run's modules
 * with the profile's interpreter and joins its records to the processes'
 * graphs (why_scan.h).
 */
#include "analysis/why_scan.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iset.h"
#include "sys/launch.h"
#include "ingest/trace_build.h"
#include "trust.h"

/* The reader's stdout holds a few records per import statement; this is far beyond any real one. */
#define OUT_LIMIT ((size_t)256 << 20)
#define ERR_LIMIT ((size_t)64 << 10)

/* One line of the list: a module (or a main script) and the processes' nodes it stands for. */
struct entry {
	char *name;
	char *file; /* "" when located by name */
	char *locate; /* the name to locate a __main__ by, "" for none */
	size_t first_use; /* index into uses, SIZE_MAX for none */
};

struct use {
	size_t graph;
	int32_t node; /* or WHY_TOP for a main script */
	size_t next;
};

struct listing {
	struct entry *e;
	size_t nr, alloc;
	struct use *u;
	size_t nr_u, alloc_u;
	struct iset set; /* entry indexes by name, file and locate; sized for every node, never grown */
};

static uint64_t key_hash(const char *name, const char *file, const char *locate)
{
	return hash_str(name) * 31 + hash_str(file) * 7 + hash_str(locate);
}

static void listing_add(struct listing *l, const char *name, const char *file, const char *locate, size_t graph,
			int32_t node)
{
	size_t s = (size_t)key_hash(name, file, locate) & (l->set.cap - 1), k;
	struct use *u;

	for (; l->set.slot[s] >= 0; s = (s + 1) & (l->set.cap - 1)) {
		struct entry *e = &l->e[l->set.slot[s]];

		if (!strcmp(e->name, name) && !strcmp(e->file, file) && !strcmp(e->locate, locate))
			break;
	}
	if (l->set.slot[s] < 0) {
		ALLOC_GROW(l->e, l->nr + 1, l->alloc);
		l->e[l->nr] = (struct entry){
			.name = xstrdup(name), .file = xstrdup(file), .locate = xstrdup(locate), .first_use = SIZE_MAX
		};
		l->set.slot[s] = (int32_t)l->nr++;
		l->set.used++;
	}
	k = (size_t)l->set.slot[s];
	ALLOC_GROW(l->u, l->nr_u + 1, l->alloc_u);
	u = &l->u[l->nr_u];
	u->graph = graph;
	u->node = node;
	u->next = l->e[k].first_use;
	l->e[k].first_use = l->nr_u++;
}

static void listing_release(struct listing *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++) {
		free(l->e[i].name);
		free(l->e[i].file);
		free(l->e[i].locate);
	}
	free(l->e);
	free(l->u);
	iset_release(&l->set);
}

/* Options of the interpreter that take the next word as their value. */
static bool takes_value(const char *opt)
{
	return !strcmp(opt, "-X") || !strcmp(opt, "-W") || !strcmp(opt, "--check-hash-based-pycs");
}

/* A script named by word (made absolute against cwd) when it is a regular file. */
static bool script_file(const char *word, const char *cwd, struct buf *file)
{
	struct stat st;

	buf_reset(file);
	if (word[0] != '/' && cwd)
		buf_addf(file, "%s/", cwd);
	buf_adds(file, word);
	return !stat(file->buf, &st) && S_ISREG(st.st_mode);
}

/*
 * The main script of a process from its space-joined argv: a script path
 * (file), or the module of `-m` (module).  Returns false for `-c` (the
 * joined words cannot give the code back), a script on stdin, or no argv.
 */
static bool main_from_argv(const char *argv, const char *cwd, struct buf *file, struct buf *module)
{
	struct strvec w = STRVEC_INIT;
	const char *p = argv;
	bool found = false;
	size_t i;

	while (p && *p) {
		const char *sp = strchrnul(p, ' ');

		if (sp > p) {
			char *word = xstrndup(p, (size_t)(sp - p));

			strvec_push(&w, word);
			free(word);
		}
		p = *sp ? sp + 1 : sp;
	}
	for (i = 1; i < w.nr; i++) {
		const char *a = w.v[i];

		if (!strcmp(a, "-m") && i + 1 < w.nr) {
			buf_adds(module, w.v[i + 1]);
			found = true;
			break;
		}
		if (!strcmp(a, "-c") || !strcmp(a, "-"))
			break;
		if (a[0] != '-') {
			found = script_file(a, cwd, file);
			if (!found)
				buf_reset(file);
			break;
		}
		if (takes_value(a))
			i++;
	}
	strvec_clear(&w);
	return found;
}

/* Adds process i's main script to the listing; returns the -c code of the target's process, else NULL. */
static const char *add_main(struct listing *l, const struct profile *p, const struct run *r, size_t i,
			    const bool *forks)
{
	const struct strvec *t = &p->target;
	struct buf file = BUF_INIT, module = BUF_INIT;

	if (forks && forks[i])
		return NULL;
	if (i == 0 && t->nr >= 2 && !strcmp(t->v[0], "-c"))
		return t->v[1];
	if (i == 0 && t->nr >= 2 && !strcmp(t->v[0], "-m"))
		buf_adds(&module, t->v[1]);
	else if (!main_from_argv(r->procs[i].argv, p->cwd, &file, &module) && i == 0 && t->nr && t->v[0][0] != '-' &&
		 !script_file(t->v[0], p->cwd, &file))
		buf_reset(&file); /* no trace, and the target is a command: no script to read */
	if (file.len)
		listing_add(l, "__main__", file.buf, "", i, WHY_TOP);
	else if (module.len)
		listing_add(l, "__main__", "", module.buf, i, WHY_TOP);
	buf_release(&file);
	buf_release(&module);
	return NULL;
}

/* Reads the reader's stdout and stderr until both close or the deadline passes; -1 on timeout or excess. */
static int read_both(struct child *c, struct buf *out, struct buf *errout, int timeout_ms, struct buf *err)
{
	int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
	struct pollfd pfd[2] = { { .fd = c->out_fd, .events = POLLIN }, { .fd = c->err_fd, .events = POLLIN } };
	char chunk[65536];

	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		int64_t left = (deadline - now_ns()) / 1000000;
		int k, rc;

		if (left <= 0) {
			buf_addf(err, "the import reader did not finish within %d s", timeout_ms / 1000);
			return -1;
		}
		rc = poll(pfd, 2, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0) {
			buf_addf(err, "cannot wait for the import reader: %s", strerror(errno));
			return -1;
		}
		for (k = 0; k < 2; k++) {
			ssize_t n;

			if (pfd[k].fd < 0 || !pfd[k].revents)
				continue;
			n = read(pfd[k].fd, chunk, sizeof(chunk));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				pfd[k].fd = -1;
				continue;
			}
			if (k == 1) {
				if (errout->len < ERR_LIMIT)
					buf_add(errout, chunk, (size_t)n);
				continue;
			}
			if (out->len + (size_t)n > OUT_LIMIT) {
				buf_addf(err, "the import reader wrote more than %zu MiB", OUT_LIMIT >> 20);
				return -1;
			}
			buf_add(out, chunk, (size_t)n);
		}
	}
	return 0;
}

/* Splits a record at TABs in place; returns the number of fields (at most max). */
static size_t split_tabs(char *line, char **f, size_t max)
{
	size_t n = 0;

	while (n < max) {
		char *tab = strchr(line, '\t');

		f[n++] = line;
		if (!tab)
			break;
		*tab = '\0';
		line = tab + 1;
	}
	return n;
}

static enum why_source source_from_status(const char *s)
{
	if (!strcmp(s, "parsed") || !strcmp(s, "cached"))
		return WHY_SRC_PARSED;
	if (!strcmp(s, "native") || !strcmp(s, "pyx"))
		return WHY_SRC_NATIVE;
	if (!strcmp(s, "builtin"))
		return WHY_SRC_BUILTIN;
	if (!strcmp(s, "nosource"))
		return WHY_SRC_NOSOURCE;
	if (!strcmp(s, "notfound"))
		return WHY_SRC_NOTFOUND;
	return WHY_SRC_ERROR;
}

/* The uses of record cur: an entry's, or (cur == l->nr) the one of the -c code. */
static const struct use *use_first(const struct listing *l, size_t cur, const struct use *code)
{
	if (cur == l->nr)
		return code;
	if (cur > l->nr || l->e[cur].first_use == SIZE_MAX)
		return NULL;
	return &l->u[l->e[cur].first_use];
}

static const struct use *use_next(const struct listing *l, const struct use *u)
{
	return u->next == SIZE_MAX ? NULL : &l->u[u->next];
}

/* Applies the reader's records; the record after the listing's is the target's -c code. */
static int apply_records(struct listing *l, char *out, struct why_graph *graphs, struct why_scan_result *res,
			 struct buf *err)
{
	const struct use code = { .graph = 0, .node = WHY_TOP, .next = SIZE_MAX };
	size_t next_f = 0, cur = SIZE_MAX;
	bool have_summary = false;
	char *line, *next;

	for (line = out; *line; line = next) {
		const struct use *u;
		char *f[8], *eol = strchrnul(line, '\n');
		size_t nf;

		next = *eol ? eol + 1 : eol;
		*eol = '\0';
		nf = split_tabs(line, f, ARRAY_SIZE(f));
		if (!strcmp(f[0], "F") && nf >= 3) {
			enum why_source src = source_from_status(f[2]);
			const char *msg = !strncmp(f[2], "error:", 6) ? f[2] + 6 : NULL;

			cur = next_f++;
			if (cur < l->nr && strcmp(f[1], l->e[cur].name))
				cur = SIZE_MAX; /* out of step: ignore rather than misattribute */
			if (cur < l->nr && strcmp(l->e[cur].name, "__main__")) {
				res->sources[src]++;
				res->pyx += !strcmp(f[2], "pyx");
			}
			for (u = use_first(l, cur, &code); u; u = use_next(l, u)) {
				struct why_graph *g = &graphs[u->graph];

				if (u->node >= 0) {
					g->source[u->node] = (uint8_t)src;
					if (msg)
						why_graph_set_error(g, u->node, msg);
				} else if (src == WHY_SRC_PARSED) {
					g->have_main = true;
				}
				if (nf >= 4 && *f[3])
					why_graph_set_file(g, u->node, f[3]);
			}
		} else if (!strcmp(f[0], "I") && nf >= 7 && cur != SIZE_MAX) {
			int ctx = why_ctx_from_name(f[3]);
			enum why_via via = !strcmp(f[4], "call")       ? WHY_VIA_CALL
					   : !strcmp(f[4], "computed") ? WHY_VIA_COMPUTED
								       : WHY_VIA_STMT;
			long ln = strtol(f[2], NULL, 10);

			if (ctx < 0 || ln < 0 || ln > (long)UINT32_MAX)
				continue;
			for (u = use_first(l, cur, &code); u; u = use_next(l, u)) {
				if (via == WHY_VIA_COMPUTED)
					why_graph_add_computed(&graphs[u->graph], u->node, (uint32_t)ln,
							       (enum why_ctx)ctx);
				else
					why_graph_add_import(&graphs[u->graph], u->node, f[5], f[6], (uint32_t)ln,
							     (enum why_ctx)ctx, via);
			}
		} else if (!strcmp(f[0], "S") && nf >= 6) {
			res->files = strtoul(f[1], NULL, 10);
			res->parsed = strtoul(f[2], NULL, 10);
			res->cached = strtoul(f[3], NULL, 10);
			res->reader_s = strtod(f[4], NULL);
			free(res->cache);
			res->cache = xstrdup(f[5]);
			have_summary = true;
		}
	}
	if (!have_summary) {
		buf_addf(err, "the import reader stopped before its summary");
		return -1;
	}
	return 0;
}

static int run_reader(struct listing *l, const char *python, const char *code, const struct profile *p,
		      const struct why_scan_opts *o, struct buf *out, struct buf *err)
{
	struct child c;
	struct child_exit ex;
	struct buf list = BUF_INIT, errout = BUF_INIT, path = BUF_INIT;
	char *root = NULL, cwd[4096];
	int fd = -1, ret = -1;
	size_t i;

	buf_addf(&path, "%s/coldstart/_imports.py", o->datadir ? o->datadir : ".");
	if (access(path.buf, R_OK)) {
		buf_addf(err, "cannot read '%s': %s", path.buf, strerror(errno));
		goto out;
	}
	for (i = 0; i < l->nr; i++)
		buf_addf(&list, "%s\t%s\t%s\n", l->e[i].name, l->e[i].file, l->e[i].locate);
	/* The list goes through an inherited memfd: nothing on disk to clean up, whatever happens. */
	fd = memfd_create("coldstart-why-list", 0);
	if (fd < 0 || write(fd, list.buf, list.len) != (ssize_t)list.len || lseek(fd, 0, SEEK_SET) < 0) {
		buf_addf(err, "cannot pass the module list to the reader: %s", strerror(errno));
		goto out;
	}
	child_init(&c);
	strvec_pushv(&c.args, (const char *const[]){ python, "-I", path.buf, NULL });
	strvec_push(&c.args, "--list-fd");
	strvec_pushf(&c.args, "%d", fd);
	strvec_push(&c.args, "--jobs");
	strvec_pushf(&c.args, "%u", o->jobs ? o->jobs : 1);
	if (!o->no_cache) {
		root = trace_build_cache_root();
		strvec_push(&c.args, "--cache-dir");
		strvec_pushf(&c.args, "%s/imports", root);
	}
	/* Where modules without a file are looked for first: the profile's directory, then ours. */
	if (p->cwd) {
		strvec_push(&c.args, "--path");
		strvec_push(&c.args, p->cwd);
	}
	if (getcwd(cwd, sizeof(cwd)) && (!p->cwd || strcmp(cwd, p->cwd))) {
		strvec_push(&c.args, "--path");
		strvec_push(&c.args, cwd);
	}
	if (code) {
		strvec_push(&c.args, "--main-code");
		strvec_push(&c.args, code);
	}
	c.capture_stdout = true;
	c.capture_stderr = true;
	c.null_stdin = true;
	if (child_start(&c, err) < 0) {
		child_release(&c);
		goto out;
	}
	close(fd);
	fd = -1;
	if (read_both(&c, out, &errout, o->timeout_ms, err) < 0) {
		kill_tree(c.pid, SIGKILL, true);
		child_finish(&c, &ex);
		child_release(&c);
		goto out;
	}
	child_finish(&c, &ex);
	child_release(&c);
	if (ex.signaled || ex.exit_code) {
		while (errout.len && errout.buf[errout.len - 1] == '\n')
			buf_setlen(&errout, errout.len - 1);
		buf_addf(err, "the import reader ('%s') failed (%s %d)%s%s", python, ex.signaled ? "signal" : "status",
			 ex.signaled ? ex.term_signal : ex.exit_code, errout.len ? ": " : "",
			 strrchr(errout.buf, '\n') ? strrchr(errout.buf, '\n') + 1 : errout.buf);
		goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	free(root);
	buf_release(&list);
	buf_release(&errout);
	buf_release(&path);
	return ret;
}

int why_scan(const struct profile *p, const struct run *r, const bool *forks, struct why_graph *graphs,
	     const struct why_scan_opts *o, struct why_scan_result *res, struct buf *err)
{
	struct listing l = { 0 };
	struct buf out = BUF_INIT;
	const char *python = o->python && *o->python ? o->python : p->python;
	const char *code = NULL;
	int64_t t0 = now_ns();
	size_t i, total = 0, cap;
	int ret = -1;

	memset(res, 0, sizeof(*res));
	if (!python || !*python) {
		buf_addf(err, "the profile does not name its interpreter");
		return -1;
	}
	res->python = xstrdup(python);
	if (!(o->python && *o->python)) {
		struct buf why = BUF_INIT;

		if (trust_check_program(python, &why) < 0) {
			buf_addf(err,
				 "not running '%s', the interpreter the profile names: %s; --python '%s' runs it if "
				 "you trust it, --python PATH reads the source with another one",
				 python, why.buf, python);
			res->refused = true;
			buf_release(&why);
			return -1;
		}
		buf_release(&why);
	}
	for (i = 0; i < r->nr_procs; i++)
		total += r->procs[i].nr_nodes + 1;
	for (cap = 16; cap < 2 * total; cap *= 2)
		;
	iset_init(&l.set, cap);
	for (i = 0; i < r->nr_procs; i++) {
		const struct proc *pr = &r->procs[i];
		const char *c;
		size_t k;

		for (k = 0; k < pr->nr_nodes; k++) {
			const char *file = pr->timing && pr->timing[k].file ? proc_str(pr, pr->timing[k].file) : "";
			const char *name = node_name(pr, (int32_t)k);

			/* A name's first load is the one its statements belong to. */
			if (!*name || why_graph_find(&graphs[i], name) != (int32_t)k || strchr(name, '\t') ||
			    strchr(name, '\n') || strchr(file, '\t') || strchr(file, '\n'))
				continue;
			listing_add(&l, name, file, "", i, (int32_t)k);
		}
		c = add_main(&l, p, r, i, forks);
		if (c)
			code = c;
	}
	if (run_reader(&l, python, code, p, o, &out, err) < 0 || apply_records(&l, out.buf, graphs, res, err) < 0)
		goto out;
	for (i = 0; i < r->nr_procs; i++)
		graphs[i].have_source = true;
	ret = 0;
out:
	res->wall_us = (now_ns() - t0) / 1000;
	listing_release(&l);
	buf_release(&out);
	return ret;
}

void why_scan_result_release(struct why_scan_result *res)
{
	free(res->python);
	free(res->cache);
	memset(res, 0, sizeof(*res));
}
