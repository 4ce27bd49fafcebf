/* Network fits and egress prices (see network.h). The fits between measured zones resolve by the
 * SOSP'25 rules over a table of the measured zones; every zone pair a caller asks for is resolved
 * once, into a block of its fits and its egress price (network_state.h).
 * Invariants: measured has (M·G·C)² entries; a published pair block never changes. */
#include "cluster/network.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/network_state.h"
#include "util/json.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/paths.h"

static const int count_values[SL_NET_COUNTS] = {1, 2, 4, 8};

int sl_link_count_index(int count)
{
	if (count <= 1)
		return 0;
	if (count < 4)
		return 1;
	if (count < 8)
		return 2;
	return 3;
}

static int count_index_exact(const char *text)
{
	for (int i = 0; i < SL_NET_COUNTS; i++) {
		char buf[8];
		snprintf(buf, sizeof(buf), "%d", count_values[i]);
		if (!strcmp(buf, text))
			return i;
	}
	return -1;
}

/* Index into measured of a link between (M zone, gpu, count) ends. */
static size_t link_index(const struct sl_network *net, int sz, int sg, int sc, int rz, int rg, int rc)
{
	size_t ends = (size_t)net->mzones * (size_t)net->gpus * SL_NET_COUNTS;
	return sl_network_end(net, sz, sg, sc) * ends + sl_network_end(net, rz, rg, rc);
}

static const struct sl_link_fit *measured(const struct sl_network *net, int sz, int sg, int sc,
					 int rz, int rg, int rc)
{
	size_t i = link_index(net, sz, sg, sc, rz, rg, rc);
	return net->measured_present[i] ? &net->measured[i] : NULL;
}

/* Count indices in order of preference: the one asked, then smaller ones, then larger. */
static int count_order(int c, int *order)
{
	int n = 0;
	order[n++] = c;
	for (int k = c - 1; k >= 0; k--)
		order[n++] = k;
	for (int k = c + 1; k < SL_NET_COUNTS; k++)
		order[n++] = k;
	return n;
}

static const struct sl_link_fit *with_counts(const struct sl_network *net, int sz, int sg, int sc,
					    int rz, int rg, int rc, int *exact)
{
	int so[SL_NET_COUNTS], ro[SL_NET_COUNTS];
	count_order(sc, so);
	count_order(rc, ro);
	/* same counts on both sides first (the file's links are mostly count-to-same-count) */
	for (int i = 0; i < SL_NET_COUNTS; i++) {
		const struct sl_link_fit *f = measured(net, sz, sg, so[i], rz, rg, ro[i]);
		if (f) {
			*exact = (i == 0);
			return f;
		}
	}
	for (int i = 0; i < SL_NET_COUNTS; i++)
		for (int j = 0; j < SL_NET_COUNTS; j++) {
			const struct sl_link_fit *f = measured(net, sz, sg, so[i], rz, rg, ro[j]);
			if (f) {
				*exact = 0;
				return f;
			}
		}
	return NULL;
}

static const struct sl_link_fit *slower(const struct sl_link_fit *a, const struct sl_link_fit *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return b->max_bps < a->max_bps ? b : a;
}

/* Slowest measured link between two different measured zones (either direction), or over all
 * zone pairs when za < 0. Computed once per zone pair at load time. Zone arguments of the
 * functions from here to resolve() are indices of measured zones (M). */
static const struct sl_link_fit *slowest_between(const struct sl_network *net, int za, int zb)
{
	const struct sl_link_fit *best = NULL;
	for (int sz = 0; sz < net->mzones; sz++)
		for (int rz = 0; rz < net->mzones; rz++) {
			if (sz == rz)
				continue;
			if (za >= 0 && !((sz == za && rz == zb) || (sz == zb && rz == za)))
				continue;
			for (int sg = 0; sg < net->gpus; sg++)
				for (int sc = 0; sc < SL_NET_COUNTS; sc++)
					for (int rg = 0; rg < net->gpus; rg++)
						for (int rc = 0; rc < SL_NET_COUNTS; rc++)
							best = slower(best, measured(net, sz, sg, sc, rz, rg, rc));
		}
	return best;
}

/* Same-zone link of these types in zone z, or in any zone that measured it. */
static const struct sl_link_fit *same_zone(const struct sl_network *net, int z, int sg, int sc,
					  int rg, int rc)
{
	int exact;
	const struct sl_link_fit *f = with_counts(net, z, sg, sc, z, rg, rc, &exact);
	if (f)
		return f;
	if (sg != rg) {
		f = slower(with_counts(net, z, sg, sc, z, sg, sc, &exact),
			   with_counts(net, z, rg, rc, z, rg, rc, &exact));
		if (f)
			return f;
	}
	for (int other = 0; other < net->mzones; other++) {
		f = with_counts(net, other, sg, sc, other, rg, rc, &exact);
		if (!f && sg != rg)
			f = slower(with_counts(net, other, sg, sc, other, sg, sc, &exact),
				   with_counts(net, other, rg, rc, other, rg, rc, &exact));
		if (f)
			return f;
	}
	return NULL;
}

static struct sl_link_fit resolve(const struct sl_network *net, int sz, int sg0, int sc, int rz,
				 int rg0, int rc)
{
	int sg = net->stand_in[sg0], rg = net->stand_in[rg0];
	int exact = 0;
	const struct sl_link_fit *f = with_counts(net, sz, sg, sc, rz, rg, rc, &exact);
	struct sl_link_fit out;
	if (f) {
		out = *f;
		out.derived = !(exact && sg == sg0 && rg == rg0);
		return out;
	}
	if (sg != rg)
		f = slower(with_counts(net, sz, sg, sc, rz, sg, sc, &exact),
			   with_counts(net, sz, rg, rc, rz, rg, rc, &exact));
	if (!f && sz != rz) {
		const struct sl_link_fit *wan = net->wan[sz * net->mzones + rz] ? net->wan[sz * net->mzones + rz]
									   : net->wan_any;
		f = slower(same_zone(net, sz, sg, sc, rg, rc), wan);
	}
	if (!f)
		f = same_zone(net, sz, sg, sc, rg, rc);
	if (!f)
		f = net->wan_any;
	if (f) {
		out = *f;
	} else { /* the file measured nothing usable: 1 GB/s flat, flagged */
		memset(&out, 0, sizeof(out));
		out.a0 = 1.0;
		out.max_bps = 1e9;
		out.source = SL_LINK_SOURCE_SOSP25_FIT;
	}
	out.derived = 1;
	return out;
}

int sl_network_parse_fit(const json_t *v, const char *ctx, struct sl_link_fit *out,
			 struct sl_err *err)
{
	json_t *coeffs = json_array_get(v, 0), *maxv = json_array_get(v, 1);
	if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_array(coeffs) ||
	    json_array_size(coeffs) != 3 || !json_is_number(maxv))
		return sl_err_set(err, SL_EINPUT, "%s: expected [[a2, a1, a0], max_bytes_per_s]", ctx);
	double c[3];
	for (int i = 0; i < 3; i++) {
		json_t *x = json_array_get(coeffs, (size_t)i);
		if (!json_is_number(x))
			return sl_err_set(err, SL_EINPUT, "%s[0][%d]: expected a number", ctx, i);
		c[i] = json_number_value(x);
		/* GB/s against log2(MB): real fits have |c| < 100; a denormal is no measurement */
		if (fabs(c[i]) > SL_MAX_FIT_COEFF || (c[i] != 0 && fabs(c[i]) < SL_MIN_FIT_COEFF))
			return sl_err_set(err, SL_EINPUT, "%s[0][%d]: %g is out of range: give 0 or "
					  "%g to %g in absolute value", ctx, i, c[i], SL_MIN_FIT_COEFF,
					  SL_MAX_FIT_COEFF);
	}
	out->a2 = c[0];
	out->a1 = c[1];
	out->a0 = c[2];
	out->max_bps = json_number_value(maxv);
	out->derived = 0;
	out->latency_s = 0;
	out->source = SL_LINK_SOURCE_SOSP25_FIT;
	if (out->max_bps < 0 || out->max_bps > SL_MAX_BANDWIDTH_BPS)
		return sl_err_set(err, SL_EINPUT, "%s[1]: %g is out of range: give 0 to %g bytes/s",
				  ctx, out->max_bps, SL_MAX_BANDWIDTH_BPS);
	return 0;
}

/* Reads the fits of root (zone_bandwidths.json's form; keys that are not zones are skipped). */
int sl_network_links_from_json(struct sl_network *net, json_t *root, const char *path,
			       int source, struct sl_err *err)
{
	const struct sl_catalogue *cat = net->cat;
	int rc = 0;
	const char *szn, *sgn, *scn, *rzn, *rgn, *rcn;
	json_t *a, *b, *c, *d, *e, *v;
	if (!json_is_object(root))
		rc = sl_err_set(err, SL_EINPUT, "top level: expected an object");
	json_object_foreach(root, szn, a)
	{
		int sz = sl_catalogue_zone_index(cat, szn);
		sz = sz < 0 ? -1 : net->mzone_of[sz];
		if (rc || sz < 0 || !json_is_object(a))
			continue;
		json_object_foreach(a, sgn, b)
		{
			int sg = sl_catalogue_gpu_index(cat, sgn);
			if (rc || sg < 0 || !json_is_object(b))
				continue;
			json_object_foreach(b, scn, c)
			{
				int sc = count_index_exact(scn);
				if (rc || sc < 0 || !json_is_object(c))
					continue;
				json_object_foreach(c, rzn, d)
				{
					int rz = sl_catalogue_zone_index(cat, rzn);
					rz = rz < 0 ? -1 : net->mzone_of[rz];
					if (rc || rz < 0 || !json_is_object(d))
						continue;
					json_object_foreach(d, rgn, e)
					{
						int rg = sl_catalogue_gpu_index(cat, rgn);
						if (rc || rg < 0 || !json_is_object(e))
							continue;
						json_object_foreach(e, rcn, v)
						{
							int rcount = count_index_exact(rcn);
							if (rc || rcount < 0)
								continue;
							char ctx[256];
							snprintf(ctx, sizeof(ctx), "%s.%s.%s.%s.%s.%s", szn, sgn,
								 scn, rzn, rgn, rcn);
							size_t i = link_index(net, sz, sg, sc, rz,
									      rg, rcount);
							struct sl_link_fit *to = &net->measured[i];
							net->measured_present[i] = 1;
							rc = sl_network_parse_fit(v, ctx, to, err);
							to->source = source;
							net->gpu_measured[sg] = net->gpu_measured[rg] = 1;
						}
					}
				}
			}
		}
	}
	if (rc)
		sl_err_prefix(err, "network fits '%s'", path);
	return rc;
}

int sl_network_intra_from_json(struct sl_network *net, json_t *root, const char *path,
			       struct sl_err *err)
{
	const struct sl_catalogue *cat = net->cat;
	int rc = 0;
	const char *gn, *cn;
	json_t *a, *v;
	json_object_foreach(root, gn, a)
	{
		int g = sl_catalogue_gpu_index(cat, gn);
		if (rc || g < 0 || !json_is_object(a))
			continue;
		json_object_foreach(a, cn, v)
		{
			int ci = count_index_exact(cn);
			if (rc || ci < 0)
				continue;
			char ctx[128];
			snprintf(ctx, sizeof(ctx), "%s.%s", gn, cn);
			rc = sl_network_parse_fit(v, ctx, &net->intra[g][ci], err);
			net->intra_present[g][ci] = 1;
		}
	}
	if (rc)
		sl_err_prefix(err, "intra-node fits '%s'", path);
	return rc;
}

/* Marks the zones the keys of a fits file name (its senders and their receivers) as measured. */
static void mark_zones(const struct sl_catalogue *cat, json_t *root, char *in_m)
{
	const char *szn, *sgn, *scn, *rzn;
	json_t *a, *b, *c, *d;
	json_object_foreach(root, szn, a)
	{
		int sz = sl_catalogue_zone_index(cat, szn);
		if (sz >= 0)
			in_m[sz] = 1;
		if (!json_is_object(a))
			continue;
		json_object_foreach(a, sgn, b)
		{
			if (!json_is_object(b))
				continue;
			json_object_foreach(b, scn, c)
			{
				if (!json_is_object(c))
					continue;
				json_object_foreach(c, rzn, d)
				{
					int rz = sl_catalogue_zone_index(cat, rzn);
					if (rz >= 0)
						in_m[rz] = 1;
				}
			}
		}
	}
}

/* The measured zones: those the shipped fits and the overlay name, in catalogue order. */
static int measured_zones(struct sl_network *net, json_t *shipped, json_t *overlay)
{
	char *in_m = calloc((size_t)net->zones, 1);
	net->mzone = calloc((size_t)net->zones + 1, sizeof(int));
	net->mzone_of = calloc((size_t)net->zones + 1, sizeof(int));
	if (!in_m || !net->mzone || !net->mzone_of) {
		free(in_m);
		return SL_ENOMEM;
	}
	mark_zones(net->cat, shipped, in_m);
	if (overlay)
		mark_zones(net->cat, overlay, in_m);
	net->mzones = 0;
	for (int z = 0; z < net->zones; z++) {
		net->mzone_of[z] = in_m[z] ? net->mzones : -1;
		if (in_m[z])
			net->mzone[net->mzones++] = z;
	}
	free(in_m);
	return 0;
}

/* The class model's reference (link_model.h): per count, the mean of the measured fits of the
 * reference GPU type between the zones of the reference regions, both ways, at exactly that
 * count; a count without one takes the nearest below. Only the shipped fits count. */
static void reference_fits(struct sl_network *net)
{
	const char *gpu_name, *ra, *rb;
	sl_link_model_reference(net->model, &gpu_name, &ra, &rb);
	int g = sl_catalogue_gpu_index(net->cat, gpu_name);
	for (int ci = 0; ci < SL_NET_COUNTS && g >= 0; ci++) {
		struct sl_link_fit sum = {0};
		int n = 0;
		for (int i = 0; i < net->mzones; i++)
			for (int j = 0; j < net->mzones; j++) {
				const char *x = sl_catalogue_zone_region_info(net->cat, net->mzone[i])->name;
				const char *y = sl_catalogue_zone_region_info(net->cat, net->mzone[j])->name;
				if (!((!strcmp(x, ra) && !strcmp(y, rb)) || (!strcmp(x, rb) && !strcmp(y, ra))))
					continue;
				const struct sl_link_fit *f = measured(net, i, g, ci, j, g, ci);
				if (!f)
					continue;
				sum.a2 += f->a2, sum.a1 += f->a1, sum.a0 += f->a0, sum.max_bps += f->max_bps;
				n++;
			}
		if (n > 0) {
			net->reference[ci] = (struct sl_link_fit){sum.a2 / n, sum.a1 / n, sum.a0 / n,
								  sum.max_bps / n, 1, 0,
								  SL_LINK_SOURCE_SOSP25_FIT};
		} else if (ci > 0) {
			net->reference[ci] = net->reference[ci - 1];
		} else {
			return;
		}
	}
	net->have_reference = g >= 0;
}

/* Loads the shipped fits (and the overlay's) into the measured table. */
static int load_fits(struct sl_network *net, const char *data_dir, struct sl_err *err)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/network/zone_bandwidths.json", data_dir);
	json_t *shipped = sl_json_load_file(path, "network fits", err);
	if (!shipped)
		return err ? err->code : SL_EINPUT;
	int rc = 0;
	json_t *overlay = sl_network_overlay_open(err, &rc);
	if (!rc && !json_is_object(shipped))
		rc = sl_err_set(err, SL_EINPUT, "network fits '%s': top level: expected an object",
				path);
	if (!rc && measured_zones(net, shipped, overlay))
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	size_t ends = (size_t)net->mzones * (size_t)net->gpus * SL_NET_COUNTS;
	if (!rc) {
		net->measured = calloc(ends * ends + 1, sizeof(*net->measured));
		net->measured_present = calloc(ends * ends + 1, 1);
		net->wan = calloc((size_t)net->mzones * (size_t)net->mzones + 1, sizeof(*net->wan));
		if (!net->measured || !net->measured_present || !net->wan)
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	if (!rc)
		rc = sl_network_links_from_json(net, shipped, path, SL_LINK_SOURCE_SOSP25_FIT, err);
	if (!rc)
		reference_fits(net);
	if (!rc) {
		snprintf(path, sizeof(path), "%s/network/intra_node_bandwidths.json", data_dir);
		json_t *intra = sl_json_load_file(path, "intra-node fits", err);
		rc = intra ? sl_network_intra_from_json(net, intra, path, err)
			   : (err ? err->code : SL_EINPUT);
		json_decref(intra);
	}
	if (!rc && overlay)
		rc = sl_network_overlay_apply(net, overlay, err);
	json_decref(shipped);
	json_decref(overlay);
	return rc;
}

/* What follows the fits: stand-in types, intra-node stand-ins, the slowest inter-zone links. */
static void settle(struct sl_network *net)
{
	const struct sl_catalogue *cat = net->cat;
	for (int g = 0; g < net->gpus; g++) {
		int alt = cat->gpus[g].network_as;
		net->stand_in[g] = (!net->gpu_measured[g] && alt >= 0 && net->gpu_measured[alt]) ? alt : g;
	}
	/* intra-node stand-ins: nearest count, then the stand-in GPU type */
	for (int g = 0; g < net->gpus; g++)
		for (int ci = 0; ci < SL_NET_COUNTS; ci++) {
			if (net->intra_present[g][ci])
				continue;
			int order[SL_NET_COUNTS], found = 0;
			count_order(ci, order);
			for (int pass = 0; pass < 2 && !found; pass++) {
				int gg = pass ? cat->gpus[g].network_as : g;
				for (int k = 0; k < SL_NET_COUNTS && !found; k++)
					if (net->intra_present[gg][order[k]]) {
						net->intra[g][ci] = net->intra[gg][order[k]];
						net->intra[g][ci].derived = 1;
						found = 1;
					}
			}
			if (!found) { /* nothing measured: NVLink-less PCIe-class 10 GB/s, flagged */
				net->intra[g][ci] = (struct sl_link_fit){0, 0, 10.0, 1e10, 1, 0, SL_LINK_SOURCE_SOSP25_FIT};
			}
		}
	for (int za = 0; za < net->mzones; za++)
		for (int zb = 0; zb < net->mzones; zb++)
			net->wan[za * net->mzones + zb] = za == zb ? NULL : slowest_between(net, za, zb);
	net->wan_any = slowest_between(net, -1, -1);
}

int sl_network_load(const char *data_dir, const struct sl_catalogue *cat,
		    struct sl_network **out, struct sl_err *err)
{
	if (!data_dir)
		data_dir = sl_paths_data_dir();
	*out = NULL;
	struct sl_network *net = calloc(1, sizeof(*net));
	if (!net || !(net->cat = malloc(sizeof(*net->cat)))) {
		free(net);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	memcpy(net->cat, cat, sizeof(*cat));
	pthread_mutex_init(&net->lock, NULL);
	net->zones = cat->zone_count;
	net->gpus = cat->gpu_count;
	net->rows = calloc((size_t)net->zones + 1, sizeof(*net->rows));
	int rc = net->rows ? 0 : sl_err_set(err, SL_ENOMEM, "out of memory");
	if (!rc)
		rc = sl_link_model_load(data_dir, cat, &net->model, err);
	if (!rc)
		rc = sl_egress_load(data_dir, cat, &net->egress, err);
	if (!rc)
		rc = load_fits(net, data_dir, err);
	if (rc) {
		sl_network_free(net);
		return rc;
	}
	settle(net);
	*out = net;
	return 0;
}

void sl_network_free(struct sl_network *net)
{
	if (!net)
		return;
	for (int za = 0; net->rows && za < net->zones; za++) {
		_Atomic(struct pair_block *) *row = atomic_load(&net->rows[za]);
		for (int zb = 0; row && zb < net->zones; zb++)
			free(atomic_load(&row[zb]));
		free((void *)row);
	}
	free((void *)net->rows);
	pthread_mutex_destroy(&net->lock);
	sl_link_model_free(net->model);
	sl_egress_free(net->egress);
	free(net->mzone);
	free(net->mzone_of);
	free(net->measured);
	free(net->measured_present);
	free((void *)net->wan);
	free(net->cat);
	free(net);
}
/* ---- zone pairs: resolved when first asked for ---- */

/* The same-zone link of these (stand-in) types, as any measured zone measured it: rule 5. */
static struct sl_link_fit any_same_zone(const struct sl_network *net, int sg, int sc, int rg,
					int rc)
{
	for (int m = 0; m < net->mzones; m++) {
		const struct sl_link_fit *f = same_zone(net, m, sg, sc, rg, rc);
		if (f)
			return *f;
	}
	return (struct sl_link_fit){0, 0, 1.0, 1e9, 1, 0, SL_LINK_SOURCE_SOSP25_FIT};
}

/* Two zones of one region neither of which was measured: the types' link between the first two
 * measured zones of one region (rule 6), else their same-zone link. */
static struct sl_link_fit same_region(const struct sl_network *net, int sg0, int sc, int rg0,
				      int rc)
{
	for (int i = 0; i < net->mzones; i++)
		for (int j = 0; j < net->mzones; j++)
			if (i != j && net->cat->zones[net->mzone[i]].region ==
					      net->cat->zones[net->mzone[j]].region)
				return resolve(net, i, sg0, sc, j, rg0, rc);
	return any_same_zone(net, net->stand_in[sg0], sc, net->stand_in[rg0], rc);
}

/* The slower of a path's fit and the types' same-zone link, with the path's latency and source:
 * a node's own network caps what any path can carry. */
static struct sl_link_fit capped(const struct sl_network *net, struct sl_link_fit path, int sg0,
				 int sc, int rg0, int rc)
{
	struct sl_link_fit node = any_same_zone(net, net->stand_in[sg0], sc, net->stand_in[rg0], rc);
	struct sl_link_fit out = node.max_bps < path.max_bps ? node : path;
	out.latency_s = path.latency_s;
	out.source = path.source;
	out.derived = 1;
	return out;
}

/* One link of the pair (za, zb), catalogue zones: the rules of network.h in order. */
static struct sl_link_fit resolve_any(const struct sl_network *net, int za, int sg, int sc, int zb,
				      int rg, int rc)
{
	int ma = net->mzone_of[za], mb = net->mzone_of[zb];
	struct sl_link_fit user;
	int has_user = sl_link_model_user_link(net->model, net->cat, za, zb, &user, NULL);
	if (ma >= 0 && mb >= 0) {
		struct sl_link_fit f = resolve(net, ma, sg, sc, mb, rg, rc);
		/* a link measured exactly with `sailor profile --network` beats the user's word */
		if (!has_user || (f.source == SL_LINK_SOURCE_PROFILED && !f.derived))
			return f;
	}
	if (has_user) {
		user.source = SL_LINK_SOURCE_ZONES_FILE;
		return capped(net, user, sg, sc, rg, rc);
	}
	enum sl_link_class c = sl_link_model_class_of(net->cat, za, zb);
	struct sl_link_fit out;
	if (c == SL_LINK_CLASS_SAME_ZONE) {
		out = any_same_zone(net, net->stand_in[sg], sc, net->stand_in[rg], rc);
	} else if (c == SL_LINK_CLASS_SAME_REGION) {
		out = same_region(net, sg, sc, rg, rc);
	} else {
		struct sl_link_fit ref = net->have_reference
						 ? net->reference[sc < rc ? sc : rc]
						 : (struct sl_link_fit){0, 0, 1.0, 1e9, 1, 0, 0};
		sl_link_model_class_fit(net->model, net->cat, za, zb, &ref, &out);
		out = capped(net, out, sg, sc, rg, rc);
	}
	out.source = SL_LINK_SOURCE_MODEL + (int)c;
	out.derived = 1;
	return out;
}

static struct pair_block *build_block(const struct sl_network *net, int za, int zb)
{
	size_t ends = (size_t)net->gpus * SL_NET_COUNTS;
	struct pair_block *b = malloc(sizeof(*b) + ends * ends * sizeof(b->fits[0]));
	if (!b)
		return NULL;
	for (int sg = 0; sg < net->gpus; sg++)
		for (int sc = 0; sc < SL_NET_COUNTS; sc++)
			for (int rg = 0; rg < net->gpus; rg++)
				for (int rc = 0; rc < SL_NET_COUNTS; rc++)
					b->fits[((size_t)sg * SL_NET_COUNTS + (size_t)sc) * ends +
						(size_t)rg * SL_NET_COUNTS + (size_t)rc] =
						resolve_any(net, za, sg, sc, zb, rg, rc);
	b->egress_usd_per_gb = sl_egress_usd_per_gb(net->egress, net->cat, za, zb,
						    b->egress_source, sizeof(b->egress_source));
	return b;
}

/* The block of (za, zb), built under the lock the first time (a cache: the table is logically
 * const). Out of memory here has no caller to tell: it ends the process with a message. */
static const struct pair_block *pair(const struct sl_network *net, int za, int zb)
{
	struct sl_network *n = (struct sl_network *)net;
	_Atomic(struct pair_block *) *row = atomic_load_explicit(&n->rows[za], memory_order_acquire);
	struct pair_block *b = row ? atomic_load_explicit(&row[zb], memory_order_acquire) : NULL;
	if (b)
		return b;
	pthread_mutex_lock(&n->lock);
	row = atomic_load_explicit(&n->rows[za], memory_order_relaxed);
	if (!row) {
		row = calloc((size_t)n->zones, sizeof(*row));
		if (row)
			atomic_store_explicit(&n->rows[za], row, memory_order_release);
	}
	b = row ? atomic_load_explicit(&row[zb], memory_order_relaxed) : NULL;
	if (row && !b) {
		b = build_block(n, za, zb);
		if (b)
			atomic_store_explicit(&row[zb], b, memory_order_release);
	}
	pthread_mutex_unlock(&n->lock);
	if (!b) {
		sl_log_warn("out of memory for the links between zones %s and %s",
			     net->cat->zones[za].name, net->cat->zones[zb].name);
		abort();
	}
	return b;
}

const struct sl_link_fit *sl_network_fit(const struct sl_network *net, int src_zone, int src_gpu,
					int src_count, int dst_zone, int dst_gpu, int dst_count)
{
	size_t ends = (size_t)net->gpus * SL_NET_COUNTS;
	const struct pair_block *b = pair(net, src_zone, dst_zone);
	return &b->fits[((size_t)src_gpu * SL_NET_COUNTS + (size_t)sl_link_count_index(src_count)) *
				ends +
			(size_t)dst_gpu * SL_NET_COUNTS + (size_t)sl_link_count_index(dst_count)];
}

const struct sl_link_fit *sl_network_intra_fit(const struct sl_network *net, int gpu, int count)
{
	return &net->intra[gpu][sl_link_count_index(count < 2 ? 2 : count)];
}

double sl_network_egress_usd_per_gb(const struct sl_network *net, int src_zone, int dst_zone)
{
	return pair(net, src_zone, dst_zone)->egress_usd_per_gb;
}

const char *sl_network_egress_source(const struct sl_network *net, int src_zone, int dst_zone)
{
	return pair(net, src_zone, dst_zone)->egress_source;
}

const char *sl_network_link_origin(const struct sl_network *net, int src_zone, int dst_zone)
{
	struct sl_link_fit f;
	const char *origin = NULL;
	return sl_link_model_user_link(net->model, net->cat, src_zone, dst_zone, &f, &origin) ? origin
													       : NULL;
}

const char *sl_network_source_name(const struct sl_link_fit *fit)
{
	static const char *const classes[SL_LINK_CLASSES] = {
		"class same-zone",
		"class same-region",
		"class same-continent",
		"class across-continents",
		"class across-providers-same-continent",
		"class across-providers-across-continents"};
	if (fit->source >= SL_LINK_SOURCE_MODEL && fit->source < SL_LINK_SOURCE_MODEL + SL_LINK_CLASSES)
		return classes[fit->source - SL_LINK_SOURCE_MODEL];
	switch (fit->source) {
	case SL_LINK_SOURCE_SOSP25_FIT:
		return fit->derived ? "SOSP'25 fit (stand-in)" : "SOSP'25 fit";
	case SL_LINK_SOURCE_PROFILED:
		return fit->derived ? "profiled (--network, stand-in)" : "profiled (--network)";
	case SL_LINK_SOURCE_ZONES_FILE:
		return "zones file";
	}
	return "?";
}

static double fit_at(const struct sl_link_fit *fit, double x)
{
	return fit->a2 * x * x + fit->a1 * x + fit->a0;
}

double sl_link_fit_gbps(const struct sl_link_fit *fit, double bytes)
{
	return fit_at(fit, log2(bytes / 1e6));
}

double sl_link_fit_gbps_positive_at(const struct sl_link_fit *fit, double log2_mb)
{
	double gbps = fit_at(fit, log2_mb);
	if (!(gbps > 0))
		gbps = fit->a0 > 0 ? fit->a0 : 1.0;
	return gbps;
}

double sl_link_fit_gbps_positive(const struct sl_link_fit *fit, double bytes)
{
	return sl_link_fit_gbps_positive_at(fit, log2(bytes / 1e6));
}

double sl_link_send_time_s(const struct sl_link_fit *fit, double bytes)
{
	if (bytes <= 0)
		return 0.0;
	double gbps = sl_link_fit_gbps(fit, bytes);
	if (!(gbps > 0)) {
		gbps = fit->a0 > 0 ? fit->a0 : fit->max_bps / 1e9;
		if (!(gbps > 0))
			gbps = 1.0;
	}
	return fit->latency_s + (bytes / 1e9) / gbps;
}
