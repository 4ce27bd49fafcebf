/* The replay model's memory (time_replay.c): peak resident memory of the process, per rank.
 *
 * The runtime baseline (what the profile measured on an MPI rank of the device less its
 * tensors: binary, libraries, OpenMPI; else the catalogue's runtime_overhead_bytes) + the
 * layers' parameter storage (values, gradients, two moments) + slots x their activation cache
 * of one micro-batch + the backward workspace + the receive buffers of stages > 0 (an input
 * activation and an output gradient per slot) + the gradient bucket + one gradient buffer; the
 * layer figures are the profile's, measured on the runtime's own layers. Every buffer the
 * runtime allocates is zeroed, so all of it is resident from the start: the 16 MiB gradient
 * bucket counts even for a rank with nothing to all-reduce. With the non-blocking collectives
 * a rank also holds what it touched of libnbc's scratch: the reduce-scatter's with ZeRO-1, the
 * ring all-reduce's otherwise (ring_scratch_bytes, time_replay.c); libnbc frees it after each
 * call, so the larger of the two counts.
 *
 * Options per stage (plan.h): recompute "full" keeps no block intermediates per slot, only one
 * working set (a block's cache and its output) per stage; "selective" moves the attention
 * core's scores and weighted sum from the slots to the working set. ZeRO-1 over m ranks of the
 * stage's sync group keeps the moments of 1/m (the pipeline's tied token table keeps its
 * moments whole; a stage of mixed TP degrees shards whole tensors and keeps a summed gradient
 * and an fp32 copy of its piece).
 *
 * Invariants: every figure is bytes and none is negative; total_bytes is the sum of the
 * parts. */
#include <math.h>
#include <string.h>

#include "sim/replay.h"

const struct sl_profile_memory *sl_replay_profile_memory(const struct sl_sim_env *env, int gpu,
						     int mbs, int tp)
{
	const struct sl_profile *prof = env->profiles[gpu];
	const struct sl_profile_entry *e = prof ? sl_profile_find(prof, mbs, tp) : NULL;
	return e && e->memory.present ? &e->memory : NULL;
}

/* The largest parameter tensor of layers [first, last] (fp32): the token table when the stage
 * holds the embedding or the head, else a block's MLP matrix (4 h x h). */
double sl_replay_largest_whole_tensor_bytes(const struct sl_sim_env *env, int first, int last)
{
	double h = env->model.hidden;
	double ffn = env->model.ffn_hidden > 0 ? env->model.ffn_hidden : 4 * h;
	double biggest = ffn * h;
	if (first == 0 || last == env->num_layers - 1)
		biggest = fmax(biggest, (double)env->model.vocab * h);
	return SL_FP32_BYTES * biggest;
}

/* Activation-cache bytes of one block at (mbs, tp) that selective recomputation does not keep:
 * the attention scores/softmax [B, heads/tp, T, T] and their weighted sum [B, T, C/tp]. */
static double attention_core_bytes(const struct sl_sim_env *env, int mbs, int tp)
{
	double T = env->model.seq_len, C = env->model.hidden, H = env->model.heads;
	return SL_FP32_BYTES * mbs * (H / tp * T * T + T * C / tp);
}

/* Memory of one rank (see the top of the file). */
void sl_replay_rank_memory(const struct sl_sim_env *env, const struct sl_role *r, int mbs, int slots,
		       int P, double whole_tensor_bytes,
		       int recompute, int zero_group, int zero_rank, double zero_whole_bytes,
		       int nonblocking, double ring_scratch_bytes, struct sl_sim_memory *mem)
{
	const struct sl_gpu_type *g = &env->catalogue.gpus[r->gpu];
	const struct sl_profile_memory *pm = sl_replay_profile_memory(env, r->gpu, mbs, r->tp);
	int L = env->num_layers;
	memset(mem, 0, sizeof(*mem));
	double storage = 0, act = 0, shared = 0;
	for (int l = r->first_layer; pm && l <= r->last_layer; l++) {
		int kind = l == 0 ? SL_KIND_EMBEDDING : (l == L - 1 ? SL_KIND_HEAD : SL_KIND_BLOCK);
		storage += pm->params_bytes[kind];
		double a = pm->activations_bytes[kind];
		/* recomputed tensors live once per stage, not per slot (train/gpt_layers.h) */
		if (kind == SL_KIND_BLOCK && recompute == SL_RECOMPUTE_FULL) {
			shared = fmax(shared, a + SL_FP32_BYTES * (double)mbs * env->model.seq_len *
							 env->model.hidden);
			a = 0;
		} else if (kind == SL_KIND_BLOCK && recompute == SL_RECOMPUTE_SELECTIVE) {
			double core = fmin(a, attention_core_bytes(env, mbs, r->tp));
			shared = fmax(shared, core);
			a -= core;
		}
		act += a;
	}
	if (pm && r->first_layer == 0 && r->last_layer == L - 1) {
		/* one stage holds both ends: the head uses the embedding's table, no copy of its own */
		storage -= 4.0 * SL_FP32_BYTES * (double)env->model.vocab / r->tp * env->model.hidden;
	}
	double activation_msg = SL_FP32_BYTES * (double)mbs * env->model.seq_len * env->model.hidden;
	double zero_scratch = 0;
	/* storage = values | grads | exp_avg | exp_avg_sq, one quarter each */
	mem->params_bytes = storage / 4;
	mem->grads_bytes = storage / 4;
	mem->optimizer_bytes = storage / 2;
	if (zero_group > 1) {
		/* ZeRO-1 (runtime/zero.h): the moments of 1/m of the stage's flat view; a stage of mixed
		 * TP degrees shards whole tensors and also keeps the summed gradient and an fp32 copy
		 * of its piece. The tied token table of a pipeline keeps its moments whole. */
		double table = (P > 1 && (r->stage == 0 || r->stage == P - 1))
				       ? 2.0 * SL_FP32_BYTES * env->model.vocab / r->tp * env->model.hidden
				       : 0;
		double rest = fmax(0, mem->optimizer_bytes - table);
		/* zero_whole_bytes: the two moments of the stage's whole tensors (mixed TP), whose
		 * piece comes with as many bytes of summed gradient and fp32 values */
		mem->optimizer_bytes = table + (zero_whole_bytes > 0 ? 2.0 * zero_whole_bytes : rest) /
						       zero_group;
		/* Where some rank waits asleep (a CPU quota) every rank runs the gradient
		 * reduce-scatter as MPI_Ireduce_scatter (comm.h, nonblocking_collectives).
		 * OpenMPI's libnbc reduces over a binomial tree into a scratch of two buffers the
		 * size of the call (a bucket of the stage's flat view, at most
		 * SL_ZERO_BUCKET_FLOATS): a rank fills one per round it receives in, two at most; a
		 * rank that only sends fills none. */
		if (nonblocking) {
			int receives = 0;
			for (int half = 1; half < zero_group && zero_rank % (2 * half) == 0;
			     half *= 2)
				receives += zero_rank + half < zero_group;
			double view = zero_whole_bytes > 0 ? zero_whole_bytes / 2 : mem->params_bytes;
			zero_scratch = fmin(2, receives) * fmin(SL_RT_ZERO_BUCKET_BYTES, view);
		}
	}
	mem->activations_bytes = slots * act + shared + (pm ? pm->workspace_bytes : 0);
	/* the gradient bucket is allocated (and zeroed, so resident) by every rank, large enough
	 * for the largest whole tensor when a stage mixes TP degrees (grad_sync.c) */
	mem->buffers_bytes = (r->stage > 0 ? 2.0 * slots * activation_msg : 0) +
			     fmax(SL_RUNTIME_BUCKET_BYTES, whole_tensor_bytes) + activation_msg +
			     fmax(zero_scratch, nonblocking ? ring_scratch_bytes : 0) +
			     env->reserve_param_copies * mem->params_bytes;
	(void)P;
	/* the process baseline as the profile measured it on an MPI rank of this device type;
	 * else the catalogue's figure */
	mem->runtime_bytes = pm && pm->mpi_ranks && pm->runtime_rss_bytes > 0
				     ? pm->runtime_rss_bytes
				     : g->runtime_overhead_bytes;
	mem->total_bytes = mem->params_bytes + mem->grads_bytes + mem->optimizer_bytes +
			   mem->activations_bytes + mem->buffers_bytes + mem->runtime_bytes;
	mem->capacity_bytes = g->memory_bytes;
}
