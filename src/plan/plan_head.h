/*
 * The head part of a plan's code archive (docs/plan.md, "The head part"):
 * the members the applier reads at every start, marshalled at the end of
 * the archive, so that applying the plan reads them with one
 * marshal.loads instead of parsing them as JSON.
 */
#ifndef COLDSTART_PLAN_HEAD_H
#define COLDSTART_PLAN_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util.h"

/* The CRC-32C (Castagnoli, as the _plancode extension's crc32c()) of n bytes at p. */
uint32_t plan_head_crc32c(const void *p, size_t n);

/*
 * Appends to sb the marshal data (format 4, what Python's marshal.loads
 * reads on every version since 3.4) of v: objects become dicts, arrays
 * lists, strings str (the second and later uses of the same text as
 * references), integers int, reals float, true, false and null their
 * Python values.  0, or -1 with the reason in err (an integer or a length
 * marshal cannot hold).
 */
int plan_head_marshal(struct buf *sb, const json_t *v, struct buf *err);

/*
 * Seals the finished plan root with the archive at code_path (the run's
 * private copy, not yet in place): appends the head part, sets the code
 * member's size, mtime_ns and head ([offset, length, CRC-32C of the part,
 * CRC-32C and length of the JSON text of the members it holds]), and puts
 * root's members in the order the applier reads them (format, version,
 * code, the head's members, then the rest as they were).  The JSON text
 * is what plan_write_json() writes.  A plan without CRC-32Cs (code.sums)
 * or archive entries it can read is left as it is (1).  0 when sealed; -1
 * with the reason in err when the archive could not be written (it is
 * then as it was, and root too).
 */
int plan_head_seal(json_t *root, const char *code_path, struct buf *err);

#endif
