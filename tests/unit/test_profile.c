/* Unit tests for profile files and per-layer sizes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/layer_sizes.h"
#include "profile/profile.h"
#include "util/json.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* SIMULATOR.md section 2.2 example: OPT-350 A100-40, mbs 1, tp 1. */
static void loads_the_artifact_profile(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_profile *p = NULL;
	assert_int_equal(sl_profile_load("data/profiles/OPT-350/A100-40.json", 26, &p, &err), 0);
	assert_int_equal(p->num_layers, 26);
	assert_int_equal(p->entry_count, 12); /* mbs {1,2,4,8} x tp {1,2,4} */
	const struct sl_profile_entry *e = sl_profile_find(p, 1, 1);
	assert_non_null(e);
	assert_true(e->fwd_s[0] == 0.0004 && e->bwd_s[0] == 3e-06 && e->update_s[0] == 0.002938);
	for (int l = 2; l <= 24; l++)
		assert_true(e->fwd_s[l] == 0.002314 && e->bwd_s[l] == 0.005909);
	assert_true(e->fwd_s[25] == 0.004508 && e->bwd_s[25] == 0.003989);
	assert_null(sl_profile_find(p, 16, 1));
	assert_null(sl_profile_find(p, 1, 8));
	char buf[512];
	assert_non_null(strstr(sl_profile_entries_text(p, buf, sizeof(buf)), "mbs 8 tp 4"));
	sl_profile_free(p);
	/* GH-96 lists mbs 8 first in the file: entries come out sorted anyway */
	assert_int_equal(sl_profile_load("data/profiles/OPT-350/GH-96.json", 26, &p, &err), 0);
	assert_int_equal(p->entries[0].mbs, 1);
	sl_profile_free(p);
}

static void bad_profiles_name_the_file(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_profile *p = NULL;
	assert_int_equal(sl_profile_load("data/profiles/OPT-350/A100-40.json", 34, &p, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "A100-40.json"));
	assert_non_null(strstr(err.msg, "has 26 layers but the model has 34"));
	const char *path = "/tmp/sailor_test_profile.json";
	write_file(path, "{\"1\": {\"1\": {\"0\": [0.1, 0.2], \"1\": [0.1, 0.2, 0.3]}}}");
	assert_int_equal(sl_profile_load(path, 0, &p, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "1.1.0: expected [forward_s, backward_s, update_s]"));
	write_file(path, "{\"1\": {\"1\": {\"0\": [0.1, 0.2, 0.3], \"2\": [0.1, 0.2, 0.3]}}}");
	assert_int_equal(sl_profile_load(path, 0, &p, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "layer numbers must be 0..1"));
	write_file(path, "{\"1\": {\"1\": ");
	assert_int_equal(sl_profile_load(path, 0, &p, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, path));
	assert_null(p);
	remove(path);
}

/* SIMULATOR.md section 2.4 figures. */
static void layer_sizes_from_the_artifact(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_model_config m;
	struct sl_layer_sizes *s = NULL;
	assert_int_equal(sl_model_config_load("OPT-350", &m, &err), 0);
	assert_int_equal(sl_layer_sizes_load(&m, "data", &s, &err), 0);
	assert_int_equal(s->from_file, 1);
	assert_int_equal(s->num_layers, 26);
	assert_true(s->params[1][0] == 53608448 && s->params[1][1] == 12596224 && s->params[1][25] == 51513344);
	assert_true(s->act_mem_bytes[1][1] == 4.0 * 90181632 && s->act_output_bytes[1][25] == 4.0 * 103022593);
	double total = 0;
	for (int l = 0; l < 26; l++)
		total += s->params[1][l];
	assert_true(total == 407431168);
	assert_int_equal(s->head_holds_embedding, 1);
	assert_int_equal(s->kind[0], SL_LAYER_EMBEDDING);
	assert_int_equal(s->kind[25], SL_LAYER_HEAD);
	/* formulas agree with the artifact's OPT-350 figures */
	struct sl_layer_sizes *f = NULL;
	assert_int_equal(sl_layer_sizes_from_formulas(&m, &f, &err), 0);
	for (int t = 1; t <= 8; t *= 2)
		for (int l = 0; l < 26; l++) {
			assert_true(fabs(f->params[t][l] - s->params[t][l]) <= 1e-9 * s->params[t][l]);
			assert_true(fabs(f->act_mem_bytes[t][l] - s->act_mem_bytes[t][l]) <=
				    0.02 * s->act_mem_bytes[t][l]);
		}
	/* TP 3 is not in the file: derived from tp 2 */
	assert_int_equal(s->tp_in_file[3], 0);
	assert_true(fabs(s->params[3][1] - s->params[2][1] * 2.0 / 3.0) < 1);
	/* forward FLOPs of a block: 24 s h^2 + 4 s^2 h with f = 4h */
	double sq = 2048, h = 1024;
	assert_true(fabs(s->fwd_flops[1] - (24 * sq * h * h + 4 * sq * sq * h)) < 1);
	sl_layer_sizes_free(f);
	sl_layer_sizes_free(s);
	/* LLAMA-3-8: the artifact's 35 layers (a separate final norm, 33) are the plan's 34, the
	 * norm folded into the head (data/models/LLAMA-3-8.json, sosp25_merged_layers) */
	assert_int_equal(sl_model_config_load("LLAMA-3-8", &m, &err), 0);
	assert_int_equal(m.sosp25_layer_count, 35);
	assert_int_equal(m.sosp25_layer_map[32], 32);
	assert_int_equal(m.sosp25_layer_map[33], 33);
	assert_int_equal(m.sosp25_layer_map[34], 33);
	assert_int_equal(sl_layer_sizes_load(&m, "data", &s, &err), 0);
	assert_int_equal(s->num_layers, 34);
	assert_int_equal(s->num_layers, sl_model_plan_layers(&m));
	assert_int_equal(s->kind[33], SL_LAYER_HEAD);
	assert_int_equal(s->head_holds_embedding, 0);
	/* its parameters are the artifact's norm and head added up (llm_info.json, tp 1) */
	json_t *info = sl_json_load_file("data/models/layer_sizes_sosp25.json", "sizes", &err);
	assert_non_null(info);
	json_t *tp1 = json_object_get(json_object_get(info, "LLAMA-3-8"), "1");
	double norm = json_number_value(json_object_get(json_object_get(tp1, "33"), "params_floats"));
	double head = json_number_value(json_object_get(json_object_get(tp1, "34"), "params_floats"));
	assert_true(norm > 0 && head > 0);
	assert_true(fabs(s->params[1][33] - (norm + head)) < 0.5);
	json_decref(info);
	sl_layer_sizes_free(s);
	/* and its profiles: forward and backward times of 33 and 34 added, 34 layers */
	struct sl_profile *raw, *folded;
	assert_int_equal(sl_profile_load("data/profiles/LLAMA-3-8/A100-40.json", 35, &raw, &err), 0);
	assert_int_equal(sl_profile_load("data/profiles/LLAMA-3-8/A100-40.json", 35, &folded, &err), 0);
	int map[40];
	assert_int_equal(sl_model_source_layer_map(&m, 35, map), 0);
	sl_profile_fold_layers(folded, map);
	assert_int_equal(folded->num_layers, 34);
	for (int i = 0; i < raw->entry_count; i++) {
		const struct sl_profile_entry *a = &raw->entries[i], *b = &folded->entries[i];
		assert_true(b->fwd_s[32] == a->fwd_s[32]);
		assert_true(fabs(b->fwd_s[33] - (a->fwd_s[33] + a->fwd_s[34])) < 1e-12);
		assert_true(fabs(b->bwd_s[33] - (a->bwd_s[33] + a->bwd_s[34])) < 1e-12);
	}
	sl_profile_free(raw);
	sl_profile_free(folded);
	/* a map for another count is no map */
	assert_int_equal(sl_model_source_layer_map(&m, 36, map), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loads_the_artifact_profile),
		cmocka_unit_test(bad_profiles_name_the_file),
		cmocka_unit_test(layer_sizes_from_the_artifact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
