/* What a stage's forward and backward cost in CPU when they start with the machine's caches
 * holding someone else's data, against starting warm as the profiler's back-to-back calls do
 * (bench/testbed/pass_cold_cost.sh; bench/RESULTS.md, 2026-11-27 (6)).
 *
 * Builds the stage [first, last] of a model as the runtime does (one slot per micro-batch in
 * flight, 4 here), then runs rounds of 4 forwards and 4 backwards. Before each pass, when
 * evict_mib > 0, it writes one byte per cache line of a buffer that large, so that the pass
 * finds its weights, gradients and activations out of the caches; the thread CPU of each
 * round's first forward and first backward is kept, and the medians are printed. With SLEEP_US,
 * the thread sleeps that long before each pass, as a pipeline stage's rank waits for its
 * message (bench/testbed/throttle_cost.sh: in a CPU-quota cgroup, a sleep of a period or more
 * starts each pass with a fresh budget).
 *
 * usage: pass_cold_cost MODEL FIRST LAST MBS EVICT_MIB ROUNDS [SLEEP_US]
 *        (SAILOR_DATA: the data directory)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/model_config.h"
#include "train/cpu/kernels.h"
#include "train/model.h"
#include "util/err.h"

#define SLOTS 4
#define CACHE_LINE_BYTES 64

static double thread_cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), by_value);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Writes every cache line of the buffer: what was cached before is gone. */
static void evict(volatile unsigned char *buf, size_t bytes)
{
	for (size_t i = 0; i < bytes; i += CACHE_LINE_BYTES)
		buf[i]++;
}

int main(int argc, char **argv)
{
	if (argc != 7 && argc != 8) {
		fprintf(stderr, "usage: pass_cold_cost MODEL FIRST LAST MBS EVICT_MIB ROUNDS "
				"[SLEEP_US]\n");
		return 2;
	}
	double sleep_us = argc == 8 ? atof(argv[7]) : 0;
	long long nap_ns = (long long)(sleep_us * 1e3);
	struct timespec nap = {(time_t)(nap_ns / 1000000000), (long)(nap_ns % 1000000000)};
	int first = atoi(argv[2]), last = atoi(argv[3]), mbs = atoi(argv[4]);
	size_t evict_bytes = (size_t)(atof(argv[5]) * 1048576.0);
	int rounds = atoi(argv[6]);
	struct sl_model_config model;
	struct sl_err err = {0};
	if (sl_model_config_load(argv[1], &model, &err)) {
		fprintf(stderr, "pass_cold_cost: %s\n", err.msg);
		return 1;
	}
	int plan_layers = sl_model_plan_layers(&model);
	if (first < 0 || last < first || last >= plan_layers || mbs < 1 || rounds < 1) {
		fprintf(stderr, "pass_cold_cost: layers 0..%d, first <= last, mbs and rounds >= 1\n",
			plan_layers - 1);
		return 2;
	}
	sl_cpu_set_threads(1);
	struct sl_gpt stage;
	if (sl_gpt_init_slots(&stage, &model, first, last, mbs, model.seq_len, SLOTS, 1, 0, NULL, 1,
			      &err)) {
		fprintf(stderr, "pass_cold_cost: %s\n", err.msg);
		return 1;
	}
	sl_gpt_init_weights(&stage, 1);
	size_t tokens = (size_t)mbs * (size_t)model.seq_len, act = tokens * (size_t)model.hidden;
	int32_t *ids = malloc(2 * tokens * sizeof(*ids));
	float *inputs = malloc(SLOTS * act * sizeof(*inputs));
	float *grad_out = malloc(act * sizeof(*grad_out));
	unsigned char *junk = evict_bytes ? calloc(evict_bytes, 1) : NULL;
	double *fwd = malloc((size_t)rounds * sizeof(*fwd)), *bwd = malloc((size_t)rounds * sizeof(*bwd));
	if (!ids || !inputs || !grad_out || !fwd || !bwd || (evict_bytes && !junk)) {
		fprintf(stderr, "pass_cold_cost: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < 2 * tokens; i++)
		ids[i] = (int32_t)(i % (size_t)model.vocab);
	for (size_t i = 0; i < SLOTS * act; i++)
		inputs[i] = (float)(i % 13) * 0.01f;
	for (size_t i = 0; i < act; i++)
		grad_out[i] = (float)(i % 7) * 0.001f;
	struct sl_gpt_microbatch mb = {mbs, model.seq_len, ids, ids + tokens};
	int has_head = last == plan_layers - 1;
	for (int r = 0; r < rounds; r++) {
		for (int s = 0; s < SLOTS; s++) {
			if (sleep_us > 0)
				nanosleep(&nap, NULL);
			if (junk)
				evict(junk, evict_bytes);
			sl_gpt_select_slot(&stage, s);
			double loss = 0, c0 = thread_cpu_s();
			if (sl_gpt_forward(&stage, &mb, first ? inputs + (size_t)s * act : NULL, &loss,
					   &err)) {
				fprintf(stderr, "pass_cold_cost: %s\n", err.msg);
				return 1;
			}
			if (s == 0)
				fwd[r] = thread_cpu_s() - c0;
		}
		for (int s = 0; s < SLOTS; s++) {
			if (sleep_us > 0)
				nanosleep(&nap, NULL);
			if (junk)
				evict(junk, evict_bytes);
			sl_gpt_select_slot(&stage, s);
			double c0 = thread_cpu_s();
			if (sl_gpt_backward(&stage, &mb, has_head ? NULL : grad_out, 0.1f, &err)) {
				fprintf(stderr, "pass_cold_cost: %s\n", err.msg);
				return 1;
			}
			if (s == 0)
				bwd[r] = thread_cpu_s() - c0;
		}
	}
	printf("%s %d %d %d %g %.1f %.1f\n", argv[1], first, last, mbs, atof(argv[5]),
	       median(fwd, rounds) * 1e6, median(bwd, rounds) * 1e6);
	sl_gpt_free(&stage);
	free(ids);
	free(inputs);
	free(grad_out);
	free(junk);
	free(fwd);
	free(bwd);
	return 0;
}
