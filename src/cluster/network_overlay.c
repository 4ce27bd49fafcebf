/* The --network overlay: the links, all-reduce fits and probes `sailor profile --network`
 * measured, over the shipped fits (see network.h). Invariants: the overlay's pairs keep the
 * catalogue's zone and GPU indices; absent probes read as 0, never guessed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/network_state.h"
#include "util/json.h"

static char overlay_path[4096];

/* A pair's message probe (source.pairs[i].message_cpu, netprof.h): optional, as files from before
 * it have none, but never guessed: sizes ascending, CPU from 0 to 1 s, one per size. */
static int message_cpu_from_json(struct measured_allreduce *m, const json_t *pr, size_t i,
				 struct sl_err *err)
{
	const json_t *mc = json_object_get(pr, "message_cpu");
	m->message_sizes = 0;
	if (!mc)
		return 0;
	const json_t *bytes = json_object_get(mc, "bytes");
	const json_t *side[2] = {json_object_get(mc, "sender_s"), json_object_get(mc, "receiver_s")};
	size_t n = json_array_size(bytes);
	int ok = json_is_object(mc) && n >= 1 && n <= SL_NET_MESSAGE_CPU_SIZES &&
		 json_array_size(side[0]) == n && json_array_size(side[1]) == n;
	for (size_t k = 0; ok && k < n; k++) {
		const json_t *b = json_array_get(bytes, k);
		m->message_bytes[k] = json_is_number(b) ? json_number_value(b) : -1;
		ok = m->message_bytes[k] > (k ? m->message_bytes[k - 1] : 0) &&
		     m->message_bytes[k] <= 1e12;
		for (int e = 0; e < 2 && ok; e++) {
			const json_t *c = json_array_get(side[e], k);
			m->message_cpu_s[e][k] = json_is_number(c) ? json_number_value(c) : -1;
			ok = m->message_cpu_s[e][k] >= 0 && m->message_cpu_s[e][k] <= 1;
		}
	}
	if (!ok)
		return sl_err_set(err, SL_EINPUT, "--network '%s': source.pairs[%zu].message_cpu: "
				  "expected \"bytes\" (1 to %d sizes, ascending) and \"sender_s\" "
				  "and \"receiver_s\" (seconds from 0 to 1, one per size), as `sailor "
				  "profile --network` writes them; remove it or profile the network again",
				  overlay_path, i, SL_NET_MESSAGE_CPU_SIZES);
	m->message_sizes = (int)n;
	const json_t *rates = json_object_get(pr, "p2p_bps");
	m->p2p_max_bps = 0;
	for (size_t k = 0; k < json_array_size(rates); k++)
		m->p2p_max_bps = fmax(m->p2p_max_bps, json_number_value(json_array_get(rates, k)));
	return 0;
}

json_t *sl_network_overlay_open(struct sl_err *err, int *rc)
{
	*rc = 0;
	if (!overlay_path[0])
		return NULL;
	json_t *root = sl_json_load_file(overlay_path, "network fits", err);
	if (!root) {
		*rc = err ? err->code : SL_EINPUT;
		return NULL;
	}
	const char *schema = json_string_value(json_object_get(root, "schema"));
	if (!schema || strcmp(schema, SL_NETWORK_SCHEMA)) {
		*rc = sl_err_set(err, SL_EINPUT, "--network '%s': schema: expected \"%s\" (a file "
				 "written by `sailor profile --network`)", overlay_path,
				 SL_NETWORK_SCHEMA);
		json_decref(root);
		return NULL;
	}
	return root;
}

/* The overlay's links and intra-node fits over the shipped ones (sl_network_set_overlay). */
int sl_network_overlay_apply(struct sl_network *net, json_t *root, struct sl_err *err)
{
	const struct sl_catalogue *cat = net->cat;
	int rc = sl_network_links_from_json(net, root, overlay_path, SL_LINK_SOURCE_PROFILED, err);
	/* the all-reduce fits of the measured pairs (source.pairs[], netprof.h) */
	json_t *pairs = json_object_get(json_object_get(root, "source"), "pairs");
	for (size_t i = 0; !rc && json_is_array(pairs) && i < json_array_size(pairs); i++) {
		json_t *pr = json_array_get(pairs, i);
		const char *kind = json_string_value(json_object_get(pr, "kind"));
		int za = sl_catalogue_zone_index(cat, json_string_value(json_object_get(pr, "sender_zone")) ?: "");
		int ga = sl_catalogue_gpu_index(cat, json_string_value(json_object_get(pr, "sender_gpu")) ?: "");
		int zb = sl_catalogue_zone_index(cat, json_string_value(json_object_get(pr, "receiver_zone")) ?: "");
		int gb = sl_catalogue_gpu_index(cat, json_string_value(json_object_get(pr, "receiver_gpu")) ?: "");
		json_t *fit = json_object_get(pr, "allreduce_fit");
		if (!kind || za < 0 || ga < 0 || zb < 0 || gb < 0 || !fit ||
		    net->allreduce_count == SL_NET_MAX_ALLREDUCE)
			continue;
		char ctx[64];
		snprintf(ctx, sizeof(ctx), "source.pairs[%zu].allreduce_fit", i);
		struct measured_allreduce *m = &net->allreduce[net->allreduce_count];
		rc = sl_network_parse_fit(fit, ctx, &m->fit, err);
		if (rc) {
			sl_err_prefix(err, "--network '%s'", overlay_path);
			break;
		}
		m->fit.source = SL_LINK_SOURCE_PROFILED;
		m->za = za, m->ga = ga, m->zb = zb, m->gb = gb;
		/* the sizes it was measured at: optional (hand-made files), but never guessed */
		m->largest_bytes = 0;
		json_t *sizes = json_object_get(pr, "bytes");
		int sizes_ok = !sizes || (json_is_array(sizes) && json_array_size(sizes) > 0);
		for (size_t k = 0; sizes_ok && k < json_array_size(sizes); k++) {
			json_t *v = json_array_get(sizes, k);
			double b = json_is_number(v) ? json_number_value(v) : -1;
			sizes_ok = b > 0 && b <= 1e12;
			m->largest_bytes = fmax(m->largest_bytes, b);
		}
		if (!sizes_ok) {
			rc = sl_err_set(err, SL_EINPUT,
					"--network '%s': source.pairs[%zu].bytes: expected a list of "
					"message sizes from 1 to 1e12 bytes (what `sailor profile "
					"--network` measured at); remove it or profile the network again",
					overlay_path, i);
			break;
		}
		/* optional (files from before the burst probe have none), but never guessed */
		json_t *burst = json_object_get(pr, "burst_bytes");
		double b = json_is_number(burst) ? json_number_value(burst) : -1;
		if (burst && !(b >= 0 && b <= 1e12)) {
			rc = sl_err_set(err, SL_EINPUT, "--network '%s': source.pairs[%zu].burst_bytes: "
					"expected bytes from 0 to 1e12 (what `sailor profile --network` "
					"measures); remove it or profile the network again",
					overlay_path, i);
			break;
		}
		m->burst_bytes = burst ? b : 0;
		json_t *whole = json_object_get(pr, "whole_message_bytes");
		double w = json_is_number(whole) ? json_number_value(whole) : -1;
		if (whole && !(w >= 0 && w <= 1e12)) {
			rc = sl_err_set(err, SL_EINPUT,
					"--network '%s': source.pairs[%zu].whole_message_bytes: "
					"expected bytes from 0 to 1e12 (what `sailor profile "
					"--network` measures); remove it or profile the network "
					"again",
					overlay_path, i);
			break;
		}
		m->whole_message_bytes = whole ? w : 0;
		m->same_host = !strcmp(kind, "within a host");
		if ((rc = message_cpu_from_json(m, pr, i, err)))
			break;
		net->allreduce_count++;
	}
	json_t *intra = json_object_get(root, "intra_node");
	if (!rc && intra) {
		if (!json_is_object(intra))
			rc = sl_err_set(err, SL_EINPUT, "--network '%s': intra_node: expected an object",
					overlay_path);
		else
			rc = sl_network_intra_from_json(net, intra, overlay_path, err);
	}
	return rc;
}

int sl_network_set_overlay(const char *path, const struct sl_catalogue *cat, struct sl_err *err)
{
	if (!path || !path[0]) {
		overlay_path[0] = 0;
		return 0;
	}
	if (strlen(path) >= sizeof(overlay_path))
		return sl_err_set(err, SL_EINPUT, "--network: path too long");
	char saved[sizeof(overlay_path)];
	memcpy(saved, overlay_path, sizeof(saved));
	snprintf(overlay_path, sizeof(overlay_path), "%s", path);
	struct sl_network *net = NULL;
	int rc = sl_network_load(NULL, cat, &net, err);
	sl_network_free(net);
	if (rc)
		memcpy(overlay_path, saved, sizeof(saved));
	return rc;
}

/* The measured pair between (zone a, type a) and (zone b, type b), either way round, on two hosts
 * or (same_host) one; NULL when the overlay has none. */
static const struct measured_allreduce *measured_pair(const struct sl_network *net, int za, int ga,
						      int zb, int gb, int same_host)
{
	for (int i = 0; i < net->allreduce_count; i++) {
		const struct measured_allreduce *m = &net->allreduce[i];
		if (m->same_host == !!same_host &&
		    ((m->za == za && m->ga == ga && m->zb == zb && m->gb == gb) ||
		     (m->za == zb && m->ga == gb && m->zb == za && m->gb == ga)))
			return m;
	}
	return NULL;
}

double sl_network_allreduce_gbps(const struct sl_network *net, int za, int ga, int zb, int gb,
				 int same_host, double bytes)
{
	const struct measured_allreduce *m = measured_pair(net, za, ga, zb, gb, same_host);
	if (!m || !(bytes > 0))
		return 0;
	/* past the largest size measured, that size's rate: measured on to 16 MiB over the
	 * testbed's 8-10 Mbit/s links the rate levels off (pent5: 85 to 82 % of point to point
	 * from 4 to 16 MiB), where the fit, quadratic in log size, falls ever faster */
	double at = m->largest_bytes > 0 ? fmin(bytes, m->largest_bytes) : bytes;
	return sl_link_fit_gbps_positive(&m->fit, at);
}

double sl_network_burst_bytes(const struct sl_network *net, int za, int ga, int zb, int gb)
{
	const struct measured_allreduce *m = measured_pair(net, za, ga, zb, gb, 0);
	return m ? m->burst_bytes : 0;
}

double sl_network_message_cpu_s(const struct sl_network *net, int ga, int gb, int same_host,
				 double bytes, int receiver)
{
	/* the end's own type at that end, over the fastest link; else at the other end */
	int type = receiver ? gb : ga;
	const struct measured_allreduce *m = NULL;
	for (int pass = 0; pass < 2 && !m; pass++)
		for (int i = 0; i < net->allreduce_count; i++) {
			const struct measured_allreduce *c = &net->allreduce[i];
			int at_end = receiver ? c->gb == type : c->ga == type;
			int at_other = receiver ? c->ga == type : c->gb == type;
			if (c->message_sizes > 0 && c->same_host == !!same_host &&
			    (pass == 0 ? at_end : at_other) && (!m || c->p2p_max_bps > m->p2p_max_bps))
				m = c;
		}
	if (!m || bytes <= 0)
		return 0;
	const double *x = m->message_bytes, *y = m->message_cpu_s[receiver ? 1 : 0];
	int n = m->message_sizes, k = 0;
	if (bytes >= x[n - 1]) /* beyond the largest: in proportion to it */
		return y[n - 1] * bytes / x[n - 1];
	while (x[k] < bytes)
		k++;
	double x0 = k ? x[k - 1] : 0, y0 = k ? y[k - 1] : 0; /* below the smallest: from 0 */
	return y0 + (y[k] - y0) * (bytes - x0) / (x[k] - x0);
}

double sl_network_whole_message_bytes(const struct sl_network *net, int za, int ga, int zb,
				      int gb)
{
	const struct measured_allreduce *m = measured_pair(net, za, ga, zb, gb, 0);
	return m ? m->whole_message_bytes : 0;
}

