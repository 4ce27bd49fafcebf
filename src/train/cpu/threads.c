/* Thread control and the threaded sgemm of the CPU kernels (kernels.h).
 * Invariant: OpenBLAS runs single-threaded (set once, when it loads: blas.c); parallelism
 * comes only from OpenMP, so the number of busy threads never exceeds sl_cpu_threads().
 * Measured on a 2-core machine: OpenBLAS's own threads, left spinning after a call, slowed the
 * OpenMP loops that followed by up to 2x, while splitting a product into one single-threaded
 * sgemm per OpenMP thread reaches the same GFLOPS as OpenBLAS's threading
 * (bench/bench_train_sgemm.c). */
#include "train/cpu/kernels.h"

#include <omp.h>

#include "train/cpu/blas.h"

static int cpu_threads = 1;

int sl_cpu_set_threads(int threads, struct sl_err *err)
{
	int rc = sl_blas_load(err);
	if (rc)
		return rc;
	if (threads < 1)
		threads = 1;
	cpu_threads = threads;
	omp_set_num_threads(threads);
	return 0;
}

int sl_cpu_threads(void) { return cpu_threads; }

const char *sl_cpu_blas_core(void) { return sl_blas_core(); }

/* Block boundaries aligned to 16 rows/columns (whole SIMD tiles of the sgemm kernels). */
static void block_range(int n, int parts, int part, int *lo, int *hi)
{
	int chunk = ((n + parts - 1) / parts + 15) / 16 * 16;
	*lo = part * chunk < n ? part * chunk : n;
	*hi = *lo + chunk < n ? *lo + chunk : n;
}

void sl_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
	      const float *B, int ldb, float beta, float *C, int ldc)
{
	enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
	enum CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
	int threads = cpu_threads;
	if (threads == 1 || omp_in_parallel() || (long long)M * N * K < (1LL << 18)) {
		sl_blas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
		return;
	}
	int split_m = M >= N;
#pragma omp parallel num_threads(threads)
	{
		int lo, hi;
		block_range(split_m ? M : N, omp_get_num_threads(), omp_get_thread_num(), &lo, &hi);
		if (hi > lo && split_m)
			sl_blas_sgemm(CblasRowMajor, ta, tb, hi - lo, N, K, alpha,
				      trans_a ? A + lo : A + (size_t)lo * lda, lda, B, ldb, beta,
				      C + (size_t)lo * ldc, ldc);
		else if (hi > lo)
			sl_blas_sgemm(CblasRowMajor, ta, tb, M, hi - lo, K, alpha, A, lda,
				      trans_b ? B + (size_t)lo * ldb : B + lo, ldb, beta, C + lo, ldc);
	}
}
