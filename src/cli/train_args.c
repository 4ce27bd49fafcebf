/* Parsing of the training options shared by `sailor train` and `sailor run` (train_args.h). */
#include "cli/train_args.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "train/gpt_layers.h"

#include "util/limits.h"

int sl_cli_parse_int(const struct sl_cli_command *c, const char *name, const char *text,
		     long long min, long long max, int *out)
{
	long long v;
	int rc = sl_cli_parse_long(c, name, text, min, max < INT_MAX ? max : INT_MAX, &v);
	if (rc)
		return rc;
	*out = (int)v;
	return 0;
}

int sl_cli_train_option(const struct sl_cli_command *c, int idx, const char *arg,
			struct sl_train_options *o, long long *seed)
{
	const char *name = c->options[idx].name;
	switch (idx) {
	case SL_TOPT_MODEL: o->model = arg; return 0;
	case SL_TOPT_DATA: o->data = arg; return 0;
	case SL_TOPT_MICRO: return sl_cli_parse_int(c, name, arg, 1, SL_MAX_MICRO_BATCH, &o->micro_batch);
	case SL_TOPT_GLOBAL: return sl_cli_parse_long(c, name, arg, 1, SL_MAX_GLOBAL_BATCH, &o->global_batch);
	case SL_TOPT_STEPS: return sl_cli_parse_long(c, name, arg, 0, SL_MAX_STEPS, &o->steps);
	case SL_TOPT_SEQ: return sl_cli_parse_int(c, name, arg, 1, SL_MAX_SEQ_LEN, &o->seq_len);
	case SL_TOPT_LR: return sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_LR, &o->lr);
	case SL_TOPT_MIN_LR: return sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_LR, &o->min_lr);
	case SL_TOPT_WARMUP: return sl_cli_parse_long(c, name, arg, 0, SL_MAX_STEPS, &o->warmup_steps);
	case SL_TOPT_DECAY: return sl_cli_parse_long(c, name, arg, 1, SL_MAX_STEPS, &o->lr_decay_steps);
	case SL_TOPT_WD: return sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_WEIGHT_DECAY,
					   &o->weight_decay);
	case SL_TOPT_BETA1: return sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_ADAM_BETA, &o->beta1);
	case SL_TOPT_BETA2: return sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_ADAM_BETA, &o->beta2);
	case SL_TOPT_EPS: return sl_cli_parse_double(c, name, arg, SL_MIN_ADAM_EPS, SL_MAX_ADAM_EPS,
					   &o->eps);
	case SL_TOPT_CLIP: return sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_GRAD_CLIP, &o->grad_clip);
	case SL_TOPT_SEED: return sl_cli_parse_long(c, name, arg, 0, INT64_MAX, seed);
	case SL_TOPT_SHUFFLE: o->shuffle = 1; return 0;
	case SL_TOPT_CKPT_DIR: o->ckpt_dir = arg; return 0;
	case SL_TOPT_CKPT_EVERY: return sl_cli_parse_long(c, name, arg, 0, SL_MAX_STEPS, &o->ckpt_every);
	case SL_TOPT_CKPT_KEEP: return sl_cli_parse_int(c, name, arg, 1, 1 << 20, &o->ckpt_keep);
	case SL_TOPT_RESUME: o->resume = 1; return 0;
	case SL_TOPT_JSON: o->json = 1; return 0;
	case SL_TOPT_LOG_EVERY: return sl_cli_parse_long(c, name, arg, 1, SL_MAX_STEPS, &o->log_every);
	case SL_TOPT_RECOMPUTE:
		for (int r = SL_GPT_RECOMPUTE_NONE; r <= SL_GPT_RECOMPUTE_SELECTIVE; r++)
			if (!strcmp(arg, sl_gpt_recompute_name(r))) {
				o->recompute = r;
				return 0;
			}
		return sl_cli_usage_error(c, "--recompute '%s': choose none, full or selective",
					  arg);
	case SL_TOPT_VAL_DATA: o->val_data = arg; return 0;
	case SL_TOPT_EVAL_EVERY: return sl_cli_parse_long(c, name, arg, 1, SL_MAX_STEPS, &o->eval_every);
	case SL_TOPT_VAL_WINDOWS:
		return sl_cli_parse_long(c, name, arg, 1, SL_MAX_VAL_WINDOWS, &o->val_windows);
	}
	return 0;
}

int sl_cli_train_options_check(const struct sl_cli_command *c, const struct sl_train_options *o,
			       int model_required)
{
	if (!o->model && model_required)
		return sl_cli_usage_error(c, "--model is required (a name such as gpt2-tiny, or a "
					  "JSON file)");
	if (!o->data)
		return sl_cli_usage_error(c, "--data is required (a token file from 'sailor data')");
	if (o->beta1 >= 1.0 || o->beta2 >= 1.0)
		return sl_cli_usage_error(c, "--beta1 and --beta2 must be below 1");
	if (o->eval_every && !o->val_data)
		return sl_cli_usage_error(c, "--eval-every needs --val-data FILE (a held-out token "
					  "file, e.g. from 'sailor data --val-fraction')");
	if (o->val_data && !o->eval_every)
		return sl_cli_usage_error(c, "--val-data needs --eval-every K (evaluate after every "
					  "K-th step and after the last)");
	if (o->val_windows && !o->val_data)
		return sl_cli_usage_error(c, "--val-windows needs --val-data FILE and --eval-every K");
	if ((o->resume || o->ckpt_every) && !o->ckpt_dir)
		return sl_cli_usage_error(c, "--%s needs --ckpt-dir", o->resume ? "resume" :
					  "ckpt-every");
	return 0;
}
