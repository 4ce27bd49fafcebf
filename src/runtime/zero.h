/* A sharded optimizer (ZeRO stage 1, Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward
 * Training Trillion Parameter Models", section 5.1) for one stage: its AdamW moments are split
 * across the ranks that synchronise its gradients, so each holds a 1/G piece instead of all of
 * them. A step is then
 *   reduce-scatter of the gradients (each member receives the summed gradient of its piece),
 *   AdamW on the piece, all-gather of the updated values (each member reads back its shard),
 * which moves as much data as the all-reduce it replaces.
 *
 * The view. The stage's parameters are laid end to end in one flat view of W elements, and
 * member i of the stage's synchronisation group (groups.h) owns the range
 * [floor(i W / G), floor((i + 1) W / G)) of it:
 *   - uniform stage (every replica has one TP degree): the group is the D ranks of equal TP
 *     rank, which hold identical shards; the view is the concatenation of the local shards, so
 *     a member's piece lies in its own shards: the reduce-scatter runs in place and the summed
 *     piece is copied into the local gradients, and the member updates its values in place
 *     (per rank: moments 2/D of the shard's, nothing else);
 *   - mixed TP degrees: the group is every rank of the stage and the view is the concatenation
 *     of the whole tensors (as grad_sync.h reduces them): a rank contributes its shard at its
 *     whole-tensor indices (replicated tensors from TP rank 0 only, so each replica adds every
 *     element once) and reads its shard back from the gathered whole view. A member's piece
 *     is not in general inside its own shard, so it keeps an fp32 copy of the piece's values
 *     (the "master" piece), updated with the moments; every rank's shard is read from the
 *     gathered masters, so the replicas stay equal.
 * Both give the single-process update exactly: the sums are over the same contributions as the
 * all-reduce (plus exact zeros), AdamW is element-wise, and the clipping factor comes from the
 * global norm (sl_zero_grad_sumsq counts every element of the stage once).
 * The views are processed in buckets (SL_ZERO_BUCKET_FLOATS, in the gradient sync's bucket),
 * so no whole-view buffer is ever allocated.
 *
 * Not sharded: the tied token table when P > 1 (its gradient is summed across the first and the
 * last stage, grad_sync.h); it keeps its moments in its layer (SL_GPT_MOMENTS_TABLE_ONLY).
 *
 * Checkpoints stay whole (rank_checkpoint.h): sl_zero_materialize() gives every held parameter
 * full local moment arrays, gathered from the pieces, for the save to read; after a load into
 * such arrays sl_zero_load() takes the pieces (and the master values) from the ranks of the
 * island's first pipeline (pipeline 0 without islands); sl_zero_release() frees the arrays.
 *
 * Ownership: sl_zero_init() allocates the pieces and borrows params, the group and the bucket;
 * sl_zero_free() releases what it allocated.
 */
#ifndef SL_RUNTIME_ZERO_H
#define SL_RUNTIME_ZERO_H

#include "runtime/comm.h"
#include "plan/roles.h"
#include "train/optimizer.h"
#include "train/param.h"

/* Elements per reduce-scatter / all-gather call (1 Mi floats, 4 MiB): OpenMPI allocates
 * temporaries of about a call's size inside these collectives, which with the gradient sync's
 * 16 MiB buckets measured as +20 MiB of peak RSS per rank (bench/bench_memopts.sh). */
#define SL_ZERO_BUCKET_FLOATS (1L << 20)

struct sl_zero_segment {
	int param;                 /* index into held[] */
	long long piece_off, len;  /* where in the piece arrays, and how many elements */
	long long local_off;       /* uniform: offset in the parameter's local arrays */
};

struct sl_zero {
	struct sl_comm *comm;
	const struct sl_comm_group *group;
	int uniform;
	struct sl_role me;
	struct sl_param **held;    /* the sharded parameters, stage order (owned array) */
	int held_count;
	long long *view_start;     /* per held parameter: its first element in the view */
	long long view_numel;      /* W */
	long long own_start, own_len;
	float *master, *grad, *m, *v; /* own_len each, one allocation; master and grad: mixed
				       * only (uniform: the local arrays hold the piece's values and
				       * summed gradient) */
	float *pieces;
	struct sl_zero_segment *segs;
	int seg_count;
	float *bucket;             /* borrowed */
	long long bucket_floats;
	int *counts;               /* group->size */
	float *materialized;       /* sl_zero_materialize's arrays (owned while materialised) */
};

/* Shards the moments of params[0..count) (the stage's, as the layers hold them; with P > 1
 * "layer0.wte.weight" is left out) over `group` (groups.h's stage_sync; uniform as
 * stage_sync_uniform). The layers must hold no moments for the sharded ones. Call
 * sl_zero_load(z, 0) once the values are set. */
int sl_zero_init(struct sl_zero *z, struct sl_comm *comm, const struct sl_comm_group *group,
		 int uniform, const struct sl_role_table *table, struct sl_param *const *params,
		 int count, float *bucket, long long bucket_floats, struct sl_err *err);
void sl_zero_free(struct sl_zero *z);

/* 1 when p's moments are sharded here. */
int sl_zero_holds(const struct sl_zero *z, const struct sl_param *p);

/* Collective over the group: the pieces take the values (and, with moments, the moments from
 * the parameters' exp_avg/exp_avg_sq arrays, which must be materialised) of the ranks of the
 * island's first pipeline. */
int sl_zero_load(struct sl_zero *z, int moments, struct sl_err *err);

/* Collective: the summed gradients of the held parameters, into this member's piece. */
int sl_zero_reduce_grads(struct sl_zero *z, struct sl_err *err);

/* Sum of squares of this member's piece of the summed gradient, counting each element of the
 * stage once over the whole world (uniform: replicated tensors from TP rank 0's group only). */
double sl_zero_grad_sumsq(const struct sl_zero *z);

/* AdamW on the piece (s from sl_adamw_prepare; decay per parameter), then the collective
 * all-gather that gives every rank its updated shard values. */
int sl_zero_step(struct sl_zero *z, const struct sl_adamw_config *cfg, double lr,
		 const struct sl_adamw_step *s, struct sl_err *err);

/* Collective: allocates whole local moment arrays for the held parameters and fills them from
 * the pieces (fill = 0: allocates only, for a load to write into). */
int sl_zero_materialize(struct sl_zero *z, int fill, struct sl_err *err);
/* Frees them; the held parameters' exp_avg/exp_avg_sq are NULL again. */
void sl_zero_release(struct sl_zero *z);

#endif
