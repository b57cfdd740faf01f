/*
 * The ELF reader and resolver against real Debian extensions (checked
 * against readelf's own output), every interpreter found, the crafted
 * hostile files in tests/fixtures/elf, and the native report and findings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analyze.h"
#include "analysis/elf_report.h"
#include "elf/elf_json.h"
#include "elf/elf_ldcache.h"
#include "elf/elf_python.h"
#include "elf/elf_resolve.h"
#include "elf/elffile.h"
#include "model/profile.h"
#include "elf/pyversion.h"
#include "util.h"

#define DEBIAN_PYTHON "/usr/bin/python3"

static char fixtures[4096];

/* The command's stdout (the command is built from trusted test strings). */
static int run_cmd(const char *cmd, struct buf *out)
{
	char chunk[4096];
	size_t n;
	FILE *f = popen(cmd, "r");

	buf_reset(out);
	if (!f)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(out, chunk, n);
	return pclose(f) == 0 ? 0 : -1;
}

/* The file of a module as an interpreter sees it, or NULL. */
static char *module_file(const char *python, const char *module)
{
	struct buf cmd = BUF_INIT, out = BUF_INIT;
	char *ret = NULL;

	buf_addf(&cmd, "%s -c 'import %s as m; print(m.__file__)' 2>/dev/null", python, module);
	if (!run_cmd(cmd.buf, &out) && out.len > 1) {
		buf_setlen(&out, out.len - 1);
		ret = buf_detach(&out, NULL);
	}
	buf_release(&cmd);
	buf_release(&out);
	return ret;
}

static char *fixture(const char *name)
{
	struct buf p = BUF_INIT;

	buf_addf(&p, "%s/%s", fixtures, name);
	return buf_detach(&p, NULL);
}

/* Sum of N over readelf lines "<prefix>... contains N entries". */
static size_t readelf_sum(const char *text, const char *prefix)
{
	const char *p = text;
	size_t total = 0;

	while ((p = strstr(p, prefix))) {
		const char *c = strstr(p, " contains ");
		const char *eol = strchr(p, '\n');

		if (c && (!eol || c < eol))
			total += strtoul(c + 10, NULL, 10);
		p += strlen(prefix);
	}
	return total;
}

static void check_against_readelf(const char *path)
{
	struct buf cmd = BUF_INIT, out = BUF_INIT, want = BUF_INIT, got = BUF_INIT;
	struct elf_facts f;
	struct buf err = BUF_INIT;
	struct stat st;
	const char *p;
	size_t i;
	uint64_t filesz = 0, memsz = 0, nload = 0;

	elf_facts_init(&f);
	if (elf_inspect_file(path, &f, &err))
		fail_msg("%s", err.buf);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(f.file_size, st.st_size);
	assert_int_equal(f.elf_class, 64);

	/* DT_NEEDED, in order. */
	buf_addf(&cmd, "readelf -dW '%s'", path);
	assert_int_equal(run_cmd(cmd.buf, &out), 0);
	for (p = out.buf; (p = strstr(p, "Shared library: [")); p++) {
		const char *end = strchr(p, ']');

		buf_add(&want, p + 17, (size_t)(end - p - 17));
		buf_addch(&want, ' ');
	}
	for (i = 0; i < f.needed.nr; i++)
		buf_addf(&got, "%s ", f.needed.v[i]);
	assert_string_equal(got.buf, want.buf);
	assert_true(f.needed.nr > 0);
	p = strstr(out.buf, "(RELACOUNT)");
	if (p)
		assert_int_equal(f.nr_relative, strtoul(p + 11, NULL, 10));

	/* Relocations: every relocation section of a shared object is dynamic. */
	buf_reset(&cmd);
	buf_addf(&cmd, "readelf -rW '%s'", path);
	assert_int_equal(run_cmd(cmd.buf, &out), 0);
	assert_int_equal(f.nr_relocs, readelf_sum(out.buf, "Relocation section '"));
	assert_true(f.nr_relocs > 0);

	buf_reset(&cmd);
	buf_addf(&cmd, "readelf -W --dyn-syms '%s'", path);
	assert_int_equal(run_cmd(cmd.buf, &out), 0);
	assert_int_equal(f.nr_dynsyms, readelf_sum(out.buf, "Symbol table '.dynsym'"));

	buf_reset(&cmd);
	buf_addf(&cmd, "readelf -nW '%s'", path);
	assert_int_equal(run_cmd(cmd.buf, &out), 0);
	p = strstr(out.buf, "Build ID: ");
	assert_non_null(p);
	assert_non_null(f.build_id);
	assert_memory_equal(f.build_id, p + 10, strlen(f.build_id));
	assert_true(p[10 + strlen(f.build_id)] == '\n');

	/* Loadable segments: "LOAD off vaddr paddr filesz memsz flg align". */
	buf_reset(&cmd);
	buf_addf(&cmd, "readelf -lW '%s'", path);
	assert_int_equal(run_cmd(cmd.buf, &out), 0);
	for (p = out.buf; (p = strstr(p, "\n  LOAD ")); p++) {
		unsigned long long off, va, pa, fs, ms;

		assert_int_equal(sscanf(p + 8, "%llx %llx %llx %llx %llx", &off, &va, &pa, &fs, &ms), 5);
		filesz += fs;
		memsz += ms;
		nload++;
	}
	assert_int_equal(f.nr_load, nload);
	assert_int_equal(f.load_filesz, filesz);
	assert_int_equal(f.load_memsz, memsz);

	/* Debian strips extensions and ships debug info apart. */
	buf_reset(&cmd);
	buf_addf(&cmd, "readelf -SW '%s'", path);
	assert_int_equal(run_cmd(cmd.buf, &out), 0);
	assert_int_equal(f.nr_symtab > 0, strstr(out.buf, " .symtab ") != NULL);
	assert_int_equal(f.has_debuglink, strstr(out.buf, " .gnu_debuglink ") != NULL);

	elf_facts_release(&f);
	buf_release(&cmd);
	buf_release(&out);
	buf_release(&want);
	buf_release(&got);
	buf_release(&err);
}

static void test_real_extensions(void **state)
{
	static const char *const modules[] = { "_ssl",	   "_ctypes",  "numpy.core._multiarray_umath",
					       "_hashlib", "_decimal", "_sqlite3" };
	size_t i, checked = 0;

	for (i = 0; i < ARRAY_SIZE(modules); i++) {
		char *path = module_file(DEBIAN_PYTHON, modules[i]);

		if (!path) {
			print_message("not checked: %s has no file for %s here\n", DEBIAN_PYTHON, modules[i]);
			continue;
		}
		if (!ends_with(path, ".so")) {
			print_message("not checked: %s is %s, not an extension\n", modules[i], path);
			free(path);
			continue;
		}
		check_against_readelf(path);
		checked++;
		free(path);
	}
	/* _ssl and _ctypes are part of Debian's python3.11 itself. */
	assert_true(checked >= 2);
}

static void test_resolve_real(void **state)
{
	char *path = module_file(DEBIAN_PYTHON, "_ssl");
	struct elf_resolver r;
	struct elf_python py;
	struct elf_tree t;
	struct buf err = BUF_INIT, cmd = BUF_INIT, ldd = BUF_INIT;
	size_t i;

	assert_non_null(path);
	elf_resolver_init(&r);
	strvec_clear(&r.ld_library_path);
	elf_python_init(&py);
	elf_tree_init(&t);
	assert_int_equal(elf_python_inspect(&r, DEBIAN_PYTHON, &py, &err), 0);
	assert_int_equal(elf_resolve(&r, path, &t, &err), 0);
	/* Each library the loader would map is found where ldd says. */
	buf_addf(&cmd, "env -u LD_LIBRARY_PATH ldd '%s'", path);
	assert_int_equal(run_cmd(cmd.buf, &ldd), 0);
	for (i = 1; i < t.nr; i++) {
		struct buf line = BUF_INIT;
		char *real = realpath(t.libs[i].path, NULL);
		char *want;

		assert_non_null(t.libs[i].facts);
		assert_non_null(real);
		buf_addf(&line, "%s => ", t.libs[i].name);
		want = strstr(ldd.buf, line.buf);
		assert_non_null(want);
		want += line.len;
		*strchr(want, ' ') = '\0';
		{
			char *wreal = realpath(want, NULL);

			assert_non_null(wreal);
			assert_string_equal(real, wreal);
			free(wreal);
		}
		want[strlen(want)] = ' ';
		/* libc is the interpreter's: already loaded, not counted again. */
		if (!strcmp(t.libs[i].name, "libc.so.6"))
			assert_true(t.libs[i].preloaded);
		free(real);
		buf_release(&line);
	}
	elf_tree_release(&t);
	elf_python_release(&py);
	elf_resolver_release(&r);
	free(path);
	buf_release(&err);
	buf_release(&cmd);
	buf_release(&ldd);
}

static void check_python(const char *exe)
{
	struct elf_resolver r;
	struct elf_python py;
	struct buf err = BUF_INIT, cmd = BUF_INIT, want = BUF_INIT;

	buf_addf(&cmd, "%s -c 'import sys; print(\"%%d.%%d.%%d\" %% sys.version_info[:3])'", exe);
	assert_int_equal(run_cmd(cmd.buf, &want), 0);
	buf_setlen(&want, want.len - 1);
	elf_resolver_init(&r);
	elf_python_init(&py);
	if (elf_python_inspect(&r, exe, &py, &err))
		fail_msg("%s: %s", exe, err.buf);
	if (!py.version || strcmp(py.version, want.buf))
		fail_msg("%s: version %s, the interpreter says %s", exe, py.version, want.buf);
	/* Debian links libpython statically; pyenv builds here are shared. */
	if (!strcmp(exe, DEBIAN_PYTHON)) {
		assert_false(py.shared);
		assert_true(py.exe_facts->defines_python);
	} else {
		assert_true(py.shared);
		assert_non_null(py.libpython);
		assert_true(py.lib_facts->defines_python);
	}
	print_message("%s: Python %s, libpython %s\n", exe, py.version, py.shared ? py.libpython : "static");
	elf_python_release(&py);
	elf_resolver_release(&r);
	buf_release(&err);
	buf_release(&cmd);
	buf_release(&want);
}

static void test_interpreters(void **state)
{
	glob_t g;
	size_t i, n = 0;

	check_python(DEBIAN_PYTHON);
	if (glob("/root/.pyenv/versions/*/bin/python", 0, NULL, &g)) {
		print_message("no pyenv interpreters under /root/.pyenv/versions: only Debian's checked\n");
		return;
	}
	for (i = 0; i < g.gl_pathc; i++) {
		char *real = realpath(g.gl_pathv[i], NULL);

		if (real && !strstr(real, "/shims/")) {
			check_python(g.gl_pathv[i]);
			n++;
		}
		free(real);
	}
	globfree(&g);
	assert_true(n > 0);
}

struct hostile {
	const char *file;
	int ret;
	const char *expect; /* in the error (ret -1) or in a warning (ret 0); NULL: anything */
};

static void test_hostile_files(void **state)
{
	static const struct hostile cases[] = {
		{ "hostile/empty.so", -1, "not an ELF file" },
		{ "hostile/text.so", -1, "not an ELF file" },
		{ "hostile/truncated-16.so", -1, "cannot read" },
		{ "hostile/truncated-63.so", -1, "cannot read" },
		{ "hostile/bad-class.so", -1, "bad ELF class 3" },
		{ "hostile/bad-data.so", -1, "bad ELF byte order 7" },
		{ "hostile/bad-version.so", -1, "bad ELF version 9" },
		{ "hostile/shentsize-bad.so", -1, "section header size 13" },
		{ "hostile/phoff-beyond.so", -1, "program header table" },
		{ "hostile/truncated-shdrs.so", 0, "section header table unreadable" },
		{ "hostile/shnum-absurd.so", 0, "section header table unreadable" },
		{ "hostile/shoff-beyond.so", 0, "section header table unreadable" },
		{ "hostile/dyn-huge.so", 0, "'.dynamic') lies beyond the end" },
		{ "hostile/dynsym-beyond.so", 0, "'.dynsym') lies beyond the end" },
		{ "hostile/dyn-strtab-self.so", 0, "DT_SONAME string offset is outside" },
		{ "hostile/needed-badoff.so", 0, "DT_NEEDED string offset 2147483647" },
		{ "hostile/dyn-no-null.so", 0, "repeated DT_NEEDED names ignored" },
		{ "hostile/dyn-overlap.so", 0, NULL },
		{ "hostile/note-bad.so", 0, NULL },
		{ "hostile/phnum-absurd.so", 0, NULL },
		{ "hostile/shstrndx-bad.so", 0, NULL },
		{ "hostile/class32.so", 0, NULL },
		{ "hostile/wrong-machine.so", 0, NULL },
		/* Found by fuzz_elf: a section name that is not UTF-8 broke the JSON. */
		{ "hostile/fuzz-bad-utf8.so", 0, NULL },
	};
	size_t i, k;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct elf_facts f;
		struct buf err = BUF_INIT;
		char *path = fixture(cases[i].file);
		int ret;

		elf_facts_init(&f);
		ret = elf_inspect_file(path, &f, &err);
		if (ret != cases[i].ret)
			fail_msg("%s: returned %d (%s), want %d", cases[i].file, ret, err.buf, cases[i].ret);
		if (ret) {
			assert_non_null(strstr(err.buf, "cannot read '"));
			assert_non_null(strstr(err.buf, cases[i].file));
			if (!strstr(err.buf, cases[i].expect))
				fail_msg("%s: error '%s' lacks '%s'", cases[i].file, err.buf, cases[i].expect);
			assert_null(f.path);
		} else {
			struct elf_facts g;
			struct buf json = BUF_INIT;

			for (k = 0; cases[i].expect && k < f.warnings.nr && !strstr(f.warnings.v[k], cases[i].expect);
			     k++)
				;
			if (cases[i].expect && k == f.warnings.nr)
				fail_msg("%s: no warning with '%s' (%zu warnings)", cases[i].file, cases[i].expect,
					 f.warnings.nr);
			/* Whatever the file says must survive JSON. */
			elf_facts_init(&g);
			elf_facts_to_json(&f, &json);
			if (elf_facts_from_json(json.buf, json.len, &g, &err))
				fail_msg("%s: %s", cases[i].file, err.buf);
			elf_facts_release(&g);
			buf_release(&json);
		}
		elf_facts_release(&f);
		buf_release(&err);
		free(path);
	}
}

static void test_not_regular(void **state)
{
	struct elf_facts f;
	struct buf err = BUF_INIT;
	char dir[] = "/tmp/coldstart-elftest-XXXXXX", fifo[64];

	elf_facts_init(&f);
	assert_int_equal(elf_inspect_file("/nonexistent/x.so", &f, &err), -1);
	assert_string_equal(err.buf, "cannot read '/nonexistent/x.so': No such file or directory");
	buf_reset(&err);
	assert_int_equal(elf_inspect_file("/tmp", &f, &err), -1);
	assert_string_equal(err.buf, "cannot read '/tmp': a directory");
	buf_reset(&err);
	/* A FIFO with no writer would block a plain open(): it must not. */
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/pipe.so", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(elf_inspect_file(fifo, &f, &err), -1);
	assert_non_null(strstr(err.buf, "not a regular file"));
	unlink(fifo);
	rmdir(dir);
	buf_release(&err);
}

static void test_no_section_headers(void **state)
{
	struct elf_facts f;
	struct buf err = BUF_INIT;
	char *path = fixture("loop/liba-noshdr.so");

	/* Only the loader's view is left: PT_DYNAMIC gives the same answers. */
	elf_facts_init(&f);
	assert_int_equal(elf_inspect_file(path, &f, &err), 0);
	assert_int_equal(f.needed.nr, 1);
	assert_string_equal(f.needed.v[0], "libb.so");
	assert_string_equal(f.soname, "liba.so");
	assert_string_equal(f.runpath, "$ORIGIN");
	elf_facts_release(&f);
	free(path);
	buf_release(&err);
}

static struct elf_lib *find_lib(struct elf_tree *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->nr; i++)
		if (!strcmp(t->libs[i].name, name))
			return &t->libs[i];
	return NULL;
}

static void resolver_fresh(struct elf_resolver *r)
{
	elf_resolver_init(r);
	strvec_clear(&r->ld_library_path);
}

static void test_resolver_loop(void **state)
{
	struct elf_resolver r;
	struct elf_tree t;
	struct buf err = BUF_INIT;
	char *path = fixture("loop/liba.so");
	struct elf_lib *b;

	resolver_fresh(&r);
	elf_tree_init(&t);
	assert_int_equal(elf_resolve(&r, path, &t, &err), 0);
	/* liba -> libb -> liba: each once, and the loop is said. */
	assert_int_equal(t.nr, 2);
	b = find_lib(&t, "libb.so");
	assert_non_null(b);
	assert_string_equal(b->how, "runpath");
	assert_int_equal(b->depth, 1);
	assert_int_equal(t.warnings.nr, 1);
	assert_non_null(strstr(t.warnings.v[0], "a loop"));
	/* Resolving libb next: liba is already in the process. */
	free(path);
	path = fixture("loop/libb.so");
	assert_int_equal(elf_resolve(&r, path, &t, &err), 0);
	assert_int_equal(t.nr, 2);
	assert_string_equal(t.libs[1].name, "liba.so");
	assert_true(t.libs[1].preloaded);
	assert_int_equal(t.warnings.nr, 0);
	elf_tree_release(&t);
	elf_resolver_release(&r);
	free(path);
	buf_release(&err);
}

/*
 * A chain l000.so -> l001.so -> ... -> l099.so, made from loop/liba.so by
 * renaming its soname and DT_NEEDED strings (both 7 bytes long).
 */
static void test_resolver_depth_cap(void **state)
{
	char dir[] = "/tmp/coldstart-elftest-XXXXXX";
	struct buf img = BUF_INIT, path = BUF_INIT, err = BUF_INIT;
	char *src = fixture("loop/liba.so");
	struct elf_resolver r;
	struct elf_tree t;
	char *needed, *soname;
	size_t i;

	assert_int_equal(buf_read_file(&img, src), 0);
	needed = memmem(img.buf, img.len, "libb.so", 8);
	soname = memmem(img.buf, img.len, "liba.so", 8);
	assert_non_null(needed);
	assert_non_null(soname);
	assert_non_null(mkdtemp(dir));
	for (i = 0; i < 100; i++) {
		FILE *f;

		snprintf(soname, 8, "l%03zu.so", i);
		snprintf(needed, 8, "l%03zu.so", i + 1);
		buf_reset(&path);
		buf_addf(&path, "%s/l%03zu.so", dir, i);
		f = fopen(path.buf, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(img.buf, 1, img.len, f), img.len);
		fclose(f);
	}
	resolver_fresh(&r);
	elf_tree_init(&t);
	buf_reset(&path);
	buf_addf(&path, "%s/l000.so", dir);
	assert_int_equal(elf_resolve(&r, path.buf, &t, &err), 0);
	/* Depths 0 to ELF_MAX_DEPTH are loaded; the last one's needs are not followed. */
	assert_int_equal(t.nr, ELF_MAX_DEPTH + 1);
	assert_int_equal(t.libs[t.nr - 1].depth, ELF_MAX_DEPTH);
	assert_string_equal(t.libs[t.nr - 1].how, "runpath");
	assert_int_equal(t.warnings.nr, 1);
	assert_non_null(strstr(t.warnings.v[0], "levels deep"));
	elf_tree_release(&t);
	elf_resolver_release(&r);
	for (i = 0; i < 100; i++) {
		buf_reset(&path);
		buf_addf(&path, "%s/l%03zu.so", dir, i);
		unlink(path.buf);
	}
	rmdir(dir);
	free(src);
	buf_release(&img);
	buf_release(&path);
	buf_release(&err);
}

static void test_resolver_search_order(void **state)
{
	struct elf_resolver r;
	struct elf_tree t;
	struct buf err = BUF_INIT;
	char *path = fixture("search/root.so");
	struct elf_lib *l;
	size_t i;

	resolver_fresh(&r);
	elf_tree_init(&t);
	/* RUNPATH $ORIGIN/skip:$ORIGIN/good; skip/ holds an aarch64 copy. */
	assert_int_equal(elf_resolve(&r, path, &t, &err), 0);
	l = find_lib(&t, "libtiny.so.1");
	assert_non_null(l);
	assert_non_null(l->facts);
	assert_non_null(strstr(l->path, "/search/good/libtiny.so.1"));
	assert_string_equal(l->how, "runpath");
	for (i = 0; i < t.warnings.nr && !strstr(t.warnings.v[i], "skip/libtiny.so.1"); i++)
		;
	assert_true(i < t.warnings.nr);
	elf_tree_release(&t);
	elf_resolver_release(&r);
	free(path);

	/* DT_RPATH ${ORIGIN}/lib of the root also serves libmid's own needs. */
	resolver_fresh(&r);
	path = fixture("rpath/root.so");
	assert_int_equal(elf_resolve(&r, path, &t, &err), 0);
	assert_int_equal(t.nr, 3);
	l = find_lib(&t, "libmid.so");
	assert_non_null(l);
	assert_string_equal(l->how, "rpath");
	l = find_lib(&t, "libtiny.so.1");
	assert_non_null(l);
	assert_string_equal(l->how, "rpath");
	assert_int_equal(l->depth, 2);
	assert_non_null(strstr(l->path, "/rpath/lib/libtiny.so.1"));
	elf_tree_release(&t);
	elf_resolver_release(&r);
	free(path);

	/* Alone, libmid has no path to libtiny: LD_LIBRARY_PATH gives one. */
	resolver_fresh(&r);
	path = fixture("rpath/lib/libmid.so");
	assert_int_equal(elf_resolve(&r, path, &t, &err), 0);
	l = find_lib(&t, "libtiny.so.1");
	assert_non_null(l);
	assert_null(l->facts);
	assert_null(l->path);
	elf_resolver_release(&r);
	resolver_fresh(&r);
	{
		char *dir = fixture("search/good");

		strvec_push(&r.ld_library_path, dir);
		free(dir);
	}
	assert_int_equal(elf_resolve(&r, path, &t, &err), 0);
	l = find_lib(&t, "libtiny.so.1");
	assert_non_null(l);
	assert_string_equal(l->how, "LD_LIBRARY_PATH");
	elf_resolver_release(&r);

	/* Through a cache file, under a sysroot. */
	resolver_fresh(&r);
	free(r.ldcache_path);
	r.ldcache_path = xstrdup("/ldcache/tiny.cache");
	r.sysroot = xstrdup(fixtures);
	assert_int_equal(elf_resolve(&r, path, &t, &err), 0);
	l = find_lib(&t, "libtiny.so.1");
	assert_non_null(l);
	assert_string_equal(l->how, "ld.so.cache");
	assert_non_null(strstr(l->path, "/search/good/libtiny.so.1"));
	elf_resolver_release(&r);

	elf_tree_release(&t);
	free(path);
	buf_release(&err);
}

static void test_ldcache(void **state)
{
	static const char *const bad[] = { "ldcache/truncated.cache", "ldcache/badoff.cache",
					   "ldcache/nlibs-absurd.cache", "ldcache/unterminated.cache" };
	struct elf_ldcache c;
	struct buf err = BUF_INIT, out = BUF_INIT;
	char *path = fixture("ldcache/tiny.cache");
	size_t i, libc = 0;

	elf_ldcache_init(&c);
	assert_int_equal(elf_ldcache_load(&c, path, &err), 0);
	assert_int_equal(c.nr, 1);
	assert_string_equal(c.entries[0].key, "libtiny.so.1");
	assert_string_equal(c.entries[0].value, "/search/good/libtiny.so.1");
	assert_int_equal(c.entries[0].flags, 0x0303);
	free(path);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		path = fixture(bad[i]);
		buf_reset(&err);
		assert_int_equal(elf_ldcache_load(&c, path, &err), -1);
		assert_non_null(strstr(err.buf, "bad ld.so.cache"));
		assert_non_null(strstr(err.buf, bad[i]));
		assert_int_equal(c.nr, 0);
		free(path);
	}
	/* The machine's own cache: as many entries as ldconfig -p counts. */
	buf_reset(&err);
	assert_int_equal(elf_ldcache_load(&c, "/etc/ld.so.cache", &err), 0);
	assert_int_equal(run_cmd("/sbin/ldconfig -p", &out), 0);
	assert_int_equal(c.nr, strtoul(out.buf, NULL, 10));
	for (i = 0; i < c.nr; i++)
		if (!strcmp(c.entries[i].key, "libc.so.6"))
			libc++;
	assert_true(libc >= 1);
	elf_ldcache_release(&c);
	buf_release(&err);
	buf_release(&out);
}

static void test_json_roundtrip(void **state)
{
	struct elf_facts f, g;
	struct buf err = BUF_INIT, a = BUF_INIT, b = BUF_INIT;
	char *path = fixture("rpath/root.so");

	elf_facts_init(&f);
	elf_facts_init(&g);
	assert_int_equal(elf_inspect_file(path, &f, &err), 0);
	elf_facts_to_json(&f, &a);
	assert_int_equal(elf_facts_from_json(a.buf, a.len, &g, &err), 0);
	elf_facts_to_json(&g, &b);
	assert_string_equal(a.buf, b.buf);
	assert_string_equal(g.rpath, "${ORIGIN}/lib");
	assert_string_equal(g.needed.v[0], "libmid.so");
	assert_int_equal(elf_facts_from_json("[1]", 3, &g, &err), -1);
	assert_int_equal(elf_facts_from_json("{", 1, &g, &err), -1);
	elf_facts_release(&f);
	elf_facts_release(&g);
	free(path);
	buf_release(&err);
	buf_release(&a);
	buf_release(&b);
}

/* A shared object with debug info, built now: Debian ships none unstripped. */
static char *build_unstripped(const char *dir)
{
	struct buf cmd = BUF_INIT, out = BUF_INIT, path = BUF_INIT;

	buf_addf(&path, "%s/libfat.so", dir);
	buf_addf(&cmd,
		 "printf '#include <stdio.h>\\n#include <stdlib.h>\\n#include <string.h>\\n"
		 "#include <math.h>\\n#include <signal.h>\\n#include <pthread.h>\\n"
		 "#include <sys/socket.h>\\n#include <netinet/in.h>\\n#include <unistd.h>\\n"
		 "#include <fcntl.h>\\nint fat(void) { return (int)strlen(\"x\"); }\\n' > %s/fat.c && "
		 "gcc -shared -fPIC -g3 -o %s %s/fat.c 2>&1",
		 dir, path.buf, dir);
	if (run_cmd(cmd.buf, &out)) {
		print_message("not checked: gcc could not build an unstripped object: %s\n", out.buf);
		buf_release(&path);
		path.buf = NULL;
	}
	buf_release(&cmd);
	buf_release(&out);
	return path.buf ? buf_detach(&path, NULL) : NULL;
}

static const struct finding_rules *const native_rules[] = { &elf_finding_rules, NULL };

/* A native extension's node, imported by parent (-1: at top level). */
static int32_t add_native_in(struct proc *pr, int32_t parent, const char *name, const char *file, int64_t load_us,
			     int64_t start_ns)
{
	int32_t n = proc_add_node(pr, name, strlen(name), parent >= 0 ? pr->nodes[parent].depth + 1 : 0, load_us,
				  load_us);

	if (parent >= 0)
		proc_link_child(pr, parent, n);
	else
		proc_link_root(pr, n);
	pr->nodes[n].flags |= NODE_NATIVE;
	proc_ensure_timing(pr);
	pr->timing[n].file = proc_intern(pr, file, strlen(file));
	pr->timing[n].load_ns = load_us * 1000;
	pr->timing[n].start_ns = start_ns;
	return n;
}

static int32_t add_native(struct proc *pr, const char *name, const char *file, int64_t load_us, int64_t start_ns)
{
	return add_native_in(pr, -1, name, file, load_us, start_ns);
}

static const struct finding *find_finding(const struct profile *p, const char *id, size_t nth)
{
	size_t i;

	for (i = 0; i < p->nr_findings; i++)
		if (!strcmp(p->findings[i].id, id) && !nth--)
			return &p->findings[i];
	return NULL;
}

static void test_profile_section_and_findings(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr;
	struct buf err = BUF_INIT, out = BUF_INIT, json = BUF_INIT, json2 = BUF_INIT;
	struct strvec problems = STRVEC_INIT;
	char *ssl = module_file(DEBIAN_PYTHON, "_ssl");
	char *a = fixture("dup/a/ext.so"), *b = fixture("dup/b/ext.so");
	char dir[] = "/tmp/coldstart-elftest-XXXXXX";
	char *fat;
	const struct finding *fd;

	assert_non_null(ssl);
	assert_non_null(mkdtemp(dir));
	fat = build_unstripped(dir);
	profile_init(&p);
	p.python = xstrdup(DEBIAN_PYTHON);
	run = profile_add_run(&p);
	pr = run_add_proc(run);
	add_native(pr, "_ssl", ssl, 12000, 100);
	add_native(pr, "pkg_a._root", a, 300, 200);
	add_native(pr, "pkg_b._root", b, 200, 300);
	if (fat)
		add_native(pr, "fat", fat, 100, 400);
	/* A native node without a file is left alone. */
	pr->nodes[proc_add_node(pr, "nofile", 6, 0, 5, 5)].flags |= NODE_NATIVE;

	elf_annotate_profile(&p, &problems);
	assert_int_equal(problems.nr, 0);
	elf_report_section(&p, SIZE_MAX, &out);
	assert_non_null(strstr(out.buf, "Native extensions"));
	assert_non_null(strstr(out.buf, "Python 3.11"));
	assert_non_null(strstr(out.buf, "libpython static"));
	/* The slowest first, with the libraries behind it. */
	assert_non_null(strstr(out.buf, "12.0 ms  _ssl: "));
	assert_non_null(strstr(out.buf, "needs libssl.so.3 ("));
	assert_true(strstr(out.buf, "_ssl") < strstr(out.buf, "pkg_a._root"));
	assert_null(strstr(out.buf, "nofile"));

	findings_run(&p, native_rules);
	fd = find_finding(&p, "native-heavy-load", 0);
	assert_non_null(fd);
	assert_string_equal(fd->module, "_ssl");
	assert_int_equal(fd->cost_us, 12000);
	assert_non_null(strstr(fd->evidence, "_ssl: 12.0 ms load"));
	assert_non_null(strstr(fd->evidence, "libcrypto.so.3"));
	assert_null(find_finding(&p, "native-heavy-load", 1));
	/* libdup-0123abcd.so.1 and libdup-89abcdef.so.1: one library, twice. */
	fd = find_finding(&p, "native-duplicate-library", 0);
	assert_non_null(fd);
	assert_non_null(strstr(fd->title, "libdup is loaded 2 times"));
	assert_non_null(strstr(fd->evidence, "/dup/a/libdup-0123abcd.so.1 (for pkg_a._root)"));
	assert_non_null(strstr(fd->evidence, "/dup/b/libdup-89abcdef.so.1 (for pkg_b._root)"));
	assert_null(find_finding(&p, "native-duplicate-library", 1));
	if (fat) {
		fd = find_finding(&p, "native-unstripped", 0);
		assert_non_null(fd);
		assert_string_equal(fd->module, "fat");
		assert_non_null(strstr(fd->evidence, "libfat.so"));
	}

	/* JSON out and back gives the same JSON and the same section. */
	native_set_to_json(&p.native, &json);
	{
		struct profile q;
		struct buf out2 = BUF_INIT;

		profile_init(&q);
		assert_int_equal(native_set_from_json(&q.native, json.buf, json.len, &err), 0);
		native_set_to_json(&q.native, &json2);
		/* The interpreter is read back too: the saved report shows what the live one did. */
		assert_string_equal(json.buf, json2.buf);
		elf_report_section(&q, SIZE_MAX, &out2);
		assert_string_equal(out.buf, out2.buf);
		assert_non_null(strstr(out2.buf, "12.0 ms  _ssl: "));
		assert_int_equal(native_set_from_json(&q.native, "{\"extensions\":[{}]}", 19, &err), -1);
		assert_false(q.native.annotated);
		assert_int_equal(q.native.nr, 0);
		buf_reset(&err);
		assert_int_equal(native_set_from_json(&q.native, "null", 4, &err), 0);
		assert_false(q.native.annotated);
		buf_reset(&out2);
		native_set_to_json(&q.native, &out2);
		assert_string_equal(out2.buf, "null");
		profile_release(&q);
		buf_release(&out2);
	}
	/* Annotating again replaces the facts, and the profile frees them. */
	buf_reset(&err);
	elf_annotate_profile(&p, &problems);
	assert_int_equal(problems.nr, 0);
	buf_reset(&json2);
	native_set_to_json(&p.native, &json2);
	assert_string_equal(json.buf, json2.buf);
	profile_release(&p);
	assert_false(p.native.annotated);
	if (fat) {
		struct buf cmd = BUF_INIT, o = BUF_INIT;

		buf_addf(&cmd, "rm -rf '%s'", dir);
		run_cmd(cmd.buf, &o);
		buf_release(&cmd);
		buf_release(&o);
	}
	free(fat);
	free(ssl);
	free(a);
	free(b);
	strvec_clear(&problems);
	buf_release(&err);
	buf_release(&out);
	buf_release(&json);
	buf_release(&json2);
}

/*
 * An extension the app reaches through other imports: the fix names the
 * outermost import below the app's own code (asyncio loads _ssl), the
 * evidence the chain; one the app imports itself is named as before.
 */
static void test_heavy_load_names_what_to_make_lazy(void **state)
{
	struct profile p;
	struct run *run;
	struct proc *pr;
	struct strvec problems = STRVEC_INIT;
	char *ssl = module_file(DEBIAN_PYTHON, "_ssl"), *json = module_file(DEBIAN_PYTHON, "_json");
	int32_t app, aio, ssl_py, own;
	const struct finding *fd;

	assert_non_null(ssl);
	assert_non_null(json);
	profile_init(&p);
	p.python = xstrdup(DEBIAN_PYTHON);
	run = profile_add_run(&p);
	pr = run_add_proc(run);
	pr->pid = 77;
	app = proc_add_node(pr, "app", 3, 0, 100, 12400);
	proc_link_root(pr, app);
	pr->nodes[app].kind = KIND_APP;
	aio = proc_add_node(pr, "asyncio", 7, 1, 100, 12300);
	proc_link_child(pr, app, aio);
	ssl_py = proc_add_node(pr, "ssl", 3, 2, 200, 12200);
	proc_link_child(pr, aio, ssl_py);
	add_native_in(pr, ssl_py, "_ssl", ssl, 12000, 100);
	own = add_native_in(pr, app, "_json", json, 9000, 200);
	for (int32_t i = 0; i < (int32_t)pr->nr_nodes; i++)
		if (i != app && i != own)
			pr->nodes[i].kind = KIND_STDLIB;
	elf_annotate_profile(&p, &problems);
	assert_int_equal(problems.nr, 0);
	findings_run(&p, native_rules);
	fd = find_finding(&p, "native-heavy-load", 0);
	assert_non_null(fd);
	assert_string_equal(fd->module, "_ssl");
	assert_non_null(strstr(fd->fix, "import asyncio lazily, inside the code that needs it (it loads _ssl)"));
	assert_non_null(strstr(fd->evidence, "import chain app -> asyncio -> ssl -> _ssl (pid 77)"));
	fd = find_finding(&p, "native-heavy-load", 1);
	assert_non_null(fd);
	assert_string_equal(fd->module, "_json");
	assert_non_null(strstr(fd->fix, "import _json lazily, inside the code that needs it, so start-up"));
	assert_null(strstr(fd->evidence, "import chain"));
	profile_release(&p);
	strvec_clear(&problems);
	free(ssl);
	free(json);
}

/* A pyenv interpreter keeps libpython's debug info: that is shipped too. */
static void test_unstripped_interpreter(void **state)
{
	struct profile p;
	struct proc *pr;
	struct buf err = BUF_INIT, out = BUF_INIT, cmd = BUF_INIT;
	struct strvec problems = STRVEC_INIT;
	const struct finding *fd;
	struct elf_resolver r;
	struct elf_python py;
	char *ctypes;
	glob_t g;

	if (glob("/root/.pyenv/versions/3.1*/bin/python3", 0, NULL, &g)) {
		print_message("not checked: no pyenv Python 3.1x under /root/.pyenv/versions\n");
		return;
	}
	elf_resolver_init(&r);
	elf_python_init(&py);
	assert_int_equal(elf_python_inspect(&r, g.gl_pathv[0], &py, &err), 0);
	if (!py.lib_facts || !elf_facts_unstripped(py.lib_facts)) {
		print_message("not checked: %s has a stripped or static libpython\n", g.gl_pathv[0]);
		goto out;
	}
	/* The byte count is readelf's: .symtab, .strtab and .debug_* sizes. */
	buf_addf(&cmd, "readelf -SW '%s'", py.libpython);
	assert_int_equal(run_cmd(cmd.buf, &out), 0);
	{
		unsigned long long total = 0, addr, off, size;
		char name[256], type[64];
		const char *l;

		for (l = out.buf; (l = strstr(l, "\n  [")); l++) {
			const char *close = strchr(l, ']');

			if (sscanf(close + 1, "%255s %63s %llx %llx %llx", name, type, &addr, &off, &size) == 5 &&
			    (!strcmp(name, ".symtab") || !strcmp(name, ".strtab") || starts_with(name, ".debug")))
				total += size;
		}
		assert_true(total > 0);
		assert_int_equal(elf_facts_strippable_bytes(py.lib_facts), total);
	}
	ctypes = module_file(g.gl_pathv[0], "_ctypes");
	assert_non_null(ctypes);
	profile_init(&p);
	p.python = xstrdup(g.gl_pathv[0]);
	pr = run_add_proc(profile_add_run(&p));
	add_native(pr, "_ctypes", ctypes, 100, 1);
	buf_reset(&err);
	elf_annotate_profile(&p, &problems);
	assert_int_equal(problems.nr, 0);
	findings_run(&p, native_rules);
	fd = find_finding(&p, "native-unstripped", 0);
	assert_non_null(fd);
	assert_non_null(strstr(fd->evidence, "libpython ("));
	assert_non_null(strstr(fd->evidence, py.libpython));
	profile_release(&p);
	free(ctypes);
out:
	globfree(&g);
	elf_python_release(&py);
	elf_resolver_release(&r);
	strvec_clear(&problems);
	buf_release(&err);
	buf_release(&out);
	buf_release(&cmd);
}

/* Unreadable extensions: one problem each, whole, and one profile warning each after the analysis. */
static void test_unreadable_extensions_are_one_problem_each(void **state)
{
	struct profile p;
	struct proc *pr;
	struct strvec problems = STRVEC_INIT;
	size_t i, hits = 0;

	profile_init(&p);
	pr = run_add_proc(profile_add_run(&p));
	add_native(pr, "gone_a", "/nonexistent/coldstart-test/gone_a.so", 100, 100);
	add_native(pr, "gone_b", "/nonexistent/coldstart-test/gone_b.so", 100, 200);
	elf_annotate_profile(&p, &problems);
	assert_int_equal(problems.nr, 2);
	for (i = 0; i < problems.nr; i++) {
		assert_non_null(strstr(problems.v[i], i ? "gone_b.so" : "gone_a.so"));
		assert_null(strchr(problems.v[i], '\n'));
	}
	strvec_clear(&problems);

	profile_analyze(&p, NULL);
	for (i = 0; i < p.nr_warnings; i++)
		if (strstr(p.warnings[i].msg, "/nonexistent/coldstart-test/gone_")) {
			assert_null(strchr(p.warnings[i].msg, '\n'));
			hits++;
		}
	assert_int_equal(hits, 2);
	profile_release(&p);
}

/* The version finders over bytes, as the linker and distributions lay them out. */
static void test_pyversion(void **state)
{
	static const char merged[] = "GCC: (Debian 12.2.0-14)\0/build/Python-3.13.0\0x";
	static const char several[] = "3.9.1\0libpython3.11.so.1.0\0"
				      "3.11.2+\0";
	static const char lone[] = "abc\0"
				   "3.12.0rc1\0";
	static const char none[] = "3.x\0"
				   "1.2.3\0"
				   "3.11.\0";
	char mm[16], small[4];
	char *v;

	assert_true(pyversion_major_minor("libpython3.11.so.1.0", 20, mm, sizeof(mm)));
	assert_string_equal(mm, "3.11");
	assert_true(pyversion_major_minor("_ssl.cpython-313-x86_64-linux-gnu.so", 36, mm, sizeof(mm)));
	assert_string_equal(mm, "3.13");
	assert_false(pyversion_major_minor("libpython3.11.so", 16, small, sizeof(small)));
	assert_false(pyversion_major_minor("libfoo.so.3", 11, mm, sizeof(mm)));
	/* A version merged into the tail of a longer string, picked by the soname. */
	v = pyversion_find(merged, sizeof(merged), "libpython3.13.so.1.0");
	assert_string_equal(v, "3.13.0");
	free(v);
	/* Several candidates: the major.minor the data names elsewhere picks one. */
	v = pyversion_find(several, sizeof(several), NULL);
	assert_string_equal(v, "3.11.2+");
	free(v);
	v = pyversion_find(lone, sizeof(lone), NULL);
	assert_string_equal(v, "3.12.0rc1");
	free(v);
	assert_null(pyversion_find(none, sizeof(none), NULL));
	/* Named, but no full version: the major.minor alone. */
	v = pyversion_find(none, sizeof(none), "libpython3.10.so");
	assert_string_equal(v, "3.10");
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_extensions),
		cmocka_unit_test(test_resolve_real),
		cmocka_unit_test(test_interpreters),
		cmocka_unit_test(test_hostile_files),
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_no_section_headers),
		cmocka_unit_test(test_resolver_loop),
		cmocka_unit_test(test_resolver_depth_cap),
		cmocka_unit_test(test_resolver_search_order),
		cmocka_unit_test(test_ldcache),
		cmocka_unit_test(test_json_roundtrip),
		cmocka_unit_test(test_profile_section_and_findings),
		cmocka_unit_test(test_heavy_load_names_what_to_make_lazy),
		cmocka_unit_test(test_unstripped_interpreter),
		cmocka_unit_test(test_unreadable_extensions_are_one_problem_each),
		cmocka_unit_test(test_pyversion),
	};
	char *here = realpath(__FILE__, NULL);

	/* __FILE__ is tests/unit/test_elf.c, relative to where make runs. */
	if (!here) {
		fprintf(stderr, "test_elf: cannot find %s from %s\n", __FILE__, getcwd(NULL, 0));
		return 1;
	}
	*strrchr(here, '/') = '\0';
	*strrchr(here, '/') = '\0';
	snprintf(fixtures, sizeof(fixtures), "%s/fixtures/elf", here);
	free(here);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
