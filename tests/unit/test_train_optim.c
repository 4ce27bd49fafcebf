/* Unit tests for the learning-rate schedule and the optimizer wrapper (src/train/lr_schedule.h,
 * optimizer.h): warm-up, cosine and floor values; the global gradient norm; clipping applied as
 * torch.nn.utils.clip_grad_norm_ does; weight decay only where a parameter is marked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "train/cpu/kernels.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"

static void schedule_values(void **state)
{
	(void)state;
	struct sl_lr_schedule s = {1.0, 0.1, 4, 14};
	assert_true(sl_lr_at(&s, 0) == 0.25);
	assert_true(sl_lr_at(&s, 3) == 1.0);
	assert_true(sl_lr_at(&s, 4) == 1.0);                      /* cosine starts at the peak */
	assert_true(fabs(sl_lr_at(&s, 9) - 0.55) < 1e-12);         /* half way: (max+min)/2 */
	assert_true(fabs(sl_lr_at(&s, 13) - (0.1 + 0.45 * (1 + cos(M_PI * 0.9)))) < 1e-12);
	assert_true(sl_lr_at(&s, 14) == 0.1);
	assert_true(sl_lr_at(&s, 1000) == 0.1);
	struct sl_lr_schedule none = {0.5, 0.05, 0, 10};
	assert_true(sl_lr_at(&none, 0) == 0.5);
	for (long long t = 1; t < 10; t++)
		assert_true(sl_lr_at(&none, t) < sl_lr_at(&none, t - 1));
}

static void clipping_and_decay(void **state)
{
	(void)state;
	assert_int_equal(sl_cpu_set_threads(2, NULL), 0);
	float v1[3] = {1, 1, 1}, g1[3] = {3, 0, 0}, m1[3] = {0}, s1[3] = {0};
	float v2[2] = {1, 1}, g2[2] = {0, 4}, m2[2] = {0}, s2[2] = {0};
	struct sl_param a = {.numel = 3, .decay = 1, .value = v1, .grad = g1, .exp_avg = m1,
			     .exp_avg_sq = s1};
	struct sl_param b = {.numel = 2, .decay = 0, .value = v2, .grad = g2, .exp_avg = m2,
			     .exp_avg_sq = s2};
	struct sl_param *ps[2] = {&a, &b};
	double norm = sl_grad_norm(ps, 2);
	assert_true(fabs(norm - 5.0) < 1e-12);
	struct sl_adamw_config cfg = {0.9, 0.95, 1e-8, 0.5, 1.0};
	sl_adamw_apply(ps, 2, &cfg, 0.1, 1, norm);
	/* clipped g = g / 5 (coef 1/(5+1e-6)); first step: m = 0.1 g, v = 0.05 g^2,
	 * update = lr * m/(1-0.9) / (sqrt(v/(1-0.95)) + eps) = lr * sign(g) */
	assert_true(fabs(m1[0] - 0.1f * 3.0f / 5.0f) < 1e-6);
	assert_true(fabs(v1[0] - (1.0f * (1 - 0.1f * 0.5f) - 0.1f)) < 1e-6); /* decayed, stepped */
	assert_true(fabs(v1[1] - (1.0f - 0.1f * 0.5f)) < 1e-6);                /* zero grad: decay */
	assert_true(fabs(v2[0] - 1.0f) < 1e-7);                                /* no decay */
	assert_true(fabs(v2[1] - 0.9f) < 1e-6);
	/* below the threshold nothing is clipped */
	float v3[1] = {0}, g3[1] = {0.5f}, m3[1] = {0}, s3[1] = {0};
	struct sl_param c = {.numel = 1, .value = v3, .grad = g3, .exp_avg = m3, .exp_avg_sq = s3};
	struct sl_param *pc[1] = {&c};
	sl_adamw_apply(pc, 1, &cfg, 0.1, 1, sl_grad_norm(pc, 1));
	assert_true(fabs(m3[0] - 0.05f) < 1e-8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(schedule_values),
		cmocka_unit_test(clipping_and_decay),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
