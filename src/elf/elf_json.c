/*
 * ELF facts, resolved trees and interpreter facts as JSON, and back: what
 * `coldstart inspect --json` prints and what a profile keeps of its native
 * extensions.
 */
#include "elf/elf_json.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"

static void json_str_field(struct buf *out, const char *key, const char *val, bool *first)
{
	if (!*first)
		buf_addch(out, ',');
	*first = false;
	buf_add_json_str(out, key, strlen(key));
	buf_addch(out, ':');
	if (val)
		buf_add_json_str(out, val, strlen(val));
	else
		buf_adds(out, "null");
}

static void json_int_field(struct buf *out, const char *key, int64_t v, bool *first)
{
	if (!*first)
		buf_addch(out, ',');
	*first = false;
	buf_add_json_str(out, key, strlen(key));
	buf_addch(out, ':');
	buf_add_i64(out, v);
}

static void json_bool_field(struct buf *out, const char *key, bool v, bool *first)
{
	if (!*first)
		buf_addch(out, ',');
	*first = false;
	buf_add_json_str(out, key, strlen(key));
	buf_adds(out, v ? ":true" : ":false");
}

static void json_strvec_field(struct buf *out, const char *key, const struct strvec *sv, bool *first)
{
	size_t i;

	if (!*first)
		buf_addch(out, ',');
	*first = false;
	buf_add_json_str(out, key, strlen(key));
	buf_adds(out, ":[");
	for (i = 0; i < sv->nr; i++) {
		if (i)
			buf_addch(out, ',');
		buf_add_json_str(out, sv->v[i], strlen(sv->v[i]));
	}
	buf_addch(out, ']');
}

static int64_t clamp64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static uint64_t json_u64(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static int facts_from_obj(json_t *root, struct elf_facts *out, struct buf *err)
{
	json_t *arr;
	size_t i;

	elf_facts_release(out);
	if (!json_is_object(root)) {
		buf_adds(err, "bad ELF facts JSON: not an object");
		return -1;
	}
	out->path = json_util_strdup(root, "path");
	out->file_size = (int64_t)json_u64(root, "file_size");
	out->elf_class = (int)json_u64(root, "class");
	out->big_endian = json_is_true(json_object_get(root, "big_endian"));
	out->machine = (unsigned)json_u64(root, "machine");
	out->type = (unsigned)json_u64(root, "type");
	out->nr_load = json_u64(root, "load_segments");
	out->load_filesz = json_u64(root, "load_filesz");
	out->load_memsz = json_u64(root, "load_memsz");
	out->interp = json_util_strdup(root, "interp");
	out->soname = json_util_strdup(root, "soname");
	out->rpath = json_util_strdup(root, "rpath");
	out->runpath = json_util_strdup(root, "runpath");
	arr = json_object_get(root, "needed");
	for (i = 0; json_is_array(arr) && i < json_array_size(arr); i++) {
		const char *s = json_string_value(json_array_get(arr, i));

		if (s)
			strvec_push(&out->needed, s);
	}
	out->nr_relocs = json_u64(root, "relocs");
	out->nr_plt_relocs = json_u64(root, "plt_relocs");
	out->nr_relative = json_u64(root, "relative_relocs");
	out->nr_dynsyms = json_u64(root, "dynsyms");
	out->nr_symtab = json_u64(root, "symtab");
	out->symtab_bytes = json_u64(root, "symtab_bytes");
	out->nr_debug_sections = json_u64(root, "debug_sections");
	out->debug_bytes = json_u64(root, "debug_bytes");
	out->has_debuglink = json_is_true(json_object_get(root, "debuglink"));
	out->build_id = json_util_strdup(root, "build_id");
	out->libpython = json_util_strdup(root, "libpython");
	out->defines_python = json_is_true(json_object_get(root, "defines_python"));
	out->py_version = json_util_strdup(root, "python_version");
	arr = json_object_get(root, "warnings");
	for (i = 0; json_is_array(arr) && i < json_array_size(arr); i++) {
		const char *s = json_string_value(json_array_get(arr, i));

		if (s)
			strvec_push(&out->warnings, s);
	}
	return 0;
}

/* Reads one facts object into a new struct owned by owner; NULL with err set. */
static const struct elf_facts *owned_facts_from_obj(json_t *o, struct elf_facts_list *owner, struct buf *err)
{
	struct elf_facts *f = xmalloc(sizeof(*f));

	elf_facts_init(f);
	if (facts_from_obj(o, f, err)) {
		elf_facts_release(f);
		free(f);
		return NULL;
	}
	ALLOC_GROW(owner->v, owner->nr + 1, owner->alloc);
	owner->v[owner->nr++] = f;
	return f;
}

static const char *how_const(const char *s)
{
	static const char *const hows[] = { "root",	   "rpath",   "runpath", "LD_LIBRARY_PATH",
					    "ld.so.cache", "default", "path",	 "loaded" };
	size_t i;

	for (i = 0; s && i < ARRAY_SIZE(hows); i++)
		if (!strcmp(s, hows[i]))
			return hows[i];
	return NULL;
}

static int tree_from_arr(json_t *arr, struct elf_tree *t, struct elf_facts_list *owner, struct buf *err)
{
	size_t i;

	for (i = 0; i < json_array_size(arr); i++) {
		json_t *o = json_array_get(arr, i), *facts;
		struct elf_lib *l;
		json_int_t parent;

		if (!json_is_object(o) || !json_string_value(json_object_get(o, "name"))) {
			buf_addf(err, "bad native JSON: tree entry %zu has no name", i);
			return -1;
		}
		parent = json_integer_value(json_object_get(o, "parent"));
		if (i == 0 ? parent != -1 : (parent < 0 || (size_t)parent >= i)) {
			buf_addf(err, "bad native JSON: tree entry %zu has a bad parent", i);
			return -1;
		}
		ALLOC_GROW(t->libs, t->nr + 1, t->alloc);
		l = &t->libs[t->nr++];
		memset(l, 0, sizeof(*l));
		l->name = json_util_strdup(o, "name");
		l->path = json_util_strdup(o, "path");
		l->how = how_const(json_string_value(json_object_get(o, "how")));
		l->parent = (int)parent;
		l->depth = i ? t->libs[parent].depth + 1 : 0;
		l->preloaded = json_is_true(json_object_get(o, "preloaded"));
		l->error = json_util_strdup(o, "error");
		facts = json_object_get(o, "facts");
		if (json_is_object(facts) && !(l->facts = owned_facts_from_obj(facts, owner, err)))
			return -1;
	}
	/* A root without facts is only valid with an error; keep the tree empty. */
	if (!t->nr || !t->libs[0].facts)
		elf_tree_release(t);
	return 0;
}

void elf_facts_to_json(const struct elf_facts *f, struct buf *out)
{
	bool first = true;

	buf_addch(out, '{');
	json_str_field(out, "path", f->path, &first);
	json_int_field(out, "file_size", f->file_size, &first);
	json_int_field(out, "class", f->elf_class, &first);
	json_bool_field(out, "big_endian", f->big_endian, &first);
	json_int_field(out, "machine", f->machine, &first);
	json_int_field(out, "type", f->type, &first);
	json_int_field(out, "load_segments", (int64_t)f->nr_load, &first);
	json_int_field(out, "load_filesz", clamp64(f->load_filesz), &first);
	json_int_field(out, "load_memsz", clamp64(f->load_memsz), &first);
	json_str_field(out, "interp", f->interp, &first);
	json_str_field(out, "soname", f->soname, &first);
	json_str_field(out, "rpath", f->rpath, &first);
	json_str_field(out, "runpath", f->runpath, &first);
	json_strvec_field(out, "needed", &f->needed, &first);
	json_int_field(out, "relocs", (int64_t)f->nr_relocs, &first);
	json_int_field(out, "plt_relocs", (int64_t)f->nr_plt_relocs, &first);
	json_int_field(out, "relative_relocs", (int64_t)f->nr_relative, &first);
	json_int_field(out, "dynsyms", (int64_t)f->nr_dynsyms, &first);
	json_int_field(out, "symtab", (int64_t)f->nr_symtab, &first);
	json_int_field(out, "symtab_bytes", clamp64(f->symtab_bytes), &first);
	json_int_field(out, "debug_sections", (int64_t)f->nr_debug_sections, &first);
	json_int_field(out, "debug_bytes", clamp64(f->debug_bytes), &first);
	json_bool_field(out, "debuglink", f->has_debuglink, &first);
	json_str_field(out, "build_id", f->build_id, &first);
	json_str_field(out, "libpython", f->libpython, &first);
	json_bool_field(out, "defines_python", f->defines_python, &first);
	json_str_field(out, "python_version", f->py_version, &first);
	json_strvec_field(out, "warnings", &f->warnings, &first);
	buf_addch(out, '}');
}

int elf_facts_from_json(const char *text, size_t len, struct elf_facts *out, struct buf *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(text, len, 0, &jerr);
	int ret;

	if (!root) {
		elf_facts_release(out);
		buf_addf(err, "bad ELF facts JSON at line %d: %s", jerr.line, jerr.text);
		return -1;
	}
	ret = facts_from_obj(root, out, err);
	json_decref(root);
	return ret;
}

int elf_tree_from_json(const char *text, size_t len, struct elf_tree *out, struct elf_facts_list *owner,
		       struct buf *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(text, len, 0, &jerr);
	int ret;

	elf_tree_release(out);
	if (!root) {
		buf_addf(err, "bad native JSON at line %d: %s", jerr.line, jerr.text);
		return -1;
	}
	ret = tree_from_arr(root, out, owner, err);
	if (ret)
		elf_tree_release(out);
	json_decref(root);
	return ret;
}

void elf_tree_to_json(const struct elf_tree *t, struct buf *out)
{
	size_t i;

	buf_addch(out, '[');
	for (i = 0; i < t->nr; i++) {
		const struct elf_lib *l = &t->libs[i];
		bool first = true;

		if (i)
			buf_addch(out, ',');
		buf_addch(out, '{');
		json_str_field(out, "name", l->name, &first);
		json_str_field(out, "path", l->path, &first);
		json_str_field(out, "how", l->how, &first);
		json_int_field(out, "parent", l->parent, &first);
		json_int_field(out, "depth", l->depth, &first);
		json_bool_field(out, "preloaded", l->preloaded, &first);
		json_str_field(out, "error", l->error, &first);
		buf_adds(out, ",\"facts\":");
		if (l->facts && !l->preloaded)
			elf_facts_to_json(l->facts, out);
		else
			buf_adds(out, "null");
		buf_addch(out, '}');
	}
	buf_addch(out, ']');
}

void elf_python_to_json(const struct elf_python *py, struct buf *out)
{
	bool first = true;

	buf_addch(out, '{');
	json_str_field(out, "exe", py->exe, &first);
	json_bool_field(out, "shared", py->shared, &first);
	json_str_field(out, "libpython", py->libpython, &first);
	json_str_field(out, "version", py->version, &first);
	json_bool_field(out, "static", !py->shared && py->exe_facts && py->exe_facts->defines_python, &first);
	buf_adds(out, ",\"exe_facts\":");
	if (py->exe_facts)
		elf_facts_to_json(py->exe_facts, out);
	else
		buf_adds(out, "null");
	buf_adds(out, ",\"libpython_facts\":");
	if (py->lib_facts)
		elf_facts_to_json(py->lib_facts, out);
	else
		buf_adds(out, "null");
	buf_addch(out, '}');
}

int elf_python_from_json(const char *text, size_t len, struct elf_python *py, struct elf_facts_list *owner,
			 struct buf *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(text, len, 0, &jerr), *v;
	int ret = -1;

	elf_python_release(py);
	if (!root) {
		buf_addf(err, "bad interpreter JSON at line %d: %s", jerr.line, jerr.text);
		goto out;
	}
	if (!json_is_object(root) || !json_string_value(json_object_get(root, "exe"))) {
		buf_adds(err, "bad interpreter JSON: no \"exe\"");
		goto out;
	}
	py->exe = json_util_strdup(root, "exe");
	py->libpython = json_util_strdup(root, "libpython");
	py->shared = json_is_true(json_object_get(root, "shared"));
	py->version = json_util_strdup(root, "version");
	v = json_object_get(root, "exe_facts");
	if (json_is_object(v) && !(py->exe_facts = owned_facts_from_obj(v, owner, err)))
		goto out;
	v = json_object_get(root, "libpython_facts");
	if (json_is_object(v) && !(py->lib_facts = owned_facts_from_obj(v, owner, err)))
		goto out;
	ret = 0;
out:
	if (ret)
		elf_python_release(py);
	if (root)
		json_decref(root);
	return ret;
}
