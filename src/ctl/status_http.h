/* The controller's status over HTTP (libmicrohttpd): GET /status (JSON) and GET /metrics
 * (Prometheus text format 0.0.4, `sailor_*` names), on loopback unless asked otherwise.
 *
 * The daemon runs in libmicrohttpd's own thread and only ever reads the texts the controller last
 * published, copied under a mutex: a slow client never delays the controller, and a request never
 * sees a half-updated status. Other paths answer 404, other methods 405.
 *
 * Ownership: sl_ctl_http_start allocates the server; sl_ctl_http_stop stops and frees it.
 */
#ifndef SL_CTL_STATUS_HTTP_H
#define SL_CTL_STATUS_HTTP_H

#include "util/err.h"

struct sl_ctl_http;

/* addr is "HOST:PORT" with HOST an IPv4 address (127.0.0.1 for loopback) or "localhost"; PORT 0
 * picks a free port. *port_out receives the port bound. */
int sl_ctl_http_start(struct sl_ctl_http **out, const char *addr, int *port_out,
		      struct sl_err *err);

/* Replaces the texts served (copied). */
void sl_ctl_http_publish(struct sl_ctl_http *h, const char *status_json, const char *metrics);

void sl_ctl_http_stop(struct sl_ctl_http *h);

#endif
