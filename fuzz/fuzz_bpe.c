/* Fuzz target: GPT-2 BPE vocabularies (encoder.json and vocab.bpe, what `sailor data
 * --tokenizer gpt2` loads) through sl_tokenizer_gpt2_load, then a round trip of a short text.
 * The input is both files: encoder.json, a NUL byte, vocab.bpe (no NUL: the whole input is
 * encoder.json with an empty merges file). */
#include "fuzz_util.h"
#include "train/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_setup();
	const uint8_t *nul = memchr(data, 0, size);
	size_t enc_bytes = nul ? (size_t)(nul - data) : size;
	char enc[512], bpe[512];
	snprintf(enc, sizeof(enc), "%s", fuzz_write("encoder.json", data, enc_bytes));
	snprintf(bpe, sizeof(bpe), "%s",
		 fuzz_write("vocab.bpe", nul ? nul + 1 : data, nul ? size - enc_bytes - 1 : 0));
	struct sl_tokenizer t;
	struct sl_err err = {0};
	if (sl_tokenizer_gpt2_load(&t, enc, bpe, &err))
		return 0;
	static const char text[] = "Hello world, the quick brown fox. \xc3\xa9t\xc3\xa9 42!";
	struct sl_token_buf buf = {0};
	if (!sl_tokenizer_encode(&t, text, sizeof(text) - 1, &buf, &err)) {
		char *back = NULL;
		size_t len = 0;
		if (!sl_tokenizer_decode(&t, buf.data, buf.count, &back, &len, &err))
			free(back);
	}
	sl_token_buf_free(&buf);
	sl_tokenizer_free(&t);
	return 0;
}
