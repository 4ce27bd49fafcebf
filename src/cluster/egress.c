/* Egress prices between zones (see egress.h). Invariants: the rule table has one entry per
 * catalogue region with its four prices resolved by zone_files.c (continent may be < 0: none
 * listed); pair tables are sorted by (src, dst) with the last listed pair kept. */
#include "cluster/egress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/zone_files.h"
#include "util/json.h"
#include "util/limits.h"
#include "util/paths.h"

struct rule {
	double usd_per_gb[SL_EGRESS_KINDS];
	char origin[SL_EGRESS_KINDS][SL_ZONE_FILES_ORIGIN_MAX]; /* "gcp list", "zones 'x.json'" */
};

struct pair {
	int src, dst;        /* zone or region indices of the catalogue */
	int order;           /* listing order: the later wins */
	double usd_per_gb;
	char origin[SL_ZONE_FILES_ORIGIN_MAX];
};

struct sl_egress {
	int region_count;
	struct rule *rules;               /* [region] */
	int zone_pair_count, region_pair_count;
	struct pair *zone_pairs, *region_pairs;
};

static const char *const kind_text[SL_EGRESS_KINDS] = {"between zones", "within the continent",
						       "across continents", "internet"};

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Sorts pairs and keeps the last listed of each (src, dst); returns the new count. */
static int settle(struct pair *p, int n)
{
	qsort(p, (size_t)n, sizeof(*p), cmp_pair);
	int out = 0;
	for (int i = 0; i < n; i++) {
		if (out > 0 && p[out - 1].src == p[i].src && p[out - 1].dst == p[i].dst)
			out--;
		p[out++] = p[i];
	}
	return out;
}

static const struct pair *find(const struct pair *p, int n, int src, int dst)
{
	int lo = 0, hi = n - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (p[mid].src == src && p[mid].dst == dst)
			return &p[mid];
		if (p[mid].src < src || (p[mid].src == src && p[mid].dst < dst))
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

static int region_index(const struct sl_catalogue *cat, const char *name)
{
	for (int r = 0; r < cat->region_count; r++)
		if (!strcmp(cat->regions[r].name, name))
			return r;
	return -1;
}

/* A file's name for the source text: the provider's list for a shipped file, else the file. */
static void origin_of(const struct sl_zone_files *zf, int file, const char *provider, char *out,
		      size_t size)
{
	if (zf->shipped[file])
		snprintf(out, size, "%s list", provider);
	else
		snprintf(out, size, "%s", zf->files[file]);
}

/* The SOSP'25 artifact's prices between its zones: {src: {dst: usd_per_gb}}. Allocates
 * eg->zone_pairs for them and `more` pairs besides (the zone files'), no larger: a table sized for
 * the most any file may hold was megabytes to zero on every start of the planner. */
static int load_artifact(struct sl_egress *eg, const char *path, const struct sl_catalogue *cat,
			 size_t more, struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "egress prices", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc = json_is_object(root) ? 0 : sl_err_set(err, SL_EINPUT, "expected {\"<zone>\": "
						       "{\"<zone>\": USD per GB}}");
	const char *sname, *dname;
	json_t *row, *v;
	size_t pairs = 0, most = 64 * 64; /* the artifact's file: a handful of zones */
	json_object_foreach(root, sname, row)
		pairs += json_is_object(row) ? json_object_size(row) : 0;
	if (!rc && pairs > most)
		rc = sl_err_set(err, SL_EINPUT, "more than %zu zone pairs", most);
	if (!rc && !(eg->zone_pairs = calloc(pairs + more + 1, sizeof(*eg->zone_pairs))))
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	json_object_foreach(root, sname, row)
	{
		int s = sl_catalogue_zone_index(cat, sname);
		char near[256];
		if (!rc && s < 0)
			rc = sl_err_set(err, SL_ENOTFOUND, "%s: unknown zone (nearest: %s)", sname,
					sl_catalogue_zone_suggest(cat, sname, near, sizeof(near)));
		if (!rc && !json_is_object(row))
			rc = sl_err_set(err, SL_EINPUT, "%s: expected {\"<zone>\": USD per GB}", sname);
		json_object_foreach(row, dname, v)
		{
			int d = rc ? -1 : sl_catalogue_zone_index(cat, dname);
			double price = json_is_number(v) ? json_number_value(v) : -1;
			if (!rc && d < 0)
				rc = sl_err_set(err, SL_ENOTFOUND, "%s.%s: unknown zone (nearest: %s)",
						sname, dname,
						sl_catalogue_zone_suggest(cat, dname, near, sizeof(near)));
			if (!rc && !(price >= 0 && price <= SL_MAX_USD_PER_GB))
				rc = sl_err_set(err, SL_EINPUT, "%s.%s: %g is out of range: give 0 to "
						"%g $/GB", sname, dname, price, SL_MAX_USD_PER_GB);
			if (rc)
				break;
			int at = eg->zone_pair_count++;
			eg->zone_pairs[at] = (struct pair){s, d, at, price, "SOSP'25 artifact"};
		}
	}
	json_decref(root);
	if (rc)
		sl_err_prefix(err, "egress prices '%s'", path);
	return rc;
}

static int load_rules(struct sl_egress *eg, const struct sl_zone_files *zf,
		      const struct sl_catalogue *cat)
{
	for (int fr = 0; fr < zf->region_count; fr++) {
		const struct sl_zone_files_region *in = &zf->regions[fr];
		int r = region_index(cat, in->name);
		if (r < 0)
			continue; /* a region without zones */
		for (int k = 0; k < SL_EGRESS_KINDS; k++) {
			eg->rules[r].usd_per_gb[k] = in->egress_usd_per_gb[k];
			if (in->egress_usd_per_gb[k] >= 0)
				origin_of(zf, in->egress_file[k], in->provider, eg->rules[r].origin[k],
					  sizeof(eg->rules[r].origin[k]));
		}
	}
	for (int i = 0; i < zf->pair_count; i++) {
		const struct sl_zone_files_pair *p = &zf->pairs[i];
		int zs = sl_catalogue_zone_index(cat, p->from), zd = sl_catalogue_zone_index(cat, p->to);
		int rs = region_index(cat, p->from), rd = region_index(cat, p->to);
		struct pair *to;
		if (zs >= 0 && zd >= 0)
			to = &eg->zone_pairs[eg->zone_pair_count++];
		else if (rs >= 0 && rd >= 0)
			to = &eg->region_pairs[eg->region_pair_count++];
		else
			continue; /* a zone and a region: zone_files.h names pairs of one kind */
		*to = (struct pair){zs >= 0 ? zs : rs, zd >= 0 ? zd : rd, 1000000 + i, p->usd_per_gb, ""};
		if (zf->shipped[p->file])
			snprintf(to->origin, sizeof(to->origin), "%s list",
				 cat->regions[zs >= 0 ? cat->zones[zs].region : rs].provider);
		else
			snprintf(to->origin, sizeof(to->origin), "%s", zf->files[p->file]);
	}
	return 0;
}

int sl_egress_load(const char *data_dir, const struct sl_catalogue *cat, struct sl_egress **out,
		   struct sl_err *err)
{
	if (!data_dir)
		data_dir = sl_paths_data_dir();
	*out = NULL;
	struct sl_zone_files *zf = NULL;
	int rc = sl_zone_files_load(data_dir, &zf, err);
	if (rc)
		return rc;
	struct sl_egress *eg = calloc(1, sizeof(*eg));
	if (eg) {
		eg->region_count = cat->region_count;
		eg->rules = calloc((size_t)cat->region_count + 1, sizeof(*eg->rules));
		eg->region_pairs = calloc((size_t)zf->pair_count + 1, sizeof(*eg->region_pairs));
	}
	if (!eg || !eg->rules || !eg->region_pairs) {
		sl_zone_files_free(zf);
		sl_egress_free(eg);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/network/egress_usd_per_gb.json", data_dir);
	rc = load_artifact(eg, path, cat, (size_t)zf->pair_count, err);
	if (!rc)
		rc = load_rules(eg, zf, cat);
	sl_zone_files_free(zf);
	if (rc) {
		sl_egress_free(eg);
		return rc;
	}
	eg->zone_pair_count = settle(eg->zone_pairs, eg->zone_pair_count);
	eg->region_pair_count = settle(eg->region_pairs, eg->region_pair_count);
	*out = eg;
	return 0;
}

void sl_egress_free(struct sl_egress *eg)
{
	if (!eg)
		return;
	free(eg->rules);
	free(eg->zone_pairs);
	free(eg->region_pairs);
	free(eg);
}

static double answer(double price, const char *text, char *source, size_t size)
{
	if (source && size)
		snprintf(source, size, "%s", text);
	return price;
}

double sl_egress_usd_per_gb(const struct sl_egress *eg, const struct sl_catalogue *cat, int src,
			    int dst, char *source, size_t size)
{
	char text[SL_ZONE_FILES_ORIGIN_MAX + 48];
	if (src == dst)
		return answer(0.0, "same zone", source, size);
	const struct pair *p = find(eg->zone_pairs, eg->zone_pair_count, src, dst);
	if (p)
		return answer(p->usd_per_gb, p->origin, source, size);
	int rs = cat->zones[src].region, rd = cat->zones[dst].region;
	const struct sl_region *a = &cat->regions[rs], *b = &cat->regions[rd];
	const struct rule *r = &eg->rules[rs];
	int kind = strcmp(a->provider, b->provider) ? SL_EGRESS_INTERNET
		   : rs == rd				? SL_EGRESS_ZONE
		   : a->continent == b->continent	? SL_EGRESS_CONTINENT
							: SL_EGRESS_WORLD;
	if (kind == SL_EGRESS_CONTINENT || kind == SL_EGRESS_WORLD) {
		p = find(eg->region_pairs, eg->region_pair_count, rs, rd);
		if (p) {
			snprintf(text, sizeof(text), "%s: %s -> %s", p->origin, a->name, b->name);
			return answer(p->usd_per_gb, text, source, size);
		}
	}
	if (kind == SL_EGRESS_CONTINENT && r->usd_per_gb[kind] < 0) {
		snprintf(text, sizeof(text), "%s: across continents (no price within it listed)",
			 r->origin[SL_EGRESS_WORLD]);
		return answer(r->usd_per_gb[SL_EGRESS_WORLD], text, source, size);
	}
	snprintf(text, sizeof(text), "%s: %s", r->origin[kind], kind_text[kind]);
	return answer(r->usd_per_gb[kind], text, source, size);
}
