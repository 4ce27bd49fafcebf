/* Fuzz target: the GPU catalogue (data/gpus.json) through sl_catalogue_load, with the shipped
 * zone files beside it (the catalogue reads its zones and prices from there). */
#include "cluster/catalogue.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int linked;
	fuzz_setup();
	if (!linked) {
		fuzz_link_data("cat/zones", "zones");
		linked = 1;
	}
	fuzz_write("cat/gpus.json", data, size);
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/cat", fuzz_dir());
	struct sl_catalogue cat;
	struct sl_err err = {0};
	if (!sl_catalogue_load(dir, &cat, &err)) {
		fuzz_assert(cat.gpu_count >= 1 && cat.gpu_count <= SL_MAX_GPU_TYPES);
		fuzz_assert(cat.zone_count >= 1 && cat.zone_count <= SL_MAX_ZONES);
	}
	return 0;
}
