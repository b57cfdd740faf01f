/*
 * The reading side of it_feed_from: a thread that reads a stream in chunks
 * into a ring of slots and splits each chunk, in stream order, into items:
 * the rows it_row_lex takes, and raw bytes (every other line, and lines cut
 * by a chunk's end) for it_feed.  The caller takes the slots in order with
 * it_lexer_next, applies their items and hands each back with it_lexer_done.
 * Nothing here touches a parser: the caller alone builds the trees.
 */
#ifndef COLDSTART_IT_LEXER_H
#define COLDSTART_IT_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A read(2)-like source: up to len bytes into buf, 0 at the end, -1 on error.
 * Called from the lexing thread.
 */
typedef long (*it_read_fn)(void *ctx, char *buf, size_t len);

/*
 * The size of a chunk: 256 KiB keep what the two threads hand over in the
 * caches (1 MiB ones measured ~5 % slower on the 1M-row bench log).
 */
#define IT_LEX_CHUNK ((size_t)1 << 18)

/*
 * 24 bytes, as every row of a big log passes through one: offsets into the
 * slot's chunk, numbers it_row_lex kept under 10^8.  name_len 0 marks raw
 * bytes.
 */
struct it_lex_item {
	uint32_t off, len; /* the raw bytes, or the row's line */
	uint32_t name_off, name_len; /* the row's name, from the line's start */
	uint32_t self_us, cum_us;
};

struct it_lex_slot {
	char *buf; /* the chunk the items point into */
	struct it_lex_item *items;
	size_t nr_items, alloc_items;
	bool ready; /* lexed, not yet handed back */
};

struct it_lexer;

/* Starts the lexing thread over read; NULL when no thread can be started. */
struct it_lexer *it_lexer_start(it_read_fn read, void *ctx);
/* The next slot in stream order, waiting for it; NULL at the end of the stream. */
const struct it_lex_slot *it_lexer_next(struct it_lexer *lx);
/* Hands the slot it_lexer_next returned back to the lexing thread. */
void it_lexer_done(struct it_lexer *lx);
/*
 * Call after it_lexer_next returned NULL: joins the thread and frees lx.
 * Returns 0, or -1 with errno set when read failed.
 */
int it_lexer_finish(struct it_lexer *lx);

#endif
