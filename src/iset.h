/*
 * The hash table of src/: an open-addressing set of int32 values
 * (-1 = an empty slot), most often indexes into an array or a pool the
 * caller keeps, whose hashing and equality the caller supplies.  The
 * capacity is a power of two; a caller grows the set before it passes half
 * full and probes linearly from hash & (cap - 1):
 *
 *	if (!s.cap)
 *		iset_init(&s, 256);
 *	else if (s.used * 2 >= s.cap)
 *		iset_grow(&s, hash_at, ctx);
 *	for (k = hash(key) & (s.cap - 1); s.slot[k] >= 0; k = (k + 1) & (s.cap - 1))
 *		if (equal(s.slot[k], key))
 *			break;
 *	if (s.slot[k] < 0) {
 *		s.slot[k] = new_index;
 *		s.used++;
 *	}
 */
#ifndef COLDSTART_ISET_H
#define COLDSTART_ISET_H

#include <stddef.h>
#include <stdint.h>

struct iset {
	int32_t *slot;
	size_t cap, used;
};

/* An empty set of cap slots (a power of two). */
void iset_init(struct iset *s, size_t cap);
void iset_release(struct iset *s);
/* Rehashes into twice the room; hash(ctx, v) gives value v's hash, as the lookups compute it. */
void iset_grow(struct iset *s, uint64_t (*hash)(const void *ctx, int32_t v), const void *ctx);

#endif
