/* Peak memory per GPU of a replica: the sailor model (per component) and the SOSP'25 estimates.
 *
 * sailor model, for a replica of layers [a, b] at stage i of P, micro-batch mbs, TP t, M
 * micro-batches per pipeline, D replicas per stage (fp32 training, Adam, no ZeRO, no activation
 * recomputation — the configuration of Megatron-DeepSpeed the profiles and runs use):
 *   parameters   4 B/param of the stage's shard (tied embedding once when a stage holds both ends)
 *   gradients    4 B/param (fp32 .grad buffers)
 *   optimizer    8 B/param (Adam exp_avg and exp_avg_sq in fp32)
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
 *   runtime      the GPU type's fixed runtime overhead (data/gpus.json runtime_overhead_bytes:
 *                CUDA context, cuBLAS/cuDNN workspaces, caching-allocator reserve)
 */
#include <string.h>

#include "sim/internal.h"

void sl_sim_memory_sailor(const struct sl_sim_env *env, int gpu, int mbs, int tp, int a, int b,
			  int stage, int P, int M, int D, struct sl_sim_memory *mem)
{
	const struct sl_sim_tables *T = env->tables;
	const struct sl_gpu_type *g = &env->catalogue.gpus[gpu];
	int L = env->num_layers;
	memset(mem, 0, sizeof(*mem));
	double params = sl_sim_stage_params(env, tp, a, b);
	mem->params_bytes = SL_FP32_BYTES * params;
	mem->grads_bytes = SL_FP32_BYTES * params;
	mem->optimizer_bytes = 2.0 * SL_FP32_BYTES * params;
	int inflight = P - stage < M ? P - stage : M;
	if (inflight < 1)
		inflight = 1;
	double per_sample = T->act_prefix[tp][b + 1] - T->act_prefix[tp][a];
	double largest = T->act_rmax[tp][(size_t)a * (size_t)L + (size_t)b];
	mem->activations_bytes = (double)inflight * mbs * per_sample + 2.0 * mbs * largest;
	double buffers = 0;
	if (stage > 0 && a > 0)
		buffers += (double)inflight * mbs * env->sizes->act_output_bytes[1][a - 1];
	if (stage < P - 1)
		buffers += (double)mbs * env->sizes->act_output_bytes[1][b];
	int comms = 1 + (tp > 1) + (D > 1) + (stage > 0) + (stage < P - 1) +
		    (P > 1 && (stage == 0 || stage == P - 1) && env->sizes->head_holds_embedding);
	buffers += comms * g->nccl_buffer_bytes;
	mem->buffers_bytes = buffers;
	mem->runtime_bytes = g->runtime_overhead_bytes;
	mem->total_bytes = mem->params_bytes + mem->grads_bytes + mem->optimizer_bytes +
			   mem->activations_bytes + mem->buffers_bytes + mem->runtime_bytes;
	mem->capacity_bytes = g->memory_bytes;
}

/* SOSP'25 (SIMULATOR.md section 4.4): 24 B/param (Adam 8 + model 4 + grads 4 + "comm" 4 +
 * DeepSpeed copies 4), (P - i) micro-batches of activations, and a fixed overhead. */
#define SOSP25_BYTES_PER_PARAM 24.0
#define SOSP25_VALIDATION_OVERHEAD (4.76e9 + 300e6) /* get_memory_footprint_on_gpu, GH200-tuned */

static void sosp25_parts(const struct sl_sim_env *env, int mbs, int tp, int a, int b, int stage,
			 int P, double *params_bytes, double *act_bytes)
{
	const struct sl_sim_tables *T = env->tables;
	double params = T->params_prefix[tp][b + 1] - T->params_prefix[tp][a];
	double act = T->act_prefix[tp][b + 1] - T->act_prefix[tp][a];
	*params_bytes = SOSP25_BYTES_PER_PARAM * params;
	*act_bytes = (double)(P - stage) * ((double)mbs * act);
}

void sl_sim_memory_sosp25(const struct sl_sim_env *env, int gpu, int mbs, int tp, int a, int b,
			  int stage, int P, struct sl_sim_memory *mem)
{
	memset(mem, 0, sizeof(*mem));
	double p, act;
	sosp25_parts(env, mbs, tp, a, b, stage, P, &p, &act);
	/* the 24 B/param split as that model names it: 4 params, 4 grads, 8 Adam, 8 extra copies */
	mem->params_bytes = p * 4.0 / 24.0;
	mem->grads_bytes = p * 4.0 / 24.0;
	mem->optimizer_bytes = p * 8.0 / 24.0;
	mem->buffers_bytes = p * 8.0 / 24.0;
	mem->activations_bytes = act;
	mem->runtime_bytes = SOSP25_VALIDATION_OVERHEAD;
	mem->total_bytes = p + act + SOSP25_VALIDATION_OVERHEAD;
	mem->capacity_bytes = env->tables->sosp25_memory_bytes[gpu];
}

int sl_sim_fits_sosp25(const struct sl_sim_env *env, int gpu, int mbs, int tp, int a, int b,
		       int stage, int P)
{
	double p, act;
	sosp25_parts(env, mbs, tp, a, b, stage, P, &p, &act);
	/* check_config_fits: framework/kernel overhead seen by nvidia-smi, 2e9 at tp 1 else 3e9 */
	double mem = p + act + (tp == 1 ? 2.0e9 : 3.0e9);
	return mem <= env->tables->sosp25_memory_bytes[gpu];
}
