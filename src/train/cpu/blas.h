/* OpenBLAS, opened when the kernels first need it (util/shared_lib.h says why: `sailor plan`,
 * `simulate` and the controller never multiply a matrix, and loading it cost every process its
 * libraries and a worker pool started at load). Once loaded it is kept on the calling thread:
 * its worker pool is stopped at once, and sl_sgemm (kernels.h) splits products over OpenMP.
 * Thread-safe: the first caller loads, the others wait for it. */
#ifndef SL_TRAIN_CPU_BLAS_H
#define SL_TRAIN_CPU_BLAS_H

#include <cblas.h>

#include "util/err.h"

/* Loads OpenBLAS once (later calls return the first call's result). SL_ENOTFOUND names the
 * package to install when it cannot be loaded. */
int sl_blas_load(struct sl_err *err);

/* cblas_sgemm of the loaded OpenBLAS, single-threaded. Loads it if no command did; a process
 * that cannot load it ends here with the load's message (commands that train call
 * sl_blas_load first, through sl_cpu_set_threads, and report the error properly). */
void sl_blas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a,
		   enum CBLAS_TRANSPOSE trans_b, blasint M, blasint N, blasint K, float alpha,
		   const float *A, blasint lda, const float *B, blasint ldb, float beta, float *C,
		   blasint ldc);

/* The OpenBLAS kernel set in use ("Haswell", "SkylakeX", ...), or "not loaded". */
const char *sl_blas_core(void);

#endif
