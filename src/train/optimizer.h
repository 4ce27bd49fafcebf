/* AdamW over a list of parameters, with global gradient-norm clipping.
 *
 * Semantics match torch.optim.AdamW (1.13) after torch.nn.utils.clip_grad_norm_(max_norm):
 *   norm = sqrt(sum over all gradients of g^2); coef = min(1, max_norm / (norm + 1e-6));
 *   every gradient is used as g * coef (no clipping when grad_clip is 0).
 * Weight decay is applied to the parameters marked `decay` (the matrices of linear layers: QKV,
 * attention projection, MLP fc and projection); biases, LayerNorm parameters and the embedding
 * tables (the tied token table and the position table) are not decayed (minGPT's convention).
 * The moments live in each parameter's exp_avg/exp_avg_sq arrays (param.h). */
#ifndef SL_TRAIN_OPTIMIZER_H
#define SL_TRAIN_OPTIMIZER_H

#include "train/cpu/kernels.h"
#include "train/param.h"

struct sl_adamw_config {
	double beta1, beta2, eps, weight_decay;
	double grad_clip;   /* max gradient norm; 0 disables clipping */
};

/* 2-norm of all gradients (double accumulation, deterministic order). */
double sl_grad_norm(struct sl_param *const *params, int count);

/* One update with learning rate lr; step is the 1-based number of this update (bias
 * correction); grad_norm as returned by sl_grad_norm for the clipping factor. */
void sl_adamw_apply(struct sl_param *const *params, int count, const struct sl_adamw_config *cfg,
		    double lr, long long step, double grad_norm);

/* The per-step scalars of sl_adamw_apply (clipping factor, bias corrections) for an optimizer
 * that updates pieces of tensors itself (runtime/zero.h); s->decay is set for decaying parameters
 * (1 - lr * weight_decay): use 1.0f for the others. */
void sl_adamw_prepare(const struct sl_adamw_config *cfg, double lr, long long step,
		      double grad_norm, struct sl_adamw_step *s);

#endif
