/* The role table of a plan (roles.h).
 * Invariants: ranks are numbered stage-major, then pipeline, then TP rank; the micro-batch
 * counts of the pipelines are the plan's by the one sharing rule (plan/microbatch_share.h) and
 * sum to global_batch / micro_batch exactly (the runtime trains the samples single-process
 * training trains, no more, no fewer). */
#include "plan/roles.h"

#include "plan/microbatch_share.h"

#include <stdlib.h>
#include <string.h>

/* Ranks beyond this are refused: the role table is built on every rank, and a job of more
 * ranks than this is not one this runtime has been run at. */
#define SL_ROLES_MAX_RANKS 65536

int sl_role_table_build(const struct sl_plan *plan, long long global_batch,
			struct sl_role_table *table, struct sl_err *err)
{
	memset(table, 0, sizeof(*table));
	int P = plan->num_stages, D = plan->num_pipelines;
	const char *path = plan->path[0] ? plan->path : "(plan)";
	if (P < 1 || D < 1 || plan->micro_batch < 1)
		return sl_err_set(err, SL_EINPUT, "plan '%s': needs at least one stage, one replica "
				  "per stage and a micro-batch of at least 1", path);
	int rc = sl_plan_microbatch_counts(plan, global_batch, NULL, err);
	if (rc) {
		sl_err_prefix(err, "plan '%s'", path);
		return rc;
	}
	long long world = 0;
	for (int i = 0; i < P * D; i++) {
		if (plan->replicas[i].tp < 1)
			return sl_err_set(err, SL_EINPUT, "plan '%s': stage %d replica %d has tp %d",
					  path, i / D, i % D, plan->replicas[i].tp);
		world += plan->replicas[i].tp;
	}
	if (world > SL_ROLES_MAX_RANKS)
		return sl_err_set(err, SL_EINPUT, "plan '%s': needs %lld ranks, more than the %d this "
				  "runtime supports", path, world, SL_ROLES_MAX_RANKS);
	table->world_size = (int)world;
	table->num_stages = P;
	table->num_pipelines = D;
	table->micro_batch = plan->micro_batch;
	table->global_batch = global_batch;
	table->roles = calloc((size_t)world, sizeof(*table->roles));
	table->replica_first_rank = calloc((size_t)(P * D), sizeof(int));
	table->microbatches = calloc((size_t)D, sizeof(int));
	table->first_microbatch = calloc((size_t)D, sizeof(int));
	table->num_islands = plan->islands ? plan->islands->count : 1;
	table->island_of = calloc((size_t)D, sizeof(int));
	table->island_microbatches = calloc((size_t)table->num_islands, sizeof(int));
	table->island_pipelines = calloc((size_t)table->num_islands, sizeof(int));
	if (!table->roles || !table->replica_first_rank || !table->microbatches ||
	    !table->first_microbatch || !table->island_of || !table->island_microbatches ||
	    !table->island_pipelines) {
		sl_role_table_free(table);
		return sl_err_set(err, SL_ENOMEM, "out of memory for the role table");
	}
	sl_plan_microbatch_counts(plan, global_batch, table->microbatches, NULL);
	for (int j = 0, sum = 0; j < D; j++) {
		table->first_microbatch[j] = sum;
		sum += table->microbatches[j];
	}
	int *index_in_island = calloc((size_t)D, sizeof(int));
	if (!index_in_island) {
		sl_role_table_free(table);
		return sl_err_set(err, SL_ENOMEM, "out of memory for the role table");
	}
	for (int j = 0; j < D; j++) {
		int i = plan->islands ? plan->islands->island_of[j] : 0;
		table->island_of[j] = i;
		index_in_island[j] = table->island_pipelines[i]++;
		table->island_microbatches[i] += table->microbatches[j];
	}
	int rank = 0;
	for (int k = 0; k < P; k++)
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			table->replica_first_rank[k * D + j] = rank;
			for (int t = 0; t < r->tp; t++, rank++)
				table->roles[rank] = (struct sl_role){
					.rank = rank,
					.stage = k,
					.pipeline = j,
					.tp_rank = t,
					.tp = r->tp,
					.first_layer = plan->stages[k].first_layer,
					.last_layer = plan->stages[k].last_layer,
					.gpu = r->gpu,
					.zone = r->zone,
					.host = -1,
					.island = table->island_of[j],
					.island_pipeline = index_in_island[j],
				};
		}
	free(index_in_island);
	return 0;
}

void sl_role_table_free(struct sl_role_table *table)
{
	free(table->roles);
	free(table->replica_first_rank);
	free(table->microbatches);
	free(table->first_microbatch);
	free(table->island_of);
	free(table->island_microbatches);
	free(table->island_pipelines);
	memset(table, 0, sizeof(*table));
}
