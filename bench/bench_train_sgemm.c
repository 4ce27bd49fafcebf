/* sgemm peak probe: the GFLOPS this machine's OpenBLAS reaches on large fp32 products, the
 * denominator of the training runtime's MFU (bench/bench_train.sh).
 *
 * For each thread count it times C = A B^T with M = N = K = 2048 (2 * 2048^3 = 17.2 GFLOP),
 * both through OpenBLAS's own threading and through sl_sgemm (one single-threaded sgemm per
 * OpenMP thread, what `sailor train` uses), best of 5 after a warm-up, and reports the better
 * of the two as the peak.
 * Usage: bench_train_sgemm [--threads T] [--json]   (default: every count from 1 to the cores)
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train/cpu/kernels.h"

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double best_gflops(int use_omp, int threads, const float *a, const float *b, float *c,
			  int n)
{
	double best = 1e30;
	for (int rep = 0; rep < 6; rep++) {
		double t0 = now_s();
		if (use_omp) {
			if (sl_cpu_set_threads(threads, NULL))
				return 0;
			sl_sgemm(0, 1, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
		} else {
			openblas_set_num_threads(threads);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a, n, b, n,
				    0.0f, c, n);
		}
		double dt = now_s() - t0;
		if (rep > 0 && dt < best)
			best = dt;
	}
	return 2.0 * n * n * (double)n / best / 1e9;
}

int main(int argc, char **argv)
{
	int only = 0, json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			only = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--json"))
			json = 1;
		else {
			fprintf(stderr, "usage: bench_train_sgemm [--threads T] [--json]\n");
			return 2;
		}
	}
	const int n = 2048;
	float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
	      *c = malloc(sizeof(float) * n * n);
	if (!a || !b || !c)
		return 1;
	for (long i = 0; i < (long)n * n; i++) {
		a[i] = (float)(i % 13) * 0.01f;
		b[i] = (float)(i % 7) * 0.01f;
	}
	int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
	for (int t = only ? only : 1; t <= (only ? only : cores); t++) {
		double blas = best_gflops(0, t, a, b, c, n);
		double omp = best_gflops(1, t, a, b, c, n);
		double peak = blas > omp ? blas : omp;
		if (json)
			printf("{\"threads\":%d,\"blas_core\":\"%s\",\"openblas_threads_gflops\":%.1f,"
			       "\"sl_sgemm_gflops\":%.1f,\"peak_gflops\":%.1f}\n",
			       t, sl_cpu_blas_core(), blas, omp, peak);
		else
			printf("sgemm %dx%dx%d, %d thread%s, OpenBLAS %s: %.1f GFLOPS (OpenBLAS "
			       "threads %.1f, sl_sgemm %.1f)\n",
			       n, n, n, t, t > 1 ? "s" : "", sl_cpu_blas_core(), peak, blas, omp);
	}
	free(a);
	free(b);
	free(c);
	return 0;
}
