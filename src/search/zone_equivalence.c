/* Zones the simulator cannot tell apart: see zone_equivalence.h. */
#include "search/zone_equivalence.h"

#include <string.h>

#include "cluster/network.h"

/* GPUs per node sending at once, one of each of the network tables' count classes. */
static const int node_counts[] = {1, 2, 4, 8};
#define NODE_COUNTS ((int)(sizeof(node_counts) / sizeof(node_counts[0])))

static int same_fit(const struct sl_link_fit *a, const struct sl_link_fit *b)
{
	if (!a || !b)
		return a == b;
	return a->a2 == b->a2 && a->a1 == b->a1 && a->a0 == b->a0 && a->max_bps == b->max_bps &&
	       a->derived == b->derived && a->latency_s == b->latency_s && a->source == b->source;
}

/* The measured all-reduce between two hosts of a zone, read at every power of two from 1 KB to
 * 4 GB (it is piecewise linear between measured sizes, and those are powers of two). */
static int same_allreduce(const struct sl_network *net, int za, int zb, int g1, int g2)
{
	for (int same_host = 0; same_host < 2; same_host++)
		for (double bytes = 1024; bytes <= 4294967296.0; bytes *= 2)
			if (sl_network_allreduce_gbps(net, za, g1, za, g2, same_host, bytes) !=
			    sl_network_allreduce_gbps(net, zb, g1, zb, g2, same_host, bytes))
				return 0;
	return 1;
}

static int same_origin(const struct sl_network *net, int za, int zb)
{
	const char *a = sl_network_link_origin(net, za, za), *b = sl_network_link_origin(net, zb, zb);
	return (!a || !b) ? a == b : !strcmp(a, b);
}

int sl_zones_interchangeable(const struct sl_sim_env *env, enum sl_cost_model cm, int za, int zb)
{
	if (za == zb)
		return 1;
	const struct sl_network *net = env->network;
	int types = env->catalogue.gpu_count;
	if (sl_network_egress_usd_per_gb(net, za, za) != sl_network_egress_usd_per_gb(net, zb, zb) ||
	    !same_origin(net, za, zb))
		return 0;
	for (int g1 = 0; g1 < types; g1++) {
		if (sl_sim_gpu_usd_per_hour(env, cm, g1, za) != sl_sim_gpu_usd_per_hour(env, cm, g1, zb))
			return 0;
		for (int g2 = 0; g2 < types; g2++) {
			if (sl_network_burst_bytes(net, za, g1, za, g2) !=
				    sl_network_burst_bytes(net, zb, g1, zb, g2) ||
			    sl_network_whole_message_bytes(net, za, g1, za, g2) !=
				    sl_network_whole_message_bytes(net, zb, g1, zb, g2) ||
			    !same_allreduce(net, za, zb, g1, g2))
				return 0;
			for (int c1 = 0; c1 < NODE_COUNTS; c1++)
				for (int c2 = 0; c2 < NODE_COUNTS; c2++)
					if (!same_fit(sl_network_fit(net, za, g1, node_counts[c1], za, g2,
								     node_counts[c2]),
						      sl_network_fit(net, zb, g1, node_counts[c1], zb, g2,
								     node_counts[c2])))
						return 0;
		}
	}
	return 1;
}
