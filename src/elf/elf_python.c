/*
 * Interpreter facts: the real binary behind a python3 name, whether
 * libpython is linked in or shared, and the version either one names.
 */
#include "elf/elf_python.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/pyversion.h"

/* The first executable called name in $PATH, as a real path; NULL with errno set. */
static char *path_lookup(const char *name)
{
	const char *p = getenv("PATH");
	struct buf cand = BUF_INIT;
	char *real = NULL;

	if (!p || !*p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (p && !real) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);

		buf_reset(&cand);
		buf_add(&cand, len ? p : ".", len ? len : 1);
		buf_addf(&cand, "/%s", name);
		if (!access(cand.buf, X_OK))
			real = realpath(cand.buf, NULL);
		p = colon ? colon + 1 : NULL;
	}
	buf_release(&cand);
	if (!real)
		errno = ENOENT;
	return real;
}

static void python_version_from_soname(const char *name, struct elf_python *py)
{
	char mm[16];

	if (pyversion_major_minor(name, strlen(name), mm, sizeof(mm)))
		py->version = xstrdup(mm);
}

void elf_python_init(struct elf_python *py)
{
	memset(py, 0, sizeof(*py));
}

void elf_python_release(struct elf_python *py)
{
	free(py->exe);
	free(py->libpython);
	free(py->version);
	elf_python_init(py);
}

int elf_python_inspect(struct elf_resolver *r, const char *path, struct elf_python *py, struct buf *err)
{
	struct elf_tree t;
	char *real = NULL;
	const struct elf_facts *f;
	size_t i;
	int ret = -1;

	elf_tree_init(&t);
	elf_python_release(py);
	real = strchr(path, '/') ? realpath(path, NULL) : path_lookup(path);
	if (!real) {
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (elf_resolve(r, real, &t, err))
		goto out;
	f = t.libs[0].facts;
	if (f->type != ET_EXEC && f->type != ET_DYN) {
		buf_addf(err, "'%s' is not an ELF executable", real);
		goto out;
	}
	py->exe = real;
	real = NULL;
	py->exe_facts = f;
	if (f->libpython) {
		py->shared = true;
		for (i = 1; i < t.nr; i++)
			if (!strcmp(t.libs[i].name, f->libpython) && t.libs[i].facts) {
				py->libpython = realpath(t.libs[i].path, NULL);
				py->lib_facts = t.libs[i].facts;
			}
		if (py->lib_facts && py->lib_facts->py_version)
			py->version = xstrdup(py->lib_facts->py_version);
		else
			python_version_from_soname(f->libpython, py);
	} else if (f->py_version) {
		py->version = xstrdup(f->py_version);
	}
	ret = 0;
out:
	free(real);
	elf_tree_release(&t);
	if (ret)
		elf_python_release(py);
	return ret;
}
