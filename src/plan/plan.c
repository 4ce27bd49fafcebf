/* Plans: the struct's memory, both file formats in, and the checks that need the model
 * (see plan.h). Invariants after load: P and D within limits, indices valid, tp >= 1. */
#include "plan/plan.h"
#include "plan/microbatch_share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/limits.h"

void sl_plan_init(struct sl_plan *plan) { memset(plan, 0, sizeof(*plan)); }

int sl_plan_reserve(struct sl_plan *plan, int stages, int pipelines, struct sl_err *err)
{
	if (stages < 1 || stages > SL_PLAN_MAX_STAGES)
		return sl_err_set(err, SL_EINPUT, "a plan has 1 to %d stages, not %d",
				  SL_PLAN_MAX_STAGES, stages);
	if (pipelines < 1 || pipelines > SL_PLAN_MAX_PIPELINES)
		return sl_err_set(err, SL_EINPUT, "a stage has 1 to %d replicas, not %d",
				  SL_PLAN_MAX_PIPELINES, pipelines);
	int need = stages * pipelines;
	if (plan->capacity < need) {
		struct sl_replica *r = plan->capacity ? realloc(plan->replicas, (size_t)need * sizeof(*r))
						      : malloc((size_t)need * sizeof(*r));
		if (!r)
			return sl_err_set(err, SL_ENOMEM, "out of memory");
		plan->replicas = r;
		plan->capacity = need;
	}
	if (plan->mb_capacity < pipelines) {
		int *m = plan->mb_capacity ? realloc(plan->microbatches, (size_t)pipelines * sizeof(*m))
					   : malloc((size_t)pipelines * sizeof(*m));
		if (!m)
			return sl_err_set(err, SL_ENOMEM, "out of memory");
		plan->microbatches = m;
		plan->mb_capacity = pipelines;
	}
	plan->num_stages = stages;
	plan->num_pipelines = pipelines;
	return 0;
}

void sl_plan_free(struct sl_plan *plan)
{
	if (!plan)
		return;
	if (plan->capacity)
		free(plan->replicas);
	if (plan->mb_capacity)
		free(plan->microbatches);
	free(plan->islands);
	sl_plan_init(plan);
}

int sl_plan_copy(struct sl_plan *dst, const struct sl_plan *src, struct sl_err *err)
{
	struct sl_replica *r = dst->replicas;
	int *m = dst->microbatches;
	int cap = dst->capacity, mcap = dst->mb_capacity;
	free(dst->islands);
	*dst = *src;
	dst->islands = NULL;
	dst->replicas = cap ? r : NULL;
	dst->microbatches = mcap ? m : NULL;
	dst->capacity = cap;
	dst->mb_capacity = mcap;
	int rc = sl_plan_reserve(dst, src->num_stages, src->num_pipelines, err);
	if (rc)
		return rc;
	memcpy(dst->replicas, src->replicas,
	       (size_t)src->num_stages * (size_t)src->num_pipelines * sizeof(*src->replicas));
	if (src->uneven_microbatches)
		memcpy(dst->microbatches, src->microbatches, (size_t)src->num_pipelines * sizeof(int));
	if (src->islands && !(dst->islands = sl_islands_copy(src->islands, err)))
		return SL_ENOMEM;
	return 0;
}

long long sl_plan_gpu_count(const struct sl_plan *plan)
{
	long long n = 0;
	for (long i = 0; i < (long)plan->num_stages * plan->num_pipelines; i++)
		n += plan->replicas[i].tp;
	return n;
}

int sl_plan_replica_entry(const struct sl_plan *plan, int stage, int j)
{
	int entry = 0;
	for (int i = 1; i <= j && i < plan->num_pipelines; i++) {
		const struct sl_replica *a = sl_plan_replica(plan, stage, i - 1);
		const struct sl_replica *b = sl_plan_replica(plan, stage, i);
		if (a->gpu != b->gpu || a->zone != b->zone || a->tp != b->tp)
			entry++;
	}
	return entry;
}

int sl_plan_set_model(struct sl_plan *plan, const char *model)
{
	size_t n = strlen(model);
	if (n >= sizeof(plan->model))
		return -1;
	memcpy(plan->model, model, n + 1);
	return 0;
}

int sl_plan_pipeline_microbatches(const struct sl_plan *plan, int j, long long global_batch)
{
	if (plan->uneven_microbatches)
		return plan->microbatches[j];
	/* the rule of microbatch_share.h for a plan that passes it; for one that does not (an
	 * unchecked plan, e.g. a lower bound's), a pipeline never gets fewer than 1 */
	long long M = global_batch / plan->micro_batch, D = plan->num_pipelines;
	long long n = M / D + (j < M % D);
	return n < 1 ? 1 : (n > 1 << 30 ? 1 << 30 : (int)n);
}

/* ---- reading ---- */

struct parsed_replica {
	int gpu, zone, tp;
};

static int resolve_gpu_zone(const struct sl_catalogue *cat, const char *ctx, const char *gpu,
			    const char *zone, const char *gpu_field, const char *zone_field, int *g,
			    int *z, struct sl_err *err)
{
	char names[1024];
	*g = sl_catalogue_gpu_index(cat, gpu);
	if (*g < 0)
		return sl_err_set(err, SL_ENOTFOUND, "%s%s: unknown GPU type '%s' (known: %s)", ctx,
				  gpu_field, gpu, sl_catalogue_gpu_names(cat, names, sizeof(names)));
	*z = sl_catalogue_zone_index(cat, zone);
	if (*z < 0)
		return sl_err_set(err, SL_ENOTFOUND, "%s%s: unknown zone '%s' (nearest: %s; every "
				  "zone in data/zones/*.json, more with --zones)", ctx, zone_field, zone,
				  sl_catalogue_zone_suggest(cat, zone, names, sizeof(names)));
	return 0;
}

static int positive_int(const json_t *obj, const char *ctx, const char *key, int required,
			long long def, long long max, long long *out, struct sl_err *err)
{
	*out = def;
	int rc = required ? sl_json_get_int(obj, ctx, key, out, err)
			  : sl_json_opt_int(obj, ctx, key, out, err);
	if (rc)
		return rc;
	if (*out < 1 || *out > max)
		return sl_err_set(err, SL_EINPUT, "%s%s%s: must be a whole number from 1 to %lld, got %lld",
				  ctx, *ctx ? "." : "", key, max, *out);
	return 0;
}

const char *sl_recompute_name(enum sl_recompute r)
{
	switch (r) {
	case SL_RECOMPUTE_FULL: return "full";
	case SL_RECOMPUTE_SELECTIVE: return "selective";
	default: return "none";
	}
}

/* The optional per-stage memory options "recompute" and "zero" (plan.h). */
static int stage_memory_options(const json_t *st, const char *ctx, struct sl_plan_stage *out,
				struct sl_err *err)
{
	out->recompute = SL_RECOMPUTE_NONE;
	out->zero = 0;
	json_t *rec = json_object_get(st, "recompute");
	if (rec && !json_is_null(rec)) {
		const char *name = json_is_string(rec) ? json_string_value(rec) : "";
		if (!strcmp(name, "none"))
			out->recompute = SL_RECOMPUTE_NONE;
		else if (!strcmp(name, "full"))
			out->recompute = SL_RECOMPUTE_FULL;
		else if (!strcmp(name, "selective"))
			out->recompute = SL_RECOMPUTE_SELECTIVE;
		else
			return sl_err_set(err, SL_EINPUT,
					  "%s.recompute: expected \"none\", \"full\" or \"selective\"", ctx);
	}
	json_t *zero = json_object_get(st, "zero");
	if (zero && !json_is_null(zero)) {
		if (!json_is_integer(zero) || json_integer_value(zero) < 0 || json_integer_value(zero) > 1)
			return sl_err_set(err, SL_EINPUT,
					  "%s.zero: expected 0 (replicated optimizer state) or 1 (ZeRO-1: "
					  "AdamW moments split across the stage's replicas)", ctx);
		out->zero = (unsigned char)json_integer_value(zero);
	}
	return 0;
}

static int measured(const json_t *root, const char *key, double max, int *has, double *out,
		    struct sl_err *err);

/* The top-level figures of our format: "model" (optional), "global_batch" (optional) and
 * "micro_batch". */
static int read_ours_batch(const json_t *root, struct sl_plan *out, struct sl_err *err)
{
	long long v = 0;
	int rc = 0;
	json_t *model = json_object_get(root, "model");
	if (model && !json_is_null(model)) {
		if (!json_is_string(model) || strlen(json_string_value(model)) >= SL_MODEL_NAME_MAX)
			return sl_err_set(err, SL_EINPUT, "model: expected a model name");
		snprintf(out->model, sizeof(out->model), "%s", json_string_value(model));
	}
	if (json_object_get(root, "global_batch")) {
		rc = positive_int(root, "", "global_batch", 0, 0, SL_MAX_GLOBAL_BATCH, &v, err);
		if (rc)
			return rc;
		out->global_batch = v;
	}
	rc = positive_int(root, "", "micro_batch", 1, 0, SL_MAX_MICRO_BATCH, &v, err);
	if (rc)
		return rc;
	out->micro_batch = (int)v;
	return 0;
}

/* stages[k] (st) before the plan is reserved: its layer range and memory options into *stage,
 * and how many replicas its "replicas" entries add up to (*replicas). */
static int read_ours_stage(const json_t *st, const char *ctx, struct sl_plan_stage *stage,
			   long long *replicas, struct sl_err *err)
{
	json_t *reps = NULL, *layers = NULL;
	int rc = sl_json_get_array(st, ctx, "layers", &layers, err);
	if (rc)
		return rc;
	if (json_array_size(layers) != 2)
		return sl_err_set(err, SL_EINPUT,
				  "%s.layers: expected [first, last], an inclusive layer range",
				  ctx);
	long long a, b;
	char lctx[128];
	snprintf(lctx, sizeof(lctx), "%s.layers[0]", ctx);
	rc = sl_json_as_int(json_array_get(layers, 0), lctx, &a, err);
	snprintf(lctx, sizeof(lctx), "%s.layers[1]", ctx);
	if (!rc) rc = sl_json_as_int(json_array_get(layers, 1), lctx, &b, err);
	if (rc)
		return rc;
	if (a < 0 || b < a || b > SL_PLAN_MAX_LAYER)
		return sl_err_set(err, SL_EINPUT,
				  "%s.layers: [%lld, %lld] is not a range: expected 0 <= first <= "
				  "last <= %d", ctx, a, b, SL_PLAN_MAX_LAYER);
	stage->first_layer = (int)a;
	stage->last_layer = (int)b;
	rc = stage_memory_options(st, ctx, stage, err);
	if (rc)
		return rc;
	rc = sl_json_get_array(st, ctx, "replicas", &reps, err);
	if (rc)
		return rc;
	if (json_array_size(reps) == 0)
		return sl_err_set(err, SL_EINPUT,
				  "%s.replicas: the stage has no replicas: give it at least one "
				  "{\"gpu\", \"zone\", \"tp\"}", ctx);
	long long n = 0, v = 0;
	for (size_t r = 0; r < json_array_size(reps); r++) {
		char rctx[160];
		snprintf(rctx, sizeof(rctx), "%s.replicas[%zu]", ctx, r);
		rc = positive_int(json_array_get(reps, r), rctx, "count", 0, 1, SL_PLAN_MAX_PIPELINES,
				  &v, err);
		if (rc)
			return rc;
		n += v;
	}
	*replicas = n;
	return 0;
}

/* Every stage's replicas, once the plan is reserved: replica entry r of stage k, "count" times,
 * becomes the next pipelines' replicas of that stage. */
static int read_ours_replicas(const json_t *stages, const struct sl_catalogue *cat,
			      struct sl_plan *out, struct sl_err *err)
{
	for (size_t k = 0; k < json_array_size(stages); k++) {
		json_t *reps = json_object_get(json_array_get(stages, k), "replicas");
		int j = 0;
		for (size_t r = 0; r < json_array_size(reps); r++) {
			char rctx[160];
			snprintf(rctx, sizeof(rctx), "stages[%zu].replicas[%zu]", k, r);
			json_t *e = json_array_get(reps, r);
			const char *gpu = NULL, *zone = NULL;
			long long count = 1, tp = 1;
			int rc = sl_json_get_string(e, rctx, "gpu", &gpu, err);
			if (!rc) rc = sl_json_get_string(e, rctx, "zone", &zone, err);
			if (!rc) rc = positive_int(e, rctx, "tp", 0, 1, 64, &tp, err);
			if (!rc) rc = positive_int(e, rctx, "count", 0, 1, SL_PLAN_MAX_PIPELINES, &count, err);
			int g, z;
			if (!rc) rc = resolve_gpu_zone(cat, rctx, gpu, zone, ".gpu", ".zone", &g, &z, err);
			if (rc)
				return rc;
			for (long long c = 0; c < count; c++, j++)
				*sl_plan_replica(out, (int)k, j) =
					(struct sl_replica){(short)g, (short)z, (short)tp, 0};
		}
	}
	return 0;
}

/* The optional "microbatches_per_pipeline": one count per pipeline (D of them). */
static int read_ours_microbatches(const json_t *root, int D, struct sl_plan *out,
				  struct sl_err *err)
{
	json_t *mbs = json_object_get(root, "microbatches_per_pipeline");
	if (!mbs || json_is_null(mbs))
		return 0;
	if (!json_is_array(mbs) || (int)json_array_size(mbs) != D)
		return sl_err_set(err, SL_EINPUT,
				  "microbatches_per_pipeline: expected an array of %d counts, one "
				  "per pipeline", D);
	for (int j = 0; j < D; j++) {
		char ctx[64];
		long long v = 0;
		snprintf(ctx, sizeof(ctx), "microbatches_per_pipeline[%d]", j);
		int rc = sl_json_as_int(json_array_get(mbs, (size_t)j), ctx, &v, err);
		if (rc)
			return rc;
		if (v < 1 || v > SL_MAX_GLOBAL_BATCH)
			return sl_err_set(err, SL_EINPUT, "%s: must be 1 to %lld, got %lld", ctx,
					  SL_MAX_GLOBAL_BATCH, v);
		out->microbatches[j] = (int)v;
	}
	out->uneven_microbatches = 1;
	return 0;
}

/* The optional "measured": a measured run of this plan (a validation file in our format). */
static int read_ours_measured(const json_t *root, struct sl_plan *out, struct sl_err *err)
{
	json_t *meas = json_object_get(root, "measured");
	if (!meas || json_is_null(meas))
		return 0;
	if (!json_is_object(meas))
		return sl_err_set(err, SL_EINPUT, "measured: expected {\"iteration_s\", "
				  "\"peak_memory_bytes\"}");
	int rc = measured(meas, "iteration_s", SL_MAX_TIME_S, &out->measured.has_real,
			  &out->measured.real_s, err);
	if (!rc)
		rc = measured(meas, "peak_memory_bytes", SL_MAX_MEMORY_BYTES,
			      &out->measured.has_max_mem, &out->measured.max_mem_bytes, err);
	if (!rc)
		rc = measured(meas, "dp_sync_s", SL_MAX_TIME_S, &out->measured.has_red_grads,
			      &out->measured.red_grads_s, err);
	if (rc)
		return sl_err_prefix(err, "measured");
	return 0;
}

static int read_ours(const json_t *root, const struct sl_catalogue *cat, struct sl_plan *out,
		     struct sl_err *err)
{
	int rc = read_ours_batch(root, out, err);
	if (rc)
		return rc;
	json_t *stages = NULL;
	rc = sl_json_get_array(root, "", "stages", &stages, err);
	if (rc)
		return rc;
	size_t P = json_array_size(stages);
	if (P == 0 || P > SL_PLAN_MAX_STAGES)
		return sl_err_set(err, SL_EINPUT, "stages: expected 1 to %d stages, got %zu",
				  SL_PLAN_MAX_STAGES, P);
	/* first pass: layers and replica counts per stage, which give the plan's shape */
	int D = -1;
	for (size_t k = 0; k < P; k++) {
		char ctx[64];
		snprintf(ctx, sizeof(ctx), "stages[%zu]", k);
		long long n = 0;
		rc = read_ours_stage(json_array_get(stages, k), ctx, &out->stages[k], &n, err);
		if (rc)
			return rc;
		if (n > SL_PLAN_MAX_PIPELINES)
			return sl_err_set(err, SL_EINPUT, "%s.replicas: %lld replicas, at most %d allowed",
					  ctx, n, SL_PLAN_MAX_PIPELINES);
		if (D < 0)
			D = (int)n;
		else if (n != D)
			return sl_err_set(err, SL_EINPUT,
					  "%s.replicas: %lld replicas but stages[0] has %d: every stage "
					  "needs the same number of replicas (one per pipeline)", ctx, n, D);
	}
	rc = sl_plan_reserve(out, (int)P, D, err);
	if (!rc) rc = read_ours_replicas(stages, cat, out, err);
	if (!rc) rc = read_ours_microbatches(root, D, out, err);
	if (!rc) rc = read_ours_measured(root, out, err);
	if (!rc && json_object_get(root, "islands"))
		rc = sl_islands_from_json(json_object_get(root, "islands"), D, &out->islands, err);
	if (rc)
		return rc;
	out->format = SL_PLAN_FORMAT_SAILOR;
	return 0;
}

/* One SOSP'25 replica: [ [[gpu, gpus_per_node, zone], ...], tp ]. */
static int read_sosp_replica(const json_t *e, const char *ctx, const struct sl_catalogue *cat,
			     struct sl_replica *out, struct sl_err *err)
{
	json_t *vms = json_array_get(e, 0), *tpv = json_array_get(e, 1);
	if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_array(vms) ||
	    json_array_size(vms) < 1)
		return sl_err_set(err, SL_EINPUT,
				  "%s: expected [[[gpu, gpus_per_node, zone]], tp]", ctx);
	if (json_array_size(vms) > 1)
		return sl_err_set(err, SL_EINPUT,
				  "%s: a replica spanning %zu VMs (Metis plans) is not supported: give "
				  "one [gpu, gpus_per_node, zone]", ctx, json_array_size(vms));
	json_t *vm = json_array_get(vms, 0);
	json_t *gv = json_array_get(vm, 0), *zv = json_array_get(vm, 2);
	if (!json_is_array(vm) || json_array_size(vm) != 3 || !json_is_string(gv) || !json_is_string(zv))
		return sl_err_set(err, SL_EINPUT, "%s[0][0]: expected [gpu, gpus_per_node, zone]", ctx);
	long long tp;
	char tctx[224];
	snprintf(tctx, sizeof(tctx), "%s[1]", ctx);
	int rc = sl_json_as_int(tpv, tctx, &tp, err);
	if (rc)
		return rc;
	if (tp < 1 || tp > 64)
		return sl_err_set(err, SL_EINPUT, "%s: TP degree must be 1 to 64, got %lld", tctx, tp);
	int g, z;
	rc = resolve_gpu_zone(cat, ctx, json_string_value(gv), json_string_value(zv), "[0][0][0]",
			      "[0][0][2]", &g, &z, err);
	if (rc)
		return rc;
	*out = (struct sl_replica){(short)g, (short)z, (short)tp, 0};
	return 0;
}

/* A measured figure of a validation file: absent or null leaves *has 0; 0 means "not timed" (the
 * artifact's files mark untimed runs so); anything else must be a normal number from the
 * smallest plausible measurement to max. */
static int measured(const json_t *root, const char *key, double max, int *has, double *out,
		    struct sl_err *err)
{
	json_t *v = json_object_get(root, key);
	if (!v || json_is_null(v))
		return 0;
	double x = 0;
	int rc = sl_json_as_number(v, key, &x, err);
	if (rc)
		return rc;
	double min = strstr(key, "mem") ? 1.0 : SL_MIN_TIME_S;
	if (x != 0 && !(x >= min && x <= max))
		return sl_err_set(err, SL_EINPUT, "%s: %g is out of range: give 0 (not measured) or "
				  "%g to %g", key, x, min, max);
	*has = 1;
	*out = x;
	return 0;
}

/* One stage's layer list of a SOSP'25 plan (ls, at lctx): consecutive layer numbers, the first
 * and last into *first and *last. */
static int read_sosp_layers(const json_t *ls, const char *lctx, long long *first,
			    long long *last, struct sl_err *err)
{
	if (!json_is_array(ls) || json_array_size(ls) == 0)
		return sl_err_set(err, SL_EINPUT, "%s: expected a non-empty list of layers", lctx);
	long long prev = 0;
	*first = 0;
	for (size_t i = 0; i < json_array_size(ls); i++) {
		char ictx[224];
		snprintf(ictx, sizeof(ictx), "%s[%zu]", lctx, i);
		long long l;
		int rc = sl_json_as_int(json_array_get(ls, i), ictx, &l, err);
		if (rc)
			return rc;
		if (l < 0 || l > SL_PLAN_MAX_LAYER)
			return sl_err_set(err, SL_EINPUT, "%s: layer %lld is not in 0..%d", ictx,
					  l, SL_PLAN_MAX_LAYER);
		if (i == 0)
			*first = l;
		else if (l != prev + 1)
			return sl_err_set(err, SL_EINPUT,
					  "%s: layers must be consecutive, %lld follows %lld", ictx,
					  l, prev);
		prev = l;
	}
	if (*first < 0)
		return sl_err_set(err, SL_EINPUT, "%s: layer numbers start at 0", lctx);
	*last = prev;
	return 0;
}

/* The stages of a SOSP'25 pipeline description (at ctx) before the plan is reserved: each
 * stage's layers (layers[k]) into out->stages[k], and the number of replicas every stage has
 * (tmp[k], under the key tkey) into *D. */
static int read_sosp_stages(const json_t *layers, const json_t *tmp, const char *ctx,
			    const char *tkey, struct sl_plan *out, int *D, struct sl_err *err)
{
	size_t P = json_array_size(layers);
	*D = -1;
	for (size_t k = 0; k < P; k++) {
		json_t *ls = json_array_get(layers, k), *reps = json_array_get(tmp, k);
		char lctx[192];
		snprintf(lctx, sizeof(lctx), "%s.layers_per_stage[%zu]", ctx, k);
		long long first = 0, last = 0;
		int rc = read_sosp_layers(ls, lctx, &first, &last, err);
		if (rc)
			return rc;
		out->stages[k].first_layer = (int)first;
		out->stages[k].last_layer = (int)last;
		snprintf(lctx, sizeof(lctx), "%s.%s[%zu]", ctx, tkey, k);
		if (!json_is_array(reps) || json_array_size(reps) == 0)
			return sl_err_set(err, SL_EINPUT, "%s: the stage has no replicas", lctx);
		int n = (int)json_array_size(reps);
		if (n > SL_PLAN_MAX_PIPELINES)
			return sl_err_set(err, SL_EINPUT, "%s: %d replicas, at most %d allowed", lctx, n,
					  SL_PLAN_MAX_PIPELINES);
		if (*D < 0)
			*D = n;
		else if (n != *D)
			return sl_err_set(err, SL_EINPUT,
					  "%s: %d replicas but stage 0 has %d: every stage needs the same "
					  "number of replicas", lctx, n, *D);
	}
	return 0;
}

/* The measured figures a SOSP'25 validation file may carry: "real", "max_mem", "red_grads". */
static int read_sosp_measured(const json_t *root, struct sl_plan *out, struct sl_err *err)
{
	int rc = measured(root, "real", SL_MAX_TIME_S, &out->measured.has_real,
			  &out->measured.real_s, err);
	if (!rc)
		rc = measured(root, "max_mem", SL_MAX_MEMORY_BYTES, &out->measured.has_max_mem,
			      &out->measured.max_mem_bytes, err);
	if (!rc)
		rc = measured(root, "red_grads", SL_MAX_TIME_S, &out->measured.has_red_grads,
			      &out->measured.red_grads_s, err);
	return rc;
}

static int read_sosp(const json_t *root, const struct sl_catalogue *cat, struct sl_plan *out,
		     struct sl_err *err)
{
	long long v = 0;
	int rc = positive_int(root, "", "mbs", 1, 0, SL_MAX_MICRO_BATCH, &v, err);
	if (rc)
		return rc;
	out->micro_batch = (int)v;
	if (json_object_get(root, "gbs")) {
		rc = positive_int(root, "", "gbs", 0, 0, SL_MAX_GLOBAL_BATCH, &v, err);
		if (rc)
			return rc;
		out->global_batch = v;
	}
	const char *key = json_object_get(root, "pipeline_list") ? "pipeline_list" : "pipelines";
	json_t *pl = NULL;
	rc = sl_json_get_array(root, "", key, &pl, err);
	if (rc)
		return rc;
	if (json_array_size(pl) != 1)
		return sl_err_set(err, SL_EINPUT,
				  "%s: expected exactly one pipeline description, got %zu", key,
				  json_array_size(pl));
	json_t *p = json_array_get(pl, 0);
	char ctx[64];
	snprintf(ctx, sizeof(ctx), "%s[0]", key);
	json_t *layers = NULL, *tmp = NULL;
	rc = sl_json_get_array(p, ctx, "layers_per_stage", &layers, err);
	if (rc)
		return rc;
	const char *tkey = json_object_get(p, "tmp_per_stage") ? "tmp_per_stage" : "tmp_stages";
	rc = sl_json_get_array(p, ctx, tkey, &tmp, err);
	if (rc)
		return rc;
	size_t P = json_array_size(layers);
	if (P == 0 || P > SL_PLAN_MAX_STAGES)
		return sl_err_set(err, SL_EINPUT, "%s.layers_per_stage: expected 1 to %d stages", ctx,
				  SL_PLAN_MAX_STAGES);
	if (json_array_size(tmp) != P)
		return sl_err_set(err, SL_EINPUT, "%s.%s: has %zu stages but layers_per_stage has %zu",
				  ctx, tkey, json_array_size(tmp), P);
	int D = -1;
	rc = read_sosp_stages(layers, tmp, ctx, tkey, out, &D, err);
	if (rc)
		return rc;
	rc = sl_plan_reserve(out, (int)P, D, err);
	for (size_t k = 0; !rc && k < P; k++) {
		json_t *reps = json_array_get(tmp, k);
		for (int j = 0; !rc && j < D; j++) {
			char rctx[192];
			snprintf(rctx, sizeof(rctx), "%s.%s[%zu][%d]", ctx, tkey, k, j);
			rc = read_sosp_replica(json_array_get(reps, (size_t)j), rctx, cat,
					       sl_plan_replica(out, (int)k, j), err);
		}
	}
	if (!rc)
		rc = read_sosp_measured(root, out, err);
	if (rc)
		return rc;
	out->format = SL_PLAN_FORMAT_SOSP25;
	return 0;
}

int sl_plan_from_json(const json_t *root, const char *path, const struct sl_catalogue *cat,
		      struct sl_plan *out, struct sl_err *err)
{
	struct sl_replica *r = out->replicas;
	int *m = out->microbatches;
	int cap = out->capacity, mcap = out->mb_capacity;
	free(out->islands);
	sl_plan_init(out);
	out->replicas = cap ? r : NULL;
	out->microbatches = mcap ? m : NULL;
	out->capacity = cap;
	out->mb_capacity = mcap;
	if (path)
		snprintf(out->path, sizeof(out->path), "%s", path);
	int rc;
	json_t *schema = json_object_get(root, "schema");
	if (!json_is_object(root))
		rc = sl_err_set(err, SL_EINPUT, "top level: expected an object");
	else if (schema && (!json_is_string(schema) ||
			    strcmp(json_string_value(schema), "sailor.plan/1")))
		rc = sl_err_set(err, SL_EINPUT,
				"schema: expected \"sailor.plan/1\" (or a SOSP'25 plan with "
				"\"pipeline_list\")");
	else if (!schema && (json_object_get(root, "pipeline_list") || json_object_get(root, "pipelines")))
		rc = read_sosp(root, cat, out, err);
	else if (!schema && !json_object_get(root, "stages"))
		rc = sl_err_set(err, SL_EINPUT,
				"not a plan: expected {\"schema\": \"sailor.plan/1\", \"micro_batch\", "
				"\"stages\"} or a SOSP'25 plan with \"mbs\" and \"pipeline_list\"");
	else
		rc = read_ours(root, cat, out, err);
	if (rc && path)
		sl_err_prefix(err, "plan '%s'", path);
	return rc;
}

int sl_plan_load(const char *path, const struct sl_catalogue *cat, struct sl_plan *out,
		 struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "plan", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc = sl_plan_from_json(root, path, cat, out, err);
	json_decref(root);
	return rc;
}

/* ---- checks ---- */

static void stage_field(const struct sl_plan *plan, int k, char *buf, size_t size)
{
	if (plan->format == SL_PLAN_FORMAT_SOSP25)
		snprintf(buf, size, "layers_per_stage[%d]", k);
	else
		snprintf(buf, size, "stages[%d].layers", k);
}

static int check_fail(const struct sl_plan *plan, struct sl_err *err)
{
	if (plan->path[0])
		sl_err_prefix(err, "plan '%s'", plan->path);
	return err ? err->code : SL_EINPUT;
}

int sl_plan_check(const struct sl_plan *plan, int num_layers, long long global_batch,
		  const struct sl_catalogue *cat, struct sl_err *err)
{
	char field[64];
	if (plan->micro_batch < 1) {
		sl_err_set(err, SL_EINPUT, "%s: must be at least 1, got %d",
			   plan->format == SL_PLAN_FORMAT_SOSP25 ? "mbs" : "micro_batch", plan->micro_batch);
		return check_fail(plan, err);
	}
	if (global_batch < 1 || global_batch > SL_MAX_GLOBAL_BATCH) {
		sl_err_set(err, SL_EINPUT,
			   "global_batch: must be 1 to %lld, got %lld (set it in the plan or with "
			   "--global-batch)", SL_MAX_GLOBAL_BATCH, global_batch);
		return check_fail(plan, err);
	}
	int next = 0;
	for (int k = 0; k < plan->num_stages; k++) {
		const struct sl_plan_stage *s = &plan->stages[k];
		stage_field(plan, k, field, sizeof(field));
		if (s->first_layer != next) {
			if (s->first_layer > next)
				sl_err_set(err, SL_EINPUT,
					   "%s: starts at layer %d but layer %d is in no stage: stages "
					   "must cover layers 0..%d exactly once, in order",
					   field, s->first_layer, next, num_layers - 1);
			else
				sl_err_set(err, SL_EINPUT,
					   "%s: starts at layer %d, already in the previous stage: stages "
					   "must cover layers 0..%d exactly once, in order",
					   field, s->first_layer, num_layers - 1);
			return check_fail(plan, err);
		}
		if (s->last_layer >= num_layers) {
			sl_err_set(err, SL_EINPUT,
				   "%s: ends at layer %d but the model has layers 0..%d (0 embedding, "
				   "1..%d blocks, %d head)", field, s->last_layer, num_layers - 1,
				   num_layers - 2, num_layers - 1);
			return check_fail(plan, err);
		}
		next = s->last_layer + 1;
		for (int j = 0; j < plan->num_pipelines; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			if (r->gpu < 0 || r->gpu >= cat->gpu_count || r->zone < 0 ||
			    r->zone >= cat->zone_count) {
				sl_err_set(err, SL_EINPUT, "stage %d replica %d: invalid GPU or zone index", k, j);
				return check_fail(plan, err);
			}
			const struct sl_gpu_type *g = &cat->gpus[r->gpu];
			if (r->tp < 1 || r->tp > g->gpus_per_node) {
				if (plan->format == SL_PLAN_FORMAT_SOSP25)
					snprintf(field, sizeof(field), "tmp_per_stage[%d][%d][1]", k, j);
				else
					snprintf(field, sizeof(field), "stages[%d].replicas[%d].tp", k,
						 sl_plan_replica_entry(plan, k, j));
				sl_err_set(err, SL_EINPUT,
					   "%s: TP degree %d is larger than a %s node (%d GPUs): a replica's "
					   "TP group must fit in one node; use tp <= %d", field, r->tp, g->name,
					   g->gpus_per_node, g->gpus_per_node);
				return check_fail(plan, err);
			}
		}
	}
	if (next != num_layers) {
		stage_field(plan, plan->num_stages - 1, field, sizeof(field));
		sl_err_set(err, SL_EINPUT,
			   "%s: the last stage ends at layer %d but the model has layers 0..%d: "
			   "stages must cover every layer", field, next - 1, num_layers - 1);
		return check_fail(plan, err);
	}
	if (sl_plan_microbatch_counts(plan, global_batch, NULL, err))
		return check_fail(plan, err);
	return 0;
}
