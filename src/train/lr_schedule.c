/* Warm-up + cosine learning rate (formula in lr_schedule.h). */
#include "train/lr_schedule.h"

#include <math.h>

double sl_lr_at(const struct sl_lr_schedule *s, long long step)
{
	if (step < s->warmup_steps)
		return s->max_lr * (double)(step + 1) / (double)s->warmup_steps;
	if (step >= s->decay_steps)
		return s->min_lr;
	double ratio = (double)(step - s->warmup_steps) / (double)(s->decay_steps - s->warmup_steps);
	double coeff = 0.5 * (1.0 + cos(M_PI * ratio));
	return s->min_lr + coeff * (s->max_lr - s->min_lr);
}
