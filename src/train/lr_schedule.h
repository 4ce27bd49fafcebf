/* Learning-rate schedule: linear warm-up, then cosine decay to a floor (GPT-3 paper, Brown et
 * al. 2020, appendix B; the form of nanoGPT's get_lr, with warm-up counting step 0 as 1/warmup
 * so that the first update is not wasted):
 *   step < warmup:               lr = max_lr * (step + 1) / warmup
 *   warmup <= step < decay:      lr = min_lr + 0.5 (1 + cos(pi r)) (max_lr - min_lr),
 *                                r = (step - warmup) / (decay - warmup)
 *   step >= decay:               lr = min_lr
 * Steps are 0-based optimizer steps counted from the start of training, so a resumed run
 * follows the same curve. */
#ifndef SL_TRAIN_LR_SCHEDULE_H
#define SL_TRAIN_LR_SCHEDULE_H

struct sl_lr_schedule {
	double max_lr, min_lr;
	long long warmup_steps;  /* >= 0 */
	long long decay_steps;   /* step at which the cosine reaches min_lr (>= warmup_steps) */
};

double sl_lr_at(const struct sl_lr_schedule *s, long long step);

#endif
