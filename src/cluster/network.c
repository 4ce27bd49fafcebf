/* Network fits and egress prices (see network.h). At load time every (zone, GPU, count) pair of
 * endpoints is resolved to a fit, measured or stand-in, so lookups are table reads.
 * Invariants: net->links has (Z·G·C)² resolved entries; egress has Z² prices. */
#include "cluster/network.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/limits.h"
#include "util/paths.h"

struct sl_network {
	int zones, gpus;
	struct sl_link_fit *measured;   /* [end(src)][end(dst)], max_bps < 0 = absent */
	struct sl_link_fit *links;      /* resolved */
	struct sl_link_fit intra[SL_MAX_GPU_TYPES][SL_NET_COUNTS];
	int intra_present[SL_MAX_GPU_TYPES][SL_NET_COUNTS];
	double *egress;                /* [src zone][dst zone], USD per GB */
	int gpu_measured[SL_MAX_GPU_TYPES]; /* the file has some link for this GPU type */
	int stand_in[SL_MAX_GPU_TYPES];
	const struct sl_link_fit *wan[SL_MAX_ZONES][SL_MAX_ZONES]; /* slowest measured, either way */
	const struct sl_link_fit *wan_any;                          /* slowest inter-zone overall */
	/* two-rank all-reduce fits measured by `sailor profile --network` (overlay only) */
	struct measured_allreduce {
		int za, ga, zb, gb, same_host;
		struct sl_link_fit fit;
		double burst_bytes; /* the pair's burst probe (0: none) */
		double whole_message_bytes; /* the pair's eager probe (0: none) */
		double largest_bytes; /* the largest size the fit was measured at (0: not known) */
		/* the pair's message probe: CPU per message at each end (sizes 0: none), and the
		 * pair's fastest point-to-point rate (its waits' test counts go with it) */
		int message_sizes;
		double p2p_max_bps;
		double message_bytes[SL_NET_MESSAGE_CPU_SIZES];
		double message_cpu_s[2][SL_NET_MESSAGE_CPU_SIZES]; /* [sender, receiver] */
	} allreduce[SL_NET_MAX_ALLREDUCE];
	int allreduce_count;
};

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

static size_t end_index(const struct sl_network *net, int zone, int gpu, int ci)
{
	return ((size_t)zone * (size_t)net->gpus + (size_t)gpu) * SL_NET_COUNTS + (size_t)ci;
}

static size_t link_index(const struct sl_network *net, int sz, int sg, int sc, int rz, int rg, int rc)
{
	size_t ends = (size_t)net->zones * (size_t)net->gpus * SL_NET_COUNTS;
	return end_index(net, sz, sg, sc) * ends + end_index(net, rz, rg, rc);
}

static const struct sl_link_fit *measured(const struct sl_network *net, int sz, int sg, int sc,
					 int rz, int rg, int rc)
{
	const struct sl_link_fit *f = &net->measured[link_index(net, sz, sg, sc, rz, rg, rc)];
	return f->max_bps >= 0 ? f : NULL;
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

/* Slowest measured link between two different zones (either direction), or over all zone pairs
 * when za < 0. Computed once per zone pair at load time. */
static const struct sl_link_fit *slowest_between(const struct sl_network *net, int za, int zb)
{
	const struct sl_link_fit *best = NULL;
	for (int sz = 0; sz < net->zones; sz++)
		for (int rz = 0; rz < net->zones; rz++) {
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
	for (int other = 0; other < net->zones; other++) {
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
		const struct sl_link_fit *wan = net->wan[sz][rz] ? net->wan[sz][rz] : net->wan_any;
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
	}
	out.derived = 1;
	return out;
}

static int parse_fit(const json_t *v, const char *ctx, struct sl_link_fit *out, struct sl_err *err)
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
	if (out->max_bps < 0 || out->max_bps > SL_MAX_BANDWIDTH_BPS)
		return sl_err_set(err, SL_EINPUT, "%s[1]: %g is out of range: give 0 to %g bytes/s",
				  ctx, out->max_bps, SL_MAX_BANDWIDTH_BPS);
	return 0;
}

static int links_from_json(struct sl_network *net, json_t *root, const char *path,
			   const struct sl_catalogue *cat, struct sl_err *err);

static int load_links(struct sl_network *net, const char *path, const struct sl_catalogue *cat,
		      struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "network fits", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc = links_from_json(net, root, path, cat, err);
	json_decref(root);
	return rc;
}

/* Reads the fits of root (zone_bandwidths.json's form; keys that are not zones are skipped). */
static int links_from_json(struct sl_network *net, json_t *root, const char *path,
			   const struct sl_catalogue *cat, struct sl_err *err)
{
	int rc = 0;
	const char *szn, *sgn, *scn, *rzn, *rgn, *rcn;
	json_t *a, *b, *c, *d, *e, *v;
	if (!json_is_object(root))
		rc = sl_err_set(err, SL_EINPUT, "top level: expected an object");
	json_object_foreach(root, szn, a)
	{
		int sz = sl_catalogue_zone_index(cat, szn);
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
							rc = parse_fit(v, ctx, &net->measured[link_index(
										       net, sz, sg, sc, rz, rg, rcount)],
								       err);
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

static int intra_from_json(struct sl_network *net, json_t *root, const char *path,
			   const struct sl_catalogue *cat, struct sl_err *err);

static int load_intra(struct sl_network *net, const char *path, const struct sl_catalogue *cat,
		      struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "intra-node fits", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc = intra_from_json(net, root, path, cat, err);
	json_decref(root);
	return rc;
}

static int intra_from_json(struct sl_network *net, json_t *root, const char *path,
			   const struct sl_catalogue *cat, struct sl_err *err)
{
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
			rc = parse_fit(v, ctx, &net->intra[g][ci], err);
			net->intra_present[g][ci] = 1;
		}
	}
	if (rc)
		sl_err_prefix(err, "intra-node fits '%s'", path);
	return rc;
}

static int load_egress(struct sl_network *net, const char *path, const struct sl_catalogue *cat,
		       struct sl_err *err)
{
	json_t *root = sl_json_load_file(path, "egress prices", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc = 0;
	for (int s = 0; !rc && s < cat->zone_count; s++) {
		json_t *row = NULL;
		rc = sl_json_get_object(root, "", cat->zones[s].name, &row, err);
		for (int d = 0; !rc && d < cat->zone_count; d++) {
			double price = 0;
			rc = sl_json_get_number(row, cat->zones[s].name, cat->zones[d].name, &price, err);
			if (!rc && (price < 0 || price > SL_MAX_USD_PER_GB))
				rc = sl_err_set(err, SL_EINPUT, "%s.%s: %g is out of range: give 0 to "
						"%g $/GB", cat->zones[s].name, cat->zones[d].name,
						price, SL_MAX_USD_PER_GB);
			net->egress[s * cat->zone_count + d] = price;
		}
	}
	json_decref(root);
	if (rc)
		sl_err_prefix(err, "egress prices '%s'", path);
	return rc;
}

static char overlay_path[4096];

/* A pair's message probe (source.pairs[i].message_cpu, netprof.h): optional, as files from before
 * it have none, but never guessed: sizes ascending, CPU from 0 to 1 s, one per size. */
static int message_cpu_from_json(struct measured_allreduce *m, const json_t *pr, size_t i,
				 struct sl_err *err)
{
	const json_t *mc = json_object_get(pr, "message_cpu");
	m->message_sizes = 0;
	if (!mc)
		return 0;
	const json_t *bytes = json_object_get(mc, "bytes");
	const json_t *side[2] = {json_object_get(mc, "sender_s"), json_object_get(mc, "receiver_s")};
	size_t n = json_array_size(bytes);
	int ok = json_is_object(mc) && n >= 1 && n <= SL_NET_MESSAGE_CPU_SIZES &&
		 json_array_size(side[0]) == n && json_array_size(side[1]) == n;
	for (size_t k = 0; ok && k < n; k++) {
		const json_t *b = json_array_get(bytes, k);
		m->message_bytes[k] = json_is_number(b) ? json_number_value(b) : -1;
		ok = m->message_bytes[k] > (k ? m->message_bytes[k - 1] : 0) &&
		     m->message_bytes[k] <= 1e12;
		for (int e = 0; e < 2 && ok; e++) {
			const json_t *c = json_array_get(side[e], k);
			m->message_cpu_s[e][k] = json_is_number(c) ? json_number_value(c) : -1;
			ok = m->message_cpu_s[e][k] >= 0 && m->message_cpu_s[e][k] <= 1;
		}
	}
	if (!ok)
		return sl_err_set(err, SL_EINPUT, "--network '%s': source.pairs[%zu].message_cpu: "
				  "expected \"bytes\" (1 to %d sizes, ascending) and \"sender_s\" "
				  "and \"receiver_s\" (seconds from 0 to 1, one per size), as `sailor "
				  "profile --network` writes them; remove it or profile the network again",
				  overlay_path, i, SL_NET_MESSAGE_CPU_SIZES);
	m->message_sizes = (int)n;
	const json_t *rates = json_object_get(pr, "p2p_bps");
	m->p2p_max_bps = 0;
	for (size_t k = 0; k < json_array_size(rates); k++)
		m->p2p_max_bps = fmax(m->p2p_max_bps, json_number_value(json_array_get(rates, k)));
	return 0;
}

/* The overlay's links and intra-node fits over the shipped ones (sl_network_set_overlay). */
static int load_overlay(struct sl_network *net, const struct sl_catalogue *cat, struct sl_err *err)
{
	json_t *root = sl_json_load_file(overlay_path, "network fits", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	int rc = 0;
	const char *schema = json_string_value(json_object_get(root, "schema"));
	if (!schema || strcmp(schema, SL_NETWORK_SCHEMA))
		rc = sl_err_set(err, SL_EINPUT, "--network '%s': schema: expected \"%s\" (a file "
				"written by `sailor profile --network`)", overlay_path, SL_NETWORK_SCHEMA);
	if (!rc)
		rc = links_from_json(net, root, overlay_path, cat, err);
	/* the all-reduce fits of the measured pairs (source.pairs[], netprof.h) */
	json_t *pairs = json_object_get(json_object_get(root, "source"), "pairs");
	for (size_t i = 0; !rc && json_is_array(pairs) && i < json_array_size(pairs); i++) {
		json_t *pr = json_array_get(pairs, i);
		const char *kind = json_string_value(json_object_get(pr, "kind"));
		int za = sl_catalogue_zone_index(cat, json_string_value(json_object_get(pr, "sender_zone")) ?: "");
		int ga = sl_catalogue_gpu_index(cat, json_string_value(json_object_get(pr, "sender_gpu")) ?: "");
		int zb = sl_catalogue_zone_index(cat, json_string_value(json_object_get(pr, "receiver_zone")) ?: "");
		int gb = sl_catalogue_gpu_index(cat, json_string_value(json_object_get(pr, "receiver_gpu")) ?: "");
		json_t *fit = json_object_get(pr, "allreduce_fit");
		if (!kind || za < 0 || ga < 0 || zb < 0 || gb < 0 || !fit ||
		    net->allreduce_count == SL_NET_MAX_ALLREDUCE)
			continue;
		char ctx[64];
		snprintf(ctx, sizeof(ctx), "source.pairs[%zu].allreduce_fit", i);
		struct measured_allreduce *m = &net->allreduce[net->allreduce_count];
		rc = parse_fit(fit, ctx, &m->fit, err);
		if (rc) {
			sl_err_prefix(err, "--network '%s'", overlay_path);
			break;
		}
		m->za = za, m->ga = ga, m->zb = zb, m->gb = gb;
		/* the sizes it was measured at: optional (hand-made files), but never guessed */
		m->largest_bytes = 0;
		json_t *sizes = json_object_get(pr, "bytes");
		int sizes_ok = !sizes || (json_is_array(sizes) && json_array_size(sizes) > 0);
		for (size_t k = 0; sizes_ok && k < json_array_size(sizes); k++) {
			json_t *v = json_array_get(sizes, k);
			double b = json_is_number(v) ? json_number_value(v) : -1;
			sizes_ok = b > 0 && b <= 1e12;
			m->largest_bytes = fmax(m->largest_bytes, b);
		}
		if (!sizes_ok) {
			rc = sl_err_set(err, SL_EINPUT,
					"--network '%s': source.pairs[%zu].bytes: expected a list of "
					"message sizes from 1 to 1e12 bytes (what `sailor profile "
					"--network` measured at); remove it or profile the network again",
					overlay_path, i);
			break;
		}
		/* optional (files from before the burst probe have none), but never guessed */
		json_t *burst = json_object_get(pr, "burst_bytes");
		double b = json_is_number(burst) ? json_number_value(burst) : -1;
		if (burst && !(b >= 0 && b <= 1e12)) {
			rc = sl_err_set(err, SL_EINPUT, "--network '%s': source.pairs[%zu].burst_bytes: "
					"expected bytes from 0 to 1e12 (what `sailor profile --network` "
					"measures); remove it or profile the network again",
					overlay_path, i);
			break;
		}
		m->burst_bytes = burst ? b : 0;
		json_t *whole = json_object_get(pr, "whole_message_bytes");
		double w = json_is_number(whole) ? json_number_value(whole) : -1;
		if (whole && !(w >= 0 && w <= 1e12)) {
			rc = sl_err_set(err, SL_EINPUT,
					"--network '%s': source.pairs[%zu].whole_message_bytes: "
					"expected bytes from 0 to 1e12 (what `sailor profile "
					"--network` measures); remove it or profile the network "
					"again",
					overlay_path, i);
			break;
		}
		m->whole_message_bytes = whole ? w : 0;
		m->same_host = !strcmp(kind, "within a host");
		if ((rc = message_cpu_from_json(m, pr, i, err)))
			break;
		net->allreduce_count++;
	}
	json_t *intra = json_object_get(root, "intra_node");
	if (!rc && intra) {
		if (!json_is_object(intra))
			rc = sl_err_set(err, SL_EINPUT, "--network '%s': intra_node: expected an object",
					overlay_path);
		else
			rc = intra_from_json(net, intra, overlay_path, cat, err);
	}
	json_decref(root);
	return rc;
}

int sl_network_set_overlay(const char *path, const struct sl_catalogue *cat, struct sl_err *err)
{
	if (!path || !path[0]) {
		overlay_path[0] = 0;
		return 0;
	}
	if (strlen(path) >= sizeof(overlay_path))
		return sl_err_set(err, SL_EINPUT, "--network: path too long");
	char saved[sizeof(overlay_path)];
	memcpy(saved, overlay_path, sizeof(saved));
	snprintf(overlay_path, sizeof(overlay_path), "%s", path);
	struct sl_network *net = NULL;
	int rc = sl_network_load(NULL, cat, &net, err);
	sl_network_free(net);
	if (rc)
		memcpy(overlay_path, saved, sizeof(saved));
	return rc;
}

int sl_network_load(const char *data_dir, const struct sl_catalogue *cat,
		    struct sl_network **out, struct sl_err *err)
{
	if (!data_dir)
		data_dir = sl_paths_data_dir();
	*out = NULL;
	struct sl_network *net = calloc(1, sizeof(*net));
	if (!net)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	net->zones = cat->zone_count;
	net->gpus = cat->gpu_count;
	size_t ends = (size_t)net->zones * (size_t)net->gpus * SL_NET_COUNTS;
	net->measured = malloc(ends * ends * sizeof(*net->measured));
	net->links = malloc(ends * ends * sizeof(*net->links));
	net->egress = calloc((size_t)net->zones * (size_t)net->zones, sizeof(*net->egress));
	if (!net->measured || !net->links || !net->egress) {
		sl_network_free(net);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < ends * ends; i++)
		net->measured[i].max_bps = -1;
	char path[4096];
	snprintf(path, sizeof(path), "%s/network/zone_bandwidths.json", data_dir);
	int rc = load_links(net, path, cat, err);
	if (!rc) {
		snprintf(path, sizeof(path), "%s/network/intra_node_bandwidths.json", data_dir);
		rc = load_intra(net, path, cat, err);
	}
	if (!rc) {
		snprintf(path, sizeof(path), "%s/network/egress_usd_per_gb.json", data_dir);
		rc = load_egress(net, path, cat, err);
	}
	if (!rc && overlay_path[0])
		rc = load_overlay(net, cat, err);
	if (rc) {
		sl_network_free(net);
		return rc;
	}
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
				net->intra[g][ci] = (struct sl_link_fit){0, 0, 10.0, 1e10, 1};
			}
		}
	for (int za = 0; za < net->zones; za++)
		for (int zb = 0; zb < net->zones; zb++)
			net->wan[za][zb] = za == zb ? NULL : slowest_between(net, za, zb);
	net->wan_any = slowest_between(net, -1, -1);
	for (int sz = 0; sz < net->zones; sz++)
		for (int sg = 0; sg < net->gpus; sg++)
			for (int sc = 0; sc < SL_NET_COUNTS; sc++)
				for (int rz = 0; rz < net->zones; rz++)
					for (int rg = 0; rg < net->gpus; rg++)
						for (int rcn = 0; rcn < SL_NET_COUNTS; rcn++)
							net->links[link_index(net, sz, sg, sc, rz, rg, rcn)] =
								resolve(net, sz, sg, sc, rz, rg, rcn);
	*out = net;
	return 0;
}

void sl_network_free(struct sl_network *net)
{
	if (!net)
		return;
	free(net->measured);
	free(net->links);
	free(net->egress);
	free(net);
}

const struct sl_link_fit *sl_network_fit(const struct sl_network *net, int src_zone, int src_gpu,
					int src_count, int dst_zone, int dst_gpu, int dst_count)
{
	return &net->links[link_index(net, src_zone, src_gpu, sl_link_count_index(src_count), dst_zone,
				      dst_gpu, sl_link_count_index(dst_count))];
}

const struct sl_link_fit *sl_network_intra_fit(const struct sl_network *net, int gpu, int count)
{
	return &net->intra[gpu][sl_link_count_index(count < 2 ? 2 : count)];
}

/* The measured pair between (zone a, type a) and (zone b, type b), either way round, on two hosts
 * or (same_host) one; NULL when the overlay has none. */
static const struct measured_allreduce *measured_pair(const struct sl_network *net, int za, int ga,
						      int zb, int gb, int same_host)
{
	for (int i = 0; i < net->allreduce_count; i++) {
		const struct measured_allreduce *m = &net->allreduce[i];
		if (m->same_host == !!same_host &&
		    ((m->za == za && m->ga == ga && m->zb == zb && m->gb == gb) ||
		     (m->za == zb && m->ga == gb && m->zb == za && m->gb == ga)))
			return m;
	}
	return NULL;
}

double sl_network_allreduce_gbps(const struct sl_network *net, int za, int ga, int zb, int gb,
				 int same_host, double bytes)
{
	const struct measured_allreduce *m = measured_pair(net, za, ga, zb, gb, same_host);
	if (!m || !(bytes > 0))
		return 0;
	/* past the largest size measured, that size's rate: measured on to 16 MiB over the
	 * testbed's 8-10 Mbit/s links the rate levels off (pent5: 85 to 82 % of point to point
	 * from 4 to 16 MiB), where the fit, quadratic in log size, falls ever faster */
	double at = m->largest_bytes > 0 ? fmin(bytes, m->largest_bytes) : bytes;
	return sl_link_fit_gbps_positive(&m->fit, at);
}

double sl_network_burst_bytes(const struct sl_network *net, int za, int ga, int zb, int gb)
{
	const struct measured_allreduce *m = measured_pair(net, za, ga, zb, gb, 0);
	return m ? m->burst_bytes : 0;
}

double sl_network_message_cpu_s(const struct sl_network *net, int ga, int gb, int same_host,
				 double bytes, int receiver)
{
	/* the end's own type at that end, over the fastest link; else at the other end */
	int type = receiver ? gb : ga;
	const struct measured_allreduce *m = NULL;
	for (int pass = 0; pass < 2 && !m; pass++)
		for (int i = 0; i < net->allreduce_count; i++) {
			const struct measured_allreduce *c = &net->allreduce[i];
			int at_end = receiver ? c->gb == type : c->ga == type;
			int at_other = receiver ? c->ga == type : c->gb == type;
			if (c->message_sizes > 0 && c->same_host == !!same_host &&
			    (pass == 0 ? at_end : at_other) && (!m || c->p2p_max_bps > m->p2p_max_bps))
				m = c;
		}
	if (!m || bytes <= 0)
		return 0;
	const double *x = m->message_bytes, *y = m->message_cpu_s[receiver ? 1 : 0];
	int n = m->message_sizes, k = 0;
	if (bytes >= x[n - 1]) /* beyond the largest: in proportion to it */
		return y[n - 1] * bytes / x[n - 1];
	while (x[k] < bytes)
		k++;
	double x0 = k ? x[k - 1] : 0, y0 = k ? y[k - 1] : 0; /* below the smallest: from 0 */
	return y0 + (y[k] - y0) * (bytes - x0) / (x[k] - x0);
}

double sl_network_whole_message_bytes(const struct sl_network *net, int za, int ga, int zb,
				      int gb)
{
	const struct measured_allreduce *m = measured_pair(net, za, ga, zb, gb, 0);
	return m ? m->whole_message_bytes : 0;
}

double sl_link_fit_gbps(const struct sl_link_fit *fit, double bytes)
{
	double x = log2(bytes / 1e6);
	return fit->a2 * x * x + fit->a1 * x + fit->a0;
}

double sl_link_fit_gbps_positive(const struct sl_link_fit *fit, double bytes)
{
	double gbps = sl_link_fit_gbps(fit, bytes);
	if (!(gbps > 0))
		gbps = fit->a0 > 0 ? fit->a0 : 1.0;
	return gbps;
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
	return (bytes / 1e9) / gbps;
}

double sl_network_egress_usd_per_gb(const struct sl_network *net, int src_zone, int dst_zone)
{
	return net->egress[src_zone * net->zones + dst_zone];
}
