/* `sailor train`: trains a GPT-2-style model on a token file on this machine's CPU (the
 * single-process runtime core, src/train/trainer.h). Options are declared once in the table
 * below, which drives both parsing and --help. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/train_args.h"
#include "train/trainer.h"
#include "util/limits.h"
#include "util/log.h"

static int run_train(int argc, char **argv);

enum { OPT_THREADS = SL_TOPT_COUNT, OPT_INIT_FROM, OPT_SAVE_ST, OPT_DUMP };

static const struct sl_cli_option options[] = {
	SL_CLI_TRAIN_OPTIONS,
	[OPT_THREADS] = {"threads", 't', "T", "CPU threads for BLAS and kernels", "all cores"},
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
		const char *arg = parser.arg;
		int rc = 0;
		if (idx < SL_TOPT_COUNT)
			rc = sl_cli_train_option(&sl_cmd_train, idx, arg, &o, &seed);
		else if (idx == OPT_THREADS)
			rc = sl_cli_parse_int(&sl_cmd_train, options[idx].name, arg, 1,
					      SL_MAX_THREADS, &o.threads);
		else if (idx == OPT_INIT_FROM)
			o.init_from = arg;
		else if (idx == OPT_SAVE_ST)
			o.save_safetensors = arg;
		else if (idx == OPT_DUMP)
			o.dump_first_step = arg;
		if (rc)
			return rc;
	}
	o.seed = (unsigned long long)seed;
	if (parser.next_index < argc)
		return sl_cli_usage_error(&sl_cmd_train, "unexpected argument '%s'",
					  argv[parser.next_index]);
	int rc = sl_cli_train_options_check(&sl_cmd_train, &o, 1);
	if (rc)
		return rc;
	if (o.resume && o.dump_first_step)
		return sl_cli_usage_error(&sl_cmd_train,
					  "--dump-first-step describes step 1 of a fresh run: drop "
					  "--resume");
	struct sl_err err = {0};
	rc = sl_train_run(&o, stdout, &err);
	if (rc) {
		if (rc == SL_EUSAGE)
			return sl_cli_usage_error(&sl_cmd_train, "%s", err.msg);
		sl_cli_error(&sl_cmd_train, "%s", err.msg);
	}
	return sl_err_exit_status(rc);
}
