/*
 * The lexing thread of it_feed_from: reads chunks into a ring of slots and
 * splits each into rows it_row_lex takes and raw bytes, in stream order,
 * while the calling thread applies the slots one after the other.
 */
#include "ingest/it_lexer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/it_row.h"
#include "parallel.h"
#include "util.h"

/* Slots in the ring: the lexing thread may run this many chunks ahead. */
#define LEX_SLOTS 8

struct it_lexer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct it_lex_slot slot[LEX_SLOTS];
	it_read_fn read;
	void *ctx;
	bool done; /* the lexing thread has filled its last slot */
	bool failed; /* read returned -1 */
	int read_errno;
	bool partial; /* the previous chunk ended inside a line (lexing thread only) */
	pthread_t thread;
	unsigned next; /* the slot it_lexer_next returns next (calling thread only) */
};

static void lex_add(struct it_lex_slot *sl, const char *p, size_t len, const struct it_fast_row *rec)
{
	struct it_lex_item *it;

	if (sl->nr_items == sl->alloc_items)
		ALLOC_GROW(sl->items, sl->nr_items + 1, sl->alloc_items);
	it = &sl->items[sl->nr_items++];
	it->off = (uint32_t)(p - sl->buf);
	it->len = (uint32_t)len;
	it->name_off = rec ? (uint32_t)(rec->name - p) : 0;
	it->name_len = rec ? rec->name_len : 0;
	it->self_us = rec ? (uint32_t)rec->self_us : 0;
	it->cum_us = rec ? (uint32_t)rec->cum_us : 0;
}

static void lex_chunk(struct it_lexer *lx, struct it_lex_slot *sl, size_t n)
{
	const char *p = sl->buf, *end = sl->buf + n, *raw = NULL;

	sl->nr_items = 0;
	if (lx->partial) {
		const char *nl = memchr(p, '\n', n);

		if (!nl) {
			lex_add(sl, p, n, NULL);
			return;
		}
		raw = p;
		p = nl + 1;
		lx->partial = false;
	}
	while (p < end) {
		struct it_fast_row rec;
		size_t len = it_row_lex(p, end, &rec);
		const char *nl;

		if (len) {
			if (raw)
				lex_add(sl, raw, (size_t)(p - raw), NULL);
			raw = NULL;
			lex_add(sl, p, len, &rec);
			p += len;
			continue;
		}
		if (!raw)
			raw = p;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			lx->partial = true;
			p = end;
			break;
		}
		p = nl + 1;
	}
	if (raw)
		lex_add(sl, raw, (size_t)(p - raw), NULL);
}

static void *lex_main(void *arg)
{
	struct it_lexer *lx = arg;
	unsigned s = 0;

	for (;;) {
		struct it_lex_slot *sl = &lx->slot[s];
		long n;
		int err;

		pthread_mutex_lock(&lx->lock);
		while (sl->ready)
			pthread_cond_wait(&lx->cond, &lx->lock);
		pthread_mutex_unlock(&lx->lock);
		n = lx->read(lx->ctx, sl->buf, IT_LEX_CHUNK);
		err = errno;
		if (n > 0)
			lex_chunk(lx, sl, (size_t)n);
		pthread_mutex_lock(&lx->lock);
		if (n > 0) {
			sl->ready = true;
		} else {
			lx->failed = n < 0;
			lx->read_errno = err;
			lx->done = true;
		}
		pthread_cond_broadcast(&lx->cond);
		pthread_mutex_unlock(&lx->lock);
		if (n <= 0)
			return NULL;
		s = (s + 1) % LEX_SLOTS;
	}
}

static void lexer_free(struct it_lexer *lx)
{
	unsigned s;

	for (s = 0; s < LEX_SLOTS; s++) {
		free(lx->slot[s].buf);
		free(lx->slot[s].items);
	}
	pthread_cond_destroy(&lx->cond);
	pthread_mutex_destroy(&lx->lock);
	free(lx);
}

struct it_lexer *it_lexer_start(it_read_fn read, void *ctx)
{
	struct it_lexer *lx = xcalloc(1, sizeof(*lx));
	unsigned s;

	pthread_mutex_init(&lx->lock, NULL);
	pthread_cond_init(&lx->cond, NULL);
	lx->read = read;
	lx->ctx = ctx;
	for (s = 0; s < LEX_SLOTS; s++)
		lx->slot[s].buf = xmalloc(IT_LEX_CHUNK);
	if (parallel_start(&lx->thread, lex_main, lx) < 0) {
		lexer_free(lx);
		return NULL;
	}
	return lx;
}

const struct it_lex_slot *it_lexer_next(struct it_lexer *lx)
{
	struct it_lex_slot *sl = &lx->slot[lx->next];
	bool have;

	pthread_mutex_lock(&lx->lock);
	while (!sl->ready && !lx->done)
		pthread_cond_wait(&lx->cond, &lx->lock);
	have = sl->ready;
	pthread_mutex_unlock(&lx->lock);
	return have ? sl : NULL;
}

void it_lexer_done(struct it_lexer *lx)
{
	pthread_mutex_lock(&lx->lock);
	lx->slot[lx->next].ready = false;
	pthread_cond_broadcast(&lx->cond);
	pthread_mutex_unlock(&lx->lock);
	lx->next = (lx->next + 1) % LEX_SLOTS;
}

int it_lexer_finish(struct it_lexer *lx)
{
	int ret = 0;

	pthread_join(lx->thread, NULL);
	if (lx->failed) {
		errno = lx->read_errno;
		ret = -1;
	}
	lexer_free(lx);
	return ret;
}
