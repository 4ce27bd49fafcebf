/* Checkpoints of a distributed job in the plan-independent format of checkpoint.h, so that any
 * plan (or `sailor train`) resumes any checkpoint.
 *
 * Save (collective over the world): the ranks of pipeline 0 hold every shard of every tensor
 * once (the other pipelines hold copies). Each copies its shards' values and AdamW moments into
 * a snapshot buffer in one pass and sends it to rank 0 as one message (a tag above every
 * schedule tag); rank 0 places them at their whole-tensor indices in a whole model (tp 1, every
 * layer) and writes it with sl_checkpoint_save(): one file per step, atomic, CRC-checked. Where a
 * sender's shards go comes from that stage built at the sender's (tp, TP rank), the description
 * the sender has; rank 0 builds it once per job (at the first save) and keeps only the layout.
 * Every rank learns whether the save succeeded.
 *
 * Asynchronous saves (CheckFreq's snapshot/persist split, Mohan et al., FAST'21): the copy and
 * the gather into rank 0's staging buffers are the snapshot, taken at a step boundary (what the
 * training waits for: a memcpy of the shards and one message per rank); with async the rest —
 * placing the shards into the whole model, CRC, write, fsync, rename — is handed to one
 * background thread at a lower priority (10 nicer than the ranks: their steps come first; it
 * has a whole checkpoint interval to finish) and the call returns. The snapshot, staging and whole buffers
 * are allocated once and reused: the next save (and sl_rank_checkpoint_finish) first waits for
 * the persist in flight, so at most one is in flight and its buffers are never overwritten while
 * it reads them. A crash during the persist leaves the newest complete checkpoint untouched
 * (checkpoint.c writes a temporary file and renames it). A persist's failure is reported by the
 * next save or by finish, on every rank. The environment variable SAILOR_SYNC_CHECKPOINTS=1
 * forces synchronous saves (benchmarks compare the two). Memory: rank 0 keeps a staging copy of
 * the model's values and moments besides the whole model; every rank of pipeline 0 one of its
 * own shards.
 *
 * Load (collective): rank 0 picks the newest valid checkpoint (setting damaged ones aside, as
 * sl_checkpoint_load_latest does), tells every rank its path, and every rank reads its own shards
 * from that file.
 */
#ifndef SL_RUNTIME_RANK_CHECKPOINT_H
#define SL_RUNTIME_RANK_CHECKPOINT_H

#include "runtime/comm.h"
#include "plan/roles.h"
#include "train/checkpoint.h"
#include "train/model.h"

/* Saves a checkpoint of the whole model. whole: on rank 0 a model of every layer at tp 1
 * (sl_rank_checkpoint_whole_model_init), unused elsewhere. st: rank 0's data position and
 * hyper-parameters. The persist runs in the background (unless SAILOR_SYNC_CHECKPOINTS is 1):
 * returns once the snapshot is taken; path_out is then "" (the file is named by
 * sl_rank_checkpoint_persisted / _finish), else on rank 0 the file written. Collective. One
 * persist per process at a time. */
int sl_rank_checkpoint_save_async(struct sl_comm *comm, const struct sl_role_table *table,
				  const struct sl_gpt *local, struct sl_gpt *whole, const char *dir,
				  const struct sl_checkpoint_state *st, int keep, char *path_out,
				  size_t path_size, struct sl_err *err);

/* Collective: waits for the persist in flight (if any) and agrees on its outcome. path_out (rank
 * 0) receives the file it wrote, or is left as it was when none was in flight. */
int sl_rank_checkpoint_finish(struct sl_comm *comm, char *path_out, size_t path_size,
			      struct sl_err *err);

/* Not collective: waits for this process's persist in flight, if any, ignoring its outcome, and
 * frees the snapshot buffers (at the end of a job, before the whole model is freed). */
void sl_rank_checkpoint_wait_local(void);

/* What one checkpoint cost, on rank 0 (seconds). wait_s and snapshot_s are in the training's
 * path: waiting for the previous persist (normally done) and agreeing on it, then copying every
 * shard to memory and gathering the copies into rank 0. place_s and write_s are the persist's
 * (in the background when asynchronous): placing the shards into the whole model, and writing
 * the file (CRC, write, fsync, rename). persist_cpu_s is the part of the persist that used a
 * core (the rest waits for the disk): what an asynchronous persist can take from training. */
struct sl_rank_checkpoint_report {
	long long step;
	double wait_s, snapshot_s, place_s, write_s, persist_s; /* persist = place + write */
	double persist_cpu_s; /* CPU time the persist used */
	char path[4300];
};

/* Rank 0, never blocks: 1 once for each persist that completed successfully since the last
 * call, filling r; 0 otherwise. */
int sl_rank_checkpoint_persisted(struct sl_rank_checkpoint_report *r);

/* Loads the newest valid checkpoint of dir into every rank's local stage. st is filled on every
 * rank (st->train only on rank 0; the caller json_decref()s it). */
int sl_rank_checkpoint_load(struct sl_comm *comm, struct sl_gpt *local, const char *dir,
			    struct sl_checkpoint_state *st, char *path_out, size_t path_size,
			    struct sl_err *err);

/* A model of every layer, tp 1, one slot of one token: the assembly area of a save. */
int sl_rank_checkpoint_whole_model_init(struct sl_gpt *whole, const struct sl_model_config *model,
			     struct sl_err *err);

#endif
