/* The role table of a plan (roles.h).
 * Invariants: ranks are numbered stage-major, then pipeline, then TP rank; the micro-batch
 * counts of the pipelines sum to global_batch / micro_batch exactly (the runtime trains the
 * samples single-process training trains, no more, no fewer). */
#include "runtime/roles.h"

#include <stdlib.h>
#include <string.h>

/* Ranks beyond this are refused: the role table is built on every rank, and a job of more
 * ranks than this is not one this runtime has been run at. */
#define SL_DIST_MAX_RANKS 65536

int sl_role_table_build(const struct sl_plan *plan, long long global_batch,
			struct sl_role_table *table, struct sl_err *err)
{
	memset(table, 0, sizeof(*table));
	int P = plan->num_stages, D = plan->num_pipelines;
	const char *path = plan->path[0] ? plan->path : "(plan)";
	if (P < 1 || D < 1 || plan->micro_batch < 1)
		return sl_err_set(err, SL_EINPUT, "plan '%s': needs at least one stage, one replica "
				  "per stage and a micro-batch of at least 1", path);
	if (global_batch < 1)
		return sl_err_set(err, SL_EINPUT, "plan '%s': global batch %lld must be at least 1",
				  path, global_batch);
	if (global_batch % plan->micro_batch)
		return sl_err_set(err, SL_EINPUT,
				  "plan '%s': global batch %lld is not a multiple of micro_batch %d: "
				  "choose a global batch that micro-batches divide",
				  path, global_batch, plan->micro_batch);
	long long total_mb = global_batch / plan->micro_batch;
	long long world = 0;
	for (int i = 0; i < P * D; i++) {
		if (plan->replicas[i].tp < 1)
			return sl_err_set(err, SL_EINPUT, "plan '%s': stage %d replica %d has tp %d",
					  path, i / D, i % D, plan->replicas[i].tp);
		world += plan->replicas[i].tp;
	}
	if (world > SL_DIST_MAX_RANKS)
		return sl_err_set(err, SL_EINPUT, "plan '%s': needs %lld ranks, more than the %d this "
				  "runtime supports", path, world, SL_DIST_MAX_RANKS);
	table->world_size = (int)world;
	table->num_stages = P;
	table->num_pipelines = D;
	table->micro_batch = plan->micro_batch;
	table->global_batch = global_batch;
	table->roles = calloc((size_t)world, sizeof(*table->roles));
	table->replica_first_rank = calloc((size_t)(P * D), sizeof(int));
	table->microbatches = calloc((size_t)D, sizeof(int));
	table->first_microbatch = calloc((size_t)D, sizeof(int));
	if (!table->roles || !table->replica_first_rank || !table->microbatches ||
	    !table->first_microbatch) {
		sl_role_table_free(table);
		return sl_err_set(err, SL_ENOMEM, "out of memory for the role table");
	}
	long long sum = 0;
	for (int j = 0; j < D; j++) {
		long long n;
		if (plan->uneven_microbatches) {
			n = plan->microbatches[j];
		} else {
			if (total_mb % D) {
				sl_role_table_free(table);
				return sl_err_set(err, SL_EINPUT,
						  "plan '%s': global batch %lld is %lld micro-batches of "
						  "%d, which %d pipelines cannot share evenly: give "
						  "\"microbatches_per_pipeline\" or a global batch that is "
						  "a multiple of %lld",
						  path, global_batch, total_mb, plan->micro_batch, D,
						  (long long)plan->micro_batch * D);
			}
			n = total_mb / D;
		}
		if (n < 1 || n > (1 << 20)) {
			sl_role_table_free(table);
			return sl_err_set(err, SL_EINPUT, "plan '%s': pipeline %d has %lld micro-batches "
					  "per step, outside 1..%d", path, j, n, 1 << 20);
		}
		table->first_microbatch[j] = (int)sum;
		table->microbatches[j] = (int)n;
		sum += n;
	}
	if (sum != total_mb) {
		sl_role_table_free(table);
		return sl_err_set(err, SL_EINPUT,
				  "plan '%s': microbatches_per_pipeline sum to %lld, but global batch "
				  "%lld / micro_batch %d is %lld: make them add up",
				  path, sum, global_batch, plan->micro_batch, total_mb);
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
				};
		}
	return 0;
}

void sl_role_table_free(struct sl_role_table *table)
{
	free(table->roles);
	free(table->replica_first_rank);
	free(table->microbatches);
	free(table->first_microbatch);
	memset(table, 0, sizeof(*table));
}
