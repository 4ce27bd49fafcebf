/* safetensors files (huggingface/safetensors format): an 8-byte little-endian header length N,
 * N bytes of JSON {"<name>": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]},
 * ..., "__metadata__": {"key": "string", ...}}, then the tensors' bytes, offsets relative to the
 * end of the header. We write F32 tensors back to back in the order given, the header padded
 * with spaces to a multiple of 8 bytes; we read F32 tensors by name.
 *
 * Used to export weights (`sailor train --save-safetensors`), to start from given weights
 * (`--init-from`), and to hand tensors to the PyTorch oracle test. Host byte order must be
 * little-endian (x86-64, aarch64).
 *
 * Ownership: entries passed to the writer are borrowed; a reader maps the file read-only until
 * sl_safetensors_close().
 */
#ifndef SL_TRAIN_SAFETENSORS_H
#define SL_TRAIN_SAFETENSORS_H

#include <stddef.h>

#include <jansson.h>

#include "util/err.h"

#define SL_ST_MAX_DIMS 4

struct sl_st_entry {
	const char *name;
	int ndim;
	long long shape[SL_ST_MAX_DIMS];
	const float *data;
};

/* Writes the tensors atomically (temp file, fsync, rename). metadata: a JSON object of string
 * values, or NULL. */
int sl_safetensors_write(const char *path, const struct sl_st_entry *entries, int count,
			 const json_t *metadata, struct sl_err *err);

struct sl_safetensors {
	char path[4096];
	void *map;
	size_t map_bytes;
	json_t *header;          /* owned */
	const unsigned char *data;
	size_t data_bytes;
};

/* Opens and validates: header length, JSON, every tensor's dtype, shape and offsets. */
int sl_safetensors_open(struct sl_safetensors *st, const char *path, struct sl_err *err);
void sl_safetensors_close(struct sl_safetensors *st);
/* Copies F32 tensor `name` into dst after checking its shape equals shape[0..ndim). */
int sl_safetensors_read(const struct sl_safetensors *st, const char *name, int ndim,
			const long long *shape, float *dst, struct sl_err *err);

#endif
