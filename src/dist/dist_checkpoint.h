/* Checkpoints of a distributed job in the plan-independent format of checkpoint.h, so that any
 * plan (or `sailor train`) resumes any checkpoint.
 *
 * Save (collective over the world): the ranks of pipeline 0 hold every shard of every tensor
 * once (the other pipelines hold copies); each sends its shards' values and AdamW moments to rank
 * 0, which places them at their whole-tensor indices in a whole model (tp 1, every layer) and
 * writes it with sl_checkpoint_save(): one file per step, atomic, CRC-checked. To know how a
 * sender's shard maps, rank 0 builds that stage's layers at the sender's (tp, TP rank), the same
 * description the sender has. Every rank learns whether the write succeeded.
 *
 * Load (collective): rank 0 picks the newest valid checkpoint (setting damaged ones aside, as
 * sl_checkpoint_load_latest does), tells every rank its path, and every rank reads its own shards
 * from that file.
 */
#ifndef SL_DIST_DIST_CHECKPOINT_H
#define SL_DIST_DIST_CHECKPOINT_H

#include "dist/comm.h"
#include "dist/roles.h"
#include "train/checkpoint.h"
#include "train/model.h"

/* whole: on rank 0 a model of every layer at tp 1 (sl_dist_whole_model_init), unused elsewhere.
 * st: rank 0's data position and hyper-parameters. path_out: on rank 0 the file written. */
int sl_dist_checkpoint_save(struct sl_comm *comm, const struct sl_role_table *table,
			    const struct sl_gpt *local, struct sl_gpt *whole, const char *dir,
			    const struct sl_ckpt_state *st, int keep, char *path_out,
			    size_t path_size, struct sl_err *err);

/* Loads the newest valid checkpoint of dir into every rank's local stage. st is filled on every
 * rank (st->train only on rank 0; the caller json_decref()s it). */
int sl_dist_checkpoint_load(struct sl_comm *comm, struct sl_gpt *local, const char *dir,
			    struct sl_ckpt_state *st, char *path_out, size_t path_size,
			    struct sl_err *err);

/* A model of every layer, tp 1, one slot of one token: the assembly area of a save. */
int sl_dist_whole_model_init(struct sl_gpt *whole, const struct sl_model_config *model,
			     struct sl_err *err);

#endif
