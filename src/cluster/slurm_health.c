/* slurmd answers or not, and a node marked down (slurm_health.h). */
#include "cluster/slurm_health.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster/slurm.h"
#include "util/clock.h"

#define PROBE_MAX 256 /* connections open at once */

int sl_slurm_health_port(int *port, struct sl_err *err)
{
	*port = SL_SLURM_HEALTH_DEFAULT_PORT;
	char *argv[] = {"scontrol", "show", "config", NULL};
	char *text = NULL;
	int status = 0;
	int rc = sl_slurm_exec(argv, 30, &text, &status, err);
	if (rc)
		return rc;
	const char *p = status == 0 ? strstr(text, "SlurmdPort") : NULL;
	int got = 0;
	if (p)
		p = strchr(p, '=');
	if (p && sscanf(p + 1, "%d", &got) == 1 && got > 0 && got < 65536)
		*port = got;
	else
		rc = sl_err_set(err, SL_EIO, "slurm: no SlurmdPort in 'scontrol show config' (exit "
				"status %d); assuming %d", status, SL_SLURM_HEALTH_DEFAULT_PORT);
	free(text);
	return rc;
}

/* A non-blocking connect to address:port started; -1 when it failed at once (refused, no such
 * address). *done is 1 when it already completed. */
static int start_connect(const char *address, int port, int *done)
{
	*done = 0;
	char service[16];
	snprintf(service, sizeof(service), "%d", port);
	struct addrinfo hints = {0}, *ai = NULL;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(address, service, &hints, &ai) || !ai)
		return -1;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			*done = 1;
		} else if (errno != EINPROGRESS) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

/* sl_slurm_health_probe for at most PROBE_MAX addresses. */
static int probe_some(const char *const *addresses, int n, int port, double timeout_s,
		      signed char *found, struct sl_err *err)
{
	struct pollfd fds[PROBE_MAX];
	int made = 0;
	for (int i = 0; i < n; i++) {
		int done = 0;
		fds[i].fd = start_connect(addresses[i], port, &done);
		fds[i].events = POLLOUT;
		fds[i].revents = 0;
		found[i] = done ? SL_SLURM_HEALTH_ANSWERS : fds[i].fd < 0 ? SL_SLURM_HEALTH_REFUSED
				: SL_SLURM_HEALTH_SILENT;
		if (fds[i].fd >= 0)
			made++;
		if (done) { /* accepted already: nothing to wait for */
			close(fds[i].fd);
			fds[i].fd = -1;
		}
	}
	if (!made && n > 0 && errno == EMFILE) {
		/* out of descriptors: nothing is known, and nothing may be declared dead */
		for (int i = 0; i < n; i++)
			found[i] = SL_SLURM_HEALTH_ANSWERS;
		return sl_err_set(err, SL_EIO, "slurm: cannot open a socket to probe slurmd: %s",
				  strerror(errno));
	}
	double t0_s = sl_now_s();
	for (;;) {
		int pending = 0;
		for (int i = 0; i < n; i++)
			pending += fds[i].fd >= 0;
		double left_s = timeout_s - (sl_now_s() - t0_s);
		if (!pending || left_s <= 0)
			break;
		if (poll(fds, (nfds_t)n, (int)(left_s * 1000) + 1) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			int so = 0;
			socklen_t len = sizeof(so);
			getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &so, &len);
			/* accepted; ECONNREFUSED, EHOSTUNREACH, ...: an answer that says no */
			found[i] = so == 0 ? SL_SLURM_HEALTH_ANSWERS : SL_SLURM_HEALTH_REFUSED;
			close(fds[i].fd);
			fds[i].fd = -1;
		}
	}
	for (int i = 0; i < n; i++) /* no answer within the time: SILENT, as set */
		if (fds[i].fd >= 0)
			close(fds[i].fd);
	return 0;
}

int sl_slurm_health_mark_down(const char *node, const char *reason, struct sl_err *err)
{
	char opt_node[300], opt_reason[600];
	snprintf(opt_node, sizeof(opt_node), "nodename=%s", node);
	snprintf(opt_reason, sizeof(opt_reason), "reason=%s", reason);
	char *argv[] = {"scontrol", "update", opt_node, "state=down", opt_reason, NULL};
	char *text = NULL;
	int status = 0;
	int rc = sl_slurm_exec(argv, 10, &text, &status, err);
	if (!rc && status != 0) {
		size_t len = strcspn(text, "\n");
		rc = sl_err_set(err, SL_EIO, "slurm: scontrol update nodename=%s state=down failed: "
				"%.*s", node, (int)(len < 300 ? len : 300), text);
	}
	free(text);
	return rc;
}

int sl_slurm_health_probe(const char *const *addresses, int n, int port, double timeout_s,
			  signed char *found, struct sl_err *err)
{
	/* PROBE_MAX descriptors at a time: a partition may have thousands of nodes */
	for (int first = 0; first < n; first += PROBE_MAX) {
		int k = n - first < PROBE_MAX ? n - first : PROBE_MAX;
		int rc = probe_some(addresses + first, k, port, timeout_s, found + first, err);
		if (rc) {
			for (int i = first + k; i < n; i++)
				found[i] = SL_SLURM_HEALTH_ANSWERS;
			return rc;
		}
	}
	return 0;
}
