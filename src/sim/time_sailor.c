/* The sailor cost model: iteration time and cost of a plan as the runtime (Megatron-DeepSpeed's
 * pipeline engine, fp32) executes it.
 *
 *   1. Every pipeline j runs DeepSpeed's 1F1B TrainSchedule (schedule_deepspeed.c) with its own stage
 *      times: per micro-batch forward/backward of its replica of each stage (profile, made
 *      monotone in micro-batch size; see env.c), and the activation/gradient transfers
 *      between its consecutive replicas (comm_time.c: partitioned over the TP ranks, all-gathered
 *      by the receiver; eager when a TP rank's slice fits NCCL's staging slots, else a
 *      rendezvous that holds both sides; a stage's node sends and receives through one NIC).
 *      Pipelines with the same signature (replicas and micro-batch count) are simulated once.
 *   2. Stage k's gradient all-reduce starts when the last of its D replicas has finished its
 *      last backward (stragglers: heterogeneous replicas, uneven micro-batch counts); with P > 1
 *      the first and last stages first all-reduce the tied embedding gradient together
 *      (ReduceTiedGrads precedes ReduceGrads in the schedule), so they wait for each other.
 *   3. Then the stage's optimizer step: seconds per parameter from the profile's update_s (the
 *      step of the profiled embedding + 2 blocks + head model) times the stage's parameters.
 *   4. The iteration ends when the last stage finishes its step.
 * Memory options of a stage (sim/memory_options.c): recomputation lengthens each backward in step 1;
 * with ZeRO-1 step 2 is a reduce-scatter and an all-gather with the all-reduce's time and bytes
 * (the all-gather after the step: the sum is the same), and step 3 updates 1/D of the stage.
 * Cost: GPU rent of every GPU of the plan for the iteration, plus egress of every byte that
 * crosses zones (activations and gradients between stages, all-reduce ring traffic, the tied
 * embedding exchange) at the zone pair's price.
 * No allocation: everything lives on the stack (bounded by SL_SIM_MAX_STAGES/PIPELINES). */
#include <math.h>
#include <string.h>

#include "sim/internal.h"

static int same_pipeline(const struct sl_plan *plan, const int *M, int a, int b)
{
	if (M[a] != M[b])
		return 0;
	for (int k = 0; k < plan->num_stages; k++) {
		const struct sl_replica *x = sl_plan_replica(plan, k, a), *y = sl_plan_replica(plan, k, b);
		if (x->gpu != y->gpu || x->tp != y->tp || x->zone != y->zone)
			return 0;
	}
	return 1;
}

static unsigned long long pipeline_hash(const struct sl_plan *plan, int M, int j)
{
	unsigned long long h = 1469598103934665603ULL ^ (unsigned long long)M;
	for (int k = 0; k < plan->num_stages; k++) {
		const struct sl_replica *r = sl_plan_replica(plan, k, j);
		h = (h ^ (unsigned long long)(r->gpu | (r->tp << 8) | ((unsigned)r->zone << 16))) *
		    1099511628211ULL;
	}
	return h;
}

/* Pipelines' micro-batch counts (M[j]) and the pipelines that differ from every earlier one
 * (distinct[0..n-1]); returns n and the largest count in *Mmax. */
static int distinct_pipelines(const struct sl_plan *plan, long long G, int *M, int *distinct,
			      int *Mmax)
{
	unsigned long long hash[SL_SIM_MAX_PIPELINES];
	int nd = 0;
	*Mmax = 0;
	for (int j = 0; j < plan->num_pipelines; j++) {
		M[j] = sl_plan_pipeline_microbatches(plan, j, G);
		if (M[j] > *Mmax)
			*Mmax = M[j];
		hash[j] = pipeline_hash(plan, M[j], j);
		int found = 0;
		for (int d = 0; d < nd && !found; d++)
			found = hash[distinct[d]] == hash[j] && same_pipeline(plan, M, distinct[d], j);
		if (!found)
			distinct[nd++] = j;
	}
	return nd;
}

/* Per stage: the slowest replica's optimizer step, in stage_opt[k]. */
static int stage_updates(const struct sl_sim_env *env, const struct sl_plan *plan,
			 double *stage_opt, struct sl_err *err)
{
	const int P = plan->num_stages, D = plan->num_pipelines, b = plan->micro_batch;
	for (int k = 0; k < P; k++) {
		stage_opt[k] = 0;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			/* ZeRO-1: each replica updates its 1/D share (sim/memory_options.c) */
			struct sl_sim_replica_query query = sl_sim_replica_query_of(plan, k, j, 0);
			double upd = sl_sim_stage_update_s(env, SL_COST_SAILOR, &query);
			if (upd < 0)
				return sl_err_set(err, SL_ENOTFOUND, "no layer times for %s mbs %d tp %d",
						  env->catalogue.gpus[r->gpu].name, b, r->tp);
			if (upd > stage_opt[k])
				stage_opt[k] = upd;
		}
	}
	return 0;
}

/* Pipeline j's per-stage inputs to its schedule: forward f[k] and backward bw[k] per
 * micro-batch, and the transfers act[k] / grad[k] to and from stage k+1. */
static int pipeline_stage_times(const struct sl_sim_env *env, const struct sl_plan *plan, int j,
				struct sl_sim_result *out, double *f, double *bw,
				struct sl_sim_transfer *act, struct sl_sim_transfer *grad,
				struct sl_err *err)
{
	const int P = plan->num_stages, b = plan->micro_batch;
	const struct sl_layer_sizes *sz = env->sizes;
	for (int k = 0; k < P; k++) {
		const struct sl_replica *r = sl_plan_replica(plan, k, j);
		int last = plan->stages[k].last_layer;
		/* recomputation lengthens the backward (sim/memory_options.c) */
		struct sl_sim_replica_query query = sl_sim_replica_query_of(plan, k, j, 0);
		if (sl_sim_stage_fwd_bwd(env, SL_COST_SAILOR, &query, &f[k], &bw[k]))
			return sl_err_set(err, SL_ENOTFOUND, "no layer times for %s mbs %d tp %d",
					  env->catalogue.gpus[r->gpu].name, b, r->tp);
		if (sl_sim_time_source(env, r->gpu, b, r->tp) == SL_TIME_ESTIMATED)
			out->stages[k].time_estimated = 1;
		if (k + 1 < P) {
			const struct sl_replica *n = sl_plan_replica(plan, k + 1, j);
			/* the stage output (and its gradient), fp32, full hidden size */
			double bytes = sz->act_output_bytes[1][last] * b;
			sl_sim_p2p_transfer(env, r, n, bytes, &act[k]);
			sl_sim_p2p_transfer(env, n, r, bytes, &grad[k]);
			int c = r->tp < n->tp ? r->tp : n->tp;
			out->network_derived |= sl_network_fit(env->network, r->zone, r->gpu, c,
							       n->zone, n->gpu, c)->derived;
		}
	}
	return 0;
}

/* Step 1: runs each distinct pipeline's 1F1B schedule; stage_finish[k] is when the last
 * replica of stage k is through its last backward. The slowest pipeline gives the stages'
 * compute, p2p and bubble and out->pipeline_time_s. */
static int run_pipelines(const struct sl_sim_env *env, const struct sl_plan *plan, const int *M,
			 const int *distinct, int nd, struct sl_sim_result *out,
			 double *stage_finish, struct sl_err *err)
{
	const int P = plan->num_stages;
	for (int k = 0; k < P; k++)
		stage_finish[k] = 0;
	double worst_end = -1;
	for (int d = 0; d < nd; d++) {
		int j = distinct[d];
		double f[SL_SIM_MAX_STAGES], bw[SL_SIM_MAX_STAGES], fin[SL_SIM_MAX_STAGES],
			comp[SL_SIM_MAX_STAGES], p2p[SL_SIM_MAX_STAGES];
		struct sl_sim_transfer act[SL_SIM_MAX_STAGES], grad[SL_SIM_MAX_STAGES];
		int rc = pipeline_stage_times(env, plan, j, out, f, bw, act, grad, err);
		if (rc)
			return rc;
		sl_sim_schedule_1f1b(P, M[j], f, bw, act, grad, fin, comp, p2p);
		double end = 0;
		for (int k = 0; k < P; k++) {
			if (fin[k] > stage_finish[k])
				stage_finish[k] = fin[k];
			if (fin[k] > end)
				end = fin[k];
			if (f[k] > out->stages[k].fwd_s)
				out->stages[k].fwd_s = f[k];
			if (bw[k] > out->stages[k].bwd_s)
				out->stages[k].bwd_s = bw[k];
		}
		if (end > worst_end) {
			worst_end = end;
			out->slowest_pipeline = j;
			for (int k = 0; k < P; k++) {
				out->stages[k].compute_s = comp[k];
				out->stages[k].p2p_s = p2p[k];
				out->stages[k].bubble_s = fmax(0.0, end - comp[k] - p2p[k]);
			}
		}
	}
	out->pipeline_time_s = worst_end;
	return 0;
}

/* Steps 2 to 4: each stage's gradient synchronisation (after the tied embedding's) and
 * optimizer step; sets the iteration's time and its exposed sync and optimizer. */
static void sync_and_update(const struct sl_sim_env *env, const struct sl_plan *plan,
			    const double *stage_finish, const double *stage_opt,
			    struct sl_sim_result *out)
{
	const int P = plan->num_stages, D = plan->num_pipelines;
	const struct sl_layer_sizes *sz = env->sizes;
	double start[SL_SIM_MAX_STAGES];
	for (int k = 0; k < P; k++)
		start[k] = stage_finish[k];
	if (P > 1 && sz->head_holds_embedding) {
		double tied = 0;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *a = sl_plan_replica(plan, 0, j);
			const struct sl_replica *z = sl_plan_replica(plan, P - 1, j);
			int t = a->tp < z->tp ? a->tp : z->tp;
			double shard = SL_FP32_BYTES * (sz->params[t][env->num_layers - 1] - 2.0 * env->model.hidden);
			double tm = sl_sim_tied_time(env, a, z, shard);
			if (tm > tied)
				tied = tm;
		}
		double s = fmax(start[0], start[P - 1]) + tied;
		start[0] = start[P - 1] = s;
	}
	double T = 0;
	int last_stage = 0;
	for (int k = 0; k < P; k++) {
		double W = sl_sim_stage_grad_bytes(env, plan->stages[k].first_layer,
						   plan->stages[k].last_layer);
		double sync = sl_sim_allreduce_time(env, sl_plan_replica(plan, k, 0), D, W);
		for (int j = 0; D > 1 && j < D; j++) {
			const struct sl_replica *a = sl_plan_replica(plan, k, j);
			const struct sl_replica *n = sl_plan_replica(plan, k, (j + 1) % D);
			int c = a->tp < n->tp ? a->tp : n->tp;
			out->network_derived |= sl_network_fit(env->network, a->zone, a->gpu, c, n->zone,
							       n->gpu, c)->derived;
		}
		out->stages[k].dp_sync_s = sync;
		out->stages[k].optimizer_s = stage_opt[k];
		double end = start[k] + sync + stage_opt[k];
		if (end > T) {
			T = end;
			last_stage = k;
		}
	}
	out->iteration_time_s = T;
	double exposed = T - out->pipeline_time_s;
	out->optimizer_s = fmin(stage_opt[last_stage], exposed);
	out->dp_sync_s = exposed - out->optimizer_s;
	out->throughput_it_s = 1.0 / T;
}

void sl_sim_zone_bytes(const struct sl_sim_env *env, const struct sl_plan *plan, const int *M,
		       sl_sim_zone_bytes_fn visit, void *ctx)
{
	const int P = plan->num_stages, D = plan->num_pipelines, b = plan->micro_batch;
	const struct sl_layer_sizes *sz = env->sizes;
	for (int k = 0; k < P; k++) {
		double W = sl_sim_stage_grad_bytes(env, plan->stages[k].first_layer,
						   plan->stages[k].last_layer);
		int last = plan->stages[k].last_layer;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			if (k + 1 < P) {
				const struct sl_replica *n = sl_plan_replica(plan, k + 1, j);
				/* one copy of each activation and gradient crosses (comm_time.c) */
				visit(ctx, r->zone, n->zone, (double)M[j] * sz->act_output_bytes[1][last] * b,
				      1);
			}
			if (D > 1) {
				const struct sl_replica *n = sl_plan_replica(plan, k, (j + 1) % D);
				visit(ctx, r->zone, n->zone, 2.0 * (D - 1) / D * W, 0);
			}
		}
	}
	if (P > 1 && sz->head_holds_embedding) {
		double W = SL_FP32_BYTES * sz->word_embedding_params;
		for (int j = 0; j < D; j++)
			visit(ctx, sl_plan_replica(plan, 0, j)->zone,
			      sl_plan_replica(plan, P - 1, j)->zone, W, 1);
	}
}

struct egress_sum {
	const struct sl_sim_env *env;
	double usd_bytes; /* dollars per GB x bytes */
};

static void add_egress(void *ctx, int from_zone, int to_zone, double bytes, int both_ways)
{
	struct egress_sum *e = ctx;
	const struct sl_network *net = e->env->network;
	e->usd_bytes += bytes * (both_ways ? sl_network_egress_usd_per_gb(net, from_zone, to_zone) +
						     sl_network_egress_usd_per_gb(net, to_zone, from_zone)
					   : sl_network_egress_usd_per_gb(net, from_zone, to_zone));
}

/* GPU rent for the iteration and the egress of every byte that crosses zones. */
static void cost(const struct sl_sim_env *env, const struct sl_plan *plan, const int *M,
		 struct sl_sim_result *out)
{
	const int P = plan->num_stages, D = plan->num_pipelines;
	const double T = out->iteration_time_s;
	double usd_per_hour = 0;
	for (int k = 0; k < P; k++)
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			usd_per_hour += r->tp * sl_catalogue_gpu_usd_per_hour(&env->catalogue, r->gpu,
									      r->zone);
		}
	struct egress_sum e = {env, 0};
	sl_sim_zone_bytes(env, plan, M, add_egress, &e);
	double egress_bytes_usd = e.usd_bytes;
	out->gpu_usd_per_hour = usd_per_hour;
	out->gpu_cost_usd_per_iter = usd_per_hour / 3600.0 * T;
	out->egress_cost_usd_per_iter = egress_bytes_usd / 1e9;
	out->cost_usd_per_iter = out->gpu_cost_usd_per_iter + out->egress_cost_usd_per_iter;
}

/* Each stage's memory: its replica with the highest share of its device. */
static void memory(const struct sl_sim_env *env, const struct sl_plan *plan, const int *M,
		   struct sl_sim_result *out)
{
	const int P = plan->num_stages, D = plan->num_pipelines;
	out->fits_memory = 1;
	for (int k = 0; k < P; k++) {
		struct sl_sim_stage *st = &out->stages[k];
		st->fits = 1;
		double worst = -1;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			/* replicas with the same (gpu, tp) and micro-batch count have the same memory */
			if (j > 0) {
				const struct sl_replica *q = sl_plan_replica(plan, k, j - 1);
				if (q->gpu == r->gpu && q->tp == r->tp && M[j] == M[j - 1])
					continue;
			}
			struct sl_sim_memory mem;
			struct sl_sim_replica_query query = sl_sim_replica_query_of(plan, k, j, M[j]);
			sl_sim_memory_sailor(env, &query, &mem);
			double ratio = mem.total_bytes / mem.capacity_bytes;
			if (ratio > worst) {
				worst = ratio;
				st->memory = mem;
				st->memory_replica = j;
			}
			if (mem.total_bytes > mem.capacity_bytes)
				st->fits = 0;
		}
		out->fits_memory &= st->fits;
	}
}

int sl_sim_sailor(const struct sl_sim_env *env, const struct sl_plan *plan, long long G,
		  struct sl_sim_result *out, struct sl_err *err)
{
	int M[SL_SIM_MAX_PIPELINES];
	int distinct[SL_SIM_MAX_PIPELINES];
	int Mmax;
	int nd = distinct_pipelines(plan, G, M, distinct, &Mmax);
	out->microbatches = Mmax;
	double stage_finish[SL_SIM_MAX_STAGES] = {0}, stage_opt[SL_SIM_MAX_STAGES] = {0};
	int rc = stage_updates(env, plan, stage_opt, err);
	if (!rc)
		rc = run_pipelines(env, plan, M, distinct, nd, out, stage_finish, err);
	if (rc)
		return rc;
	sync_and_update(env, plan, stage_finish, stage_opt, out);
	cost(env, plan, M, out);
	memory(env, plan, M, out);
	return 0;
}
