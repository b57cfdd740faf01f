/*
 * HTTP/1.1 to a loopback server, the client side: when a response is
 * complete (and its status), a receive stamped by the kernel, and the load
 * of `compare --requests N`: N GET requests sent one after another once the
 * server is ready, each on a connection of its own, each timed from the
 * connect to the last byte of its answer on CLOCK_MONOTONIC.
 *
 *	struct http_load *hl = http_load_new(spec, n, timeout_us);
 *	loop: fd = http_load_pollfd(hl, &events, &ms); poll; rc = http_load_step(hl);
 *	until rc != 0; http_load_result(hl, &res); http_load_free(hl);
 *
 * Nothing blocks: the caller's loop goes on reading the target's output
 * meanwhile, so a server that writes while it answers never waits on us.
 */
#ifndef COLDSTART_HTTP_LOAD_H
#define COLDSTART_HTTP_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

#include "sys/ready_spec.h"

/* The most requests one run may send (compare --requests). */
#define HTTP_LOAD_MAX 100000

/*
 * The status of the HTTP response in resp once it is all in (the headers,
 * then Content-Length bytes, the last chunk of a chunked body, or the end of
 * the stream when eof and neither is given); 0 while incomplete, -1 when it
 * is not HTTP.
 */
int http_response_status(const struct buf *resp, bool eof);

/*
 * recv() from fd that also sets *arrived_ns (CLOCK_MONOTONIC) to when the
 * data arrived, from the socket's SO_TIMESTAMPNS, when the kernel stamped it
 * (left alone otherwise): on a loaded machine the loop may read an answer
 * milliseconds after it came.
 */
ssize_t http_recv_stamped(int fd, char *chunk, size_t size, int64_t *arrived_ns);

/*
 * Reads all fd has now (fd is non-blocking) into resp, with *arrived_ns as
 * http_recv_stamped sets it: 0 when it would block, 1 at the end of the
 * stream, -1 with errno on an error, and with errno E2BIG when resp would
 * pass max bytes.
 */
int http_read_available(int fd, struct buf *resp, size_t max, int64_t *arrived_ns);

/* What a load measured. */
struct http_load_result {
	size_t asked; /* n */
	size_t ok; /* answered with a status the spec accepts */
	size_t failed; /* asked - ok: refused, reset, not HTTP, another status, timed out, never sent */
	/* The latency of the ok ones: the median and the 95th percentile (nearest rank); UNKNOWN without. */
	int64_t median_us, p95_us;
	const char *failure; /* how the first failure went (owned by the load), or NULL */
};

struct http_load;

/*
 * A load of n (1..HTTP_LOAD_MAX) requests GET spec->path to spec->host:port
 * (spec: READY_HTTP, which must outlive the load); a request not answered
 * within timeout_us ends the load (the rest count as failed).
 */
struct http_load *http_load_new(const struct ready_spec *spec, size_t n, int64_t timeout_us);
/* The descriptor to poll and its events (-1: none), and the longest the loop may sleep. */
int http_load_pollfd(struct http_load *hl, short *events, int *timeout_ms);
/* Advances the load without blocking: 0 while requests remain, 1 when it is over. */
int http_load_step(struct http_load *hl);
/* Ends the load where it is (the server exited): the requests not answered count as failed. */
void http_load_abandon(struct http_load *hl);
/* The figures so far (over the requests answered). */
void http_load_result(struct http_load *hl, struct http_load_result *out);
/* Closes the socket.  NULL is fine. */
void http_load_free(struct http_load *hl);

#endif
