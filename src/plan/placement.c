/* Placement of replicas on hosts: see placement.h for the rule (first fit decreasing).
 *
 * Checks run cheapest-to-explain first, so the message names the real cause: a (GPU type, zone)
 * with no host at all, then a TP group wider than any such host, then too few slots of that
 * (type, zone) in total, and only then fragmentation (enough slots, wrongly split). */
#include "plan/placement.h"

#include <stdio.h>
#include <stdlib.h>

struct replica_ref {
	int stage, pipeline, first_rank, tp;
};

static const char *gpu_name(const struct sl_catalogue *cat, int gpu)
{
	return gpu >= 0 && gpu < cat->gpu_count ? cat->gpus[gpu].name : "?";
}

static const char *zone_name(const struct sl_catalogue *cat, int zone)
{
	return zone >= 0 && zone < cat->zone_count ? cat->zones[zone].name : "?";
}

static const char *cluster_name(const struct sl_cluster *cluster)
{
	return cluster->path[0] ? cluster->path : "(in memory)";
}

/* decreasing tp, then rank order: the placement rule of placement.h */
static int cmp_replica(const void *a, const void *b)
{
	const struct replica_ref *x = a, *y = b;
	if (x->tp != y->tp)
		return x->tp > y->tp ? -1 : 1;
	return (x->first_rank > y->first_rank) - (x->first_rank < y->first_rank);
}

static void clear_hosts(struct sl_role_table *table)
{
	for (int r = 0; r < table->world_size; r++)
		table->roles[r].host = -1;
}

/* "replica (stage 1, pipeline 3: A100-40 in us-central1-a, tp 4)" */
static void describe(char *buf, size_t size, const struct replica_ref *rep, int gpu, int zone,
		     const struct sl_catalogue *cat)
{
	snprintf(buf, size, "replica (stage %d, pipeline %d: %s in %s, tp %d)", rep->stage,
		 rep->pipeline, gpu_name(cat, gpu), zone_name(cat, zone), rep->tp);
}

/* Per (GPU type, zone) of a cluster: its hosts, the widest host's slots, the slots offered, and
 * the ranks the plan needs there. */
struct slot_tally {
	int hosts[SL_MAX_GPU_TYPES][SL_MAX_ZONES], widest[SL_MAX_GPU_TYPES][SL_MAX_ZONES];
	long long have[SL_MAX_GPU_TYPES][SL_MAX_ZONES];
	long long need[SL_MAX_GPU_TYPES][SL_MAX_ZONES];
};

static void tally_hosts(const struct sl_cluster *cluster, struct slot_tally *tally)
{
	static const int G = SL_MAX_GPU_TYPES, Z = SL_MAX_ZONES;
	for (int h = 0; h < cluster->host_count; h++) {
		const struct sl_host *host = &cluster->hosts[h];
		if (host->gpu < 0 || host->gpu >= G || host->zone < 0 || host->zone >= Z)
			continue; /* the loader never lets these through */
		tally->hosts[host->gpu][host->zone]++;
		tally->have[host->gpu][host->zone] += host->slots;
		if (host->slots > tally->widest[host->gpu][host->zone])
			tally->widest[host->gpu][host->zone] = host->slots;
	}
}

/* Each replica on its own, in rank order, into reps[k * D + j]: a valid kind, some host of its
 * (GPU type, zone), one wide enough for its TP group; counts the ranks needed (tally->need). */
static int check_replicas(const struct sl_role_table *table, const struct sl_cluster *cluster,
			  const struct sl_catalogue *cat, struct replica_ref *reps,
			  struct slot_tally *tally, struct sl_err *err)
{
	int P = table->num_stages, D = table->num_pipelines;
	int rc = 0;
	char what[160];
	for (int k = 0; k < P && !rc; k++)
		for (int j = 0; j < D && !rc; j++) {
			int first = table->replica_first_rank[k * D + j];
			const struct sl_role *role = &table->roles[first];
			struct replica_ref *rep = &reps[k * D + j];
			*rep = (struct replica_ref){k, j, first, role->tp};
			int g = role->gpu, z = role->zone;
			describe(what, sizeof(what), rep, g, z, cat);
			if (g < 0 || g >= cat->gpu_count || z < 0 || z >= cat->zone_count || role->tp < 1)
				rc = sl_err_set(err, SL_EINPUT, "placement: %s: GPU type %d, zone %d or tp %d "
						"is not valid for the catalogue; rebuild the role table "
						"from a checked plan", what, g, z, role->tp);
			else if (!tally->hosts[g][z])
				rc = sl_err_set(err, SL_ENOTFOUND, "cluster file '%s': %s: no host has "
						"\"gpu\": \"%s\" and \"zone\": \"%s\"; add such hosts "
						"to the cluster file or plan for the GPUs it has",
						cluster_name(cluster), what, gpu_name(cat, g),
						zone_name(cat, z));
			else if (role->tp > tally->widest[g][z])
				rc = sl_err_set(err, SL_EINFEASIBLE, "cluster file '%s': %s: a TP group "
						"runs on one host, but the largest %s host in %s has %d "
						"slots; give a host at least %d slots or plan with tp <= "
						"%d", cluster_name(cluster), what, gpu_name(cat, g),
						zone_name(cat, z), tally->widest[g][z], role->tp,
						tally->widest[g][z]);
			else
				tally->need[g][z] += role->tp;
		}
	return rc;
}

/* Too few slots of a (GPU type, zone): reported at the first replica there, in rank order, with
 * the plan's whole demand, so one edit of the cluster file fixes it. */
static int check_slot_totals(const struct sl_role_table *table, const struct sl_cluster *cluster,
			     const struct sl_catalogue *cat, const struct replica_ref *reps,
			     const struct slot_tally *tally, struct sl_err *err)
{
	char what[160];
	for (int i = 0; i < table->num_stages * table->num_pipelines; i++) {
		const struct sl_role *role = &table->roles[reps[i].first_rank];
		int g = role->gpu, z = role->zone;
		if (tally->need[g][z] > tally->have[g][z]) {
			describe(what, sizeof(what), &reps[i], g, z, cat);
			return sl_err_set(err, SL_EINFEASIBLE, "cluster file '%s': the plan needs %lld "
					  "ranks of %s in zone %s, the cluster has %lld slots there "
					  "(first such replica: %s); add %lld slots of %s in %s or plan "
					  "for fewer", cluster_name(cluster), tally->need[g][z],
					  gpu_name(cat, g), zone_name(cat, z), tally->have[g][z], what,
					  tally->need[g][z] - tally->have[g][z], gpu_name(cat, g),
					  zone_name(cat, z));
		}
	}
	return 0;
}

/* First fit decreasing (placement.h): replicas by decreasing tp, then rank order, each on the
 * first host of its (GPU type, zone) with free slots for its TP group; sets their ranks' hosts.
 * free_slots has a place per host. */
static int first_fit(struct sl_role_table *table, const struct sl_cluster *cluster,
		     const struct sl_catalogue *cat, struct replica_ref *reps, int *free_slots,
		     struct sl_err *err)
{
	int n = table->num_stages * table->num_pipelines;
	char what[160];
	for (int h = 0; h < cluster->host_count; h++)
		free_slots[h] = cluster->hosts[h].slots;
	qsort(reps, (size_t)n, sizeof(*reps), cmp_replica);
	for (int i = 0; i < n; i++) {
		const struct sl_role *role = &table->roles[reps[i].first_rank];
		int chosen = -1;
		for (int h = 0; h < cluster->host_count && chosen < 0; h++) {
			const struct sl_host *host = &cluster->hosts[h];
			if (host->gpu == role->gpu && host->zone == role->zone &&
			    free_slots[h] >= reps[i].tp)
				chosen = h;
		}
		if (chosen < 0) {
			describe(what, sizeof(what), &reps[i], role->gpu, role->zone, cat);
			return sl_err_set(err, SL_EINFEASIBLE, "cluster file '%s': %s: no %s "
					  "host in %s has %d free slots left (the slots there "
					  "are enough in total but split across hosts so that "
					  "TP groups do not fit); give hosts slots in multiples "
					  "of the plan's tp degrees", cluster_name(cluster),
					  what, gpu_name(cat, role->gpu),
					  zone_name(cat, role->zone), reps[i].tp);
		}
		free_slots[chosen] -= reps[i].tp;
		for (int t = 0; t < reps[i].tp; t++)
			table->roles[reps[i].first_rank + t].host = chosen;
	}
	return 0;
}

int sl_placement_assign(struct sl_role_table *table, const struct sl_cluster *cluster,
		   const struct sl_catalogue *cat, struct sl_err *err)
{
	clear_hosts(table);
	if (!cluster)
		return 0;
	int P = table->num_stages, D = table->num_pipelines;
	if (P < 1 || D < 1 || table->world_size < 1)
		return sl_err_set(err, SL_EINPUT, "placement: empty role table (%d stages, %d "
				  "pipelines, %d ranks)", P, D, table->world_size);
	struct replica_ref *reps = malloc((size_t)P * D * sizeof(*reps));
	int *free_slots = malloc((size_t)cluster->host_count * sizeof(int));
	if (!reps || !free_slots) {
		free(reps);
		free(free_slots);
		return sl_err_set(err, SL_ENOMEM, "placement: out of memory");
	}
	/* checks cheapest to explain first (see the top of this file), then the placement */
	struct slot_tally tally = {0};
	tally_hosts(cluster, &tally);
	int rc = check_replicas(table, cluster, cat, reps, &tally, err);
	if (!rc)
		rc = check_slot_totals(table, cluster, cat, reps, &tally, err);
	if (!rc)
		rc = first_fit(table, cluster, cat, reps, free_slots, err);
	if (rc)
		clear_hosts(table);
	free(reps);
	free(free_slots);
	return rc;
}
