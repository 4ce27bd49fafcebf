/* sl_simulate (dispatch to a cost model, the fields common to both) and sl_sim_check_plan (the
 * user-facing checks). Invariant: sl_simulate writes only *out and allocates nothing. */
#include <stddef.h>
#include <string.h>

#include "sim/internal.h"

#include "plan/microbatch_share.h"

static long long effective_batch(const struct sl_sim_env *env, const struct sl_plan *plan,
				 long long global_batch)
{
	if (global_batch > 0)
		return global_batch;
	if (plan->global_batch > 0)
		return plan->global_batch;
	return env->model.default_global_batch;
}

static void replica_field(const struct sl_plan *plan, int k, int j, char *buf, size_t size)
{
	if (plan->format == SL_PLAN_FORMAT_SOSP25)
		snprintf(buf, size, "tmp_per_stage[%d][%d]", k, j);
	else
		snprintf(buf, size, "stages[%d].replicas[%d]", k, sl_plan_replica_entry(plan, k, j));
}

/* Whether (mbs, tp) is one the shipped layer-time tables can hold: a power of two micro-batch
 * up to 2^(SL_SIM_MBS_SLOTS - 1) and a TP degree up to SL_SIM_MAX_TP. */
static int in_table_range(int mbs, int tp)
{
	return mbs >= 1 && mbs <= (1 << (SL_SIM_MBS_SLOTS - 1)) && (mbs & (mbs - 1)) == 0 &&
	       tp >= 1 && tp <= SL_SIM_MAX_TP;
}

int sl_sim_check_plan(const struct sl_sim_env *env, const struct sl_plan *plan,
		      long long global_batch, struct sl_err *err)
{
	long long G = effective_batch(env, plan, global_batch);
	int rc = sl_plan_check(plan, env->num_layers, G, &env->catalogue, err);
	if (rc)
		return rc;
	if (plan->islands && (rc = sl_islands_check_model(plan->islands, &env->model, err)))
		return sl_err_prefix(err, "plan '%s'", plan->path);
	for (int k = 0; k < plan->num_stages; k++)
		for (int j = 0; j < plan->num_pipelines; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			if (sl_sim_time_source(env, r->gpu, plan->micro_batch, r->tp) != SL_TIME_NONE)
				continue;
			char field[96], have[2048];
			replica_field(plan, k, j, field, sizeof(field));
			const char *gpu = env->catalogue.gpus[r->gpu].name;
			const struct sl_profile *prof = env->profiles[r->gpu];
			if (prof)
				sl_err_set(err, SL_ENOTFOUND,
					   "profile '%s': no entry for mbs %d tp %d (needed by plan '%s' %s): "
					   "use a micro-batch size and TP degree the profile has (%s)",
					   prof->path, plan->micro_batch, r->tp, plan->path, field,
					   sl_profile_entries_text(prof, have, sizeof(have)));
			else if (in_table_range(plan->micro_batch, r->tp))
				/* a size the shipped tables could hold: they do not, for this type */
				sl_err_set(err, SL_ENOTFOUND,
					   "plan '%s': %s: no layer times for %s at mbs %d tp %d: no "
					   "profile of it for model '%s' and no shipped times; profile "
					   "it (`sailor profile --model %s --gpu %s --mbs %d --tp %d`) "
					   "and give the profiles with --profiles DIR",
					   plan->path, field, gpu, plan->micro_batch, r->tp,
					   env->model.name, env->model.name, gpu, plan->micro_batch, r->tp);
			else
				sl_err_set(err, SL_ENOTFOUND,
					   "plan '%s': %s: no layer times for %s at mbs %d tp %d: "
					   "micro_batch must be a power of two up to %d and tp at most %d",
					   plan->path, field, gpu, plan->micro_batch, r->tp,
					   1 << (SL_SIM_MBS_SLOTS - 1), SL_SIM_MAX_TP);
			return SL_ENOTFOUND;
		}
	return 0;
}

void sl_sim_env_set_cluster(struct sl_sim_env *env, const struct sl_cluster *cluster)
{
	env->cluster = cluster;
}

void sl_sim_env_set_timeline(struct sl_sim_env *env, struct sl_sim_timeline *timeline)
{
	env->timeline = timeline;
}

void sl_sim_timeline_free(struct sl_sim_timeline *timeline)
{
	sl_timeline_free(&timeline->spans);
	if (timeline->recorded)
		sl_role_table_free(&timeline->roles);
	timeline->recorded = 0;
}

void sl_sim_result_copy(struct sl_sim_result *dst, const struct sl_sim_result *src)
{
	int stages = src->num_stages < 0 ? 0 : src->num_stages;
	if (stages > SL_SIM_MAX_STAGES)
		stages = SL_SIM_MAX_STAGES;
	memcpy(dst, src, offsetof(struct sl_sim_result, stages) +
				 (size_t)stages * sizeof(src->stages[0]));
}

int sl_simulate(const struct sl_sim_env *env, const struct sl_plan *plan, enum sl_cost_model cm,
		struct sl_sim_result *out, struct sl_err *err)
{
	const int P = plan->num_stages, D = plan->num_pipelines;
	if (plan->islands && plan->islands->count > 1)
		return sl_sim_islands(env, plan, cm, out, NULL, err);
	if (P < 1 || P > SL_SIM_MAX_STAGES || D < 1 || D > SL_SIM_MAX_PIPELINES ||
	    plan->micro_batch < 1)
		return sl_err_set(err, SL_EINPUT, "plan: %d stages of %d replicas, micro-batch %d: out "
				  "of range", P, D, plan->micro_batch);
	long long G = effective_batch(env, plan, 0);
	if (G < 1)
		return sl_err_set(err, SL_EINPUT, "global batch %lld: must be at least 1", G);
	/* the micro-batches the runtime would run, by the one rule: a plan it refuses is refused */
	int counts[SL_SIM_MAX_PIPELINES];
	int rc = sl_plan_microbatch_counts(plan, G, counts, err);
	if (rc) {
		if (plan->path[0])
			sl_err_prefix(err, "plan '%s'", plan->path);
		return rc;
	}
	memset(out, 0, sizeof(*out) - sizeof(out->stages) + (size_t)P * sizeof(out->stages[0]));
	for (int j = 0; j < D; j++)
		out->samples_per_iteration += (long long)counts[j] * plan->micro_batch;
	out->cost_model = cm;
	out->num_stages = P;
	out->num_pipelines = D;
	out->micro_batch = plan->micro_batch;
	out->global_batch = G;
	int next = 0;
	for (int k = 0; k < P; k++) {
		const struct sl_plan_stage *s = &plan->stages[k];
		if (s->first_layer != next || s->last_layer < s->first_layer ||
		    s->last_layer >= env->num_layers)
			return sl_err_set(err, SL_EINPUT, "plan: stage %d layers [%d, %d] do not continue "
					  "a cover of 0..%d", k, s->first_layer, s->last_layer,
					  env->num_layers - 1);
		next = s->last_layer + 1;
		out->stages[k].first_layer = s->first_layer;
		out->stages[k].last_layer = s->last_layer;
		out->stages[k].replicas = D;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			if (r->gpu < 0 || r->gpu >= env->catalogue.gpu_count || r->zone < 0 ||
			    r->zone >= env->catalogue.zone_count || r->tp < 1 || r->tp > SL_SIM_MAX_TP)
				return sl_err_set(err, SL_EINPUT, "plan: stage %d replica %d: invalid GPU, "
						  "zone or TP degree", k, j);
			out->stages[k].gpus += r->tp;
		}
		out->num_gpus += out->stages[k].gpus;
	}
	if (next != env->num_layers)
		return sl_err_set(err, SL_EINPUT, "plan: stages end at layer %d, the model has %d layers",
				  next - 1, env->num_layers);
	if (cm == SL_COST_SOSP25) {
		/* that simulator models neither option; one that changes nothing is no option */
		for (int k = 0; k < P; k++) {
			const struct sl_plan_stage *s = &plan->stages[k];
			const char *what = NULL, *value = NULL;
			char zero_value[8] = "1";
			if (sl_sim_effective_recompute(env, s->first_layer, s->last_layer, s->recompute)) {
				what = "recompute";
				value = sl_recompute_name(s->recompute);
			} else if (sl_sim_effective_zero(s->zero, D)) {
				what = "zero";
				value = zero_value;
			}
			if (what)
				return sl_err_set(err, SL_EINPUT,
						  "plan '%s': stages[%d].%s %s: the sosp25 cost model has no "
						  "activation recomputation or ZeRO-1 (the SOSP'25 simulator "
						  "models neither): simulate it with --cost-model sailor, or "
						  "remove \"recompute\" and \"zero\" from the plan's stages",
						  plan->path, k, what, value);
		}
	}
	if (cm == SL_COST_SOSP25) {
		rc = sl_sim_sosp25(env, plan, G, out, err);
	} else if (sl_sim_replay_uses(env, plan)) {
		out->runtime_sailor = 1;
		rc = sl_sim_replay(env, plan, G, out, err);
	} else {
		rc = sl_sim_sailor(env, plan, G, out, err);
	}
	if (rc)
		return rc;
	out->samples_per_s = (double)G * out->throughput_it_s;
	out->tokens_per_s = out->samples_per_s * env->model.seq_len;
	out->peak_memory_bytes = 0;
	for (int k = 0; k < P; k++) {
		if (out->stages[k].memory.total_bytes > out->peak_memory_bytes) {
			out->peak_memory_bytes = out->stages[k].memory.total_bytes;
			out->peak_stage = k;
		}
		out->time_estimated |= out->stages[k].time_estimated;
	}
	return 0;
}
