/* What a CPU-quota cgroup lets a task run after it slept, as the kernel does it (the other half
 * of quota_wake_probe.sh; quota_wake_model.c replays the same with the simulator's model).
 *
 * usage: quota_wake_kernel SLEEP_S REPEATS   (run inside the cgroup)
 * Repeats: sleep SLEEP_S, then spin for 60 ms reading the process's CPU time every millisecond.
 * Prints the mean CPU (ms) the task had run 0, 5, ..., 60 ms after it woke, over the repeats
 * after the first (which starts from no history). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MARKS 61 /* 0..60 ms */

static double seconds_on(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: quota_wake_kernel SLEEP_S REPEATS\n");
		return 2;
	}
	double sleep_s = atof(argv[1]);
	int repeats = atoi(argv[2]);
	if (!(sleep_s >= 0) || repeats < 2) {
		fprintf(stderr, "quota_wake_kernel: SLEEP_S must be >= 0 and REPEATS >= 2\n");
		return 2;
	}
	double cpu_ms[MARKS] = {0};
	for (int rep = 0; rep < repeats; rep++) {
		struct timespec nap = {(time_t)sleep_s,
				       (long)((sleep_s - (double)(time_t)sleep_s) * 1e9)};
		nanosleep(&nap, NULL);
		double wall0 = seconds_on(CLOCK_MONOTONIC), cpu0 = seconds_on(CLOCK_PROCESS_CPUTIME_ID);
		for (int mark = 0; mark < MARKS;) {
			if (seconds_on(CLOCK_MONOTONIC) - wall0 < 1e-3 * mark)
				continue; /* the spin: what the quota lets run */
			if (rep > 0)
				cpu_ms[mark] += 1e3 * (seconds_on(CLOCK_PROCESS_CPUTIME_ID) - cpu0);
			mark++;
		}
	}
	for (int mark = 0; mark < MARKS; mark += 5)
		printf("%s%.2f", mark ? " " : "", cpu_ms[mark] / (repeats - 1));
	printf("\n");
	return 0;
}
