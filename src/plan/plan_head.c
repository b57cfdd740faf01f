/*
 * The head part of a plan's code archive (see plan_head.h): a marshal
 * writer for JSON values, the CRC-32C, and the seal that appends the part.
 */
#include "plan/plan_head.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

#define CRC32C_POLY 0x82F63B78u

uint32_t plan_head_crc32c(const void *p, size_t n)
{
	static uint32_t table[256];
	static int have;
	const unsigned char *b = p;
	uint32_t crc = 0xFFFFFFFFu;

	if (!have) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
			table[i] = c;
		}
		have = 1;
	}
	while (n--)
		crc = (crc >> 8) ^ table[(crc ^ *b++) & 0xff];
	return crc ^ 0xFFFFFFFFu;
}

/*
 * marshal's type codes (CPython's Python/marshal.c, format 4); FLAG_REF on
 * a type code registers the object for later TYPE_REFs to it.
 */
enum {
	TYPE_NULL = '0',
	TYPE_NONE = 'N',
	TYPE_FALSE = 'F',
	TYPE_TRUE = 'T',
	TYPE_INT = 'i',
	TYPE_LONG = 'l',
	TYPE_BINARY_FLOAT = 'g',
	TYPE_LIST = '[',
	TYPE_DICT = '{',
	TYPE_UNICODE = 'u',
	TYPE_ASCII = 'a',
	TYPE_SHORT_ASCII = 'z',
	TYPE_REF = 'r',
	FLAG_REF = 0x80,
};

/* The strings written so far, by text, for references to them. */
struct seen {
	const char **text;
	size_t *len;
	int32_t *ref;
	size_t size, used; /* size a power of two, or 0 */
	int32_t next; /* the next reference's number */
};

static uint32_t text_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static void seen_grow(struct seen *t)
{
	struct seen bigger = { .size = t->size ? t->size * 2 : 256, .used = t->used, .next = t->next };

	bigger.text = xcalloc(bigger.size, sizeof(*bigger.text));
	bigger.len = xcalloc(bigger.size, sizeof(*bigger.len));
	bigger.ref = xcalloc(bigger.size, sizeof(*bigger.ref));
	for (size_t i = 0; i < t->size; i++) {
		size_t j;

		if (!t->text[i])
			continue;
		for (j = text_hash(t->text[i], t->len[i]) & (bigger.size - 1); bigger.text[j];
		     j = (j + 1) & (bigger.size - 1))
			;
		bigger.text[j] = t->text[i];
		bigger.len[j] = t->len[i];
		bigger.ref[j] = t->ref[i];
	}
	free(t->text);
	free(t->len);
	free(t->ref);
	*t = bigger;
}

/* s's reference number when written before; else records it as the next one and returns -1. */
static int32_t seen_ref(struct seen *t, const char *s, size_t n)
{
	size_t j;

	if (2 * (t->used + 1) > t->size)
		seen_grow(t);
	for (j = text_hash(s, n) & (t->size - 1); t->text[j]; j = (j + 1) & (t->size - 1))
		if (t->len[j] == n && !memcmp(t->text[j], s, n))
			return t->ref[j];
	t->text[j] = s;
	t->len[j] = n;
	t->ref[j] = t->next++;
	t->used++;
	return -1;
}

static void seen_release(struct seen *t)
{
	free(t->text);
	free(t->len);
	free(t->ref);
}

static void w_u32(struct buf *sb, uint32_t v)
{
	unsigned char b[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };

	buf_add(sb, b, 4);
}

/* An unsigned value as marshal's int: TYPE_INT when it fits in 31 bits, else TYPE_LONG's 15-bit digits. */
static void w_unsigned(struct buf *sb, uint64_t v, int negative)
{
	unsigned char digits[10][2];
	int n = 0;

	if (v <= (negative ? (uint64_t)INT32_MAX + 1 : (uint64_t)INT32_MAX)) {
		buf_addch(sb, TYPE_INT);
		w_u32(sb, negative ? (uint32_t)(0u - (uint32_t)v) : (uint32_t)v);
		return;
	}
	while (v) {
		digits[n][0] = v & 0xff;
		digits[n][1] = (v >> 8) & 0x7f;
		v >>= 15;
		n++;
	}
	buf_addch(sb, TYPE_LONG);
	w_u32(sb, (uint32_t)(negative ? -n : n));
	for (int i = 0; i < n; i++)
		buf_add(sb, digits[i], 2);
}

static int w_str(struct buf *sb, struct seen *t, const char *s, size_t n, struct buf *err)
{
	int32_t ref = seen_ref(t, s, n);
	int ascii = 1;

	if (ref >= 0) {
		buf_addch(sb, TYPE_REF);
		w_u32(sb, (uint32_t)ref);
		return 0;
	}
	if (n > INT32_MAX) {
		buf_addf(err, "a string of %zu bytes is more than marshal holds", n);
		return -1;
	}
	for (size_t i = 0; i < n && ascii; i++)
		ascii = !((unsigned char)s[i] & 0x80);
	if (ascii && n < 256) {
		buf_addch(sb, TYPE_SHORT_ASCII | FLAG_REF);
		buf_addch(sb, (int)n);
	} else {
		buf_addch(sb, (ascii ? TYPE_ASCII : TYPE_UNICODE) | FLAG_REF);
		w_u32(sb, (uint32_t)n);
	}
	buf_add(sb, s, n);
	return 0;
}

static int w_value(struct buf *sb, struct seen *t, const json_t *v, struct buf *err)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		void *it;

		buf_addch(sb, TYPE_DICT);
		for (it = json_object_iter((json_t *)v); it; it = json_object_iter_next((json_t *)v, it)) {
			if (w_str(sb, t, json_object_iter_key(it), json_object_iter_key_len(it), err) < 0 ||
			    w_value(sb, t, json_object_iter_value(it), err) < 0)
				return -1;
		}
		buf_addch(sb, TYPE_NULL);
		return 0;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(v);

		if (n > INT32_MAX) {
			buf_addf(err, "a list of %zu items is more than marshal holds", n);
			return -1;
		}
		buf_addch(sb, TYPE_LIST);
		w_u32(sb, (uint32_t)n);
		for (size_t i = 0; i < n; i++)
			if (w_value(sb, t, json_array_get(v, i), err) < 0)
				return -1;
		return 0;
	}
	case JSON_STRING: return w_str(sb, t, json_string_value(v), json_string_length(v), err);
	case JSON_INTEGER: {
		json_int_t i = json_integer_value(v);

		w_unsigned(sb, i < 0 ? 0 - (uint64_t)i : (uint64_t)i, i < 0);
		return 0;
	}
	case JSON_REAL: {
		double d = json_real_value(v);
		uint64_t bits;

		memcpy(&bits, &d, sizeof(bits));
		buf_addch(sb, TYPE_BINARY_FLOAT);
		w_u32(sb, (uint32_t)bits);
		w_u32(sb, (uint32_t)(bits >> 32));
		return 0;
	}
	case JSON_TRUE: buf_addch(sb, TYPE_TRUE); return 0;
	case JSON_FALSE: buf_addch(sb, TYPE_FALSE); return 0;
	case JSON_NULL: buf_addch(sb, TYPE_NONE); return 0;
	}
	buf_addf(err, "a JSON value of an unknown type");
	return -1;
}

int plan_head_marshal(struct buf *sb, const json_t *v, struct buf *err)
{
	struct seen t = { 0 };
	int r = w_value(sb, &t, v, err);

	seen_release(&t);
	return r;
}

/* A field of code.at's compact form: 1 to 16 lowercase hex digits (plan.py's _parse_at_py). */
static int hex_field(const char *p, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	if (n < 1 || n > 16)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];

		if (c >= '0' && c <= '9')
			x = x << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			x = x << 4 | (uint64_t)(c - 'a' + 10);
		else
			return -1;
	}
	*v = x;
	return 0;
}

/*
 * Appends the archive entries of code.at's compact form s (n bytes) as a
 * marshalled list, None for "-"; -1 when s is not of that form (the plan
 * is then not sealed: the applier says what is wrong with it).
 */
static int w_at(struct buf *sb, const char *s, size_t n)
{
	size_t count = n ? 1 : 0;

	for (size_t i = 0; i < n; i++)
		count += s[i] == ' ';
	if (count > INT32_MAX)
		return -1;
	buf_addch(sb, TYPE_LIST);
	w_u32(sb, (uint32_t)count);
	for (size_t a = 0; n;) {
		size_t b = a, fields = 1;

		while (b < n && s[b] != ' ')
			b++;
		if (b - a == 1 && s[a] == '-') {
			buf_addch(sb, TYPE_NONE);
		} else {
			for (size_t i = a; i < b; i++)
				fields += s[i] == ',';
			buf_addch(sb, TYPE_LIST);
			w_u32(sb, (uint32_t)fields);
			for (size_t f = a;;) {
				size_t e = f;
				uint64_t v;

				while (e < b && s[e] != ',')
					e++;
				if (hex_field(s + f, e - f, &v) < 0)
					return -1;
				w_unsigned(sb, v, 0);
				if (e == b)
					break;
				f = e + 1;
			}
		}
		if (b == n)
			break;
		a = b + 1;
	}
	return 0;
}

/* The members the head part holds, in the order the plan file has them. */
static const char *const head_members[] = { "python", "sys_path", "opcodes", "from", "all", "program", "index" };

/* Puts root's members in the order format, version, code, the head's members, then the others as they were. */
static void order_members(json_t *root)
{
	size_t n = json_object_size(root), k = 0;
	const char **keys = xcalloc(n + 1, sizeof(*keys));
	const char *first[3 + sizeof(head_members) / sizeof(head_members[0])] = { "format", "version", "code" };
	void *it;

	for (size_t i = 0; i < sizeof(head_members) / sizeof(head_members[0]); i++)
		first[3 + i] = head_members[i];
	for (it = json_object_iter(root); it; it = json_object_iter_next(root, it))
		keys[k++] = xstrdup(json_object_iter_key(it));
	/* Re-inserting a member puts it last: in this order, the members end as wanted. */
	for (size_t i = 0; i < sizeof(first) / sizeof(first[0]) + n; i++) {
		const char *key = i < sizeof(first) / sizeof(first[0]) ? first[i]
								       : keys[i - sizeof(first) / sizeof(first[0])];
		json_t *v = json_object_get(root, key);
		int early = 0;

		if (!v)
			continue;
		if (i >= sizeof(first) / sizeof(first[0])) {
			for (size_t j = 0; j < sizeof(first) / sizeof(first[0]); j++)
				early |= !strcmp(key, first[j]);
			if (early)
				continue;
		}
		json_incref(v);
		json_object_del(root, key);
		json_object_set_new(root, key, v);
	}
	for (size_t i = 0; i < k; i++)
		free((char *)keys[i]);
	free(keys);
}

int plan_head_seal(json_t *root, const char *code_path, struct buf *err)
{
	json_t *code = json_object_get(root, "code"), *sums, *at, *members = NULL, *entry;
	struct buf blob = BUF_INIT;
	char *text = NULL;
	size_t text_len;
	struct stat st;
	off_t off = -1;
	int fd = -1, ret = 1;

	sums = json_object_get(code, "sums");
	at = json_object_get(code, "at");
	if (!json_is_object(code) || !json_is_array(sums) || json_array_size(sums) != 2 ||
	    !json_is_string(json_array_get(sums, 1)) || strcmp(json_string_value(json_array_get(sums, 1)), "crc32c") ||
	    !(json_is_string(at) || json_is_array(at)) || !json_is_array(json_object_get(root, "index")) ||
	    !json_is_integer(json_object_get(code, "size")))
		return 1;
	members = json_object();
	for (size_t i = 0; i < sizeof(head_members) / sizeof(head_members[0]); i++) {
		json_t *v = json_object_get(root, head_members[i]);

		if (v)
			json_object_set(members, head_members[i], v);
	}
	/* The members' JSON text as plan_write_json() writes it, between the braces. */
	text = json_dumps(members, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!text || (text_len = strlen(text)) < 2)
		goto out;
	if (json_is_string(at)) {
		/* The members, then "at" as the applier decodes it. */
		if (plan_head_marshal(&blob, members, err) < 0)
			goto out;
		buf_setlen(&blob, blob.len - 1); /* reopen the dict: drop its TYPE_NULL */
		buf_addch(&blob, TYPE_SHORT_ASCII);
		buf_addch(&blob, 2);
		buf_add(&blob, "at", 2);
		if (w_at(&blob, json_string_value(at), json_string_length(at)) < 0 ||
		    json_string_length(at) > INT32_MAX)
			goto out;
		/*
		 * And the text they were read from: code.at is not in the
		 * members' text, so the applier compares it with the plan's.
		 */
		buf_addch(&blob, TYPE_SHORT_ASCII);
		buf_addch(&blob, 7);
		buf_add(&blob, "at_text", 7);
		buf_addch(&blob, TYPE_ASCII);
		w_u32(&blob, (uint32_t)json_string_length(at));
		buf_add(&blob, json_string_value(at), json_string_length(at));
		buf_addch(&blob, TYPE_NULL);
	} else {
		json_object_set(members, "at", at);
		if (plan_head_marshal(&blob, members, err) < 0)
			goto out;
	}
	fd = open(code_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		buf_addf(err, "cannot write '%s': %s", code_path, strerror(errno));
		ret = -1;
		goto out;
	}
	if (st.st_size != json_integer_value(json_object_get(code, "size")))
		goto out; /* not the archive the plan describes: left alone */
	off = st.st_size;
	if (write_full(fd, blob.buf, blob.len) < 0 || fstat(fd, &st) < 0) {
		buf_addf(err, "cannot write '%s': %s", code_path, strerror(errno));
		if (ftruncate(fd, off) < 0)
			buf_addf(err, " (and cannot cut it back: %s)", strerror(errno));
		ret = -1;
		goto out;
	}
	entry = json_pack("[IIIII]", (json_int_t)off, (json_int_t)blob.len,
			  (json_int_t)plan_head_crc32c(blob.buf, blob.len),
			  (json_int_t)plan_head_crc32c(text + 1, text_len - 2), (json_int_t)(text_len - 2));
	json_object_set_new(code, "head", entry);
	json_object_set_new(code, "size", json_integer((json_int_t)st.st_size));
	json_object_set_new(code, "mtime_ns",
			    json_integer((json_int_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec));
	order_members(root);
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	free(text);
	json_decref(members);
	buf_release(&blob);
	return ret;
}
