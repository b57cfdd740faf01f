/*
 * Open-addressing sets of int32 values (see iset.h).
 */
#include "iset.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void iset_release(struct iset *s)
{
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

void iset_init(struct iset *s, size_t cap)
{
	size_t i;

	s->cap = cap;
	s->used = 0;
	s->slot = xmalloc(st_mult(cap, sizeof(*s->slot)));
	for (i = 0; i < cap; i++)
		s->slot[i] = -1;
}

void iset_grow(struct iset *s, uint64_t (*hash)(const void *ctx, int32_t v), const void *ctx)
{
	struct iset n;
	size_t i;

	iset_init(&n, s->cap * 2);
	for (i = 0; i < s->cap; i++) {
		size_t j;

		if (s->slot[i] < 0)
			continue;
		for (j = hash(ctx, s->slot[i]) & (n.cap - 1); n.slot[j] >= 0; j = (j + 1) & (n.cap - 1))
			;
		n.slot[j] = s->slot[i];
		n.used++;
	}
	free(s->slot);
	*s = n;
}
