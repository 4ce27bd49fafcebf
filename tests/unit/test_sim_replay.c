/* Unit tests for the cost model of our own runtime (time_replay.c): closed forms on a
 * profile of known numbers, written here in the format `sailor profile` writes. */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "cluster/catalogue.h"
#include "cluster/cluster_file.h"
#include "runtime/grad_sync.h"
#include "sim/internal.h"
#include "sim/replay.h"

/* per layer kind at (mbs 2, tp 1): seconds and bytes */
#define F_EMB 0.001
#define F_BLK 0.010
#define F_HEAD 0.004
#define B_EMB 0.002
#define B_BLK 0.020
#define B_HEAD 0.006
#define UPDATE 0.003   /* update_s of the profiled embedding + 2 blocks + head */
#define P_EMB 1000000.0
#define P_BLK 3000000.0
#define P_HEAD 1500000.0
#define A_BLK 2000000.0
#define A_HEAD 500000.0
#define WS 700000.0
#define BASE 50000000.0

static char dir[] = "/tmp/sailor-test-sim-runtime-XXXXXX";
static struct sl_sim_env *env;

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	char path[512], text[8192];
	struct sl_err err = {0};
	/* a device without a CPU quota and one with (0.25 of a core in 10 ms periods) */
	snprintf(path, sizeof(path), "%s/gpus.json", dir);
	write_file(path, "{\"schema\": \"sailor.gpus/1\", \"gpus\": ["
		   "{\"name\": \"cpu-fast\", \"memory_bytes\": 2147483648, \"gpus_per_node\": 2, "
		   "\"usd_per_hour\": 0.04},"
		   "{\"name\": \"cpu-quota\", \"memory_bytes\": 2147483648, \"gpus_per_node\": 2, "
		   "\"usd_per_hour\": 0.01, \"cpu_quota\": {\"cores\": 0.25, \"period_s\": 0.01}}]}\n");
	if (sl_catalogue_set_overlay(path, &err))
		return -1;
	snprintf(path, sizeof(path), "%s/gpt2-tiny", dir);
	mkdir(path, 0777);
	/* gpt2-tiny: layers 0 (embedding), 1-4 (blocks), 5 (head) */
	int n = snprintf(text, sizeof(text), "{\"schema\": \"sailor.profile/1\", \"source\": "
			 "{\"entries\": {\"mbs 2 tp 1\": {\"memory\": {"
			 "\"embedding\": {\"params_bytes\": %.0f, \"activations_bytes\": 0}, "
			 "\"block\": {\"params_bytes\": %.0f, \"activations_bytes\": %.0f}, "
			 "\"head\": {\"params_bytes\": %.0f, \"activations_bytes\": %.0f}, "
			 "\"workspace_bytes\": %.0f, \"runtime_rss_bytes\": %.0f, "
			 "\"mpi_ranks\": true}}}}, \"2\": {\"1\": {",
			 P_EMB, P_BLK, A_BLK, P_HEAD, A_HEAD, WS, BASE);
	for (int l = 0; l < 6; l++) {
		double f = l == 0 ? F_EMB : (l == 5 ? F_HEAD : F_BLK);
		double b = l == 0 ? B_EMB : (l == 5 ? B_HEAD : B_BLK);
		n += snprintf(text + n, sizeof(text) - (size_t)n, "%s\"%d\": [%g, %g, %g]",
			      l ? ", " : "", l, f, b, UPDATE);
	}
	snprintf(text + n, sizeof(text) - (size_t)n, "}}}\n");
	snprintf(path, sizeof(path), "%s/gpt2-tiny/cpu-fast.json", dir);
	write_file(path, text);
	snprintf(path, sizeof(path), "%s/gpt2-tiny/cpu-quota.json", dir);
	write_file(path, text);
	if (sl_sim_env_load_overlaid("gpt2-tiny", "data", dir, &env, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sl_sim_env_free(env);
	char path[512];
	snprintf(path, sizeof(path), "%s/gpt2-tiny/cpu-fast.json", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/gpt2-tiny/cpu-quota.json", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/gpus.json", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/gpt2-tiny", dir);
	rmdir(path);
	rmdir(dir);
	sl_catalogue_set_overlay(NULL, NULL);
	return 0;
}

static void load_plan(const char *json, struct sl_plan *plan)
{
	json_error_t jerr;
	json_t *root = json_loads(json, 0, &jerr);
	assert_non_null(root);
	struct sl_err err = {0};
	sl_plan_init(plan);
	int rc = sl_plan_from_json(root, NULL, &env->catalogue, plan, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	assert_int_equal(rc, 0);
	json_decref(root);
}

/* A two-stage plan of one micro-batch of 2: layers 0-2 on a device of type gpu in zone a, 3-5 on
 * one in zone b. */
static void load_two_zone_plan(const char *gpu, struct sl_plan *plan)
{
	char json[512];
	snprintf(json, sizeof(json),
		 "{\"schema\": \"sailor.plan/1\", \"global_batch\": 2, \"micro_batch\": 2, "
		 "\"stages\": [{\"layers\": [0, 2], \"replicas\": [{\"gpu\": \"%s\", \"zone\": "
		 "\"us-central1-a\"}]}, {\"layers\": [3, 5], \"replicas\": [{\"gpu\": \"%s\", "
		 "\"zone\": \"us-central1-b\"}]}]}", gpu, gpu);
	load_plan(json, plan);
}

static void one_rank_is_its_micro_batches_plus_the_update(void **state)
{
	(void)state;
	struct sl_plan plan;
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 8, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\"}]}]}", &plan);
	static struct sl_sim_result res;
	struct sl_err err = {0};
	assert_true(sl_sim_replay_uses(env, &plan));
	assert_int_equal(sl_simulate(env, &plan, SL_COST_SAILOR, &res, &err), 0);
	assert_true(res.runtime_sailor);
	double fb = F_EMB + 4 * F_BLK + F_HEAD + B_EMB + 4 * B_BLK + B_HEAD;
	struct sl_sim_replica_query q = {
		.gpu = res.stages[0].memory_replica >= 0 ? plan.replicas[0].gpu : 0,
		.mbs = 2, .tp = 1, .first_layer = 0, .last_layer = 5};
	double upd = sl_sim_stage_update_s(env, SL_COST_SAILOR, &q);
	assert_true(fabs(res.iteration_time_s - (4 * fb + upd)) < 1e-9);
	/* memory: baseline + storage (one table: no head copy) + 1 slot + workspace */
	double table = 4.0 * 4.0 * env->model.vocab * env->model.hidden;
	double storage = P_EMB + 4 * P_BLK + P_HEAD - table;
	/* + the gradient bucket (16 MiB, zeroed: resident) and one gradient buffer; the model's
	 * bucket size is the runtime's */
	assert_int_equal((long)SL_GRAD_BUCKET_FLOATS * 4, 16L * 1024 * 1024);
	double msg = 4.0 * 2 * env->model.seq_len * env->model.hidden;
	double want = BASE + storage + (4 * A_BLK + A_HEAD) + WS + 16.0 * 1024 * 1024 + msg;
	assert_true(fabs(res.peak_memory_bytes - want) < 1.0);
	sl_plan_free(&plan);
}

/* The model counts the gradient bucket at SL_RUNTIME_BUCKET_BYTES on every rank, and the
 * runtime allocates exactly that much however small the stage's gradients (a bucket sized to
 * gpt2-tiny's 3.4 MB left its runs 13 MB under the model and every measured set). A tensor
 * larger than the bucket widens it: whole tensors are reduced whole. */
static void the_runtime_allocates_the_bucket_the_model_counts(void **state)
{
	(void)state;
	struct sl_role role = {0};
	struct sl_role_table table = {.world_size = 1, .num_stages = 1, .num_pipelines = 1,
				      .roles = &role};
	struct sl_comm comm = {.rank = 0, .size = 1};
	struct sl_param small = {.name = "h.0.mlp.fc.weight", .ndim = 2, .full_shape = {512, 128}};
	small.shape[0] = 512, small.shape[1] = 128, small.numel = 512 * 128;
	struct sl_param *one[] = {&small};
	struct sl_grad_sync sync;
	struct sl_err err = {0};
	assert_int_equal(sl_grad_sync_init(&sync, &comm, NULL, &table, one, 1, &err), 0);
	assert_true((double)sync.bucket_floats * 4 == SL_RUNTIME_BUCKET_BYTES);
	sl_grad_sync_free(&sync);
	struct sl_param big = small;
	big.full_shape[0] = big.shape[0] = 2560, big.full_shape[1] = big.shape[1] = 2048;
	big.numel = 2560LL * 2048; /* 5.2 M floats, over the bucket's 4 M */
	struct sl_param *two[] = {&small, &big};
	assert_int_equal(sl_grad_sync_init(&sync, &comm, NULL, &table, two, 2, &err), 0);
	assert_int_equal((long long)sync.bucket_floats, big.numel);
	sl_grad_sync_free(&sync);
}

/* Selective recomputation reruns each block's attention core in its backward: the runtime model
 * charges the core's share of the blocks' forward that the profile measured (the profiler's
 * recompute_attention over forward_block), and without that measurement the core's share of a
 * block's FLOPs, T / (6C + T) for gpt2-tiny's blocks (ffn = 4C). */
static void selective_recomputation_costs_the_profiled_attention_core(void **state)
{
	(void)state;
	/* the setup's profile, with the core measured at 0.4 of the block's forward */
	char measured_dir[] = "/tmp/sailor-test-sim-runtime-att-XXXXXX", path[512], text[8192];
	assert_non_null(mkdtemp(measured_dir));
	snprintf(path, sizeof(path), "%s/gpt2-tiny/cpu-fast.json", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	const char *key = "\"mbs 2 tp 1\": {";
	char *at = strstr(text, key);
	assert_non_null(at);
	at += strlen(key);
	char with[8192];
	snprintf(with, sizeof(with), "%.*s\"median_s\": {\"forward_block\": %g, "
		 "\"recompute_attention\": %g}, %s", (int)(at - text), text, F_BLK, 0.4 * F_BLK, at);
	snprintf(path, sizeof(path), "%s/gpt2-tiny", measured_dir);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/gpt2-tiny/cpu-fast.json", measured_dir);
	write_file(path, with);
	struct sl_sim_env *measured = NULL;
	struct sl_err err = {0};
	assert_int_equal(sl_sim_env_load_overlaid("gpt2-tiny", "data", measured_dir, &measured, &err),
			 0);
	unlink(path);
	snprintf(path, sizeof(path), "%s/gpt2-tiny", measured_dir);
	rmdir(path);
	rmdir(measured_dir);
	struct sl_plan plain, selective;
#define ONE_STAGE(options)                                                                        \
	"{\"schema\": \"sailor.plan/1\", \"global_batch\": 8, \"micro_batch\": 2, \"stages\": "        \
	"[{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", \"zone\": \"us-central1-a\"}]" \
	options "}]}"
	load_plan(ONE_STAGE(""), &plain);
	load_plan(ONE_STAGE(", \"recompute\": \"selective\""), &selective);
#undef ONE_STAGE
	static struct sl_sim_result base, by_flops, by_profile;
	assert_int_equal(sl_simulate(env, &plain, SL_COST_SAILOR, &base, &err), 0);
	assert_int_equal(sl_simulate(env, &selective, SL_COST_SAILOR, &by_flops, &err), 0);
	assert_int_equal(sl_simulate(measured, &selective, SL_COST_SAILOR, &by_profile, &err), 0);
	assert_true(base.runtime_sailor && by_profile.runtime_sailor);
	/* 4 micro-batches, each backward rerunning the cores of 4 blocks */
	double T = env->model.seq_len, C = env->model.hidden;
	assert_true(fabs(by_flops.iteration_time_s -
			 (base.iteration_time_s + 4 * 4 * F_BLK * T / (6 * C + T))) < 1e-9);
	assert_true(fabs(by_profile.iteration_time_s -
			 (base.iteration_time_s + 4 * 4 * F_BLK * 0.4)) < 1e-9);
	/* the planner's stage time charges the same */
	struct sl_sim_replica_query q = {.gpu = selective.replicas[0].gpu, .mbs = 2, .tp = 1,
					 .first_layer = 0, .last_layer = 5,
					 .recompute = SL_RECOMPUTE_SELECTIVE};
	assert_true(fabs(sl_sim_stage_recompute_s(measured, SL_COST_SAILOR, &q) - 4 * F_BLK * 0.4) <
		    1e-12);
	sl_plan_free(&plain);
	sl_plan_free(&selective);
	sl_sim_env_free(measured);
}

static void pipeline_keeps_min_p_k_n_slots_and_waits_for_transfers(void **state)
{
	(void)state;
	struct sl_plan plan;
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 16, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 2], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\"}]}, {\"layers\": [3, 5], \"replicas\": [{\"gpu\": "
		  "\"cpu-fast\", \"zone\": \"us-central1-a\"}]}]}", &plan);
	static struct sl_sim_result res;
	struct sl_err err = {0};
	assert_int_equal(sl_simulate(env, &plan, SL_COST_SAILOR, &res, &err), 0);
	double f0 = F_EMB + 2 * F_BLK, b0 = B_EMB + 2 * B_BLK;
	double f1 = 2 * F_BLK + F_HEAD, b1 = 2 * B_BLK + B_HEAD;
	/* 8 micro-batches: no faster than the busier stage's work plus the other's first and last
	 * micro-batch, whatever the transfers */
	double busiest = 8 * fmax(f0 + b0, f1 + b1);
	assert_true(res.iteration_time_s > busiest + fmin(f0, f1));
	assert_true(res.stages[1].p2p_s > 0); /* stage 1 waits for activations */
	/* stage 0 holds min(P - 0, 8) = 2 micro-batches' activations, stage 1 one */
	double act0 = 2 * (2 * A_BLK), act1 = 1 * (2 * A_BLK + A_HEAD);
	assert_true(fabs(res.stages[0].memory.activations_bytes - (act0 + WS)) < 1.0);
	assert_true(fabs(res.stages[1].memory.activations_bytes - (act1 + WS)) < 1.0);
	/* stage 1 keeps a receive buffer and a gradient buffer per slot: 2 x 1 activation */
	double msg = 4.0 * 2 * env->model.seq_len * env->model.hidden;
	assert_true(res.stages[1].memory.buffers_bytes >= 2 * msg);
	sl_plan_free(&plan);
}

static void data_parallel_adds_an_allreduce_and_halves_the_work(void **state)
{
	(void)state;
	struct sl_plan one, two;
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 16, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\"}]}]}", &one);
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 16, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\", \"count\": 2}]}]}", &two);
	static struct sl_sim_result r1, r2;
	struct sl_err err = {0};
	assert_int_equal(sl_simulate(env, &one, SL_COST_SAILOR, &r1, &err), 0);
	assert_int_equal(sl_simulate(env, &two, SL_COST_SAILOR, &r2, &err), 0);
	double upd = r1.optimizer_s;
	double compute1 = r1.iteration_time_s - upd;
	assert_true(r2.dp_sync_s > 0);
	assert_true(fabs(r2.iteration_time_s - (compute1 / 2 + upd + r2.dp_sync_s)) < 1e-9);
	sl_plan_free(&one);
	sl_plan_free(&two);
}

static void a_cpu_quota_device_runs_in_bursts(void **state)
{
	(void)state;
	struct sl_plan one, pipe, pipe_q;
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 8, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-quota\", "
		  "\"zone\": \"us-central1-a\"}]}]}", &one);
	static struct sl_sim_result r1, r2, r3;
	struct sl_err err = {0};
	assert_int_equal(sl_simulate(env, &one, SL_COST_SAILOR, &r1, &err), 0);
	/* back-to-back work on one rank: the quota's average rate, to within a period */
	double fb = F_EMB + 4 * F_BLK + F_HEAD + B_EMB + 4 * B_BLK + B_HEAD;
	assert_true(fabs(r1.iteration_time_s - (4 * fb + r1.optimizer_s)) < 0.0101);
	/* the CPU it spends (what `sailor run` reports as cpu_s): its work at full speed, the
	 * quota's share of the time at its average rate; a device that is no quota reports none */
	assert_true(fabs(r1.stages[0].cpu_s - 0.25 * (4 * fb + r1.optimizer_s)) < 1e-6);
	/* a pipeline: the ranks wait and then work with a fresh budget, so a quota device is
	 * faster in it than its average rate says, and never slower than the unthrottled device */
#define TWO_STAGES(gpu) \
	"{\"schema\": \"sailor.plan/1\", \"global_batch\": 16, \"micro_batch\": 2, " \
	"\"stages\": [{\"layers\": [0, 2], \"replicas\": [{\"gpu\": \"" gpu "\", " \
	"\"zone\": \"us-central1-a\"}]}, {\"layers\": [3, 5], \"replicas\": " \
	"[{\"gpu\": \"" gpu "\", \"zone\": \"us-central1-a\"}]}]}"
	load_plan(TWO_STAGES("cpu-fast"), &pipe);
	load_plan(TWO_STAGES("cpu-quota"), &pipe_q);
	assert_int_equal(sl_simulate(env, &pipe, SL_COST_SAILOR, &r2, &err), 0);
	assert_int_equal(sl_simulate(env, &pipe_q, SL_COST_SAILOR, &r3, &err), 0);
	assert_true(r3.stages[0].compute_s < r2.stages[0].compute_s);
	assert_true(r3.stages[0].compute_s > 0.25 * r2.stages[0].compute_s);
	assert_true(r2.stages[0].cpu_s == 0 && r3.stages[0].cpu_s > 0);
	sl_plan_free(&one);
	sl_plan_free(&pipe);
	sl_plan_free(&pipe_q);
}

/* A sleeping wait's tests cost CPU that a quota device's budget pays (the profile's
 * source.idle_wait): the pipeline's ranks wait, so the more a test costs, the slower the step;
 * and a test that costs more than a period's budget still ends (the rank runs a period later). */
static void a_sleeping_waits_tests_spend_the_quota(void **state)
{
	(void)state;
	struct sl_plan pipe_q;
	load_plan(TWO_STAGES("cpu-quota"), &pipe_q);
	struct sl_err err = {0};
	struct sl_profile *prof = NULL;
	for (int g = 0; g < SL_MAX_GPU_TYPES; g++)
		if (env->profiles[g] && strstr(env->profiles[g]->path, "cpu-quota.json"))
			prof = env->profiles[g];
	assert_non_null(prof);
	static struct sl_sim_result free_tests, cheap, dear, absurd;
	assert_int_equal(sl_simulate(env, &pipe_q, SL_COST_SAILOR, &free_tests, &err), 0);
	prof->idle_measured = 1;
	prof->idle_late_per_test_s = 25e-6;
	prof->idle_cpu_per_test_s = 5e-6;
	assert_int_equal(sl_simulate(env, &pipe_q, SL_COST_SAILOR, &cheap, &err), 0);
	prof->idle_cpu_per_test_s = 60e-6;
	assert_int_equal(sl_simulate(env, &pipe_q, SL_COST_SAILOR, &dear, &err), 0);
	prof->idle_cpu_per_test_s = 0.004; /* more than the 2.5 ms budget of a period */
	assert_int_equal(sl_simulate(env, &pipe_q, SL_COST_SAILOR, &absurd, &err), 0);
	prof->idle_measured = 0;
	prof->idle_cpu_per_test_s = prof->idle_late_per_test_s = 0;
	/* a cheap test may move the step's small all-reduces, whose rounds end at tests, by a
	 * round or two (the step is timed norm to norm: 40 us here) */
	assert_true(cheap.iteration_time_s >= free_tests.iteration_time_s - 1e-4);
	assert_true(dear.iteration_time_s > cheap.iteration_time_s);
	assert_true(absurd.iteration_time_s > dear.iteration_time_s);
	assert_true(isfinite(absurd.iteration_time_s));
	/* the second stage waits for its first activation: it counts tests, and pays their CPU
	 * (a dearer test, more CPU for the same work) */
	assert_true(cheap.stages[1].wait_tests >= 1);
	assert_true(dear.stages[1].cpu_s - cheap.stages[1].cpu_s >
		    0.5 * 55e-6 * dear.stages[1].wait_tests);
	sl_plan_free(&pipe_q);
}

/* Seconds the fit of a replica's link to a replica on another host takes for bytes. */
static double wire_s(const struct sl_plan *plan, double bytes)
{
	const struct sl_replica *r = &plan->replicas[0];
	const struct sl_link_fit *fit =
		sl_network_fit(env->network, r->zone, r->gpu, 1, r->zone, r->gpu, 1);
	assert_non_null(fit);
	return bytes / 1e9 / sl_link_fit_gbps(fit, bytes);
}

/* Two replicas of device type gpu (each its own host) holding the whole model, without ZeRO-1
 * (plain, r0) and with it (zero, r1), simulated. */
static void simulate_with_and_without_zero(const char *gpu, struct sl_plan *plain,
					   struct sl_plan *zero, struct sl_sim_result *r0,
					   struct sl_sim_result *r1)
{
	char text[512];
	for (int z = 0; z < 2; z++) {
		snprintf(text, sizeof(text),
			 "{\"schema\": \"sailor.plan/1\", \"global_batch\": 16, \"micro_batch\": 2, "
			 "\"stages\": [{\"layers\": [0, 5], \"zero\": %d, \"replicas\": [{\"gpu\": "
			 "\"%s\", \"zone\": \"us-central1-a\", \"count\": 2}]}]}", z, gpu);
		load_plan(text, z ? zero : plain);
		struct sl_err err = {0};
		assert_int_equal(sl_simulate(env, z ? zero : plain, SL_COST_SAILOR, z ? r1 : r0, &err),
				 0);
	}
}

/* ZeRO-1 over two replicas (each its own host) where every rank polls: MPI's blocking
 * reduce-scatter and all-gather move a ring all-reduce's bytes, timed as that all-reduce;
 * the update is halved. */
static void zero_with_blocking_collectives_costs_the_allreduce(void **state)
{
	(void)state;
	struct sl_plan plain, zero;
	static struct sl_sim_result r0, r1;
	simulate_with_and_without_zero("cpu-fast", &plain, &zero, &r0, &r1);
	assert_true(r0.stages[0].dp_sync_s > 0);
	assert_true(fabs(r1.stages[0].dp_sync_s - r0.stages[0].dp_sync_s) < 1e-12);
	assert_true(fabs(r1.optimizer_s - r0.optimizer_s / 2) < 1e-12);
	assert_true(fabs(r1.iteration_time_s - (r0.iteration_time_s - r0.optimizer_s / 2)) < 1e-9);
	sl_plan_free(&plain);
	sl_plan_free(&zero);
}

/* The same on devices that are CPU quotas, whose ranks wait asleep, so that every rank runs the
 * non-blocking collectives (libnbc): the reduce-scatter sends rank 1's whole buffer to rank 0,
 * which adds it and sends half of the sum back; the all-gather after the update moves half each
 * way at once. A ring would move half each way twice, before the norm. */
static void zero_with_libnbc_moves_the_whole_buffer_to_rank_0_and_back(void **state)
{
	(void)state;
	struct sl_plan plain, zero;
	static struct sl_sim_result r0, r1;
	simulate_with_and_without_zero("cpu-quota", &plain, &zero, &r0, &r1);
	/* the model is small enough for one call (1 Mi floats) */
	double B = SL_FP32_BYTES * sl_sim_stage_params(env, 1, 0, 5);
	assert_true(B < 4.0 * 1024 * 1024);
	/* the last rank to arrive waits for the whole buffer's trip and its half's return; the
	 * later rank of the all-gather for a half */
	assert_true(r1.stages[0].dp_sync_s >= wire_s(&zero, B) + wire_s(&zero, B / 2) - 1e-12);
	assert_true(r1.stages[0].optimizer_s >= r0.optimizer_s / 2 + wire_s(&zero, B / 2) - 1e-12);
	assert_true(r0.stages[0].dp_sync_s < wire_s(&zero, B) + wire_s(&zero, B / 2));
	assert_true(r1.iteration_time_s > r0.iteration_time_s);
	sl_plan_free(&plain);
	sl_plan_free(&zero);
}

/* Where the ranks run the non-blocking collectives (CPU quotas), libnbc's ring all-reduce
 * receives each round's segment into a scratch buffer: a rank holds its first half (two
 * replicas) beside the buffers that polling ranks hold; with ZeRO-1 the stage reduce-scatters
 * instead, whose scratch is libnbc's binomial tree's (rank 0 receives once: one buffer). */
static void libnbcs_ring_scratch_counts_in_a_ranks_memory(void **state)
{
	(void)state;
	struct sl_plan plain_fast, zero_fast, plain_quota, zero_quota;
	static struct sl_sim_result f0, f1, q0, q1;
	simulate_with_and_without_zero("cpu-fast", &plain_fast, &zero_fast, &f0, &f1);
	simulate_with_and_without_zero("cpu-quota", &plain_quota, &zero_quota, &q0, &q1);
	double B = SL_FP32_BYTES * sl_sim_stage_params(env, 1, 0, 5);
	assert_true(fabs(q0.stages[0].memory.buffers_bytes - f0.stages[0].memory.buffers_bytes -
			 ceil(B / SL_FP32_BYTES / 2) * SL_FP32_BYTES) < 1e-6);
	/* rank 0 of the tree receives once: one buffer of its parameters, no ring's on top */
	assert_true(fabs(q1.stages[0].memory.buffers_bytes - f1.stages[0].memory.buffers_bytes -
			 fmin(SL_RT_ZERO_BUCKET_BYTES, q1.stages[0].memory.params_bytes)) < 1e-6);
	sl_plan_free(&plain_fast);
	sl_plan_free(&zero_fast);
	sl_plan_free(&plain_quota);
	sl_plan_free(&zero_quota);
}

/* Loads gpt2-tiny with the network file `text` over the shipped fits (written to the test's
 * folder for the load, then removed). */
static struct sl_sim_env *env_with_network(const char *text)
{
	char path[512];
	struct sl_sim_env *out = NULL;
	struct sl_err err = {0};
	snprintf(path, sizeof(path), "%s/network.json", dir);
	write_file(path, text);
	assert_int_equal(sl_network_set_overlay(path, &env->catalogue, &err), 0);
	assert_int_equal(sl_sim_env_load_overlaid("gpt2-tiny", "data", dir, &out, &err), 0);
	sl_network_set_overlay(NULL, NULL, NULL);
	unlink(path);
	return out;
}

/* Loads gpt2-tiny with a network file of one measured two-rank all-reduce between cpu-fast
 * devices of zone us-central1-a and zone_b, of kind ("between hosts", "within a host"), whose
 * fit is a1 log2(bytes / 1e6) + a0 GB/s, with what `sizes` adds to the pair ("" or its
 * "bytes" list and a comma). */
static struct sl_sim_env *env_with_allreduce(const char *kind, const char *zone_b,
					     const char *sizes, double a1, double a0)
{
	char text[1024];
	snprintf(text, sizeof(text),
		 "{\"schema\": \"sailor.network/1\", \"source\": {\"pairs\": [{\"kind\": \"%s\", "
		 "\"sender_zone\": \"us-central1-a\", \"sender_gpu\": \"cpu-fast\", "
		 "\"receiver_zone\": \"%s\", \"receiver_gpu\": \"cpu-fast\", %s\"allreduce_fit\": "
		 "[[0, %g, %g], 1000000]}]}}\n",
		 kind, zone_b, sizes, a1, a0);
	return env_with_network(text);
}

/* The same pair twice: out[0] without the sizes it was measured at (not known), out[1] with
 * them (`bytes`: a list of sizes). */
static void envs_with_allreduce(const char *kind, const char *zone_b, const char *bytes,
				double a1, double a0, struct sl_sim_env *out[2])
{
	char sizes[256];
	snprintf(sizes, sizeof(sizes), "\"bytes\": [%s], ", bytes);
	out[0] = env_with_allreduce(kind, zone_b, "", a1, a0);
	out[1] = env_with_allreduce(kind, zone_b, sizes, a1, a0);
}

/* A cluster file of the hosts hosts_json lists (JSON host objects), for the ranks' placement. */
static void cluster_of(const struct sl_sim_env *e, const char *hosts_json, struct sl_cluster *out)
{
	char text[1024];
	snprintf(text, sizeof(text), "{\"schema\": \"sailor.cluster/1\", \"hosts\": [%s]}",
		 hosts_json);
	json_t *j = json_loads(text, 0, NULL);
	assert_non_null(j);
	struct sl_err err = {0};
	assert_int_equal(sl_cluster_from_json(j, "test", &e->catalogue, out, &err), 0);
	json_decref(j);
}

/* A ring step over a link the ring loads both ways at once takes at least half of the two-rank
 * all-reduce the network profile measured between those hosts; a hop whose reverse carries
 * nothing of the ring keeps its point-to-point time. The measured all-reduce here is slow
 * (1 MB/s), so where it applies it decides the step. */
static void a_ring_over_a_link_loaded_both_ways_takes_the_measured_allreduce(void **state)
{
	(void)state;
	/* 1 MB/s at every size */
	struct sl_sim_env *slow = env_with_allreduce("between hosts", "us-central1-b", "", 0, 0.001);
	struct sl_err err = {0};
	struct sl_plan two, three;
	/* two replicas in zones a and b: each hop's reverse is the other hop */
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 16, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\"}, {\"gpu\": \"cpu-fast\", \"zone\": "
		  "\"us-central1-b\"}]}]}", &two);
	/* a -> b -> us-west1-b -> a: no hop's reverse carries anything */
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 24, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\"}, {\"gpu\": \"cpu-fast\", \"zone\": "
		  "\"us-central1-b\"}, {\"gpu\": \"cpu-fast\", \"zone\": \"us-west1-b\"}]}]}",
		  &three);
	static struct sl_sim_result fast2, slow2, fast3, slow3;
	assert_int_equal(sl_simulate(env, &two, SL_COST_SAILOR, &fast2, &err), 0);
	assert_int_equal(sl_simulate(slow, &two, SL_COST_SAILOR, &slow2, &err), 0);
	assert_int_equal(sl_simulate(env, &three, SL_COST_SAILOR, &fast3, &err), 0);
	assert_int_equal(sl_simulate(slow, &three, SL_COST_SAILOR, &slow3, &err), 0);
	double B = SL_FP32_BYTES * sl_sim_stage_params(env, 1, 0, 5);
	/* 2 steps of B/2, each half of the all-reduce of B at 1 MB/s */
	assert_true(fabs(slow2.stages[0].dp_sync_s - 2 * 0.5 * B / 1e6) < 1e-9);
	assert_true(slow2.stages[0].dp_sync_s > 2 * fast2.stages[0].dp_sync_s);
	assert_true(fabs(slow3.iteration_time_s - fast3.iteration_time_s) < 1e-12);
	sl_plan_free(&two);
	sl_plan_free(&three);
	sl_sim_env_free(slow);
}

/* A ring over a link loaded both ways keeps it loaded for its whole call, and the longer both
 * ways stay loaded the slower they get (the queues in front of each way's acknowledgements
 * grow): a step takes its chunk at the rate of the two-rank all-reduce that moves what the
 * whole call moves each way, 2(m-1) chunks, not one step's two; past the largest size the
 * all-reduce was measured at, at that size's rate. */
static void a_ring_loaded_both_ways_runs_at_the_rate_of_its_whole_call(void **state)
{
	(void)state;
	/* 1 MB/s at 1 MB, 0.1 MB/s slower for each doubling; measured up to 4 MiB (or, without
	 * "bytes", not known) */
	const double a0 = 0.001, a1 = -0.0001, largest = 4194304;
	struct sl_sim_env *measured[2];
	envs_with_allreduce("between hosts", "us-central1-b", "262144, 1048576, 4194304", a1, a0,
			    measured);
	/* a0 -> a0 -> b0 -> a0: the hops between hosts a0 and b0 load their link both ways; the
	 * hop within a0 does not */
	struct sl_cluster hosts;
	cluster_of(measured[0],
		   "{\"name\": \"a0\", \"gpu\": \"cpu-fast\", \"zone\": \"us-central1-a\", \"slots\": 2},"
		   "{\"name\": \"b0\", \"gpu\": \"cpu-fast\", \"zone\": \"us-central1-b\", \"slots\": 1}",
		   &hosts);
	sl_sim_env_set_cluster(measured[0], &hosts);
	sl_sim_env_set_cluster(measured[1], &hosts);
	struct sl_plan ring;
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 24, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\", \"count\": 2}, {\"gpu\": \"cpu-fast\", \"zone\": "
		  "\"us-central1-b\"}]}]}",
		  &ring);
	static struct sl_sim_result unknown_r, known_r;
	struct sl_err err = {0};
	assert_int_equal(sl_simulate(measured[0], &ring, SL_COST_SAILOR, &unknown_r, &err), 0);
	assert_int_equal(sl_simulate(measured[1], &ring, SL_COST_SAILOR, &known_r, &err), 0);
	double B = SL_FP32_BYTES * sl_sim_stage_params(env, 1, 0, 5), chunk = B / 3;
	double call = 4 * chunk; /* 2(m-1) chunks each way */
	assert_true(call > largest);
#define RATE_BPS(bytes) (1e9 * (a0 + a1 * log2((bytes) / 1e6)))
	assert_true(fabs(unknown_r.stages[0].dp_sync_s - 4 * chunk / RATE_BPS(call)) < 1e-9);
	assert_true(fabs(known_r.stages[0].dp_sync_s - 4 * chunk / RATE_BPS(largest)) < 1e-9);
	/* slower than a step timed as half of the all-reduce of its own two chunks */
	assert_true(known_r.stages[0].dp_sync_s > 1.01 * 4 * chunk / RATE_BPS(2 * chunk));
#undef RATE_BPS
	sl_plan_free(&ring);
	sl_sim_env_free(measured[0]);
	sl_sim_env_free(measured[1]);
	sl_cluster_free(&hosts);
}

/* Only traffic back to the sending host loads a hop both ways: a ring a0 -> b0 -> a1 -> a0
 * whose hop b0 -> a1 goes into a0's zone but to another host keeps every hop at its
 * point-to-point time however slow the measured all-reduce (the runtime's rings on the
 * testbed: 97-100 % of the link's rate that way, 77-88 % back to the sender's host). */
static void a_ring_whose_reverse_goes_to_another_host_keeps_its_point_to_point_time(void **state)
{
	(void)state;
	/* the all-reduce between zones a and b at 1 MB/s */
	struct sl_sim_env *slow = env_with_allreduce("between hosts", "us-central1-b", "", 0, 0.001);
	struct sl_cluster other_host, same_host;
	cluster_of(slow,
		   "{\"name\": \"a0\", \"gpu\": \"cpu-fast\", \"zone\": \"us-central1-a\", \"slots\": 1},"
		   "{\"name\": \"a1\", \"gpu\": \"cpu-fast\", \"zone\": \"us-central1-a\", \"slots\": 1},"
		   "{\"name\": \"b0\", \"gpu\": \"cpu-fast\", \"zone\": \"us-central1-b\", \"slots\": 1}",
		   &other_host);
	cluster_of(slow,
		   "{\"name\": \"a0\", \"gpu\": \"cpu-fast\", \"zone\": \"us-central1-a\", \"slots\": 2},"
		   "{\"name\": \"b0\", \"gpu\": \"cpu-fast\", \"zone\": \"us-central1-b\", \"slots\": 1}",
		   &same_host);
	/* zone a, zone b, zone a: placed a0, b0, a1 on the first cluster, a0, b0, a0 on the
	 * second */
	struct sl_plan ring;
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 24, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\"}, {\"gpu\": \"cpu-fast\", \"zone\": "
		  "\"us-central1-b\"}, {\"gpu\": \"cpu-fast\", \"zone\": \"us-central1-a\"}]}]}",
		  &ring);
	static struct sl_sim_result fast_r, slow_r, same_r;
	struct sl_err err = {0};
	sl_sim_env_set_cluster(env, &other_host);
	sl_sim_env_set_cluster(slow, &other_host);
	assert_int_equal(sl_simulate(env, &ring, SL_COST_SAILOR, &fast_r, &err), 0);
	assert_int_equal(sl_simulate(slow, &ring, SL_COST_SAILOR, &slow_r, &err), 0);
	sl_sim_env_set_cluster(slow, &same_host);
	assert_int_equal(sl_simulate(slow, &ring, SL_COST_SAILOR, &same_r, &err), 0);
	sl_sim_env_set_cluster(env, NULL);
	/* another host: the slow all-reduce changes nothing */
	assert_true(fabs(slow_r.iteration_time_s - fast_r.iteration_time_s) < 1e-12);
	/* back to the sender's host: 4 chunks of B / 3 at 1 MB/s, each hop a0 <-> b0 */
	double B = SL_FP32_BYTES * sl_sim_stage_params(env, 1, 0, 5);
	assert_true(fabs(same_r.stages[0].dp_sync_s - 4 * (B / 3) / 1e6) < 1e-9);
	sl_plan_free(&ring);
	sl_sim_env_free(slow);
	sl_cluster_free(&other_host);
	sl_cluster_free(&same_host);
}

/* A device whose speed wanders (catalogue speed_spells) runs each rank's passes slower in some
 * draws and faster in the others, so that one rank averages to the profile's speed exactly (no
 * quota: its step is linear in its passes), while two replicas' sync waits for the slower of
 * them: slower than the steady device, by less than every pass at the spell's speed. */
static void a_sync_waits_for_the_slowest_of_its_ranks_spells(void **state)
{
	(void)state;
	struct sl_plan one, two;
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 8, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\"}]}]}", &one);
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 8, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 5], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\"}, {\"gpu\": \"cpu-fast\", \"zone\": "
		  "\"us-central1-a\"}]}]}", &two);
	int fast = sl_catalogue_gpu_index(&env->catalogue, "cpu-fast");
	assert_true(fast >= 0);
	struct sl_gpu_type *gt = &env->catalogue.gpus[fast];
	static struct sl_sim_result steady1, steady2, wander1, wander2, still2;
	struct sl_err err = {0};
	assert_int_equal(sl_simulate(env, &one, SL_COST_SAILOR, &steady1, &err), 0);
	assert_int_equal(sl_simulate(env, &two, SL_COST_SAILOR, &steady2, &err), 0);
	const double slow = 0.2;
	gt->spell_fraction = 0.25;
	gt->spell_slowdown = slow;
	assert_int_equal(sl_simulate(env, &one, SL_COST_SAILOR, &wander1, &err), 0);
	assert_int_equal(sl_simulate(env, &two, SL_COST_SAILOR, &wander2, &err), 0);
	gt->spell_fraction = 0.25; /* a spell that slows nothing is no spell */
	gt->spell_slowdown = 0;
	assert_int_equal(sl_simulate(env, &two, SL_COST_SAILOR, &still2, &err), 0);
	gt->spell_fraction = gt->spell_slowdown = 0;
	assert_true(fabs(wander1.iteration_time_s - steady1.iteration_time_s) < 1e-9);
	assert_true(fabs(still2.iteration_time_s - steady2.iteration_time_s) < 1e-12);
	/* each replica: 2 micro-batches of forward and backward */
	double passes = 2 * (F_EMB + 4 * F_BLK + F_HEAD + B_EMB + 4 * B_BLK + B_HEAD);
	double extra = wander2.iteration_time_s - steady2.iteration_time_s;
	assert_true(extra > 1e-6);
	/* at most every draw at the spell's factor over the mean factor */
	assert_true(extra < passes * ((1 + slow) / (1 + slow * 0.25) - 1) + 1e-9);
	sl_plan_free(&one);
	sl_plan_free(&two);
}

/* A ring step's copies and sums on the receiving device are half of the two-rank all-reduce
 * measured within one host of its type, of twice the chunk: read, like the all-reduce between
 * hosts, no further up than the largest size it was measured at (past it, that size's rate),
 * and at the fit's own value where the file does not say what it measured. */
static void a_ring_steps_sums_read_the_host_allreduce_within_its_measured_sizes(void **state)
{
	(void)state;
	/* 1 GB/s at 1 MB, 0.1 GB/s slower for each doubling; measured up to 1 MiB */
	const double a0 = 1.0, a1 = -0.1, largest = 1048576;
	struct sl_sim_env *measured[2];
	envs_with_allreduce("within a host", "us-central1-a", "65536, 262144, 1048576", a1, a0,
			    measured);
	struct sl_role receiver = {.gpu = sl_catalogue_gpu_index(&env->catalogue, "cpu-fast"),
				   .zone = sl_catalogue_zone_index(&env->catalogue, "us-central1-a")};
	assert_true(receiver.gpu >= 0 && receiver.zone >= 0);
#define RATE_BPS(bytes) (1e9 * (a0 + a1 * log2((bytes) / 1e6)))
	/* within the sizes measured: the fit, either way */
	double small = 262144;
	for (int known = 0; known < 2; known++)
		assert_true(fabs(sl_replay_reduce_cpu_s(measured[known], &receiver, small) -
				 0.5 * 2 * small / RATE_BPS(2 * small)) < 1e-12);
	/* a chunk of 2 MiB: the all-reduce of 4 MiB, past the 1 MiB measured */
	double chunk = 2097152;
	assert_true(fabs(sl_replay_reduce_cpu_s(measured[1], &receiver, chunk) -
			 0.5 * 2 * chunk / RATE_BPS(largest)) < 1e-12);
	assert_true(fabs(sl_replay_reduce_cpu_s(measured[0], &receiver, chunk) -
			 0.5 * 2 * chunk / RATE_BPS(2 * chunk)) < 1e-12);
	assert_true(sl_replay_reduce_cpu_s(measured[0], &receiver, chunk) >
		    1.1 * sl_replay_reduce_cpu_s(measured[1], &receiver, chunk));
	/* no pair measured within a host of that type: no work charged */
	assert_true(sl_replay_reduce_cpu_s(env, &receiver, chunk) == 0);
#undef RATE_BPS
	sl_sim_env_free(measured[0]);
	sl_sim_env_free(measured[1]);
}

/* Loads gpt2-tiny with a network file of one link between zones a and b for devices of type
 * gpu (rate bytes/s, point-to-point and all-reduce), with what `extra` adds to its measured
 * pair and `more_pairs` to the list of measured pairs ("" for nothing). */
static struct sl_sim_env *env_with_pair(const char *gpu, double rate, const char *extra,
					const char *more_pairs)
{
	char text[4096];
	snprintf(text, sizeof(text),
		 "{\"schema\": \"sailor.network/1\", "
		 "\"us-central1-a\": {\"%s\": {\"1\": {\"us-central1-b\": {\"%s\": "
		 "{\"1\": [[0, 0, %g], %g]}}}}}, "
		 "\"us-central1-b\": {\"%s\": {\"1\": {\"us-central1-a\": {\"%s\": "
		 "{\"1\": [[0, 0, %g], %g]}}}}}, "
		 "\"source\": {\"pairs\": [{\"kind\": \"between hosts\", \"sender_zone\": "
		 "\"us-central1-a\", \"sender_gpu\": \"%s\", \"receiver_zone\": "
		 "\"us-central1-b\", \"receiver_gpu\": \"%s\", \"allreduce_fit\": "
		 "[[0, 0, %g], %g]%s}%s]}}\n",
		 gpu, gpu, rate / 1e9, rate, gpu, gpu, rate / 1e9, rate, gpu, gpu, rate / 1e9, rate,
		 extra, more_pairs);
	return env_with_network(text);
}

/* The same for cpu-fast devices, with what `extra` adds to the measured pair. */
static struct sl_sim_env *env_with_link(double rate, const char *extra)
{
	return env_with_pair("cpu-fast", rate, extra, "");
}

/* An eager message (at most OpenMPI's 64 KiB with its header) that the link passes whole (the
 * network profile's eager probe) leaves at once when the link's bucket is not in debt: with one
 * micro-batch of a quarter of the sequence (32 KiB of activations) each message crosses the idle
 * link at once, where the burst alone saves only 2 x burst / rate; a message over the eager
 * limit (the model's own sequence, 128 KiB) moves as before. */
static void an_eager_message_the_link_passes_whole_leaves_at_once(void **state)
{
	(void)state;
	const double rate = 1e6, burst = 20000;
	struct sl_sim_env *bursty = env_with_link(rate, ", \"burst_bytes\": 20000");
	struct sl_sim_env *whole = env_with_link(rate, ", \"burst_bytes\": 20000, "
							"\"whole_message_bytes\": 49152");
	struct sl_plan plan;
	load_two_zone_plan("cpu-fast", &plan);
	static struct sl_sim_result b, w;
	struct sl_err err = {0};
	double msg = 4.0 * 2 * env->model.seq_len * env->model.hidden;
	assert_true(msg + 64 > 65536); /* over the eager limit: the rule does not apply */
	assert_int_equal(sl_simulate(bursty, &plan, SL_COST_SAILOR, &b, &err), 0);
	assert_int_equal(sl_simulate(whole, &plan, SL_COST_SAILOR, &w, &err), 0);
	assert_true(fabs(b.iteration_time_s - w.iteration_time_s) < 1e-12);
	bursty->model.seq_len /= 4;
	whole->model.seq_len /= 4;
	msg /= 4;
	assert_int_equal(sl_simulate(bursty, &plan, SL_COST_SAILOR, &b, &err), 0);
	assert_int_equal(sl_simulate(whole, &plan, SL_COST_SAILOR, &w, &err), 0);
	assert_true(msg > burst && msg < 49152);
	assert_true(fabs((b.iteration_time_s - w.iteration_time_s) - 2 * (msg - burst) / rate) <
		    1e-9);
	sl_plan_free(&plan);
	sl_sim_env_free(bursty);
	sl_sim_env_free(whole);
}

/* The tied token table's ring over two stages in zones a and b (1 MB/s, a 20 kB burst): with
 * half the vocabulary its chunks (32 KiB) are eager messages, which a link that passes them
 * whole lets through at once while its bucket owes nothing. What the chunks leave owing is paid
 * before the next message on the link, the loss all-reduce's; with no burst to start from, the
 * step is longer than with one. */
static void the_tied_tables_eager_chunks_take_from_the_links_bucket(void **state)
{
	(void)state;
	const double rate = 1e6;
	struct sl_sim_env *bursty = env_with_link(rate, ", \"burst_bytes\": 20000");
	struct sl_sim_env *whole = env_with_link(rate, ", \"burst_bytes\": 20000, "
							"\"whole_message_bytes\": 49152");
	struct sl_sim_env *owing = env_with_link(rate, ", \"burst_bytes\": 0, "
							"\"whole_message_bytes\": 49152");
	struct sl_plan plan;
	load_two_zone_plan("cpu-fast", &plan);
	bursty->model.vocab /= 2;
	whole->model.vocab /= 2;
	owing->model.vocab /= 2;
	double chunk = SL_FP32_BYTES * whole->model.vocab * whole->model.hidden / 2;
	assert_true(chunk + 64 <= 65536 && chunk <= 49152);
	static struct sl_sim_result b, w, o;
	struct sl_err err = {0};
	assert_int_equal(sl_simulate(bursty, &plan, SL_COST_SAILOR, &b, &err), 0);
	assert_int_equal(sl_simulate(whole, &plan, SL_COST_SAILOR, &w, &err), 0);
	assert_int_equal(sl_simulate(owing, &plan, SL_COST_SAILOR, &o, &err), 0);
	/* stage 0 arrives last: at the link's rate two ring steps of a chunk each; passed whole,
	 * the first step is free and the second waits for what the first left owing beyond the
	 * burst */
	assert_true(fabs(b.stages[0].dp_sync_s - 2 * chunk / rate) < 1e-9);
	assert_true(fabs(w.stages[0].dp_sync_s - (chunk - 20000) / rate) < 1e-9);
	assert_true(w.iteration_time_s < b.iteration_time_s);
	assert_true(o.iteration_time_s > w.iteration_time_s);
	/* after the ring each link owes its last chunk: the loss all-reduce's first message over
	 * it waits chunk / rate before the rounds go on */
	assert_true(w.dp_sync_s - w.stages[0].dp_sync_s > chunk / rate - 1e-9);
	sl_plan_free(&plan);
	sl_sim_env_free(bursty);
	sl_sim_env_free(whole);
	sl_sim_env_free(owing);
}

/* A link that idled lets its burst through at once (the network profile's burst probe): with
 * one micro-batch the activation and its gradient each cross the idle link between zones a and
 * b once, so the step is exactly 2 x burst / rate shorter than without a burst. */
static void a_link_that_idled_lets_its_burst_through(void **state)
{
	(void)state;
	const double rate = 1e6, burst = 20000;
	struct sl_sim_env *plain = env_with_link(rate, "");
	struct sl_sim_env *bursty = env_with_link(rate, ", \"burst_bytes\": 20000");
	struct sl_err err = {0};
	struct sl_plan plan;
	load_two_zone_plan("cpu-fast", &plan);
	static struct sl_sim_result r0, r1;
	assert_int_equal(sl_simulate(plain, &plan, SL_COST_SAILOR, &r0, &err), 0);
	assert_int_equal(sl_simulate(bursty, &plan, SL_COST_SAILOR, &r1, &err), 0);
	double msg = 4.0 * 2 * env->model.seq_len * env->model.hidden;
	assert_true(msg > burst);
	assert_true(fabs((r0.iteration_time_s - r1.iteration_time_s) - 2 * burst / rate) < 1e-9);
	sl_plan_free(&plan);
	sl_sim_env_free(plain);
	sl_sim_env_free(bursty);
}

/* Moving a message costs each end the CPU the network profile's message probe measured: with one
 * micro-batch the activation and its gradient cross the link between zones a and b one after the
 * other, so on devices without a quota the step is exactly 2 x (sender's + receiver's CPU)
 * longer; the figures between two measured sizes are interpolated, and on a CPU-quota device the
 * same CPU comes out of the budget. A probe that is not the profiler's (sizes not ascending) is
 * refused, naming the field. */
static void moving_a_message_costs_each_end_its_probed_cpu(void **state)
{
	(void)state;
	const double rate = 1e7, send = 60e-6, recv = 40e-6;
	double msg = 4.0 * 2 * env->model.seq_len * env->model.hidden;
	char extra[512];
	snprintf(extra, sizeof(extra), ", \"message_cpu\": {\"bytes\": [%.0f], \"sender_s\": "
		 "[%g], \"receiver_s\": [%g]}", msg, send, recv);
	struct sl_sim_env *plain = env_with_link(rate, "");
	struct sl_sim_env *probed = env_with_link(rate, extra);
	/* two sizes around the message: a third of the way from msg / 2 to 2 msg */
	snprintf(extra, sizeof(extra), ", \"message_cpu\": {\"bytes\": [%.0f, %.0f], "
		 "\"sender_s\": [30e-6, 120e-6], \"receiver_s\": [10e-6, 100e-6]}", msg / 2,
		 msg * 2);
	struct sl_sim_env *between = env_with_link(rate, extra);
	struct sl_err err = {0};
	struct sl_plan plan;
	load_two_zone_plan("cpu-fast", &plan);
	static struct sl_sim_result r0, r1, r2;
	assert_int_equal(sl_simulate(plain, &plan, SL_COST_SAILOR, &r0, &err), 0);
	assert_int_equal(sl_simulate(probed, &plan, SL_COST_SAILOR, &r1, &err), 0);
	assert_int_equal(sl_simulate(between, &plan, SL_COST_SAILOR, &r2, &err), 0);
	assert_true(fabs((r1.iteration_time_s - r0.iteration_time_s) - 2 * (send + recv)) < 1e-9);
	assert_true(fabs((r2.iteration_time_s - r0.iteration_time_s) -
			 2 * ((30e-6 + 90e-6 / 3) + (10e-6 + 90e-6 / 3))) < 1e-9);
	sl_plan_free(&plan);
	sl_sim_env_free(plain);
	sl_sim_env_free(probed);
	sl_sim_env_free(between);

	/* the same on 0.25-core devices: each end's CPU is paid from its budget (a step this
	 * small ends on a period boundary either way: its time does not shrink) */
	snprintf(extra, sizeof(extra), ", \"message_cpu\": {\"bytes\": [%.0f], \"sender_s\": "
		 "[%g], \"receiver_s\": [%g]}", msg, send, recv);
	plain = env_with_pair("cpu-quota", rate, "", "");
	probed = env_with_pair("cpu-quota", rate, extra, "");
	load_two_zone_plan("cpu-quota", &plan);
	assert_int_equal(sl_simulate(plain, &plan, SL_COST_SAILOR, &r0, &err), 0);
	assert_int_equal(sl_simulate(probed, &plan, SL_COST_SAILOR, &r1, &err), 0);
	assert_true(r1.iteration_time_s >= r0.iteration_time_s - 1e-12);
	for (int k = 0; k < 2; k++) /* each stage sends one message and receives one */
		assert_true(fabs((r1.stages[k].cpu_s - r0.stages[k].cpu_s) - (send + recv)) < 1e-9);
	sl_plan_free(&plan);
	sl_sim_env_free(plain);
	sl_sim_env_free(probed);

	/* a probe the profiler did not write */
	char path[512];
	snprintf(path, sizeof(path), "%s/network.json", dir);
	write_file(path, "{\"schema\": \"sailor.network/1\", \"source\": {\"pairs\": [{\"kind\": "
		   "\"between hosts\", \"sender_zone\": \"us-central1-a\", \"sender_gpu\": "
		   "\"cpu-fast\", \"receiver_zone\": \"us-central1-b\", \"receiver_gpu\": "
		   "\"cpu-fast\", \"allreduce_fit\": [[0, 0, 0.01], 1e7], \"message_cpu\": "
		   "{\"bytes\": [65536, 16384], \"sender_s\": [1e-5, 1e-5], \"receiver_s\": "
		   "[1e-5, 1e-5]}}]}}\n");
	assert_int_not_equal(sl_network_set_overlay(path, &env->catalogue, &err), 0);
	assert_non_null(strstr(err.msg, "source.pairs[0].message_cpu"));
	sl_network_set_overlay(NULL, NULL, NULL);
	unlink(path);
}

/* Loads gpt2-tiny with a network file for cpu-quota devices in zones a and b: links between
 * hosts at wire_bps (point-to-point and all-reduce), and, where within_bps > 0, the two-rank
 * all-reduce measured within a host of each zone at within_bps (MPI's copies and sums). */
static struct sl_sim_env *env_with_quota_pair(double wire_bps, double within_bps)
{
	char within[1024] = "";
	for (int z = 0; within_bps > 0 && z < 2; z++) {
		const char *zone = z ? "us-central1-b" : "us-central1-a";
		size_t n = strlen(within);
		snprintf(within + n, sizeof(within) - n,
			 ", {\"kind\": \"within a host\", \"sender_zone\": \"%s\", \"sender_gpu\": "
			 "\"cpu-quota\", \"receiver_zone\": \"%s\", \"receiver_gpu\": \"cpu-quota\", "
			 "\"allreduce_fit\": [[0, 0, %g], %g]}",
			 zone, zone, within_bps / 1e9, within_bps);
	}
	return env_with_pair("cpu-quota", wire_bps, "", within);
}

/* MPI's copies and sums in a gradient sync are the ranks' own CPU work, paid from a CPU-quota
 * device's budget: two rings of the same length, one paced by the sums (a within-host
 * all-reduce of R, a wire 1000 times faster) and one by the wire (R, nothing to sum), end
 * together, but after the first the ranks' budgets are spent, so the small all-reduces after
 * the sync wait for their next period and the step is longer. ZeRO-1 (libnbc's reduce to the
 * first rank, then its all-gather) over the fast wire, with and without the sums: the first
 * rank adds each call of the reduce-scatter (B / R in all) and each rank takes in the other's
 * half of each call of the all-gather (B / 2R), both from its budget. */
static void a_syncs_copies_and_sums_are_paid_from_the_budget(void **state)
{
	(void)state;
	const double R = 1e8;
	struct sl_sim_env *sums = env_with_quota_pair(1000 * R, R);
	struct sl_sim_env *wire = env_with_quota_pair(R, 0);
	struct sl_sim_env *no_sums = env_with_quota_pair(1000 * R, 0);
	struct sl_err err = {0};
	struct sl_plan plain, zero;
	for (int z = 0; z < 2; z++) {
		char text[512];
		snprintf(text, sizeof(text),
			 "{\"schema\": \"sailor.plan/1\", \"global_batch\": 4, \"micro_batch\": 2, "
			 "\"stages\": [{\"layers\": [0, 5], \"zero\": %d, \"replicas\": [{\"gpu\": "
			 "\"cpu-quota\", \"zone\": \"us-central1-a\"}, {\"gpu\": \"cpu-quota\", "
			 "\"zone\": \"us-central1-b\"}]}]}", z);
		load_plan(text, z ? &zero : &plain);
	}
	static struct sl_sim_result by_sums, by_wire, zero_sums, zero_free;
	assert_int_equal(sl_simulate(sums, &plain, SL_COST_SAILOR, &by_sums, &err), 0);
	assert_int_equal(sl_simulate(wire, &plain, SL_COST_SAILOR, &by_wire, &err), 0);
	/* the rings: 2 steps of B/2 each way, at R either way */
	double B = SL_FP32_BYTES * sl_sim_stage_params(env, 1, 0, 5);
	assert_true(by_wire.iteration_time_s > B / R);
	assert_true(by_sums.iteration_time_s > by_wire.iteration_time_s + 0.001);
	/* what the sync's sums cost shows in the CPU the model reports for the sync */
	assert_true(by_sums.stages[0].dp_sync_cpu_s > by_wire.stages[0].dp_sync_cpu_s);
	assert_true(by_sums.stages[0].dp_sync_cpu_s <= by_sums.stages[0].cpu_s);
	assert_int_equal(sl_simulate(sums, &zero, SL_COST_SAILOR, &zero_sums, &err), 0);
	assert_int_equal(sl_simulate(no_sums, &zero, SL_COST_SAILOR, &zero_free, &err), 0);
	assert_true(zero_sums.iteration_time_s - zero_free.iteration_time_s > 1.25 * B / R);
	sl_plan_free(&plain);
	sl_plan_free(&zero);
	sl_sim_env_free(sums);
	sl_sim_env_free(wire);
	sl_sim_env_free(no_sums);
}

/* What a rank carries into the next period of its CPU quota (Linux's CFS bandwidth control): a
 * rank asleep at the period's end keeps at most 1 ms on its CPU (min_cfs_rq_runtime), a rank
 * running then keeps all its CPU holds (measured on the testbed: docs/design/runtime-model.md). */
static void a_rank_running_through_a_periods_end_keeps_its_runtime(void **state)
{
	(void)state;
	struct sl_replay_rank awake, asleep;
	memset(&awake, 0, sizeof(awake));
	awake.quota_cores = 0.3;
	awake.period_s = 0.01;
	awake.period = LONG_MIN;
	asleep = awake;
	/* both use 0.1 ms of period 0's 3 ms, then wait */
	sl_replay_run_work(&awake, 0.0001 / 0.3);
	sl_replay_run_work(&asleep, 0.0001 / 0.3);
	/* woken about 1 ms before the period's end (at the first test after 9 ms), it runs through
	 * it with what it has left and carries all of it: 5.9 ms of CPU in one burst (with a 1 ms
	 * carry it would stop near 14 ms and finish after 20 ms) */
	sl_replay_wait_idle(&awake, 0.009);
	double woke = awake.clock;
	assert_true(woke >= 0.009 && woke < 0.0095);
	sl_replay_run_work(&awake, 0.0059 / 0.3);
	assert_true(fabs(awake.clock - (woke + 0.0059)) < 1e-6);
	/* asleep at the period's end with 2.9 ms left: 1 ms of them stays, so 4 ms of CPU from its
	 * wake after 10.5 ms, throttled to 20 ms, and the last 1.9 ms after it */
	sl_replay_wait_idle(&asleep, 0.0105);
	assert_true(asleep.clock > 0.01 && asleep.clock + 0.004 < 0.02);
	sl_replay_run_work(&asleep, 0.0059 / 0.3);
	assert_true(fabs(asleep.clock - 0.0219) < 1e-6);
	assert_true(fabs(awake.cpu_s - 0.006) < 1e-9 && fabs(asleep.cpu_s - 0.006) < 1e-9);
}

/* The loss and norm all-reduces after the sync are one MPI_Iallreduce each, which the rank
 * finishes in one sleeping wait (comm_mpi.c's finish): libnbc moves a round on only inside a
 * test, and the wait's sleeps go on doubling from round to round instead of starting short
 * again. Four ranks of one host, nothing else to wait for: each all-reduce is its 6 ring rounds'
 * work (20 us of CPU each) and the sleeps of 20, 40, 80, 160 and 320 us before rounds 2-6. */
static void the_small_all_reduces_sleep_on_through_their_rounds(void **state)
{
	(void)state;
	enum { W = 4 };
	struct sl_replay_rank st[W];
	struct sl_role roles[W];
	memset(st, 0, sizeof(st));
	memset(roles, 0, sizeof(roles));
	for (int r = 0; r < W; r++) {
		st[r].quota_cores = 0.25;
		st[r].period_s = 0.01;
		st[r].period = LONG_MIN;
	}
	struct sl_role_table t = {.world_size = W, .roles = roles};
	struct sl_replay x = {.env = env, .t = &t, .st = st};
	double done[2 * W];
	double end = sl_replay_world_scalar_allreduces(&x, W, done);
	double one = 6 * 20e-6 + (20e-6 + 40e-6 + 80e-6 + 160e-6 + 320e-6);
	assert_true(fabs(end - 2 * one) < 1e-9);
	for (int r = 0; r < W; r++)
		assert_true(fabs(st[r].cpu_s - 12 * 20e-6) < 1e-12);
}

/* A timeline takes the ranks' table over; the instruction lists built from that table are
 * still the replay's to free (a simulation with --timeline leaked them: under AddressSanitizer
 * `make check` fails this test at exit without the fix). Twice, freed between, as the header
 * asks of a caller that records more than once. */
static void a_recorded_timeline_leaves_nothing_allocated(void **state)
{
	(void)state;
	struct sl_plan plan;
	load_plan("{\"schema\": \"sailor.plan/1\", \"global_batch\": 8, \"micro_batch\": 2, "
		  "\"stages\": [{\"layers\": [0, 2], \"replicas\": [{\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-a\"}, {\"gpu\": \"cpu-fast\", \"zone\": "
		  "\"us-central1-a\"}]}, {\"layers\": [3, 5], \"replicas\": [{\"gpu\": "
		  "\"cpu-fast\", \"zone\": \"us-central1-b\"}, {\"gpu\": \"cpu-fast\", "
		  "\"zone\": \"us-central1-b\"}]}]}", &plan);
	struct sl_sim_timeline tl;
	memset(&tl, 0, sizeof(tl));
	sl_sim_env_set_timeline(env, &tl);
	static struct sl_sim_result res;
	struct sl_err err = {0};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sl_simulate(env, &plan, SL_COST_SAILOR, &res, &err), 0);
		assert_true(tl.recorded);
		assert_int_equal(tl.roles.world_size, 4);
		assert_true(tl.spans.count > 0);
		sl_sim_timeline_free(&tl);
		assert_int_equal(tl.recorded, 0);
	}
	sl_sim_env_set_timeline(env, NULL);
	sl_plan_free(&plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_rank_is_its_micro_batches_plus_the_update),
		cmocka_unit_test(the_runtime_allocates_the_bucket_the_model_counts),
		cmocka_unit_test(selective_recomputation_costs_the_profiled_attention_core),
		cmocka_unit_test(pipeline_keeps_min_p_k_n_slots_and_waits_for_transfers),
		cmocka_unit_test(data_parallel_adds_an_allreduce_and_halves_the_work),
		cmocka_unit_test(a_cpu_quota_device_runs_in_bursts),
		cmocka_unit_test(a_sleeping_waits_tests_spend_the_quota),
		cmocka_unit_test(zero_with_blocking_collectives_costs_the_allreduce),
		cmocka_unit_test(zero_with_libnbc_moves_the_whole_buffer_to_rank_0_and_back),
		cmocka_unit_test(libnbcs_ring_scratch_counts_in_a_ranks_memory),
		cmocka_unit_test(a_ring_over_a_link_loaded_both_ways_takes_the_measured_allreduce),
		cmocka_unit_test(a_ring_loaded_both_ways_runs_at_the_rate_of_its_whole_call),
		cmocka_unit_test(a_ring_whose_reverse_goes_to_another_host_keeps_its_point_to_point_time),
		cmocka_unit_test(a_ring_steps_sums_read_the_host_allreduce_within_its_measured_sizes),
		cmocka_unit_test(a_sync_waits_for_the_slowest_of_its_ranks_spells),
		cmocka_unit_test(a_link_that_idled_lets_its_burst_through),
		cmocka_unit_test(an_eager_message_the_link_passes_whole_leaves_at_once),
		cmocka_unit_test(the_tied_tables_eager_chunks_take_from_the_links_bucket),
		cmocka_unit_test(a_syncs_copies_and_sums_are_paid_from_the_budget),
		cmocka_unit_test(a_rank_running_through_a_periods_end_keeps_its_runtime),
		cmocka_unit_test(the_small_all_reduces_sleep_on_through_their_rounds),
		cmocka_unit_test(moving_a_message_costs_each_end_its_probed_cpu),
		cmocka_unit_test(a_recorded_timeline_leaves_nothing_allocated),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
