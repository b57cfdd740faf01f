/*
 * The page-cache eviction behind --cold: the set of files a target reads,
 * learnt from its runs, dropped with POSIX_FADV_DONTNEED and checked with
 * mincore (see cold.h).
 */
#include "sys/cold.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/elf_resolve.h"
#include "iset.h"

enum cold_class { CLASS_MODULE, CLASS_BINARY };

struct cold_file {
	char *path;
	enum cold_class cls;
	bool mapped; /* by a running process, at the last check */
	int64_t size, cached; /* at the last check; size -1: not checked */
};

struct cold_set {
	struct cold_file *files;
	size_t nr, alloc;
	struct iset by_path; /* indexes into files */
	/* Module names already looked up by name (found or not), and their indexes. */
	struct strvec names_seen;
	struct iset by_name;
	struct strvec dirs;
	char *cache_tag;
	struct strvec suffixes;
	struct elf_resolver resolver;
	bool learnt; /* a run was learnt from */
};

/* The slot of set that holds s, over the strings at(i), or the empty one where it would go. */
static int32_t *lookup(const struct iset *set, const char *s, const char *(*at)(const void *, size_t), const void *ctx)
{
	size_t i = (size_t)hash_str(s) & (set->cap - 1);

	while (set->slot[i] >= 0 && strcmp(at(ctx, (size_t)set->slot[i]), s))
		i = (i + 1) & (set->cap - 1);
	return &set->slot[i];
}

static const char *file_at(const void *ctx, size_t i)
{
	return ((const struct cold_set *)ctx)->files[i].path;
}

static const char *name_at(const void *ctx, size_t i)
{
	return ((const struct cold_set *)ctx)->names_seen.v[i];
}

static uint64_t file_hash_at(const void *ctx, int32_t v)
{
	return hash_str(file_at(ctx, (size_t)v));
}

static uint64_t name_hash_at(const void *ctx, int32_t v)
{
	return hash_str(name_at(ctx, (size_t)v));
}

/* Room in set for one more entry: it stays at most half full. */
static void make_room(struct iset *set, uint64_t (*hash)(const void *ctx, int32_t v), const void *ctx)
{
	if (!set->cap)
		iset_init(set, 256);
	else if (set->used * 2 >= set->cap)
		iset_grow(set, hash, ctx);
}

/* Adds path (made absolute and real) once; a path that is not a regular file is left out. */
static void add(struct cold_set *cs, const char *path, enum cold_class cls)
{
	char real[PATH_MAX];
	struct stat st;
	int32_t *slot;

	if (!path || !*path || !realpath(path, real) || stat(real, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	make_room(&cs->by_path, file_hash_at, cs);
	slot = lookup(&cs->by_path, real, file_at, cs);
	if (*slot >= 0) {
		/* A module's own file is not a library because an extension needs it too. */
		if (cls == CLASS_MODULE)
			cs->files[*slot].cls = CLASS_MODULE;
		return;
	}
	ALLOC_GROW(cs->files, cs->nr + 1, cs->alloc);
	cs->files[cs->nr].path = xstrdup(real);
	cs->files[cs->nr].cls = cls;
	*slot = (int32_t)cs->nr++;
	cs->by_path.used++;
}

/* The libraries path needs (it is added by the caller in its own class). */
static void add_needed(struct cold_set *cs, const char *path)
{
	struct elf_tree t;
	struct buf err = BUF_INIT;
	size_t i;

	elf_tree_init(&t);
	if (elf_resolve(&cs->resolver, path, &t, &err) == 0)
		for (i = 1; i < t.nr; i++)
			add(cs, t.libs[i].path, CLASS_BINARY);
	elf_tree_release(&t);
	buf_release(&err);
}

/* A module's file, with the bytecode the interpreter reads instead of the source. */
static void add_module_file(struct cold_set *cs, const char *file)
{
	size_t len = strlen(file);

	add(cs, file, CLASS_MODULE);
	if (ends_with(file, ".py") && cs->cache_tag) {
		const char *slash = strrchr(file, '/');
		struct buf pyc = BUF_INIT;

		if (slash) {
			buf_add(&pyc, file, (size_t)(slash - file));
			buf_adds(&pyc, "/__pycache__");
			buf_add(&pyc, slash, len - 3 - (size_t)(slash - file));
			buf_addf(&pyc, ".%s.pyc", cs->cache_tag);
			add(cs, pyc.buf, CLASS_MODULE);
		}
		buf_release(&pyc);
	} else if (ends_with(file, ".so")) {
		add_needed(cs, file);
	}
}

static bool is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* A module known only by its name: the first candidate on the search path, as the path finder looks. */
static void add_module_name(struct cold_set *cs, const char *name)
{
	struct buf rel = BUF_INIT, path = BUF_INIT;
	size_t i, k;
	int32_t *slot;
	const char *s;

	if (!*name || strchr(name, '/') || !strcmp(name, "__main__"))
		return;
	make_room(&cs->by_name, name_hash_at, cs);
	slot = lookup(&cs->by_name, name, name_at, cs);
	if (*slot >= 0)
		return;
	*slot = (int32_t)cs->names_seen.nr;
	cs->by_name.used++;
	strvec_push(&cs->names_seen, name);
	for (s = name; *s; s++)
		buf_addch(&rel, *s == '.' ? '/' : *s);
	for (i = 0; i < cs->dirs.nr; i++) {
		const char *tries[] = { ".py", "/__init__.py" };

		for (k = 0; k < ARRAY_SIZE(tries); k++) {
			buf_reset(&path);
			buf_addf(&path, "%s/%s%s", cs->dirs.v[i], rel.buf, tries[k]);
			if (is_file(path.buf))
				goto found;
		}
		for (k = 0; k < cs->suffixes.nr; k++) {
			buf_reset(&path);
			buf_addf(&path, "%s/%s%s", cs->dirs.v[i], rel.buf, cs->suffixes.v[k]);
			if (is_file(path.buf))
				goto found;
		}
	}
	goto out;
found:
	add_module_file(cs, path.buf);
out:
	buf_release(&rel);
	buf_release(&path);
}

/* Resident bytes of the file at path (its size in *size), by mincore over a read-only mapping. */
static int resident(const char *path, int64_t *size, int64_t *cached)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *vec = NULL;
	struct stat st;
	size_t pages, i;
	void *map;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -1;

	*size = *cached = 0;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		goto out;
	*size = st.st_size;
	if (!st.st_size) {
		ret = 0;
		goto out;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	pages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
	vec = xmalloc(pages);
	if (!mincore(map, (size_t)st.st_size, vec)) {
		for (i = 0; i < pages; i++)
			if (vec[i] & 1)
				*cached += i + 1 < pages ? page : st.st_size - (int64_t)i * page;
		ret = 0;
	}
	munmap(map, (size_t)st.st_size);
out:
	free(vec);
	close(fd);
	return ret;
}

/*
 * Marks (never unmarks) the files some running process maps, from every /proc/PID/maps
 * this user may read (all of them as root; a user sees only its own, and
 * then a file mapped by another user's process counts as not mapped).
 */
static void mark_mapped(struct cold_set *cs)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char *line = NULL;
	size_t cap = 0;

	if (!d || !cs->by_path.cap) {
		if (d)
			closedir(d);
		return;
	}
	while ((e = readdir(d))) {
		char path[300];
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9' || atol(e->d_name) == (long)getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%.255s/maps", e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		while (getline(&line, &cap, f) > 0) {
			char *file = strchr(line, '/');
			int32_t *slot;

			if (!file)
				continue;
			file[strcspn(file, "\n")] = '\0';
			slot = lookup(&cs->by_path, file, file_at, cs);
			if (*slot >= 0)
				cs->files[*slot].mapped = true;
		}
		fclose(f);
	}
	free(line);
	closedir(d);
}

struct cold_set *cold_set_new(void)
{
	struct cold_set *cs = xcalloc(1, sizeof(*cs));

	strvec_init(&cs->names_seen);
	strvec_init(&cs->dirs);
	strvec_init(&cs->suffixes);
	elf_resolver_init(&cs->resolver);
	return cs;
}

void cold_set_free(struct cold_set *cs)
{
	size_t i;

	if (!cs)
		return;
	for (i = 0; i < cs->nr; i++)
		free(cs->files[i].path);
	free(cs->files);
	iset_release(&cs->by_path);
	iset_release(&cs->by_name);
	strvec_clear(&cs->names_seen);
	strvec_clear(&cs->dirs);
	strvec_clear(&cs->suffixes);
	free(cs->cache_tag);
	elf_resolver_release(&cs->resolver);
	free(cs);
}

void cold_set_search(struct cold_set *cs, const char *const *dirs, const char *cache_tag,
		     const char *const *ext_suffixes)
{
	strvec_clear(&cs->dirs);
	strvec_clear(&cs->suffixes);
	for (; dirs && *dirs; dirs++)
		if (**dirs == '/')
			strvec_push(&cs->dirs, *dirs);
	for (; ext_suffixes && *ext_suffixes; ext_suffixes++)
		strvec_push(&cs->suffixes, *ext_suffixes);
	free(cs->cache_tag);
	cs->cache_tag = cache_tag && *cache_tag ? xstrdup(cache_tag) : NULL;
}

void cold_add_file(struct cold_set *cs, const char *path)
{
	add(cs, path, CLASS_MODULE);
}

void cold_add_pth_files(struct cold_set *cs, const char *const *dirs)
{
	for (; dirs && *dirs; dirs++) {
		DIR *d = **dirs == '/' ? opendir(*dirs) : NULL;
		struct dirent *e;
		struct buf path = BUF_INIT;

		if (!d)
			continue;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.' || !ends_with(e->d_name, ".pth"))
				continue;
			buf_reset(&path);
			buf_addf(&path, "%s/%s", *dirs, e->d_name);
			add(cs, path.buf, CLASS_MODULE);
		}
		closedir(d);
		buf_release(&path);
	}
}

/* Whether path starts with the ELF magic. */
static bool is_elf(const char *path)
{
	char magic[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool elf = fd >= 0 && read(fd, magic, 4) == 4 && !memcmp(magic, "\177ELF", 4);

	if (fd >= 0)
		close(fd);
	return elf;
}

void cold_add_binary(struct cold_set *cs, const char *path)
{
	if (!is_file(path))
		return;
	if (!is_elf(path)) {
		add(cs, path, CLASS_MODULE);
		return;
	}
	add(cs, path, CLASS_BINARY);
	add_needed(cs, path);
}

/* The file the tracer recorded for module name in pr, or NULL. */
static const char *module_file(const struct proc *pr, const char *name)
{
	size_t j;

	for (j = 0; pr->timing && j < pr->nr_nodes; j++)
		if (pr->timing[j].file && !strcmp(node_name(pr, (int32_t)j), name))
			return proc_str(pr, pr->timing[j].file);
	return NULL;
}

/*
 * The module pr runs as __main__ with `-m NAME` (from its argv, space-joined):
 * runpy imports a package NAME and then reads NAME/__main__.py, or reads a
 * plain module's file, without an import the tracer or importtime sees.
 */
static void add_main_module(struct cold_set *cs, const struct proc *pr)
{
	struct strvec words;
	struct buf word = BUF_INIT;
	const char *argv = pr->argv, *name = NULL, *pkg;
	size_t i;

	strvec_init(&words);
	while (*argv) {
		size_t n = strcspn(argv, " ");

		if (n) {
			buf_reset(&word);
			buf_add(&word, argv, n);
			strvec_push(&words, word.buf);
		}
		argv += n + (argv[n] == ' ');
	}
	/* The interpreter's options come first; -m or -c ends them, as the first word that is not one does. */
	for (i = 1; i < words.nr && words.v[i][0] == '-' && strcmp(words.v[i], "-c"); i++) {
		if (!strcmp(words.v[i], "-m") && i + 1 < words.nr) {
			name = words.v[i + 1];
			break;
		}
		/* An option with an argument of its own: -X importtime, -W error. */
		if ((!strcmp(words.v[i], "-X") || !strcmp(words.v[i], "-W")) && i + 1 < words.nr)
			i++;
	}
	buf_reset(&word);
	pkg = name ? module_file(pr, name) : NULL;
	if (pkg && ends_with(pkg, "/__init__.py")) {
		buf_add(&word, pkg, strlen(pkg) - strlen("__init__.py"));
		buf_adds(&word, "__main__.py");
		add_module_file(cs, word.buf);
	} else if (name) {
		/* Not imported: looked up on the search path, then where the target ran (runpy's sys.path[0]). */
		char cwd[PATH_MAX];
		const char *s;

		add_module_name(cs, name);
		if (getcwd(cwd, sizeof(cwd))) {
			buf_addf(&word, "%s/", cwd);
			for (s = name; *s; s++)
				buf_addch(&word, *s == '.' ? '/' : *s);
			buf_adds(&word, ".py");
			add_module_file(cs, word.buf);
		}
	}
	strvec_clear(&words);
	buf_release(&word);
}

size_t cold_learn_run(struct cold_set *cs, const struct run *r, struct buf *first_new)
{
	size_t i, j, before = cs->nr;

	cs->learnt = true;
	for (i = 0; i < r->nr_procs; i++) {
		const struct proc *pr = &r->procs[i];

		if (pr->argv)
			add_main_module(cs, pr);
		/* The data files it read (not the kernel's: /proc, /sys, /dev). */
		for (j = 0; j < pr->nr_reads; j++) {
			const char *path = proc_str(pr, pr->reads[j]);

			if (!starts_with(path, "/proc/") && !starts_with(path, "/sys/") && !starts_with(path, "/dev/"))
				add(cs, path, CLASS_MODULE);
		}

		for (j = 0; j < pr->nr_nodes; j++) {
			const char *file = pr->timing && pr->timing[j].file ? proc_str(pr, pr->timing[j].file) : NULL;

			/* coldstart's own bootstrap is not part of the target's start. */
			if (pr->nodes[j].kind == KIND_TOOL)
				continue;
			if (file && *file == '/')
				add_module_file(cs, file);
			else if (!file)
				add_module_name(cs, node_name(pr, (int32_t)j));
		}
	}
	if (first_new && cs->nr > before)
		buf_adds(first_new, cs->files[before].path);
	return cs->nr - before;
}

size_t cold_nr_files(const struct cold_set *cs)
{
	return cs->nr;
}

int cold_evict(struct cold_set *cs, struct cold_figures *out, struct buf *err)
{
	size_t i, step;

	memset(out, 0, sizeof(*out));
	out->asked = true;
	out->partial = !cs->learnt;
	/*
	 * Mapped before the eviction or after the check: a process that maps a
	 * file and exits in between kept its pages all the same.
	 */
	for (i = 0; i < cs->nr; i++)
		cs->files[i].mapped = false;
	mark_mapped(cs);
	for (i = 0; i < cs->nr; i++) {
		struct stat st;
		int fd = open(cs->files[i].path, O_RDONLY | O_CLOEXEC);

		/* A file gone since a run read it cannot be read from the cache either. */
		if (fd < 0) {
			if (errno != ENOENT)
				out->failed++;
			continue;
		}
		/* Dirty pages (a .pyc just written) are not dropped: write them first. */
		fdatasync(fd);
		if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) {
			out->failed++;
		} else {
			out->files++;
			if (!fstat(fd, &st))
				out->bytes += st.st_size;
		}
		close(fd);
	}
	if (cs->nr && !out->files) {
		buf_addf(err, "cannot evict any of the %zu files the target reads (the first: '%s')", cs->nr,
			 cs->files[0].path);
		return -1;
	}
	/* Checked at once: another process reading a shared file (the stdlib) warms it again. */
	step = cs->nr > COLD_CHECK_MAX ? (cs->nr + COLD_CHECK_MAX - 1) / COLD_CHECK_MAX : 1;
	for (i = 0; i < cs->nr; i += step)
		if (resident(cs->files[i].path, &cs->files[i].size, &cs->files[i].cached) < 0)
			cs->files[i].size = -1;
	mark_mapped(cs);
	for (i = 0; i < cs->nr; i += step) {
		int64_t size = cs->files[i].size, cached = cs->files[i].cached;

		if (size < 0)
			continue;
		out->checked_files++;
		/* A module file stays a module file whatever keeps it cached (another process mapping it). */
		if (cs->files[i].cls == CLASS_MODULE) {
			out->module_bytes += size;
			out->module_resident += cached;
		} else if (cs->files[i].mapped) {
			out->mapped_files++;
			out->mapped_bytes += size;
			out->mapped_resident += cached;
		} else {
			out->binary_bytes += size;
			out->binary_resident += cached;
		}
	}
	return 0;
}

static void add_pct(struct buf *out, int64_t part, int64_t whole)
{
	buf_addf(out, "%.1f%%", whole > 0 ? 100.0 * (double)part / (double)whole : 0.0);
}

void cold_describe(const struct cold_figures *c, struct buf *out)
{
	if (!c->asked) {
		buf_adds(out, "no (warm page cache)");
		return;
	}
	if (c->partial || !c->module_bytes) {
		buf_addf(out,
			 "partly: %lld files (the interpreter, its libraries, the script) evicted; the modules "
			 "are learnt from this run",
			 (long long)c->files);
		return;
	}
	if (c->unevicted)
		buf_addf(out, "NO, it read %lld file%s that %s not evicted before it: ", (long long)c->unevicted,
			 c->unevicted == 1 ? "" : "s", c->unevicted == 1 ? "was" : "were");
	else if (c->failed)
		buf_addf(out, "NO, %lld files could not be evicted: ", (long long)c->failed);
	else
		buf_adds(out, cold_figures_took(c) ? "yes: " : "NO, the eviction did not take: ");
	buf_addf(out, "%lld files (", (long long)c->files);
	buf_add_bytes(out, c->bytes);
	buf_adds(out, ") evicted, ");
	add_pct(out, c->module_resident, c->module_bytes);
	buf_adds(out, " of the modules still cached");
	if (c->binary_bytes) {
		buf_adds(out, ", ");
		add_pct(out, c->binary_resident, c->binary_bytes);
		buf_adds(out, " of the interpreter and libraries");
	}
	if (c->mapped_files) {
		buf_addf(out, "; %lld libraries stay cached because running processes map them (",
			 (long long)c->mapped_files);
		buf_add_bytes(out, c->mapped_resident);
		buf_adds(out, ")");
	}
}
