// corpus: tests/fixtures/elf
/*
 * libFuzzer target for the ELF reader and the ld.so.cache parser: any input
 * must give facts or an error, never a crash, a hang or a leak.  The facts
 * also go through JSON and back.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elf/elf_json.h"
#include "elf/elf_ldcache.h"
#include "elf/elffile.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_facts f, g;
	struct elf_ldcache c;
	struct buf err = BUF_INIT, json = BUF_INIT;

	elf_facts_init(&f);
	elf_facts_init(&g);
	if (!elf_inspect_mem("fuzz.so", data, size, &f, &err)) {
		elf_facts_to_json(&f, &json);
		if (elf_facts_from_json(json.buf, json.len, &g, &err))
			BUG("facts JSON does not read back: %s", err.buf);
		if (g.needed.nr != f.needed.nr || g.nr_relocs != f.nr_relocs)
			BUG("facts JSON changed on the way back");
	} else if (!err.len) {
		BUG("an error without a message");
	}
	elf_ldcache_init(&c);
	buf_reset(&err);
	if (elf_ldcache_parse(&c, data, size, &err) && !err.len)
		BUG("an ld.so.cache error without a message");
	elf_ldcache_release(&c);
	elf_facts_release(&f);
	elf_facts_release(&g);
	buf_release(&err);
	buf_release(&json);
	return 0;
}
