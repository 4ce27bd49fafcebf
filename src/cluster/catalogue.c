/* GPU catalogue and zones: loading data/gpus.json, the --gpus overlay and the zone catalogue (see
 * catalogue.h). Invariants: names unique across shipped and overlay types; indices stable (file
 * order for GPUs, the overlay's after the shipped ones; sorted names for zones). */
#include "cluster/catalogue.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/zone_files.h"
#include "util/json.h"
#include "util/limits.h"
#include "util/nearest_names.h"
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
	/* sl_catalogue_load sorts the zones by name: a binary search, not a scan of the world's
	 * few hundred zones for each of the thousands of names the network fits give. A catalogue
	 * built otherwise may not be sorted, so a name the search misses is looked for in order. */
	int lo = 0, hi = cat->zone_count;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		int c = strcmp(cat->zones[mid].name, name);
		if (!c)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
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
	join_names(buf, size, cat->zone_count, zone_name, cat);
	/* hundreds of zones do not fit a message: say how many there are and where */
	size_t len = strlen(buf);
	if (len + 1 >= size && size > 64)
		snprintf(buf + size - 64, 64, ", ... (%d zones in all, data/zones/*.json)",
			 cat->zone_count);
	return buf;
}

/* Fields a sailor.gpus/1 file may hold: a typo ("usd_per_hr") would otherwise leave a default
 * in place without a word. */
static const char *const top_fields[] = {"schema", "note", "sources", "gpus"};
static const char *const gpu_fields[] = {"name", "memory_bytes", "gpus_per_node", "usd_per_hour",
					 "peak_fp32_flops", "peak_tensor_flops",
					 "memory_bandwidth_bps", "runtime_overhead_bytes",
					 "nccl_buffer_bytes", "network_as", "estimate_from", "cpu_quota",
					 "speed_spells", "note"};

/* The top level of a sailor.gpus/1 file: an object of known fields, the schema if given, and
 * 1 to (SL_MAX_GPU_TYPES - base) GPU types in "gpus" (*gpus). */
static int read_gpus_header(json_t *root, int base, json_t **gpus, struct sl_err *err)
{
	int rc = 0;
	if (!json_is_object(root))
		rc = sl_err_set(err, SL_EINPUT, "top level: expected {\"schema\": \"sailor.gpus/1\", "
				"\"gpus\": [...]}");
	if (!rc)
		rc = sl_json_check_fields(root, "", top_fields, sizeof(top_fields) / sizeof(top_fields[0]), err);
	json_t *schema = json_object_get(root, "schema");
	if (!rc && schema && (!json_is_string(schema) ||
			      strcmp(json_string_value(schema), SL_GPUS_SCHEMA)))
		rc = sl_err_set(err, SL_EINPUT, "schema: expected \"%s\"", SL_GPUS_SCHEMA);
	if (!rc)
		rc = sl_json_get_array(root, "", "gpus", gpus, err);
	if (!rc && (json_array_size(*gpus) == 0 ||
		    json_array_size(*gpus) > (size_t)(SL_MAX_GPU_TYPES - base)))
		rc = sl_err_set(err, SL_EINPUT, "gpus: expected 1 to %d GPU types%s, got %zu",
				SL_MAX_GPU_TYPES - base,
				base ? " (the catalogue holds at most " SL_STR(SL_MAX_GPU_TYPES)
				       " with the shipped ones)" : "",
				json_array_size(*gpus));
	return rc;
}

/* A GPU type's name: a valid profile file name, and no type of the catalogue before it
 * (cat->gpus[0 .. index)) has it. */
static int read_gpu_name(const json_t *g, const char *ctx, const struct sl_catalogue *cat,
			 int base, int index, struct sl_gpu_type *t, struct sl_err *err)
{
	const char *name = NULL;
	int rc = sl_json_get_string(g, ctx, "name", &name, err);
	if (!rc && (strlen(name) == 0 || strlen(name) >= SL_GPU_NAME_MAX ||
		    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				 "0123456789-_.") != strlen(name)))
		rc = sl_err_set(err, SL_EINPUT, "%s.name: '%s': must be 1 to %d of "
				"[A-Za-z0-9-_.] (it names profile files)", ctx, name,
				SL_GPU_NAME_MAX - 1);
	if (!rc) {
		snprintf(t->name, sizeof(t->name), "%s", name);
		for (int k = 0; k < index && !rc; k++)
			if (!strcmp(cat->gpus[k].name, name))
				rc = sl_err_set(err, SL_EINPUT, "%s.name: '%s' is %s; give it "
						"another name", ctx, name,
						k < base ? "a GPU type of the shipped catalogue"
							 : "listed twice");
	}
	return rc;
}

/* The testbed's device classes: "cpu_quota" and "speed_spells", each optional, each an object
 * of exactly its two numbers in range. */
static int read_gpu_cpu_class(const json_t *g, const char *ctx, struct sl_gpu_type *t,
			      struct sl_err *err)
{
	json_t *quota = json_object_get(g, "cpu_quota");
	if (quota) {
		json_t *c = json_object_get(quota, "cores"), *p = json_object_get(quota, "period_s");
		if (!json_is_object(quota) || json_object_size(quota) != 2 || !json_is_number(c) ||
		    !json_is_number(p) || !(json_number_value(c) >= 0.01) ||
		    !(json_number_value(c) <= 256) || !(json_number_value(p) >= 1e-3) ||
		    !(json_number_value(p) <= 1.0))
			return sl_err_set(err, SL_EINPUT, "%s.cpu_quota: expected {\"cores\": 0.01 "
					  "to 256, \"period_s\": 0.001 to 1}", ctx);
		t->cpu_quota_cores = json_number_value(c);
		t->cpu_quota_period_s = json_number_value(p);
	}
	json_t *spells = json_object_get(g, "speed_spells");
	if (spells) {
		json_t *f = json_object_get(spells, "fraction"),
		       *d = json_object_get(spells, "slowdown");
		if (!json_is_object(spells) || json_object_size(spells) != 2 ||
		    !json_is_number(f) || !json_is_number(d) ||
		    !(json_number_value(f) >= 0) || !(json_number_value(f) < 1) ||
		    !(json_number_value(d) >= 0) || !(json_number_value(d) <= 4))
			return sl_err_set(err, SL_EINPUT, "%s.speed_spells: expected {\"fraction\": "
					  "0 to below 1 (of the time), \"slowdown\": 0 to 4 (0.14: "
					  "14 %% slower)}", ctx);
		t->spell_fraction = json_number_value(f);
		t->spell_slowdown = json_number_value(d);
	}
	return 0;
}

/* The ranges of a GPU type's figures, once all are read: signs first, then the bounds that keep
 * sums and products over a plan finite. */
static int check_gpu_ranges(const char *ctx, const struct sl_gpu_type *t, long long per_node,
			    struct sl_err *err)
{
	if (t->memory_bytes <= 0)
		return sl_err_set(err, SL_EINPUT, "%s.memory_bytes: %g: must be positive", ctx,
				  t->memory_bytes);
	if (per_node < 1 || per_node > 64)
		return sl_err_set(err, SL_EINPUT, "%s.gpus_per_node: %lld: must be 1 to 64", ctx,
				  per_node);
	if (t->usd_per_hour < 0 || t->peak_fp32_flops < 0 || t->peak_tensor_flops < 0 ||
	    t->memory_bandwidth_bps < 0 || t->runtime_overhead_bytes < 0 ||
	    t->nccl_buffer_bytes < 0)
		return sl_err_set(err, SL_EINPUT,
				  "%s: memory_bytes must be positive, gpus_per_node 1 to 64, and "
				  "prices, FLOP/s, bandwidths and overheads not negative", ctx);
	/* upper bounds (and a floor for memory) keep sums and products over a plan finite */
	if (t->memory_bytes < (1 << 20) || t->memory_bytes > SL_MAX_MEMORY_BYTES ||
	    t->usd_per_hour > SL_MAX_GPU_USD_PER_HOUR ||
	    t->peak_fp32_flops > SL_MAX_GPU_FLOPS ||
	    t->peak_tensor_flops > SL_MAX_GPU_FLOPS ||
	    t->memory_bandwidth_bps > SL_MAX_BANDWIDTH_BPS ||
	    (t->peak_fp32_flops > 0 && t->peak_fp32_flops < SL_MIN_GPU_FLOPS) ||
	    (t->peak_tensor_flops > 0 && t->peak_tensor_flops < SL_MIN_GPU_FLOPS) ||
	    (t->memory_bandwidth_bps > 0 &&
	     t->memory_bandwidth_bps < SL_MIN_MEMORY_BANDWIDTH_BPS) ||
	    t->runtime_overhead_bytes > t->memory_bytes ||
	    t->nccl_buffer_bytes > t->memory_bytes)
		return sl_err_set(err, SL_EINPUT,
				  "%s: out of range: memory_bytes 1 MiB to 1 PiB, usd_per_hour at "
				  "most %g, FLOP/s 0 (not known) or %g to %g, memory_bandwidth_bps "
				  "0 (not known) or %g to %g, overheads at most memory_bytes", ctx,
				  SL_MAX_GPU_USD_PER_HOUR, SL_MIN_GPU_FLOPS, SL_MAX_GPU_FLOPS,
				  SL_MIN_MEMORY_BANDWIDTH_BPS, SL_MAX_BANDWIDTH_BPS);
	return 0;
}

/* One entry of "gpus" into cat->gpus[base + i]; the names of its stand-ins ("network_as",
 * "estimate_from", NULL when absent) into *network_as and *estimate_from, resolved by
 * resolve_stand_ins once every type is known. */
static int read_gpu_type(const json_t *g, struct sl_catalogue *cat, int base, size_t i,
			 const char **network_as, const char **estimate_from, struct sl_err *err)
{
	char ctx[64];
	snprintf(ctx, sizeof(ctx), "gpus[%zu]", i);
	struct sl_gpu_type *t = &cat->gpus[base + (int)i];
	memset(t, 0, sizeof(*t));
	long long per_node = 0;
	if (!json_is_object(g))
		return sl_err_set(err, SL_EINPUT, "%s: expected an object", ctx);
	int rc = sl_json_check_fields(g, ctx, gpu_fields, sizeof(gpu_fields) / sizeof(gpu_fields[0]), err);
	if (!rc) rc = read_gpu_name(g, ctx, cat, base, base + (int)i, t, err);
	if (!rc) rc = sl_json_get_number(g, ctx, "memory_bytes", &t->memory_bytes, err);
	if (!rc) rc = sl_json_get_int(g, ctx, "gpus_per_node", &per_node, err);
	if (!rc) rc = sl_json_get_number(g, ctx, "usd_per_hour", &t->usd_per_hour, err);
	if (!rc) rc = sl_json_opt_number(g, ctx, "peak_fp32_flops", &t->peak_fp32_flops, err);
	if (!rc) rc = sl_json_opt_number(g, ctx, "peak_tensor_flops", &t->peak_tensor_flops, err);
	if (!rc) rc = sl_json_opt_number(g, ctx, "memory_bandwidth_bps", &t->memory_bandwidth_bps, err);
	if (!rc) rc = sl_json_opt_number(g, ctx, "runtime_overhead_bytes", &t->runtime_overhead_bytes, err);
	if (!rc) rc = sl_json_opt_number(g, ctx, "nccl_buffer_bytes", &t->nccl_buffer_bytes, err);
	if (!rc) rc = read_gpu_cpu_class(g, ctx, t, err);
	if (!rc) rc = check_gpu_ranges(ctx, t, per_node, err);
	t->gpus_per_node = (int)per_node;
	json_t *v = json_object_get(g, "network_as");
	if (!rc && v && !json_is_string(v))
		rc = sl_err_set(err, SL_EINPUT, "%s.network_as: expected a GPU name", ctx);
	*network_as = v ? json_string_value(v) : NULL;
	v = json_object_get(g, "estimate_from");
	if (!rc && v && !json_is_string(v))
		rc = sl_err_set(err, SL_EINPUT, "%s.estimate_from: expected a GPU name", ctx);
	*estimate_from = v ? json_string_value(v) : NULL;
	return rc;
}

/* The stand-ins of the types just read (cat->gpus[base ...]): each type is its own unless it
 * names another, which must be in the catalogue by now. */
static int resolve_stand_ins(struct sl_catalogue *cat, int base, const char *const *network_as,
			     const char *const *estimate_from, struct sl_err *err)
{
	int rc = 0;
	for (int i = 0; !rc && i < cat->gpu_count - base; i++) {
		struct sl_gpu_type *t = &cat->gpus[base + i];
		t->network_as = base + i;
		t->estimate_from = base + i;
		if (network_as[i]) {
			int k = sl_catalogue_gpu_index(cat, network_as[i]);
			if (k < 0)
				rc = sl_err_set(err, SL_EINPUT, "gpus[%d].network_as: unknown GPU '%s'", i,
						network_as[i]);
			t->network_as = k;
		}
		if (!rc && estimate_from[i]) {
			int k = sl_catalogue_gpu_index(cat, estimate_from[i]);
			if (k < 0)
				rc = sl_err_set(err, SL_EINPUT, "gpus[%d].estimate_from: unknown GPU '%s'",
						i, estimate_from[i]);
			t->estimate_from = k;
		}
	}
	return rc;
}

/* Reads the GPU types of one sailor.gpus/1 file into cat->gpus[cat->gpu_count ...]: the shipped
 * catalogue first, then an overlay, whose names must differ from every type before them. */
static int load_gpus(const char *path, struct sl_catalogue *cat, struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "GPU catalogue", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int base = cat->gpu_count;
	json_t *gpus = NULL;
	int rc = read_gpus_header(root, base, &gpus, err);
	/* names of stand-ins, resolved once every type is known */
	const char *network_as[SL_MAX_GPU_TYPES] = {0}, *estimate_from[SL_MAX_GPU_TYPES] = {0};
	for (size_t i = 0; !rc && i < json_array_size(gpus); i++) {
		rc = read_gpu_type(json_array_get(gpus, i), cat, base, i, &network_as[i],
				   &estimate_from[i], err);
		if (!rc)
			cat->gpu_count = base + (int)i + 1;
	}
	if (!rc)
		rc = resolve_stand_ins(cat, base, network_as, estimate_from, err);
	json_decref(root);
	if (rc) {
		cat->gpu_count = base;
		sl_err_prefix(err, "%s '%s'", base ? "GPU types" : "GPU catalogue", path);
	}
	return rc;
}

/* The --gpus file of this process (see catalogue.h); "" = none. */
static char overlay_path[4096];

int sl_catalogue_set_overlay(const char *path, struct sl_err *err)
{
	if (!path || !path[0]) {
		overlay_path[0] = 0;
		return 0;
	}
	if (strlen(path) >= sizeof(overlay_path))
		return sl_err_set(err, SL_EINPUT, "--gpus: path too long");
	/* checked now, against the shipped catalogue, so a bad file fails before any work */
	char saved[sizeof(overlay_path)];
	memcpy(saved, overlay_path, sizeof(saved));
	snprintf(overlay_path, sizeof(overlay_path), "%s", path);
	struct sl_catalogue cat;
	int rc = sl_catalogue_load(NULL, &cat, err);
	if (rc)
		memcpy(overlay_path, saved, sizeof(saved));
	return rc;
}

const char *sl_catalogue_overlay(void)
{
	return overlay_path[0] ? overlay_path : NULL;
}

static int cmp_zone_entry(const void *a, const void *b)
{
	return strcmp((*(const struct sl_zone_files_zone *const *)a)->name,
		      (*(const struct sl_zone_files_zone *const *)b)->name);
}

/* The zones and regions of the zone files, zones sorted by name, and each region's GPU prices
 * mapped onto the GPU types loaded before. */
static int load_zones(const char *data_dir, struct sl_catalogue *cat, struct sl_err *err)
{
	struct sl_zone_files *zf = NULL;
	int rc = sl_zone_files_load(data_dir, &zf, err);
	if (rc)
		return rc;
	const struct sl_zone_files_zone **sorted = malloc(sizeof(*sorted) * (size_t)(zf->zone_count + 1));
	if (!sorted) {
		sl_zone_files_free(zf);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	for (int i = 0; i < zf->zone_count; i++)
		sorted[i] = &zf->zones[i];
	qsort(sorted, (size_t)zf->zone_count, sizeof(sorted[0]), cmp_zone_entry);
	int region_of[SL_MAX_REGIONS];
	for (int i = 0; i < zf->region_count; i++)
		region_of[i] = -1;
	cat->zone_count = zf->zone_count;
	cat->region_count = 0;
	for (int i = 0; i < zf->zone_count && !rc; i++) {
		snprintf(cat->zones[i].name, sizeof(cat->zones[i].name), "%s", sorted[i]->name);
		int fr = sorted[i]->region;
		if (region_of[fr] < 0) {
			const struct sl_zone_files_region *in = &zf->regions[fr];
			struct sl_region *r = &cat->regions[region_of[fr] = cat->region_count++];
			memset(r, 0, sizeof(*r));
			snprintf(r->name, sizeof(r->name), "%s", in->name);
			snprintf(r->provider, sizeof(r->provider), "%s", in->provider);
			snprintf(r->city, sizeof(r->city), "%s", in->city);
			r->continent = in->continent;
			r->lat_deg = in->lat_deg;
			r->lon_deg = in->lon_deg;
			for (int g = 0; g < SL_MAX_GPU_TYPES; g++)
				r->gpu_usd_per_hour[g] = r->gpu_spot_usd_per_hour[g] = -1;
			for (int p = 0; p < in->price_count && !rc; p++) {
				const struct sl_zone_files_price *pr = &in->prices[p];
				int g = sl_catalogue_gpu_index(cat, pr->gpu);
				char names[512];
				if (g < 0)
					rc = sl_err_set(err, SL_ENOTFOUND, "%s: %s: unknown GPU type (known: "
							"%s)", zf->files[pr->file], pr->ctx,
							sl_catalogue_gpu_names(cat, names, sizeof(names)));
				else {
					r->gpu_usd_per_hour[g] = pr->on_demand_usd_per_hour;
					r->gpu_spot_usd_per_hour[g] = pr->spot_usd_per_hour;
				}
			}
		}
		cat->zones[i].region = region_of[fr];
	}
	free(sorted);
	sl_zone_files_free(zf);
	if (!rc && cat->zone_count == 0)
		rc = sl_err_set(err, SL_EINPUT, "the zone catalogue has no zones: data/zones/*.json "
				"and the --zones files name none");
	return rc;
}

int sl_catalogue_load(const char *data_dir, struct sl_catalogue *out, struct sl_err *err)
{
	if (!data_dir)
		data_dir = sl_paths_data_dir();
	memset(out, 0, sizeof(*out));
	char path[4096];
	snprintf(path, sizeof(path), "%s/gpus.json", data_dir);
	int rc = load_gpus(path, out, err);
	if (!rc && overlay_path[0])
		rc = load_gpus(overlay_path, out, err);
	if (rc)
		return rc;
	return load_zones(data_dir, out, err);
}

static const char *zone_name_of(const void *cat, int i)
{
	return zone_name(cat, i);
}

const char *sl_catalogue_zone_suggest(const struct sl_catalogue *cat, const char *name, char *buf,
				      size_t size)
{
	return sl_nearest_names_list(name, zone_name_of, cat, cat->zone_count, 3, buf, size);
}

int sl_catalogue_gpu_price_listed(const struct sl_catalogue *cat, int gpu, int zone)
{
	if (zone < 0 || zone >= cat->zone_count || gpu < 0 || gpu >= cat->gpu_count)
		return 0;
	return cat->regions[cat->zones[zone].region].gpu_usd_per_hour[gpu] >= 0;
}

double sl_catalogue_gpu_usd_per_hour(const struct sl_catalogue *cat, int gpu, int zone)
{
	if (sl_catalogue_gpu_price_listed(cat, gpu, zone))
		return cat->regions[cat->zones[zone].region].gpu_usd_per_hour[gpu];
	return cat->gpus[gpu].usd_per_hour;
}

const struct sl_region *sl_catalogue_zone_region_info(const struct sl_catalogue *cat, int zone)
{
	return &cat->regions[cat->zones[zone].region];
}

double sl_catalogue_zone_distance_km(const struct sl_catalogue *cat, int za, int zb)
{
	const struct sl_region *a = sl_catalogue_zone_region_info(cat, za);
	const struct sl_region *b = sl_catalogue_zone_region_info(cat, zb);
	const double rad = M_PI / 180.0;
	double dlat = (b->lat_deg - a->lat_deg) * rad, dlon = (b->lon_deg - a->lon_deg) * rad;
	double h = sin(dlat / 2) * sin(dlat / 2) +
		   cos(a->lat_deg * rad) * cos(b->lat_deg * rad) * sin(dlon / 2) * sin(dlon / 2);
	return 2.0 * 6371.0 * asin(sqrt(fmin(1.0, h)));
}
