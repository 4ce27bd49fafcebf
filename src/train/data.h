/* Token files and the training data loader.
 *
 * Token file format (version 1), all integers little-endian:
 *   offset  size  field
 *   0       8     magic "SLTOKENS"
 *   8       4     format version, 1
 *   12      4     token width in bytes: 2 (vocabularies up to 65536) or 4
 *   16      4     vocabulary size of the tokenizer that wrote it (every token is below it)
 *   20      4     tokenizer: 1 byte-level, 2 GPT-2 BPE, 0 other
 *   24      8     token count N
 *   32      N*w   the tokens, unsigned
 * The file size must be exactly 32 + N*w; anything else is reported as truncated or trailing
 * garbage. Files are written to a temporary name and renamed, so a reader never sees half a file.
 *
 * Loader: the token stream is cut into windows of seq+1 tokens starting at multiples of seq
 * (window w = tokens[w*seq .. w*seq+seq]; its first seq tokens are the inputs and its last seq
 * the targets), windows = (N - 1) / seq. Each sample takes the next window in order, or in a
 * per-epoch permutation with --shuffle; after the last window the next epoch starts. The
 * position (epoch, next window) is all a checkpoint needs to continue exactly; the permutation
 * of epoch e is derived from (seed, e) (rng.h).
 *
 * Ownership: sl_token_file_open() maps the file read-only; sl_token_file_close() unmaps it. The
 * loader borrows the file (which must outlive it) and owns its permutation.
 */
#ifndef SL_TRAIN_DATA_H
#define SL_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define SL_TOKENS_MAGIC "SLTOKENS"
#define SL_TOKENS_VERSION 1
#define SL_TOKENS_HEADER_BYTES 32

enum sl_tokenizer_id { SL_TOKENIZER_OTHER = 0, SL_TOKENIZER_BYTE = 1, SL_TOKENIZER_GPT2 = 2 };

struct sl_token_file {
	char path[4096];
	int width;            /* 2 or 4 */
	uint32_t vocab;
	uint32_t tokenizer;
	long long count;
	const unsigned char *tokens; /* count * width bytes inside the mapping */
	void *map;
	size_t map_bytes;
};

/* Opens and validates the header and size. Errors name the file and what is wrong. */
int sl_token_file_open(struct sl_token_file *file, const char *path, struct sl_err *err);
void sl_token_file_close(struct sl_token_file *file);
uint32_t sl_token_file_get(const struct sl_token_file *file, long long index);
/* Largest token in the file (0 for an empty file). */
uint32_t sl_token_file_max(const struct sl_token_file *file);

/* Writes tokens[count] (each < vocab) as a token file, atomically (temp file, fsync, rename). */
int sl_token_file_write(const char *path, const uint32_t *tokens, long long count, uint32_t vocab,
			uint32_t tokenizer, struct sl_err *err);

struct sl_data_loader {
	const struct sl_token_file *file;
	int batch, seq;
	long long windows;    /* (count - 1) / seq */
	long long epoch;      /* 0-based */
	long long next;       /* index of the next sample within the epoch */
	int shuffle;
	uint64_t seed;
	uint32_t *order;      /* shuffle: permutation of the epoch's windows (owned) */
};

/* Checks that the file holds at least one micro-batch of batch windows of seq+1 tokens and that
 * every token is below model_vocab; starts at epoch 0, window 0. */
int sl_data_loader_init(struct sl_data_loader *loader, const struct sl_token_file *file,
			int batch, int seq, int model_vocab, int shuffle, uint64_t seed,
			struct sl_err *err);
void sl_data_loader_free(struct sl_data_loader *loader);
/* Continues from a saved position. */
int sl_data_loader_seek(struct sl_data_loader *loader, long long epoch, long long next,
			struct sl_err *err);
/* Fills tokens and targets, batch * seq each, and advances. */
void sl_data_loader_next(struct sl_data_loader *loader, int32_t *tokens, int32_t *targets);

#endif
