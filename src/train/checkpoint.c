/* Checkpoints (format, atomicity and validation order in checkpoint.h). */
#include "train/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/crc32.h"
#include "util/atomic_file.h"
#include "util/json.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/test_faults.h"

#define MAGIC "SLCKPT\0\0"
#define END_MAGIC "SLCKEND\0"
#define VERSION 1
#define HEADER_BYTES 24
#define TRAILER_BYTES 16
#define DATA_ALIGN 64

void sl_checkpoint_path(char *buf, size_t size, const char *dir, long long step)
{
	snprintf(buf, size, "%s/step-%08lld.ckpt", dir, step);
}

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int mkdir_p(const char *dir, struct sl_err *err)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST)
			return sl_err_set(err, SL_EIO, "cannot create directory '%s': %s", path,
					  strerror(errno));
		*p = '/';
	}
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return sl_err_set(err, SL_EIO, "cannot create directory '%s': %s", path,
				  strerror(errno));
	return 0;
}

static json_t *model_json(const struct sl_model_config *m)
{
	return json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i}", "name", m->name, "layers",
			 m->num_blocks, "hidden", m->hidden, "heads", m->heads, "ffn_hidden",
			 m->ffn_hidden, "seq_len", m->seq_len, "vocab", m->vocab);
}

/* Metadata for gpt's tensors; *data_bytes receives the size of the data section. */
static json_t *build_metadata(const struct sl_gpt *gpt, const struct sl_checkpoint_state *st,
			      size_t *data_bytes)
{
	json_t *root = json_object();
	json_object_set_new(root, "schema", json_string("sailor.checkpoint/1"));
	json_object_set_new(root, "step", json_integer(st->step));
	json_object_set_new(root, "model", model_json(&gpt->model));
	json_object_set_new(root, "data",
			    json_pack("{s:s, s:I, s:i, s:I, s:I}", "path", st->data_path, "tokens",
				      (json_int_t)st->data_tokens, "seq_len", st->data_seq, "epoch",
				      (json_int_t)st->data_epoch, "next_window",
				      (json_int_t)st->data_next));
	json_object_set_new(root, "rng", json_pack("{s:I}", "seed", (json_int_t)st->seed));
	json_object_set(root, "train", st->train ? st->train : json_null());
	json_t *tensors = json_object();
	size_t offset = 0;
	for (int i = 0; i < gpt->param_count; i++) {
		const struct sl_param *p = gpt->params[i];
		json_t *shape = p->ndim == 2 ? json_pack("[I,I]", (json_int_t)p->full_shape[0],
							 (json_int_t)p->full_shape[1])
					     : json_pack("[I]", (json_int_t)p->full_shape[0]);
		json_object_set_new(tensors, p->name,
				    json_pack("{s:o, s:I}", "shape", shape, "offset",
					      (json_int_t)offset));
		offset += 3 * (size_t)p->numel * sizeof(float);
	}
	json_object_set_new(root, "tensors", tensors);
	*data_bytes = offset;
	return root;
}

/* Writes len bytes and folds them into the running CRC. */
static int write_crc(FILE *f, const void *data, size_t len, uint32_t *crc)
{
	*crc = sl_crc32(*crc, data, len);
	return fwrite(data, 1, len, f) == len;
}

/* The step of a checkpoint's file name, which must be exactly what sl_checkpoint_path writes
 * ("step-%08lld.ckpt"): "step-5.ckpt" or "step-+0000005.ckpt" would name step 5 a second time,
 * and a 20-digit step would overflow. */
static int step_of_name(const char *name, long long *step)
{
	if (strncmp(name, "step-", 5))
		return 0;
	size_t digits = strspn(name + 5, "0123456789");
	if (digits < 8 || digits > 18 || strcmp(name + 5 + digits, ".ckpt"))
		return 0;
	long long s = strtoll(name + 5, NULL, 10);
	char canonical[64];
	snprintf(canonical, sizeof(canonical), "step-%08lld.ckpt", s);
	if (strcmp(canonical, name))
		return 0;
	*step = s;
	return 1;
}

static int cmp_desc(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? 1 : (x > y ? -1 : 0);
}

int sl_checkpoint_list(const char *dir, long long **steps, int *count, struct sl_err *err)
{
	*steps = NULL;
	*count = 0;
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return sl_err_set(err, SL_EIO, "checkpoint directory '%s': %s", dir, strerror(errno));
	}
	int cap = 0;
	struct dirent *ent;
	int rc = 0;
	while ((ent = readdir(d))) {
		long long s;
		if (!step_of_name(ent->d_name, &s))
			continue;
		if (*count == cap) {
			cap = cap ? 2 * cap : 16;
			long long *grown = realloc(*steps, (size_t)cap * sizeof(long long));
			if (!grown) {
				rc = sl_err_set(err, SL_ENOMEM, "out of memory");
				break;
			}
			*steps = grown;
		}
		(*steps)[(*count)++] = s;
	}
	closedir(d);
	if (rc) {
		free(*steps);
		*steps = NULL;
		*count = 0;
		return rc;
	}
	if (*count > 1) /* none found leaves *steps NULL, which qsort may not be given */
		qsort(*steps, (size_t)*count, sizeof(long long), cmp_desc);
	return 0;
}

/* Removes temporary files a crashed writer left behind: ".step-N.ckpt.tmp-XXXXXX" (see
 * util/atomic_file.h) and ".step-N.ckpt.tmp" from older versions. */
static void remove_stale_temps(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *ent;
	while ((ent = readdir(d))) {
		size_t n = strlen(ent->d_name);
		if (strncmp(ent->d_name, ".step-", 6) || n < 10 || !strstr(ent->d_name, ".ckpt.tmp"))
			continue;
		char path[4400];
		snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
		unlink(path);
	}
	closedir(d);
}

static void prune(const char *dir, int keep, long long just_written)
{
	remove_stale_temps(dir);
	long long *steps;
	int count;
	if (sl_checkpoint_list(dir, &steps, &count, NULL))
		return;
	int kept = 0;
	for (int i = 0; i < count; i++) {
		if (steps[i] == just_written || kept < keep - 1) {
			kept += steps[i] != just_written;
			continue;
		}
		char path[4200];
		sl_checkpoint_path(path, sizeof(path), dir, steps[i]);
		if (unlink(path) != 0)
			sl_log_warn("cannot remove old checkpoint '%s': %s", path, strerror(errno));
	}
	free(steps);
}

int sl_checkpoint_save(const char *dir, const struct sl_gpt *gpt, const struct sl_checkpoint_state *st,
		       int keep, char *path_out, size_t path_size, struct sl_err *err)
{
	if (gpt->tp > 1)
		return sl_err_set(err, SL_EINPUT,
				  "cannot save a checkpoint from tensor-parallel shard %d of %d: "
				  "gather whole tensors first",
				  gpt->tp_rank, gpt->tp);
	int rc = mkdir_p(dir, err);
	if (rc)
		return rc;
	size_t data_bytes;
	json_t *meta = build_metadata(gpt, st, &data_bytes);
	char *text = json_dumps(meta, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	json_decref(meta);
	if (!text)
		return sl_err_set(err, SL_ENOMEM, "cannot build checkpoint metadata");
	size_t n = strlen(text);
	size_t meta_bytes = (HEADER_BYTES + n + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN - HEADER_BYTES;

	char final_path[4200];
	sl_checkpoint_path(final_path, sizeof(final_path), dir, st->step);
	struct sl_atomic_file af;
	if ((rc = sl_atomic_open(&af, final_path, "checkpoint", err))) {
		free(text);
		return rc;
	}
	FILE *f = af.f;
	setvbuf(f, NULL, _IOFBF, 1 << 22);
	uint32_t crc = 0;
	unsigned char header[HEADER_BYTES] = {0};
	memcpy(header, MAGIC, 8);
	put_u32(header + 8, VERSION);
	put_u32(header + 16, (uint32_t)meta_bytes);
	put_u32(header + 20, (uint32_t)((uint64_t)meta_bytes >> 32));
	int ok = write_crc(f, header, sizeof(header), &crc) && write_crc(f, text, n, &crc);
	free(text);
	for (size_t i = n; i < meta_bytes && ok; i++)
		ok = write_crc(f, " ", 1, &crc);
	for (int i = 0; i < gpt->param_count && ok; i++) {
		const struct sl_param *p = gpt->params[i];
		if (i == gpt->param_count / 2)
			sl_test_fault_persist_midway(st->step);
		size_t bytes = (size_t)p->numel * sizeof(float);
		ok = write_crc(f, p->value, bytes, &crc) && write_crc(f, p->exp_avg, bytes, &crc) &&
		     write_crc(f, p->exp_avg_sq, bytes, &crc);
	}
	unsigned char trailer[TRAILER_BYTES] = {0};
	put_u32(trailer, crc);
	memcpy(trailer + 8, END_MAGIC, 8);
	ok = ok && fwrite(trailer, 1, sizeof(trailer), f) == sizeof(trailer);
	if (!ok) {
		int e = errno;
		sl_atomic_abort(&af);
		return sl_err_set(err, SL_EIO, "cannot write checkpoint '%s': %s", final_path,
				  strerror(e));
	}
	if ((rc = sl_atomic_commit(&af, err)))
		return rc;
	if (path_out)
		snprintf(path_out, path_size, "%s", final_path);
	prune(dir, keep < 1 ? 1 : keep, st->step);
	(void)data_bytes;
	return 0;
}

/* Checks the model hyper-parameters recorded in the file against gpt's. */
static int check_model(const char *path, const json_t *m, const struct sl_model_config *model,
		       struct sl_err *err)
{
	static const char *keys[] = {"layers", "hidden", "heads", "ffn_hidden", "seq_len", "vocab"};
	int want[] = {model->num_blocks, model->hidden, model->heads, model->ffn_hidden,
		      model->seq_len, model->vocab};
	for (int i = 0; i < 6; i++) {
		long long v;
		int rc = sl_json_get_int(m, "model", keys[i], &v, err);
		if (rc)
			return sl_err_prefix(err, "checkpoint '%s'", path);
		if (v != want[i])
			return sl_err_set(err, SL_EINPUT,
					  "checkpoint '%s': model %s is %lld there but %d in model "
					  "'%s': resume with the model it was trained with",
					  path, keys[i], v, want[i], model->name);
	}
	return 0;
}

/* Copies `count` floats of a whole tensor into this shard's array. */
static void copy_into(const struct sl_param *p, float *dst, const unsigned char *src)
{
	if (p->shard_dim < 0) {
		memcpy(dst, src, (size_t)p->numel * sizeof(float));
		return;
	}
	for (long long i = 0; i < p->numel; i++)
		memcpy(&dst[i], src + (size_t)sl_param_full_index(p, i) * sizeof(float),
		       sizeof(float));
}

/* Loads one file; *other_model is set when it is valid but of another model. */
/* Maps the whole file read-only; it must hold at least a header and the end marker. */
static int map_file(const char *path, unsigned char **map, size_t *size, struct sl_err *err)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "checkpoint '%s': cannot open: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		close(fd);
		return sl_err_set(err, SL_EIO, "checkpoint '%s': %s", path, strerror(errno));
	}
	*size = (size_t)sb.st_size;
	if (*size < HEADER_BYTES + TRAILER_BYTES) {
		close(fd);
		return sl_err_set(err, SL_EINPUT,
				  "checkpoint '%s': truncated: %zu bytes, not even a header and "
				  "end marker",
				  path, *size);
	}
	*map = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (*map == MAP_FAILED)
		return sl_err_set(err, SL_EIO, "checkpoint '%s': cannot map: %s", path,
				  strerror(errno));
	return 0;
}

/* The frame around the contents: magic, version, end marker, and the CRC of everything before
 * it. *meta_bytes: the metadata's length, within the file. */
static int check_frame(const char *path, const unsigned char *map, size_t size,
		       uint64_t *meta_bytes, struct sl_err *err)
{
	*meta_bytes = (uint64_t)get_u32(map + 16) | (uint64_t)get_u32(map + 20) << 32;
	if (memcmp(map, MAGIC, 8) != 0)
		return sl_err_set(err, SL_EINPUT, "checkpoint '%s': bad magic: not a sailor "
				  "checkpoint", path);
	if (get_u32(map + 8) != VERSION)
		return sl_err_set(err, SL_EINPUT, "checkpoint '%s': format version %u is not "
				  "supported", path, get_u32(map + 8));
	if (memcmp(map + size - 8, END_MAGIC, 8) != 0 ||
	    *meta_bytes > size - HEADER_BYTES - TRAILER_BYTES)
		return sl_err_set(err, SL_EINPUT,
				  "checkpoint '%s': truncated: no end marker after %zu bytes (the write "
				  "was interrupted or the file was cut)",
				  path, size);
	uint32_t stored = get_u32(map + size - TRAILER_BYTES);
	uint32_t computed = sl_crc32(0, map, size - TRAILER_BYTES);
	if (stored != computed)
		return sl_err_set(err, SL_EINPUT,
				  "checkpoint '%s': checksum mismatch (stored %08x, computed %08x): the "
				  "file is corrupt",
				  path, stored, computed);
	return 0;
}

/* The metadata's step, data position and seed into *st (path and counters checked in range),
 * and its tensor table. st->train is left to the caller. */
static int read_state(const char *path, const json_t *meta, struct sl_checkpoint_state *st,
		      json_t **tensors, json_t **model, struct sl_err *err)
{
	json_t *data, *rng;
	long long step, tokens, seq, epoch, next, seed;
	const char *data_path;
	int rc = sl_json_get_int(meta, "", "step", &step, err);
	if (!rc) rc = sl_json_get_object(meta, "", "model", model, err);
	if (!rc) rc = sl_json_get_object(meta, "", "data", &data, err);
	if (!rc) rc = sl_json_get_object(meta, "", "rng", &rng, err);
	if (!rc) rc = sl_json_get_object(meta, "", "tensors", tensors, err);
	if (!rc) rc = sl_json_get_string(data, "data", "path", &data_path, err);
	if (!rc) rc = sl_json_get_int(data, "data", "tokens", &tokens, err);
	if (!rc) rc = sl_json_get_int(data, "data", "seq_len", &seq, err);
	if (!rc) rc = sl_json_get_int(data, "data", "epoch", &epoch, err);
	if (!rc) rc = sl_json_get_int(data, "data", "next_window", &next, err);
	if (!rc) rc = sl_json_get_int(rng, "rng", "seed", &seed, err);
	if (rc) {
		sl_err_prefix(err, "checkpoint '%s'", path);
		return rc;
	}
	/* the position counters are added to and multiplied on resume: keep them in range */
	const char *bad = step < 0 || step > SL_MAX_STEPS ? "step"
			  : seq < 1 || seq > SL_MAX_SEQ_LEN ? "data.seq_len"
			  : epoch < 0 || epoch > SL_MAX_STEPS ? "data.epoch"
			  : next < 0 || next > UINT32_MAX ? "data.next_window"
			  : tokens < 0 || tokens > (1LL << 50) ? "data.tokens" : NULL;
	if (bad)
		return sl_err_set(err, SL_EINPUT, "checkpoint '%s': %s is out of range: the file is "
				  "damaged", path, bad);
	st->step = step;
	st->data_epoch = epoch;
	st->data_next = next;
	st->data_seq = (int)seq;
	st->data_tokens = tokens;
	snprintf(st->data_path, sizeof(st->data_path), "%s", data_path);
	st->seed = (uint64_t)seed;
	return 0;
}

/* Byte offset of parameter p's three arrays in the data section, after checking that the table
 * has it with the model's shape and that it lies inside data_size bytes; -1 on error. */
static long long tensor_offset(const char *path, const json_t *tensors, const struct sl_param *p,
			       size_t data_size, struct sl_err *err)
{
	json_t *t = json_object_get(tensors, p->name);
	json_t *shape = json_object_get(t, "shape");
	long long offset = -1;
	if (t && json_is_integer(json_object_get(t, "offset")))
		offset = json_integer_value(json_object_get(t, "offset"));
	long long full = p->full_shape[0] * p->full_shape[1];
	int ok = t && json_is_array(shape) && json_array_size(shape) == (size_t)p->ndim;
	for (int d = 0; ok && d < p->ndim; d++)
		ok = json_integer_value(json_array_get(shape, (size_t)d)) == p->full_shape[d];
	if (!t)
		sl_err_set(err, SL_EINPUT, "checkpoint '%s': no tensor '%s'", path, p->name);
	else if (!ok)
		sl_err_set(err, SL_EINPUT, "checkpoint '%s': tensor '%s' has another shape than the "
			   "model's", path, p->name);
	else if (offset < 0 || (size_t)offset + 3 * (size_t)full * sizeof(float) > data_size)
		sl_err_set(err, SL_EINPUT, "checkpoint '%s': tensor '%s' lies outside the file's "
			   "data", path, p->name);
	else
		return offset;
	return -1;
}

static int load_file(const char *path, struct sl_gpt *gpt, struct sl_checkpoint_state *st,
		     int *other_model, struct sl_err *err)
{
	*other_model = 0;
	unsigned char *map = NULL;
	size_t size = 0;
	int rc = map_file(path, &map, &size, err);
	if (rc)
		return rc;
	json_t *meta = NULL, *tensors = NULL, *model = NULL;
	uint64_t meta_bytes;
	if ((rc = check_frame(path, map, size, &meta_bytes, err)))
		goto out;
	json_error_t jerr;
	meta = json_loadb((const char *)map + HEADER_BYTES, (size_t)meta_bytes, JSON_REJECT_DUPLICATES,
			  &jerr);
	if (!meta) {
		rc = sl_err_set(err, SL_EINPUT, "checkpoint '%s': metadata: %s", path, jerr.text);
		goto out;
	}
	/* nothing reaches *st or the model until the whole file has been checked */
	struct sl_checkpoint_state read = {0};
	if ((rc = read_state(path, meta, &read, &tensors, &model, err)))
		goto out;
	if ((rc = check_model(path, model, &gpt->model, err))) {
		*other_model = 1;
		goto out;
	}
	size_t data_start = HEADER_BYTES + (size_t)meta_bytes;
	size_t data_size = size - TRAILER_BYTES - data_start;
	for (int i = 0; i < gpt->param_count; i++)
		if (tensor_offset(path, tensors, gpt->params[i], data_size, err) < 0) {
			rc = err ? err->code : SL_EINPUT;
			goto out;
		}
	for (int i = 0; i < gpt->param_count; i++) {
		struct sl_param *p = gpt->params[i];
		const unsigned char *src =
			map + data_start + tensor_offset(path, tensors, p, data_size, NULL);
		size_t array = (size_t)(p->full_shape[0] * p->full_shape[1]) * sizeof(float);
		copy_into(p, p->value, src);
		copy_into(p, p->exp_avg, src + array);
		copy_into(p, p->exp_avg_sq, src + 2 * array);
		memset(p->grad, 0, (size_t)p->numel * sizeof(float));
	}
	read.train = json_incref(json_object_get(meta, "train"));
	*st = read;
out:
	json_decref(meta);
	munmap(map, size);
	return rc;
}

int sl_checkpoint_load(const char *path, struct sl_gpt *gpt, struct sl_checkpoint_state *st,
		       struct sl_err *err)
{
	int other_model;
	return load_file(path, gpt, st, &other_model, err);
}

int sl_checkpoint_load_latest(const char *dir, struct sl_gpt *gpt, struct sl_checkpoint_state *st,
			      char *path_out, size_t path_size, struct sl_err *err)
{
	long long *steps;
	int count;
	int rc = sl_checkpoint_list(dir, &steps, &count, err);
	if (rc)
		return rc;
	if (count == 0) {
		free(steps);
		return sl_err_set(err, SL_ENOTFOUND,
				  "no checkpoint in '%s' to resume from (run without --resume to "
				  "start a new training)",
				  dir);
	}
	struct sl_err first = {0};
	for (int i = 0; i < count; i++) {
		char path[4200];
		sl_checkpoint_path(path, sizeof(path), dir, steps[i]);
		struct sl_err e = {0};
		int other_model;
		rc = load_file(path, gpt, st, &other_model, &e);
		if (!rc) {
			if (path_out)
				snprintf(path_out, path_size, "%s", path);
			free(steps);
			return 0;
		}
		/* a checkpoint of another model is not "damaged": stop rather than skip it */
		if (other_model) {
			free(steps);
			if (err)
				*err = e;
			return rc;
		}
		/* Set the damaged file aside so it no longer counts as the newest checkpoint
		 * (pruning would otherwise keep it and delete a good older one). */
		char aside[4300];
		snprintf(aside, sizeof(aside), "%s.damaged", path);
		int moved = rename(path, aside) == 0;
		sl_log_warn("%s%s%s%s", e.msg, moved ? "; moved aside to '" : "",
			    moved ? aside : "", moved ? "'" : "");
		if (i + 1 < count)
			sl_log_warn("trying the previous checkpoint");
		if (i == 0)
			first = e;
	}
	free(steps);
	if (err)
		*err = first;
	return first.code ? first.code : SL_EINPUT;
}

int sl_checkpoint_check_model_latest(const char *dir, const struct sl_model_config *model,
				     struct sl_err *err)
{
	long long *steps = NULL;
	int count = 0;
	if (sl_checkpoint_list(dir, &steps, &count, NULL) || count == 0) {
		free(steps);
		return 0; /* nothing to resume: the load says so */
	}
	int rc = 0;
	/* the newest whose frame is whole (the list is newest first): what a resume loads */
	for (int i = 0; i < count; i++) {
		char path[4200];
		sl_checkpoint_path(path, sizeof(path), dir, steps[i]);
		unsigned char *map = NULL;
		size_t size = 0;
		uint64_t meta_bytes = 0;
		if (map_file(path, &map, &size, NULL))
			continue;
		if (check_frame(path, map, size, &meta_bytes, NULL)) {
			munmap(map, size);
			continue;
		}
		json_t *meta = json_loadb((const char *)map + HEADER_BYTES, (size_t)meta_bytes,
					  JSON_REJECT_DUPLICATES, NULL);
		json_t *m = meta ? json_object_get(meta, "model") : NULL;
		if (m)
			rc = check_model(path, m, model, err);
		json_decref(meta);
		munmap(map, size);
		if (m)
			break;
	}
	free(steps);
	return rc;
}
