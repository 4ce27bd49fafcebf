/* Spins for SECONDS and prints where in the PERIOD_S-long periods of CLOCK_MONOTONIC it resumed
 * each time it had stood still for over 2 ms (throttled by its cgroup's CPU quota): the phase of
 * its cgroup's period timer. Used by period_phase_probe.sh.
 *
 * usage: period_phase_spin SECONDS PERIOD_S NAME */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: period_phase_spin SECONDS PERIOD_S NAME\n");
		return 2;
	}
	double seconds = atof(argv[1]), period = atof(argv[2]);
	enum { MAX_RESUMES = 4096 };
	static double phase_ms[MAX_RESUMES];
	int n = 0;
	double start = now_s(), last = start;
	for (;;) {
		double t = now_s();
		if (t - start > seconds)
			break;
		if (t - last > 0.002 && n < MAX_RESUMES)
			phase_ms[n++] = 1e3 * fmod(t, period);
		last = t;
	}
	if (n == 0) {
		printf("%s: never throttled in %.1f s (no quota?)\n", argv[3], seconds);
		return 0;
	}
	qsort(phase_ms, (size_t)n, sizeof(double), by_value);
	printf("%s: %d resumes, phase %.2f ms (median; 10-90 %%: %.2f-%.2f)\n", argv[3], n,
	       phase_ms[n / 2], phase_ms[n / 10], phase_ms[n * 9 / 10]);
	return 0;
}
