/* Fuzz target: pool files (sailor.pool/1 JSON) and availability traces (SOSP'25 CSV) through
 * sl_pool_trace_load, the entry point of `sailor plan --pool/--trace`, which tells the two
 * apart by the first character. Accepted inputs are printed back (sl_pool_to_json). */
#include "cluster/catalogue.h"
#include "cluster/pool.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_catalogue cat;
	static int loaded;
	struct sl_err err = {0};
	fuzz_setup();
	if (!loaded && sl_catalogue_load(NULL, &cat, &err)) {
		fprintf(stderr, "fuzz_pool: %s\n", err.msg);
		abort();
	}
	loaded = 1;
	const char *path = fuzz_write("pool", data, size);
	struct sl_pool_trace trace;
	if (!sl_pool_trace_load(path, &cat, &trace, &err)) {
		fuzz_assert(trace.step_count >= 1);
		for (int s = 0; s < trace.step_count; s++) {
			fuzz_assert(trace.steps[s].duration_s >= 0);
			fuzz_assert(sl_pool_total(&trace.steps[s]) >= 0);
			json_decref(sl_pool_to_json(&trace.steps[s], &cat));
		}
	}
	sl_pool_trace_free(&trace);
	return 0;
}
