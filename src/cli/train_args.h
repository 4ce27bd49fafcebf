/* The training options that `sailor train` and `sailor run` share (model, data, batch,
 * schedule, AdamW, checkpoints, output), declared once: each command's option table starts with
 * SL_CLI_TRAIN_OPTIONS, so indices 0 .. SL_TOPT_COUNT-1 are these, in this order, and
 * sl_cli_train_option() parses them into struct sl_train_options. */
#ifndef SL_CLI_TRAIN_ARGS_H
#define SL_CLI_TRAIN_ARGS_H

#include "cli/args.h"
#include "train/trainer.h"

enum {
	SL_TOPT_MODEL, SL_TOPT_DATA, SL_TOPT_MICRO, SL_TOPT_GLOBAL, SL_TOPT_STEPS, SL_TOPT_SEQ,
	SL_TOPT_LR, SL_TOPT_MIN_LR, SL_TOPT_WARMUP, SL_TOPT_DECAY, SL_TOPT_WD, SL_TOPT_BETA1,
	SL_TOPT_BETA2, SL_TOPT_EPS, SL_TOPT_CLIP, SL_TOPT_SEED, SL_TOPT_SHUFFLE, SL_TOPT_CKPT_DIR,
	SL_TOPT_CKPT_EVERY, SL_TOPT_CKPT_KEEP, SL_TOPT_RESUME, SL_TOPT_JSON, SL_TOPT_LOG_EVERY,
	SL_TOPT_RECOMPUTE, SL_TOPT_VAL_DATA, SL_TOPT_EVAL_EVERY, SL_TOPT_VAL_WINDOWS, SL_TOPT_COUNT
};

#define SL_CLI_TRAIN_OPTIONS                                                                   \
	{"model", 'm', "NAME|FILE", "model: a name in data/models/ or a JSON file", NULL},     \
	{"data", 'd', "FILE", "token file (build one with 'sailor data')", NULL},              \
	{"micro-batch", 'b', "B", "sequences per micro-batch", "4"},                           \
	{"global-batch", 'g', "G", "sequences per optimizer step, a multiple of B", "B"},      \
	{"steps", 'n', "N", "train until step N, counted from the start", "100"},              \
	{"seq-len", 's', "S", "tokens per sequence, at most the model's seq_len",              \
	 "the model's"},                                                                       \
	{"lr", 0, "LR", "peak learning rate", "6e-4"},                                         \
	{"min-lr", 0, "LR", "learning rate at the end of the cosine", "lr/10"},                \
	{"warmup-steps", 0, "N", "linear warm-up steps", "0"},                                 \
	{"lr-decay-steps", 0, "N", "step where the cosine reaches --min-lr", "--steps"},       \
	{"weight-decay", 0, "WD", "AdamW weight decay of matrices", "0.1"},                    \
	{"beta1", 0, "B1", "AdamW beta1", "0.9"},                                              \
	{"beta2", 0, "B2", "AdamW beta2", "0.95"},                                             \
	{"eps", 0, "EPS", "AdamW epsilon", "1e-8"},                                            \
	{"grad-clip", 0, "NORM", "clip the global gradient norm (0: off)", "1.0"},             \
	{"seed", 0, "S", "seed of the initial weights and the data shuffle", "1337"},          \
	{"shuffle", 0, NULL, "visit the windows in a new random order each epoch", NULL},      \
	{"ckpt-dir", 0, "DIR", "write checkpoints here: every K steps, at the end, on SIGINT",  \
	 NULL},                                                                                \
	{"ckpt-every", 0, "K", "checkpoint every K steps (0: only at the end)", "0"},          \
	{"ckpt-keep", 0, "N", "keep the newest N checkpoints", "2"},                           \
	{"resume", 0, NULL, "continue from the newest valid checkpoint in --ckpt-dir", NULL},  \
	{"json", 0, NULL, "print one JSON object per step (and one at the end)", NULL},        \
	{"log-every", 0, "N", "print every N-th step", "1"},                                   \
	{"recompute", 0, "MODE",                                                               \
	 "activation recomputation of every block: none, full (keep block inputs only) or "    \
	 "selective (the attention core); sailor run: overrides the plan's per-stage "          \
	 "\"recompute\" (ZeRO-1 needs replicas: it is the plan field \"zero\" only)",          \
	 "none, or the plan's"},                                                               \
	{"val-data", 0, "FILE", "held-out token file (e.g. 'sailor data --val-fraction'): "    \
	 "report its loss with --eval-every", NULL},                                           \
	{"eval-every", 0, "K", "evaluate on --val-data after every K-th step and the last "    \
	 "(forward only: training is unchanged)", NULL},                                        \
	{"val-windows", 0, "N", "evaluate the first N windows of --val-data (of --seq-len+1 "  \
	 "tokens, in file order)", "64"}

/* Parses shared option idx (< SL_TOPT_COUNT) with argument arg into o; the seed goes to *seed
 * (set o->seed from it after parsing). Returns 0 or 2 after printing a usage error. */
int sl_cli_train_option(const struct sl_cli_command *c, int idx, const char *arg,
			struct sl_train_options *o, long long *seed);

/* A whole int option in [min, max] (max clamped to INT_MAX); returns 0 or 2 after printing a
 * usage error naming the option, the value and the range. */
int sl_cli_parse_int(const struct sl_cli_command *c, const char *name, const char *text,
		     long long min, long long max, int *out);

/* The checks between options both commands make (--model when model_required, --data given,
 * betas below 1, --resume / --ckpt-every with --ckpt-dir, --val-data with --eval-every and the
 * reverse, --val-windows with both). Returns 0 or 2 after printing a
 * usage error. */
int sl_cli_train_options_check(const struct sl_cli_command *c, const struct sl_train_options *o,
			       int model_required);

#endif
