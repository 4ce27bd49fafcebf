/* Token files and the data loader (format and invariants in data.h). */
#include "train/data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/rng.h"
#include "train/tokenizer.h"
#include "util/atomic_file.h"
#include "util/limits.h"

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p)
{
	return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	put_u32(p, (uint32_t)v);
	put_u32(p + 4, (uint32_t)(v >> 32));
}

int sl_token_file_open(struct sl_token_file *file, const char *path, struct sl_err *err)
{
	memset(file, 0, sizeof(*file));
	snprintf(file->path, sizeof(file->path), "%s", path);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "data file '%s': cannot open: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return sl_err_set(err, SL_EIO, "data file '%s': cannot stat: %s", path, strerror(e));
	}
	size_t size = (size_t)st.st_size;
	if (size < SL_TOKENS_HEADER_BYTES) {
		close(fd);
		return sl_err_set(err, SL_EINPUT,
				  "data file '%s': %zu bytes is shorter than the %d-byte header: not a "
				  "token file (build one with 'sailor data')",
				  path, size, SL_TOKENS_HEADER_BYTES);
	}
	void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return sl_err_set(err, SL_EIO, "data file '%s': cannot map: %s", path,
				  strerror(errno));
	const unsigned char *h = map;
	int rc = 0;
	if (memcmp(h, SL_TOKENS_MAGIC, 8) != 0) {
		rc = sl_err_set(err, SL_EINPUT,
				"data file '%s': bad magic: not a sailor token file (build one with "
				"'sailor data INPUT.txt -o OUT.bin')",
				path);
	} else if (get_u32(h + 8) != SL_TOKENS_VERSION) {
		rc = sl_err_set(err, SL_EINPUT, "data file '%s': format version %u is not supported "
				"(this sailor reads version %d)", path, get_u32(h + 8),
				SL_TOKENS_VERSION);
	} else if (get_u32(h + 12) != 2 && get_u32(h + 12) != 4) {
		rc = sl_err_set(err, SL_EINPUT, "data file '%s': token width %u bytes: must be 2 or 4",
				path, get_u32(h + 12));
	} else if (get_u32(h + 16) == 0 || get_u32(h + 16) > SL_MAX_VOCAB ||
		   (get_u32(h + 12) == 2 && get_u32(h + 16) > 65536)) {
		rc = sl_err_set(err, SL_EINPUT, "data file '%s': vocabulary size %u is out of range: "
				"1 to %d (65536 with 2-byte tokens)", path, get_u32(h + 16),
				SL_MAX_VOCAB);
	} else if (get_u32(h + 20) > SL_TOKENIZER_GPT2) {
		rc = sl_err_set(err, SL_EINPUT, "data file '%s': tokenizer %u is unknown (0 other, "
				"1 byte-level, 2 GPT-2 BPE)", path, get_u32(h + 20));
	} else {
		file->width = (int)get_u32(h + 12);
		file->vocab = get_u32(h + 16);
		file->tokenizer = get_u32(h + 20);
		uint64_t count = get_u64(h + 24);
		uint64_t payload = size - SL_TOKENS_HEADER_BYTES;
		if (count > payload / (uint64_t)file->width)
			rc = sl_err_set(err, SL_EINPUT,
					"data file '%s': truncated: the header promises %llu tokens "
					"(%llu bytes) but only %llu bytes follow it",
					path, (unsigned long long)count,
					(unsigned long long)(count * (uint64_t)file->width),
					(unsigned long long)payload);
		else if (count * (uint64_t)file->width != payload)
			rc = sl_err_set(err, SL_EINPUT,
					"data file '%s': %llu bytes after the %llu tokens the header "
					"declares: the file is damaged",
					path, (unsigned long long)(payload - count * (uint64_t)file->width),
					(unsigned long long)count);
		file->count = (long long)count;
	}
	if (rc) {
		munmap(map, size);
		return rc;
	}
	file->map = map;
	file->map_bytes = size;
	file->tokens = h + SL_TOKENS_HEADER_BYTES;
	/* every token below the vocabulary the file declares: the loader's check against the
	 * model's vocabulary relies on it (one pass over the file, as fast as reading it) */
	uint32_t max = file->count > 0 ? sl_token_file_max(file) : 0;
	if (file->count > 0 && max >= file->vocab) {
		munmap(map, size);
		file->map = NULL;
		file->tokens = NULL;
		return sl_err_set(err, SL_EINPUT, "data file '%s': token %u is not below the "
				  "vocabulary size %u its header declares: the file is damaged",
				  path, max, file->vocab);
	}
	return 0;
}

void sl_token_file_close(struct sl_token_file *file)
{
	if (file->map)
		munmap(file->map, file->map_bytes);
	file->map = NULL;
	file->tokens = NULL;
}

uint32_t sl_token_file_get(const struct sl_token_file *file, long long index)
{
	const unsigned char *p = file->tokens + (size_t)index * (size_t)file->width;
	return file->width == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : get_u32(p);
}

uint32_t sl_token_file_max(const struct sl_token_file *file)
{
	uint32_t max = 0;
	long long n = file->count;
#pragma omp parallel for schedule(static) reduction(max : max)
	for (long long i = 0; i < n; i++) {
		uint32_t t = sl_token_file_get(file, i);
		max = t > max ? t : max;
	}
	return max;
}

int sl_token_file_write(const char *path, const uint32_t *tokens, long long count, uint32_t vocab,
			uint32_t tokenizer, struct sl_err *err)
{
	for (long long i = 0; i < count; i++)
		if (tokens[i] >= vocab)
			return sl_err_set(err, SL_EINPUT, "token %u at position %lld is not below the "
					  "vocabulary size %u", tokens[i], i, vocab);
	int width = vocab <= 65536 ? 2 : 4;
	struct sl_atomic_file af;
	int rc = sl_atomic_open(&af, path, "token file", err);
	if (rc)
		return rc;
	FILE *f = af.f;
	unsigned char header[SL_TOKENS_HEADER_BYTES];
	memcpy(header, SL_TOKENS_MAGIC, 8);
	put_u32(header + 8, SL_TOKENS_VERSION);
	put_u32(header + 12, (uint32_t)width);
	put_u32(header + 16, vocab);
	put_u32(header + 20, tokenizer);
	put_u64(header + 24, (uint64_t)count);
	int ok = fwrite(header, 1, sizeof(header), f) == sizeof(header);
	unsigned char buf[1 << 16];
	size_t fill = 0;
	for (long long i = 0; i < count && ok; i++) {
		if (width == 2) {
			buf[fill++] = (unsigned char)tokens[i];
			buf[fill++] = (unsigned char)(tokens[i] >> 8);
		} else {
			put_u32(buf + fill, tokens[i]);
			fill += 4;
		}
		if (fill + 4 > sizeof(buf)) {
			ok = fwrite(buf, 1, fill, f) == fill;
			fill = 0;
		}
	}
	if (ok && fill)
		ok = fwrite(buf, 1, fill, f) == fill;
	if (!ok) {
		int e = errno;
		sl_atomic_abort(&af);
		return sl_err_set(err, SL_EIO, "cannot write token file '%s': %s", path, strerror(e));
	}
	return sl_atomic_commit(&af, err);
}

/* Fisher-Yates shuffle of the windows of an epoch from a generator seeded by (seed, epoch). */
static void make_order(struct sl_data_loader *l)
{
	for (long long i = 0; i < l->windows; i++)
		l->order[i] = (uint32_t)i;
	struct sl_rng rng;
	sl_rng_seed(&rng, sl_mix64(l->seed ^ sl_mix64(0x5348554646ULL + (uint64_t)l->epoch)));
	for (long long i = l->windows - 1; i > 0; i--) {
		long long j = (long long)sl_rng_below(&rng, (uint64_t)i + 1);
		uint32_t t = l->order[i];
		l->order[i] = l->order[j];
		l->order[j] = t;
	}
}

int sl_data_loader_init(struct sl_data_loader *loader, const struct sl_token_file *file,
			int batch, int seq, int model_vocab, int shuffle, uint64_t seed,
			struct sl_err *err)
{
	memset(loader, 0, sizeof(*loader));
	if (batch <= 0 || seq <= 0)
		return sl_err_set(err, SL_EINPUT, "micro-batch and sequence length must be positive");
	long long windows = file->count > 0 ? (file->count - 1) / seq : 0;
	if (windows < batch)
		return sl_err_set(err, SL_EINPUT,
				  "data file '%s' is too short: %lld tokens make %lld windows of "
				  "%d+1 tokens, fewer than one micro-batch of %d (need at least %lld "
				  "tokens; use more text or a smaller --micro-batch or --seq-len)",
				  file->path, file->count, windows, seq, batch,
				  (long long)batch * seq + 1);
	if (file->vocab > (uint32_t)model_vocab) {
		uint32_t max = sl_token_file_max(file);
		if (max >= (uint32_t)model_vocab)
			return sl_err_set(err, SL_EINPUT,
					  "data file '%s' has token %u but the model's vocabulary is "
					  "%d: use a model whose vocab covers the tokenizer's %u tokens",
					  file->path, max, model_vocab, file->vocab);
	}
	if (windows > UINT32_MAX)
		return sl_err_set(err, SL_EINPUT, "data file '%s': more than 2^32 windows", file->path);
	loader->file = file;
	loader->batch = batch;
	loader->seq = seq;
	loader->windows = windows;
	loader->shuffle = shuffle;
	loader->seed = seed;
	if (shuffle) {
		loader->order = malloc((size_t)windows * sizeof(uint32_t));
		if (!loader->order)
			return sl_err_set(err, SL_ENOMEM, "cannot allocate the shuffle order");
		make_order(loader);
	}
	return 0;
}

void sl_data_loader_free(struct sl_data_loader *loader)
{
	free(loader->order);
	loader->order = NULL;
}

int sl_data_loader_seek(struct sl_data_loader *loader, long long epoch, long long next,
			struct sl_err *err)
{
	if (epoch < 0 || next < 0 || next > loader->windows)
		return sl_err_set(err, SL_EINPUT,
				  "data position epoch %lld window %lld is outside data file '%s' "
				  "(%lld windows)",
				  epoch, next, loader->file->path, loader->windows);
	loader->epoch = epoch;
	loader->next = next;
	if (loader->shuffle)
		make_order(loader);
	return 0;
}

void sl_data_loader_next(struct sl_data_loader *loader, int32_t *tokens, int32_t *targets)
{
	int T = loader->seq;
	for (int b = 0; b < loader->batch; b++) {
		if (loader->next >= loader->windows) {
			loader->epoch++;
			loader->next = 0;
			if (loader->shuffle)
				make_order(loader);
		}
		long long w = loader->shuffle ? loader->order[loader->next] : loader->next;
		loader->next++;
		long long start = w * T;
		for (int t = 0; t < T; t++) {
			tokens[b * T + t] = (int32_t)sl_token_file_get(loader->file, start + t);
			targets[b * T + t] = (int32_t)sl_token_file_get(loader->file, start + t + 1);
		}
	}
}
