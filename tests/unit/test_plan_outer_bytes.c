/* Unit tests for the outer exchange counted from the plan (plan/outer_bytes.h): hand-computed
 * totals on a model small enough to count by hand (1 block, hidden 8, heads 2, FFN 32, sequence
 * 4, vocabulary 16: 1,048 parameters), int8 with its scales per block of each chunk, pieces,
 * the link classes of three zones, tokens per round, a mixed-TP stage, and the lanes against the
 * parameters the training code builds (sl_gpt_init) for every stage shape, TP rank and fragment
 * count, uneven vocabulary rows included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plan/islands.h"
#include "plan/outer_bytes.h"
#include "plan/plan.h"
#include "train/model.h"

static struct sl_catalogue cat;

/* 1,048 parameters: wte 16x8 = 128, wpe 4x8 = 32, the block 872 (LayerNorms 32, QKV 192 + 24,
 * projection 64 + 8, MLP 256 + 32 and 256 + 8), ln_f 16. */
static const struct sl_model_config tiny = {.name = "tiny-test", .num_blocks = 1, .hidden = 8,
					    .heads = 2, .ffn_hidden = 32, .seq_len = 4,
					    .vocab = 16};
#define TINY_PARAMS 1048LL

static int setup(void **state)
{
	(void)state;
	struct sl_err err = {0};
	return sl_catalogue_load("data", &cat, &err);
}

/* The plan of `text` (our format), checked against the tiny model. */
static void load_plan(const char *text, struct sl_plan *plan)
{
	struct sl_err err = {0};
	json_error_t jerr;
	json_t *root = json_loads(text, 0, &jerr);
	assert_non_null(root);
	sl_plan_init(plan);
	int rc = sl_plan_from_json(root, "test-plan.json", &cat, plan, &err);
	if (rc)
		fail_msg("%s", err.msg);
	json_decref(root);
	rc = sl_plan_check(plan, sl_model_plan_layers(&tiny), plan->global_batch, &cat, &err);
	if (rc)
		fail_msg("%s", err.msg);
}

static struct sl_outer_bytes count(const char *text, int seq_len)
{
	struct sl_plan plan;
	struct sl_outer_bytes b;
	struct sl_err err = {0};
	load_plan(text, &plan);
	int rc = sl_outer_bytes_count(&plan, &tiny, plan.global_batch, seq_len, &cat, &b, &err);
	if (rc)
		fail_msg("%s", err.msg);
	sl_plan_free(&plan);
	long long sum = 0;
	for (int c = 0; c < SL_LINK_CLASSES; c++)
		sum += b.class_bytes[c];
	assert_int_equal(sum, b.total_bytes);
	return b;
}

#define ONE_STAGE(replicas, islands)                                                           \
	"{\"schema\":\"sailor.plan/1\",\"global_batch\":24,\"micro_batch\":2,\"stages\":["     \
	"{\"layers\":[0,2],\"replicas\":[" replicas "]}],\"islands\":" islands "}"
#define A(zone) "{\"gpu\":\"A100-40\",\"zone\":\"" zone "\"}"

/* Two islands of one pipeline, TP 1, fp32: each member sends half the model in phase 1 and half
 * in phase 2, so 2 x 4 x params bytes over the one link; fragments do not change it. */
static void fp32_two_islands_send_twice_the_model(void **state)
{
	(void)state;
	struct sl_outer_bytes b = count(
		ONE_STAGE(A("us-central1-a") "," A("us-central1-b"), "{\"pipelines\":[[0],[1]]}"), 4);
	assert_int_equal(b.total_bytes, 2 * 4 * TINY_PARAMS);
	assert_int_equal(b.class_bytes[SL_LINK_CLASS_SAME_REGION], 2 * 4 * TINY_PARAMS);
	assert_int_equal(b.groups, 1);
	assert_int_equal(b.pieces, 1);
	b = count(ONE_STAGE(A("us-central1-a") "," A("us-central1-a"),
			    "{\"pipelines\":[[0],[1]],\"fragments\":7}"), 4);
	assert_int_equal(b.class_bytes[SL_LINK_CLASS_SAME_ZONE], 2 * 4 * TINY_PARAMS);
	/* bf16: half of it */
	b = count(ONE_STAGE(A("us-central1-a") "," A("us-central1-b"),
			    "{\"pipelines\":[[0],[1]],\"wire\":\"bf16\"}"), 4);
	assert_int_equal(b.total_bytes, 2 * 2 * TINY_PARAMS);
}

/* int8: 1 byte a value plus a 4-byte scale per block of 256 values, blocks counted from the start
 * of each chunk. Two islands: chunks of 524 values, 3 blocks each: 536 bytes, sent once in each
 * phase by each member: 4 x 536 (the whole piece in blocks would be 1048 + 5 x 4). Three
 * islands: chunks of 349, 349 and 350 values (357, 357 and 358 bytes, 2 blocks each), each sent
 * to the 2 other members in each phase: 2 x 2 x 1072. */
static void int8_scales_per_block_of_each_chunk(void **state)
{
	(void)state;
	struct sl_outer_bytes b = count(
		ONE_STAGE(A("us-central1-a") "," A("us-central1-b"),
			  "{\"pipelines\":[[0],[1]],\"wire\":\"int8\"}"), 4);
	assert_int_equal(b.total_bytes, 4 * 536);
	b = count(ONE_STAGE(A("us-central1-a") "," A("us-central1-b") "," A("us-central1-c"),
			    "{\"pipelines\":[[0],[1],[2]],\"wire\":\"int8\"}"), 4);
	assert_int_equal(b.total_bytes, 2 * 2 * (357 + 357 + 358));
	/* 4 fragments: tensors 0-4 (wte to the QKV weight: 368 values), 5-10 (the QKV bias to the
	 * MLP's first weight: 368), 11-12 (its bias, the second weight: 288), 13-15 (24); two
	 * islands: chunks of 184, 184, 144 and 12 values, one block each */
	b = count(ONE_STAGE(A("us-central1-a") "," A("us-central1-b"),
			    "{\"pipelines\":[[0],[1]],\"wire\":\"int8\",\"fragments\":4}"), 4);
	int starts[5];
	assert_int_equal(sl_islands_fragment_starts(&tiny, 4, starts), 0);
	assert_int_equal(starts[1], 5);
	assert_int_equal(starts[2], 11);
	assert_int_equal(starts[3], 13);
	assert_int_equal(b.total_bytes, 4 * (TINY_PARAMS / 2 + 4 * 4));
}

/* Three islands in us-central1-a, us-central1-b (same region) and europe-west4-a (another
 * continent), fp32: chunks of 349, 349 and 350 values (1396, 1396, 1400 bytes). Members 0 and 1
 * swap chunks 0 and 1 both ways in both phases: 2 x (1396 + 1396) on the same-region link; the
 * rest crosses the continent. */
static void links_are_classed_by_the_members_zones(void **state)
{
	(void)state;
	struct sl_outer_bytes b = count(
		ONE_STAGE(A("us-central1-a") "," A("us-central1-b") "," A("europe-west4-a"),
			  "{\"pipelines\":[[0],[1],[2]]}"), 4);
	assert_int_equal(b.class_bytes[SL_LINK_CLASS_SAME_REGION], 2 * (1396 + 1396));
	assert_int_equal(b.class_bytes[SL_LINK_CLASS_ACROSS_CONTINENTS],
			 2 * (1400 + 1396) + 2 * (1400 + 1396));
	assert_int_equal(b.total_bytes, 2 * 2 * 4 * TINY_PARAMS);
}

/* Two islands of two pipelines: Q = 2 pieces, one outer group each (pipelines 0 and 2 carry piece
 * 0, 1 and 3 piece 1): the same total. H 4 and 2, three micro-batches of 2 sequences of 4 tokens
 * per pipeline and step: (4 x 6 + 2 x 6) x 2 x 4 = 288 tokens a round. A third island of one
 * pipeline makes Q = 1: pipelines 1 and 3 send nothing between islands. */
static void pieces_and_tokens_per_round(void **state)
{
	(void)state;
	struct sl_outer_bytes b = count(
		ONE_STAGE(A("us-central1-a") "," A("us-central1-a") "," A("us-central1-b") ","
			  A("us-central1-b"), "{\"pipelines\":[[0,1],[2,3]],\"inner_steps\":[4,2]}"),
		4);
	assert_int_equal(b.pieces, 2);
	assert_int_equal(b.groups, 2);
	assert_int_equal(b.total_bytes, 2 * 4 * TINY_PARAMS);
	assert_true(b.tokens_per_round == 288.0);
	assert_true(b.bytes_per_1k_tokens == 1e3 * 2 * 4 * TINY_PARAMS / 288.0);
	b = count("{\"schema\":\"sailor.plan/1\",\"global_batch\":12,\"micro_batch\":2,\"stages\":["
		  "{\"layers\":[0,2],\"replicas\":[{\"gpu\":\"A100-40\",\"zone\":\"us-central1-a\","
		  "\"count\":6}]}],\"islands\":{\"pipelines\":[[0,1],[2,3],[4,5]]}}", 4);
	assert_int_equal(b.pieces, 2);
	assert_int_equal(b.total_bytes, 2 * 2 * 4 * TINY_PARAMS);
	b = count("{\"schema\":\"sailor.plan/1\",\"global_batch\":10,\"micro_batch\":2,\"stages\":["
		  "{\"layers\":[0,2],\"replicas\":[{\"gpu\":\"A100-40\",\"zone\":\"us-central1-a\","
		  "\"count\":5}]}],\"islands\":{\"pipelines\":[[0,1],[2,3],[4]]}}", 4);
	assert_int_equal(b.pieces, 1);
	assert_int_equal(b.groups, 1);
	assert_int_equal(b.total_bytes, 2 * 2 * 4 * TINY_PARAMS);
}

/* Two stages, two islands of one pipeline. Stage 0 (layers 0-1) is TP 2 in both: two lanes, TP
 * rank r's shards, 556 values each (wte rows 8 x 8 = 64, wpe 32, the block's shards 460: the
 * replicated LayerNorms and biases counted in both lanes). Stage 1 (the head, with its own copy
 * of the token table) is TP 2 in island 0 and TP 1 in island 1: mixed, one lane of whole tensors
 * (ln_f 16 + wte 128). fp32: 8 x (556 + 556 + 144). */
static void mixed_tp_stage_sends_whole_tensors(void **state)
{
	(void)state;
	struct sl_outer_bytes b = count(
		"{\"schema\":\"sailor.plan/1\",\"global_batch\":8,\"micro_batch\":2,\"stages\":["
		"{\"layers\":[0,1],\"replicas\":[{\"gpu\":\"A100-40\",\"zone\":\"us-central1-a\","
		"\"tp\":2,\"count\":2}]},"
		"{\"layers\":[2,2],\"replicas\":[{\"gpu\":\"A100-40\",\"zone\":\"us-central1-a\","
		"\"tp\":2},{\"gpu\":\"A100-40\",\"zone\":\"us-central1-a\"}]}],"
		"\"islands\":{\"pipelines\":[[0],[1]]}}", 4);
	assert_int_equal(b.groups, 3);
	assert_int_equal(b.total_bytes, 8 * (556 + 556 + 144));
	int starts[2] = {0, sl_islands_model_tensors(&tiny)};
	long long lane[1];
	sl_outer_bytes_lanes(&tiny, 0, 1, 2, 1, 0, starts, 1, lane);
	assert_int_equal(lane[0], 556);
	sl_outer_bytes_lanes(&tiny, 2, 2, 2, 0, 1, starts, 1, lane);
	assert_int_equal(lane[0], 144);
}

/* No islands, one island: no outer step. Too many fragments: refused, naming the field. */
static void no_outer_step_and_too_many_fragments(void **state)
{
	(void)state;
	struct sl_outer_bytes b = count(ONE_STAGE(A("us-central1-a") "," A("us-central1-b"),
						  "{\"pipelines\":[[0,1]]}"), 4);
	assert_int_equal(b.total_bytes, 0);
	assert_true(b.tokens_per_round == 0.0);
	struct sl_plan plan;
	struct sl_err err = {0};
	load_plan(ONE_STAGE(A("us-central1-a") "," A("us-central1-b"),
			    "{\"pipelines\":[[0],[1]],\"fragments\":17}"), &plan);
	assert_int_equal(sl_outer_bytes_count(&plan, &tiny, 8, 4, &cat, &b, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "islands.fragments"));
	sl_plan_free(&plan);
}

static int no_reduce(float *buf, long long count, void *ctx)
{
	(void)buf;
	(void)count;
	(void)ctx;
	return 0;
}

/* The lanes equal what runtime/outer_sync.c lays out from the parameters sl_gpt_init builds:
 * each parameter's values (whole tensors for a mixed stage) added to its tensor's fragment. */
static void lanes_match_the_training_code(void **state)
{
	(void)state;
	struct sl_model_config m = tiny;
	m.num_blocks = 2;
	int T = sl_islands_model_tensors(&m), N = m.num_blocks;
	static const int shapes[][3] = {{0, 3}, {0, 1}, {1, 2}, {2, 3}, {0, 0}, {3, 3}, {1, 1}};
	struct sl_tp_comm comm = {no_reduce, no_reduce, NULL};
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		int first = shapes[s][0], last = shapes[s][1] > N + 1 ? N + 1 : shapes[s][1];
		/* a stage without blocks may have a TP degree that does not divide the vocabulary */
		int tps[] = {1, 2, first > 0 && last == N + 1 && first == last ? 3 : 2};
		for (int k = 0; k < 3; k++)
			for (int r = 0; r < tps[k]; r++)
				for (int F = 1; F <= T; F += 3) {
					int starts[64];
					long long want[64] = {0}, whole[64] = {0}, got[64];
					struct sl_gpt g;
					struct sl_err err = {0};
					assert_int_equal(sl_gpt_init(&g, &m, first, last, 1, 4, tps[k], r,
								     &comm, 1, &err), 0);
					assert_int_equal(sl_islands_fragment_starts(&m, F, starts), 0);
					for (int i = 0; i < g.param_count; i++) {
						const struct sl_param *p = g.params[i];
						int t = sl_islands_tensor_index(&m, p->name), f = 0;
						assert_true(t >= 0);
						while (f + 1 < F && starts[f + 1] <= t)
							f++;
						want[f] += p->numel;
						whole[f] += p->full_shape[0] * p->full_shape[1];
					}
					sl_gpt_free(&g);
					sl_outer_bytes_lanes(&m, first, last, tps[k], r, 0, starts, F, got);
					for (int f = 0; f < F; f++)
						assert_int_equal(got[f], want[f]);
					sl_outer_bytes_lanes(&m, first, last, tps[k], r, 1, starts, F, got);
					for (int f = 0; f < F; f++)
						assert_int_equal(got[f], whole[f]);
				}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fp32_two_islands_send_twice_the_model),
		cmocka_unit_test(int8_scales_per_block_of_each_chunk),
		cmocka_unit_test(links_are_classed_by_the_members_zones),
		cmocka_unit_test(pieces_and_tokens_per_round),
		cmocka_unit_test(mixed_tp_stage_sends_whole_tensors),
		cmocka_unit_test(no_outer_step_and_too_many_fragments),
		cmocka_unit_test(lanes_match_the_training_code),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
