/*
 * The wire side of a plan run's requests (plan_target.c drives the run):
 * the request heads `coldstart plan` sends, an Fn agent's POST /call on
 * the function's unix socket or a loopback HTTP GET or POST, the test for
 * one whole HTTP/1.x response, the response reduced to what two runs can
 * compare, and the connections.  No state, no waiting: connecting is one
 * attempt, and the caller sends, reads and retries around its own clock.
 */
#ifndef COLDSTART_PLAN_HTTP_H
#define COLDSTART_PLAN_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

/*
 * Sets req to the head of the Fn agent's i-th request (from 0) with a
 * JSON body of body_size bytes: POST /call with Fn-Call-Id and a deadline.
 */
void plan_http_fn_request(uint64_t body_size, size_t i, struct buf *req);
/*
 * Sets req to the head of a request for path on host:port: without
 * has_body a GET, with it a POST of a JSON body of body_size bytes.
 * Connection: close, so the response ends at the latest with the stream.
 */
void plan_http_request(const char *host, int port, const char *path, bool has_body, uint64_t body_size,
		       struct buf *req);
/*
 * 1 when resp holds one whole HTTP response (by Content-Length, chunked
 * transfer's last chunk, or the end of the stream when eof), 0 if not yet,
 * -1 if it is malformed or the stream ended before it was whole.
 */
int plan_http_complete(const struct buf *resp, bool eof);
/*
 * Appends to out the response resp (len bytes) as two runs compare it:
 * the status line, the headers but Date, and the body.  A response
 * without a header end is kept as it is.
 */
void plan_http_normalise(const char *resp, size_t len, struct buf *out);
/* A connected stream socket (close-on-exec) to the unix socket path, or -1 with errno. */
int plan_http_connect_unix(const char *path);
/* A connected TCP socket (close-on-exec) to host:port, trying each address; -1 when none accepts. */
int plan_http_connect_tcp(const char *host, int port);

#endif
