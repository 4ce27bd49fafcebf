/* Unit tests for plans: our format in and out, the SOSP'25 files, and the checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plan/microbatch_share.h"
#include "plan/plan.h"

static struct sl_catalogue cat;
static const char *tmp = "/tmp/sailor_test_plan.json";

static int setup(void **state)
{
	(void)state;
	struct sl_err err = {0};
	return sl_catalogue_load("data", &cat, &err);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void example_plan_loads_with_run_lengths(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_plan plan;
	sl_plan_init(&plan);
	assert_int_equal(sl_plan_load("data/examples/plan-opt350-a100-v100.json", &cat, &plan, &err), 0);
	assert_string_equal(plan.model, "OPT-350");
	assert_int_equal(plan.num_stages, 2);
	assert_int_equal(plan.num_pipelines, 8);
	assert_int_equal(plan.global_batch, 1024);
	assert_int_equal(plan.micro_batch, 2);
	assert_int_equal(plan.stages[1].first_layer, 13);
	assert_int_equal(plan.stages[1].last_layer, 25);
	int v100 = sl_catalogue_gpu_index(&cat, "V100-16");
	assert_int_equal(sl_plan_replica(&plan, 0, 5)->gpu, sl_catalogue_gpu_index(&cat, "A100-40"));
	assert_int_equal(sl_plan_replica(&plan, 0, 6)->gpu, v100);
	assert_int_equal(sl_plan_replica(&plan, 0, 7)->zone, sl_catalogue_zone_index(&cat, "us-central1-b"));
	assert_int_equal(sl_plan_replica(&plan, 1, 3)->tp, 2);
	assert_int_equal(sl_plan_gpu_count(&plan), 8 * 4 + 8 * 2);
	assert_int_equal(sl_plan_pipeline_microbatches(&plan, 0, 1024), 64);
	assert_int_equal(sl_plan_check(&plan, 26, 1024, &cat, &err), 0);

	/* round trip: to JSON and back gives the same plan, and the same JSON */
	json_t *j = sl_plan_to_json(&plan, &cat);
	char *a = json_dumps(j, JSON_PRESERVE_ORDER | JSON_COMPACT);
	assert_non_null(strstr(a, "{\"gpu\":\"A100-40\",\"zone\":\"us-central1-a\",\"tp\":4,\"count\":6}"));
	struct sl_plan back;
	sl_plan_init(&back);
	assert_int_equal(sl_plan_from_json(j, NULL, &cat, &back, &err), 0);
	json_t *j2 = sl_plan_to_json(&back, &cat);
	char *b = json_dumps(j2, JSON_PRESERVE_ORDER | JSON_COMPACT);
	assert_string_equal(a, b);
	assert_int_equal(memcmp(back.replicas, plan.replicas, 16 * sizeof(struct sl_replica)), 0);
	free(a);
	free(b);
	json_decref(j);
	json_decref(j2);
	/* copy */
	struct sl_plan c;
	sl_plan_init(&c);
	assert_int_equal(sl_plan_copy(&c, &plan, &err), 0);
	assert_int_equal(memcmp(c.replicas, plan.replicas, 16 * sizeof(struct sl_replica)), 0);
	sl_plan_free(&c);
	sl_plan_free(&back);
	sl_plan_free(&plan);
}

static void reads_sosp25_validation_files(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_plan plan;
	sl_plan_init(&plan);
	assert_int_equal(sl_plan_load("data/validation/clariden-gh200-opt350/plan_config_N16_D4.json",
				      &cat, &plan, &err), 0);
	assert_int_equal(plan.format, SL_PLAN_FORMAT_SOSP25);
	assert_int_equal(plan.num_stages, 4);
	assert_int_equal(plan.num_pipelines, 4);
	assert_int_equal(plan.micro_batch, 8);
	assert_int_equal(plan.global_batch, 1024);
	assert_int_equal(plan.stages[0].last_layer, 4);
	assert_int_equal(plan.stages[1].first_layer, 5);
	assert_int_equal(sl_plan_replica(&plan, 3, 3)->gpu, sl_catalogue_gpu_index(&cat, "GH-96"));
	assert_int_equal(sl_plan_replica(&plan, 3, 3)->tp, 4);
	assert_true(plan.measured.has_real && plan.measured.real_s == 2.72578);
	assert_true(plan.measured.has_max_mem && plan.measured.max_mem_bytes == 25140658176.0);
	assert_true(plan.measured.has_red_grads);
	assert_int_equal(sl_plan_check(&plan, 26, 1024, &cat, &err), 0);
	sl_plan_free(&plan);
}

/* Loads text as a plan and checks it against a 26-layer model; returns the code. */
static int load_and_check(const char *text, struct sl_err *err)
{
	write_file(tmp, text);
	struct sl_plan plan;
	sl_plan_init(&plan);
	int rc = sl_plan_load(tmp, &cat, &plan, err);
	if (!rc)
		rc = sl_plan_check(&plan, 26, plan.global_batch > 0 ? plan.global_batch : 1024, &cat, err);
	sl_plan_free(&plan);
	return rc;
}

#define STAGE0 "{\"layers\": [0, 12], \"replicas\": [{\"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"tp\": 2}]}"
#define STAGE1 "{\"layers\": [13, 25], \"replicas\": [{\"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"tp\": 2}]}"

static void bad_plans_get_clear_messages(void **state)
{
	(void)state;
	struct sl_err err = {0};
	assert_int_equal(load_and_check("{\"schema\": \"sailor.plan/1\", \"micro_batch\": 2, \"stages\": [" STAGE0 ", " STAGE1 "]}", &err), 0);
	assert_int_equal(load_and_check("{\"schema\": \"sailor.plan/1\", \"micro_batch\": 2, \"stages\": [" STAGE0 "", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, tmp));
	assert_non_null(strstr(err.msg, "line"));
	/* coverage */
	assert_int_equal(load_and_check("{\"micro_batch\": 2, \"stages\": [" STAGE0 "]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "stages[0].layers: the last stage ends at layer 12"));
	assert_int_equal(load_and_check("{\"micro_batch\": 2, \"stages\": [" STAGE1 ", " STAGE0 "]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "stages[0].layers: starts at layer 13 but layer 0 is in no stage"));
	assert_int_equal(load_and_check("{\"micro_batch\": 2, \"stages\": [" STAGE0 ", " STAGE0 "]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "stages[1].layers: starts at layer 0, already in the previous stage"));
	assert_int_equal(load_and_check("{\"micro_batch\": 2, \"stages\": [{\"layers\": [0, 30], \"replicas\": [{\"gpu\": \"A100-40\", \"zone\": \"us-central1-a\"}]}]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "ends at layer 30 but the model has layers 0..25"));
	/* empty stage, different replica counts */
	assert_int_equal(load_and_check("{\"micro_batch\": 2, \"stages\": [{\"layers\": [0, 25], \"replicas\": []}]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "stages[0].replicas: the stage has no replicas"));
	assert_int_equal(load_and_check("{\"micro_batch\": 2, \"stages\": [" STAGE0 ", {\"layers\": [13, 25], \"replicas\": [{\"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"count\": 2}]}]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "every stage needs the same number of replicas"));
	/* unknown names */
	assert_int_equal(load_and_check("{\"micro_batch\": 2, \"stages\": [{\"layers\": [0, 25], \"replicas\": [{\"gpu\": \"A100\", \"zone\": \"us-central1-a\"}]}]}", &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "stages[0].replicas[0].gpu: unknown GPU type 'A100' (known: A100-40"));
	assert_int_equal(load_and_check("{\"micro_batch\": 2, \"stages\": [{\"layers\": [0, 25], \"replicas\": [{\"gpu\": \"A100-40\", \"zone\": \"eu-1\"}]}]}", &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "stages[0].replicas[0].zone: unknown zone 'eu-1'"));
	/* TP larger than a node */
	assert_int_equal(load_and_check("{\"micro_batch\": 2, \"stages\": [{\"layers\": [0, 25], \"replicas\": [{\"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"tp\": 8}]}]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "TP degree 8 is larger than a A100-40 node (4 GPUs)"));
	/* batches */
	assert_int_equal(load_and_check("{\"micro_batch\": 0, \"stages\": [" STAGE0 ", " STAGE1 "]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "micro_batch: must be a whole number from 1"));
	assert_int_equal(load_and_check("{\"global_batch\": -4, \"micro_batch\": 2, \"stages\": [" STAGE0 ", " STAGE1 "]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "global_batch: must be a whole number from 1 to 65536, got"));
	/* uneven micro-batches must add up */
	assert_int_equal(load_and_check("{\"global_batch\": 64, \"micro_batch\": 2, \"stages\": [" STAGE0 ", " STAGE1 "], \"microbatches_per_pipeline\": [31]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "microbatches_per_pipeline: add up to 31 micro-batches"));
	assert_int_equal(load_and_check("{\"global_batch\": 64, \"micro_batch\": 2, \"stages\": [" STAGE0 ", " STAGE1 "], \"microbatches_per_pipeline\": [32]}", &err), 0);
	assert_int_equal(load_and_check("{\"schema\": \"sailor.plan/9\", \"micro_batch\": 2, \"stages\": []}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "schema"));
	/* SOSP'25 file with a gap in a stage's layers */
	assert_int_equal(load_and_check("{\"mbs\": 1, \"pipeline_list\": [{\"layers_per_stage\": [[0, 2]], \"tmp_per_stage\": [[[[[\"GH-96\", 4, \"us-central1-a\"]], 4]]]}]}", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "layers must be consecutive"));
	remove(tmp);
}

/* A plan of D single-stage replicas in memory, micro-batch b. */
static void small_plan(struct sl_plan *plan, int D, int b, enum sl_plan_format format)
{
	struct sl_err err = {0};
	sl_plan_init(plan);
	assert_int_equal(sl_plan_reserve(plan, 1, D, &err), 0);
	plan->micro_batch = b;
	plan->format = format;
	plan->stages[0] = (struct sl_plan_stage){.first_layer = 0, .last_layer = 25};
	for (int j = 0; j < D; j++)
		*sl_plan_replica(plan, 0, j) = (struct sl_replica){.gpu = 0, .zone = 0, .tp = 1};
}

/* The one sharing rule (plan/microbatch_share.h): what simulate, run and control all apply. */
static void microbatches_are_shared_by_one_rule(void **state)
{
	(void)state;
	struct sl_err err = {0};
	struct sl_plan plan;
	int counts[12];
	/* 128 micro-batches over 8 pipelines: 16 each */
	small_plan(&plan, 8, 8, SL_PLAN_FORMAT_SAILOR);
	assert_int_equal(sl_plan_microbatch_counts(&plan, 1024, counts, &err), 0);
	for (int j = 0; j < 8; j++)
		assert_int_equal(counts[j], 16);
	sl_plan_free(&plan);
	/* 128 over 12 pipelines, hand-written without counts: refused, saying what to give */
	small_plan(&plan, 12, 8, SL_PLAN_FORMAT_SAILOR);
	assert_int_equal(sl_plan_microbatch_counts(&plan, 1024, counts, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "global batch 1024 is 128 micro-batches of 8, which 12 "
				     "pipelines cannot share evenly: give \"microbatches_per_pipeline\""));
	assert_int_equal(sl_plan_check(&plan, 26, 1024, &cat, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "cannot share evenly"));
	/* the planner's split: 10 each, the 8 extra to the fastest pipelines (the odd ones) */
	double pipeline_s[12];
	for (int j = 0; j < 12; j++)
		pipeline_s[j] = j % 2 ? 1.0 : 2.0;
	pipeline_s[0] = 1.5;
	assert_int_equal(sl_plan_split_microbatches(&plan, 1024, pipeline_s), 0);
	assert_int_equal(plan.uneven_microbatches, 1);
	assert_int_equal(sl_plan_microbatch_counts(&plan, 1024, counts, &err), 0);
	int total = 0;
	for (int j = 0; j < 12; j++) {
		total += counts[j];
		assert_int_equal(counts[j], j % 2 || j == 0 || j == 2 ? 11 : 10);
	}
	assert_int_equal(total, 128);
	assert_int_equal(sl_plan_check(&plan, 26, 1024, &cat, &err), 0);
	sl_plan_free(&plan);
	/* without times: the first M mod D pipelines */
	small_plan(&plan, 12, 8, SL_PLAN_FORMAT_SAILOR);
	assert_int_equal(sl_plan_split_microbatches(&plan, 1024, NULL), 0);
	for (int j = 0; j < 12; j++)
		assert_int_equal(plan.microbatches[j], j < 8 ? 11 : 10);
	sl_plan_free(&plan);
	/* the SOSP'25 artifact's plans share as evenly as possible: 256 over 37 pipelines */
	small_plan(&plan, 37, 4, SL_PLAN_FORMAT_SOSP25);
	int many[37];
	assert_int_equal(sl_plan_microbatch_counts(&plan, 1024, many, &err), 0);
	total = 0;
	for (int j = 0; j < 37; j++) {
		total += many[j];
		assert_int_equal(many[j], j < 256 % 37 ? 7 : 6);
		assert_int_equal(sl_plan_pipeline_microbatches(&plan, j, 1024), many[j]);
	}
	assert_int_equal(total, 256);
	sl_plan_free(&plan);
	/* fewer micro-batches than pipelines, and a micro-batch that does not divide the batch */
	small_plan(&plan, 12, 8, SL_PLAN_FORMAT_SOSP25);
	assert_int_equal(sl_plan_microbatch_counts(&plan, 64, counts, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "fewer than the plan's 12 pipelines"));
	assert_int_equal(sl_plan_split_microbatches(&plan, 64, NULL), -1);
	assert_int_equal(sl_plan_microbatch_counts(&plan, 1020, counts, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "not a multiple of micro_batch 8"));
	sl_plan_free(&plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(example_plan_loads_with_run_lengths),
		cmocka_unit_test(reads_sosp25_validation_files),
		cmocka_unit_test(bad_plans_get_clear_messages),
		cmocka_unit_test(microbatches_are_shared_by_one_rule),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
