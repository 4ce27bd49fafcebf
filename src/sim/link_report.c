/* Which source priced each link a plan's transfers cross: the links between the replicas that
 * exchange activations and gradients (neighbouring stages of a pipeline), the rings of the
 * data-parallel all-reduce (consecutive replicas of a stage) and the tied embedding (first and
 * last stage of a pipeline), one entry per (zone, GPU type) pair each way, with the link's
 * class, where its bandwidth and its egress price come from (cluster/network.h, egress.h).
 * Invariants: entries sorted by (from zone, to zone, from GPU, to GPU); allocates only the
 * report. */
#include <stdlib.h>
#include <string.h>

#include "cluster/link_model.h"
#include "sim/internal.h"

struct link_key {
	short from_zone, from_gpu, to_zone, to_gpu;
};

static int cmp_key(const void *a, const void *b)
{
	const struct link_key *x = a, *y = b;
	if (x->from_zone != y->from_zone)
		return x->from_zone - y->from_zone;
	if (x->to_zone != y->to_zone)
		return x->to_zone - y->to_zone;
	if (x->from_gpu != y->from_gpu)
		return x->from_gpu - y->from_gpu;
	return x->to_gpu - y->to_gpu;
}

static void add(struct link_key *keys, int *n, const struct sl_replica *a,
		const struct sl_replica *b)
{
	keys[(*n)++] = (struct link_key){a->zone, a->gpu, b->zone, b->gpu};
	keys[(*n)++] = (struct link_key){b->zone, b->gpu, a->zone, a->gpu};
}

/* The plan's links, sorted and unique; *n their count. NULL when out of memory. */
static struct link_key *plan_links(const struct sl_plan *plan, int *n)
{
	int P = plan->num_stages, D = plan->num_pipelines;
	struct link_key *keys = malloc(sizeof(*keys) * (size_t)(6 * P * D + 2));
	*n = 0;
	if (!keys)
		return NULL;
	for (int k = 0; k < P; k++)
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			if (k + 1 < P)
				add(keys, n, r, sl_plan_replica(plan, k + 1, j));
			if (D > 1)
				add(keys, n, r, sl_plan_replica(plan, k, (j + 1) % D));
			if (k == 0 && P > 1)
				add(keys, n, r, sl_plan_replica(plan, P - 1, j));
		}
	qsort(keys, (size_t)*n, sizeof(*keys), cmp_key);
	int out = 0;
	for (int i = 0; i < *n; i++)
		if (out == 0 || cmp_key(&keys[out - 1], &keys[i]))
			keys[out++] = keys[i];
	*n = out;
	return keys;
}

/* The size the report reads a link's bandwidth at: an activation or a bucket's share is
 * megabytes, the artifact's fits were measured from 1 MB to about 1 GB. */
#define REPORT_BYTES 64e6

json_t *sl_sim_links_json(const struct sl_sim_env *env, const struct sl_plan *plan)
{
	const struct sl_catalogue *cat = &env->catalogue;
	json_t *links = json_array();
	int n = 0;
	struct link_key *keys = plan_links(plan, &n);
	for (int i = 0; i < n; i++) {
		const struct link_key *k = &keys[i];
		const struct sl_link_fit *f = sl_network_fit(env->network, k->from_zone, k->from_gpu, 1,
							     k->to_zone, k->to_gpu, 1);
		const char *origin = sl_network_link_origin(env->network, k->from_zone, k->to_zone);
		json_t *o = json_object();
		json_object_set_new(o, "from_zone", json_string(cat->zones[k->from_zone].name));
		json_object_set_new(o, "from_gpu", json_string(cat->gpus[k->from_gpu].name));
		json_object_set_new(o, "to_zone", json_string(cat->zones[k->to_zone].name));
		json_object_set_new(o, "to_gpu", json_string(cat->gpus[k->to_gpu].name));
		json_object_set_new(o, "class", json_string(sl_link_model_class_name(
							sl_link_model_class_of(cat, k->from_zone,
									       k->to_zone))));
		json_object_set_new(o, "bandwidth_source", json_string(sl_network_source_name(f)));
		if (f->source == SL_LINK_SOURCE_ZONES_FILE && origin)
			json_object_set_new(o, "zones_file", json_string(origin));
		json_object_set_new(o, "gbps_at_64mb",
				    json_real(sl_link_fit_gbps_positive(f, REPORT_BYTES)));
		json_object_set_new(o, "latency_s", json_real(f->latency_s));
		json_object_set_new(o, "egress_usd_per_gb",
				    json_real(sl_network_egress_usd_per_gb(env->network, k->from_zone,
									   k->to_zone)));
		json_object_set_new(o, "egress_source",
				    json_string(sl_network_egress_source(env->network, k->from_zone,
									 k->to_zone)));
		json_array_append_new(links, o);
	}
	free(keys);
	return links;
}

void sl_sim_links_print(FILE *f, const struct sl_sim_env *env, const struct sl_plan *plan)
{
	const struct sl_catalogue *cat = &env->catalogue;
	int n = 0;
	struct link_key *keys = plan_links(plan, &n);
	fprintf(f, "\nlinks the plan's transfers cross (one GPU per node, at 64 MB; egress per GB "
		   "sent)\n");
	fprintf(f, "  %-26s %-26s %7s %8s  %-40s %6s  %s\n", "from", "to", "GB/s", "latency",
		"bandwidth from", "$/GB", "egress from");
	for (int i = 0; i < n; i++) {
		const struct link_key *k = &keys[i];
		const struct sl_link_fit *l = sl_network_fit(env->network, k->from_zone, k->from_gpu,
							     1, k->to_zone, k->to_gpu, 1);
		char from[64], to[64];
		snprintf(from, sizeof(from), "%s %s", cat->zones[k->from_zone].name,
			 cat->gpus[k->from_gpu].name);
		snprintf(to, sizeof(to), "%s %s", cat->zones[k->to_zone].name,
			 cat->gpus[k->to_gpu].name);
		fprintf(f, "  %-26s %-26s %7.3f %5.1f ms  %-40s %6.4f  %s\n", from, to,
			sl_link_fit_gbps_positive(l, REPORT_BYTES), l->latency_s * 1e3,
			sl_network_source_name(l),
			sl_network_egress_usd_per_gb(env->network, k->from_zone, k->to_zone),
			sl_network_egress_source(env->network, k->from_zone, k->to_zone));
	}
	free(keys);
}

json_t *sl_sim_estimate_json(const struct sl_sim_env *env, const struct sl_plan *plan,
			     const struct sl_sim_result *res)
{
	json_t *o = sl_sim_result_to_json(env, plan, res);
	json_object_set_new(o, "links", sl_sim_links_json(env, plan));
	json_t *islands = sl_sim_islands_json(env, plan, res);
	if (islands)
		json_object_set_new(o, "islands", islands);
	return o;
}
