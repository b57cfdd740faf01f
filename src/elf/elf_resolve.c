/*
 * The DT_NEEDED resolver: follows what an object needs the way glibc's
 * dynamic loader does (RPATH/RUNPATH with $ORIGIN, LD_LIBRARY_PATH,
 * /etc/ld.so.cache, the default directories) into one modelled process,
 * reading each file once.
 */
#include "elf/elf_resolve.h"

#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct elf_cached {
	char *key; /* real path */
	dev_t dev;
	ino_t ino;
	struct elf_facts *facts; /* NULL when unreadable */
	char *error;
};

struct elf_loaded {
	size_t cached; /* index into r->cached */
	char *name; /* the name it was asked for by */
	char *path; /* the path it was opened at ($ORIGIN) */
};

static void cached_free(struct elf_cached *c)
{
	free(c->key);
	if (c->facts) {
		elf_facts_release(c->facts);
		free(c->facts);
	}
	free(c->error);
}

static const char *multiarch(unsigned machine, int cls)
{
	switch (machine) {
	case EM_X86_64: return cls == 64 ? "x86_64-linux-gnu" : "x86_64-linux-gnux32";
	case EM_386: return "i386-linux-gnu";
	case EM_AARCH64: return "aarch64-linux-gnu";
	case EM_ARM: return "arm-linux-gnueabihf";
	case EM_PPC64: return "powerpc64le-linux-gnu";
	case EM_S390: return "s390x-linux-gnu";
	case EM_RISCV: return "riscv64-linux-gnu";
	}
	return NULL;
}

static const char *platform(unsigned machine)
{
	switch (machine) {
	case EM_X86_64: return "x86_64";
	case EM_386: return "i686";
	case EM_AARCH64: return "aarch64";
	}
	return "";
}

/*
 * Returns the index of path in the inspection cache, inspecting it on first
 * sight; -1 when it does not exist (err untouched, errno set) and -2 when it
 * exists but cannot be read (err set).
 */
static long resolver_lookup(struct elf_resolver *r, const char *path, struct buf *err)
{
	char *real = realpath(path, NULL);
	struct stat st;
	struct elf_cached *c;
	struct buf msg = BUF_INIT;
	size_t i;

	if (!real)
		return -1;
	if (stat(real, &st)) {
		free(real);
		return -1;
	}
	for (i = 0; i < r->nr_cached; i++)
		if (r->cached[i].dev == st.st_dev && r->cached[i].ino == st.st_ino) {
			free(real);
			if (!r->cached[i].facts) {
				buf_adds(err, r->cached[i].error);
				return -2;
			}
			return (long)i;
		}
	ALLOC_GROW(r->cached, r->nr_cached + 1, r->alloc_cached);
	c = &r->cached[r->nr_cached];
	memset(c, 0, sizeof(*c));
	c->key = real;
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->facts = xmalloc(sizeof(*c->facts));
	elf_facts_init(c->facts);
	if (elf_inspect_file(path, c->facts, &msg)) {
		elf_facts_release(c->facts);
		free(c->facts);
		c->facts = NULL;
		c->error = buf_detach(&msg, NULL);
		buf_adds(err, c->error);
		r->nr_cached++;
		return -2;
	}
	buf_release(&msg);
	return (long)r->nr_cached++;
}

static void tree_warn(struct elf_tree *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tree_warn(struct elf_tree *t, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	if (t->warnings.nr >= 64)
		return;
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	elf_sanitize(msg.buf, msg.len);
	strvec_push(&t->warnings, msg.buf);
	buf_release(&msg);
}

static struct elf_lib *tree_add(struct elf_tree *t, const char *name, int parent)
{
	struct elf_lib *l;

	ALLOC_GROW(t->libs, t->nr + 1, t->alloc);
	l = &t->libs[t->nr++];
	memset(l, 0, sizeof(*l));
	l->name = xstrdup(name);
	l->parent = parent;
	l->depth = parent < 0 ? 0 : t->libs[parent].depth + 1;
	return l;
}

static void dirname_of(const char *path, struct buf *out)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		buf_adds(out, ".");
	else if (slash == path)
		buf_adds(out, "/");
	else
		buf_add(out, path, (size_t)(slash - path));
}

/*
 * Expands $ORIGIN, ${ORIGIN}, $LIB and $PLATFORM in one search directory.
 * Returns -1 for an unknown token: glibc drops such a directory.
 */
static int expand_dst(const char *dir, size_t len, const char *origin_of, const struct elf_facts *f, struct buf *out)
{
	size_t i = 0;

	while (i < len) {
		const char *tok = NULL, *val = NULL;
		size_t toklen = 0;
		struct buf tmp = BUF_INIT;

		if (dir[i] != '$') {
			buf_addch(out, dir[i++]);
			continue;
		}
		if (i + 1 < len && dir[i + 1] == '{') {
			const char *close = memchr(dir + i, '}', len - i);

			if (!close)
				return -1;
			tok = dir + i + 2;
			toklen = (size_t)(close - tok);
			i = (size_t)(close - dir) + 1;
		} else {
			tok = dir + i + 1;
			while (i + 1 + toklen < len &&
			       ((tok[toklen] >= 'A' && tok[toklen] <= 'Z') || tok[toklen] == '_'))
				toklen++;
			i += 1 + toklen;
		}
		if (toklen == 6 && !memcmp(tok, "ORIGIN", 6)) {
			dirname_of(origin_of, &tmp);
			buf_add(out, tmp.buf, tmp.len);
			buf_release(&tmp);
			continue;
		} else if (toklen == 3 && !memcmp(tok, "LIB", 3)) {
			const char *ma = multiarch(f->machine, f->elf_class);

			buf_adds(out, "lib");
			if (ma) {
				buf_addch(out, '/');
				buf_adds(out, ma);
			}
			continue;
		} else if (toklen == 8 && !memcmp(tok, "PLATFORM", 8)) {
			val = platform(f->machine);
			buf_adds(out, val);
			continue;
		}
		return -1;
	}
	return 0;
}

/* Index into r->loaded of an object known by name (asked-for name or soname). */
static long loaded_by_name(struct elf_resolver *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nr_loaded; i++) {
		const struct elf_facts *f = r->cached[r->loaded[i].cached].facts;

		if (!strcmp(r->loaded[i].name, name) || (f->soname && !strcmp(f->soname, name)))
			return (long)i;
	}
	return -1;
}

static long loaded_by_cached(struct elf_resolver *r, size_t cached)
{
	size_t i;

	for (i = 0; i < r->nr_loaded; i++)
		if (r->loaded[i].cached == cached)
			return (long)i;
	return -1;
}

static void loaded_add(struct elf_resolver *r, size_t cached, const char *name, const char *path)
{
	struct elf_loaded *l;

	ALLOC_GROW(r->loaded, r->nr_loaded + 1, r->alloc_loaded);
	l = &r->loaded[r->nr_loaded++];
	l->cached = cached;
	l->name = xstrdup(name);
	l->path = xstrdup(path);
}

/*
 * Tries one candidate file for a DT_NEEDED name.  The loader skips files
 * that are missing, unreadable or of another class or machine, and goes on
 * searching; so do we.  Returns the cache index or -1.
 */
static long try_candidate(struct elf_resolver *r, struct elf_tree *t, const char *path, const struct elf_facts *want)
{
	struct buf err = BUF_INIT;
	long idx = resolver_lookup(r, path, &err);
	const struct elf_facts *f;

	if (idx == -2)
		tree_warn(t, "skipped %s", err.buf);
	buf_release(&err);
	if (idx < 0)
		return -1;
	f = r->cached[idx].facts;
	if (f->elf_class != want->elf_class || f->machine != want->machine) {
		tree_warn(t, "skipped '%s': ELF class or machine differs from the root", path);
		return -1;
	}
	return idx;
}

/* Searches a colon-separated directory list; returns the cache index or -1. */
static long search_list(struct elf_resolver *r, struct elf_tree *t, const char *list, const char *origin_of,
			const struct elf_facts *want, const char *name, struct buf *found)
{
	const char *p = list;

	while (p) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		struct buf dir = BUF_INIT;
		long idx = -1;

		if (!expand_dst(p, len, origin_of, want, &dir)) {
			if (!dir.len)
				buf_addch(&dir, '.');
			buf_reset(found);
			buf_addf(found, "%s/%s", dir.buf, name);
			idx = try_candidate(r, t, found->buf, want);
		}
		buf_release(&dir);
		if (idx >= 0)
			return idx;
		p = colon ? colon + 1 : NULL;
	}
	return -1;
}

static int ldcache_ensure(struct elf_resolver *r, struct elf_tree *t)
{
	struct buf err = BUF_INIT;
	struct buf path = BUF_INIT;

	if (r->ldcache_state || !r->ldcache_path)
		return r->ldcache_state > 0;
	buf_addf(&path, "%s%s", r->sysroot ? r->sysroot : "", r->ldcache_path);
	r->ldcache_state = elf_ldcache_load(&r->ldcache, path.buf, &err) ? -1 : 1;
	if (r->ldcache_state < 0)
		tree_warn(t, "%s", err.buf);
	buf_release(&err);
	buf_release(&path);
	return r->ldcache_state > 0;
}

/*
 * Finds a DT_NEEDED name for the object at tree index req, in glibc's order.
 * Fills how and found (the path) and returns the cache index, or -1.
 */
static long search_needed(struct elf_resolver *r, struct elf_tree *t, int req, const char *name, const char **how,
			  struct buf *found)
{
	const struct elf_facts *want = t->libs[0].facts;
	const struct elf_facts *rf = t->libs[req].facts;
	static const char *const defaults[] = { "/lib/%s", "/usr/lib/%s", "/lib", "/usr/lib" };
	const char *ma = multiarch(want->machine, want->elf_class);
	long idx;
	int i;
	size_t k;

	if (strchr(name, '/')) {
		struct buf exp = BUF_INIT;

		*how = "path";
		if (expand_dst(name, strlen(name), t->libs[req].path, want, &exp)) {
			buf_release(&exp);
			return -1;
		}
		buf_reset(found);
		buf_add(found, exp.buf, exp.len);
		buf_release(&exp);
		return try_candidate(r, t, found->buf, want);
	}
	/* DT_RPATH of the object and of those that loaded it, unless it has DT_RUNPATH. */
	if (!rf->runpath) {
		*how = "rpath";
		for (i = req; i >= 0; i = t->libs[i].parent) {
			const struct elf_facts *af = t->libs[i].facts;

			if (af && af->rpath && !af->runpath &&
			    (idx = search_list(r, t, af->rpath, t->libs[i].path, want, name, found)) >= 0)
				return idx;
		}
	}
	*how = "LD_LIBRARY_PATH";
	for (k = 0; k < r->ld_library_path.nr; k++)
		if ((idx = search_list(r, t, r->ld_library_path.v[k], t->libs[req].path, want, name, found)) >= 0)
			return idx;
	if (rf->runpath) {
		*how = "runpath";
		if ((idx = search_list(r, t, rf->runpath, t->libs[req].path, want, name, found)) >= 0)
			return idx;
	}
	*how = "ld.so.cache";
	if (ldcache_ensure(r, t)) {
		for (k = 0; k < r->ldcache.nr; k++) {
			if (strcmp(r->ldcache.entries[k].key, name))
				continue;
			buf_reset(found);
			buf_addf(found, "%s%s", r->sysroot ? r->sysroot : "", r->ldcache.entries[k].value);
			if ((idx = try_candidate(r, t, found->buf, want)) >= 0)
				return idx;
		}
	}
	*how = "default";
	for (k = 0; k < ARRAY_SIZE(defaults); k++) {
		if (strstr(defaults[k], "%s") && !ma)
			continue;
		buf_reset(found);
		buf_adds(found, r->sysroot ? r->sysroot : "");
		if (strstr(defaults[k], "%s"))
			buf_addf(found, k == 0 ? "/lib/%s/%s" : "/usr/lib/%s/%s", ma, name);
		else
			buf_addf(found, "%s/%s", defaults[k], name);
		if ((idx = try_candidate(r, t, found->buf, want)) >= 0)
			return idx;
	}
	return -1;
}

static bool is_ancestor(const struct elf_tree *t, int node, const struct elf_facts *f)
{
	int i;

	for (i = node; i >= 0; i = t->libs[i].parent)
		if (t->libs[i].facts == f)
			return true;
	return false;
}

static void resolve_needed(struct elf_resolver *r, struct elf_tree *t, int req, const char *name)
{
	struct buf found = BUF_INIT;
	const char *how = NULL;
	struct elf_lib *l;
	long li = loaded_by_name(r, name), ci;
	size_t i;

	for (i = 1; li < 0 && i < t->nr; i++)
		if (!t->libs[i].facts && !strcmp(t->libs[i].name, name))
			goto out; /* already reported missing */
	if (li < 0) {
		ci = search_needed(r, t, req, name, &how, &found);
		if (ci >= 0)
			li = loaded_by_cached(r, (size_t)ci);
		if (ci < 0) {
			l = tree_add(t, name, req);
			l->error = xstrdup("not found");
			goto out;
		}
		if (li < 0) {
			if (r->nr_loaded >= ELF_MAX_OBJECTS) {
				tree_warn(t, "more than %d objects; '%s' and later ones are not loaded",
					  ELF_MAX_OBJECTS, name);
				goto out;
			}
			l = tree_add(t, name, req);
			l->path = xstrdup(found.buf);
			l->how = how;
			l->facts = r->cached[ci].facts;
			loaded_add(r, (size_t)ci, name, found.buf);
			goto out;
		}
	}
	/* Already in the process: this tree's own object, or one loaded before. */
	{
		const struct elf_facts *f = r->cached[r->loaded[li].cached].facts;

		for (i = 0; i < t->nr; i++)
			if (t->libs[i].facts == f) {
				if (is_ancestor(t, req, f))
					tree_warn(t, "'%s' needs '%s', which needs it back (a loop)", t->libs[req].name,
						  name);
				goto out;
			}
		l = tree_add(t, name, req);
		l->path = xstrdup(r->loaded[li].path);
		l->how = "loaded";
		l->preloaded = true;
		l->facts = f;
	}
out:
	buf_release(&found);
}

void elf_tree_init(struct elf_tree *t)
{
	memset(t, 0, sizeof(*t));
	strvec_init(&t->warnings);
}

void elf_tree_release(struct elf_tree *t)
{
	size_t i;

	for (i = 0; i < t->nr; i++) {
		free(t->libs[i].name);
		free(t->libs[i].path);
		free(t->libs[i].error);
	}
	free(t->libs);
	strvec_clear(&t->warnings);
	elf_tree_init(t);
}

void elf_tree_totals(const struct elf_tree *t, bool include_root, struct elf_totals *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = include_root ? 0 : 1; i < t->nr; i++) {
		const struct elf_lib *l = &t->libs[i];

		if (l->preloaded)
			continue;
		if (!l->facts) {
			out->missing++;
			continue;
		}
		out->objects++;
		out->file_bytes += l->facts->file_size;
		out->mapped_bytes = elf_add_sat(out->mapped_bytes, l->facts->load_memsz);
		out->relocs += l->facts->nr_relocs;
		out->dynsyms += l->facts->nr_dynsyms;
	}
}

void elf_resolver_init(struct elf_resolver *r)
{
	const char *llp = getenv("LD_LIBRARY_PATH");

	memset(r, 0, sizeof(*r));
	strvec_init(&r->ld_library_path);
	if (llp && *llp)
		strvec_push(&r->ld_library_path, llp);
	r->ldcache_path = xstrdup("/etc/ld.so.cache");
	elf_ldcache_init(&r->ldcache);
}

void elf_resolver_unload(struct elf_resolver *r)
{
	size_t i;

	for (i = 0; i < r->nr_loaded; i++) {
		free(r->loaded[i].name);
		free(r->loaded[i].path);
	}
	r->nr_loaded = 0;
}

void elf_resolver_detach_facts(struct elf_resolver *r, struct elf_facts_list *into)
{
	size_t i;

	elf_resolver_unload(r);
	for (i = 0; i < r->nr_cached; i++) {
		if (r->cached[i].facts) {
			ALLOC_GROW(into->v, into->nr + 1, into->alloc);
			into->v[into->nr++] = r->cached[i].facts;
			r->cached[i].facts = NULL;
		}
		cached_free(&r->cached[i]);
	}
	r->nr_cached = 0;
}

void elf_resolver_release(struct elf_resolver *r)
{
	size_t i;

	elf_resolver_unload(r);
	free(r->loaded);
	for (i = 0; i < r->nr_cached; i++)
		cached_free(&r->cached[i]);
	free(r->cached);
	strvec_clear(&r->ld_library_path);
	free(r->ldcache_path);
	free(r->sysroot);
	elf_ldcache_release(&r->ldcache);
	memset(r, 0, sizeof(*r));
}

const struct elf_facts *elf_resolver_inspect(struct elf_resolver *r, const char *path, struct buf *err)
{
	long idx = resolver_lookup(r, path, err);

	if (idx == -1) {
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	return idx < 0 ? NULL : r->cached[idx].facts;
}

int elf_resolve(struct elf_resolver *r, const char *path, struct elf_tree *out, struct buf *err)
{
	struct buf abs = BUF_INIT;
	const struct elf_facts *f;
	struct elf_lib *root;
	long ci, li;
	size_t i, j;
	int ret = -1;

	elf_tree_release(out);
	f = elf_resolver_inspect(r, path, err);
	if (!f)
		goto out;
	ci = resolver_lookup(r, path, err);
	if (ci < 0) {
		/* Removed or replaced since it was read a moment ago. */
		if (!err->len)
			buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	/* $ORIGIN of the root: its directory as given, made absolute, symlinks kept. */
	if (path[0] != '/') {
		char *cwd = getcwd(NULL, 0);

		if (cwd)
			buf_addf(&abs, "%s/", cwd);
		free(cwd);
	}
	buf_adds(&abs, path);
	root = tree_add(out, path, -1);
	root->path = xstrdup(abs.buf);
	root->how = "root";
	root->facts = f;
	li = loaded_by_cached(r, (size_t)ci);
	if (li < 0)
		loaded_add(r, (size_t)ci, path, abs.buf);
	/* Breadth first, as _dl_map_object_deps does; out->nr grows as we go. */
	for (i = 0; i < out->nr; i++) {
		const struct elf_facts *lf = out->libs[i].facts;

		if (!lf || out->libs[i].preloaded)
			continue;
		if (out->libs[i].depth >= ELF_MAX_DEPTH) {
			tree_warn(out, "'%s' is %d levels deep; its needs are not followed", out->libs[i].name,
				  ELF_MAX_DEPTH);
			continue;
		}
		for (j = 0; j < lf->needed.nr; j++)
			resolve_needed(r, out, (int)i, lf->needed.v[j]);
	}
	ret = 0;
out:
	buf_release(&abs);
	return ret;
}
