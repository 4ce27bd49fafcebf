/* Communication groups from the role table (groups.h).
 * Invariant: every rank calls the same three splits in the same order (MPI_Comm_split is
 * collective over the world), whether or not it joins a group. Colours are made unique per
 * split by construction: (stage, TP rank) pairs map to stage * (max TP + 1) + TP rank. */
#include "runtime/groups.h"

#include <string.h>

int sl_groups_stage_uniform_tp(const struct sl_role_table *table, int stage)
{
	int D = table->num_pipelines;
	int tp0 = sl_role_of(table, stage, 0, 0)->tp;
	for (int j = 1; j < D; j++)
		if (sl_role_of(table, stage, j, 0)->tp != tp0)
			return 0;
	return 1;
}

static int max_tp(const struct sl_role_table *table)
{
	int m = 1;
	for (int r = 0; r < table->world_size; r++)
		m = table->roles[r].tp > m ? table->roles[r].tp : m;
	return m;
}

int sl_groups_build(struct sl_comm *comm, const struct sl_role_table *table,
			 struct sl_groups *out, struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	const struct sl_role *me = &table->roles[comm->rank];
	int P = table->num_stages, D = table->num_pipelines, stride = max_tp(table) + 1;
	int rc = sl_comm_split(comm, me->stage * D + me->pipeline, me->tp_rank, &out->tp, err);
	if (rc)
		return rc;
	out->stage_sync_uniform = sl_groups_stage_uniform_tp(table, me->stage);
	int colour = out->stage_sync_uniform ? me->stage * stride + me->tp_rank
					     : me->stage * stride + stride - 1;
	if ((rc = sl_comm_split(comm, colour, me->rank, &out->stage_sync, err)))
		return rc;
	out->embedding_uniform = P > 1 && sl_groups_stage_uniform_tp(table, 0) &&
				 sl_groups_stage_uniform_tp(table, P - 1) &&
				 sl_role_of(table, 0, 0, 0)->tp == sl_role_of(table, P - 1, 0, 0)->tp;
	colour = SL_COMM_NO_GROUP;
	if (P > 1 && (me->stage == 0 || me->stage == P - 1))
		colour = out->embedding_uniform ? me->tp_rank : 0;
	if ((rc = sl_comm_split(comm, colour, me->rank, &out->embedding, err)))
		return rc;
	return 0;
}

void sl_groups_free(struct sl_comm *comm, struct sl_groups *groups)
{
	sl_comm_group_free(comm, &groups->tp);
	sl_comm_group_free(comm, &groups->stage_sync);
	sl_comm_group_free(comm, &groups->embedding);
}
