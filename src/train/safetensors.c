/* safetensors reading and writing (format in safetensors.h). Invariant of files we write:
 * tensor data is contiguous, in entry order, starting at byte 0 of the data section, and the
 * data section starts at a multiple of 8 bytes. */
#include "train/safetensors.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/atomic_file.h"

static long long numel_of(int ndim, const long long *shape)
{
	long long n = 1;
	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	return n;
}

int sl_safetensors_write(const char *path, const struct sl_st_entry *entries, int count,
			 const json_t *metadata, struct sl_err *err)
{
	json_t *header = json_object();
	if (metadata)
		json_object_set(header, "__metadata__", (json_t *)metadata);
	size_t offset = 0;
	for (int i = 0; i < count; i++) {
		const struct sl_st_entry *e = &entries[i];
		json_t *shape = json_array();
		for (int d = 0; d < e->ndim; d++)
			json_array_append_new(shape, json_integer(e->shape[d]));
		size_t bytes = (size_t)numel_of(e->ndim, e->shape) * sizeof(float);
		json_t *t = json_pack("{s:s, s:o, s:[I,I]}", "dtype", "F32", "shape", shape,
				      "data_offsets", (json_int_t)offset,
				      (json_int_t)(offset + bytes));
		if (!t || json_object_set_new(header, e->name, t)) {
			json_decref(header);
			return sl_err_set(err, SL_EINPUT, "safetensors '%s': cannot add tensor '%s'",
					  path, e->name);
		}
		offset += bytes;
	}
	char *text = json_dumps(header, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(header);
	if (!text)
		return sl_err_set(err, SL_ENOMEM, "safetensors '%s': cannot build the header", path);
	size_t n = strlen(text), padded = (n + 7) / 8 * 8;
	struct sl_atomic_file af;
	int rc = sl_atomic_open(&af, path, "safetensors", err);
	if (rc) {
		free(text);
		return rc;
	}
	FILE *f = af.f;
	unsigned char len_bytes[8];
	for (int i = 0; i < 8; i++)
		len_bytes[i] = (unsigned char)((uint64_t)padded >> (8 * i));
	int ok = fwrite(len_bytes, 1, 8, f) == 8 && fwrite(text, 1, n, f) == n;
	for (size_t i = n; i < padded && ok; i++)
		ok = fputc(' ', f) != EOF;
	free(text);
	for (int i = 0; i < count && ok; i++) {
		size_t elems = (size_t)numel_of(entries[i].ndim, entries[i].shape);
		ok = fwrite(entries[i].data, sizeof(float), elems, f) == elems;
	}
	if (!ok) {
		int e = errno;
		sl_atomic_abort(&af);
		return sl_err_set(err, SL_EIO, "cannot write safetensors '%s': %s", path, strerror(e));
	}
	return sl_atomic_commit(&af, err);
}

void sl_safetensors_close(struct sl_safetensors *st)
{
	if (st->map)
		munmap(st->map, st->map_bytes);
	json_decref(st->header);
	st->map = NULL;
	st->header = NULL;
}

static int check_entry(const struct sl_safetensors *st, const char *name, json_t *t,
		       struct sl_err *err)
{
	json_t *dtype = json_object_get(t, "dtype"), *shape = json_object_get(t, "shape");
	json_t *offs = json_object_get(t, "data_offsets");
	if (!json_is_string(dtype) || !json_is_array(shape) || !json_is_array(offs) ||
	    json_array_size(offs) != 2)
		return sl_err_set(err, SL_EINPUT,
				  "safetensors '%s': tensor '%s': needs dtype, shape and "
				  "data_offsets [begin, end]",
				  st->path, name);
	long long numel = 1;
	size_t i;
	json_t *d;
	json_array_foreach(shape, i, d)
	{
		/* a tensor larger than the file cannot be valid: bounding every product by the
		 * file's size keeps numel * 4 from overflowing */
		if (!json_is_integer(d) || json_integer_value(d) < 0 ||
		    (json_integer_value(d) > 0 &&
		     numel > (long long)(st->data_bytes / 4 + 1) / json_integer_value(d)))
			return sl_err_set(err, SL_EINPUT, "safetensors '%s': tensor '%s': bad shape "
					  "(dimensions must be whole numbers >= 0 whose product fits "
					  "in the file)", st->path, name);
		numel *= json_integer_value(d);
	}
	if (json_array_size(shape) > 8)
		return sl_err_set(err, SL_EINPUT, "safetensors '%s': tensor '%s': %zu dimensions, "
				  "at most 8", st->path, name, json_array_size(shape));
	json_int_t begin = json_integer_value(json_array_get(offs, 0));
	json_int_t end = json_integer_value(json_array_get(offs, 1));
	if (begin < 0 || end < begin || (size_t)end > st->data_bytes)
		return sl_err_set(err, SL_EINPUT,
				  "safetensors '%s': tensor '%s': data_offsets [%lld, %lld] outside "
				  "the %zu data bytes (truncated file?)",
				  st->path, name, (long long)begin, (long long)end, st->data_bytes);
	if (!strcmp(json_string_value(dtype), "F32") && (end - begin) != numel * 4)
		return sl_err_set(err, SL_EINPUT,
				  "safetensors '%s': tensor '%s': %lld bytes for %lld F32 elements",
				  st->path, name, (long long)(end - begin), numel);
	return 0;
}

int sl_safetensors_open(struct sl_safetensors *st, const char *path, struct sl_err *err)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->path, sizeof(st->path), "%s", path);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "safetensors '%s': cannot open: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0 || sb.st_size < 8) {
		close(fd);
		return sl_err_set(err, SL_EINPUT, "safetensors '%s': too short to hold a header",
				  path);
	}
	st->map_bytes = (size_t)sb.st_size;
	st->map = mmap(NULL, st->map_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (st->map == MAP_FAILED) {
		st->map = NULL;
		return sl_err_set(err, SL_EIO, "safetensors '%s': cannot map: %s", path,
				  strerror(errno));
	}
	const unsigned char *p = st->map;
	uint64_t n = 0;
	for (int i = 0; i < 8; i++)
		n |= (uint64_t)p[i] << (8 * i);
	if (n > st->map_bytes - 8) {
		sl_safetensors_close(st);
		return sl_err_set(err, SL_EINPUT,
				  "safetensors '%s': header of %llu bytes does not fit in the file",
				  path, (unsigned long long)n);
	}
	json_error_t jerr;
	st->header = json_loadb((const char *)p + 8, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(st->header)) {
		sl_safetensors_close(st);
		return sl_err_set(err, SL_EINPUT, "safetensors '%s': header is not a JSON object: %s",
				  path, jerr.text);
	}
	st->data = p + 8 + n;
	st->data_bytes = st->map_bytes - 8 - (size_t)n;
	const char *name;
	json_t *t;
	json_object_foreach(st->header, name, t) {
		if (!strcmp(name, "__metadata__"))
			continue;
		int rc = check_entry(st, name, t, err);
		if (rc) {
			sl_safetensors_close(st);
			return rc;
		}
	}
	return 0;
}

int sl_safetensors_read(const struct sl_safetensors *st, const char *name, int ndim,
			const long long *shape, float *dst, struct sl_err *err)
{
	json_t *t = json_object_get(st->header, name);
	if (!t)
		return sl_err_set(err, SL_ENOTFOUND, "safetensors '%s': no tensor '%s'", st->path,
				  name);
	if (strcmp(json_string_value(json_object_get(t, "dtype")), "F32"))
		return sl_err_set(err, SL_EINPUT, "safetensors '%s': tensor '%s' is %s, expected F32",
				  st->path, name, json_string_value(json_object_get(t, "dtype")));
	json_t *s = json_object_get(t, "shape");
	int same = json_array_size(s) == (size_t)ndim;
	for (int i = 0; same && i < ndim; i++)
		same = json_integer_value(json_array_get(s, (size_t)i)) == shape[i];
	if (!same) {
		char *got = json_dumps(s, JSON_COMPACT);
		char want[128] = "[";
		for (int i = 0; i < ndim; i++)
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%lld",
				 i ? "," : "", shape[i]);
		strncat(want, "]", sizeof(want) - strlen(want) - 1);
		int rc = sl_err_set(err, SL_EINPUT,
				    "safetensors '%s': tensor '%s' has shape %s, the model needs %s",
				    st->path, name, got ? got : "?", want);
		free(got);
		return rc;
	}
	json_int_t begin = json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 0));
	memcpy(dst, st->data + begin, (size_t)numel_of(ndim, shape) * sizeof(float));
	return 0;
}
