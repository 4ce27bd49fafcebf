/* What the simulator's model of a CPU-quota device (src/sim/runtime_cpu_quota.c) lets a rank run
 * after it slept: the pattern of quota_wake_kernel.c replayed with sl_rt_wait_idle (a sleep that
 * costs no CPU) and sl_rt_run_work, averaged over evenly spread phases of the device's periods
 * (nobody knows where a cgroup's period starts).
 *
 * usage: quota_wake_model CORES SLEEP_S   (period 10 ms, the testbed's)
 * Prints the mean CPU (ms) run 0, 5, ..., 60 ms after the wake, after two warm-up repeats. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/runtime_model.h"

#define MARKS 61
#define PHASES 200
#define PERIOD_S 0.01
#define STEP_CPU_S 1e-5 /* the replay's grain: 10 us of CPU */

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: quota_wake_model CORES SLEEP_S\n");
		return 2;
	}
	double cores = atof(argv[1]), sleep_s = atof(argv[2]);
	if (!(cores > 0 && cores < 1) || !(sleep_s >= 0)) {
		fprintf(stderr, "quota_wake_model: CORES must be in (0, 1) and SLEEP_S >= 0\n");
		return 2;
	}
	double cpu_ms[MARKS] = {0};
	for (int phase = 0; phase < PHASES; phase++) {
		struct sl_rt_rank r;
		memset(&r, 0, sizeof(r));
		r.quota_cores = cores;
		r.period_s = PERIOD_S;
		r.period = LONG_MIN;
		r.phase_s = (phase + 0.5) / PHASES * PERIOD_S;
		for (int rep = 0; rep < 3; rep++) {
			sl_rt_wait_idle(&r, r.clock + sleep_s);
			double wall0 = r.clock, cpu0 = r.cpu_s;
			for (int mark = 0; mark < MARKS;) {
				if (r.clock - wall0 < 1e-3 * mark) {
					sl_rt_run_work(&r, STEP_CPU_S / cores);
					continue;
				}
				if (rep == 2)
					cpu_ms[mark] += 1e3 * (r.cpu_s - cpu0);
				mark++;
			}
		}
	}
	for (int mark = 0; mark < MARKS; mark += 5)
		printf("%s%.2f", mark ? " " : "", cpu_ms[mark] / PHASES);
	printf("\n");
	return 0;
}
