/* GPU catalogue and zones: loading data/gpus.json and the zone list (see catalogue.h).
 * Invariants: names unique; indices stable (file order for GPUs, sorted names for zones). */
#include "cluster/catalogue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/limits.h"
#include "util/paths.h"

int sl_catalogue_gpu_index(const struct sl_catalogue *cat, const char *name)
{
	for (int i = 0; i < cat->gpu_count; i++)
		if (!strcmp(cat->gpus[i].name, name))
			return i;
	return -1;
}

int sl_catalogue_zone_index(const struct sl_catalogue *cat, const char *name)
{
	for (int i = 0; i < cat->zone_count; i++)
		if (!strcmp(cat->zones[i].name, name))
			return i;
	return -1;
}

int sl_catalogue_zone_region(const struct sl_catalogue *cat, int zone)
{
	if (zone < 0 || zone >= cat->zone_count)
		return -1;
	return cat->zones[zone].region;
}

static const char *join_names(char *buf, size_t size, int n, const char *(*name)(const struct sl_catalogue *, int),
			      const struct sl_catalogue *cat)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && used + 1 < size; i++) {
		int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name(cat, i));
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

static const char *gpu_name(const struct sl_catalogue *cat, int i) { return cat->gpus[i].name; }
static const char *zone_name(const struct sl_catalogue *cat, int i) { return cat->zones[i].name; }

const char *sl_catalogue_gpu_names(const struct sl_catalogue *cat, char *buf, size_t size)
{
	return join_names(buf, size, cat->gpu_count, gpu_name, cat);
}

const char *sl_catalogue_zone_names(const struct sl_catalogue *cat, char *buf, size_t size)
{
	return join_names(buf, size, cat->zone_count, zone_name, cat);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Region of a zone: the name without its last "-<suffix>" ("us-central1-a" -> "us-central1"). */
static void region_of(const char *zone, char *out, size_t size)
{
	snprintf(out, size, "%s", zone);
	char *dash = strrchr(out, '-');
	if (dash && dash != out)
		*dash = '\0';
}

static int load_gpus(const char *path, struct sl_catalogue *cat, struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "GPU catalogue", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	json_t *gpus = NULL;
	int rc = sl_json_get_array(root, "", "gpus", &gpus, err);
	if (!rc && (json_array_size(gpus) == 0 || json_array_size(gpus) > SL_MAX_GPU_TYPES))
		rc = sl_err_set(err, SL_EINPUT, "gpus: expected 1 to %d GPU types, got %zu",
				SL_MAX_GPU_TYPES, json_array_size(gpus));
	/* names of stand-ins, resolved once every type is known */
	const char *network_as[SL_MAX_GPU_TYPES] = {0}, *estimate_from[SL_MAX_GPU_TYPES] = {0};
	for (size_t i = 0; !rc && i < json_array_size(gpus); i++) {
		json_t *g = json_array_get(gpus, i);
		char ctx[64];
		snprintf(ctx, sizeof(ctx), "gpus[%zu]", i);
		struct sl_gpu_type *t = &cat->gpus[i];
		memset(t, 0, sizeof(*t));
		const char *name = NULL;
		long long per_node = 0;
		rc = sl_json_get_string(g, ctx, "name", &name, err);
		if (!rc && (strlen(name) == 0 || strlen(name) >= SL_GPU_NAME_MAX))
			rc = sl_err_set(err, SL_EINPUT, "%s.name: must be 1 to %d characters", ctx,
					SL_GPU_NAME_MAX - 1);
		if (!rc) {
			snprintf(t->name, sizeof(t->name), "%s", name);
			for (size_t k = 0; k < i; k++)
				if (!strcmp(cat->gpus[k].name, name))
					rc = sl_err_set(err, SL_EINPUT, "%s.name: '%s' is listed twice",
							ctx, name);
		}
		if (!rc) rc = sl_json_get_number(g, ctx, "memory_bytes", &t->memory_bytes, err);
		if (!rc) rc = sl_json_get_int(g, ctx, "gpus_per_node", &per_node, err);
		if (!rc) rc = sl_json_get_number(g, ctx, "usd_per_hour", &t->usd_per_hour, err);
		if (!rc) rc = sl_json_opt_number(g, ctx, "peak_fp32_flops", &t->peak_fp32_flops, err);
		if (!rc) rc = sl_json_opt_number(g, ctx, "peak_tensor_flops", &t->peak_tensor_flops, err);
		if (!rc) rc = sl_json_opt_number(g, ctx, "memory_bandwidth_bps", &t->memory_bandwidth_bps, err);
		if (!rc) rc = sl_json_opt_number(g, ctx, "runtime_overhead_bytes", &t->runtime_overhead_bytes, err);
		if (!rc) rc = sl_json_opt_number(g, ctx, "nccl_buffer_bytes", &t->nccl_buffer_bytes, err);
		if (!rc && (t->memory_bytes <= 0 || t->usd_per_hour < 0 || per_node < 1 || per_node > 64 ||
			    t->peak_fp32_flops < 0 || t->peak_tensor_flops < 0 ||
			    t->memory_bandwidth_bps < 0 || t->runtime_overhead_bytes < 0 ||
			    t->nccl_buffer_bytes < 0))
			rc = sl_err_set(err, SL_EINPUT,
					"%s: memory_bytes must be positive, gpus_per_node 1 to 64, and "
					"prices, FLOP/s, bandwidths and overheads not negative", ctx);
		/* upper bounds (and a floor for memory) keep sums and products over a plan finite */
		if (!rc && (t->memory_bytes < (1 << 20) || t->memory_bytes > SL_MAX_MEMORY_BYTES ||
			    t->usd_per_hour > SL_MAX_GPU_USD_PER_HOUR ||
			    t->peak_fp32_flops > SL_MAX_GPU_FLOPS ||
			    t->peak_tensor_flops > SL_MAX_GPU_FLOPS ||
			    t->memory_bandwidth_bps > SL_MAX_BANDWIDTH_BPS ||
			    t->runtime_overhead_bytes > t->memory_bytes ||
			    t->nccl_buffer_bytes > t->memory_bytes))
			rc = sl_err_set(err, SL_EINPUT,
					"%s: out of range: memory_bytes 1 MiB to 1 PiB, usd_per_hour at "
					"most %g, FLOP/s at most %g, memory_bandwidth_bps at most %g, "
					"overheads at most memory_bytes", ctx, SL_MAX_GPU_USD_PER_HOUR,
					SL_MAX_GPU_FLOPS, SL_MAX_BANDWIDTH_BPS);
		t->gpus_per_node = (int)per_node;
		json_t *v = json_object_get(g, "network_as");
		if (!rc && v && !json_is_string(v))
			rc = sl_err_set(err, SL_EINPUT, "%s.network_as: expected a GPU name", ctx);
		network_as[i] = v ? json_string_value(v) : NULL;
		v = json_object_get(g, "estimate_from");
		if (!rc && v && !json_is_string(v))
			rc = sl_err_set(err, SL_EINPUT, "%s.estimate_from: expected a GPU name", ctx);
		estimate_from[i] = v ? json_string_value(v) : NULL;
		cat->gpu_count = (int)i + 1;
	}
	for (int i = 0; !rc && i < cat->gpu_count; i++) {
		cat->gpus[i].network_as = i;
		cat->gpus[i].estimate_from = i;
		if (network_as[i]) {
			int k = sl_catalogue_gpu_index(cat, network_as[i]);
			if (k < 0)
				rc = sl_err_set(err, SL_EINPUT, "gpus[%d].network_as: unknown GPU '%s'", i,
						network_as[i]);
			cat->gpus[i].network_as = k;
		}
		if (!rc && estimate_from[i]) {
			int k = sl_catalogue_gpu_index(cat, estimate_from[i]);
			if (k < 0)
				rc = sl_err_set(err, SL_EINPUT, "gpus[%d].estimate_from: unknown GPU '%s'",
						i, estimate_from[i]);
			cat->gpus[i].estimate_from = k;
		}
	}
	json_decref(root);
	if (rc)
		sl_err_prefix(err, "GPU catalogue '%s'", path);
	return rc;
}

static int load_zones(const char *path, struct sl_catalogue *cat, struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "egress prices", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc = 0;
	size_t n = json_is_object(root) ? json_object_size(root) : 0;
	if (n == 0 || n > SL_MAX_ZONES)
		rc = sl_err_set(err, SL_EINPUT, "egress prices '%s': expected an object of 1 to %d zones",
				path, SL_MAX_ZONES);
	const char *names[SL_MAX_ZONES];
	size_t k = 0;
	const char *key;
	json_t *value;
	if (!rc)
		json_object_foreach(root, key, value)
		{
			if (strlen(key) == 0 || strlen(key) >= SL_ZONE_NAME_MAX) {
				rc = sl_err_set(err, SL_EINPUT, "egress prices '%s': zone name '%s' too long",
						path, key);
				break;
			}
			names[k++] = key;
		}
	if (!rc) {
		qsort(names, k, sizeof(names[0]), cmp_str);
		cat->zone_count = (int)k;
		cat->region_count = 0;
		for (size_t i = 0; i < k; i++) {
			snprintf(cat->zones[i].name, sizeof(cat->zones[i].name), "%s", names[i]);
			char region[SL_ZONE_NAME_MAX];
			region_of(names[i], region, sizeof(region));
			int r = -1;
			for (int j = 0; j < cat->region_count; j++)
				if (!strcmp(cat->regions[j], region))
					r = j;
			if (r < 0) {
				r = cat->region_count++;
				memcpy(cat->regions[r], region, sizeof(region));
			}
			cat->zones[i].region = r;
		}
	}
	json_decref(root);
	return rc;
}

int sl_catalogue_load(const char *data_dir, struct sl_catalogue *out, struct sl_err *err)
{
	if (!data_dir)
		data_dir = sl_data_dir();
	memset(out, 0, sizeof(*out));
	char path[4096];
	snprintf(path, sizeof(path), "%s/gpus.json", data_dir);
	int rc = load_gpus(path, out, err);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/network/egress_usd_per_gb.json", data_dir);
	return load_zones(path, out, err);
}
