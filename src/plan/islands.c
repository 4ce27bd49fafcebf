/* The plan's "islands" section: read, checked, written, copied (islands.h). Every error names
 * the field and what would fix it; the ranges are islands.h's, listed in docs/limits.md. */
#include "plan/islands.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

/* What a JSON value is, for "expected X, got Y". */
static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER:
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

const char *sl_islands_wire_name(enum sl_islands_wire w)
{
	switch (w) {
	case SL_ISLANDS_WIRE_BF16: return "bf16";
	case SL_ISLANDS_WIRE_INT8: return "int8";
	default: return "fp32";
	}
}

struct sl_plan_islands *sl_islands_alloc(int count, int num_pipelines)
{
	size_t size = sizeof(struct sl_plan_islands) + (size_t)(num_pipelines + count) * sizeof(int);
	struct sl_plan_islands *isl = calloc(1, size);
	if (!isl)
		return NULL;
	isl->count = count;
	isl->num_pipelines = num_pipelines;
	isl->island_of = (int *)(isl + 1);
	isl->inner_steps = isl->island_of + num_pipelines;
	return isl;
}

/* "pipelines": every pipeline in exactly one island, pipeline 0 in the first. */
static int read_pipelines(const json_t *obj, int D, json_t **groups_out, struct sl_err *err)
{
	json_t *groups = NULL;
	int rc = sl_json_get_array(obj, "islands", "pipelines", &groups, err);
	if (rc)
		return sl_err_set(err, SL_EINPUT, "islands.pipelines: expected an array of islands, "
				  "each an array of pipeline numbers (0 to %d), e.g. [[0, 1], [2, 3]]",
				  D - 1);
	size_t n = json_array_size(groups);
	if (n < 1 || n > (size_t)D)
		return sl_err_set(err, SL_EINPUT, "islands.pipelines: %zu islands for a plan of %d "
				  "pipeline%s: give 1 to %d islands (each needs a pipeline)", n, D,
				  D > 1 ? "s" : "", D);
	if (n > SL_ISLANDS_MAX_ISLANDS)
		return sl_err_set(err, SL_EINPUT, "islands.pipelines: %zu islands, at most %d allowed",
				  n, SL_ISLANDS_MAX_ISLANDS);
	*groups_out = groups;
	return 0;
}

static int assign_pipelines(const json_t *groups, struct sl_plan_islands *isl, struct sl_err *err)
{
	int D = isl->num_pipelines;
	for (int j = 0; j < D; j++)
		isl->island_of[j] = -1;
	for (int i = 0; i < isl->count; i++) {
		const json_t *g = json_array_get(groups, (size_t)i);
		if (!json_is_array(g))
			return sl_err_set(err, SL_EINPUT, "islands.pipelines[%d]: expected island %d as "
					  "an array of pipeline numbers, got %s", i, i, json_kind(g));
		if (json_array_size(g) == 0)
			return sl_err_set(err, SL_EINPUT, "islands.pipelines[%d]: island %d is empty: "
					  "give it at least one pipeline, or leave it out", i, i);
		for (size_t k = 0; k < json_array_size(g); k++) {
			char ctx[64];
			snprintf(ctx, sizeof(ctx), "islands.pipelines[%d][%zu]", i, k);
			long long j = 0;
			int rc = sl_json_as_int(json_array_get(g, k), ctx, &j, err);
			if (rc)
				return rc;
			if (j < 0 || j >= D)
				return sl_err_set(err, SL_EINPUT, "%s: pipeline %lld does not exist: the "
						  "plan has pipelines 0 to %d", ctx, j, D - 1);
			if (isl->island_of[j] >= 0)
				return sl_err_set(err, SL_EINPUT, "%s: pipeline %lld is already in island "
						  "%d: put each pipeline in one island", ctx, j,
						  isl->island_of[j]);
			isl->island_of[j] = i;
		}
	}
	for (int j = 0; j < D; j++)
		if (isl->island_of[j] < 0)
			return sl_err_set(err, SL_EINPUT, "islands.pipelines: pipeline %d is in no island: "
					  "add it to one", j);
	if (isl->island_of[0] != 0)
		return sl_err_set(err, SL_EINPUT, "islands.pipelines: pipeline 0 is in island %d: list "
				  "its island first (island 0 holds rank 0 and counts the run's steps)",
				  isl->island_of[0]);
	return 0;
}

/* One H: a whole number in range (2.5 or "4" named as such, not as "an integer"). */
static int read_h(const json_t *v, const char *ctx, long long *h, struct sl_err *err)
{
	if (sl_json_as_int(v, ctx, h, NULL) == 0 && *h >= 1 && *h <= SL_ISLANDS_MAX_INNER_STEPS)
		return 0;
	char got[64];
	if (json_is_number(v))
		snprintf(got, sizeof(got), "%.17g", json_number_value(v));
	else
		snprintf(got, sizeof(got), "%s", json_kind(v));
	return sl_err_set(err, SL_EINPUT, "%s: inner steps per round must be a whole number from 1 "
			  "to %d, got %s", ctx, SL_ISLANDS_MAX_INNER_STEPS, got);
}

/* "inner_steps": one H for every island, or one per island with island 0's the largest. */
static int read_inner_steps(const json_t *obj, struct sl_plan_islands *isl, struct sl_err *err)
{
	const json_t *v = json_object_get(obj, "inner_steps");
	int n = isl->count;
	if (!v || json_is_integer(v) || json_is_real(v)) {
		long long h = SL_ISLANDS_DEFAULT_INNER_STEPS;
		int rc = v ? read_h(v, "islands.inner_steps", &h, err) : 0;
		for (int i = 0; !rc && i < n; i++)
			isl->inner_steps[i] = (int)h;
		return rc;
	}
	if (!json_is_array(v))
		return sl_err_set(err, SL_EINPUT, "islands.inner_steps: expected a whole number (every "
				  "island) or an array of %d, one per island, got %s", n, json_kind(v));
	if (json_array_size(v) != (size_t)n)
		return sl_err_set(err, SL_EINPUT, "islands.inner_steps: %zu numbers for the %d islands "
				  "of islands.pipelines: give one per island, or one number for "
				  "every island", json_array_size(v), n);
	for (int i = 0; i < n; i++) {
		char ctx[64];
		snprintf(ctx, sizeof(ctx), "islands.inner_steps[%d]", i);
		long long h = 0;
		int rc = read_h(json_array_get(v, (size_t)i), ctx, &h, err);
		if (rc)
			return rc;
		isl->inner_steps[i] = (int)h;
	}
	for (int i = 1; i < n; i++)
		if (isl->inner_steps[i] > isl->inner_steps[0])
			return sl_err_set(err, SL_EINPUT, "islands.inner_steps[%d]: %d inner steps, more "
					  "than island 0's %d: island 0 (the one holding pipeline 0) "
					  "counts the run's steps and must have the most; give the "
					  "faster island's pipelines the low numbers", i,
					  isl->inner_steps[i], isl->inner_steps[0]);
	return 0;
}

static int read_number(const json_t *obj, const char *key, double def, double lo, int lo_open,
		       double hi, int hi_open, double *out, struct sl_err *err)
{
	*out = def;
	if (sl_json_opt_number(obj, "islands", key, out, NULL))
		return sl_err_set(err, SL_EINPUT, "islands.%s: expected a number in %s%g, %g%s "
				  "(default %g), got %s", key, lo_open ? "(" : "[", lo, hi,
				  hi_open ? ")" : "]", def, json_kind(json_object_get(obj, key)));
	if (!isfinite(*out) || (lo_open ? *out <= lo : *out < lo) || (hi_open ? *out >= hi : *out > hi))
		return sl_err_set(err, SL_EINPUT, "islands.%s: %g is out of range: give a number in "
				  "%s%g, %g%s", key, *out, lo_open ? "(" : "[", lo, hi,
				  hi_open ? ")" : "]");
	return 0;
}

static int read_wire(const json_t *obj, struct sl_plan_islands *isl, struct sl_err *err)
{
	const char *name = "fp32";
	if (json_object_get(obj, "wire")) {
		int rc = sl_json_get_string(obj, "islands", "wire", &name, err);
		if (rc)
			return rc;
	}
	for (int w = SL_ISLANDS_WIRE_FP32; w <= SL_ISLANDS_WIRE_INT8; w++)
		if (!strcmp(name, sl_islands_wire_name(w))) {
			isl->wire = w;
			return 0;
		}
	return sl_err_set(err, SL_EINPUT, "islands.wire: unknown wire format '%s': choose fp32, "
			  "bf16 or int8", name);
}

static int read_counts(const json_t *obj, struct sl_plan_islands *isl, struct sl_err *err)
{
	long long f = 1, tau = 0;
	int rc = sl_json_opt_int(obj, "islands", "fragments", &f, err);
	if (rc)
		return rc;
	if (f < 1 || f > SL_ISLANDS_MAX_FRAGMENTS)
		return sl_err_set(err, SL_EINPUT, "islands.fragments: must be a whole number from 1 "
				  "to %d, got %lld", SL_ISLANDS_MAX_FRAGMENTS, f);
	if ((rc = sl_json_opt_int(obj, "islands", "overlap_steps", &tau, err)))
		return rc;
	int h_min = isl->inner_steps[0];
	for (int i = 1; i < isl->count; i++)
		h_min = isl->inner_steps[i] < h_min ? isl->inner_steps[i] : h_min;
	if (tau < 0 || tau >= h_min)
		return sl_err_set(err, SL_EINPUT, "islands.overlap_steps: %lld is out of range: a "
				  "fragment must land before its next sync, so give 0 (no overlap) to "
				  "%d (the fewest inner steps of an island, minus 1)", tau, h_min - 1);
	isl->fragments = (int)f;
	isl->overlap_steps = (int)tau;
	return 0;
}

int sl_islands_from_json(const json_t *obj, int num_pipelines, struct sl_plan_islands **out,
			 struct sl_err *err)
{
	static const char *const fields[] = {"pipelines",      "inner_steps", "outer_lr",
					     "outer_momentum", "wire",        "fragments",
					     "overlap_steps",  "merge"};
	*out = NULL;
	if (!json_is_object(obj))
		return sl_err_set(err, SL_EINPUT, "islands: expected an object such as "
				  "{\"pipelines\": [[0, 1], [2, 3]], \"inner_steps\": 50}, got %s "
				  "(docs/formats.md#islands)", json_kind(obj));
	int rc = sl_json_check_fields(obj, "islands", fields, sizeof(fields) / sizeof(*fields), err);
	json_t *groups = NULL;
	if (!rc)
		rc = read_pipelines(obj, num_pipelines, &groups, err);
	if (rc)
		return rc;
	struct sl_plan_islands *isl = sl_islands_alloc((int)json_array_size(groups), num_pipelines);
	if (!isl)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	rc = assign_pipelines(groups, isl, err);
	if (!rc) rc = read_inner_steps(obj, isl, err);
	if (!rc) rc = read_number(obj, "outer_lr", SL_ISLANDS_DEFAULT_OUTER_LR, 0, 1,
				  SL_ISLANDS_MAX_OUTER_LR, 0, &isl->outer_lr, err);
	if (!rc) rc = read_number(obj, "outer_momentum", SL_ISLANDS_DEFAULT_OUTER_MOMENTUM, 0, 0, 1,
				  1, &isl->outer_momentum, err);
	if (!rc) rc = read_number(obj, "merge", SL_ISLANDS_DEFAULT_MERGE, 0, 1, 1, 0, &isl->merge,
				  err);
	if (!rc) rc = read_wire(obj, isl, err);
	if (!rc) rc = read_counts(obj, isl, err);
	if (rc) {
		free(isl);
		return rc;
	}
	*out = isl;
	return 0;
}

json_t *sl_islands_to_json(const struct sl_plan_islands *isl)
{
	json_t *obj = json_object();
	json_t *groups = json_array();
	for (int i = 0; i < isl->count; i++) {
		json_t *g = json_array();
		for (int j = 0; j < isl->num_pipelines; j++)
			if (isl->island_of[j] == i)
				json_array_append_new(g, json_integer(j));
		json_array_append_new(groups, g);
	}
	json_object_set_new(obj, "pipelines", groups);
	int same = 1;
	for (int i = 1; i < isl->count; i++)
		same &= isl->inner_steps[i] == isl->inner_steps[0];
	if (same) {
		json_object_set_new(obj, "inner_steps", json_integer(isl->inner_steps[0]));
	} else {
		json_t *h = json_array();
		for (int i = 0; i < isl->count; i++)
			json_array_append_new(h, json_integer(isl->inner_steps[i]));
		json_object_set_new(obj, "inner_steps", h);
	}
	json_object_set_new(obj, "outer_lr", json_real(isl->outer_lr));
	json_object_set_new(obj, "outer_momentum", json_real(isl->outer_momentum));
	json_object_set_new(obj, "wire", json_string(sl_islands_wire_name(isl->wire)));
	json_object_set_new(obj, "fragments", json_integer(isl->fragments));
	json_object_set_new(obj, "overlap_steps", json_integer(isl->overlap_steps));
	json_object_set_new(obj, "merge", json_real(isl->merge));
	return obj;
}

struct sl_plan_islands *sl_islands_copy(const struct sl_plan_islands *isl, struct sl_err *err)
{
	if (!isl)
		return NULL;
	struct sl_plan_islands *c = sl_islands_alloc(isl->count, isl->num_pipelines);
	if (!c) {
		sl_err_set(err, SL_ENOMEM, "out of memory");
		return NULL;
	}
	int *of = c->island_of, *h = c->inner_steps;
	*c = *isl;
	c->island_of = of;
	c->inner_steps = h;
	memcpy(of, isl->island_of, (size_t)isl->num_pipelines * sizeof(int));
	memcpy(h, isl->inner_steps, (size_t)isl->count * sizeof(int));
	return c;
}

int sl_islands_model_tensors(const struct sl_model_config *model)
{
	/* token and position tables; per block two LayerNorms (2 each), QKV, attention
	 * projection, MLP in and out (weight and bias each); the final LayerNorm */
	return 2 + 12 * model->num_blocks + 2;
}

/* The per-block tensors in the order the layers declare them (train/gpt_layers.c). */
static const char *const block_tensors[12] = {
	"ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
	"attn.proj.bias", "ln2.weight", "ln2.bias", "mlp.fc.weight", "mlp.fc.bias",
	"mlp.proj.weight", "mlp.proj.bias"};

static long long block_tensor_numel(const struct sl_model_config *m, int i)
{
	long long C = m->hidden, F = m->ffn_hidden;
	static const int kind[12] = {0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 4, 0};
	switch (kind[i]) {
	case 1: return 3 * C * C;
	case 2: return 3 * C;
	case 3: return C * C;
	case 4: return F * C;
	case 5: return F;
	default: return C;
	}
}

/* Tensor t's elements (sl_islands_tensor's, without its name: the planner counts fragments for
 * every outer step it weighs). */
static long long tensor_numel(const struct sl_model_config *m, int t)
{
	int last = sl_islands_model_tensors(m) - 1;
	long long C = m->hidden;
	if (t == 0)
		return (long long)m->vocab * C;
	if (t == 1)
		return (long long)m->seq_len * C;
	if (t >= last - 1)
		return C;
	return block_tensor_numel(m, (t - 2) % 12);
}

void sl_islands_tensor(const struct sl_model_config *m, int t, char *name, size_t size,
		       long long *numel)
{
	int last = sl_islands_model_tensors(m) - 1;
	*numel = tensor_numel(m, t);
	if (t == 0)
		snprintf(name, size, "layer0.wte.weight");
	else if (t == 1)
		snprintf(name, size, "layer0.wpe.weight");
	else if (t >= last - 1)
		snprintf(name, size, "layer%d.ln_f.%s", m->num_blocks + 1,
			 t == last ? "bias" : "weight");
	else
		snprintf(name, size, "layer%d.%s", (t - 2) / 12 + 1, block_tensors[(t - 2) % 12]);
}

int sl_islands_tensor_index(const struct sl_model_config *m, const char *name)
{
	int T = sl_islands_model_tensors(m);
	for (int t = 0; t < T; t++) {
		char n[SL_ISLANDS_TENSOR_NAME_MAX];
		long long numel;
		sl_islands_tensor(m, t, n, sizeof(n), &numel);
		if (!strcmp(n, name))
			return t;
	}
	return -1;
}

int sl_islands_fragment_starts(const struct sl_model_config *m, int fragments, int *starts)
{
	int T = sl_islands_model_tensors(m);
	if (fragments < 1 || fragments > T)
		return SL_EINPUT;
	long long total = 0;
	long long *prefix = malloc((size_t)(T + 1) * sizeof(long long));
	if (!prefix)
		return SL_ENOMEM;
	for (int t = 0; t < T; t++) {
		prefix[t] = total;
		total += tensor_numel(m, t);
	}
	prefix[T] = total;
	starts[0] = 0;
	for (int f = 1; f < fragments; f++) {
		int t = 0;
		while (t < T && prefix[t] * fragments < (long long)f * total)
			t++;
		if (t < starts[f - 1] + 1)
			t = starts[f - 1] + 1;
		if (t > T - (fragments - f))
			t = T - (fragments - f);
		starts[f] = t;
	}
	starts[fragments] = T;
	free(prefix);
	return 0;
}

int sl_islands_check_model(const struct sl_plan_islands *isl, const struct sl_model_config *model,
			   struct sl_err *err)
{
	int tensors = sl_islands_model_tensors(model);
	if (isl && isl->fragments > tensors)
		return sl_err_set(err, SL_EINPUT, "islands.fragments: %d fragments but model '%s' has "
				  "%d parameter tensors: give at most %d (a fragment is one or more "
				  "whole tensors)", isl->fragments, model->name, tensors, tensors);
	return 0;
}
