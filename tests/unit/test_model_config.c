/* Unit tests for model hyper-parameter loading. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/model_config.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void loads_named_model(void **state)
{
	(void)state;
	struct sl_model_config model;
	struct sl_err err = {0};
	assert_int_equal(sl_model_config_load("OPT-350", &model, &err), 0);
	assert_int_equal(model.num_blocks, 24);
	assert_int_equal(model.hidden, 1024);
	assert_int_equal(sl_model_plan_layers(&model), 26);
	assert_int_equal(model.default_global_batch, 1024);
}

static void unknown_model_is_named(void **state)
{
	(void)state;
	struct sl_model_config model;
	struct sl_err err = {0};
	assert_int_equal(sl_model_config_load("GPT-17", &model, &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "unknown model 'GPT-17'"));
}

static void hidden_must_divide_heads(void **state)
{
	(void)state;
	const char *path = "/tmp/sailor_test_model_bad.json";
	write_file(path, "{\"layers\":2,\"hidden\":10,\"heads\":3,\"seq_len\":8,\"vocab\":16}");
	struct sl_model_config model;
	struct sl_err err = {0};
	assert_int_equal(sl_model_config_load(path, &model, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "not divisible by heads"));
	write_file(path, "{\"layers\":2,\"hidden\":12,\"heads\":3,\"seq_len\":8}");
	assert_int_equal(sl_model_config_load(path, &model, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "vocab: missing field"));
	write_file(path, "{\"layers\":2,");
	assert_int_equal(sl_model_config_load(path, &model, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "line 1"));
	remove(path);
}

static void counts_gpt2_small_parameters(void **state)
{
	(void)state;
	/* GPT-2 small: 124,439,808 parameters with tied head (vocab 50257, 1024 positions). */
	struct sl_model_config model = {.num_blocks = 12, .hidden = 768, .heads = 12,
					.ffn_hidden = 3072, .seq_len = 1024, .vocab = 50257};
	assert_int_equal(sl_model_param_count(&model), 124439808LL);
}

int main(void)
{
	setenv("SAILOR_DATA", "data", 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loads_named_model),
		cmocka_unit_test(unknown_model_is_named),
		cmocka_unit_test(hidden_must_divide_heads),
		cmocka_unit_test(counts_gpt2_small_parameters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
