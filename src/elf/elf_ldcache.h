/*
 * /etc/ld.so.cache, read as glibc writes it.  Nothing here prints: errors go
 * to the caller's err, quoting the file; every offset is checked against the
 * file's size, so a hostile cache gives an error, never a crash.
 */
#ifndef COLDSTART_ELF_LDCACHE_H
#define COLDSTART_ELF_LDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/*
 * /etc/ld.so.cache in the "glibc-ld.so.cache1.1" format (also after an old
 * "ld.so-1.7.0" table).  Entries keep the file's order, which is the order
 * the loader prefers.
 */
struct elf_ldcache_entry {
	const char *key; /* soname, points into data */
	const char *value; /* path, points into data */
	int32_t flags;
	uint64_t hwcap;
};

struct elf_ldcache {
	struct buf data;
	struct elf_ldcache_entry *entries;
	size_t nr, alloc;
};

void elf_ldcache_init(struct elf_ldcache *c);
void elf_ldcache_release(struct elf_ldcache *c);
/* Returns 0, or -1 with err set; c is left empty on error. */
int elf_ldcache_load(struct elf_ldcache *c, const char *path, struct buf *err);
/* Parses a copy of data (for tests and the fuzzer). */
int elf_ldcache_parse(struct elf_ldcache *c, const void *data, size_t len, struct buf *err);

#endif
