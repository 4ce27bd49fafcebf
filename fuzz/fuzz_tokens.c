/* Fuzz target: token files (`sailor data` output) through sl_token_file_open and the data
 * loader of `sailor train` (gpt2-tiny's vocabulary of 256, windows of 8 tokens, micro-batches of
 * 2), reading one micro-batch. */
#include "fuzz_util.h"
#include "train/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_setup();
	const char *path = fuzz_write("tokens.bin", data, size);
	struct sl_token_file file;
	struct sl_err err = {0};
	if (sl_token_file_open(&file, path, &err))
		return 0;
	fuzz_assert(file.count >= 0);
	struct sl_data_loader loader;
	if (!sl_data_loader_init(&loader, &file, 2, 8, 256, size & 1, 7, &err)) {
		int32_t tokens[16], targets[16];
		sl_data_loader_next(&loader, tokens, targets);
		for (int i = 0; i < 16; i++)
			fuzz_assert(tokens[i] >= 0 && tokens[i] < 256 && targets[i] >= 0 &&
				    targets[i] < 256);
		sl_data_loader_free(&loader);
	}
	sl_token_file_close(&file);
	return 0;
}
