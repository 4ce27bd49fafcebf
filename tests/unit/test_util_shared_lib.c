/* Unit tests for libraries opened on first use (util/shared_lib.h): symbols resolve into their
 * slots; a library that is not installed, or lacks a symbol, gets one error naming it and what
 * to install, and no slot is written. Also: OpenBLAS (train/cpu/blas.h) loads through it and
 * multiplies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "train/cpu/blas.h"
#include "util/shared_lib.h"

static void resolves_symbols(void **state)
{
	(void)state;
	/* libm: always there (sailor links it) */
	static const char *const names[] = {"libm.so.6", NULL};
	double (*cosine)(double) = NULL;
	const struct sl_shared_symbol symbols[] = {{"cos", (void **)&cosine}};
	struct sl_err err = {0};
	assert_int_equal(sl_shared_lib_open(names, symbols, 1, "install libm", &err), 0);
	assert_non_null(cosine);
	assert_true(cosine(0.0) == 1.0);
}

static void missing_library_names_the_fix(void **state)
{
	(void)state;
	static const char *const names[] = {"libsailor-absent.so.7", "libsailor-absent.so", NULL};
	void (*fn)(void) = NULL;
	const struct sl_shared_symbol symbols[] = {{"anything", (void **)&fn}};
	struct sl_err err = {0};
	assert_int_equal(sl_shared_lib_open(names, symbols, 1, "install the absent package", &err),
			 SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "libsailor-absent.so.7"));
	assert_non_null(strstr(err.msg, "install the absent package"));
	assert_null(fn);
}

static void missing_symbol_writes_no_slot(void **state)
{
	(void)state;
	static const char *const names[] = {"libm.so.6", NULL};
	double (*cosine)(double) = NULL;
	void (*absent)(void) = NULL;
	const struct sl_shared_symbol symbols[] = {{"cos", (void **)&cosine},
						   {"sl_no_such_symbol", (void **)&absent}};
	struct sl_err err = {0};
	assert_int_equal(sl_shared_lib_open(names, symbols, 2, "install libm", &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "'sl_no_such_symbol'"));
	assert_null(cosine);
	assert_null(absent);
}

static void openblas_loads_and_multiplies(void **state)
{
	(void)state;
	assert_string_equal(sl_blas_core(), "not loaded");
	struct sl_err err = {0};
	assert_int_equal(sl_blas_load(&err), 0);
	assert_true(strcmp(sl_blas_core(), "not loaded") != 0);
	/* [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50] */
	const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
	float c[4] = {0};
	sl_blas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c,
		      2);
	assert_true(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(resolves_symbols),
		cmocka_unit_test(missing_library_names_the_fix),
		cmocka_unit_test(missing_symbol_writes_no_slot),
		cmocka_unit_test(openblas_loads_and_multiplies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
