/* What an island run's checkpoint holds beyond the plan-independent one (rank_checkpoint.h):
 * each rank's own inner state, so that a resume under the same plan is exact.
 *
 * The plan-independent checkpoint of an island run holds the global weights θ as its values and
 * island 0's AdamW moments, so that any plan (a synchronous one, another island layout) resumes
 * from it: the islands then start a round from θ with those moments and a zero outer momentum,
 * and the exchanges that were in flight are dropped (docs/design/islands.md#checkpoints). Beside
 * it, every rank writes <dir>/islands/step-<S>/rank-<R>.bin: its shards' inner values and AdamW
 * moments, global weights and outer momentum, and the averages of the exchanges in flight
 * (settled, waiting for their landing step), with a signature of the plan's layout and a CRC.
 * A resume under the same layout reads them all back; if any rank's file is missing or does not
 * match, every rank falls back to the plan-independent checkpoint (the caller agrees on it).
 *
 * The rank files are written synchronously before the plan-independent checkpoint's snapshot,
 * so a complete checkpoint of step S implies complete rank files of step S. Each rank keeps its
 * files of the newest `keep` steps. The checkpoint folder must be one every rank can write and
 * read back (a shared file system on a real cluster, as for any resumable distributed job). */
#ifndef SL_RUNTIME_ISLAND_CHECKPOINT_H
#define SL_RUNTIME_ISLAND_CHECKPOINT_H

#include <stdint.h>

#include "plan/roles.h"
#include "runtime/outer_sync.h"

/* A hash of what a rank's state depends on: the islands section, the role table's shape and
 * this rank's role, and its parameters' sizes. */
uint64_t sl_island_checkpoint_signature(const struct sl_role_table *table,
					const struct sl_plan_islands *isl, int rank,
					const struct sl_outer_sync *o);

/* Writes this rank's file of `step` (the parameters' moments must be whole: a sharded optimizer
 * materialises them first) and removes its files of older steps beyond the newest `keep`. */
int sl_island_checkpoint_save(const char *dir, long long step, int keep, int rank,
			      uint64_t signature, const struct sl_outer_sync *o, struct sl_err *err);

/* This rank's file of `step`, read and checked, not yet applied. */
struct sl_island_checkpoint_file {
	unsigned char *data;
	size_t size;
	long long step;
	int rank;
	uint64_t signature;
};

/* Reads and checks; SL_ENOTFOUND when missing, SL_EINPUT (with the reason) when it does not
 * match or is damaged. Nothing is changed. */
int sl_island_checkpoint_read(const char *dir, long long step, int rank, uint64_t signature,
			      const struct sl_outer_sync *o, struct sl_island_checkpoint_file *file,
			      struct sl_err *err);

/* Applies a file read by sl_island_checkpoint_read: inner values, moments, global weights, outer
 * momentum, and the settled exchanges. */
int sl_island_checkpoint_apply(const struct sl_island_checkpoint_file *file,
			       struct sl_outer_sync *o, struct sl_err *err);

void sl_island_checkpoint_file_free(struct sl_island_checkpoint_file *file);

#endif
