/*
 * A --ready SPEC and its --ready-status, parsed (ready_spec.c): which probe
 * (fn, tcp:PORT, http://HOST:PORT/PATH, unix:PATH; see ready.h) and, for
 * http, which statuses mean ready.  The probe itself is ready.c's.
 */
#ifndef COLDSTART_READY_SPEC_H
#define COLDSTART_READY_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

enum ready_kind { READY_FN, READY_TCP, READY_HTTP, READY_UNIX };

/* A parsed --ready SPEC (with --ready-status); owns its strings. */
struct ready_spec {
	enum ready_kind kind;
	char *host; /* tcp, http: a dotted IPv4 loopback address */
	int port; /* tcp, http; 0 otherwise */
	char *path; /* http: the request path; unix: the socket path */
	char *statuses; /* http: the accepted statuses as a user reads them, "200-399" */
	uint64_t accept[10]; /* http: bit s % 64 of word s / 64 set when status s means ready */
};

void ready_spec_init(struct ready_spec *rs);
/*
 * Parses spec and, for http://, the accepted statuses: NULL for 200-399, or
 * a list such as "200", "2xx,301" or "200-204,404".  0, or -1 with a
 * message in err (a usage error: statuses given for another probe, a
 * non-loopback host, a bad port, an unknown probe).
 */
int ready_spec_parse(struct ready_spec *rs, const char *spec, const char *statuses, struct buf *err);
void ready_spec_release(struct ready_spec *rs);
/* http: whether an answer with status means ready. */
bool ready_spec_accepts(const struct ready_spec *rs, int status);

#endif
