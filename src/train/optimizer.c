/* AdamW with gradient clipping (optimizer.h). The per-step scalars are computed in double as
 * torch does in Python, then each parameter is updated by one fused pass (kernels.h). */
#include "train/optimizer.h"

#include <math.h>

#include "train/cpu/kernels.h"

double sl_grad_norm(struct sl_param *const *params, int count)
{
	double sum = 0.0;
	for (int i = 0; i < count; i++)
		sum += sl_sum_squares(params[i]->grad, (long)params[i]->numel);
	return sqrt(sum);
}

void sl_adamw_prepare(const struct sl_adamw_config *cfg, double lr, long long step,
		      double grad_norm, struct sl_adamw_step *out)
{
	double coef = 1.0;
	if (cfg->grad_clip > 0.0) {
		/* torch computes max_norm / (total_norm + 1e-6) in float32, then clamps to 1 */
		float c = (float)cfg->grad_clip / ((float)grad_norm + 1e-6f);
		coef = c < 1.0f ? c : 1.0f;
	}
	double bc1 = 1.0 - pow(cfg->beta1, (double)step);
	double bc2 = 1.0 - pow(cfg->beta2, (double)step);
	struct sl_adamw_step s = {
		.beta1 = (float)cfg->beta1,
		.one_minus_beta1 = (float)(1.0 - cfg->beta1),
		.beta2 = (float)cfg->beta2,
		.one_minus_beta2 = (float)(1.0 - cfg->beta2),
		.eps = (float)cfg->eps,
		.grad_scale = (float)coef,
		.step_size = (float)(lr / bc1),
		.bias_correction2_sqrt = (float)sqrt(bc2),
		.decay = (float)(1.0 - lr * cfg->weight_decay),
	};
	*out = s;
}

void sl_adamw_apply(struct sl_param *const *params, int count, const struct sl_adamw_config *cfg,
		    double lr, long long step, double grad_norm)
{
	struct sl_adamw_step s;
	sl_adamw_prepare(cfg, lr, step, grad_norm, &s);
	for (int i = 0; i < count; i++) {
		struct sl_param *p = params[i];
		s.decay = p->decay ? (float)(1.0 - lr * cfg->weight_decay) : 1.0f;
		sl_adamw_update(p->value, p->grad, p->exp_avg, p->exp_avg_sq, (long)p->numel, &s);
	}
}
