/* The single-process training loop: model + data + AdamW + schedule + checkpoints + progress.
 *
 * One optimizer step = global_batch / micro_batch micro-batches, each run forward and backward
 * through every layer with loss scale 1/micro-batches (gradient accumulation), then the global
 * gradient norm, clipping, the learning rate of this step and one AdamW update. Steps are
 * counted from the start of training: --steps N stops after step N, also after a resume, which
 * restores weights, moments, step, data position and RNG state from the newest valid checkpoint
 * and continues bit-identically (same losses as a run never interrupted, given the same
 * options and thread count).
 *
 * Output (to `out`): without json, a few header lines, one line per logged step (step, loss,
 * learning rate, gradient norm, ms/step, tokens/s) and a summary; with json, one JSON object
 * per logged step {"event":"step","step","loss","lr","grad_norm","step_time_s",
 * "tokens_per_s"} and a final {"event":"end",...} with timings and the memory accounting.
 * With val_data, after every eval_every-th step and after the last one (not after a stop by
 * signal), the loss on the held-out set (heldout.h) with the weights of that step: a line
 * "eval after step S | val loss ..." or {"event":"eval","step","val_loss","val_tokens",
 * "eval_s"}. The evaluation runs the forward pass only and touches no state the training
 * depends on: the losses of a run are bit-identical with and without it.
 * Warnings and errors go to stderr.
 */
#ifndef SL_TRAIN_TRAINER_H
#define SL_TRAIN_TRAINER_H

#include <stdio.h>

#include "util/err.h"

struct sl_train_options {
	const char *model;         /* name (data/models/<name>.json) or path */
	const char *data;          /* token file */
	int micro_batch;
	long long global_batch;    /* 0: micro_batch */
	long long steps;
	int threads;               /* 0: every online CPU */
	int seq_len;               /* 0: the model's seq_len */
	double lr, min_lr;         /* min_lr < 0: lr / 10 */
	long long warmup_steps;
	long long lr_decay_steps;  /* 0: steps */
	double weight_decay, beta1, beta2, eps, grad_clip;
	unsigned long long seed;
	int shuffle;
	const char *ckpt_dir;      /* NULL: no checkpoints */
	long long ckpt_every;      /* 0: only at the end */
	int ckpt_keep;
	int resume;
	int json;
	long long log_every;
	int recompute;             /* enum sl_gpt_recompute; -1 (the default): none in `sailor
				    * train`, each stage's plan field in `sailor run` */
	const char *val_data;      /* held-out token file (heldout.h), or NULL: no evaluation */
	long long eval_every;      /* evaluate after every K-th step and after the last (0: never;
				    * needs val_data, and val_data needs it) */
	long long val_windows;     /* evaluate at most the first N windows of val_data (0:
				    * SL_HELDOUT_DEFAULT_WINDOWS) */
	const char *init_from;         /* safetensors with initial weights, or NULL */
	const char *save_safetensors;  /* export the final weights, or NULL */
	const char *dump_first_step;   /* safetensors with step 1's logits, loss and gradients */
};

void sl_train_options_defaults(struct sl_train_options *o);

struct sl_model_config;
/* Model FLOPs per trained token (forward + backward) at sequence length seq, PaLM's count:
 * 6 per weight of the matrix products (blocks and the tied LM head) + 12 * layers * hidden *
 * seq for attention (Chowdhery et al. 2022, appendix B). */
double sl_train_flops_per_token(const struct sl_model_config *m, int seq);

/* Runs the training described by o. Returns 0, or a negative SL_E* with err filled. */
int sl_train_run(const struct sl_train_options *o, FILE *out, struct sl_err *err);

#endif
