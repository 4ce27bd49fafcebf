/* Unit tests for the islands' schedule (plan/outer_schedule.h) and section (plan/islands.h):
 * the closed forms against a step-by-step simulation of the rules in docs/design/islands.md, on
 * every small combination of inner steps, fragments and run lengths; the property the runtime's
 * collectives rely on (every island starts the same sequence of (round, fragment) syncs, so the
 * k-th exchange of one island meets the k-th of every other); the balanced fragment cut; and the
 * section's reader on good input and its defaults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plan/islands.h"
#include "plan/outer_schedule.h"

#define MAX_SYNCS 4096

struct island_run {
	long long steps;          /* inner steps made */
	int seq_k[MAX_SYNCS], seq_f[MAX_SYNCS];
	int syncs;
	long long tokens_steps[64]; /* per fragment: inner steps trained in all syncs */
};

static struct sl_plan_islands *make(int n, const int *h, int F)
{
	struct sl_plan_islands *isl = calloc(1, sizeof(*isl) + (size_t)(n + n) * sizeof(int));
	assert_non_null(isl);
	isl->count = n;
	isl->num_pipelines = n;
	isl->island_of = (int *)(isl + 1);
	isl->inner_steps = isl->island_of + n;
	for (int i = 0; i < n; i++) {
		isl->island_of[i] = i;
		isl->inner_steps[i] = h[i];
	}
	isl->fragments = F;
	return isl;
}

/* The rules, step by step: island i steps where the k-th inner step of a round falls; after its
 * inner step s it syncs f when (s + floor(f H/F)) mod H == 0 within complete rounds. */
static void simulate(const struct sl_outer_schedule *s, int island, struct island_run *out)
{
	const struct sl_plan_islands *isl = s->islands;
	int h0 = isl->inner_steps[0], hi = isl->inner_steps[island], F = isl->fragments;
	memset(out, 0, sizeof(*out));
	long long last[64] = {0};
	for (long long c = 0; c < s->run_steps; c++) {
		long long r = c / h0, p = c % h0;
		int steps_here = 0;
		for (int k = 0; k < hi; k++)
			steps_here += (long long)k * h0 / hi == p;
		assert_true(steps_here <= 1);
		assert_int_equal(sl_outer_schedule_steps_at(s, island, c), steps_here);
		if (!steps_here)
			continue;
		long long st = ++out->steps;
		(void)r;
		for (int f = F - 1; f >= 0; f--) {
			long long sh = (long long)f * hi / F;
			if ((st + sh) % hi || (st + sh) / hi > s->run_steps / h0)
				continue;
			assert_true(sl_outer_schedule_syncs_after(s, island, st, f));
			long long k = (st + sh) / hi;
			assert_int_equal(sl_outer_schedule_sync_index(s, island, st, f), k);
			assert_int_equal(sl_outer_schedule_steps_in_sync(s, island, f, k), st - last[f]);
			out->tokens_steps[f] += st - last[f];
			last[f] = st;
			out->seq_k[out->syncs] = (int)k;
			out->seq_f[out->syncs++] = f;
		}
	}
	assert_int_equal(sl_outer_schedule_steps_before(s, island, s->run_steps), out->steps);
	for (int f = 0; f < F; f++) {
		assert_int_equal(sl_outer_schedule_last_sync(s, island, out->steps, f), last[f]);
		/* the final flush trains the rest: every inner step is counted once per fragment */
		out->tokens_steps[f] += sl_outer_schedule_steps_in_sync(s, island, f, 0);
		assert_int_equal(out->tokens_steps[f], out->steps);
	}
}

static void schedule_matches_the_rules(void **state)
{
	(void)state;
	struct island_run *runs = calloc(3, sizeof(*runs));
	assert_non_null(runs);
	int checked = 0;
	for (int h0 = 1; h0 <= 6; h0++)
		for (int h1 = 1; h1 <= h0; h1++)
			for (int h2 = 1; h2 <= h1; h2++)
				for (int F = 1; F <= 7; F++)
					for (long long n = 0; n <= 3 * h0 + 2; n++) {
						int h[3] = {h0, h1, h2};
						struct sl_plan_islands *isl = make(3, h, F);
						struct sl_outer_schedule s = {isl, n, 1};
						for (int i = 0; i < 3; i++)
							simulate(&s, i, &runs[i]);
						/* island 0 steps every run step */
						assert_int_equal(runs[0].steps, n);
						/* the same sequence of syncs everywhere */
						for (int i = 1; i < 3; i++) {
							assert_int_equal(runs[i].syncs, runs[0].syncs);
							for (int x = 0; x < runs[0].syncs; x++) {
								assert_int_equal(runs[i].seq_k[x], runs[0].seq_k[x]);
								assert_int_equal(runs[i].seq_f[x], runs[0].seq_f[x]);
							}
						}
						free(isl);
						checked++;
					}
	assert_true(checked > 1000);
	free(runs);
}

static void resume_skips_the_round_in_progress(void **state)
{
	(void)state;
	int h[2] = {4, 3};
	struct sl_plan_islands *isl = make(2, h, 3);
	struct sl_outer_schedule s = {isl, 40, 1};
	assert_int_equal(sl_outer_schedule_resume_at(&s, 0), 1);
	assert_int_equal(sl_outer_schedule_resume_at(&s, 8), 3);
	assert_int_equal(sl_outer_schedule_resume_at(&s, 6), 3);
	s.first_round = 3;
	/* island 1's syncs of round 2 (its inner steps 4..6) are not made any more */
	for (long long st = 4; st <= 6; st++)
		for (int f = 0; f < 3; f++)
			assert_false(sl_outer_schedule_syncs_after(&s, 1, st, f));
	assert_true(sl_outer_schedule_syncs_after(&s, 1, 9, 0));
	free(isl);
}

static void fragments_are_balanced_and_whole(void **state)
{
	(void)state;
	struct sl_model_config m = {.num_blocks = 4, .hidden = 64, .heads = 4, .ffn_hidden = 256,
				    .seq_len = 32, .vocab = 50257};
	int T = sl_islands_model_tensors(&m);
	assert_int_equal(T, 4 + 12 * 4);
	long long total = 0;
	for (int t = 0; t < T; t++) {
		char name[SL_ISLANDS_TENSOR_NAME_MAX];
		long long n;
		sl_islands_tensor(&m, t, name, sizeof(name), &n);
		assert_int_equal(sl_islands_tensor_index(&m, name), t);
		total += n;
	}
	/* the token table alone is most of the model: fragment 0 is it, the rest share the blocks */
	int starts[64];
	assert_int_equal(sl_islands_fragment_starts(&m, 8, starts), 0);
	assert_int_equal(starts[0], 0);
	assert_int_equal(starts[8], T);
	for (int f = 0; f < 8; f++)
		assert_true(starts[f + 1] > starts[f]);
	assert_int_equal(starts[1], 1);
	assert_int_equal(sl_islands_fragment_starts(&m, T, starts), 0);
	for (int f = 0; f <= T; f++)
		assert_int_equal(starts[f], f);
	assert_int_equal(sl_islands_fragment_starts(&m, T + 1, starts), SL_EINPUT);
	assert_int_equal(sl_islands_tensor_index(&m, "layer9.ln1.weight"), -1);
	(void)total;
}

static void section_defaults_and_round_trip(void **state)
{
	(void)state;
	json_error_t je;
	json_t *obj = json_loads("{\"pipelines\": [[0, 2], [1]]}", 0, &je);
	struct sl_plan_islands *isl = NULL;
	struct sl_err err = {0};
	assert_int_equal(sl_islands_from_json(obj, 3, &isl, &err), 0);
	assert_int_equal(isl->count, 2);
	assert_int_equal(isl->island_of[1], 1);
	assert_int_equal(isl->inner_steps[1], SL_ISLANDS_DEFAULT_INNER_STEPS);
	assert_true(isl->outer_lr == SL_ISLANDS_DEFAULT_OUTER_LR);
	assert_int_equal(isl->wire, SL_ISLANDS_WIRE_FP32);
	assert_int_equal(isl->fragments, 1);
	json_t *back = sl_islands_to_json(isl);
	struct sl_plan_islands *again = NULL;
	assert_int_equal(sl_islands_from_json(back, 3, &again, &err), 0);
	assert_memory_equal(again->island_of, isl->island_of, 3 * sizeof(int));
	assert_true(again->outer_momentum == isl->outer_momentum);
	json_decref(back);
	json_decref(obj);
	free(again);
	free(isl);
	/* pipeline 0 outside the first island is refused with what to do */
	obj = json_loads("{\"pipelines\": [[1], [0]]}", 0, &je);
	assert_int_equal(sl_islands_from_json(obj, 2, &isl, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "list its island first"));
	json_decref(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(schedule_matches_the_rules),
		cmocka_unit_test(resume_skips_the_round_in_progress),
		cmocka_unit_test(fragments_are_balanced_and_whole),
		cmocka_unit_test(section_defaults_and_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
