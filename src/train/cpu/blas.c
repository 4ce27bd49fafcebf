/* OpenBLAS opened on first use (blas.h). */
#include "train/cpu/blas.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/shared_lib.h"

static struct {
	void (*sgemm)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
		      blasint, blasint, float, const float *, blasint, const float *, blasint,
		      float, float *, blasint);
	void (*set_num_threads)(int);
	char *(*get_corename)(void);
	/* the worker pool's teardown: exported by every OpenBLAS built with threads (used there
	 * around fork), not declared in cblas.h */
	int (*thread_shutdown)(void);
} blas;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static struct sl_err load_err;

static void load(void)
{
	static const char *const names[] = {"libopenblas.so.0", "libopenblas.so", NULL};
	const struct sl_shared_symbol symbols[] = {
		{"cblas_sgemm", (void **)&blas.sgemm},
		{"openblas_set_num_threads", (void **)&blas.set_num_threads},
		{"openblas_get_corename", (void **)&blas.get_corename},
		{"blas_thread_shutdown_", (void **)&blas.thread_shutdown},
	};
	if (sl_shared_lib_open(names, symbols, (int)(sizeof(symbols) / sizeof(symbols[0])),
			       "install OpenBLAS (Debian: apt-get install "
			       "libopenblas0-pthread; scripts/install-deps.sh does)", &load_err))
		return;
	/* The pthread OpenBLAS starts one worker per core when it loads, and the workers spin
	 * (sched_yield) a while before sleeping: they took a core from the OpenMP threads (in
	 * `sailor plan`, measured 0.20 s against 0.15 s, when it was linked at start). This runtime
	 * never asks OpenBLAS for threads, so the pool goes at once; OpenBLAS would start it again
	 * itself if a multi-threaded call ever came. */
	blas.set_num_threads(1);
	blas.thread_shutdown();
}

int sl_blas_load(struct sl_err *err)
{
	pthread_once(&load_once, load);
	if (!blas.sgemm)
		return sl_err_set(err, load_err.code, "%s", load_err.msg);
	return 0;
}

void sl_blas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a,
		   enum CBLAS_TRANSPOSE trans_b, blasint M, blasint N, blasint K, float alpha,
		   const float *A, blasint lda, const float *B, blasint ldb, float beta, float *C,
		   blasint ldc)
{
	/* through pthread_once every time (an atomic load once loaded): a thread that saw the
	 * pointer without it could call OpenBLAS before its pool was stopped */
	struct sl_err e = {0};
	if (sl_blas_load(&e)) {
		fprintf(stderr, "sailor: error: %s\n", e.msg);
		exit(1);
	}
	blas.sgemm(order, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

const char *sl_blas_core(void)
{
	return blas.get_corename ? blas.get_corename() : "not loaded";
}
