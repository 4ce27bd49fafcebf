/* Estimated layer times for GPU types that have no profile of the model (and for models given
 * as hyper-parameter files, which have none at all). Results are flagged SL_TIME_ESTIMATED.
 *
 * The reference is OPT-350, profiled on every GPU type the artifact measured
 * (data/profiles/OPT-350/). For a GPU type g, micro-batch b and TP degree t:
 *   ref(g, kind, phase)  the OPT-350 time of one layer of that kind (embedding = layer 0,
 *                        transformer block = layer 2, head = last layer) at (b, t) on g; if the
 *                        profile lacks (b, t): the nearest micro-batch at the same t, scaled
 *                        linearly in b; else the nearest t, scaled by t'/t. A GPU type with no
 *                        OPT-350 profile uses its catalogue "estimate_from" type scaled by the
 *                        ratio of peak fp32 FLOP/s (profiles are fp32).
 * Then, for the model's layer l of kind k:
 *   E1 (the model has a profile on another GPU type m with (b, t)):
 *        time_l(g) = time_l(m) · ref(g, k) / ref(m, k)   — the model's own measurement carried
 *        across GPU types by how the two GPUs compare on the same kind of layer;
 *   E2 (no profile of the model with (b, t) anywhere):
 *        time_l(g) = ref(g, k) · FLOPs_l / FLOPs_ref(k)  — the FLOP rate g achieved on that kind
 *        of layer of OPT-350 at (b, t) (FLOPs from layer_sizes.c).
 * The optimizer step scales the same way per parameter. The estimate ignores that larger layers
 * run at higher efficiency than OPT-350's (so E2 tends to over-estimate big models' times).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/internal.h"

#define REF_MODEL "OPT-350"

struct ref {
	struct sl_model_config model;
	struct sl_layer_sizes *sizes;
	struct sl_profile *prof[SL_MAX_GPU_TYPES];
	int own; /* prof[] borrowed from the env (the model is OPT-350 itself) */
};

static int ref_layer(const struct ref *r, enum sl_layer_kind kind)
{
	int L = r->sizes->num_layers;
	switch (kind) {
	case SL_LAYER_EMBEDDING: return 0;
	case SL_LAYER_BLOCK: return 2;
	case SL_LAYER_HEAD: return L - 1;
	}
	return 2;
}

/* One layer's time (phase 0 fwd, 1 bwd, 2 update per parameter) from a profile at (b, t), with
 * the nearest-entry scaling above; < 0 when the profile is empty. */
static double prof_time(const struct ref *r, const struct sl_profile *p, int b, int t, int layer,
			int phase)
{
	const struct sl_profile_entry *best = NULL;
	double best_d = 1e300;
	for (int i = 0; i < p->entry_count; i++) {
		const struct sl_profile_entry *e = &p->entries[i];
		/* nearest entry: any TP mismatch (weight 1000, plus 100 per factor of 2) ranks behind
		 * every micro-batch mismatch at the right TP (|log2 b'/b| <= 10); ties go to the
		 * larger b (0.01), whose measurement is less dominated by launch overheads. These
		 * are ordering weights, not physical constants. */
		double d = (e->tp != t ? 1000.0 + fabs(log2((double)e->tp / t)) * 100.0 : 0.0) +
			   fabs(log2((double)e->mbs / b)) - (e->mbs > b ? 0.01 : 0.0);
		if (d < best_d) {
			best_d = d;
			best = e;
		}
	}
	if (!best)
		return -1.0;
	double scale = (double)b / best->mbs * (double)best->tp / t;
	if (phase == 0)
		return best->fwd_s[layer] * scale;
	if (phase == 1)
		return best->bwd_s[layer] * scale;
	double upd = 0;
	for (int l = 0; l < p->num_layers; l++)
		upd = fmax(upd, best->update_s[l]);
	return upd / sl_sim_profiled_model_params(r->sizes, best->tp);
}

/* ref(g, kind, phase) with the GPU stand-in; < 0 when there is nothing to go on. */
static double ref_time(const struct sl_sim_env *env, const struct ref *r, int g, int b, int t,
		       enum sl_layer_kind kind, int phase)
{
	const struct sl_gpu_type *gt = &env->catalogue.gpus[g];
	if (r->prof[g]) {
		double v = prof_time(r, r->prof[g], b, t, ref_layer(r, kind), phase);
		if (v > 0 || phase != 2)
			return v;
		/* an unmeasured optimizer step (update_s 0, the A100-80 profiles): the stand-in's */
	}
	int alt = gt->estimate_from;
	if (alt == g || !r->prof[alt])
		return -1.0;
	const struct sl_gpu_type *at = &env->catalogue.gpus[alt];
	double speed = (gt->peak_fp32_flops > 0 && at->peak_fp32_flops > 0)
			       ? at->peak_fp32_flops / gt->peak_fp32_flops
			       : 1.0;
	if (phase == 2 && gt->memory_bandwidth_bps > 0 && at->memory_bandwidth_bps > 0)
		speed = at->memory_bandwidth_bps / gt->memory_bandwidth_bps; /* Adam is memory-bound */
	return prof_time(r, r->prof[alt], b, t, ref_layer(r, kind), phase) * speed;
}

static int load_ref(const struct sl_sim_env *env, const char *data_dir, const char *overlay,
		    struct ref *r, struct sl_err *err)
{
	memset(r, 0, sizeof(*r));
	if (!strcmp(env->model.name, REF_MODEL) && env->named_model) {
		r->model = env->model;
		r->sizes = env->sizes;
		for (int g = 0; g < env->catalogue.gpu_count; g++)
			r->prof[g] = env->profiles[g];
		return 0;
	}
	r->own = 1;
	int rc = sl_model_config_load(REF_MODEL, &r->model, err);
	if (!rc)
		rc = sl_layer_sizes_load(&r->model, data_dir, &r->sizes, err);
	for (int g = 0; !rc && g < env->catalogue.gpu_count; g++) {
		char path[SL_PROFILE_PATH_MAX];
		struct stat st;
		sl_profile_locate(path, sizeof(path), data_dir, overlay,
				  REF_MODEL, env->catalogue.gpus[g].name);
		if (stat(path, &st) != 0)
			continue;
		rc = sl_profile_load(path, r->sizes->num_layers, &r->prof[g], err);
	}
	return rc;
}

static void free_ref(struct ref *r)
{
	if (!r->own)
		return;
	for (int g = 0; g < SL_MAX_GPU_TYPES; g++)
		sl_profile_free(r->prof[g]);
	sl_layer_sizes_free(r->sizes);
}

/* ref_time of one layer kind at (b, t) on g, and on m (the E1 source; m < 0: none), forward
 * and backward. The times depend on the kind, not the layer: computed once per kind (each one
 * scans the reference profile's entries), for every layer of that kind. */
struct ref_times {
	double g_fwd, g_bwd, m_fwd, m_bwd;
};

struct kind_times {
	int known[SL_LAYER_HEAD + 1];
	struct ref_times of[SL_LAYER_HEAD + 1];
};

static const struct ref_times *kind_times_of(const struct sl_sim_env *env, const struct ref *r,
					     int g, int m, int b, int t, enum sl_layer_kind k,
					     struct kind_times *kt)
{
	struct ref_times *rt = &kt->of[k];
	if (!kt->known[k]) {
		kt->known[k] = 1;
		rt->g_fwd = ref_time(env, r, g, b, t, k, 0);
		rt->g_bwd = ref_time(env, r, g, b, t, k, 1);
		rt->m_fwd = m >= 0 ? ref_time(env, r, m, b, t, k, 0) : 0;
		rt->m_bwd = m >= 0 ? ref_time(env, r, m, b, t, k, 1) : 0;
	}
	return rt;
}

/* The GPU type whose profile of the model carries over to g at (b, t) (E1), or -1. */
static int own_source(const struct sl_sim_env *env, int g, int b, int t)
{
	int alt = env->catalogue.gpus[g].estimate_from;
	if (alt != g && env->profiles[alt] && sl_profile_find(env->profiles[alt], b, t))
		return alt;
	for (int m = 0; m < env->catalogue.gpu_count; m++)
		if (env->profiles[m] && sl_profile_find(env->profiles[m], b, t))
			return m;
	return -1;
}

/* A profile that did not measure the optimizer step (update_s 0 in every layer: the artifact's
 * A100-80 profiles, LLAMA-3-8 and OPT-30 on A100-40 and V100-16) gets the step per parameter
 * OPT-350 measured on that GPU type at that TP degree (Adam's cost per parameter does not depend
 * on the model), else the stand-in type's scaled by memory bandwidth (ref_time). The sosp25
 * model keeps the raw 0, as that simulator would. */
static void fill_missing_updates(struct sl_sim_env *env, const struct ref *r)
{
	for (int g = 0; g < env->catalogue.gpu_count; g++)
		for (int s = 0; s < SL_SIM_MBS_SLOTS; s++)
			for (int t = 1; t <= SL_SIM_MAX_TP; t++) {
				struct sl_time_slot *slot = sl_sim_slot_mut(env, g, s, t);
				if (slot->source != SL_TIME_PROFILED || slot->update_per_param_s > 0)
					continue;
				double v = ref_time(env, r, g, 1 << s, t, SL_LAYER_BLOCK, 2);
				if (v > 0)
					slot->update_per_param_s = v;
			}
}

int sl_sim_estimate_times(struct sl_sim_env *env, const char *data_dir, const char *overlay,
			  struct sl_err *err)
{
	int L = env->num_layers, need = 0;
	for (int g = 0; g < env->catalogue.gpu_count; g++) {
		need |= env->profiles[g] == NULL;
		for (int s = 0; s < SL_SIM_MBS_SLOTS && !need; s++)
			for (int t = 1; t <= SL_SIM_MAX_TP && !need; t++) {
				const struct sl_time_slot *slot = sl_sim_slot_mut(env, g, s, t);
				need = slot->source == SL_TIME_PROFILED && !(slot->update_per_param_s > 0);
			}
	}
	if (!need)
		return 0;
	struct ref r;
	int rc = load_ref(env, data_dir, overlay, &r, err);
	if (rc) {
		free_ref(&r);
		return sl_err_prefix(err, "estimating layer times from the reference model %s", REF_MODEL);
	}
	double *buf = malloc((size_t)L * 3 * sizeof(double));
	if (!buf) {
		free_ref(&r);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	fill_missing_updates(env, &r);
	double *fwd = buf, *bwd = buf + L, *upd = buf + 2 * L;
	const struct sl_layer_sizes *rs = r.sizes;
	for (int g = 0; !rc && g < env->catalogue.gpu_count; g++) {
		if (env->profiles[g])
			continue;
		int max_tp = env->catalogue.gpus[g].gpus_per_node;
		if (max_tp > SL_SIM_MAX_TP)
			max_tp = SL_SIM_MAX_TP;
		for (int s = 0; !rc && s < SL_SIM_MBS_SLOTS; s++) {
			int b = 1 << s;
			for (int t = 1; !rc && t <= max_tp; t++) {
				int m = own_source(env, g, b, t), ok = 1;
				const struct sl_profile_entry *e = m >= 0 ? sl_profile_find(env->profiles[m], b, t) : NULL;
				double per_param = 0;
				struct kind_times kt = {0};
				for (int l = 0; l < L && ok; l++) {
					enum sl_layer_kind k = env->sizes->kind[l];
					const struct ref_times *rt = kind_times_of(env, &r, g, m, b, t, k, &kt);
					double rf = rt->g_fwd, rb = rt->g_bwd;
					if (rf < 0 || rb < 0) {
						ok = 0;
						break;
					}
					if (e) { /* E1 */
						double mf = rt->m_fwd, mb = rt->m_bwd;
						fwd[l] = mf > 0 ? e->fwd_s[l] * rf / mf : rf;
						bwd[l] = mb > 0 ? e->bwd_s[l] * rb / mb : rb;
					} else { /* E2 */
						double ratio = env->sizes->fwd_flops[l] /
							       rs->fwd_flops[ref_layer(&r, k)];
						fwd[l] = rf * ratio;
						bwd[l] = rb * ratio;
					}
				}
				if (!ok)
					continue;
				double rp = ref_time(env, &r, g, b, t, SL_LAYER_BLOCK, 2);
				if (e) {
					double mp = ref_time(env, &r, m, b, t, SL_LAYER_BLOCK, 2);
					double own = 0;
					for (int l = 0; l < L; l++)
						own = fmax(own, e->update_s[l]);
					own /= sl_sim_profiled_model_params(env->sizes, t);
					per_param = own > 0 && mp > 0 ? own * rp / mp : rp;
				} else {
					per_param = rp;
				}
				/* the sosp25 model reads update_s of a stage's first layer: give every layer
				 * the estimated step of a profiled (embedding + 2 blocks + head) model */
				double step = per_param * sl_sim_profiled_model_params(env->sizes, t);
				for (int l = 0; l < L; l++)
					upd[l] = step;
				rc = sl_sim_fill_slot(env, sl_sim_slot_mut(env, g, s, t), SL_TIME_ESTIMATED,
						      fwd, bwd, fwd, bwd, upd, per_param, err);
			}
		}
	}
	free(buf);
	free_ref(&r);
	return rc;
}
