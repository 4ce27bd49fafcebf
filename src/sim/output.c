/* What `sailor simulate` prints: the result as JSON (schema sailor.simulation/1) and as a
 * readable breakdown. Deterministic: fixed key order, stages in order. */
#include <stdio.h>
#include <string.h>

#include "sim/internal.h"

static json_t *memory_json(const struct sl_sim_env *env, const struct sl_plan *plan, int k,
			   const struct sl_sim_stage *st)
{
	const struct sl_replica *r = sl_plan_replica(plan, k, st->memory_replica);
	const struct sl_sim_memory *m = &st->memory;
	json_t *o = json_object();
	json_object_set_new(o, "replica", json_integer(st->memory_replica));
	json_object_set_new(o, "gpu", json_string(env->catalogue.gpus[r->gpu].name));
	json_object_set_new(o, "tp", json_integer(r->tp));
	json_object_set_new(o, "total_bytes", json_real(m->total_bytes));
	json_object_set_new(o, "capacity_bytes", json_real(m->capacity_bytes));
	json_object_set_new(o, "params_bytes", json_real(m->params_bytes));
	json_object_set_new(o, "grads_bytes", json_real(m->grads_bytes));
	json_object_set_new(o, "optimizer_bytes", json_real(m->optimizer_bytes));
	json_object_set_new(o, "activations_bytes", json_real(m->activations_bytes));
	json_object_set_new(o, "buffers_bytes", json_real(m->buffers_bytes));
	json_object_set_new(o, "runtime_bytes", json_real(m->runtime_bytes));
	return o;
}

json_t *sl_sim_result_to_json(const struct sl_sim_env *env, const struct sl_plan *plan,
			      const struct sl_sim_result *res)
{
	json_t *o = json_object();
	json_object_set_new(o, "schema", json_string("sailor.simulation/1"));
	json_object_set_new(o, "model", json_string(env->model.name));
	json_object_set_new(o, "cost_model", json_string(sl_cost_model_name(res->cost_model)));
	json_object_set_new(o, "runtime", json_string(res->runtime_sailor ? "sailor run"
									  : "Megatron-DeepSpeed"));
	const char *overlay = sl_sim_env_profile_overlay(env);
	json_object_set_new(o, "profiles_overlay", overlay ? json_string(overlay) : json_null());
	json_object_set_new(o, "global_batch", json_integer(res->global_batch));
	json_object_set_new(o, "micro_batch", json_integer(res->micro_batch));
	json_object_set_new(o, "num_stages", json_integer(res->num_stages));
	json_object_set_new(o, "num_pipelines", json_integer(res->num_pipelines));
	json_object_set_new(o, "microbatches_per_pipeline", json_integer(res->microbatches));
	json_object_set_new(o, "samples_per_iteration", json_integer(res->samples_per_iteration));
	json_object_set_new(o, "num_gpus", json_integer(res->num_gpus));
	json_object_set_new(o, "iteration_time_s", json_real(res->iteration_time_s));
	json_object_set_new(o, "throughput_it_s", json_real(res->throughput_it_s));
	json_object_set_new(o, "samples_per_s", json_real(res->samples_per_s));
	json_object_set_new(o, "tokens_per_s", json_real(res->tokens_per_s));
	json_object_set_new(o, "pipeline_time_s", json_real(res->pipeline_time_s));
	json_object_set_new(o, "dp_sync_s", json_real(res->dp_sync_s));
	json_object_set_new(o, "optimizer_s", json_real(res->optimizer_s));
	json_object_set_new(o, "slowest_pipeline", json_integer(res->slowest_pipeline));
	json_object_set_new(o, "peak_memory_bytes", json_real(res->peak_memory_bytes));
	json_object_set_new(o, "peak_memory_stage", json_integer(res->peak_stage));
	json_object_set_new(o, "fits_memory", json_boolean(res->fits_memory));
	json_object_set_new(o, "gpu_usd_per_hour", json_real(res->gpu_usd_per_hour));
	json_object_set_new(o, "gpu_cost_usd_per_iter", json_real(res->gpu_cost_usd_per_iter));
	json_object_set_new(o, "egress_cost_usd_per_iter", json_real(res->egress_cost_usd_per_iter));
	json_object_set_new(o, "cost_usd_per_iter", json_real(res->cost_usd_per_iter));
	json_object_set_new(o, "times_estimated", json_boolean(res->time_estimated));
	json_object_set_new(o, "network_stand_ins", json_boolean(res->network_derived));
	json_t *stages = json_array();
	for (int k = 0; k < res->num_stages; k++) {
		const struct sl_sim_stage *st = &res->stages[k];
		json_t *s = json_object();
		json_t *layers = json_array();
		json_array_append_new(layers, json_integer(st->first_layer));
		json_array_append_new(layers, json_integer(st->last_layer));
		json_object_set_new(s, "layers", layers);
		json_object_set_new(s, "replicas", json_integer(st->replicas));
		json_object_set_new(s, "gpus", json_integer(st->gpus));
		/* the memory options as the plan writes them, and whether each applies (sim.h) */
		const struct sl_plan_stage *ps = &plan->stages[k];
		json_object_set_new(s, "recompute", json_string(sl_recompute_name(ps->recompute)));
		json_object_set_new(s, "recompute_applies",
				    json_boolean(sl_sim_effective_recompute(env, ps->first_layer,
									    ps->last_layer,
									    ps->recompute) != 0));
		json_object_set_new(s, "zero", json_integer(ps->zero));
		json_object_set_new(s, "zero_applies",
				    json_boolean(sl_sim_effective_zero(ps->zero, plan->num_pipelines)));
		json_object_set_new(s, "fwd_s", json_real(st->fwd_s));
		json_object_set_new(s, "bwd_s", json_real(st->bwd_s));
		json_object_set_new(s, "compute_s", json_real(st->compute_s));
		json_object_set_new(s, "p2p_s", json_real(st->p2p_s));
		json_object_set_new(s, "bubble_s", json_real(st->bubble_s));
		json_object_set_new(s, "dp_sync_s", json_real(st->dp_sync_s));
		json_object_set_new(s, "optimizer_s", json_real(st->optimizer_s));
		if (st->cpu_s > 0) { /* compare with `sailor run`'s stage cpu_s and wait_tests */
			json_object_set_new(s, "cpu_s", json_real(st->cpu_s));
			json_object_set_new(s, "wait_tests", json_real(st->wait_tests));
			json_object_set_new(s, "dp_sync_cpu_s", json_real(st->dp_sync_cpu_s));
		}
		json_object_set_new(s, "memory", memory_json(env, plan, k, st));
		json_object_set_new(s, "fits_memory", json_boolean(st->fits));
		json_object_set_new(s, "times_estimated", json_boolean(st->time_estimated));
		json_array_append_new(stages, s);
	}
	json_object_set_new(o, "stages", stages);
	return o;
}

/* " [recompute full, ZeRO-1]" after a stage's layers when the plan sets an option, with what
 * does not apply said so; nothing when the stage has none. */
static void print_options(FILE *f, const struct sl_sim_env *env, const struct sl_plan *plan, int k)
{
	const struct sl_plan_stage *s = &plan->stages[k];
	if (s->recompute == SL_RECOMPUTE_NONE && !s->zero)
		return;
	fputs(" [", f);
	if (s->recompute != SL_RECOMPUTE_NONE) {
		fprintf(f, "recompute %s", sl_recompute_name(s->recompute));
		if (!sl_sim_effective_recompute(env, s->first_layer, s->last_layer, s->recompute))
			fputs(" (no effect: no transformer block in the stage)", f);
	}
	if (s->zero) {
		fprintf(f, "%sZeRO-1", s->recompute != SL_RECOMPUTE_NONE ? ", " : "");
		if (!sl_sim_effective_zero(s->zero, plan->num_pipelines))
			fputs(" (no effect: one replica)", f);
	}
	fputc(']', f);
}

static void print_replicas(FILE *f, const struct sl_sim_env *env, const struct sl_plan *plan, int k)
{
	for (int j = 0; j < plan->num_pipelines;) {
		const struct sl_replica *r = sl_plan_replica(plan, k, j);
		int n = 1;
		while (j + n < plan->num_pipelines) {
			const struct sl_replica *q = sl_plan_replica(plan, k, j + n);
			if (q->gpu != r->gpu || q->tp != r->tp || q->zone != r->zone)
				break;
			n++;
		}
		fprintf(f, "%s%d x %s tp%d %s", j ? ", " : "", n, env->catalogue.gpus[r->gpu].name, r->tp,
			env->catalogue.zones[r->zone].name);
		j += n;
	}
}

void sl_sim_microbatches_text(const struct sl_plan *plan, const struct sl_sim_result *res,
			      char *buf, size_t size)
{
	int fewest = res->microbatches;
	for (int j = 0; j < plan->num_pipelines; j++) {
		int n = sl_plan_pipeline_microbatches(plan, j, res->global_batch);
		if (n < fewest)
			fewest = n;
	}
	if (fewest == res->microbatches)
		snprintf(buf, size, "%d", fewest);
	else
		snprintf(buf, size, "%d-%d", fewest, res->microbatches);
}

void sl_sim_result_print(FILE *f, const struct sl_sim_env *env, const struct sl_plan *plan,
			 const struct sl_sim_result *res)
{
	const char *overlay = sl_sim_env_profile_overlay(env);
	char counts[32];
	sl_sim_microbatches_text(plan, res, counts, sizeof(counts));
	fprintf(f, "model %s, cost model %s%s%s%s, global batch %lld, micro-batch %d, %s "
		   "micro-batches per pipeline\n", env->model.name, sl_cost_model_name(res->cost_model),
		res->runtime_sailor ? " (runtime: sailor run)" : "",
		overlay ? ", profiles " : "", overlay ? overlay : "", res->global_batch,
		res->micro_batch, counts);
	fprintf(f, "plan: %d stage%s x %d pipeline%s, %lld GPUs\n", res->num_stages,
		res->num_stages == 1 ? "" : "s", res->num_pipelines, res->num_pipelines == 1 ? "" : "s",
		res->num_gpus);
	for (int k = 0; k < res->num_stages; k++) {
		fprintf(f, "  stage %d  layers %d-%d", k, res->stages[k].first_layer,
			res->stages[k].last_layer);
		print_options(f, env, plan, k);
		fputs(": ", f);
		print_replicas(f, env, plan, k);
		fputc('\n', f);
	}
	fprintf(f, "\ntime per iteration, by stage (the slowest pipeline; seconds)\n");
	fprintf(f, "  %-5s %9s %9s %9s %9s %9s %9s %9s\n", "stage", "fwd/mb", "bwd/mb", "compute",
		"p2p", "bubble", "dp-sync", "optimizer");
	for (int k = 0; k < res->num_stages; k++) {
		const struct sl_sim_stage *s = &res->stages[k];
		fprintf(f, "  %-5d %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f%s\n", k, s->fwd_s, s->bwd_s,
			s->compute_s, s->p2p_s, s->bubble_s, s->dp_sync_s, s->optimizer_s,
			s->time_estimated ? "  (estimated)" : "");
	}
	fprintf(f, "\nmemory per GPU, by stage (its fullest replica; GB = 1e9 bytes)\n");
	fprintf(f, "  %-5s %-14s %7s %7s %7s %8s %8s %8s %8s %9s %s\n", "stage", "gpu", "params",
		"grads", "optim", "activ", "buffers", "runtime", "total", "capacity", "");
	for (int k = 0; k < res->num_stages; k++) {
		const struct sl_sim_stage *s = &res->stages[k];
		const struct sl_sim_memory *m = &s->memory;
		const struct sl_replica *r = sl_plan_replica(plan, k, s->memory_replica);
		char gpu[48];
		snprintf(gpu, sizeof(gpu), "%s tp%d", env->catalogue.gpus[r->gpu].name, r->tp);
		fprintf(f, "  %-5d %-14s %7.2f %7.2f %7.2f %8.2f %8.2f %8.2f %8.2f %9.2f %s\n", k, gpu,
			m->params_bytes / 1e9, m->grads_bytes / 1e9, m->optimizer_bytes / 1e9,
			m->activations_bytes / 1e9, m->buffers_bytes / 1e9, m->runtime_bytes / 1e9,
			m->total_bytes / 1e9, m->capacity_bytes / 1e9, s->fits ? "fits" : "DOES NOT FIT");
	}
	if (plan->islands && plan->islands->count > 1)
		fprintf(f, "\niteration time      %.4f s  (a run step: the round below over island 0's "
			   "%d inner steps)\n", res->iteration_time_s, plan->islands->inner_steps[0]);
	else
		fprintf(f, "\niteration time      %.4f s  (pipeline %.4f s + exposed dp-sync %.4f s + "
			   "optimizer %.4f s)\n", res->iteration_time_s, res->pipeline_time_s,
			res->dp_sync_s, res->optimizer_s);
	fprintf(f, "throughput          %.4f it/s, %.1f samples/s, %.0f tokens/s\n", res->throughput_it_s,
		res->samples_per_s, res->tokens_per_s);
	fprintf(f, "peak memory         %.2f GB per GPU (stage %d), %s\n", res->peak_memory_bytes / 1e9,
		res->peak_stage, res->fits_memory ? "every GPU fits" : "SOME GPUS DO NOT FIT");
	fprintf(f, "cost per iteration  $%.6f  (GPU rent $%.6f at $%.2f/h + egress $%.6f)\n",
		res->cost_usd_per_iter, res->gpu_cost_usd_per_iter, res->gpu_usd_per_hour,
		res->egress_cost_usd_per_iter);
	sl_sim_islands_print(f, env, plan, res);
	if (res->time_estimated)
		fprintf(f, "note: some layer times are estimated (no profile of %s on that GPU type): "
			   "see 'estimated' above\n", env->model.name);
	if (res->network_derived)
		fprintf(f, "note: some links have no measured bandwidth fit; a stand-in was used "
			   "(see src/cluster/network.h)\n");
}
