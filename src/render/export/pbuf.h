/*
 * A protocol-buffers writer for the two binary exports (pprof's
 * profile.proto, OTLP's trace protos): varints, fixed-width numbers, bytes
 * and nested messages appended to a struct buf.
 *
 * Why not libprotobuf-c: its messages are generated from the .proto files
 * by protoc-c at build time, which would add a code generator and six
 * vendored .proto files to the build for two writers that only ever emit a
 * few field kinds.  Writing is the easy half of protobuf (no unknown
 * fields, no validation); the tests decode every byte with the formats'
 * own readers (go tool pprof, the OpenTelemetry bindings).
 */
#ifndef COLDSTART_PBUF_H
#define COLDSTART_PBUF_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* Wire types. */
#define PB_VARINT 0
#define PB_FIXED64 1
#define PB_LEN 2
#define PB_FIXED32 5

void pb_varint(struct buf *out, uint64_t v);
void pb_tag(struct buf *out, uint32_t field, int wire);
/* Field = value for uint32/64, int32/64 (negative as ten bytes, as protobuf does), bool, enum. */
void pb_uint(struct buf *out, uint32_t field, uint64_t v);
void pb_int(struct buf *out, uint32_t field, int64_t v);
void pb_fixed64(struct buf *out, uint32_t field, uint64_t v);
void pb_fixed32(struct buf *out, uint32_t field, uint32_t v);
void pb_double(struct buf *out, uint32_t field, double v);
/* A bytes or string field (s: a C string). */
void pb_bytes(struct buf *out, uint32_t field, const void *data, size_t len);
void pb_str(struct buf *out, uint32_t field, const char *s);

/*
 * A nested message: pb_open returns where its body starts, the caller
 * appends the body, pb_close writes the tag and the length in front of it
 * (moving the body up by their few bytes).  Opens nest like parentheses.
 */
size_t pb_open(struct buf *out);
void pb_close(struct buf *out, uint32_t field, size_t start);

#endif
