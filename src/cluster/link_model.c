/* Link classes and the user's links (see link_model.h). Invariants: every class from
 * SAME_CONTINENT on has a positive bandwidth and a round-trip line; the reference's bandwidth
 * and round trip are positive; user links are kept in listing order (the last matching wins). */
#include "cluster/link_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/zone_files.h"
#include "util/json.h"
#include "util/limits.h"
#include "util/paths.h"

static const char *const class_names[SL_LINK_CLASSES] = {
	"same-zone",	    "same-region",		       "same-continent",
	"across-continents", "across-providers-same-continent", "across-providers-across-continents"};

struct class_figures {
	double bandwidth_bps;
	double rtt_at_0_km_s, rtt_per_1000_km_s;
};

struct user_link {
	int from_zone, to_zone;      /* -1: the end names a region */
	int from_region, to_region;  /* -1: the end names a zone */
	double bandwidth_bps, latency_s;
	char origin[SL_ZONE_FILES_ORIGIN_MAX];
};

struct sl_link_model {
	struct class_figures classes[SL_LINK_CLASSES];
	double reference_bandwidth_bps, reference_rtt_s;
	char reference_gpu[SL_GPU_NAME_MAX];
	char reference_regions[2][SL_ZONE_NAME_MAX];
	int link_count;
	struct user_link *links;
};

const char *sl_link_model_class_name(enum sl_link_class c)
{
	return c >= 0 && c < SL_LINK_CLASSES ? class_names[c] : "?";
}

enum sl_link_class sl_link_model_class_of(const struct sl_catalogue *cat, int za, int zb)
{
	if (za == zb)
		return SL_LINK_CLASS_SAME_ZONE;
	const struct sl_region *a = sl_catalogue_zone_region_info(cat, za);
	const struct sl_region *b = sl_catalogue_zone_region_info(cat, zb);
	int same_continent = a->continent == b->continent;
	if (strcmp(a->provider, b->provider))
		return same_continent ? SL_LINK_CLASS_PROVIDERS_SAME_CONTINENT
				      : SL_LINK_CLASS_PROVIDERS_ACROSS_CONTINENTS;
	if (cat->zones[za].region == cat->zones[zb].region)
		return SL_LINK_CLASS_SAME_REGION;
	return same_continent ? SL_LINK_CLASS_SAME_CONTINENT : SL_LINK_CLASS_ACROSS_CONTINENTS;
}

static int positive(const json_t *obj, const char *ctx, const char *key, double lo, double hi,
		    double *out, struct sl_err *err)
{
	const json_t *v = json_object_get(obj, key);
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	if (!(x >= lo && x <= hi))
		return sl_err_set(err, SL_EINPUT, "%s.%s: expected a number from %g to %g", ctx, key,
				  lo, hi);
	*out = x;
	return 0;
}

static int load_classes(struct sl_link_model *lm, const char *path, struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "link classes", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	const char *schema = json_string_value(json_object_get(root, "schema"));
	int rc = schema && !strcmp(schema, SL_LINK_CLASSES_SCHEMA)
			 ? 0
			 : sl_err_set(err, SL_EINPUT, "schema: expected \"%s\"", SL_LINK_CLASSES_SCHEMA);
	const json_t *ref = json_object_get(root, "reference");
	if (!rc)
		rc = positive(ref, "reference", "bandwidth_bps", 1e3, SL_MAX_BANDWIDTH_BPS,
			      &lm->reference_bandwidth_bps, err);
	if (!rc)
		rc = positive(ref, "reference", "rtt_s", 0, 10, &lm->reference_rtt_s, err);
	const json_t *fits = json_object_get(ref, "sosp25_fits");
	const char *gpu = json_string_value(json_object_get(fits, "gpu"));
	const json_t *regions = json_object_get(fits, "regions");
	const char *ra = json_string_value(json_array_get(regions, 0));
	const char *rb = json_string_value(json_array_get(regions, 1));
	if (!rc && (!gpu || !ra || !rb || strlen(gpu) >= SL_GPU_NAME_MAX ||
		    strlen(ra) >= SL_ZONE_NAME_MAX || strlen(rb) >= SL_ZONE_NAME_MAX))
		rc = sl_err_set(err, SL_EINPUT, "reference.sosp25_fits: expected {\"gpu\": a GPU type, "
				"\"regions\": [two regions]}: the measured fits the classes scale");
	if (!rc) {
		snprintf(lm->reference_gpu, sizeof(lm->reference_gpu), "%s", gpu);
		snprintf(lm->reference_regions[0], SL_ZONE_NAME_MAX, "%s", ra);
		snprintf(lm->reference_regions[1], SL_ZONE_NAME_MAX, "%s", rb);
	}
	const json_t *classes = json_object_get(root, "classes");
	for (int c = SL_LINK_CLASS_SAME_CONTINENT; c < SL_LINK_CLASSES && !rc; c++) {
		char ctx[96];
		snprintf(ctx, sizeof(ctx), "classes.%s", class_names[c]);
		const json_t *e = json_object_get(classes, class_names[c]);
		const json_t *rtt = json_object_get(e, "rtt_s");
		struct class_figures *f = &lm->classes[c];
		if (!json_is_object(e))
			rc = sl_err_set(err, SL_EINPUT, "%s: missing: every class from same-continent "
					"on needs its figures", ctx);
		if (!rc)
			rc = positive(e, ctx, "bandwidth_bps", 1e3, SL_MAX_BANDWIDTH_BPS,
				      &f->bandwidth_bps, err);
		strcat(ctx, ".rtt_s");
		if (!rc)
			rc = positive(rtt, ctx, "at_0_km", -1, 10, &f->rtt_at_0_km_s, err);
		if (!rc)
			rc = positive(rtt, ctx, "per_1000_km", 0, 1, &f->rtt_per_1000_km_s, err);
	}
	json_decref(root);
	if (rc)
		sl_err_prefix(err, "link classes '%s'", path);
	return rc;
}

static int region_index(const struct sl_catalogue *cat, const char *name)
{
	for (int r = 0; r < cat->region_count; r++)
		if (!strcmp(cat->regions[r].name, name))
			return r;
	return -1;
}

int sl_link_model_load(const char *data_dir, const struct sl_catalogue *cat,
		       struct sl_link_model **out, struct sl_err *err)
{
	if (!data_dir)
		data_dir = sl_paths_data_dir();
	*out = NULL;
	struct sl_link_model *lm = calloc(1, sizeof(*lm));
	struct sl_zone_files *zf = NULL;
	if (!lm)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	char path[4096];
	snprintf(path, sizeof(path), "%s/network/link_classes.json", data_dir);
	int rc = load_classes(lm, path, err);
	if (!rc)
		rc = sl_zone_files_load(data_dir, &zf, err);
	if (!rc && zf->link_count > 0) {
		lm->links = calloc((size_t)zf->link_count, sizeof(*lm->links));
		if (!lm->links)
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	for (int i = 0; !rc && i < zf->link_count; i++) {
		const struct sl_zone_files_pair *p = &zf->links[i];
		struct user_link *l = &lm->links[lm->link_count++];
		l->from_zone = sl_catalogue_zone_index(cat, p->from);
		l->to_zone = sl_catalogue_zone_index(cat, p->to);
		l->from_region = l->from_zone < 0 ? region_index(cat, p->from) : -1;
		l->to_region = l->to_zone < 0 ? region_index(cat, p->to) : -1;
		l->bandwidth_bps = p->bandwidth_bps;
		l->latency_s = p->latency_s;
		snprintf(l->origin, sizeof(l->origin), "%s", zf->files[p->file]);
	}
	sl_zone_files_free(zf);
	if (rc) {
		sl_link_model_free(lm);
		return rc;
	}
	*out = lm;
	return 0;
}

void sl_link_model_free(struct sl_link_model *lm)
{
	if (!lm)
		return;
	free(lm->links);
	free(lm);
}

void sl_link_model_reference(const struct sl_link_model *lm, const char **gpu,
			     const char **region_a, const char **region_b)
{
	*gpu = lm->reference_gpu;
	*region_a = lm->reference_regions[0];
	*region_b = lm->reference_regions[1];
}

void sl_link_model_class_fit(const struct sl_link_model *lm, const struct sl_catalogue *cat,
			     int za, int zb, const struct sl_link_fit *ref, struct sl_link_fit *out)
{
	enum sl_link_class c = sl_link_model_class_of(cat, za, zb);
	const struct class_figures *f = &lm->classes[c < SL_LINK_CLASS_SAME_CONTINENT
							    ? SL_LINK_CLASS_SAME_CONTINENT
							    : c];
	double k = f->bandwidth_bps / lm->reference_bandwidth_bps;
	double km = sl_catalogue_zone_distance_km(cat, za, zb);
	double rtt_s = f->rtt_at_0_km_s + f->rtt_per_1000_km_s * km / 1000.0;
	*out = *ref;
	out->a2 = ref->a2 * k;
	out->a1 = ref->a1 * k;
	out->a0 = ref->a0 * k;
	out->max_bps = ref->max_bps * k;
	/* the reference's own round trip is in its measured fit already */
	out->latency_s = rtt_s > lm->reference_rtt_s ? (rtt_s - lm->reference_rtt_s) / 2.0 : 0.0;
	out->derived = 1;
}

static int end_matches(const struct sl_catalogue *cat, int zone, int link_zone, int link_region)
{
	return link_zone >= 0 ? link_zone == zone : link_region == cat->zones[zone].region;
}

int sl_link_model_user_link(const struct sl_link_model *lm, const struct sl_catalogue *cat,
			    int za, int zb, struct sl_link_fit *out, const char **origin)
{
	const struct user_link *best = NULL;
	int best_zones = -1;
	for (int i = 0; i < lm->link_count; i++) {
		const struct user_link *l = &lm->links[i];
		int forward = end_matches(cat, za, l->from_zone, l->from_region) &&
			      end_matches(cat, zb, l->to_zone, l->to_region);
		int backward = end_matches(cat, zb, l->from_zone, l->from_region) &&
			       end_matches(cat, za, l->to_zone, l->to_region);
		if (!forward && !backward)
			continue;
		/* a link naming zones is more specific than one naming their regions */
		int zones = (l->from_zone >= 0) + (l->to_zone >= 0);
		if (zones >= best_zones) {
			best = l;
			best_zones = zones;
		}
	}
	if (!best)
		return 0;
	memset(out, 0, sizeof(*out));
	out->a0 = best->bandwidth_bps / 1e9;
	out->max_bps = best->bandwidth_bps;
	out->latency_s = best->latency_s;
	out->derived = 1;
	if (origin)
		*origin = best->origin;
	return 1;
}
