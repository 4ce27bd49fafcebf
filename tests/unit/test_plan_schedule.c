/* Unit tests for the pipeline schedule as data (plan/schedule.h): exact 1F1B instruction lists,
 * the TP peer rule, the checker on a few hundred generated plans, the checker rejecting
 * corrupted schedules, and the unit-cost makespan against the 1F1B closed form. Role tables are
 * made by hand here, so these tests do not depend on the plan or on roles.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plan/schedule.h"

/* A role table for P stages x D pipelines; tp[k*D+j] is replica (k, j)'s TP degree, n[j] the
 * micro-batches of pipeline j. Numbering as roles.h: stage-major, then pipeline, then TP rank. */
static void make_table(struct sl_role_table *t, int P, int D, const int *tp, const int *n)
{
	memset(t, 0, sizeof(*t));
	int W = 0;
	for (int i = 0; i < P * D; i++)
		W += tp[i];
	t->world_size = W;
	t->num_stages = P;
	t->num_pipelines = D;
	t->micro_batch = 1;
	t->roles = calloc((size_t)W, sizeof(*t->roles));
	t->replica_first_rank = calloc((size_t)(P * D), sizeof(int));
	t->microbatches = calloc((size_t)D, sizeof(int));
	t->first_microbatch = calloc((size_t)D, sizeof(int));
	assert_non_null(t->roles);
	assert_non_null(t->replica_first_rank);
	assert_non_null(t->microbatches);
	assert_non_null(t->first_microbatch);
	for (int j = 0; j < D; j++) {
		t->microbatches[j] = n[j];
		t->first_microbatch[j] = j ? t->first_microbatch[j - 1] + n[j - 1] : 0;
		t->global_batch += n[j];
	}
	int r = 0;
	for (int k = 0; k < P; k++)
		for (int j = 0; j < D; j++) {
			t->replica_first_rank[k * D + j] = r;
			for (int s = 0; s < tp[k * D + j]; s++, r++) {
				struct sl_role *ro = &t->roles[r];
				ro->rank = r;
				ro->stage = k;
				ro->pipeline = j;
				ro->tp_rank = s;
				ro->tp = tp[k * D + j];
				ro->host = -1;
			}
		}
}

static void free_table(struct sl_role_table *t)
{
	free(t->roles);
	free(t->replica_first_rank);
	free(t->microbatches);
	free(t->first_microbatch);
	memset(t, 0, sizeof(*t));
}

/* "op m=.. slot=..[ to/from ..]; ..." for the whole schedule */
static char *schedule_text(const struct sl_schedule *s)
{
	size_t cap = 64 + (size_t)s->count * 64, used = 0;
	char *out = malloc(cap), one[256];
	assert_non_null(out);
	out[0] = '\0';
	for (int i = 0; i < s->count; i++) {
		sl_instr_format(&s->instrs[i], one, sizeof(one));
		used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? "; " : "", one);
		assert_true(used < cap);
	}
	return out;
}

static void assert_schedule(const struct sl_schedule *s, const char *want)
{
	char *got = schedule_text(s);
	if (strcmp(got, want)) {
		fprintf(stderr, "rank %d\n got: %s\nwant: %s\n", s->rank, got, want);
		free(got);
		fail();
	}
	free(got);
}

static void check_ok(const struct sl_role_table *t, const struct sl_schedule *all,
		     struct sl_schedule_check_stats *st)
{
	struct sl_err err = {0};
	int rc = sl_schedule_check(t, all, st, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	assert_int_equal(rc, 0);
}

/* ---- (1) exact instruction lists --------------------------------------------------------- */

static void one_stage_three_microbatches(void **state)
{
	(void)state;
	struct sl_role_table t;
	int tp[] = {1}, n[] = {3};
	make_table(&t, 1, 1, tp, n);
	struct sl_schedule s;
	struct sl_err err = {0};
	assert_int_equal(sl_schedule_build(&t, 0, &s, &err), 0);
	assert_int_equal(s.slots, 1);
	assert_schedule(&s, "load-microbatch m=0 slot=0; forward m=0 slot=0; backward m=0 slot=0; "
			    "load-microbatch m=1 slot=0; forward m=1 slot=0; backward m=1 slot=0; "
			    "load-microbatch m=2 slot=0; forward m=2 slot=0; backward m=2 slot=0; "
			    "reduce-gradients; optimizer-step");
	assert_int_equal(s.instrs[s.count - 1].microbatch, -1);
	assert_int_equal(s.instrs[s.count - 1].slot, -1);
	struct sl_schedule_check_stats st;
	check_ok(&t, &s, &st);
	assert_int_equal(st.ticks, 9);
	assert_int_equal(st.messages, 0);
	sl_schedule_free(&s);
	free_table(&t);
}

static void two_stages_four_microbatches(void **state)
{
	(void)state;
	struct sl_role_table t;
	int tp[] = {1, 1}, n[] = {4};
	make_table(&t, 2, 1, tp, n);
	struct sl_schedule *all;
	struct sl_err err = {0};
	assert_int_equal(sl_schedule_build_all(&t, &all, &err), 0);
	assert_int_equal(all[0].slots, 2);
	assert_int_equal(all[1].slots, 1);
	assert_schedule(&all[0],
			"load-microbatch m=0 slot=0; forward m=0 slot=0; "
			"send-activation m=0 slot=0 to 1; "
			"load-microbatch m=1 slot=1; forward m=1 slot=1; "
			"send-activation m=1 slot=1 to 1; "
			"recv-gradient m=0 slot=0 from 1; backward m=0 slot=0; "
			"load-microbatch m=2 slot=0; forward m=2 slot=0; "
			"send-activation m=2 slot=0 to 1; "
			"recv-gradient m=1 slot=1 from 1; backward m=1 slot=1; "
			"load-microbatch m=3 slot=1; forward m=3 slot=1; "
			"send-activation m=3 slot=1 to 1; "
			"recv-gradient m=2 slot=0 from 1; backward m=2 slot=0; "
			"recv-gradient m=3 slot=1 from 1; backward m=3 slot=1; "
			"reduce-gradients; optimizer-step");
	assert_schedule(&all[1],
			"load-microbatch m=0 slot=0; recv-activation m=0 slot=0 from 0; "
			"forward m=0 slot=0; backward m=0 slot=0; send-gradient m=0 slot=0 to 0; "
			"load-microbatch m=1 slot=0; recv-activation m=1 slot=0 from 0; "
			"forward m=1 slot=0; backward m=1 slot=0; send-gradient m=1 slot=0 to 0; "
			"load-microbatch m=2 slot=0; recv-activation m=2 slot=0 from 0; "
			"forward m=2 slot=0; backward m=2 slot=0; send-gradient m=2 slot=0 to 0; "
			"load-microbatch m=3 slot=0; recv-activation m=3 slot=0 from 0; "
			"forward m=3 slot=0; backward m=3 slot=0; send-gradient m=3 slot=0 to 0; "
			"reduce-gradients; optimizer-step");
	struct sl_schedule_check_stats st;
	check_ok(&t, all, &st);
	assert_int_equal(st.ticks, 3 * (4 + 2 - 1));
	assert_int_equal(st.busy_ticks, 12);
	assert_int_equal(st.messages, 8);
	sl_schedule_free_all(all, t.world_size);
	free_table(&t);
}

static void four_stages_two_microbatches(void **state)
{
	(void)state;
	struct sl_role_table t;
	int tp[] = {1, 1, 1, 1}, n[] = {2};
	make_table(&t, 4, 1, tp, n);
	struct sl_schedule *all;
	struct sl_err err = {0};
	assert_int_equal(sl_schedule_build_all(&t, &all, &err), 0);
	int slots[] = {2, 2, 2, 1};
	for (int k = 0; k < 4; k++)
		assert_int_equal(all[k].slots, slots[k]);
	/* n < P: stages 0 and 1 forward both before any backward (warm-up capped at n) */
	assert_schedule(&all[0],
			"load-microbatch m=0 slot=0; forward m=0 slot=0; "
			"send-activation m=0 slot=0 to 1; "
			"load-microbatch m=1 slot=1; forward m=1 slot=1; "
			"send-activation m=1 slot=1 to 1; "
			"recv-gradient m=0 slot=0 from 1; backward m=0 slot=0; "
			"recv-gradient m=1 slot=1 from 1; backward m=1 slot=1; "
			"reduce-gradients; optimizer-step");
	assert_schedule(&all[1],
			"recv-activation m=0 slot=0 from 0; forward m=0 slot=0; "
			"send-activation m=0 slot=0 to 2; "
			"recv-activation m=1 slot=1 from 0; forward m=1 slot=1; "
			"send-activation m=1 slot=1 to 2; "
			"recv-gradient m=0 slot=0 from 2; backward m=0 slot=0; "
			"send-gradient m=0 slot=0 to 0; "
			"recv-gradient m=1 slot=1 from 2; backward m=1 slot=1; "
			"send-gradient m=1 slot=1 to 0; "
			"reduce-gradients; optimizer-step");
	/* stage 2: one warm-up forward, then forward 1 / backward 0, then backward 1 */
	assert_schedule(&all[2],
			"recv-activation m=0 slot=0 from 1; forward m=0 slot=0; "
			"send-activation m=0 slot=0 to 3; "
			"recv-activation m=1 slot=1 from 1; forward m=1 slot=1; "
			"send-activation m=1 slot=1 to 3; "
			"recv-gradient m=0 slot=0 from 3; backward m=0 slot=0; "
			"send-gradient m=0 slot=0 to 1; "
			"recv-gradient m=1 slot=1 from 3; backward m=1 slot=1; "
			"send-gradient m=1 slot=1 to 1; "
			"reduce-gradients; optimizer-step");
	assert_schedule(&all[3],
			"load-microbatch m=0 slot=0; recv-activation m=0 slot=0 from 2; "
			"forward m=0 slot=0; backward m=0 slot=0; send-gradient m=0 slot=0 to 2; "
			"load-microbatch m=1 slot=0; recv-activation m=1 slot=0 from 2; "
			"forward m=1 slot=0; backward m=1 slot=0; send-gradient m=1 slot=0 to 2; "
			"reduce-gradients; optimizer-step");
	struct sl_schedule_check_stats st;
	check_ok(&t, all, &st);
	assert_int_equal(st.ticks, 3 * (2 + 4 - 1));
	sl_schedule_free_all(all, t.world_size);
	free_table(&t);
}

/* TP 2 -> 4 -> 1: the peer rule of schedule.h, rank by rank.
 * Ranks: stage 0 = 0,1; stage 1 = 2,3,4,5; stage 2 = 6. */
static void tp_peers_follow_the_rule(void **state)
{
	(void)state;
	struct sl_role_table t;
	int tp[] = {2, 4, 1}, n[] = {3};
	make_table(&t, 3, 1, tp, n);
	struct sl_schedule *all;
	struct sl_err err = {0};
	assert_int_equal(sl_schedule_build_all(&t, &all, &err), 0);
	char buf[256];
	/* first instruction of op on rank r, formatted */
#define FIRST(r, op_)                                                                          \
	do {                                                                                   \
		buf[0] = '\0';                                                                 \
		for (int i_ = 0; i_ < all[r].count; i_++)                                      \
			if (all[r].instrs[i_].op == (op_)) {                                   \
				sl_instr_format(&all[r].instrs[i_], buf, sizeof(buf));         \
				break;                                                         \
			}                                                                      \
	} while (0)
	FIRST(0, SL_INSTR_SEND_ACTIVATION);
	assert_string_equal(buf, "send-activation m=0 slot=0 to 2,4");
	FIRST(1, SL_INSTR_SEND_ACTIVATION);
	assert_string_equal(buf, "send-activation m=0 slot=0 to 3,5");
	FIRST(5, SL_INSTR_RECV_ACTIVATION);
	assert_string_equal(buf, "recv-activation m=0 slot=0 from 1");
	FIRST(2, SL_INSTR_SEND_ACTIVATION);
	assert_string_equal(buf, "send-activation m=0 slot=0 to 6");
	FIRST(3, SL_INSTR_SEND_ACTIVATION); /* t1 = 4 > t2 = 1: TP ranks 1..3 send nothing */
	assert_string_equal(buf, "");
	FIRST(6, SL_INSTR_RECV_ACTIVATION);
	assert_string_equal(buf, "recv-activation m=0 slot=0 from 2");
	FIRST(6, SL_INSTR_SEND_GRADIENT);
	assert_string_equal(buf, "send-gradient m=0 slot=0 to 2,3,4,5");
	FIRST(4, SL_INSTR_RECV_GRADIENT);
	assert_string_equal(buf, "recv-gradient m=0 slot=0 from 6");
	FIRST(3, SL_INSTR_SEND_GRADIENT);
	assert_string_equal(buf, "send-gradient m=0 slot=0 to 1");
	FIRST(4, SL_INSTR_SEND_GRADIENT); /* s % 4 == 2 has no s < 2 */
	assert_string_equal(buf, "");
	FIRST(1, SL_INSTR_RECV_GRADIENT);
	assert_string_equal(buf, "recv-gradient m=0 slot=0 from 3");
#undef FIRST
	/* every TP rank of a replica does the same compute */
	for (int r = 2; r < 6; r++)
		assert_int_equal(all[r].slots, 2);
	struct sl_schedule_check_stats st;
	check_ok(&t, all, &st);
	/* per micro-batch: activations 4 + 1 receivers, gradients 2 + 4 receivers */
	assert_int_equal(st.messages, 3 * (4 + 1 + 2 + 4));
	sl_schedule_free_all(all, t.world_size);
	free_table(&t);
}

static void tags_and_limits(void **state)
{
	(void)state;
	assert_int_equal(sl_schedule_tag(SL_MSG_ACTIVATION, 0), 0);
	assert_int_equal(sl_schedule_tag(SL_MSG_GRADIENT, 0), 1);
	assert_int_equal(sl_schedule_tag(SL_MSG_ACTIVATION, 7), 14);
	assert_true(sl_schedule_tag(SL_MSG_GRADIENT, SL_SCHEDULE_MAX_MICROBATCHES - 1) < 32767);
	assert_string_equal(sl_instr_op_name(SL_INSTR_SEND_ACTIVATION), "send-activation");
	assert_string_equal(sl_instr_op_name(SL_INSTR_OPTIMIZER_STEP), "optimizer-step");

	struct sl_role_table t;
	int tp[] = {1, 1}, n[] = {SL_SCHEDULE_MAX_MICROBATCHES + 1};
	make_table(&t, 2, 1, tp, n);
	struct sl_schedule s;
	struct sl_err err = {0};
	assert_int_equal(sl_schedule_build(&t, 0, &s, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "16001 micro-batches"));
	assert_null(s.instrs);
	t.microbatches[0] = SL_SCHEDULE_MAX_MICROBATCHES; /* the limit itself is fine */
	struct sl_schedule *all;
	assert_int_equal(sl_schedule_build_all(&t, &all, &err), 0);
	struct sl_schedule_check_stats st;
	check_ok(&t, all, &st);
	assert_int_equal(st.ticks, 3LL * (SL_SCHEDULE_MAX_MICROBATCHES + 1));
	sl_schedule_free_all(all, t.world_size);
	assert_int_equal(sl_schedule_build(&t, 2, &s, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "rank 2"));
	free_table(&t);

	int tp_big[] = {128}, n1[] = {1};
	make_table(&t, 1, 1, tp_big, n1);
	assert_int_equal(sl_schedule_build(&t, 0, &s, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "tp at most 64"));
	free_table(&t);
}

/* ---- (2) a few hundred generated plans --------------------------------------------------- */

static uint64_t rng_state = 0x5eed5a11f00dULL;

static int rnd(int lo, int hi) /* inclusive, xorshift64 */
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return lo + (int)(rng_state % (uint64_t)(hi - lo + 1));
}

static void checker_passes_generated_plans(void **state)
{
	(void)state;
	const int tps[] = {1, 2, 4};
	int mixed_tp = 0, uneven = 0;
	for (int c = 0; c < 400; c++) {
		int P = rnd(1, 6), D = rnd(1, 4);
		int tp[6 * 4], n[4];
		for (int i = 0; i < P * D; i++)
			tp[i] = tps[rnd(0, 2)];
		for (int j = 0; j < D; j++)
			n[j] = rnd(1, 20);
		struct sl_role_table t;
		make_table(&t, P, D, tp, n);
		struct sl_schedule *all;
		struct sl_err err = {0};
		assert_int_equal(sl_schedule_build_all(&t, &all, &err), 0);
		struct sl_schedule_check_stats st;
		check_ok(&t, all, &st);

		/* messages: each receiver gets one copy per micro-batch and boundary */
		long long want_msgs = 0;
		int max_n = 0;
		for (int j = 0; j < D; j++) {
			for (int k = 0; k + 1 < P; k++)
				want_msgs += (long long)n[j] * (tp[(k + 1) * D + j] + tp[k * D + j]);
			max_n = n[j] > max_n ? n[j] : max_n;
			uneven |= j && n[j] != n[0];
		}
		for (int k = 0; k < P; k++)
			for (int j = 0; j < D; j++)
				mixed_tp |= (j && tp[k * D + j] != tp[k * D]) ||
					    (k && tp[k * D + j] != tp[(k - 1) * D + j]);
		assert_int_equal(st.messages, want_msgs);
		/* pipelines run independently and TP does not change unit costs */
		assert_int_equal(st.ticks, 3LL * (max_n + P - 1));
		assert_int_equal(st.busy_ticks, 3LL * max_n);
		/* 1F1B's in-flight bound, and what the schedule asks the runtime to allocate */
		for (int r = 0; r < t.world_size; r++) {
			int k = t.roles[r].stage, nj = n[t.roles[r].pipeline];
			assert_int_equal(all[r].slots, (P - k) < nj ? P - k : nj);
		}
		sl_schedule_free_all(all, t.world_size);
		free_table(&t);
	}
	assert_true(mixed_tp && uneven); /* the generator did exercise both */
}

/* ---- (3) the checker rejects corrupted schedules ----------------------------------------- */

/* P=3, D=2. Replica TP: stage 0 {2, 1}, stage 1 {1, 4}, stage 2 {2, 2}; n = {5, 3}.
 * Ranks: (0,0) 0-1, (0,1) 2, (1,0) 3, (1,1) 4-7, (2,0) 8-9, (2,1) 10-11. */
static struct sl_role_table base_table;

static struct sl_schedule *fresh(void)
{
	static const int tp[] = {2, 1, 1, 4, 2, 2}, n[] = {5, 3};
	if (!base_table.roles)
		make_table(&base_table, 3, 2, tp, n);
	struct sl_schedule *all;
	struct sl_err err = {0};
	assert_int_equal(sl_schedule_build_all(&base_table, &all, &err), 0);
	check_ok(&base_table, all, NULL);
	return all;
}

static int find(const struct sl_schedule *s, enum sl_instr_op op, int m)
{
	for (int i = 0; i < s->count; i++)
		if (s->instrs[i].op == op && s->instrs[i].microbatch == m)
			return i;
	fail_msg("rank %d has no %s m=%d", s->rank, sl_instr_op_name(op), m);
	return -1;
}

static void remove_at(struct sl_schedule *s, int i)
{
	memmove(&s->instrs[i], &s->instrs[i + 1], sizeof(s->instrs[0]) * (size_t)(s->count - i - 1));
	s->count--;
}

static void insert_copy(struct sl_schedule *s, int i, int at)
{
	struct sl_instr copy = s->instrs[i];
	s->instrs = realloc(s->instrs, sizeof(s->instrs[0]) * (size_t)(s->count + 1));
	assert_non_null(s->instrs);
	memmove(&s->instrs[at + 1], &s->instrs[at], sizeof(s->instrs[0]) * (size_t)(s->count - at));
	s->instrs[at] = copy;
	s->count++;
}

static void swap(struct sl_schedule *s, int a, int b)
{
	struct sl_instr x = s->instrs[a];
	s->instrs[a] = s->instrs[b];
	s->instrs[b] = x;
}

/* checks all, expects SL_EINPUT with every needle in the message, frees all */
static void expect_rejected(struct sl_schedule *all, const char *needle1, const char *needle2)
{
	struct sl_err err = {0};
	int rc = sl_schedule_check(&base_table, all, NULL, &err);
	if (rc != SL_EINPUT || !strstr(err.msg, needle1) || (needle2 && !strstr(err.msg, needle2)))
		fail_msg("rc %d, message '%s', wanted '%s' and '%s'", rc, err.msg, needle1,
			 needle2 ? needle2 : "");
	sl_schedule_free_all(all, base_table.world_size);
}

static void checker_rejects_corruptions(void **state)
{
	(void)state;
	struct sl_schedule *all;

	/* a dropped send */
	all = fresh();
	remove_at(&all[0], find(&all[0], SL_INSTR_SEND_ACTIVATION, 2));
	expect_rejected(all, "rank 0 (stage 0 of 3, pipeline 0, tp rank 0 of 2)",
			"micro-batch 2's activation was never sent");
	all = fresh();
	remove_at(&all[8], find(&all[8], SL_INSTR_SEND_GRADIENT, 4));
	expect_rejected(all, "rank 8", "gradient was never sent");

	/* a receive moved before the send it depends on: rank 0 waits for the gradient of
	 * micro-batch 0 before it sends micro-batch 0's activation, rank 3 waits for that */
	all = fresh();
	swap(&all[0], find(&all[0], SL_INSTR_SEND_ACTIVATION, 0),
	     find(&all[0], SL_INSTR_RECV_GRADIENT, 0));
	expect_rejected(all, "deadlock", "(a cycle)");
	all = fresh();
	swap(&all[0], find(&all[0], SL_INSTR_SEND_ACTIVATION, 0),
	     find(&all[0], SL_INSTR_RECV_GRADIENT, 0));
	{
		struct sl_err err = {0};
		assert_int_equal(sl_schedule_check(&base_table, all, NULL, &err), SL_EINPUT);
		assert_non_null(strstr(err.msg, "rank 0 (stage 0 of 3, pipeline 0, tp rank 0 of 2) "
					   "instruction 2 'recv-gradient m=0 slot=0 from 3' waits "
					   "for rank 3"));
		assert_non_null(strstr(err.msg, "recv-activation m=0 slot=0 from 0' waits for "
					   "rank 0"));
		sl_schedule_free_all(all, base_table.world_size);
	}
	/* a forward before its activation arrived */
	all = fresh();
	swap(&all[4], find(&all[4], SL_INSTR_RECV_ACTIVATION, 1),
	     find(&all[4], SL_INSTR_FORWARD, 1));
	expect_rejected(all, "rank 4", "forward before micro-batch 1's activation is received");

	/* a duplicated forward */
	all = fresh();
	insert_copy(&all[3], find(&all[3], SL_INSTR_FORWARD, 0), find(&all[3], SL_INSTR_FORWARD, 0) + 1);
	expect_rejected(all, "rank 3", "forwarded twice");
	/* forwards out of order */
	all = fresh();
	{
		int a = find(&all[2], SL_INSTR_FORWARD, 0), b = find(&all[2], SL_INSTR_FORWARD, 1);
		all[2].instrs[a].microbatch = 1;
		all[2].instrs[a].slot = 1;
		all[2].instrs[b].microbatch = 0;
		all[2].instrs[b].slot = 0;
	}
	expect_rejected(all, "rank 2", "out of order");
	/* a dropped backward */
	all = fresh();
	remove_at(&all[10], find(&all[10], SL_INSTR_SEND_GRADIENT, 2));
	remove_at(&all[10], find(&all[10], SL_INSTR_BACKWARD, 2));
	expect_rejected(all, "rank 10", "micro-batch 2 is not backwarded yet");

	/* a wrong slot */
	all = fresh();
	all[0].instrs[find(&all[0], SL_INSTR_FORWARD, 1)].slot = 0;
	expect_rejected(all, "rank 0", "wrong slot 0");
	/* fewer slots than the warm-up needs: forward 1 into the slot micro-batch 0 holds */
	all = fresh();
	all[1].slots = 1;
	for (int i = 0; i < all[1].count; i++)
		if (all[1].instrs[i].slot > 0)
			all[1].instrs[i].slot = 0;
	expect_rejected(all, "rank 1", "slot 0 still holds micro-batch 0");
	/* more slots than 1F1B's bound */
	all = fresh();
	all[8].slots = 2;
	expect_rejected(all, "rank 8", "1 .. 1");

	/* a wrong peer on a receive, and a send to the wrong rank */
	static const int wrong[] = {0}, extra[] = {4, 5, 6};
	all = fresh();
	all[5].instrs[find(&all[5], SL_INSTR_RECV_ACTIVATION, 0)].peers = wrong;
	expect_rejected(all, "rank 5 (stage 1 of 3, pipeline 1, tp rank 1 of 4)",
			"wrong peers: the TP rule gives 2");
	all = fresh();
	{
		struct sl_instr *in = &all[2].instrs[find(&all[2], SL_INSTR_SEND_ACTIVATION, 1)];
		in->peers = extra;
		in->peer_count = 3;
	}
	expect_rejected(all, "rank 2", "the TP rule gives 4,5,6,7");

	/* a missing load on the last stage */
	all = fresh();
	remove_at(&all[9], find(&all[9], SL_INSTR_LOAD_MICROBATCH, 3));
	expect_rejected(all, "rank 9", "backward before micro-batch 3's targets are loaded");
	/* a load on a middle stage */
	all = fresh();
	all[3].instrs[find(&all[3], SL_INSTR_RECV_ACTIVATION, 0)].op = SL_INSTR_LOAD_MICROBATCH;
	expect_rejected(all, "rank 3", "only the first and the last stage load data");

	/* optimizer before reduce; work after reduce */
	all = fresh();
	swap(&all[6], all[6].count - 1, all[6].count - 2);
	expect_rejected(all, "rank 6", "optimizer step before reduce-gradients");
	all = fresh();
	insert_copy(&all[7], find(&all[7], SL_INSTR_FORWARD, 0), all[7].count - 1);
	expect_rejected(all, "rank 7", "after reduce-gradients");

	/* a schedule under the wrong rank */
	all = fresh();
	{
		struct sl_schedule x = all[0];
		all[0] = all[1];
		all[1] = x;
	}
	expect_rejected(all, "rank 0", "the schedule is for rank 1");
	free_table(&base_table);
}

/* ---- (4) unit-cost makespan against the 1F1B closed form --------------------------------- */

/* Forward 1, backward 2, transfers free. Stage k's first forward ends at k+1, the last stage's
 * backwards then pace the pipeline: in steady state every stage does one forward and one
 * backward per 3 ticks, and stage 0's last backward ends when the gradient of micro-batch n-1
 * has walked back P-1 stages: 3n + 3(P-1) = 3(n+P-1), for n < P too (n = 1: P forwards and P
 * backwards in a chain, 3P). The bubble is then (P-1)/(n+P-1), 1F1B's (and GPipe's). */
static void unit_cost_matches_1f1b(void **state)
{
	(void)state;
	for (int P = 1; P <= 8; P++)
		for (int n = 1; n <= 32; n++) {
			int tp[8], nn[] = {n};
			for (int k = 0; k < P; k++)
				tp[k] = 1;
			struct sl_role_table t;
			make_table(&t, P, 1, tp, nn);
			struct sl_schedule *all;
			struct sl_err err = {0};
			assert_int_equal(sl_schedule_build_all(&t, &all, &err), 0);
			struct sl_schedule_check_stats st;
			check_ok(&t, all, &st);
			assert_int_equal(st.ticks, 3LL * (n + P - 1));
			assert_int_equal(st.busy_ticks, 3LL * n);
			double want = (double)(P - 1) / (double)(n + P - 1);
			assert_true(st.bubble > want - 1e-12 && st.bubble < want + 1e-12);
			sl_schedule_free_all(all, t.world_size);
			free_table(&t);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_stage_three_microbatches),
		cmocka_unit_test(two_stages_four_microbatches),
		cmocka_unit_test(four_stages_two_microbatches),
		cmocka_unit_test(tp_peers_follow_the_rule),
		cmocka_unit_test(tags_and_limits),
		cmocka_unit_test(checker_passes_generated_plans),
		cmocka_unit_test(checker_rejects_corruptions),
		cmocka_unit_test(unit_cost_matches_1f1b),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
