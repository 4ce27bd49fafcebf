/* The layer-time slots of an environment, one per (GPU type, micro-batch, TP degree): where a
 * slot lives, and filling it from per-layer times as prefix sums. The loader (env.c) fills the
 * profiled slots and estimate.c the others, both through these; the readers of a layer range
 * are in env.c. Invariants: see internal.h (a filled slot has prefix arrays of L+1 entries,
 * prefix[0] = 0, in one allocation that sl_sim_env_free releases through fwd_prefix).
 */
#include <stdlib.h>

#include "sim/internal.h"

int sl_sim_mbs_slot(int mbs)
{
	/* a power of two below 1 << SL_SIM_MBS_SLOTS: its bit's index (read on every layer-time
	 * lookup, so not a loop over the slots) */
	if (mbs <= 0 || (mbs & (mbs - 1)) || mbs >= 1 << SL_SIM_MBS_SLOTS)
		return -1;
	return __builtin_ctz((unsigned)mbs);
}

struct sl_time_slot *sl_sim_slot_mut(struct sl_sim_env *env, int gpu, int slot, int tp)
{
	return &env->tables->slots[((size_t)gpu * SL_SIM_MBS_SLOTS + (size_t)slot) * SL_SIM_MAX_TP +
				   (size_t)(tp - 1)];
}

double sl_sim_profiled_model_params(const struct sl_layer_sizes *sizes, int tp)
{
	/* The artifact profiles a model of embedding + 2 transformer blocks + head
	 * (third_party/Megatron-DeepSpeed/profile.sh, --num_prof_layers 2; SIMULATOR.md 2.2); for
	 * LLAMA-3-8 the separate final norm layer too, folded into the head here. */
	int L = sizes->num_layers;
	return sizes->params[tp][0] + 2 * sizes->params[tp][1] + sizes->params[tp][L - 1];
}

int sl_sim_fill_slot(struct sl_sim_env *env, struct sl_time_slot *slot, enum sl_time_source src,
		     const double *raw_fwd, const double *raw_bwd, const double *fwd,
		     const double *bwd, const double *upd, double update_per_param,
		     struct sl_err *err)
{
	int L = env->num_layers;
	double *buf = calloc((size_t)(4 * (L + 1) + L), sizeof(double));
	if (!buf)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	slot->fwd_prefix = buf;
	slot->bwd_prefix = buf + (L + 1);
	slot->raw_fwd_prefix = buf + 2 * (L + 1);
	slot->raw_bwd_prefix = buf + 3 * (L + 1);
	slot->raw_update = buf + 4 * (L + 1);
	for (int l = 0; l < L; l++) {
		slot->fwd_prefix[l + 1] = slot->fwd_prefix[l] + fwd[l];
		slot->bwd_prefix[l + 1] = slot->bwd_prefix[l] + bwd[l];
		slot->raw_fwd_prefix[l + 1] = slot->raw_fwd_prefix[l] + raw_fwd[l];
		slot->raw_bwd_prefix[l + 1] = slot->raw_bwd_prefix[l] + raw_bwd[l];
		slot->raw_update[l] = upd[l];
	}
	slot->update_per_param_s = update_per_param;
	slot->source = src;
	return 0;
}
