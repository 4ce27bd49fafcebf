/* Each rank's island state in and out of <dir>/islands/step-<S>/rank-<R>.bin
 * (island_checkpoint.h).
 * Layout (little-endian host order; read back by the same build on the same kind of host):
 *   "SLISLND1", u32 version 1, u32 rank, u64 signature, i64 step, u32 params, u32 fragments,
 *   per parameter: its name (64 bytes), i64 numel, then numel floats each of the inner value,
 *     exp_avg, exp_avg_sq, global weights, outer momentum;
 *   per fragment: i32 settled, i32 flush, i64 land step, i64 start order, i64 lane length, then
 *     (settled only) the lane's average;
 *   i64 the next start order; u32 CRC-32 of everything before it.
 * Invariant: a read never changes the rank's state; apply changes it only with a file whose
 * CRC, signature and sizes matched. */
#include "runtime/island_checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/crc32.h"
#include "train/gpt_layers.h"
#include "util/atomic_file.h"

#define MAGIC "SLISLND1"
#define VERSION 1u

static uint64_t fnv(uint64_t h, long long v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (uint64_t)((unsigned long long)v >> (8 * i)) & 0xff;
		h *= 1099511628211ull;
	}
	return h;
}

uint64_t sl_island_checkpoint_signature(const struct sl_role_table *table,
					const struct sl_plan_islands *isl, int rank,
					const struct sl_outer_sync *o)
{
	uint64_t h = 14695981039346656037ull;
	h = fnv(h, table->world_size);
	h = fnv(h, table->num_stages);
	h = fnv(h, table->num_pipelines);
	h = fnv(h, isl->count);
	for (int j = 0; j < isl->num_pipelines; j++)
		h = fnv(h, isl->island_of[j]);
	for (int i = 0; i < isl->count; i++)
		h = fnv(h, isl->inner_steps[i]);
	h = fnv(h, isl->fragments);
	h = fnv(h, isl->overlap_steps);
	const struct sl_role *me = &table->roles[rank];
	h = fnv(fnv(fnv(fnv(h, me->stage), me->pipeline), me->tp), me->tp_rank);
	for (int i = 0; i < o->count; i++)
		h = fnv(h, o->params[i]->numel);
	return h;
}

static void rank_path(char *out, size_t size, const char *dir, long long step, int rank)
{
	snprintf(out, size, "%s/islands/step-%08lld/rank-%d.bin", dir, step, rank);
}

static int write_all(FILE *f, const void *data, size_t size, uint32_t *crc)
{
	*crc = sl_crc32(*crc, data, size);
	return fwrite(data, 1, size, f) == size ? 0 : -1;
}

static int write_floats(FILE *f, const float *v, long long n, uint32_t *crc)
{
	if (v)
		return write_all(f, v, (size_t)n * sizeof(float), crc);
	static const float zero[256];
	for (long long at = 0; at < n; at += 256) {
		long long k = n - at < 256 ? n - at : 256;
		if (write_all(f, zero, (size_t)k * sizeof(float), crc))
			return -1;
	}
	return 0;
}

static int write_state(FILE *f, long long step, int rank, uint64_t signature,
		       const struct sl_outer_sync *o)
{
	uint32_t crc = 0, version = VERSION, urank = (uint32_t)rank;
	uint32_t count = (uint32_t)o->count, frags = (uint32_t)o->isl->fragments;
	int bad = write_all(f, MAGIC, 8, &crc) || write_all(f, &version, 4, &crc) ||
		  write_all(f, &urank, 4, &crc) || write_all(f, &signature, 8, &crc) ||
		  write_all(f, &step, 8, &crc) || write_all(f, &count, 4, &crc) ||
		  write_all(f, &frags, 4, &crc);
	for (int i = 0; !bad && i < o->count; i++) {
		const struct sl_param *p = o->params[i];
		char name[SL_PARAM_NAME_MAX] = {0};
		snprintf(name, sizeof(name), "%s", p->name);
		long long n = p->numel;
		bad = write_all(f, name, sizeof(name), &crc) || write_all(f, &n, 8, &crc) ||
		      write_floats(f, p->value, n, &crc) || write_floats(f, p->exp_avg, n, &crc) ||
		      write_floats(f, p->exp_avg_sq, n, &crc) ||
		      write_floats(f, o->global[i], n, &crc) ||
		      write_floats(f, o->momentum[i], n, &crc);
	}
	for (int f_ = 0; !bad && f_ < o->isl->fragments; f_++) {
		const struct sl_outer_fragment *fr = &o->frags[f_];
		int settled = fr->phase == SL_OUTER_SETTLED, flush = fr->flush;
		bad = write_all(f, &settled, 4, &crc) || write_all(f, &flush, 4, &crc) ||
		      write_all(f, &fr->land_step, 8, &crc) || write_all(f, &fr->fifo, 8, &crc) ||
		      write_all(f, &fr->lane_len, 8, &crc) ||
		      (settled && write_floats(f, fr->pending, fr->lane_len, &crc));
	}
	if (!bad)
		bad = write_all(f, &o->next_fifo, 8, &crc);
	uint32_t end = crc;
	return bad || fwrite(&end, 4, 1, f) != 1 ? -1 : 0;
}

/* Removes this rank's files of the steps older than the newest `keep` (and their folders once
 * empty); a failure to remove is not an error (the next save tries again). */
static void prune(const char *dir, int keep, int rank)
{
	char root[4200];
	snprintf(root, sizeof(root), "%s/islands", dir);
	DIR *d = opendir(root);
	if (!d)
		return;
	long long steps[256];
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 256) {
		long long s;
		if (sscanf(e->d_name, "step-%lld", &s) == 1)
			steps[n++] = s;
	}
	closedir(d);
	for (int i = 0; i < n; i++) {
		int newer = 0;
		for (int j = 0; j < n; j++)
			newer += steps[j] > steps[i];
		if (newer < keep)
			continue;
		char path[4300];
		rank_path(path, sizeof(path), dir, steps[i], rank);
		unlink(path);
		snprintf(path, sizeof(path), "%s/step-%08lld", root, steps[i]);
		rmdir(path);
	}
}

int sl_island_checkpoint_save(const char *dir, long long step, int keep, int rank,
			      uint64_t signature, const struct sl_outer_sync *o, struct sl_err *err)
{
	char path[4300];
	snprintf(path, sizeof(path), "%s/islands", dir);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/islands/step-%08lld", dir, step);
	if (mkdir(path, 0777) && errno != EEXIST)
		return sl_err_set(err, SL_EIO, "cannot create '%s': %s", path, strerror(errno));
	rank_path(path, sizeof(path), dir, step, rank);
	struct sl_atomic_file af;
	int rc = sl_atomic_open(&af, path, "island checkpoint", err);
	if (rc)
		return rc;
	if (write_state(af.f, step, rank, signature, o)) {
		sl_atomic_abort(&af);
		return sl_err_set(err, SL_EIO, "cannot write island checkpoint '%s'", path);
	}
	if ((rc = sl_atomic_commit(&af, err)))
		return rc;
	prune(dir, keep > 0 ? keep : 1, rank);
	return 0;
}

/* A bounds-checked reader over the file's bytes. */
struct reader {
	const unsigned char *p, *end;
};

static const void *take(struct reader *r, size_t n)
{
	if ((size_t)(r->end - r->p) < n)
		return NULL;
	const void *at = r->p;
	r->p += n;
	return at;
}

static int take_into(struct reader *r, void *out, size_t n)
{
	const void *at = take(r, n);
	if (!at)
		return -1;
	memcpy(out, at, n);
	return 0;
}

/* Walks the file against o's shapes; with apply, copies into o. 0 or a reason. */
static const char *walk(struct reader *r, long long step, int rank, uint64_t signature,
			struct sl_outer_sync *o, int apply)
{
	char magic[8];
	uint32_t version, urank, count, frags;
	uint64_t sig;
	long long at_step;
	if (take_into(r, magic, 8) || memcmp(magic, MAGIC, 8) || take_into(r, &version, 4) ||
	    version != VERSION)
		return "not an island checkpoint of this version";
	if (take_into(r, &urank, 4) || take_into(r, &sig, 8) || take_into(r, &at_step, 8) ||
	    take_into(r, &count, 4) || take_into(r, &frags, 4))
		return "truncated";
	if (urank != (uint32_t)rank || at_step != step)
		return "another rank's or step's file";
	if (sig != signature || count != (uint32_t)o->count ||
	    frags != (uint32_t)o->isl->fragments)
		return "written under another plan or island layout";
	for (int i = 0; i < o->count; i++) {
		struct sl_param *p = o->params[i];
		long long n;
		const char *name = take(r, SL_PARAM_NAME_MAX);
		if (!name || take_into(r, &n, 8) || strncmp(name, p->name, SL_PARAM_NAME_MAX) ||
		    n != p->numel)
			return "its tensors differ from this rank's";
		size_t bytes = (size_t)n * sizeof(float);
		float *dest[5] = {p->value, p->exp_avg, p->exp_avg_sq, o->global[i], o->momentum[i]};
		for (int k = 0; k < 5; k++) {
			const void *src = take(r, bytes);
			if (!src)
				return "truncated";
			if (apply && dest[k])
				memcpy(dest[k], src, bytes);
		}
	}
	for (int f = 0; f < o->isl->fragments; f++) {
		struct sl_outer_fragment *fr = &o->frags[f];
		int settled, flush;
		long long land, fifo, lane;
		if (take_into(r, &settled, 4) || take_into(r, &flush, 4) || take_into(r, &land, 8) ||
		    take_into(r, &fifo, 8) || take_into(r, &lane, 8) || lane != fr->lane_len)
			return "its fragments differ from this rank's";
		const void *avg = settled ? take(r, (size_t)lane * sizeof(float)) : NULL;
		if (settled && !avg)
			return "truncated";
		if (!apply)
			continue;
		fr->phase = settled ? SL_OUTER_SETTLED : SL_OUTER_IDLE;
		fr->skip = 0;
		fr->flush = flush;
		fr->land_step = land;
		fr->fifo = fifo;
		if (settled)
			memcpy(fr->pending, avg, (size_t)lane * sizeof(float));
	}
	long long next;
	if (take_into(r, &next, 8))
		return "truncated";
	if (apply)
		o->next_fifo = next;
	return NULL;
}

int sl_island_checkpoint_read(const char *dir, long long step, int rank, uint64_t signature,
			      const struct sl_outer_sync *o, struct sl_island_checkpoint_file *file,
			      struct sl_err *err)
{
	memset(file, 0, sizeof(*file));
	char path[4300];
	rank_path(path, sizeof(path), dir, step, rank);
	FILE *f = fopen(path, "rb");
	if (!f)
		return sl_err_set(err, SL_ENOTFOUND, "'%s': %s", path, strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) || st.st_size < 12 || !(file->data = malloc((size_t)st.st_size)) ||
	    fread(file->data, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		fclose(f);
		sl_island_checkpoint_file_free(file);
		return sl_err_set(err, SL_EINPUT, "'%s': cannot be read whole", path);
	}
	fclose(f);
	file->size = (size_t)st.st_size;
	uint32_t crc;
	memcpy(&crc, file->data + file->size - 4, 4);
	struct reader r = {file->data, file->data + file->size - 4};
	const char *why = sl_crc32(0, file->data, file->size - 4) != crc
				  ? "damaged (CRC mismatch)"
				  : walk(&r, step, rank, signature, (struct sl_outer_sync *)o, 0);
	if (!why && r.p != r.end)
		why = "longer than its contents";
	if (why) {
		sl_island_checkpoint_file_free(file);
		return sl_err_set(err, SL_EINPUT, "'%s': %s", path, why);
	}
	file->step = step;
	file->rank = rank;
	file->signature = signature;
	return 0;
}

int sl_island_checkpoint_apply(const struct sl_island_checkpoint_file *file,
			       struct sl_outer_sync *o, struct sl_err *err)
{
	for (int f = 0; f < o->isl->fragments; f++)
		if (!o->frags[f].pending &&
		    !(o->frags[f].pending = sl_alloc_floats((size_t)o->frags[f].lane_len + 1)))
			return sl_err_set(err, SL_ENOMEM, "out of memory");
	struct reader r = {file->data, file->data + file->size - 4};
	const char *why = walk(&r, file->step, file->rank, file->signature, o, 1);
	if (why) /* the read checked the same walk: only a file changed in between gets here */
		return sl_err_set(err, SL_EINPUT, "island checkpoint of rank %d: %s", file->rank, why);
	return 0;
}

void sl_island_checkpoint_file_free(struct sl_island_checkpoint_file *file)
{
	free(file->data);
	memset(file, 0, sizeof(*file));
}
