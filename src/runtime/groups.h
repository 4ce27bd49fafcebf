/* The communication groups of one rank, all derived from the role table (roles.h) so every rank
 * builds the same ones without exchanging anything but the splits themselves.
 *
 *   tp         the TP ranks of this rank's replica (the layers' four all-reduces per block, the
 *              vocabulary-parallel embedding and cross-entropy).
 *   stage_sync the ranks that average this stage's gradients (data parallelism). When every
 *              replica of the stage has the same TP degree, the ranks of equal TP rank across the
 *              stage's replicas (they hold identical shards: Megatron's data-parallel group);
 *              otherwise every rank of the stage, which then reduces whole tensors
 *              (grad_sync.h). `stage_sync_uniform` says which.
 *   embedding  with P > 1: the ranks of the first and the last stage, which sum the gradient of
 *              the tied token table (Megatron's embedding group); split by TP rank when all
 *              their replicas have one TP degree (`embedding_uniform`), else all of them.
 *   island     every rank of this rank's island (plan/islands.h): the loss, the gradient norm
 *              and the stop flag of a step; the world when the plan has no islands. The
 *              stage_sync and embedding groups above are also per island: islands exchange
 *              nothing per step (the outer step has its own groups, outer_sync.h).
 *   world      every rank (timings, checkpoints).
 *
 * Ownership: sl_groups_build() splits the world; sl_groups_free() frees the groups.
 */
#ifndef SL_RUNTIME_GROUPS_H
#define SL_RUNTIME_GROUPS_H

#include "runtime/comm.h"
#include "plan/roles.h"

struct sl_groups {
	struct sl_comm_group tp;
	struct sl_comm_group stage_sync;
	int stage_sync_uniform;
	struct sl_comm_group embedding;   /* size 0 when this rank is in none (or P == 1) */
	int embedding_uniform;
	struct sl_comm_group island;
};

int sl_groups_build(struct sl_comm *comm, const struct sl_role_table *table,
			 struct sl_groups *out, struct sl_err *err);
void sl_groups_free(struct sl_comm *comm, struct sl_groups *groups);

/* 1 when every replica of stage k has the same TP degree. */
int sl_groups_stage_uniform_tp(const struct sl_role_table *table, int stage);
/* The same over the replicas of one island (island < 0: every replica). */
int sl_groups_island_stage_uniform_tp(const struct sl_role_table *table, int stage, int island);

#endif
