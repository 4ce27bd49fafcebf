/* `sailor train`: trains a GPT-2-style model on a token file on this machine's CPU (the
 * single-process runtime core, src/train/trainer.h). Options are declared once in the table
 * below, which drives both parsing and --help. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/options.h"
#include "train/trainer.h"
#include "util/limits.h"
#include "util/log.h"

static int run_train(int argc, char **argv);

enum {
	OPT_MODEL, OPT_DATA, OPT_MICRO, OPT_GLOBAL, OPT_STEPS, OPT_THREADS, OPT_SEQ, OPT_LR,
	OPT_MIN_LR, OPT_WARMUP, OPT_DECAY, OPT_WD, OPT_BETA1, OPT_BETA2, OPT_EPS, OPT_CLIP,
	OPT_SEED, OPT_SHUFFLE, OPT_CKPT_DIR, OPT_CKPT_EVERY, OPT_CKPT_KEEP, OPT_RESUME, OPT_JSON,
	OPT_LOG_EVERY, OPT_INIT_FROM, OPT_SAVE_ST, OPT_DUMP,
};

static const struct sl_cli_option options[] = {
	[OPT_MODEL] = {"model", 'm', "NAME|FILE", "model: a name in data/models/ or a JSON file", NULL},
	[OPT_DATA] = {"data", 'd', "FILE", "token file (build one with 'sailor data')", NULL},
	[OPT_MICRO] = {"micro-batch", 'b', "B", "sequences per micro-batch", "4"},
	[OPT_GLOBAL] = {"global-batch", 'g', "G", "sequences per optimizer step, a multiple of B",
			"B"},
	[OPT_STEPS] = {"steps", 'n', "N", "train until step N, counted from the start", "100"},
	[OPT_THREADS] = {"threads", 't', "T", "CPU threads for BLAS and kernels", "all cores"},
	[OPT_SEQ] = {"seq-len", 's', "S", "tokens per sequence, at most the model's seq_len",
		     "the model's"},
	[OPT_LR] = {"lr", 0, "LR", "peak learning rate", "6e-4"},
	[OPT_MIN_LR] = {"min-lr", 0, "LR", "learning rate at the end of the cosine", "lr/10"},
	[OPT_WARMUP] = {"warmup-steps", 0, "N", "linear warm-up steps", "0"},
	[OPT_DECAY] = {"lr-decay-steps", 0, "N", "step where the cosine reaches --min-lr",
		       "--steps"},
	[OPT_WD] = {"weight-decay", 0, "WD", "AdamW weight decay of matrices", "0.1"},
	[OPT_BETA1] = {"beta1", 0, "B1", "AdamW beta1", "0.9"},
	[OPT_BETA2] = {"beta2", 0, "B2", "AdamW beta2", "0.95"},
	[OPT_EPS] = {"eps", 0, "EPS", "AdamW epsilon", "1e-8"},
	[OPT_CLIP] = {"grad-clip", 0, "NORM", "clip the global gradient norm (0: off)", "1.0"},
	[OPT_SEED] = {"seed", 0, "S", "seed of the initial weights and the data shuffle", "1337"},
	[OPT_SHUFFLE] = {"shuffle", 0, NULL, "visit the windows in a new random order each epoch",
			 NULL},
	[OPT_CKPT_DIR] = {"ckpt-dir", 0, "DIR", "write checkpoints here: every K steps, at the end, on SIGINT",
			  NULL},
	[OPT_CKPT_EVERY] = {"ckpt-every", 0, "K", "checkpoint every K steps (0: only at the end)",
			    "0"},
	[OPT_CKPT_KEEP] = {"ckpt-keep", 0, "N", "keep the newest N checkpoints", "2"},
	[OPT_RESUME] = {"resume", 0, NULL, "continue from the newest valid checkpoint in --ckpt-dir",
			NULL},
	[OPT_JSON] = {"json", 0, NULL, "print one JSON object per step (and one at the end)", NULL},
	[OPT_LOG_EVERY] = {"log-every", 0, "N", "print every N-th step", "1"},
	[OPT_INIT_FROM] = {"init-from", 0, "FILE", "initial weights from a safetensors file", NULL},
	[OPT_SAVE_ST] = {"save-safetensors", 0, "FILE", "export the final weights as safetensors",
			 NULL},
	[OPT_DUMP] = {"dump-first-step", 0, "FILE",
		      "write step 1's logits, loss and gradients (safetensors) for comparisons",
		      NULL},
};

const struct sl_cli_command sl_cmd_train = {
	.name = "train",
	.synopsis = "--model M --data FILE [--micro-batch B] [--global-batch G] [--steps N] "
		    "[options]",
	.summary = "train a GPT model on this machine's CPU",
	.description =
		"Trains a GPT-2-style decoder (learned positions, pre-LayerNorm, causal attention, "
		"GELU MLP,\ntied embedding and head) in fp32 with AdamW, warm-up + cosine learning "
		"rate, gradient\nclipping and accumulation over G/B micro-batches. With --ckpt-dir, "
		"checkpoints are written\natomically; --resume continues from the newest valid one "
		"bit-identically.",
	.options = options,
	.option_count = sizeof(options) / sizeof(options[0]),
	.run = run_train,
};

static int parse_int(const char *name, const char *text, long long min, long long max, int *out)
{
	long long v;
	int rc = sl_cli_parse_long(&sl_cmd_train, name, text, min, max, &v);
	if (rc)
		return rc;
	*out = (int)v;
	return 0;
}

static int run_train(int argc, char **argv)
{
	struct sl_train_options o;
	sl_train_options_defaults(&o);
	struct sl_cli_parser parser;
	sl_cli_parser_init(&parser, &sl_cmd_train, argc, argv);
	long long seed = (long long)o.seed;
	for (int idx; (idx = sl_cli_next(&parser)) != SL_CLI_END;) {
		if (idx == SL_CLI_ERROR)
			return 2;
		if (idx == SL_CLI_HELP)
			return 0;
		const char *arg = parser.arg, *name = options[idx].name;
		const struct sl_cli_command *c = &sl_cmd_train;
		int rc = 0;
		switch (idx) {
		case OPT_MODEL: o.model = arg; break;
		case OPT_DATA: o.data = arg; break;
		case OPT_MICRO:
			rc = parse_int(name, arg, 1, SL_MAX_MICRO_BATCH, &o.micro_batch);
			break;
		case OPT_GLOBAL:
			rc = sl_cli_parse_long(c, name, arg, 1, SL_MAX_GLOBAL_BATCH, &o.global_batch);
			break;
		case OPT_STEPS:
			rc = sl_cli_parse_long(c, name, arg, 0, SL_MAX_STEPS, &o.steps);
			break;
		case OPT_THREADS: rc = parse_int(name, arg, 1, SL_MAX_THREADS, &o.threads); break;
		case OPT_SEQ: rc = parse_int(name, arg, 1, SL_MAX_SEQ_LEN, &o.seq_len); break;
		case OPT_LR: rc = sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_LR, &o.lr); break;
		case OPT_MIN_LR:
			rc = sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_LR, &o.min_lr);
			break;
		case OPT_WARMUP:
			rc = sl_cli_parse_long(c, name, arg, 0, SL_MAX_STEPS, &o.warmup_steps);
			break;
		case OPT_DECAY:
			rc = sl_cli_parse_long(c, name, arg, 1, SL_MAX_STEPS, &o.lr_decay_steps);
			break;
		case OPT_WD:
			rc = sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_WEIGHT_DECAY, &o.weight_decay);
			break;
		case OPT_BETA1:
			rc = sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_ADAM_BETA, &o.beta1);
			break;
		case OPT_BETA2:
			rc = sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_ADAM_BETA, &o.beta2);
			break;
		case OPT_EPS:
			rc = sl_cli_parse_double(c, name, arg, SL_MIN_ADAM_EPS, SL_MAX_ADAM_EPS, &o.eps);
			break;
		case OPT_CLIP:
			rc = sl_cli_parse_double(c, name, arg, 0.0, SL_MAX_GRAD_CLIP, &o.grad_clip);
			break;
		case OPT_SEED: rc = sl_cli_parse_long(c, name, arg, 0, INT64_MAX, &seed); break;
		case OPT_SHUFFLE: o.shuffle = 1; break;
		case OPT_CKPT_DIR: o.ckpt_dir = arg; break;
		case OPT_CKPT_EVERY:
			rc = sl_cli_parse_long(c, name, arg, 0, SL_MAX_STEPS, &o.ckpt_every);
			break;
		case OPT_CKPT_KEEP: rc = parse_int(name, arg, 1, 1 << 20, &o.ckpt_keep); break;
		case OPT_RESUME: o.resume = 1; break;
		case OPT_JSON: o.json = 1; break;
		case OPT_LOG_EVERY:
			rc = sl_cli_parse_long(c, name, arg, 1, SL_MAX_STEPS, &o.log_every);
			break;
		case OPT_INIT_FROM: o.init_from = arg; break;
		case OPT_SAVE_ST: o.save_safetensors = arg; break;
		case OPT_DUMP: o.dump_first_step = arg; break;
		}
		if (rc)
			return rc;
	}
	o.seed = (unsigned long long)seed;
	if (parser.next_index < argc)
		return sl_cli_usage_error(&sl_cmd_train, "unexpected argument '%s'",
					  argv[parser.next_index]);
	if (!o.model)
		return sl_cli_usage_error(&sl_cmd_train, "--model is required (a name such as "
					  "gpt2-tiny, or a JSON file)");
	if (!o.data)
		return sl_cli_usage_error(&sl_cmd_train, "--data is required (a token file from "
					  "'sailor data')");
	if ((o.resume || o.ckpt_every) && !o.ckpt_dir)
		return sl_cli_usage_error(&sl_cmd_train, "--%s needs --ckpt-dir",
					  o.resume ? "resume" : "ckpt-every");
	if (o.resume && o.dump_first_step)
		return sl_cli_usage_error(&sl_cmd_train,
					  "--dump-first-step describes step 1 of a fresh run: drop "
					  "--resume");
	struct sl_err err = {0};
	int rc = sl_train_run(&o, stdout, &err);
	if (rc) {
		if (rc == SL_EUSAGE)
			return sl_cli_usage_error(&sl_cmd_train, "%s", err.msg);
		sl_log_error("%s", err.msg);
	}
	return sl_err_exit_status(rc);
}
