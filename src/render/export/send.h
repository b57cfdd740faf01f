/*
 * Sending a run to a backend as it ends: the OTLP trace to a collector's
 * /v1/traces (OTLP/HTTP, protobuf or JSON) and the Prometheus gauges to a
 * Pushgateway, over plain HTTP/1.1 with one deadline for the whole exchange.
 * Nothing here prints; failures come back in err, the URL quoted.
 */
#ifndef COLDSTART_SEND_H
#define COLDSTART_SEND_H

#include <stdbool.h>

#include "render/export/frames.h"
#include "util.h"

/*
 * Whether url is one send can use: "http://HOST[:PORT][/PATH]" (HOST a
 * name, an IPv4 address or [IPv6]).  0, or -1 with the reason in err
 * (https, no host, a bad port, spaces or control bytes).
 */
int send_url_check(const char *url, struct buf *err);

struct send_opts {
	int timeout_ms; /* for connecting, sending and the answer together */
	/*
	 * OTLP: extra request headers as OTEL_EXPORTER_OTLP_HEADERS gives them
	 * ("k1=v1,k2=v2", values percent-encoded); NULL for none.
	 */
	const char *headers;
	bool json; /* OTLP: http/json instead of http/protobuf */
};

/*
 * POSTs p's OTLP trace (export_otlp, o for the run and the time origin) to
 * url; a URL whose path is empty or "/" gets "/v1/traces", as the SDKs'
 * OTEL_EXPORTER_OTLP_ENDPOINT.  0 when the collector answered 2xx; -1 with
 * "cannot send the trace to 'URL': ..." in err.
 */
int send_otlp(const struct profile *p, const struct export_opts *o, const char *url, const struct send_opts *so,
	      struct buf *err);
/*
 * PUTs p's Prometheus gauges to a Pushgateway: to url's path, with
 * "/metrics/job/coldstart" added when it names no job and
 * "/target@base64/..." when it does not group by target, so each target
 * (of each instance the URL names) is its own group, replaced by its next
 * push.
 */
int send_push_gateway(const struct profile *p, const struct export_opts *o, const char *url, const struct send_opts *so,
		      struct buf *err);

#endif
