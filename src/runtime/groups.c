/* Communication groups from the role table (groups.h).
 * Invariant: every rank calls the same four splits in the same order (MPI_Comm_split is
 * collective over the world), whether or not it joins a group. Colours are made unique per
 * split by construction: (stage, TP rank) pairs map to stage * (max TP + 1) + TP rank, offset by the island times
 * every such colour, so islands never share a group. */
#include "runtime/groups.h"

#include <string.h>

int sl_groups_stage_uniform_tp(const struct sl_role_table *table, int stage)
{
	return sl_groups_island_stage_uniform_tp(table, stage, -1);
}

static int island_of(const struct sl_role_table *table, int j)
{
	return table->island_of ? table->island_of[j] : 0;
}

int sl_groups_island_stage_uniform_tp(const struct sl_role_table *table, int stage, int island)
{
	int D = table->num_pipelines, tp0 = 0;
	for (int j = 0; j < D; j++) {
		if (island >= 0 && island_of(table, j) != island)
			continue;
		int tp = sl_role_of(table, stage, j, 0)->tp;
		if (tp0 && tp != tp0)
			return 0;
		tp0 = tp;
	}
	return 1;
}

/* The TP degree of the island's first pipeline at stage k. */
static int island_tp(const struct sl_role_table *table, int stage, int island)
{
	for (int j = 0; j < table->num_pipelines; j++)
		if (island_of(table, j) == island)
			return sl_role_of(table, stage, j, 0)->tp;
	return 0;
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
	int isl = me->island;
	int rc = sl_comm_split(comm, me->stage * D + me->pipeline, me->tp_rank, &out->tp, err);
	if (rc)
		return rc;
	/* the data-parallel sync and the embedding group stay inside the island: between islands
	 * only the outer step exchanges anything (outer_sync.h) */
	out->stage_sync_uniform = sl_groups_island_stage_uniform_tp(table, me->stage, isl);
	int colour = out->stage_sync_uniform ? me->stage * stride + me->tp_rank
					     : me->stage * stride + stride - 1;
	if ((rc = sl_comm_split(comm, isl * P * stride + colour, me->rank, &out->stage_sync, err)))
		return rc;
	out->embedding_uniform = P > 1 && sl_groups_island_stage_uniform_tp(table, 0, isl) &&
				 sl_groups_island_stage_uniform_tp(table, P - 1, isl) &&
				 island_tp(table, 0, isl) == island_tp(table, P - 1, isl);
	colour = SL_COMM_NO_GROUP;
	if (P > 1 && (me->stage == 0 || me->stage == P - 1))
		colour = isl * stride + (out->embedding_uniform ? me->tp_rank : 0);
	if ((rc = sl_comm_split(comm, colour, me->rank, &out->embedding, err)))
		return rc;
	if ((rc = sl_comm_split(comm, isl, me->rank, &out->island, err)))
		return rc;
	return 0;
}

void sl_groups_free(struct sl_comm *comm, struct sl_groups *groups)
{
	sl_comm_group_free(comm, &groups->tp);
	sl_comm_group_free(comm, &groups->stage_sync);
	sl_comm_group_free(comm, &groups->embedding);
	sl_comm_group_free(comm, &groups->island);
}
