/* The controller's HTTP status server (status_http.h). */
#include "ctl/status_http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/shared_lib.h"

/* libmicrohttpd, opened when a controller first serves --http (util/shared_lib.h says why) */
static struct {
	struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
					   MHD_AccessHandlerCallback, void *, ...);
	void (*stop_daemon)(struct MHD_Daemon *);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *,
							enum MHD_DaemonInfoType, ...);
	struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
							     enum MHD_ResponseMemoryMode);
	enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
	enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
					  struct MHD_Response *);
	void (*destroy_response)(struct MHD_Response *);
} mhd;

static int load_mhd(struct sl_err *err)
{
	if (mhd.start_daemon)
		return 0; /* only the controller's main thread starts servers */
	static const char *const names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so", NULL};
	const struct sl_shared_symbol symbols[] = {
		{"MHD_start_daemon", (void **)&mhd.start_daemon},
		{"MHD_stop_daemon", (void **)&mhd.stop_daemon},
		{"MHD_get_daemon_info", (void **)&mhd.get_daemon_info},
		{"MHD_create_response_from_buffer", (void **)&mhd.create_response_from_buffer},
		{"MHD_add_response_header", (void **)&mhd.add_response_header},
		{"MHD_queue_response", (void **)&mhd.queue_response},
		{"MHD_destroy_response", (void **)&mhd.destroy_response},
	};
	return sl_shared_lib_open(names, symbols, (int)(sizeof(symbols) / sizeof(symbols[0])),
				  "--http needs libmicrohttpd (Debian: "
				  "apt-get install libmicrohttpd12; scripts/install-deps.sh does)", err);
}

struct sl_ctl_http {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock;
	char *status;    /* guarded by lock */
	char *metrics;   /* guarded by lock */
};

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req_cls)
{
	struct sl_ctl_http *h = cls;
	const char *type = "text/plain; charset=utf-8";
	unsigned int code = MHD_HTTP_OK;
	char *body = NULL;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		body = strdup("only GET is served\n");
	} else if (!strcmp(url, "/status")) {
		type = "application/json";
		pthread_mutex_lock(&h->lock);
		body = strdup(h->status ? h->status : "{}\n");
		pthread_mutex_unlock(&h->lock);
	} else if (!strcmp(url, "/metrics")) {
		type = "text/plain; version=0.0.4; charset=utf-8";
		pthread_mutex_lock(&h->lock);
		body = strdup(h->metrics ? h->metrics : "");
		pthread_mutex_unlock(&h->lock);
	} else {
		code = MHD_HTTP_NOT_FOUND;
		body = strdup("not found: try /status or /metrics\n");
	}
	if (!body)
		return MHD_NO;
	struct MHD_Response *resp =
		mhd.create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	mhd.add_response_header(resp, "Content-Type", type);
	enum MHD_Result ret = mhd.queue_response(conn, code, resp);
	mhd.destroy_response(resp);
	return ret;
}

int sl_ctl_http_start(struct sl_ctl_http **out, const char *addr, int *port_out,
		      struct sl_err *err)
{
	*out = NULL;
	char host[256];
	int port = -1;
	const char *colon = strrchr(addr, ':');
	if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(host) ||
	    sscanf(colon + 1, "%d", &port) != 1 || port < 0 || port > 65535)
		return sl_err_set(err, SL_EUSAGE, "--http '%s': expected HOST:PORT such as "
				  "127.0.0.1:8080 (port 0 picks a free one)", addr);
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return sl_err_set(err, SL_EUSAGE, "--http '%s': '%s' is not an IPv4 address (use "
				  "127.0.0.1 for loopback, 0.0.0.0 for every interface)", addr, host);
	int rc = load_mhd(err);
	if (rc)
		return rc;
	struct sl_ctl_http *h = calloc(1, sizeof(*h));
	if (!h)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	pthread_mutex_init(&h->lock, NULL);
	h->daemon = mhd.start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
				     (uint16_t)port, NULL, NULL, answer, h, MHD_OPTION_SOCK_ADDR,
				     (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_TIMEOUT,
				     (unsigned int)10, MHD_OPTION_END);
	if (!h->daemon) {
		pthread_mutex_destroy(&h->lock);
		free(h);
		return sl_err_set(err, SL_EIO, "--http '%s': cannot listen there (port in use? "
				  "try another port or 0)", addr);
	}
	const union MHD_DaemonInfo *info = mhd.get_daemon_info(h->daemon,
								MHD_DAEMON_INFO_BIND_PORT);
	*port_out = info ? (int)info->port : port;
	*out = h;
	return 0;
}

void sl_ctl_http_publish(struct sl_ctl_http *h, const char *status_json, const char *metrics)
{
	if (!h)
		return;
	char *s = strdup(status_json), *m = strdup(metrics);
	pthread_mutex_lock(&h->lock);
	free(h->status);
	free(h->metrics);
	h->status = s;
	h->metrics = m;
	pthread_mutex_unlock(&h->lock);
}

void sl_ctl_http_stop(struct sl_ctl_http *h)
{
	if (!h)
		return;
	mhd.stop_daemon(h->daemon);
	free(h->status);
	free(h->metrics);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
