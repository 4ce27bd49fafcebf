/* Private to src/sim/: the precomputed tables of an environment and the helpers the cost models
 * share. Nothing here is part of the public API (sim.h).
 *
 * Invariants: tables->time has gpu_count × SL_SIM_MBS_SLOTS × SL_SIM_MAX_TP slots; a slot with
 * source != SL_TIME_NONE has prefix arrays of L+1 entries (prefix[0] = 0). Size prefix arrays
 * exist for every TP degree 1..8. */
#ifndef SL_SIM_INTERNAL_H
#define SL_SIM_INTERNAL_H

#include "sim/sim.h"

/* DeepSpeed's data-parallel all-reduce bucket: MEMORY_OPT_ALLREDUCE_SIZE = 500,000,000 elements
 * (deepspeed/runtime/pipe/engine.py, allreduce_gradients(bucket_size=...)). The SOSP'25
 * simulator uses the same number as bytes (SIMULATOR.md section 2.11). */
#define SL_DS_BUCKET_ELEMENTS 500000000.0
#define SL_SOSP25_BUCKET_BYTES 500000000.0

/* fp32 training: 4 bytes per element ("floats" in the artifact's files). */
#define SL_FP32_BYTES 4.0

struct sl_time_slot {
	enum sl_time_source source;
	double *fwd_prefix;       /* [L+1] sailor model: per-layer forward, made monotone in mbs */
	double *bwd_prefix;       /* [L+1] sailor model: backward, made monotone in mbs */
	double *raw_fwd_prefix;   /* [L+1] as measured (or estimated) */
	double *raw_bwd_prefix;   /* [L+1] as measured (or estimated) */
	double *raw_update;       /* [L] update_s per layer as in the profile (sosp25 model) */
	double update_per_param_s;/* optimizer seconds per parameter held by the GPU (sailor) */
	double attention_core_share; /* selective recomputation's work over a block's forward,
				      * as profiled (sl_profile_entry); 0: not measured */
};

struct sl_sim_tables {
	int L;
	int gpu_count;
	struct sl_time_slot *slots;           /* [gpu][mbs slot][tp-1] */
	double *params_prefix[SL_SIM_MAX_TP + 1];  /* [t][L+1] parameters per GPU */
	double *act_prefix[SL_SIM_MAX_TP + 1];     /* [t][L+1] activation bytes per sample */
	double *act_rmax[SL_SIM_MAX_TP + 1];       /* [t][a*L+b] max layer activation in [a,b] */
	double sosp25_usd_per_hour[SL_MAX_GPU_TYPES];
	double sosp25_memory_bytes[SL_MAX_GPU_TYPES];
	char profile_path[SL_MAX_GPU_TYPES][SL_PROFILE_PATH_MAX]; /* where a profile would be */
	char profile_overlay_dir[SL_PROFILE_PATH_MAX];            /* "" = shipped profiles only */
};

/* Micro-batch slot of mbs (1 -> 0, 2 -> 1, 4 -> 2, ...), or -1 if not a power of two in
 * range (time_slots.c, with sl_sim_slot_mut and sl_sim_fill_slot). */
int sl_sim_mbs_slot(int mbs);

static inline const struct sl_time_slot *sl_sim_slot(const struct sl_sim_env *env, int gpu, int mbs,
						     int tp)
{
	int s = sl_sim_mbs_slot(mbs);
	if (s < 0 || tp < 1 || tp > SL_SIM_MAX_TP || gpu < 0 || gpu >= env->catalogue.gpu_count)
		return NULL;
	const struct sl_time_slot *slot =
		&env->tables->slots[((size_t)gpu * SL_SIM_MBS_SLOTS + (size_t)s) * SL_SIM_MAX_TP +
				    (size_t)(tp - 1)];
	return slot->source == SL_TIME_NONE ? NULL : slot;
}

/* Forward and backward seconds per micro-batch of layers [first, last] on (gpu, mbs, tp) as the
 * time tables hold them, without memory options (env.c): SL_ENOTFOUND when there is none. The
 * public sl_sim_stage_fwd_bwd adds the options (sim/memory_options.c). */
int sl_sim_layers_fwd_bwd(const struct sl_sim_env *env, enum sl_cost_model cm, int gpu, int mbs,
			  int tp, int first, int last, double *fwd_s, double *bwd_s);
/* Optimizer step seconds of layers [first, last] on (gpu, mbs, tp), without ZeRO-1 (env.c);
 * negative when there is no time. */
double sl_sim_layers_update_s(const struct sl_sim_env *env, enum sl_cost_model cm, int gpu,
			      int mbs, int tp, int first, int last);
/* Parameters per GPU of layers [a, b] under TP t (the tied embedding counted once when the
 * range holds both the embedding and the head). */
double sl_sim_stage_params(const struct sl_sim_env *env, int tp, int a, int b);
/* Full (unsharded) gradient bytes of layers [a, b], tied embedding counted once. */
double sl_sim_stage_grad_bytes(const struct sl_sim_env *env, int a, int b);

/* Fills the time slots that have no profile with estimates (estimate.c), reading the reference
 * model's profiles from overlay (NULL: none) before data_dir, as the loader read the model's. */
int sl_sim_estimate_times(struct sl_sim_env *env, const char *data_dir, const char *overlay,
			  struct sl_err *err);
/* Allocates the prefix arrays of a slot from per-layer values (time_slots.c). */
int sl_sim_fill_slot(struct sl_sim_env *env, struct sl_time_slot *slot, enum sl_time_source src,
		     const double *raw_fwd, const double *raw_bwd, const double *fwd,
		     const double *bwd, const double *upd, double update_per_param,
		     struct sl_err *err);
/* Parameters per GPU of the model the profiler ran (embedding + 2 blocks [+ norm] + head). */
double sl_sim_profiled_model_params(const struct sl_layer_sizes *sizes, int tp);
struct sl_time_slot *sl_sim_slot_mut(struct sl_sim_env *env, int gpu, int slot, int tp);

/* ---- the cost models ---- */
int sl_sim_sosp25(const struct sl_sim_env *env, const struct sl_plan *plan, long long global_batch,
		  struct sl_sim_result *out, struct sl_err *err);
/* Our runtime's cost model (time_replay.c); allocates. */
int sl_sim_replay(const struct sl_sim_env *env, const struct sl_plan *plan, long long G,
		   struct sl_sim_result *out, struct sl_err *err);
int sl_sim_sailor(const struct sl_sim_env *env, const struct sl_plan *plan, long long global_batch,
		  struct sl_sim_result *out, struct sl_err *err);

/* SOSP'25 primitives (SIMULATOR.md section 3, Python form). */
double sl_sosp25_send_time(const struct sl_link_fit *fit, double nbytes);
double sl_sosp25_ar_time_buckets(double nbytes, int n, const struct sl_link_fit *fit);

/* The SOSP'25 gradient sync of stage i of a plan (estimate_sync_time for one stage: adjacent
 * replica pairs, count-1 fits, W / min(4, min tp) bytes); ORs derived fits into *derived. */
double sl_sosp25_stage_sync_s(const struct sl_sim_env *env, const struct sl_plan *plan, int i,
			      int *derived);

/* ---- sailor model pieces ---- */

/* One activation or gradient transfer between replicas of adjacent stages (comm_time.c):
 * net_s on the network (one copy, partitioned over the TP ranks), then gather_s for the
 * receiver's intra-node all-gather of the slices. eager: each TP rank's message fits the slots
 * NCCL stages a send between nodes in (2 MiB), so the sender does not wait for the receiver
 * (schedule_deepspeed.c). */
struct sl_sim_transfer {
	double net_s;
	double gather_s;
	int eager;
};

/* The DeepSpeed 1F1B TrainSchedule of one pipeline (schedule_deepspeed.c). Inputs per stage k < P:
 * fwd_s[k], bwd_s[k] per micro-batch; act[k] / grad[k] the transfer of an activation from stage k
 * to k+1 / of its gradient back (k < P-1). Outputs per stage: finish_s[k] (its last backward and
 * transfer done), compute_s, p2p_s (held by transfers: a rendezvous for its length, an eager
 * receiver for the bytes still in flight; then the receiver's all-gather), idle_s = finish -
 * compute - p2p. */
void sl_sim_schedule_1f1b(int P, int M, const double *fwd_s, const double *bwd_s,
			  const struct sl_sim_transfer *act, const struct sl_sim_transfer *grad,
			  double *finish_s, double *compute_s, double *p2p_s);

/* The transfer of bytes (the whole stage output of a micro-batch) from replica src to replica
 * dst of the next or previous stage (comm_time.c). */
void sl_sim_p2p_transfer(const struct sl_sim_env *env, const struct sl_replica *src,
			 const struct sl_replica *dst, double bytes, struct sl_sim_transfer *out);
/* Its total seconds, net_s + gather_s. */
double sl_sim_p2p_time(const struct sl_sim_env *env, const struct sl_replica *src,
		       const struct sl_replica *dst, double bytes);
/* Seconds for the data-parallel all-reduce of grad_bytes (full stage gradient) over the D
 * replicas reps[0..D-1] (stride apart in memory), as DeepSpeed runs it (comm_time.c). */
double sl_sim_allreduce_time(const struct sl_sim_env *env, const struct sl_replica *reps, int D,
			     double grad_bytes);
/* Seconds for the tied-embedding all-reduce between a first- and last-stage replica. */
/* What sl_sim_allreduce_time would charge if every hop of the ring took as long as a -> b and
 * the smallest TP degree of the ring were tmin: a lower bound for any ring containing that hop
 * (bounds.c). */
double sl_sim_allreduce_hop_bound(const struct sl_sim_env *env, const struct sl_replica *a,
				  const struct sl_replica *b, int D, double grad_bytes, int tmin);

double sl_sim_tied_time(const struct sl_sim_env *env, const struct sl_replica *first,
			const struct sl_replica *last, double bytes_per_gpu);

/* Memory of the replica q under the sailor model, with q's memory options where they change
 * anything (memory.c; which do: sim/memory_options.c). q's layers and TP must be in range. */
void sl_sim_memory_sailor(const struct sl_sim_env *env, const struct sl_sim_replica_query *q,
			  struct sl_sim_memory *mem);
/* Transformer blocks among layers [first, last]: their count, and their range in
 * [*block_first, *block_last] (either pointer may be NULL). */
int sl_sim_stage_blocks(const struct sl_sim_env *env, int first, int last, int *block_first,
			int *block_last);
/* The SOSP'25 validation estimate (overhead 5.06e9) and planning check (2e9/3e9). */
void sl_sim_memory_sosp25(const struct sl_sim_env *env, const struct sl_sim_replica_query *q,
			  struct sl_sim_memory *mem);
int sl_sim_fits_sosp25(const struct sl_sim_env *env, const struct sl_sim_replica_query *q);

#endif
