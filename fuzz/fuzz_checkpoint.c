/* Fuzz target: checkpoint files through sl_checkpoint_load into a micro model
 * (fuzz/micro-model.json: 1 block of hidden 8), what `sailor train --resume` does. A checkpoint
 * is protected by a CRC-32 that a mutation almost always breaks; so that the fuzzer reaches the
 * metadata and tensor checks behind it, an input that ends in the end marker gets its CRC
 * recomputed before it is written (an input whose first byte is 'R' is written raw, to fuzz
 * the checks in front of the CRC too). */
#include "fuzz_util.h"
#include "model/model_config.h"
#include "train/checkpoint.h"
#include "train/crc32.h"
#include "train/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_gpt gpt;
	static int ready;
	struct sl_err err = {0};
	fuzz_setup();
	if (!ready) {
		struct sl_model_config model;
		if (sl_model_config_load(SAILOR_SOURCE_DIR "/fuzz/micro-model.json", &model, &err) ||
		    sl_gpt_init(&gpt, &model, 0, model.num_blocks + 1, 1, 8, 1, 0, NULL, 1, &err)) {
			fprintf(stderr, "fuzz_checkpoint: %s\n", err.msg);
			abort();
		}
		ready = 1;
	}
	const char *path;
	if (size >= 1 && data[0] == 'R') {
		path = fuzz_write("step-00000001.ckpt", data + 1, size - 1);
	} else {
		uint8_t *copy = malloc(size ? size : 1);
		if (!copy)
			return 0;
		memcpy(copy, data, size);
		if (size >= 40 && !memcmp(copy + size - 8, "SLCKEND\0", 8)) {
			uint32_t crc = sl_crc32(0, copy, size - 16);
			for (int i = 0; i < 4; i++)
				copy[size - 16 + i] = (uint8_t)(crc >> (8 * i));
		}
		path = fuzz_write("step-00000001.ckpt", copy, size);
		free(copy);
	}
	struct sl_checkpoint_state st;
	memset(&st, 0, sizeof(st));
	if (!sl_checkpoint_load(path, &gpt, &st, &err)) {
		fuzz_assert(st.step >= 0 && st.data_seq >= 1);
		json_decref(st.train);
	}
	return 0;
}
