/*
 * The native extensions of a profile: their life cycle and their JSON.  The
 * ELF facts inside are written and read by elf_json.c.
 */
#include "model/native.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_json.h"
#include "json_util.h"

static void ext_release(struct native_ext *e)
{
	free(e->module);
	free(e->file);
	free(e->error);
	elf_tree_release(&e->tree);
}

static void ext_to_json(const struct native_ext *e, struct buf *out)
{
	buf_adds(out, "{\"run\":");
	buf_add_i64(out, (int64_t)e->run);
	buf_adds(out, ",\"proc\":");
	buf_add_i64(out, (int64_t)e->proc);
	buf_adds(out, ",\"node\":");
	buf_add_i64(out, e->node);
	buf_adds(out, ",\"module\":");
	buf_add_json_str(out, e->module, strlen(e->module));
	buf_adds(out, ",\"file\":");
	buf_add_json_str(out, e->file, strlen(e->file));
	buf_adds(out, ",\"load_us\":");
	buf_add_i64(out, e->load_us);
	buf_adds(out, ",\"error\":");
	if (e->error)
		buf_add_json_str(out, e->error, strlen(e->error));
	else
		buf_adds(out, "null");
	buf_adds(out, ",\"tree\":");
	elf_tree_to_json(&e->tree, out);
	buf_addch(out, '}');
}

/* elf_json's readers take text: v as compact JSON, NULL with err set. */
static char *dump(json_t *v, struct buf *err)
{
	char *text = json_dumps(v, JSON_COMPACT);

	if (!text)
		buf_adds(err, "bad native JSON: cannot encode a value");
	return text;
}

static int tree_from_json(json_t *v, struct elf_tree *t, struct elf_facts_list *owner, struct buf *err)
{
	char *text = dump(v, err);
	int ret = text ? elf_tree_from_json(text, strlen(text), t, owner, err) : -1;

	free(text);
	return ret;
}

static int python_from_json(json_t *v, struct elf_python *py, struct elf_facts_list *owner, struct buf *err)
{
	char *text = dump(v, err);
	int ret = text ? elf_python_from_json(text, strlen(text), py, owner, err) : -1;

	free(text);
	return ret;
}

static int ext_from_json(struct native_set *n, json_t *o, size_t i, struct buf *err)
{
	struct native_ext *e;
	json_t *lu = json_object_get(o, "load_us"), *tree;

	if (!json_is_object(o) || !json_string_value(json_object_get(o, "module")) ||
	    !json_string_value(json_object_get(o, "file"))) {
		buf_addf(err, "bad native JSON: extension %zu has no module or file", i);
		return -1;
	}
	e = native_set_add(n);
	e->run = (size_t)json_integer_value(json_object_get(o, "run"));
	e->proc = (size_t)json_integer_value(json_object_get(o, "proc"));
	e->node = (int32_t)json_integer_value(json_object_get(o, "node"));
	e->module = json_util_strdup(o, "module");
	e->file = json_util_strdup(o, "file");
	e->load_us = json_is_integer(lu) ? json_integer_value(lu) : -1;
	e->error = json_util_strdup(o, "error");
	tree = json_object_get(o, "tree");
	if (json_is_array(tree) && tree_from_json(tree, &e->tree, &n->facts, err))
		return -1;
	if (!e->tree.nr && !e->error)
		e->error = xstrdup("no facts recorded");
	return 0;
}

void native_set_init(struct native_set *n)
{
	memset(n, 0, sizeof(*n));
	elf_python_init(&n->py);
}

void native_set_release(struct native_set *n)
{
	size_t i;

	for (i = 0; i < n->nr; i++)
		ext_release(&n->exts[i]);
	free(n->exts);
	elf_python_release(&n->py);
	elf_facts_list_release(&n->facts);
	native_set_init(n);
}

struct native_ext *native_set_add(struct native_set *n)
{
	struct native_ext *e;

	ALLOC_GROW(n->exts, n->nr + 1, n->alloc);
	e = &n->exts[n->nr++];
	memset(e, 0, sizeof(*e));
	e->load_us = -1;
	elf_tree_init(&e->tree);
	return e;
}

void native_set_to_json(const struct native_set *n, struct buf *out)
{
	size_t i;

	if (!n->annotated) {
		buf_adds(out, "null");
		return;
	}
	buf_adds(out, "{\"python\":");
	if (n->has_python)
		elf_python_to_json(&n->py, out);
	else
		buf_adds(out, "null");
	buf_adds(out, ",\"extensions\":[");
	for (i = 0; i < n->nr; i++) {
		if (i)
			buf_addch(out, ',');
		ext_to_json(&n->exts[i], out);
	}
	buf_adds(out, "]}");
}

int native_set_from_json(struct native_set *n, const char *text, size_t len, struct buf *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(text, len, JSON_DECODE_ANY, &jerr), *exts, *py;
	size_t i;
	int ret = -1;

	native_set_release(n);
	if (!root) {
		buf_addf(err, "bad native JSON at line %d: %s", jerr.line, jerr.text);
		goto out;
	}
	if (json_is_null(root)) {
		ret = 0;
		goto out;
	}
	exts = json_object_get(root, "extensions");
	if (!json_is_object(root) || !json_is_array(exts)) {
		buf_adds(err, "bad native JSON: no \"extensions\" array");
		goto out;
	}
	n->annotated = true;
	py = json_object_get(root, "python");
	if (json_is_object(py)) {
		if (python_from_json(py, &n->py, &n->facts, err))
			goto out;
		n->has_python = true;
	}
	for (i = 0; i < json_array_size(exts); i++)
		if (ext_from_json(n, json_array_get(exts, i), i, err))
			goto out;
	ret = 0;
out:
	if (ret)
		native_set_release(n);
	if (root)
		json_decref(root);
	return ret;
}
