/* How fast this machine runs the same work from one minute to the next, with no CPU quota and
 * nothing of ours beside it (bench/testbed/machine_speed.sh; bench/RESULTS.md, 2026-11-28 (11)).
 * The floor under every repeatability figure of the testbed: a profile can repeat no closer
 * than the machine it runs on.
 *
 * Every interval it times, in thread CPU, two pieces of fixed work, back to back:
 *   block  PASSES forwards and backwards of one transformer block of MODEL at micro-batch MBS,
 *          built as the runtime builds a stage (the profiler's and the runs' kernels: caches,
 *          memory and the vector units together), after one untimed warm-up pass;
 *   alu    a chain of dependent integer multiply-adds that stays in registers (the core's own
 *          clock and pipeline, no memory).
 * and prints one line per sample: seconds since start, the CPU it ran on, block µs per pass,
 * alu µs, and which copy of the block it ran. Sleeping in between keeps it at a few percent of
 * one core, so that it can run beside a profile without being its background load.
 *
 * With COPIES > 1 it builds that many copies of the block at once, each in memory of its own,
 * and times them in turn: a slow spell of the machine falls on every copy alike, so a copy that
 * stays slower than the others is slower for where its memory lies (which physical pages, so
 * which sets of the physically indexed caches), not for when it ran.
 *
 * usage: machine_speed MODEL MBS PASSES INTERVAL_MS DURATION_S [COPIES]
 *        (SAILOR_DATA: the data directory)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getcpu */
#endif
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model/model_config.h"
#include "train/cpu/kernels.h"
#include "train/model.h"
#include "util/err.h"

#define ALU_STEPS 4000000ULL

static double clock_s(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A dependent chain: every step needs the one before, so it runs at one multiply-add per few
 * cycles whatever the memory does. The result is printed by the caller's last line so that the
 * compiler keeps the loop. */
static uint64_t alu_chain(uint64_t seed)
{
	uint64_t x = seed | 1;
	for (uint64_t i = 0; i < ALU_STEPS; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

int main(int argc, char **argv)
{
	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: machine_speed MODEL MBS PASSES INTERVAL_MS DURATION_S "
				"[COPIES]\n");
		return 2;
	}
	int mbs = atoi(argv[2]), passes = atoi(argv[3]), copies = argc == 7 ? atoi(argv[6]) : 1;
	double interval_s = atof(argv[4]) / 1e3, duration_s = atof(argv[5]);
	if (mbs < 1 || passes < 1 || interval_s <= 0 || duration_s <= 0 || copies < 1 ||
	    copies > 64) {
		fprintf(stderr, "machine_speed: MBS, PASSES, INTERVAL_MS and DURATION_S must be "
				"positive, COPIES 1 to 64\n");
		return 2;
	}
	struct sl_model_config model;
	struct sl_err err = {0};
	if (sl_model_config_load(argv[1], &model, &err)) {
		fprintf(stderr, "machine_speed: %s\n", err.msg);
		return 1;
	}
	sl_cpu_set_threads(1);
	/* block 1: a middle block, neither the embedding's nor the head's stage */
	struct sl_gpt *stage = calloc((size_t)copies, sizeof(*stage));
	if (!stage) {
		fprintf(stderr, "machine_speed: out of memory\n");
		return 1;
	}
	for (int c = 0; c < copies; c++) {
		if (sl_gpt_init_slots(&stage[c], &model, 1, 1, mbs, model.seq_len, 1, 1, 0, NULL, 1,
				      &err)) {
			fprintf(stderr, "machine_speed: %s\n", err.msg);
			return 1;
		}
		sl_gpt_init_weights(&stage[c], 1);
	}
	size_t tokens = (size_t)mbs * (size_t)model.seq_len, act = tokens * (size_t)model.hidden;
	int32_t *ids = malloc(2 * tokens * sizeof(*ids));
	float *input = malloc(act * sizeof(*input)), *grad_out = malloc(act * sizeof(*grad_out));
	if (!ids || !input || !grad_out) {
		fprintf(stderr, "machine_speed: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < 2 * tokens; i++)
		ids[i] = (int32_t)(i % (size_t)model.vocab);
	for (size_t i = 0; i < act; i++) {
		input[i] = (float)(i % 13) * 0.01f;
		grad_out[i] = (float)(i % 7) * 0.001f;
	}
	struct sl_gpt_microbatch mb = {mbs, model.seq_len, ids, ids + tokens};
	printf("# machine_speed %s mbs %d, %d passes every %.0f ms for %.0f s, %d copies\n"
	       "# seconds cpu block_us_per_pass alu_us copy\n",
	       argv[1], mbs, passes, interval_s * 1e3, duration_s, copies);
	uint64_t keep = 0;
	int sample = 0;
	double start = clock_s(CLOCK_MONOTONIC);
	for (double next = start; clock_s(CLOCK_MONOTONIC) - start < duration_s;
	     next += interval_s) {
		double now = clock_s(CLOCK_MONOTONIC);
		if (next > now) {
			double nap = next - now;
			struct timespec t = {(time_t)nap, (long)((nap - (double)(time_t)nap) * 1e9)};
			nanosleep(&t, NULL);
		}
		double loss = 0, block = 0;
		int c = sample++ % copies;
		for (int p = 0; p <= passes; p++) { /* pass 0: the warm-up */
			double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
			if (sl_gpt_forward(&stage[c], &mb, input, &loss, &err) ||
			    sl_gpt_backward(&stage[c], &mb, grad_out, 0.1f, &err)) {
				fprintf(stderr, "machine_speed: %s\n", err.msg);
				return 1;
			}
			if (p)
				block += clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
		}
		double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		keep ^= alu_chain(keep + (uint64_t)next);
		double alu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
		printf("%.2f %d %.1f %.1f %d\n", clock_s(CLOCK_MONOTONIC) - start, sched_getcpu(),
		       block / passes * 1e6, alu * 1e6, c);
		fflush(stdout);
	}
	printf("# end (%llu)\n", (unsigned long long)(keep & 1));
	for (int c = 0; c < copies; c++)
		sl_gpt_free(&stage[c]);
	free(stage);
	free(ids);
	free(input);
	free(grad_out);
	return 0;
}
