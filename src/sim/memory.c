/* Peak memory per GPU of a replica: the sailor model (per component) and the SOSP'25 estimates.
 *
 * sailor model, for a replica of layers [a, b] at stage i of P, micro-batch mbs, TP t, M
 * micro-batches per pipeline, D replicas per stage (fp32 training, Adam; without memory options
 * the configuration of Megatron-DeepSpeed the profiles and runs use):
 *   parameters   4 B/param of the stage's shard (tied embedding once when a stage holds both ends)
 *   gradients    4 B/param (fp32 .grad buffers)
 *   optimizer    8 B/param (Adam exp_avg and exp_avg_sq in fp32); with ZeRO-1 ("zero": 1) and
 *                D > 1 replicas, 8/D B/param: each replica holds the moments of its 1/D share
 *   activations  min(P - i, M) micro-batches in flight at stage i — DeepSpeed's
 *                TrainSchedule.num_pipe_buffers() — times mbs times the stage's activation
 *                bytes per sample (the artifact's act_mem, memory allocated during each layer's
 *                forward); plus the backward working set: while a layer runs its backward,
 *                autograd holds the gradients of its saved intermediates (as large as the
 *                layer's activations) and the backward kernels' full-size temporaries (softmax,
 *                GeLU and dropout backward each write a new tensor of that size): 2 × the largest
 *                layer's activations × mbs
 *   buffers      p2p receive buffers: the input activation of each in-flight micro-batch
 *                (stages > 0) and one output-gradient buffer (stages < P-1); NCCL buffers of
 *                every communicator the GPU joins (world, TP group if t > 1, data-parallel group
 *                if D > 1, one per pipeline neighbour, the tied-embedding group if P > 1) at the
 *                GPU type's nccl_buffer_bytes each
 *                With recomputation (plan "recompute", sim/memory_options.c): "full" keeps per in-flight
 *                micro-batch only each block's output (the next block's input) instead of the
 *                block's activations, and the block whose backward runs holds its activations
 *                again (+ mbs × the largest block's); "selective" drops each block's attention
 *                scores (heads/tp · s² fp32 values per sample) and rebuilds one block's scores at a
 *                time (+ mbs × one block's scores). Layers that are not blocks are unchanged.
 *   runtime      the GPU type's fixed runtime overhead (data/gpus.json runtime_overhead_bytes:
 *                CUDA context, cuBLAS/cuDNN workspaces, caching-allocator reserve)
 *
 * Every question about a replica's memory, the simulator's and the planner's ("does this replica
 * fit", with or without memory options), is asked here with one struct sl_sim_replica_query
 * (sim.h) and answered here: sl_sim_replica_memory and sl_sim_replica_fits dispatch on the cost
 * model to the sailor model or the SOSP'25 estimates below. This file reads the environment's
 * tables (env.c) and which options apply (sim/memory_options.c); nothing it calls asks memory back.
 * Invariant: a query with recompute NONE and zero 0 costs bit for bit what a stage without
 * options costs, and an option that changes nothing (sl_sim_effective_*) is no option.
 */
#include <string.h>

#include "sim/internal.h"

/* Per-sample bytes of the attention scores of one block at TP t: heads/t score matrices of s x s
 * fp32 values (the a·s² term of Korthikanti et al. eq. 1, which model/layer_sizes.c counts once).
 * What selective recomputation no longer keeps; never more than the block's activations beyond
 * its output, so that a measured figure smaller than the formula cannot go negative. */
static double attention_scores_bytes(const struct sl_sim_env *env, int tp, int layer)
{
	double sq = env->model.seq_len;
	double scores = SL_FP32_BYTES * env->model.heads * sq * sq / tp;
	double room = env->sizes->act_mem_bytes[tp][layer] - env->sizes->act_output_bytes[tp][layer];
	if (room < 0)
		room = 0;
	return scores < room ? scores : room;
}

void sl_sim_memory_sailor(const struct sl_sim_env *env, const struct sl_sim_replica_query *q,
			  struct sl_sim_memory *mem)
{
	const struct sl_sim_tables *T = env->tables;
	const struct sl_gpu_type *g = &env->catalogue.gpus[q->gpu];
	/* the names of the formula above */
	const int mbs = q->mbs, tp = q->tp, a = q->first_layer, b = q->last_layer;
	const int stage = q->stage, P = q->num_stages, M = q->microbatches, D = q->num_pipelines;
	int L = env->num_layers;
	memset(mem, 0, sizeof(*mem));
	enum sl_recompute recompute = sl_sim_effective_recompute(env, a, b, q->recompute);
	int zero = sl_sim_effective_zero(q->zero, D);
	double params = sl_sim_stage_params(env, tp, a, b);
	mem->params_bytes = SL_FP32_BYTES * params;
	mem->grads_bytes = SL_FP32_BYTES * params;
	mem->optimizer_bytes = 2.0 * SL_FP32_BYTES * params;
	/* ZeRO-1: each replica keeps the Adam moments of 1/D of the stage's parameters (fp32
	 * training: there is no separate fp32 master copy to split as well) */
	if (zero)
		mem->optimizer_bytes /= D;
	int inflight = P - stage < M ? P - stage : M;
	if (inflight < 1)
		inflight = 1;
	double per_sample = T->act_prefix[tp][b + 1] - T->act_prefix[tp][a];
	double largest = T->act_rmax[tp][(size_t)a * (size_t)L + (size_t)b];
	double recomputed = 0; /* per micro-batch: what a block's backward rebuilds, one at a time */
	if (recompute != SL_RECOMPUTE_NONE) {
		int s, e;
		sl_sim_stage_blocks(env, a, b, &s, &e);
		double kept = 0, core = 0;
		for (int l = s; l <= e; l++) {
			kept += env->sizes->act_output_bytes[tp][l];
			double sc = attention_scores_bytes(env, tp, l);
			core += sc;
			if (recompute == SL_RECOMPUTE_SELECTIVE && sc > recomputed)
				recomputed = sc;
		}
		if (recompute == SL_RECOMPUTE_FULL) {
			/* blocks keep only their output (the next block's input); embedding, norm and
			 * head keep everything; the block being recomputed holds all of its
			 * activations again during its backward */
			double blocks = T->act_prefix[tp][e + 1] - T->act_prefix[tp][s];
			per_sample = per_sample - blocks + kept;
			recomputed = T->act_rmax[tp][(size_t)s * (size_t)L + (size_t)e];
		} else {
			per_sample -= core;
		}
	}
	mem->activations_bytes = (double)inflight * mbs * per_sample + 2.0 * mbs * largest;
	if (recompute != SL_RECOMPUTE_NONE)
		mem->activations_bytes += mbs * recomputed;
	double buffers = 0;
	if (stage > 0 && a > 0)
		buffers += (double)inflight * mbs * env->sizes->act_output_bytes[1][a - 1];
	if (stage < P - 1)
		buffers += (double)mbs * env->sizes->act_output_bytes[1][b];
	int comms = 1 + (tp > 1) + (D > 1) + (stage > 0) + (stage < P - 1) +
		    (P > 1 && (stage == 0 || stage == P - 1) && env->sizes->head_holds_embedding);
	buffers += comms * g->nccl_buffer_bytes;
	mem->buffers_bytes = buffers + env->reserve_param_copies * mem->params_bytes;
	mem->runtime_bytes = g->runtime_overhead_bytes;
	mem->total_bytes = mem->params_bytes + mem->grads_bytes + mem->optimizer_bytes +
			   mem->activations_bytes + mem->buffers_bytes + mem->runtime_bytes;
	mem->capacity_bytes = g->memory_bytes;
}

/* SOSP'25 (SIMULATOR.md section 4.4): 24 B/param (Adam 8 + model 4 + grads 4 + "comm" 4 +
 * DeepSpeed copies 4), (P - i) micro-batches of activations, and a fixed overhead. */
#define SOSP25_BYTES_PER_PARAM 24.0
#define SOSP25_VALIDATION_OVERHEAD (4.76e9 + 300e6) /* get_memory_footprint_on_gpu, GH200-tuned */

static void sosp25_parts(const struct sl_sim_env *env, const struct sl_sim_replica_query *q,
			 double *params_bytes, double *act_bytes)
{
	const struct sl_sim_tables *T = env->tables;
	int tp = q->tp, a = q->first_layer, b = q->last_layer;
	double params = T->params_prefix[tp][b + 1] - T->params_prefix[tp][a];
	double act = T->act_prefix[tp][b + 1] - T->act_prefix[tp][a];
	*params_bytes = SOSP25_BYTES_PER_PARAM * params;
	*act_bytes = (double)(q->num_stages - q->stage) * ((double)q->mbs * act);
}

void sl_sim_memory_sosp25(const struct sl_sim_env *env, const struct sl_sim_replica_query *q,
			  struct sl_sim_memory *mem)
{
	memset(mem, 0, sizeof(*mem));
	double p, act;
	sosp25_parts(env, q, &p, &act);
	/* the 24 B/param split as that model names it: 4 params, 4 grads, 8 Adam, 8 extra copies */
	mem->params_bytes = p * 4.0 / 24.0;
	mem->grads_bytes = p * 4.0 / 24.0;
	mem->optimizer_bytes = p * 8.0 / 24.0;
	mem->buffers_bytes = p * 8.0 / 24.0;
	mem->activations_bytes = act;
	mem->runtime_bytes = SOSP25_VALIDATION_OVERHEAD;
	mem->total_bytes = p + act + SOSP25_VALIDATION_OVERHEAD;
	mem->capacity_bytes = env->tables->sosp25_memory_bytes[q->gpu];
}

int sl_sim_fits_sosp25(const struct sl_sim_env *env, const struct sl_sim_replica_query *q)
{
	double p, act;
	sosp25_parts(env, q, &p, &act);
	/* check_config_fits: framework/kernel overhead seen by nvidia-smi, 2e9 at tp 1 else 3e9 */
	double mem = p + act + (q->tp == 1 ? 2.0e9 : 3.0e9);
	return mem <= env->tables->sosp25_memory_bytes[q->gpu];
}

struct sl_sim_replica_query sl_sim_replica_query_of(const struct sl_plan *plan, int k, int j,
						   int microbatches)
{
	const struct sl_replica *r = sl_plan_replica(plan, k, j);
	const struct sl_plan_stage *s = &plan->stages[k];
	return (struct sl_sim_replica_query){.gpu = r->gpu,
					    .mbs = plan->micro_batch,
					    .tp = r->tp,
					    .first_layer = s->first_layer,
					    .last_layer = s->last_layer,
					    .stage = k,
					    .num_stages = plan->num_stages,
					    .microbatches = microbatches,
					    .num_pipelines = plan->num_pipelines,
					    .recompute = (enum sl_recompute)s->recompute,
					    .zero = s->zero};
}

double sl_sim_replica_memory(const struct sl_sim_env *env, enum sl_cost_model cm,
			     const struct sl_sim_replica_query *q, struct sl_sim_memory *mem)
{
	struct sl_sim_memory m;
	if (q->tp < 1 || q->tp > SL_SIM_MAX_TP || q->first_layer < 0 ||
	    q->last_layer < q->first_layer || q->last_layer >= env->num_layers) {
		memset(&m, 0, sizeof(m));
	} else if (cm == SL_COST_SOSP25) {
		sl_sim_memory_sosp25(env, q, &m); /* it has no memory options */
	} else {
		sl_sim_memory_sailor(env, q, &m);
	}
	if (mem)
		*mem = m;
	return m.total_bytes;
}

int sl_sim_replica_fits(const struct sl_sim_env *env, enum sl_cost_model cm,
			const struct sl_sim_replica_query *q)
{
	if (cm == SL_COST_SOSP25)
		return sl_sim_fits_sosp25(env, q);
	struct sl_sim_memory m;
	sl_sim_replica_memory(env, cm, q, &m);
	return m.total_bytes <= m.capacity_bytes;
}
