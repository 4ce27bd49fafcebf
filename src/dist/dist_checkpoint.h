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
 * Asynchronous saves (CheckFreq's snapshot/persist split, Mohan et al., FAST'21): the gather into
 * rank 0's whole model is the snapshot, taken at a step boundary; with async the write is handed
 * to one background thread and the call returns while the file is written, so training goes on.
 * The whole model is the persist's buffer: the next save (and sl_dist_checkpoint_finish) first
 * waits for the persist in flight, so at most one is in flight and the snapshot is never
 * overwritten while it is written. A crash during the persist leaves the newest complete
 * checkpoint untouched (checkpoint.c writes a temporary file and renames it). A persist's failure
 * is reported by the next save or by finish, on every rank. The environment variable
 * SAILOR_SYNC_CHECKPOINTS=1 forces synchronous saves (benchmarks compare the two).
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

/* The same with the persist in the background when async (and SAILOR_SYNC_CHECKPOINTS is not
 * 1): returns once the snapshot is taken; path_out is then "" (the file is named by
 * sl_dist_checkpoint_persisted / _finish). Collective. One persist per process at a time. */
int sl_dist_checkpoint_save_async(struct sl_comm *comm, const struct sl_role_table *table,
				  const struct sl_gpt *local, struct sl_gpt *whole, const char *dir,
				  const struct sl_ckpt_state *st, int keep, char *path_out,
				  size_t path_size, struct sl_err *err);

/* Collective: waits for the persist in flight (if any) and agrees on its outcome. path_out (rank
 * 0) receives the file it wrote, or is left as it was when none was in flight. */
int sl_dist_checkpoint_finish(struct sl_comm *comm, char *path_out, size_t path_size,
			      struct sl_err *err);

/* Not collective: waits for this process's persist in flight, if any, ignoring its outcome (before
 * freeing the whole model after a failure). */
void sl_dist_checkpoint_wait_local(void);

/* Rank 0, never blocks: 1 once for each persist that completed successfully since the last
 * call, with its step, seconds the write took and path; 0 otherwise. */
int sl_dist_checkpoint_persisted(long long *step, double *persist_s, char *path,
				 size_t path_size);

/* Loads the newest valid checkpoint of dir into every rank's local stage. st is filled on every
 * rank (st->train only on rank 0; the caller json_decref()s it). */
int sl_dist_checkpoint_load(struct sl_comm *comm, struct sl_gpt *local, const char *dir,
			    struct sl_ckpt_state *st, char *path_out, size_t path_size,
			    struct sl_err *err);

/* A model of every layer, tp 1, one slot of one token: the assembly area of a save. */
int sl_dist_whole_model_init(struct sl_gpt *whole, const struct sl_model_config *model,
			     struct sl_err *err);

#endif
