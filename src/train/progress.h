/* What `sailor train` and `sailor run` report alike: the clock, the peak resident memory, the
 * per-step progress line (text or JSON), the held-out evaluation's line, the median step time,
 * and the hyper-parameters a checkpoint records. One definition, so the two commands' output cannot drift apart. */
#ifndef SL_TRAIN_PROGRESS_H
#define SL_TRAIN_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/trainer.h"
#include "util/clock.h"

/* Peak resident memory of this process so far (getrusage). */
size_t sl_peak_rss_bytes(void);

/* One progress line: {"event":"step","step","loss","lr","grad_norm","step_time_s",
 * "tokens_per_s"} with json, else "step S/N | loss | lr | grad norm | ms/step | tokens/s"; flushed.
 * json_copy (may be NULL): also append the JSON line there, byte for byte the line stdout gets
 * with json, and flush it (`sailor run --events-file`). */
void sl_print_step(FILE *out, int json, FILE *json_copy, long long step, long long steps,
		   double loss, double lr, double grad_norm, double step_time_s,
		   double tokens_per_step);

/* One evaluation on the held-out set (heldout.h) after step: {"event":"eval","step",
 * "val_loss","val_tokens","eval_s"} with json (the loss exactly, %.17g), else
 * "eval after step S | val loss L | N tokens | T ms"; flushed. */
void sl_print_eval(FILE *out, int json, long long step, double val_loss, long long val_tokens,
		   double eval_s);

/* Median of n values (sorts them in place); 0 when n == 0. */
double sl_median_sort(double *values, long long n);

/* The hyper-parameters of a run, as checkpoints record them (new reference). */
json_t *sl_train_hparams_json(const struct sl_train_options *o, int micro_batch,
			      long long global_batch, int seq);

/* The learning-rate schedule and AdamW settings the options describe (min_lr < 0: lr / 10;
 * lr_decay_steps 0: steps). */
struct sl_lr_schedule sl_train_lr_schedule(const struct sl_train_options *o);
struct sl_adamw_config sl_train_adamw_config(const struct sl_train_options *o);

#endif
