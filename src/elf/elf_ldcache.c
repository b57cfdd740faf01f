/*
 * The /etc/ld.so.cache reader: the table of sonames and paths the dynamic
 * loader consults after RPATH, LD_LIBRARY_PATH and RUNPATH.
 */
#include "elf/elf_ldcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LDCACHE_MAGIC "glibc-ld.so.cache"
#define LDCACHE_VERSION "1.1"
#define LDCACHE_OLD_MAGIC "ld.so-1.7.0"
#define LDCACHE_HEADER 48 /* struct cache_file_new */
#define LDCACHE_ENTRY 24 /* struct file_entry_new */
#define LDCACHE_OLD_ENTRY 12 /* struct file_entry (old format) */

static void ldcache_add(struct elf_ldcache *c, const char *key, const char *value, int32_t flags, uint64_t hwcap)
{
	struct elf_ldcache_entry *en;

	ALLOC_GROW(c->entries, c->nr + 1, c->alloc);
	en = &c->entries[c->nr++];
	en->key = key;
	en->value = value;
	en->flags = flags;
	en->hwcap = hwcap;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* A NUL-terminated string at base + off within [base, base + len), or NULL. */
static const char *ldcache_str(const char *base, size_t len, uint32_t off)
{
	if (off >= len || !memchr(base + off, '\0', len - off))
		return NULL;
	return base + off;
}

void elf_ldcache_init(struct elf_ldcache *c)
{
	memset(c, 0, sizeof(*c));
	buf_init(&c->data, 0);
}

void elf_ldcache_release(struct elf_ldcache *c)
{
	buf_release(&c->data);
	free(c->entries);
	elf_ldcache_init(c);
}

int elf_ldcache_parse(struct elf_ldcache *c, const void *data, size_t len, struct buf *err)
{
	const unsigned char *p;
	const char *base;
	size_t start = 0, avail, nlibs, i;
	int ret = -1;

	elf_ldcache_release(c);
	buf_add(&c->data, data, len);
	p = (const unsigned char *)c->data.buf;
	/* An old-format table may come first; the new one follows it, 8-aligned. */
	if (len >= 16 && !memcmp(p, LDCACHE_OLD_MAGIC, 11)) {
		uint32_t old = rd32(p + 12);

		if (old > (len - 16) / LDCACHE_OLD_ENTRY) {
			buf_adds(err, "bad ld.so.cache: old table larger than the file");
			goto out;
		}
		start = 16 + (size_t)old * LDCACHE_OLD_ENTRY;
		start = (start + 7) & ~(size_t)7;
	}
	if (start > len || len - start < LDCACHE_HEADER || memcmp(p + start, LDCACHE_MAGIC, 17) ||
	    memcmp(p + start + 17, LDCACHE_VERSION, 3)) {
		buf_adds(err, "bad ld.so.cache: no glibc-ld.so.cache1.1 header");
		goto out;
	}
	avail = len - start;
	base = c->data.buf + start;
	nlibs = rd32(p + start + 20);
	if (nlibs > (avail - LDCACHE_HEADER) / LDCACHE_ENTRY) {
		buf_addf(err, "bad ld.so.cache: %zu entries do not fit in %zu bytes", nlibs, avail);
		goto out;
	}
	for (i = 0; i < nlibs; i++) {
		const unsigned char *en = p + start + LDCACHE_HEADER + i * LDCACHE_ENTRY;
		const char *key = ldcache_str(base, avail, rd32(en + 4));
		const char *value = ldcache_str(base, avail, rd32(en + 8));

		if (!key || !value) {
			buf_addf(err, "bad ld.so.cache: entry %zu points outside the file", i);
			goto out;
		}
		ldcache_add(c, key, value, (int32_t)rd32(en), rd64(en + 16));
	}
	ret = 0;
out:
	if (ret)
		elf_ldcache_release(c);
	return ret;
}

int elf_ldcache_load(struct elf_ldcache *c, const char *path, struct buf *err)
{
	struct buf data = BUF_INIT;
	int ret = -1;

	elf_ldcache_release(c);
	if (buf_read_file(&data, path)) {
		buf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (elf_ldcache_parse(c, data.buf, data.len, err)) {
		buf_addf(err, " ('%s')", path);
		goto out;
	}
	ret = 0;
out:
	buf_release(&data);
	return ret;
}
