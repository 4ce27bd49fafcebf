/* The sosp25 cost model: the SOSP'25 Sailor simulator (runtime_simulator.py) formula by formula
 * as ../shared/reference/sosp25/SIMULATOR.md section 4 gives it, so that a plan can be compared
 * with that paper on its own terms. Quirks kept on purpose: u_i from a stage's first layer only
 * and only the slowest stage's update counted; A_i from the last layer, B_i from the first layer
 * of a stage (tp = 1 sizes); the m_i rule for the first and last stages; the data-parallel sync
 * with count-1 fits between adjacent replicas on W_i / min(4, min tp), bucketed at 5e8 *bytes*,
 * added after the pipeline; its own GPU prices; memory = its validation estimate (5.06e9 bytes
 * overhead), fits = its planning check. The plan's D replicas of a stage are that simulator's
 * single pipeline with dp = D. */
#include <math.h>
#include <string.h>

#include "sim/internal.h"

static const struct sl_link_fit *fit(const struct sl_sim_env *env, const struct sl_replica *s,
				    int sc, const struct sl_replica *d, int dc)
{
	return sl_network_fit(env->network, s->zone, s->gpu, sc, d->zone, d->gpu, dc);
}

/* Replicas j and k of stage i are in the same zone. */
static int same_zones(const struct sl_plan *plan, int i, int j, int k)
{
	return sl_plan_replica(plan, i, j)->zone == sl_plan_replica(plan, i, k)->zone;
}

static int same_replica(const struct sl_replica *a, const struct sl_replica *b)
{
	return a->gpu == b->gpu && a->zone == b->zone && a->tp == b->tp;
}

double sl_sosp25_stage_sync_s(const struct sl_sim_env *env, const struct sl_plan *plan, int i,
			      int *derived)
{
	const int D = plan->num_pipelines;
	int first = plan->stages[i].first_layer, last = plan->stages[i].last_layer;
	double W = SL_FP32_BYTES * (env->tables->params_prefix[1][last + 1] -
				    env->tables->params_prefix[1][first]);
	int tmin = 4;
	for (int j = 0; j < D; j++)
		if (sl_plan_replica(plan, i, j)->tp < tmin)
			tmin = sl_plan_replica(plan, i, j)->tp;
	double stage_sync = 0.0;
	/* the time depends on the pair only through its fit: evaluate each distinct fit once
	 * (canonical plans repeat the same pair along a zone's run of replicas) */
	const struct sl_link_fit *seen[8];
	int seen_count = 0;
	for (int j = 0; j + 1 < D; j++) {
		const struct sl_replica *r = sl_plan_replica(plan, i, j);
		const struct sl_replica *n = sl_plan_replica(plan, i, j + 1);
		const struct sl_link_fit *f = fit(env, r, 1, n, 1);
		int known = 0;
		for (int q = 0; q < seen_count && !known; q++)
			known = seen[q] == f;
		if (known)
			continue;
		if (seen_count < 8)
			seen[seen_count++] = f;
		*derived |= f->derived;
		double tm = sl_sosp25_ar_time_buckets(W / tmin, D, f);
		if (tm > stage_sync)
			stage_sync = tm;
	}
	return stage_sync;
}

/* Stage i's compute per micro-batch c (forward + backward of its slowest replica) and update u
 * (its slowest replica's); the stage's forward and backward into out. */
static int stage_compute(const struct sl_sim_env *env, const struct sl_plan *plan, int i,
			 struct sl_sim_result *out, double *c, double *u, struct sl_err *err)
{
	const int D = plan->num_pipelines, b = plan->micro_batch;
	int first = plan->stages[i].first_layer, last = plan->stages[i].last_layer;
	double fwd_max = 0, bwd_max = 0;
	for (int j = 0; j < D; j++) {
		const struct sl_replica *r = sl_plan_replica(plan, i, j);
		/* a run of equal replicas (canonical plans have long ones) is timed once */
		if (j > 0 && same_replica(r, sl_plan_replica(plan, i, j - 1)))
			continue;
		double f, bw;
		if (sl_sim_layers_fwd_bwd(env, SL_COST_SOSP25, r->gpu, b, r->tp, first, last, &f, &bw))
			return sl_err_set(err, SL_ENOTFOUND, "no layer times for %s mbs %d tp %d",
					  env->catalogue.gpus[r->gpu].name, b, r->tp);
		if (f + bw > *c) {
			*c = f + bw;
			fwd_max = f;
			bwd_max = bw;
		}
		double upd = sl_sim_layers_update_s(env, SL_COST_SOSP25, r->gpu, b, r->tp, first, last);
		if (upd > *u)
			*u = upd;
		if (sl_sim_time_source(env, r->gpu, b, r->tp) == SL_TIME_ESTIMATED)
			out->stages[i].time_estimated = 1;
	}
	out->stages[i].fwd_s = fwd_max;
	out->stages[i].bwd_s = bwd_max;
	return 0;
}

/* Stage i's slowest send of its output to stage i+1 (act, A_i) and of its input gradient back
 * to stage i-1 (grad, B_i), over the replicas' own fits. */
static void stage_transfers(const struct sl_sim_env *env, const struct sl_plan *plan, int i,
			    struct sl_sim_result *out, double *act, double *grad)
{
	const int P = plan->num_stages, D = plan->num_pipelines, b = plan->micro_batch;
	const struct sl_layer_sizes *sz = env->sizes;
	int first = plan->stages[i].first_layer, last = plan->stages[i].last_layer;
	double A = sz->act_output_bytes[1][last] * b;   /* act_output_floats[1][last] · fs · b */
	double B = sz->act_output_bytes[1][first] * b;  /* act_output_floats[1][first] · fs · b */
	for (int j = 0; j < D; j++) {
		const struct sl_replica *r = sl_plan_replica(plan, i, j);
		/* the same link as pipeline j-1 on both sides: the same times */
		if (j > 0 && same_replica(r, sl_plan_replica(plan, i, j - 1)) &&
		    (i == P - 1 || same_replica(sl_plan_replica(plan, i + 1, j),
						sl_plan_replica(plan, i + 1, j - 1))) &&
		    (i == 0 || same_replica(sl_plan_replica(plan, i - 1, j),
					    sl_plan_replica(plan, i - 1, j - 1))))
			continue;
		if (i < P - 1) {
			const struct sl_replica *n = sl_plan_replica(plan, i + 1, j % D);
			const struct sl_link_fit *f = fit(env, r, r->tp, n, n->tp);
			out->network_derived |= f->derived;
			double tm = sl_sosp25_send_time(f, A);
			if (tm > *act)
				*act = tm;
		}
		if (i > 0) {
			const struct sl_replica *p = sl_plan_replica(plan, i - 1, j % D);
			const struct sl_link_fit *f = fit(env, r, r->tp, p, p->tp);
			out->network_derived |= f->derived;
			double tm = sl_sosp25_send_time(f, B);
			if (tm > *grad)
				*grad = tm;
		}
	}
}

/* The pipeline's time T_pipe = (Nmb - 1) max(c_i + m_i) + sum m_i + sum c_i + max u_i, with the
 * m_i rule for the first and last stages (m: P doubles out); *max_u: the last term. */
static double pipeline_time(int P, int Nmb, const double *c, const double *u, const double *act,
			    const double *grad, double *m, double *max_u)
{
	for (int i = 0; i < P; i++) {
		if (P == 1)
			m[i] = 0.0;
		else if (i == 0)
			m[i] = P <= 3 ? act[0] : 2.0 * act[0];
		else if (i == P - 1)
			m[i] = 2.0 * grad[P - 1];
		else
			m[i] = act[i] + grad[i];
	}
	double max_cm = 0, sum_m = 0, sum_c = 0;
	*max_u = 0;
	for (int i = 0; i < P; i++) {
		if (c[i] + m[i] > max_cm)
			max_cm = c[i] + m[i];
		sum_m += m[i];
		sum_c += c[i];
		if (u[i] > *max_u)
			*max_u = u[i];
	}
	return (Nmb - 1) * max_cm + sum_m + sum_c + *max_u;
}

/* estimate_sync_time: intra over stages, adjacent replica pairs, count-1 fits. */
static double dp_sync_time(const struct sl_sim_env *env, const struct sl_plan *plan,
			   struct sl_sim_result *out)
{
	double intra = 0.0;
	for (int i = 0; i < plan->num_stages; i++) {
		int derived = 0;
		double stage_sync = sl_sosp25_stage_sync_s(env, plan, i, &derived);
		out->network_derived |= derived;
		out->stages[i].dp_sync_s = stage_sync;
		if (stage_sync > intra)
			intra = stage_sync;
	}
	return intra;
}

/* Egress in USD (get_comm_cost_for_pipeline). */
static double egress_usd(const struct sl_sim_env *env, const struct sl_plan *plan, int Nmb)
{
	const int P = plan->num_stages, D = plan->num_pipelines, b = plan->micro_batch;
	const struct sl_layer_sizes *sz = env->sizes;
	double fwd = 0, bwd = 0, ar = 0;
	for (int i = 0; i < P; i++) {
		int first = plan->stages[i].first_layer, last = plan->stages[i].last_layer;
		double W = SL_FP32_BYTES * (env->tables->params_prefix[1][last + 1] -
					    env->tables->params_prefix[1][first]);
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, i, j);
			/* pipelines j whose replica and neighbours sit in the same zones as pipeline
			 * j-1's add the same amounts: count the run, price it once */
			int run = 1;
			while (j + run < D - 1 &&
			       same_zones(plan, i, j + run, j) && (i == P - 1 || same_zones(plan, i + 1, j + run, j)) &&
			       (i == 0 || same_zones(plan, i - 1, j + run, j)) &&
			       same_zones(plan, i, j + run + 1, j + 1))
				run++;
			if (i < P - 1) {
				const struct sl_replica *n = sl_plan_replica(plan, i + 1, j % D);
				fwd += run * sl_network_egress_usd_per_gb(env->network, r->zone, n->zone) *
				       (sz->act_output_bytes[1][last] * b);
			}
			if (i > 0) {
				const struct sl_replica *p = sl_plan_replica(plan, i - 1, j % D);
				int prev_last = plan->stages[i - 1].last_layer;
				bwd += run * sl_network_egress_usd_per_gb(env->network, r->zone, p->zone) *
				       (sz->act_output_bytes[1][prev_last] * b);
			}
			const struct sl_replica *nx = sl_plan_replica(plan, i, (j + 1) % D);
			ar += run * sl_network_egress_usd_per_gb(env->network, r->zone, nx->zone) *
			      (W / D) * (2.0 * (D - 1));
			j += run - 1;
		}
	}
	return (Nmb * fwd + Nmb * bwd + ar) / 1e9;
}

/* Memory: the validation estimate (max over stages and replicas); fits: the planning check. */
static void memory(const struct sl_sim_env *env, const struct sl_plan *plan,
		   struct sl_sim_result *out)
{
	const int P = plan->num_stages, D = plan->num_pipelines;
	out->fits_memory = 1;
	for (int i = 0; i < P; i++) {
		struct sl_sim_stage *st = &out->stages[i];
		st->fits = 1;
		double worst = -1;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, i, j);
			/* equal replicas need equal memory: the first of a run decides */
			if (j > 0 && same_replica(r, sl_plan_replica(plan, i, j - 1)))
				continue;
			struct sl_sim_memory mem;
			/* no count: its memory holds P - i micro-batches whatever the pipeline runs */
			struct sl_sim_replica_query query = sl_sim_replica_query_of(plan, i, j, 0);
			sl_sim_memory_sosp25(env, &query, &mem);
			double ratio = mem.total_bytes / mem.capacity_bytes;
			if (ratio > worst) {
				worst = ratio;
				st->memory = mem;
				st->memory_replica = j;
			}
			if (!sl_sim_fits_sosp25(env, &query))
				st->fits = 0;
		}
		out->fits_memory &= st->fits;
	}
}

int sl_sim_sosp25(const struct sl_sim_env *env, const struct sl_plan *plan, long long G,
		  struct sl_sim_result *out, struct sl_err *err)
{
	const int P = plan->num_stages, D = plan->num_pipelines;
	/* Nmb = ceil(G / (b · dp)) in that simulator; here the busiest pipeline's count under the
	 * plan's sharing (plan/microbatch_share.h), which is that number wherever the plan shares
	 * the batch as evenly as it can (the planner's splits and the artifact's plans do) */
	int Nmb = 0;
	for (int j = 0; j < D; j++) {
		int n = sl_plan_pipeline_microbatches(plan, j, G);
		if (n > Nmb)
			Nmb = n;
	}
	out->microbatches = Nmb;
	double c[SL_SIM_MAX_STAGES], u[SL_SIM_MAX_STAGES], act[SL_SIM_MAX_STAGES],
		grad[SL_SIM_MAX_STAGES], m[SL_SIM_MAX_STAGES];
	for (int i = 0; i < P; i++) {
		c[i] = u[i] = act[i] = grad[i] = 0.0;
		int rc = stage_compute(env, plan, i, out, &c[i], &u[i], err);
		if (rc)
			return rc;
		stage_transfers(env, plan, i, out, &act[i], &grad[i]);
	}
	double max_u;
	double T_pipe = pipeline_time(P, Nmb, c, u, act, grad, m, &max_u);
	double intra = dp_sync_time(env, plan, out);
	/* inter = 0: one pipeline description (SIMULATOR.md 4.2) */
	double T = T_pipe + intra;
	out->iteration_time_s = T;
	out->pipeline_time_s = T_pipe - max_u;
	out->optimizer_s = max_u;
	out->dp_sync_s = intra;
	out->throughput_it_s = 1.0 / T;
	for (int i = 0; i < P; i++) {
		struct sl_sim_stage *st = &out->stages[i];
		st->compute_s = Nmb * c[i];
		st->p2p_s = Nmb * m[i];
		st->bubble_s = fmax(0.0, out->pipeline_time_s - st->compute_s - st->p2p_s);
		st->optimizer_s = u[i];
	}
	out->egress_cost_usd_per_iter = egress_usd(env, plan, Nmb);
	/* comp_cost_per_sec = Σ used GPUs · GPU_PRICES / 3600; cost = comp / throughput + comm */
	double usd_per_s = 0;
	for (int i = 0; i < P; i++)
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, i, j);
			usd_per_s += r->tp * env->tables->sosp25_usd_per_hour[r->gpu] / 3600.0;
		}
	out->gpu_usd_per_hour = usd_per_s * 3600.0;
	out->gpu_cost_usd_per_iter = usd_per_s / out->throughput_it_s;
	out->cost_usd_per_iter = out->gpu_cost_usd_per_iter + out->egress_cost_usd_per_iter;
	memory(env, plan, out);
	return 0;
}
