/* Zone files: reading, merging and checking sailor.zones/1 (see zone_files.h). Invariants after
 * a successful load: names unique per list; every zone's region exists; every region has a
 * provider, a continent, coordinates and the egress prices zone_files.h requires; prices and
 * bandwidths in range; pair and link names are known zones or regions. */
#include "cluster/zone_files.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/atomic_file.h"
#include "util/json.h"
#include "util/limits.h"
#include "util/nearest_names.h"
#include "util/paths.h"
#include "util/sorted_names.h"

static const char *const continents[] = {"africa", "asia", "europe", "middle-east",
					 "north-america", "oceania", "south-america"};
#define CONTINENTS ((int)(sizeof(continents) / sizeof(continents[0])))

static const char *const egress_keys[SL_EGRESS_KINDS] = {"zone", "continent", "world", "internet"};

/* Fields a file and its entries may hold: a typo would otherwise leave a price out unseen. */
static const char *const top_fields[] = {"schema", "provider", "note", "sources",
					 "egress_usd_per_gb", "regions", "zones", "egress_pairs",
					 "links"};
static const char *const region_fields[] = {"name", "provider", "continent", "city", "country",
					    "lat", "lon", "egress_usd_per_gb", "gpu_usd_per_hour",
					    "note"};
static const char *const zone_fields[] = {"name", "region", "note"};
static const char *const pair_fields[] = {"from", "to", "usd_per_gb", "note"};
static const char *const link_fields[] = {"from", "to", "bandwidth_bps", "latency_s", "note"};
static const char *const price_fields[] = {"on_demand", "spot"};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *sl_zone_files_continent(int index)
{
	return index >= 0 && index < CONTINENTS ? continents[index] : NULL;
}

/* ---- the overlays: a setting of the process ---- */

static struct overlay {
	json_t *root;
	char origin[SL_ZONE_FILES_ORIGIN_MAX];
} overlays[SL_ZONE_FILES_MAX];
static int overlay_count;

void sl_zone_files_clear_overlays(void)
{
	for (int i = 0; i < overlay_count; i++)
		json_decref(overlays[i].root);
	overlay_count = 0;
}

/* ---- one file ---- */

struct provider_defaults {
	char provider[SL_PROVIDER_NAME_MAX];
	double egress[SL_EGRESS_KINDS];
	int file[SL_EGRESS_KINDS];
};

struct merge {
	struct sl_zone_files *zf;
	struct provider_defaults defaults[SL_MAX_REGIONS];
	int default_count;
};

static int get_name(const json_t *obj, const char *ctx, const char *key, char *out, size_t size,
		    struct sl_err *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v)
		return sl_err_set(err, SL_EINPUT, "%s.%s: missing: give a name", ctx, key);
	const char *s = json_string_value(v);
	if (!s || !s[0] || strlen(s) >= size ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != strlen(s))
		return sl_err_set(err, SL_EINPUT, "%s.%s: expected a name of 1 to %zu letters, "
				  "digits, '-', '_' or '.'", ctx, key, size - 1);
	snprintf(out, size, "%s", s);
	return 0;
}

/* A number in [lo, hi]; absent: *out untouched, 0. what says the unit in messages. */
static int get_ranged(const json_t *obj, const char *ctx, const char *key, double lo, double hi,
		      const char *what, int required, double *out, struct sl_err *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v)
		return required ? sl_err_set(err, SL_EINPUT, "%s.%s: missing: give %s", ctx, key,
					     what)
				: 0;
	if (!json_is_number(v))
		return sl_err_set(err, SL_EINPUT, "%s.%s: not a number: give %s, %g to %g", ctx, key,
				  what, lo, hi);
	double x = json_number_value(v);
	if (!(x >= lo && x <= hi))
		return sl_err_set(err, SL_EINPUT, "%s.%s: %g is %s: give %s, %g to %g", ctx, key, x,
				  x < 0 && lo >= 0 ? "negative" : "out of range", what, lo, hi);
	*out = x;
	return 0;
}

static int egress_from(const json_t *obj, const char *ctx, double *egress, int *file, int fi,
		       struct sl_err *err)
{
	const json_t *e = json_object_get(obj, "egress_usd_per_gb");
	if (!e)
		return 0;
	char where[160];
	snprintf(where, sizeof(where), "%s%segress_usd_per_gb", ctx, ctx[0] ? "." : "");
	if (!json_is_object(e))
		return sl_err_set(err, SL_EINPUT, "%s: expected {\"zone\", \"continent\", \"world\", "
				  "\"internet\"}: USD per GB sent", where);
	int rc = sl_json_check_fields(e, where, egress_keys, SL_EGRESS_KINDS, err);
	for (int k = 0; !rc && k < SL_EGRESS_KINDS; k++) {
		double x = -1;
		rc = get_ranged(e, where, egress_keys[k], 0, SL_MAX_USD_PER_GB, "USD per GB sent", 0,
				&x, err);
		if (!rc && x >= 0) {
			egress[k] = x;
			file[k] = fi;
		}
	}
	return rc;
}

static int find_region(const struct sl_zone_files *zf, const char *name)
{
	for (int i = 0; i < zf->region_count; i++)
		if (!strcmp(zf->regions[i].name, name))
			return i;
	return -1;
}

static int find_zone(const struct sl_zone_files *zf, const char *name)
{
	for (int i = 0; i < zf->zone_count; i++)
		if (!strcmp(zf->zones[i].name, name))
			return i;
	return -1;
}

static int region_prices(struct sl_zone_files_region *r, const json_t *p, const char *ctx, int fi,
			 struct sl_err *err)
{
	char where[128];
	snprintf(where, sizeof(where), "%s.gpu_usd_per_hour", ctx);
	if (!json_is_object(p))
		return sl_err_set(err, SL_EINPUT, "%s: expected {\"<GPU type>\": {\"on_demand\": "
				  "USD per GPU-hour, \"spot\": USD per GPU-hour}}", where);
	const char *gpu;
	json_t *v;
	json_object_foreach((json_t *)p, gpu, v)
	{
		char at[160];
		snprintf(at, sizeof(at), "%s.%s", where, gpu);
		if (!json_is_object(v))
			return sl_err_set(err, SL_EINPUT, "%s: expected {\"on_demand\": USD per "
					  "GPU-hour, \"spot\": USD per GPU-hour (optional)}", at);
		if (strlen(gpu) >= SL_GPU_NAME_MAX)
			return sl_err_set(err, SL_EINPUT, "%s: not a GPU type name", at);
		int rc = sl_json_check_fields(v, at, price_fields, COUNT(price_fields), err);
		int slot = 0;
		while (slot < r->price_count && strcmp(r->prices[slot].gpu, gpu))
			slot++;
		if (!rc && slot == SL_MAX_GPU_TYPES)
			rc = sl_err_set(err, SL_EINPUT, "%s: more than %d GPU types", where,
					SL_MAX_GPU_TYPES);
		if (rc)
			return rc;
		struct sl_zone_files_price *price = &r->prices[slot];
		double od = -1, spot = -1;
		rc = get_ranged(v, at, "on_demand", 0, SL_MAX_GPU_USD_PER_HOUR, "USD per GPU-hour", 1,
				&od, err);
		if (!rc)
			rc = get_ranged(v, at, "spot", 0, SL_MAX_GPU_USD_PER_HOUR, "USD per GPU-hour",
					0, &spot, err);
		if (rc)
			return rc;
		snprintf(price->gpu, sizeof(price->gpu), "%s", gpu);
		price->on_demand_usd_per_hour = od;
		price->spot_usd_per_hour = spot;
		price->file = fi;
		snprintf(price->ctx, sizeof(price->ctx), "%s", at);
		if (slot == r->price_count)
			r->price_count++;
	}
	return 0;
}

static int read_region(struct merge *m, const json_t *e, const char *ctx, const char *provider,
		       int fi, int index, struct sl_err *err)
{
	struct sl_zone_files *zf = m->zf;
	char name[SL_ZONE_NAME_MAX];
	int rc = json_is_object(e) ? 0 : sl_err_set(err, SL_EINPUT, "%s: expected an object", ctx);
	if (!rc)
		rc = sl_json_check_fields(e, ctx, region_fields, COUNT(region_fields), err);
	if (!rc)
		rc = get_name(e, ctx, "name", name, sizeof(name), err);
	if (rc)
		return rc;
	int ri = find_region(zf, name);
	if (ri < 0) {
		if (zf->region_count == SL_MAX_REGIONS)
			return sl_err_set(err, SL_EINPUT, "%s: more than %d regions in all", ctx,
					  SL_MAX_REGIONS);
		ri = zf->region_count++;
		struct sl_zone_files_region *r = &zf->regions[ri];
		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", name);
		r->continent = -1;
		r->lat_deg = r->lon_deg = NAN;
		for (int k = 0; k < SL_EGRESS_KINDS; k++)
			r->egress_usd_per_gb[k] = -1;
	}
	struct sl_zone_files_region *r = &zf->regions[ri];
	r->file = fi;
	r->index = index;
	const json_t *p = json_object_get(e, "provider");
	if (p && !rc)
		rc = get_name(e, ctx, "provider", r->provider, sizeof(r->provider), err);
	else if (provider && !r->provider[0])
		snprintf(r->provider, sizeof(r->provider), "%s", provider);
	const json_t *c = json_object_get(e, "continent");
	if (c && !rc) {
		const char *cs = json_string_value(c);
		r->continent = -1;
		for (int k = 0; cs && k < CONTINENTS; k++)
			if (!strcmp(cs, continents[k]))
				r->continent = k;
		if (r->continent < 0)
			rc = sl_err_set(err, SL_EINPUT, "%s.continent: expected one of africa, asia, "
					"europe, middle-east, north-america, oceania, south-america", ctx);
	}
	const char *texts[] = {"city", "country"};
	char *dest[] = {r->city, r->country};
	for (int k = 0; k < 2 && !rc; k++) {
		const json_t *t = json_object_get(e, texts[k]);
		if (t && (!json_is_string(t) || strlen(json_string_value(t)) >= SL_CITY_NAME_MAX))
			rc = sl_err_set(err, SL_EINPUT, "%s.%s: expected text of at most %d bytes", ctx,
					texts[k], SL_CITY_NAME_MAX - 1);
		else if (t)
			snprintf(dest[k], SL_CITY_NAME_MAX, "%s", json_string_value(t));
	}
	if (!rc)
		rc = get_ranged(e, ctx, "lat", -90, 90, "degrees of latitude", 0, &r->lat_deg, err);
	if (!rc)
		rc = get_ranged(e, ctx, "lon", -180, 180, "degrees of longitude", 0, &r->lon_deg, err);
	if (!rc)
		rc = egress_from(e, ctx, r->egress_usd_per_gb, r->egress_file, fi, err);
	const json_t *prices = json_object_get(e, "gpu_usd_per_hour");
	if (!rc && prices)
		rc = region_prices(r, prices, ctx, fi, err);
	return rc;
}

static int read_pairs(struct sl_zone_files *zf, const json_t *root, const char *key, int fi,
		      struct sl_err *err)
{
	const json_t *a = json_object_get(root, key);
	if (!a)
		return 0;
	if (!json_is_array(a))
		return sl_err_set(err, SL_EINPUT, "%s: expected an array", key);
	int links = !strcmp(key, "links");
	for (size_t i = 0; i < json_array_size(a); i++) {
		const json_t *e = json_array_get(a, i);
		char ctx[64];
		snprintf(ctx, sizeof(ctx), "%s[%zu]", key, i);
		int *count = links ? &zf->link_count : &zf->pair_count;
		if (*count == (links ? SL_ZONE_FILES_LINKS_MAX : SL_ZONE_FILES_PAIRS_MAX))
			return sl_err_set(err, SL_EINPUT, "%s: more than %d in all", key,
					  links ? SL_ZONE_FILES_LINKS_MAX : SL_ZONE_FILES_PAIRS_MAX);
		struct sl_zone_files_pair *pr = &(links ? zf->links : zf->pairs)[*count];
		memset(pr, 0, sizeof(*pr));
		pr->file = fi;
		pr->index = (int)i;
		int rc = json_is_object(e) ? 0 : sl_err_set(err, SL_EINPUT, "%s: expected an object",
							   ctx);
		if (!rc)
			rc = links ? sl_json_check_fields(e, ctx, link_fields, COUNT(link_fields), err)
				   : sl_json_check_fields(e, ctx, pair_fields, COUNT(pair_fields), err);
		if (!rc)
			rc = get_name(e, ctx, "from", pr->from, sizeof(pr->from), err);
		if (!rc)
			rc = get_name(e, ctx, "to", pr->to, sizeof(pr->to), err);
		if (!rc && links) {
			/* bandwidth above 1 kB/s: a link is something data crosses */
			rc = get_ranged(e, ctx, "bandwidth_bps", 1e3, SL_MAX_BANDWIDTH_BPS,
					"the link's bandwidth in bytes/s", 1, &pr->bandwidth_bps, err);
			if (!rc)
				rc = get_ranged(e, ctx, "latency_s", 0, 10, "the one-way latency in "
						"seconds", 0, &pr->latency_s, err);
		} else if (!rc) {
			rc = get_ranged(e, ctx, "usd_per_gb", 0, SL_MAX_USD_PER_GB, "USD per GB sent",
					1, &pr->usd_per_gb, err);
		}
		if (rc)
			return rc;
		(*count)++;
	}
	return 0;
}

static struct provider_defaults *defaults_of(struct merge *m, const char *provider)
{
	for (int i = 0; i < m->default_count; i++)
		if (!strcmp(m->defaults[i].provider, provider))
			return &m->defaults[i];
	if (m->default_count == SL_MAX_REGIONS)
		return NULL;
	struct provider_defaults *d = &m->defaults[m->default_count++];
	memset(d, 0, sizeof(*d));
	snprintf(d->provider, sizeof(d->provider), "%s", provider);
	for (int k = 0; k < SL_EGRESS_KINDS; k++)
		d->egress[k] = -1;
	return d;
}

/* Reads one zone file's content into the merge; fi is its index in zf->files. */
static int read_file(struct merge *m, const json_t *root, int fi, struct sl_err *err)
{
	struct sl_zone_files *zf = m->zf;
	int rc = json_is_object(root) ? 0 : sl_err_set(err, SL_EINPUT, "top level: expected an "
							"object {\"schema\": \"%s\", ...}",
							SL_ZONES_SCHEMA);
	if (!rc)
		rc = sl_json_check_fields(root, "", top_fields, COUNT(top_fields), err);
	const char *schema = json_string_value(json_object_get(root, "schema"));
	if (!rc && (!schema || strcmp(schema, SL_ZONES_SCHEMA)))
		rc = sl_err_set(err, SL_EINPUT, "schema: expected \"%s\"", SL_ZONES_SCHEMA);
	char provider[SL_PROVIDER_NAME_MAX] = "";
	if (!rc && json_object_get(root, "provider"))
		rc = get_name(root, "", "provider", provider, sizeof(provider), err);
	if (!rc && json_object_get(root, "egress_usd_per_gb")) {
		struct provider_defaults *d = provider[0] ? defaults_of(m, provider) : NULL;
		if (!d)
			rc = sl_err_set(err, SL_EINPUT, "egress_usd_per_gb: the file's defaults need "
					"its \"provider\"");
		else
			rc = egress_from(root, "", d->egress, d->file, fi, err);
	}
	const json_t *regions = json_object_get(root, "regions");
	if (!rc && regions && !json_is_array(regions))
		rc = sl_err_set(err, SL_EINPUT, "regions: expected an array");
	for (size_t i = 0; !rc && i < json_array_size(regions); i++) {
		char ctx[48];
		snprintf(ctx, sizeof(ctx), "regions[%zu]", i);
		rc = read_region(m, json_array_get(regions, i), ctx, provider[0] ? provider : NULL, fi,
				 (int)i, err);
	}
	const json_t *zones = json_object_get(root, "zones");
	if (!rc && zones && !json_is_array(zones))
		rc = sl_err_set(err, SL_EINPUT, "zones: expected an array");
	for (size_t i = 0; !rc && i < json_array_size(zones); i++) {
		const json_t *e = json_array_get(zones, i);
		char ctx[48], name[SL_ZONE_NAME_MAX], region[SL_ZONE_NAME_MAX];
		snprintf(ctx, sizeof(ctx), "zones[%zu]", i);
		rc = json_is_object(e) ? 0 : sl_err_set(err, SL_EINPUT, "%s: expected {\"name\", "
							"\"region\"}", ctx);
		if (!rc)
			rc = sl_json_check_fields(e, ctx, zone_fields, COUNT(zone_fields), err);
		if (!rc)
			rc = get_name(e, ctx, "name", name, sizeof(name), err);
		if (!rc && !json_object_get(e, "region"))
			rc = sl_err_set(err, SL_EINPUT, "%s.region: missing: name the region zone '%s' "
					"is in (a region of this file or of the catalogue)", ctx, name);
		if (!rc)
			rc = get_name(e, ctx, "region", region, sizeof(region), err);
		int ri = rc ? -1 : find_region(zf, region);
		if (!rc && ri < 0) {
			char near[256];
			rc = sl_err_set(err, SL_ENOTFOUND, "%s.region: unknown region '%s' (nearest: "
					"%s): add it to \"regions\"", ctx, region,
					sl_zone_files_nearest(zf, region, near, sizeof(near)));
		}
		int zi = rc ? -1 : find_zone(zf, name);
		if (!rc && zi < 0) {
			if (zf->zone_count == SL_MAX_ZONES)
				rc = sl_err_set(err, SL_EINPUT, "%s: more than %d zones in all", ctx,
						SL_MAX_ZONES);
			else
				zi = zf->zone_count++;
		}
		if (!rc) {
			snprintf(zf->zones[zi].name, sizeof(zf->zones[zi].name), "%s", name);
			zf->zones[zi].region = ri;
			zf->zones[zi].file = fi;
		}
	}
	if (!rc)
		rc = read_pairs(zf, root, "egress_pairs", fi, err);
	if (!rc)
		rc = read_pairs(zf, root, "links", fi, err);
	return rc;
}

/* ---- the merged whole ---- */

static const char *name_of(const void *ctx, int i)
{
	const struct sl_zone_files *zf = ctx;
	return i < zf->zone_count ? zf->zones[i].name : zf->regions[i - zf->zone_count].name;
}

const char *sl_zone_files_nearest(const struct sl_zone_files *zf, const char *name, char *buf,
				  size_t size)
{
	return sl_nearest_names_list(name, name_of, zf, zf->zone_count + zf->region_count, 3, buf,
				     size);
}

/* The provider's defaults where a region gives no price; then what every region must have. */
static int complete_regions(struct merge *m, struct sl_err *err)
{
	struct sl_zone_files *zf = m->zf;
	for (int ri = 0; ri < zf->region_count; ri++) {
		struct sl_zone_files_region *r = &zf->regions[ri];
		char ctx[SL_ZONE_FILES_ORIGIN_MAX + 48];
		snprintf(ctx, sizeof(ctx), "%s: regions[%d] ('%s')", zf->files[r->file], r->index,
			 r->name);
		if (!r->provider[0])
			return sl_err_set(err, SL_EINPUT, "%s.provider: missing: name the cloud (gcp, "
					  "aws, azure, or your own), here or as the file's \"provider\"",
					  ctx);
		if (r->continent < 0)
			return sl_err_set(err, SL_EINPUT, "%s.continent: missing: give one of africa, "
					  "asia, europe, middle-east, north-america, oceania, "
					  "south-america", ctx);
		if (isnan(r->lat_deg) || isnan(r->lon_deg))
			return sl_err_set(err, SL_EINPUT, "%s.lat, lon: missing: give the region's "
					  "location in degrees (its distance to other regions sets the "
					  "latency of links nobody measured)", ctx);
		struct provider_defaults *d = defaults_of(m, r->provider);
		int zones = 0;
		for (int zi = 0; zi < zf->zone_count; zi++)
			zones += zf->zones[zi].region == ri;
		for (int k = 0; k < SL_EGRESS_KINDS; k++) {
			if (r->egress_usd_per_gb[k] < 0 && d && d->egress[k] >= 0) {
				r->egress_usd_per_gb[k] = d->egress[k];
				r->egress_file[k] = d->file[k];
			}
			int needed = k == SL_EGRESS_WORLD || k == SL_EGRESS_INTERNET ||
				     (k == SL_EGRESS_ZONE && zones > 1);
			if (needed && r->egress_usd_per_gb[k] < 0)
				return sl_err_set(err, SL_EINPUT, "%s.egress_usd_per_gb.%s: missing: give "
						  "USD per GB sent %s, here or in the file's "
						  "\"egress_usd_per_gb\" for provider '%s'", ctx,
						  egress_keys[k],
						  k == SL_EGRESS_ZONE ? "between the region's zones"
						  : k == SL_EGRESS_WORLD ? "to the provider's regions on other "
									   "continents"
									 : "to the internet (another cloud)",
						  r->provider);
		}
	}
	return 0;
}

/* Every pair of list names zones or regions of the load (zones, regions: their names sorted). */
static int check_names(const struct sl_zone_files *zf, const struct sl_sorted_names *zones_by_name,
		       const struct sl_sorted_names *regions_by_name,
		       const struct sl_zone_files_pair *list, int n, const char *key,
		       struct sl_err *err)
{
	for (int i = 0; i < n; i++) {
		const char *ends[2] = {list[i].from, list[i].to};
		int zones = sl_sorted_names_has(zones_by_name, ends[0]) +
			    sl_sorted_names_has(zones_by_name, ends[1]);
		if (!strcmp(key, "egress_pairs") && zones == 1)
			return sl_err_set(err, SL_EINPUT, "%s: %s[%d]: name two zones or two regions "
					  "(a price between regions holds for all their zones)",
					  zf->files[list[i].file], key, list[i].index);
		for (int e = 0; e < 2; e++) {
			if (sl_sorted_names_has(zones_by_name, ends[e]) ||
			    sl_sorted_names_has(regions_by_name, ends[e]))
				continue;
			char near[256];
			return sl_err_set(err, SL_ENOTFOUND, "%s: %s[%d].%s: '%s' is no zone or region "
					  "(nearest: %s)", zf->files[list[i].file], key, list[i].index,
					  e ? "to" : "from", ends[e],
					  sl_zone_files_nearest(zf, ends[e], near, sizeof(near)));
		}
	}
	return 0;
}

static int add_file(struct merge *m, const json_t *root, const char *origin, int shipped,
		    struct sl_err *err)
{
	struct sl_zone_files *zf = m->zf;
	if (zf->file_count == SL_ZONE_FILES_MAX)
		return sl_err_set(err, SL_EINPUT, "%s: more than %d zone files", origin,
				  SL_ZONE_FILES_MAX);
	int fi = zf->file_count++;
	snprintf(zf->files[fi], sizeof(zf->files[fi]), "%s", origin);
	zf->shipped[fi] = shipped;
	int rc = read_file(m, root, fi, err);
	if (rc)
		sl_err_prefix(err, "%s", origin);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The shipped files: data/zones/ *.json by name (a folder without them: no zones at all). */
/* ---- the shipped files, parsed once per process ----
 * A simulation environment loads the zone files three times (the catalogue, then the egress
 * prices and the link model, on a loader thread beside the profiles'), and parsing them was a
 * tenth of a small `sailor plan`'s time. The merge of the shipped files is kept, under a lock,
 * keyed by their folder and each file's size and modification time (a test that rewrites one
 * sees its change). */

static pthread_mutex_t shipped_lock = PTHREAD_MUTEX_INITIALIZER;
static char shipped_key[SL_ZONE_FILES_MAX * 320 + 4096];
static struct merge *shipped; /* its zf's arrays hold exactly their counts */

/* dst becomes a copy of src: into dst's zf (arrays of the full sizes), or, with exact, into a new
 * zf whose arrays hold exactly src's counts. Returns dst's zf, or NULL when out of memory. */
static struct sl_zone_files *merge_copy(struct merge *dst, const struct merge *src, int exact)
{
	const struct sl_zone_files *a = src->zf;
	struct sl_zone_files *b = exact ? calloc(1, sizeof(*b)) : dst->zf;
	if (!b)
		return NULL;
	struct sl_zone_files keep = *b;
	*dst = *src;
	*b = *a;
	b->regions = exact ? malloc(sizeof(*a->regions) * (size_t)(a->region_count + 1)) : keep.regions;
	b->zones = exact ? malloc(sizeof(*a->zones) * (size_t)(a->zone_count + 1)) : keep.zones;
	b->pairs = exact ? malloc(sizeof(*a->pairs) * (size_t)(a->pair_count + 1)) : keep.pairs;
	b->links = exact ? malloc(sizeof(*a->links) * (size_t)(a->link_count + 1)) : keep.links;
	dst->zf = b;
	if (!b->regions || !b->zones || !b->pairs || !b->links) {
		sl_zone_files_free(b);
		return NULL;
	}
	memcpy(b->regions, a->regions, sizeof(*a->regions) * (size_t)a->region_count);
	memcpy(b->zones, a->zones, sizeof(*a->zones) * (size_t)a->zone_count);
	memcpy(b->pairs, a->pairs, sizeof(*a->pairs) * (size_t)a->pair_count);
	memcpy(b->links, a->links, sizeof(*a->links) * (size_t)a->link_count);
	return b;
}

/* m from the cache when key is the cached one: 1 if so. */
static int shipped_from_cache(struct merge *m, const char *key)
{
	pthread_mutex_lock(&shipped_lock);
	int hit = shipped && !strcmp(shipped_key, key);
	if (hit)
		merge_copy(m, shipped, 0);
	pthread_mutex_unlock(&shipped_lock);
	return hit;
}

/* The cache becomes a copy of m (nothing cached when out of memory: the next load parses). */
static void shipped_to_cache(const struct merge *m, const char *key)
{
	struct merge *copy = malloc(sizeof(*copy));
	if (copy && !merge_copy(copy, m, 1)) {
		free(copy);
		copy = NULL;
	}
	pthread_mutex_lock(&shipped_lock);
	if (shipped)
		sl_zone_files_free(shipped->zf);
	free(shipped);
	shipped = copy;
	snprintf(shipped_key, sizeof(shipped_key), "%s", copy ? key : "");
	pthread_mutex_unlock(&shipped_lock);
}

/* The .json files of data/zones/, in name order, merged into m (from the cache when none of
 * them changed). */
static int load_shipped(struct merge *m, const char *data_dir, struct sl_err *err)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/zones", data_dir);
	DIR *d = opendir(dir);
	if (!d)
		return sl_err_set(err, SL_ENOTFOUND, "zone catalogue '%s': cannot read the folder "
				  "(sailor's data folder has data/zones/*.json)", dir);
	char *names[SL_ZONE_FILES_MAX];
	int n = 0, rc = 0;
	for (struct dirent *e; (e = readdir(d)) && !rc;) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		if (n == SL_ZONE_FILES_MAX)
			rc = sl_err_set(err, SL_EINPUT, "'%s': more than %d zone files", dir,
					SL_ZONE_FILES_MAX);
		else if (!(names[n++] = strdup(e->d_name)))
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	closedir(d);
	if (!rc)
		qsort(names, (size_t)n, sizeof(names[0]), cmp_names);
	char key[sizeof(shipped_key)];
	size_t used = (size_t)snprintf(key, sizeof(key), "%s", dir);
	for (int i = 0; i < n && !rc && used < sizeof(key); i++) {
		char path[4400];
		struct stat st = {0};
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		stat(path, &st);
		used += (size_t)snprintf(key + used, sizeof(key) - used, "|%.300s %lld %lld.%09ld",
					 names[i], (long long)st.st_size,
					 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	}
	int cached = !rc && used < sizeof(key) && shipped_from_cache(m, key);
	for (int i = 0; i < n && !rc && !cached; i++) {
		char path[4400], origin[SL_ZONE_FILES_ORIGIN_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		snprintf(origin, sizeof(origin), "zones '%.300s'", path);
		json_t *root = sl_json_load_file(path, "zones", err);
		rc = root ? add_file(m, root, origin, 1, err) : (err ? err->code : SL_EINPUT);
		json_decref(root);
	}
	if (!rc && !cached && used < sizeof(key))
		shipped_to_cache(m, key);
	for (int i = 0; i < n; i++)
		free(names[i]);
	return rc;
}

int sl_zone_files_load(const char *data_dir, struct sl_zone_files **out, struct sl_err *err)
{
	*out = NULL;
	if (!data_dir)
		data_dir = sl_paths_data_dir();
	struct merge *m = calloc(1, sizeof(*m));
	struct sl_zone_files *zf = calloc(1, sizeof(*zf));
	if (zf) { /* not zeroed (megabytes, three loads a run): each entry is set when appended */
		zf->regions = malloc(SL_MAX_REGIONS * sizeof(*zf->regions));
		zf->zones = malloc(SL_MAX_ZONES * sizeof(*zf->zones));
		zf->pairs = malloc(SL_ZONE_FILES_PAIRS_MAX * sizeof(*zf->pairs));
		zf->links = malloc(SL_ZONE_FILES_LINKS_MAX * sizeof(*zf->links));
	}
	if (!m || !zf || !zf->regions || !zf->zones || !zf->pairs || !zf->links) {
		free(m);
		sl_zone_files_free(zf);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	m->zf = zf;
	int rc = load_shipped(m, data_dir, err);
	for (int i = 0; i < overlay_count && !rc; i++)
		rc = add_file(m, overlays[i].root, overlays[i].origin, 0, err);
	if (!rc)
		rc = complete_regions(m, err);
	/* the pairs' names looked up by binary search, not among all the world's zones each */
	struct sl_sorted_names zones = {0}, regions = {0};
	if (!rc && (sl_sorted_names_init(&zones, zf->zones, zf->zone_count, sizeof(*zf->zones)) ||
		    sl_sorted_names_init(&regions, zf->regions, zf->region_count,
					 sizeof(*zf->regions))))
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	if (!rc)
		rc = check_names(zf, &zones, &regions, zf->pairs, zf->pair_count, "egress_pairs", err);
	if (!rc)
		rc = check_names(zf, &zones, &regions, zf->links, zf->link_count, "links", err);
	sl_sorted_names_free(&zones);
	sl_sorted_names_free(&regions);
	free(m);
	if (rc) {
		sl_zone_files_free(zf);
		return rc;
	}
	*out = zf;
	return 0;
}

void sl_zone_files_free(struct sl_zone_files *zf)
{
	if (!zf)
		return;
	free(zf->regions);
	free(zf->zones);
	free(zf->pairs);
	free(zf->links);
	free(zf);
}

/* ---- adding overlays ---- */

int sl_zone_files_overlay_count(void)
{
	return overlay_count;
}

int sl_zone_files_overlay_save(int i, const char *path, struct sl_err *err)
{
	char *text = i >= 0 && i < overlay_count
			     ? json_dumps(overlays[i].root, JSON_INDENT(1) | JSON_PRESERVE_ORDER)
			     : NULL;
	if (!text)
		return sl_err_set(err, SL_ENOMEM, "zones: cannot write overlay %d", i);
	int rc = sl_atomic_write(path, "zones", text, strlen(text), err);
	free(text);
	return rc;
}

/* Keeps root (a new reference) as an overlay and checks the catalogue with it; on error the
 * overlay is dropped again. */
static int push_overlay(json_t *root, const char *origin, struct sl_err *err)
{
	if (overlay_count == SL_ZONE_FILES_MAX) {
		json_decref(root);
		return sl_err_set(err, SL_EINPUT, "%s: more than %d zone files", origin,
				  SL_ZONE_FILES_MAX);
	}
	overlays[overlay_count].root = root;
	snprintf(overlays[overlay_count].origin, sizeof(overlays[0].origin), "%s", origin);
	overlay_count++;
	/* checked now, with the catalogue's GPU types and the shipped zones, so that a bad file
	 * fails before any work */
	struct sl_catalogue *cat = malloc(sizeof(*cat));
	int rc = cat ? sl_catalogue_load(NULL, cat, err) : sl_err_set(err, SL_ENOMEM, "out of memory");
	free(cat);
	if (rc) {
		overlay_count--;
		json_decref(root);
	}
	return rc;
}

int sl_zone_files_add_overlay(const char *path, struct sl_err *err)
{
	char origin[SL_ZONE_FILES_ORIGIN_MAX];
	snprintf(origin, sizeof(origin), "zones '%s'", path);
	json_t *root = sl_json_load_file(path, "zones", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	return push_overlay(root, origin, err);
}

int sl_zone_files_add_member(const char *path, const char *what, struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, what, err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	json_t *zones = json_is_object(root) ? json_object_get(root, "zones") : NULL;
	int rc = 0;
	char origin[SL_ZONE_FILES_ORIGIN_MAX];
	if (json_is_string(zones)) {
		/* a path, relative to the folder of the file that names it */
		const char *rel = json_string_value(zones);
		const char *slash = strrchr(path, '/');
		char full[4096];
		if (rel[0] == '/' || !slash)
			snprintf(full, sizeof(full), "%s", rel);
		else
			snprintf(full, sizeof(full), "%.*s/%s", (int)(slash - path), path, rel);
		rc = sl_zone_files_add_overlay(full, err);
		if (rc)
			sl_err_prefix(err, "%s '%s': zones", what, path);
	} else if (zones) {
		snprintf(origin, sizeof(origin), "%s '%s': zones", what, path);
		if (!json_is_object(zones))
			rc = sl_err_set(err, SL_EINPUT, "%s: expected a zone file's content (an object "
					"with \"schema\": \"%s\") or its path", origin, SL_ZONES_SCHEMA);
		else
			rc = push_overlay(json_incref(zones), origin, err);
	}
	json_decref(root);
	return rc;
}
