/* Shared reporting of the training commands (progress.h). */
#include "train/progress.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

size_t sl_peak_rss_bytes(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (size_t)ru.ru_maxrss * 1024;
}

void sl_print_step(FILE *out, int json, FILE *json_copy, long long step, long long steps,
		   double loss, double lr, double grad_norm, double step_time_s,
		   double tokens_per_step)
{
	double tps = tokens_per_step / step_time_s;
	/* the JSON line is formatted once: stdout (with json) and the copy get the same bytes */
	char line[512];
	snprintf(line, sizeof(line),
		 "{\"event\":\"step\",\"step\":%lld,\"loss\":%.17g,\"lr\":%.17g,"
		 "\"grad_norm\":%.17g,\"step_time_s\":%.6f,\"tokens_per_s\":%.1f}\n",
		 step, loss, lr, grad_norm, step_time_s, tps);
	if (json)
		fputs(line, out);
	else
		fprintf(out,
			"step %5lld/%lld | loss %.4f | lr %.2e | grad norm %.4f | %8.1f ms/step | "
			"%9.0f tokens/s\n",
			step, steps, loss, lr, grad_norm, 1e3 * step_time_s, tps);
	fflush(out);
	if (json_copy) {
		fputs(line, json_copy);
		fflush(json_copy);
	}
}

void sl_print_eval(FILE *out, int json, long long step, double val_loss, long long val_tokens,
		   double eval_s)
{
	if (json)
		fprintf(out, "{\"event\":\"eval\",\"step\":%lld,\"val_loss\":%.17g,"
			"\"val_tokens\":%lld,\"eval_s\":%.6f}\n", step, val_loss, val_tokens, eval_s);
	else
		fprintf(out, "eval after step %lld | val loss %.4f | %lld tokens | %.1f ms\n", step,
			val_loss, val_tokens, 1e3 * eval_s);
	fflush(out);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double sl_median_sort(double *values, long long n)
{
	if (n <= 0)
		return 0.0;
	qsort(values, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

json_t *sl_train_hparams_json(const struct sl_train_options *o, int micro_batch,
			      long long global_batch, int seq)
{
	double min_lr = o->min_lr >= 0 ? o->min_lr : o->lr / 10.0;
	long long decay = o->lr_decay_steps > 0 ? o->lr_decay_steps : o->steps;
	return json_pack("{s:i, s:I, s:i, s:f, s:f, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:b}",
			 "micro_batch", micro_batch, "global_batch", (json_int_t)global_batch,
			 "seq_len", seq, "lr", o->lr, "min_lr", min_lr, "warmup_steps",
			 (json_int_t)o->warmup_steps, "lr_decay_steps", (json_int_t)decay,
			 "weight_decay", o->weight_decay, "beta1", o->beta1, "beta2", o->beta2,
			 "eps", o->eps, "grad_clip", o->grad_clip, "shuffle", o->shuffle);
}

struct sl_lr_schedule sl_train_lr_schedule(const struct sl_train_options *o)
{
	double min_lr = o->min_lr >= 0 ? o->min_lr : o->lr / 10.0;
	long long decay = o->lr_decay_steps > 0 ? o->lr_decay_steps : o->steps;
	return (struct sl_lr_schedule){o->lr, min_lr, o->warmup_steps,
				       decay > o->warmup_steps ? decay : o->warmup_steps};
}

struct sl_adamw_config sl_train_adamw_config(const struct sl_train_options *o)
{
	return (struct sl_adamw_config){o->beta1, o->beta2, o->eps, o->weight_decay, o->grad_clip};
}
