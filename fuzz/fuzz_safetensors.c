/* Fuzz target: safetensors files (`sailor train --init-from`) through sl_safetensors_open, then
 * a read of every F32 tensor whose shape is small, as the trainer reads them. */
#include <jansson.h>

#include "fuzz_util.h"
#include "train/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_setup();
	const char *path = fuzz_write("weights.safetensors", data, size);
	struct sl_safetensors st;
	struct sl_err err = {0};
	if (sl_safetensors_open(&st, path, &err))
		return 0;
	const char *name;
	json_t *t;
	static float buf[1 << 16];
	json_object_foreach(st.header, name, t) {
		json_t *shape = json_object_get(t, "shape");
		if (!json_is_array(shape) || json_array_size(shape) > 4)
			continue;
		long long dims[4], numel = 1;
		int ndim = (int)json_array_size(shape);
		for (int d = 0; d < ndim; d++) {
			dims[d] = json_integer_value(json_array_get(shape, (size_t)d));
			numel = dims[d] > 0 && dims[d] <= (1 << 16) ? numel * dims[d] : (1 << 17);
			if (numel > (1 << 16))
				break;
		}
		if (numel <= (1 << 16))
			sl_safetensors_read(&st, name, ndim, dims, buf, &err);
	}
	sl_safetensors_close(&st);
	return 0;
}
