/* Profile files: loading and lookup (see profile.h). Entries are kept sorted by (mbs, tp) so
 * output that lists them is stable; layer keys are read by number, not by file order. */
#include "profile/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/json.h"
#include "util/limits.h"
#include "util/paths.h"

/* A key that is a number: canonical decimal only ("5", never "05", "+5", " 5" or "5.0"), so
 * that two keys can never name the same micro-batch size, TP degree or layer. */
static int parse_key(const char *key, long *out)
{
	size_t n = strlen(key);
	if (n == 0 || n > 7 || strspn(key, "0123456789") != n || (key[0] == '0' && n > 1))
		return -1;
	*out = strtol(key, NULL, 10);
	return 0;
}

/* A measured time: 0 (not measured) or a normal double in [SL_MIN_TIME_S, SL_MAX_TIME_S]. */
static int valid_time(double t)
{
	return t == 0 || (t >= SL_MIN_TIME_S && t <= SL_MAX_TIME_S);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct sl_profile_entry *x = a, *y = b;
	if (x->mbs != y->mbs)
		return x->mbs < y->mbs ? -1 : 1;
	return x->tp < y->tp ? -1 : x->tp > y->tp;
}

static int load_entry(const json_t *layers, const char *ctx, int expected, struct sl_profile *prof,
		      struct sl_profile_entry *e, struct sl_err *err)
{
	if (!json_is_object(layers) || json_object_size(layers) == 0)
		return sl_err_set(err, SL_EINPUT, "%s: expected an object of layers", ctx);
	int n = (int)json_object_size(layers);
	if (n > SL_MAX_MODEL_BLOCKS + 2)
		return sl_err_set(err, SL_EINPUT, "%s: %d layers, more than a model may have (%d)",
				  ctx, n, SL_MAX_MODEL_BLOCKS + 2);
	if (expected > 0 && n != expected)
		return sl_err_set(err, SL_EINPUT,
				  "%s: has %d layers but the model has %d: use the profile of this "
				  "model", ctx, n, expected);
	if (prof->num_layers == 0)
		prof->num_layers = n;
	else if (n != prof->num_layers)
		return sl_err_set(err, SL_EINPUT, "%s: has %d layers, other entries have %d", ctx, n,
				  prof->num_layers);
	double *buf = calloc((size_t)n * 3, sizeof(double));
	if (!buf)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	e->fwd_s = buf;
	e->bwd_s = buf + n;
	e->update_s = buf + 2 * n;
	char *seen = calloc((size_t)n, 1);
	if (!seen)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	const char *key;
	json_t *v;
	int rc = 0;
	json_object_foreach((json_t *)layers, key, v)
	{
		long layer;
		if (parse_key(key, &layer) || layer >= n) {
			rc = sl_err_set(err, SL_EINPUT, "%s.%s: layer numbers must be 0..%d", ctx, key,
					n - 1);
			break;
		}
		if (!json_is_array(v) || json_array_size(v) < 3) {
			rc = sl_err_set(err, SL_EINPUT,
					"%s.%s: expected [forward_s, backward_s, update_s]", ctx, key);
			break;
		}
		double t[3];
		for (int i = 0; i < 3 && !rc; i++) {
			json_t *x = json_array_get(v, (size_t)i);
			if (!json_is_number(x) || !valid_time(json_number_value(x)))
				rc = sl_err_set(err, SL_EINPUT,
						"%s.%s[%d]: expected seconds: 0 (not measured) or %g to %g",
						ctx, key, i, SL_MIN_TIME_S, SL_MAX_TIME_S);
			else
				t[i] = json_number_value(x);
		}
		if (rc)
			break;
		e->fwd_s[layer] = t[0];
		e->bwd_s[layer] = t[1];
		e->update_s[layer] = t[2];
		seen[layer] = 1;
	}
	for (int l = 0; !rc && l < n; l++)
		if (!seen[l])
			rc = sl_err_set(err, SL_EINPUT, "%s: no layer %d: give every layer 0..%d once",
					ctx, l, n - 1);
	free(seen);
	return rc;
}

/* source.idle_wait: what a sleeping wait's test costs on the device (profiler.c). */
static int load_idle_wait(json_t *idle, struct sl_profile *prof, struct sl_err *err)
{
	json_t *cpu = json_object_get(idle, "cpu_per_test_s");
	json_t *late = json_object_get(idle, "late_per_test_s");
	if (!json_is_number(cpu) || !json_is_number(late) || !(json_number_value(cpu) >= 0) ||
	    !(json_number_value(late) >= 0) || json_number_value(cpu) > 0.01 ||
	    json_number_value(late) > 0.01)
		return sl_err_set(err, SL_EINPUT, "source.idle_wait: expected cpu_per_test_s and "
				  "late_per_test_s, seconds in [0, 0.01] (profile it again with "
				  "`sailor profile`)");
	prof->idle_cpu_per_test_s = json_number_value(cpu);
	prof->idle_late_per_test_s = json_number_value(late);
	prof->idle_measured = 1;
	return 0;
}

/* source.entries["mbs M tp T"].memory of a profile of our runtime; an entry without it has no
 * memory figures (present = 0) and the simulator says so when it needs them. */
static int load_memory(json_t *entries, struct sl_profile_entry *e, struct sl_err *err)
{
	char key[64];
	snprintf(key, sizeof(key), "mbs %d tp %d", e->mbs, e->tp);
	json_t *mem = json_object_get(json_object_get(entries, key), "memory");
	if (!mem)
		return 0;
	static const char *kinds[3] = {"embedding", "block", "head"};
	for (int k = 0; k < 3; k++) {
		json_t *kind = json_object_get(mem, kinds[k]);
		json_t *pb = json_object_get(kind, "params_bytes");
		json_t *ab = json_object_get(kind, "activations_bytes");
		if (!json_is_number(pb) || !json_is_number(ab) || json_number_value(pb) < 0 ||
		    json_number_value(ab) < 0 || json_number_value(pb) > SL_MAX_MEMORY_BYTES ||
		    json_number_value(ab) > SL_MAX_MEMORY_BYTES)
			return sl_err_set(err, SL_EINPUT, "source.entries.%s.memory.%s: expected "
					  "params_bytes and activations_bytes from 0 to %g", key,
					  kinds[k], SL_MAX_MEMORY_BYTES);
		e->memory.params_bytes[k] = json_number_value(pb);
		e->memory.activations_bytes[k] = json_number_value(ab);
	}
	json_t *ws = json_object_get(mem, "workspace_bytes");
	if (!json_is_number(ws) || json_number_value(ws) < 0 || json_number_value(ws) > SL_MAX_MEMORY_BYTES)
		return sl_err_set(err, SL_EINPUT, "source.entries.%s.memory.workspace_bytes: expected "
				  "bytes from 0 to %g", key, SL_MAX_MEMORY_BYTES);
	e->memory.workspace_bytes = json_number_value(ws);
	json_t *rt = json_object_get(mem, "runtime_rss_bytes");
	if (rt && (!json_is_number(rt) || json_number_value(rt) < 0 ||
		   json_number_value(rt) > SL_MAX_MEMORY_BYTES))
		return sl_err_set(err, SL_EINPUT, "source.entries.%s.memory.runtime_rss_bytes: "
				  "expected bytes from 0 to %g", key, SL_MAX_MEMORY_BYTES);
	e->memory.runtime_rss_bytes = rt ? json_number_value(rt) : 0;
	e->memory.mpi_ranks = json_is_true(json_object_get(mem, "mpi_ranks"));
	e->memory.present = 1;
	return 0;
}

/* source.entries["mbs M tp T"].median_s.recompute_attention of a profile of our runtime: the
 * attention core rerun alone, the work selective recomputation adds to a block's backward
 * (profiler_measure.c); kept as its share of the entry's block forward. Optional: profiles made before
 * the profiler measured it have none (share 0). */
static int load_attention_share(json_t *entries, struct sl_profile_entry *e, struct sl_err *err)
{
	char key[64];
	snprintf(key, sizeof(key), "mbs %d tp %d", e->mbs, e->tp);
	json_t *med = json_object_get(json_object_get(entries, key), "median_s");
	json_t *att = json_object_get(med, "recompute_attention");
	if (!att)
		return 0;
	json_t *fwd = json_object_get(med, "forward_block");
	double a = json_is_number(att) ? json_number_value(att) : -1;
	double f = json_is_number(fwd) ? json_number_value(fwd) : -1;
	/* the core is part of the block's forward: never more than all of it */
	if (!(a >= 0) || !(f > 0) || a > f || f > 1e4)
		return sl_err_set(err, SL_EINPUT, "source.entries.%s.median_s: expected "
				  "recompute_attention from 0 to forward_block seconds (at most 1e4), "
				  "the attention core's share of the block; remove it or profile "
				  "again with `sailor profile`", key);
	e->attention_core_share = a / f;
	return 0;
}

int sl_profile_load(const char *path, int expected_layers, struct sl_profile **out,
		    struct sl_err *err)
{
	*out = NULL;
	json_t *root = sl_json_load_file(path, "profile", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	struct sl_profile *prof = calloc(1, sizeof(*prof));
	if (!prof) {
		json_decref(root);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	snprintf(prof->path, sizeof(prof->path), "%s", path);
	int rc = 0;
	if (!json_is_object(root))
		rc = sl_err_set(err, SL_EINPUT, "top level: expected {mbs: {tp: {layer: [...]}}}");
	const char *mk, *tk;
	json_t *mv, *tv;
	json_object_foreach(root, mk, mv)
	{
		long mbs;
		if (rc)
			break;
		if (parse_key(mk, &mbs)) {
			if (!strcmp(mk, "schema") || !strcmp(mk, "note") || !strcmp(mk, "source"))
				continue;
			rc = sl_err_set(err, SL_EINPUT, "%s: expected a micro-batch size", mk);
			break;
		}
		if (!json_is_object(mv) || mbs < 1 || mbs > SL_MAX_MICRO_BATCH) {
			rc = sl_err_set(err, SL_EINPUT, "%s: expected a micro-batch size from 1 to %d "
					"with an object of TP degrees", mk, SL_MAX_MICRO_BATCH);
			break;
		}
		json_object_foreach(mv, tk, tv)
		{
			long tp;
			char ctx[64];
			snprintf(ctx, sizeof(ctx), "%s.%s", mk, tk);
			if (parse_key(tk, &tp) || tp < 1 || tp > 64) {
				rc = sl_err_set(err, SL_EINPUT, "%s: expected a TP degree from 1 to 64", ctx);
				break;
			}
			if (prof->entry_count == SL_PROFILE_MAX_ENTRIES) {
				rc = sl_err_set(err, SL_EINPUT, "more than %d (mbs, tp) entries",
						SL_PROFILE_MAX_ENTRIES);
				break;
			}
			struct sl_profile_entry *e = &prof->entries[prof->entry_count++];
			e->mbs = (int)mbs;
			e->tp = (int)tp;
			rc = load_entry(tv, ctx, expected_layers, prof, e, err);
			if (rc)
				break;
		}
	}
	const char *schema = json_string_value(json_object_get(root, "schema"));
	if (!rc && schema && !strcmp(schema, "sailor.profile/1")) {
		prof->runtime_sailor = 1;
		json_t *entries = json_object_get(json_object_get(root, "source"), "entries");
		for (int i = 0; !rc && i < prof->entry_count; i++) {
			rc = load_memory(entries, &prof->entries[i], err);
			if (!rc)
				rc = load_attention_share(entries, &prof->entries[i], err);
		}
		json_t *idle = json_object_get(json_object_get(root, "source"), "idle_wait");
		if (!rc && idle)
			rc = load_idle_wait(idle, prof, err);
	}
	json_decref(root);
	if (!rc && prof->entry_count == 0)
		rc = sl_err_set(err, SL_EINPUT, "no (mbs, tp) entries");
	if (rc) {
		sl_err_prefix(err, "profile '%s'", path);
		sl_profile_free(prof);
		return rc;
	}
	qsort(prof->entries, (size_t)prof->entry_count, sizeof(prof->entries[0]), cmp_entry);
	*out = prof;
	return 0;
}

void sl_profile_fold_layers(struct sl_profile *prof, const int *map)
{
	int n = prof->num_layers;
	if (n < 1 || map[n - 1] == n - 1)
		return;
	/* in place: map[l] <= l, so a plan layer is written only from source layers at or after
	 * it, after they were read */
	for (int i = 0; i < prof->entry_count; i++) {
		struct sl_profile_entry *e = &prof->entries[i];
		for (int l = 0; l < n; l++) {
			int t = map[l];
			int first_part = l == 0 || map[l - 1] != t;
			double f = e->fwd_s[l], b = e->bwd_s[l], u = e->update_s[l];
			e->fwd_s[t] = first_part ? f : e->fwd_s[t] + f;
			e->bwd_s[t] = first_part ? b : e->bwd_s[t] + b;
			e->update_s[t] = first_part ? u : (u > e->update_s[t] ? u : e->update_s[t]);
		}
	}
	prof->num_layers = map[n - 1] + 1;
}

void sl_profile_free(struct sl_profile *prof)
{
	if (!prof)
		return;
	for (int i = 0; i < prof->entry_count; i++)
		free(prof->entries[i].fwd_s);
	free(prof);
}

const struct sl_profile_entry *sl_profile_find(const struct sl_profile *prof, int mbs, int tp)
{
	for (int i = 0; i < prof->entry_count; i++)
		if (prof->entries[i].mbs == mbs && prof->entries[i].tp == tp)
			return &prof->entries[i];
	return NULL;
}

char *sl_profile_path(char *buf, size_t size, const char *data_dir, const char *model,
		      const char *gpu)
{
	snprintf(buf, size, "%s/profiles/%s/%s.json", data_dir ? data_dir : sl_paths_data_dir(), model,
		 gpu);
	return buf;
}

char *sl_profile_locate(char *buf, size_t size, const char *data_dir, const char *overlay_dir,
			const char *model, const char *gpu)
{
	if (overlay_dir) {
		struct stat st;
		snprintf(buf, size, "%s/%s/%s.json", overlay_dir, model, gpu);
		if (stat(buf, &st) == 0 && S_ISREG(st.st_mode))
			return buf;
	}
	return sl_profile_path(buf, size, data_dir, model, gpu);
}

const char *sl_profile_entries_text(const struct sl_profile *prof, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < prof->entry_count && used + 1 < size; i++) {
		int w = snprintf(buf + used, size - used, "%smbs %d tp %d", i ? ", " : "",
				 prof->entries[i].mbs, prof->entries[i].tp);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}
