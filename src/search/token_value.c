/* The token value of island plans from measurements: see token_value.h. */
#include "search/token_value.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/paths.h"

static int wire_parse(const char *name, enum sl_islands_wire *out)
{
	for (int w = SL_ISLANDS_WIRE_FP32; w <= SL_ISLANDS_WIRE_INT8; w++)
		if (!strcmp(name, sl_islands_wire_name((enum sl_islands_wire)w))) {
			*out = (enum sl_islands_wire)w;
			return 0;
		}
	return -1;
}

static int point_from_json(const json_t *m, const char *path, size_t i,
			   struct sl_token_value_point *p, struct sl_err *err)
{
	char ctx[64];
	snprintf(ctx, sizeof(ctx), "measurements[%zu]", i);
	long long n = 0, h = 0;
	const char *wire = NULL;
	int rc = sl_json_get_int(m, ctx, "islands", &n, err);
	if (!rc)
		rc = sl_json_get_int(m, ctx, "inner_steps", &h, err);
	if (!rc)
		rc = sl_json_get_string(m, ctx, "wire", &wire, err);
	if (!rc)
		rc = sl_json_get_number(m, ctx, "value", &p->value, err);
	if (rc)
		return sl_err_set(err, SL_EINPUT, "token values '%s': %s", path, err->msg);
	if (n < 2 || n > SL_ISLANDS_MAX_ISLANDS || h < 1 || h > 1000000)
		return sl_err_set(err, SL_EINPUT, "token values '%s': %s: islands must be 2 to %d and "
				  "inner_steps 1 to 1000000", path, ctx, SL_ISLANDS_MAX_ISLANDS);
	if (wire_parse(wire, &p->wire))
		return sl_err_set(err, SL_EINPUT, "token values '%s': %s.wire: '%s' is not fp32, bf16 "
				  "or int8", path, ctx, wire);
	if (!(p->value > 0 && p->value <= 1))
		return sl_err_set(err, SL_EINPUT, "token values '%s': %s.value: %g is out of (0, 1] (a "
				  "token of an island plan is worth at most a synchronous one; cap "
				  "measured ratios above 1 at 1)", path, ctx, p->value);
	p->islands = (int)n;
	p->inner_steps = (int)h;
	return 0;
}

int sl_token_value_load(const char *path, struct sl_token_value *out, struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	json_t *root = sl_json_load_file(path, "token values", err);
	if (!root)
		return SL_EINPUT;
	const char *schema = NULL, *source = NULL;
	json_t *list = NULL;
	int rc = 0;
	if (!json_is_object(root) || sl_json_get_string(root, "", "schema", &schema, err) ||
	    strcmp(schema, "sailor.token_value/1"))
		rc = sl_err_set(err, SL_EINPUT, "token values '%s': expected an object with \"schema\": "
				"\"sailor.token_value/1\" (docs/formats.md#token-values)", path);
	if (!rc && sl_json_get_array(root, "", "measurements", &list, err))
		rc = sl_err_set(err, SL_EINPUT, "token values '%s': %s", path, err->msg);
	size_t n = rc ? 0 : json_array_size(list);
	if (!rc && (n == 0 || n > SL_TOKEN_VALUE_MAX_POINTS))
		rc = sl_err_set(err, SL_EINPUT, "token values '%s': measurements: give 1 to %d",
				path, SL_TOKEN_VALUE_MAX_POINTS);
	for (size_t i = 0; !rc && i < n; i++)
		rc = point_from_json(json_array_get(list, i), path, i, &out->points[i], err);
	if (!rc) {
		out->count = (int)n;
		source = json_string_value(json_object_get(root, "source"));
		snprintf(out->source, sizeof(out->source), "%s", source ? source : path);
	}
	json_decref(root);
	return rc;
}

int sl_token_value_load_default(struct sl_token_value *out, struct sl_err *err)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/islands/token_value.json", sl_paths_data_dir());
	return sl_token_value_load(path, out, err);
}

int sl_token_value_parse(const char *arg, struct sl_token_value *out, struct sl_err *err)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(arg, &end);
	if (end != arg && !*end && !errno) {
		memset(out, 0, sizeof(*out));
		if (!(v > 0 && v <= 1))
			return sl_err_set(err, SL_EINPUT, "--island-token-value: %s is out of (0, 1]: a "
					  "token of an island plan is worth more than 0 and at most one "
					  "synchronous token", arg);
		out->constant = v;
		snprintf(out->source, sizeof(out->source), "--island-token-value %g", v);
		return 0;
	}
	return sl_token_value_load(arg, out, err);
}

/* The curve of one island count in H: linear in log H through (1, 1) and the points. */
static double value_in_h(const struct sl_token_value *tv, int islands, enum sl_islands_wire wire,
			 int H, int *beyond)
{
	double lo_h = 1, lo_v = 1, hi_h = 0, hi_v = 0, last_h = 0, last_v = 1;
	for (int i = 0; i < tv->count; i++) {
		const struct sl_token_value_point *p = &tv->points[i];
		if (p->islands != islands || p->wire != wire)
			continue;
		if (p->inner_steps <= H && p->inner_steps >= lo_h) {
			lo_h = p->inner_steps;
			lo_v = p->value;
		}
		if (p->inner_steps >= H && (hi_h == 0 || p->inner_steps < hi_h)) {
			hi_h = p->inner_steps;
			hi_v = p->value;
		}
		if (p->inner_steps > last_h) {
			last_h = p->inner_steps;
			last_v = p->value;
		}
	}
	if (hi_h == 0) { /* beyond the largest measured H */
		*beyond |= H > last_h;
		return last_v;
	}
	if (hi_h == lo_h)
		return hi_v;
	double t = (log(H) - log(lo_h)) / (log(hi_h) - log(lo_h));
	return lo_v + t * (hi_v - lo_v);
}

/* A wire's factor on fp32's curve: the mean of value(wire) / value(fp32) over the (islands, H)
 * measured with both, each at most 1; where none is, the next coarser wire's (1 for int8). */
static double wire_factor(const struct sl_token_value *tv, enum sl_islands_wire wire)
{
	double sum = 0;
	int pairs = 0;
	for (int i = 0; i < tv->count; i++) {
		const struct sl_token_value_point *w = &tv->points[i];
		if (w->wire != wire)
			continue;
		for (int k = 0; k < tv->count; k++) {
			const struct sl_token_value_point *f = &tv->points[k];
			if (f->wire == SL_ISLANDS_WIRE_FP32 && f->islands == w->islands &&
			    f->inner_steps == w->inner_steps) {
				sum += fmin(1, w->value / f->value);
				pairs++;
				break;
			}
		}
	}
	if (pairs)
		return sum / pairs;
	/* never measured: the next coarser wire's factor (bf16 loses no more than int8 does) */
	return wire == SL_ISLANDS_WIRE_INT8 ? 1 : wire_factor(tv, (enum sl_islands_wire)(wire + 1));
}

double sl_token_value_of(const struct sl_token_value *tv, int islands, int inner_steps,
			 enum sl_islands_wire wire, int *extrapolated)
{
	int beyond = 0;
	if (tv->constant > 0) {
		if (extrapolated)
			*extrapolated = 0;
		return tv->constant;
	}
	/* fp32's curve where it was measured (other wires as a factor on it), else the first
	 * measured wire's */
	enum sl_islands_wire base = tv->count ? tv->points[0].wire : SL_ISLANDS_WIRE_FP32;
	for (int i = 0; i < tv->count; i++)
		base = tv->points[i].wire == SL_ISLANDS_WIRE_FP32 ? SL_ISLANDS_WIRE_FP32 : base;
	double factor = wire == base ? 1 : base == SL_ISLANDS_WIRE_FP32 ? wire_factor(tv, wire) : 1;
	/* the measured island counts on either side of `islands` */
	int below = 0, above = 0;
	for (int i = 0; i < tv->count; i++) {
		int n = tv->points[i].islands;
		if (tv->points[i].wire != base)
			continue;
		if (n <= islands && n > below)
			below = n;
		if (n >= islands && (above == 0 || n < above))
			above = n;
	}
	double v;
	if (!below && !above)
		v = 1, beyond = 1; /* no measurement at all */
	else if (!below || !above || below == above) {
		beyond |= below != above;
		v = value_in_h(tv, below ? below : above, base, inner_steps, &beyond);
	} else {
		double vb = value_in_h(tv, below, base, inner_steps, &beyond);
		double va = value_in_h(tv, above, base, inner_steps, &beyond);
		v = vb + (va - vb) * (islands - below) / (double)(above - below);
	}
	if (extrapolated)
		*extrapolated = beyond;
	return fmin(1, fmax(v * factor, 1e-6));
}
