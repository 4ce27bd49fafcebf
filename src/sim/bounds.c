/* Lower bounds on the gradient synchronisation of a stage, for the planner's pruning (sim.h,
 * sl_sim_sync_lower_bound_s). A bound must never exceed what sl_simulate charges any plan with
 * that stage, its D replicas drawn from the given GPUs:
 *   - the ring (sailor) or the chain of adjacent replicas (sosp25) is at least as slow as its
 *     fastest possible hop. When some zone can hold all D replicas (one GPU each at least), the
 *     fastest hop is a same-zone one; otherwise at least one hop crosses zones, and the time is
 *     at least that of the fastest cross-zone hop among the zones given;
 *   - hops are taken between replicas of one GPU type (a link of mixed types uses one side's
 *     homogeneous fit, cluster/network.h and the SOSP'25 file's construction), every TP degree
 *     the pool allows, with the ring's smallest TP degree equal to the hop's (a smaller one
 *     only cuts the same bytes into more, smaller bucket rounds, never faster for these fits).
 * sl_simulate computes exactly these formulas (comm_time.c, time_sosp25.c); the bound evaluates them
 * on the best case instead of the plan. The plan-level bounds below evaluate them on a plan's
 * own replicas, skipping only the pipeline schedule. */
#include <float.h>
#include <stddef.h>
#include <string.h>

#include "sim/internal.h"
#include "sim/transfer_cache.h"

/* Zone arguments below: i1, i2 index the zones searched (zones[], avail's columns). */
static double sosp25_bound(const struct sl_sim_env *env, double W, int D, int cross,
			   const int *zones, int n,
			   const int avail[SL_MAX_GPU_TYPES][SL_MAX_SEARCH_ZONES],
			   int zone_capacity_ok[])
{
	const struct sl_catalogue *cat = &env->catalogue;
	double best = DBL_MAX;
	/* pairs of one GPU type: a mixed pair's fit is one side's homogeneous fit (network.h) */
	for (int i1 = 0; i1 < n; i1++)
		for (int g1 = 0; g1 < cat->gpu_count; g1++) {
			if (avail[g1][i1] <= 0 || (!cross && !zone_capacity_ok[i1]))
				continue;
			for (int i2 = 0; i2 < n; i2++)
				for (int g2 = g1; g2 == g1; g2++) {
					if (avail[g2][i2] <= 0 || (cross ? i1 == i2 : i1 != i2))
						continue;
					const struct sl_link_fit *f = sl_network_fit(
						env->network, zones[i1], g1, 1, zones[i2], g2, 1);
					/* tau = min(4, min tp) is 1, 2 or 4 */
					for (int tau = 1; tau <= 4; tau *= 2) {
						double t = sl_sosp25_ar_time_buckets(W / tau, D, f);
						if (t < best)
							best = t;
					}
				}
		}
	return best == DBL_MAX ? 0 : best;
}

static double sailor_bound(const struct sl_sim_env *env, double W, int D, int cross,
			   const int *zones, int n,
			   const int avail[SL_MAX_GPU_TYPES][SL_MAX_SEARCH_ZONES],
			   int zone_capacity_ok[])
{
	const struct sl_catalogue *cat = &env->catalogue;
	double best = DBL_MAX;
	/* hops between two replicas of one GPU type and TP degree c, with the ring's smallest TP
	 * degree c too: a hop of mixed types uses one side's homogeneous fit (cluster/network.h),
	 * and a smaller smallest-TP only cuts the same bytes into more, smaller bucket rounds */
	for (int g = 0; g < cat->gpu_count; g++)
		for (int c = 1; c <= SL_SIM_MAX_TP; c *= 2)
			for (int i1 = 0; i1 < n; i1++) {
				if (avail[g][i1] < c || (!cross && !zone_capacity_ok[i1]))
					continue;
				struct sl_replica a = {(short)g, (short)zones[i1], (short)c, 0};
				for (int i2 = 0; i2 < n; i2++) {
					if (avail[g][i2] < c || (cross ? i2 == i1 : i2 != i1))
						continue;
					struct sl_replica b = {(short)g, (short)zones[i2], (short)c, 0};
					double t = sl_sim_allreduce_hop_bound(env, &a, &b, D, W, c);
					if (t < best)
						best = t;
				}
			}
	return best == DBL_MAX ? 0 : best;
}

double sl_sim_sync_lower_bound_s(const struct sl_sim_env *env, enum sl_cost_model cm, int first,
				 int last, int D, const int *zones, int n,
				 const int avail[SL_MAX_GPU_TYPES][SL_MAX_SEARCH_ZONES])
{
	if (D <= 1)
		return 0;
	const struct sl_catalogue *cat = &env->catalogue;
	int zone_capacity_ok[SL_MAX_SEARCH_ZONES] = {0}, any_zone = 0;
	for (int i = 0; i < n; i++) {
		long long gpus = 0;
		for (int g = 0; g < cat->gpu_count; g++)
			gpus += avail[g][i];
		zone_capacity_ok[i] = gpus >= D;
		any_zone |= zone_capacity_ok[i];
	}
	int cross = !any_zone;
	if (cm == SL_COST_SOSP25) {
		return sosp25_bound(env, sl_sim_stage_params_bytes(env, first, last), D, cross, zones,
				    n, avail, zone_capacity_ok);
	}
	return sailor_bound(env, sl_sim_stage_grad_bytes(env, first, last), D, cross, zones, n,
			    avail, zone_capacity_ok);
}

double sl_sim_stage_params_bytes(const struct sl_sim_env *env, int first, int last)
{
	return SL_FP32_BYTES *
	       (env->tables->params_prefix[1][last + 1] - env->tables->params_prefix[1][first]);
}

double sl_sim_plan_sync_lower_bound_s(const struct sl_sim_env *env, enum sl_cost_model cm,
				      const struct sl_plan *plan)
{
	if (plan->num_pipelines <= 1)
		return 0;
	if (cm == SL_COST_SOSP25) {
		/* the iteration adds the slowest stage's sync: exactly what the model charges */
		double worst = 0;
		int derived = 0;
		for (int i = 0; i < plan->num_stages; i++) {
			double t = sl_sosp25_stage_sync_s(env, plan, i, &derived);
			if (t > worst)
				worst = t;
		}
		return worst;
	}
	/* sailor: stage 0 finishes its last backward last, then all-reduces (time_sailor.c) */
	return sl_sim_allreduce_time(env, sl_plan_replica(plan, 0, 0), plan->num_pipelines,
				     sl_sim_stage_grad_bytes(env, plan->stages[0].first_layer,
							     plan->stages[0].last_layer));
}

/* What a pipeline's stage k costs per micro-batch whatever its micro-batch count: its compute
 * and what the transfers with its neighbours hold it for or keep its NIC busy with. */
struct stage_terms {
	double fwd_s, bwd_s;                 /* per micro-batch, without recomputation */
	double compute_s;                    /* fwd + bwd */
	double held_after, held_next;        /* by the transfers with stage k+1, this side / its */
	double sent_after, received_after;   /* this stage's NIC, to and from stage k+1 */
	/* with stage k+1, per micro-batch: the activation's and the gradient's path from the
	 * sender's clock to the receiver's (network, then the receiver's all-gather), and how long
	 * each holds either side (schedule_deepspeed.c, transfer) */
	double act_path_s, grad_path_s;
	double act_send_hold_s, grad_recv_hold_s;        /* this stage */
	double act_recv_hold_next_s, grad_send_hold_next_s; /* stage k+1 */
};

/* The stage terms of pipeline j (P of them) into terms, which hold pipeline j - 1's (j > 0):
 * a stage on the replica of the one before keeps its compute, a boundary between the replicas
 * of the one before keeps its transfers. -1 when the simulator has no time for a stage. */
static int pipeline_terms(const struct sl_sim_env *env, enum sl_cost_model cm,
			  const struct sl_plan *plan, int j, struct sl_sim_transfer_cache *cache,
			  struct stage_terms *terms)
{
	const int P = plan->num_stages, b = plan->micro_batch;
	const struct sl_layer_sizes *sz = env->sizes;
	int kept[SL_PLAN_MAX_STAGES];
	for (int k = 0; k < P; k++)
		kept[k] = j > 0 && !memcmp(sl_plan_replica(plan, k, j), sl_plan_replica(plan, k, j - 1),
					   sizeof(struct sl_replica));
	for (int k = 0; k < P; k++) {
		const struct sl_replica *r = sl_plan_replica(plan, k, j);
		struct stage_terms *t = &terms[k];
		if (!kept[k]) {
			double f, bw;
			struct sl_sim_replica_query query = sl_sim_replica_query_of(plan, k, j, 0);
			/* without recomputation, which only adds time: the planner bounds an
			 * assignment before it chooses its options, when the stage still holds those
			 * of the plan simulated before it (a bound with them pruned plans that run
			 * without, and which ones depended on the order the threads took) */
			query.recompute = SL_RECOMPUTE_NONE;
			if (sl_sim_stage_fwd_bwd(env, cm, &query, &f, &bw))
				return -1;
			t->fwd_s = f;
			t->bwd_s = bw;
			t->compute_s = f + bw;
		}
		if (k + 1 < P && !(kept[k] && kept[k + 1])) {
			const struct sl_replica *n = sl_plan_replica(plan, k + 1, j);
			double bytes = sz->act_output_bytes[1][plan->stages[k].last_layer] * b;
			struct sl_sim_transfer act, grad;
			sl_sim_p2p_transfer_cached(env, cache, r, n, bytes, &act);
			sl_sim_p2p_transfer_cached(env, cache, n, r, bytes, &grad);
			/* this stage sends the activation and receives the gradient */
			t->held_after = (act.eager ? 0 : act.net_s) + (grad.eager ? 0 : grad.net_s) +
					grad.gather_s;
			t->held_next = (grad.eager ? 0 : grad.net_s) + (act.eager ? 0 : act.net_s) +
				       act.gather_s;
			t->sent_after = act.net_s;
			t->received_after = grad.net_s;
			t->act_path_s = act.net_s + act.gather_s;
			t->grad_path_s = grad.net_s + grad.gather_s;
			t->act_send_hold_s = act.eager ? 0 : act.net_s;
			t->grad_recv_hold_s = (grad.eager ? 0 : grad.net_s) + grad.gather_s;
			t->act_recv_hold_next_s = (act.eager ? 0 : act.net_s) + act.gather_s;
			t->grad_send_hold_next_s = grad.eager ? 0 : grad.net_s;
		} else if (k + 1 == P) {
			t->held_after = t->held_next = t->sent_after = t->received_after = 0;
			t->act_path_s = t->grad_path_s = 0;
			t->act_send_hold_s = t->grad_recv_hold_s = 0;
			t->act_recv_hold_next_s = t->grad_send_hold_next_s = 0;
		}
	}
	return 0;
}

/* When stage 0 of pipeline j (M micro-batches, stage terms as pipeline_terms gives them) is
 * through its last backward at the earliest, by the pipeline's fill and drain. A transfer starts
 * no earlier than its sender's clock, its receiver goes on no earlier than the transfer's path
 * after that, each side's clock moves on by at least what the transfer holds it for, and a clock
 * only moves forward. So stage k starts its first backward (micro-batch 0's) no earlier than
 * micro-batch 0's trip: every forward and activation path, the backwards of the stages after k
 * and the gradient paths down to k. From there it still runs its M backwards, the forwards it
 * had not run (before its first backward it runs those of micro-batches 0 .. P-k-1) and the
 * transfers in between, each holding it: the gradients of micro-batches 1 .. M-1 from k+1, the
 * activations of its forwards from micro-batch P-k-1 on to k+1 (the first of them goes in the
 * step of its first backward), the activations of its remaining forwards from k-1, and the
 * gradients of micro-batches 0 .. M-2 to k-1. After its last backward the gradient passes every
 * stage before it, each running its backward. */
static double stage0_fill_drain_s(const struct stage_terms *terms, int P, double M)
{
	double trip = 0, worst = 0;
	for (int k = 0; k < P; k++)
		trip += terms[k].fwd_s + terms[k].bwd_s + terms[k].act_path_s +
			terms[k].grad_path_s;
	for (int k = 0; k < P; k++) {
		const struct stage_terms *t = &terms[k];
		double forwards_before = P - k < M ? P - k : M;
		double sends_after = M > P - k - 1 ? M - (P - k - 1) : 0;
		double rest = (M - 1) * t->bwd_s + (M - forwards_before) * t->fwd_s +
			      (M - 1) * t->grad_recv_hold_s + sends_after * t->act_send_hold_s;
		if (k > 0)
			rest += (M - forwards_before) * terms[k - 1].act_recv_hold_next_s +
				(M - 1) * terms[k - 1].grad_send_hold_next_s;
		if (rest > worst)
			worst = rest;
	}
	return trip + worst;
}

/* The slowest pipeline's exchange of the tied embedding's gradient between its first and last
 * stage (0 without one), as sync_and_update (time_sailor.c) charges it; a pipeline with the
 * replicas of the one before at both ends is not timed again. */
static double tied_exchange_s(const struct sl_sim_env *env, const struct sl_plan *plan)
{
	const int P = plan->num_stages, D = plan->num_pipelines;
	const struct sl_layer_sizes *sz = env->sizes;
	if (P < 2 || !sz->head_holds_embedding)
		return 0;
	double slowest = 0;
	for (int j = 0; j < D; j++) {
		const struct sl_replica *a = sl_plan_replica(plan, 0, j);
		const struct sl_replica *z = sl_plan_replica(plan, P - 1, j);
		if (j > 0 && !memcmp(a, sl_plan_replica(plan, 0, j - 1), sizeof(*a)) &&
		    !memcmp(z, sl_plan_replica(plan, P - 1, j - 1), sizeof(*z)))
			continue;
		int t = a->tp < z->tp ? a->tp : z->tp;
		double shard =
			SL_FP32_BYTES * (sz->params[t][env->num_layers - 1] - 2.0 * env->model.hidden);
		double tm = sl_sim_tied_time(env, a, z, shard);
		if (tm > slowest)
			slowest = tm;
	}
	return slowest;
}

double sl_sim_plan_time_lower_bound_sync_s(const struct sl_sim_env *env, enum sl_cost_model cm,
					   const struct sl_plan *plan, long long global_batch,
					   double sync, struct sl_sim_transfer_cache *cache,
					   double enough_s)
{
	if (cm == SL_COST_SOSP25)
		return sync; /* its pipeline term is cheap to simulate; the sync is what prunes */
	/* sailor (schedule_deepspeed.c): stage k of pipeline j is busy for at least M_j (fwd + bwd
	 * + what its transfers hold it for: both sides of a rendezvous, the receiver's all-gather of
	 * an eager one); the pipeline lasts at least as long as any stage's NIC needs to send or to
	 * receive its M_j transfers; stage 0 is through no earlier than the pipeline's fill and
	 * drain allow (stage0_fill_drain_s), then exchanges the tied embedding's gradient (if
	 * any) and all-reduces. Runs of equal pipelines are bounded
	 * once, and a pipeline with the replicas of the one before (its micro-batch count aside)
	 * reuses its stage terms. Past enough_s the pipelines left cannot make it smaller. */
	const int P = plan->num_stages, D = plan->num_pipelines;
	struct stage_terms terms[SL_PLAN_MAX_STAGES];
	double bound = 0, busiest_first = 0;
	/* with several stages and a tied embedding, stage 0 all-reduces only after each pipeline's
	 * first and last stage have exchanged the embedding's gradient (time_sailor.c) */
	sync += tied_exchange_s(env, plan);
	for (int j = 0; j < D; j++) {
		int same = j > 0;
		for (int k = 0; k < P && same; k++)
			same = !memcmp(sl_plan_replica(plan, k, j), sl_plan_replica(plan, k, j - 1),
				       sizeof(struct sl_replica));
		if (same && sl_plan_pipeline_microbatches(plan, j, global_batch) ==
				    sl_plan_pipeline_microbatches(plan, j - 1, global_batch))
			continue;
		if (!same && pipeline_terms(env, cm, plan, j, cache, terms))
			return 0;
		double M = sl_plan_pipeline_microbatches(plan, j, global_batch);
		if (M >= 1) {
			double latency = stage0_fill_drain_s(terms, P, M);
			if (latency > busiest_first)
				busiest_first = latency;
		}
		/* with the previous stage, per micro-batch: held, and the NIC's send / receive sides */
		double held_before = 0, sent_before = 0, received_before = 0;
		for (int k = 0; k < P; k++) {
			const struct stage_terms *t = &terms[k];
			double busy = M * (t->compute_s + held_before + t->held_after);
			double nic = M * (sent_before + t->sent_after > received_before + t->received_after
						  ? sent_before + t->sent_after
						  : received_before + t->received_after);
			if (busy > bound)
				bound = busy;
			if (nic > bound)
				bound = nic;
			if (k == 0 && busy > busiest_first)
				busiest_first = busy;
			held_before = t->held_next;
			/* the next stage receives the activation and sends the gradient */
			sent_before = t->received_after;
			received_before = t->sent_after;
		}
		if (bound > enough_s || busiest_first + sync > enough_s)
			break;
	}
	return busiest_first + sync > bound ? busiest_first + sync : bound;
}
