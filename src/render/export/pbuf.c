/*
 * Protocol-buffers writing (pbuf.h): the wire format's varints, fixed-width
 * little-endian numbers and length-delimited fields.
 */
#include "render/export/pbuf.h"

#include <string.h>

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static size_t varint_put(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char)v;
	return n;
}

static void put_le(struct buf *out, uint64_t v, int bytes)
{
	unsigned char b[8];
	int i;

	for (i = 0; i < bytes; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	buf_add(out, b, (size_t)bytes);
}

void pb_varint(struct buf *out, uint64_t v)
{
	unsigned char b[10];

	buf_add(out, b, varint_put(b, v));
}

void pb_tag(struct buf *out, uint32_t field, int wire)
{
	pb_varint(out, ((uint64_t)field << 3) | (uint64_t)wire);
}

void pb_uint(struct buf *out, uint32_t field, uint64_t v)
{
	pb_tag(out, field, PB_VARINT);
	pb_varint(out, v);
}

void pb_int(struct buf *out, uint32_t field, int64_t v)
{
	pb_uint(out, field, (uint64_t)v);
}

void pb_fixed64(struct buf *out, uint32_t field, uint64_t v)
{
	pb_tag(out, field, PB_FIXED64);
	put_le(out, v, 8);
}

void pb_fixed32(struct buf *out, uint32_t field, uint32_t v)
{
	pb_tag(out, field, PB_FIXED32);
	put_le(out, v, 4);
}

void pb_double(struct buf *out, uint32_t field, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	pb_fixed64(out, field, bits);
}

void pb_bytes(struct buf *out, uint32_t field, const void *data, size_t len)
{
	pb_tag(out, field, PB_LEN);
	pb_varint(out, len);
	buf_add(out, data, len);
}

void pb_str(struct buf *out, uint32_t field, const char *s)
{
	pb_bytes(out, field, s, strlen(s));
}

size_t pb_open(struct buf *out)
{
	return out->len;
}

void pb_close(struct buf *out, uint32_t field, size_t start)
{
	size_t body = out->len - start;
	uint64_t tag = ((uint64_t)field << 3) | PB_LEN;
	size_t head = varint_len(tag) + varint_len(body);
	unsigned char *p;

	buf_grow(out, head);
	memmove(out->buf + start + head, out->buf + start, body);
	p = (unsigned char *)out->buf + start;
	p += varint_put(p, tag);
	varint_put(p, body);
	buf_setlen(out, out->len + head);
}
