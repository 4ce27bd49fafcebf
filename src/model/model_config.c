/* Model hyper-parameters: loading and validation (see model_config.h). */
#include "model/model_config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/limits.h"
#include "util/paths.h"

static int is_path(const char *s)
{
	size_t n = strlen(s);
	return strchr(s, '/') || (n > 5 && !strcmp(s + n - 5, ".json"));
}

/* The names of the presets in data/models/ (its .json files), comma-separated and sorted, for
 * error messages. */
static const char *known_models(char *buf, size_t size)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/models", sl_paths_data_dir());
	struct dirent **entries = NULL;
	int n = scandir(dir, &entries, NULL, alphasort);
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		const char *name = entries[i]->d_name;
		size_t len = strlen(name);
		/* presets only: the per-layer size tables live here too */
		if (len > 5 && !strcmp(name + len - 5, ".json") && strncmp(name, "layer_sizes", 11) &&
		    used + len < size) {
			used += (size_t)snprintf(buf + used, size - used, "%s%.*s", used ? ", " : "",
						 (int)(len - 5), name);
		}
		free(entries[i]);
	}
	free(entries);
	return buf[0] ? buf : "none found in the data directory";
}

static int get_positive(const json_t *root, const char *key, long long max, int *out,
			struct sl_err *err)
{
	long long v = 0;
	int rc = sl_json_get_int(root, "", key, &v, err);
	if (rc)
		return rc;
	if (v <= 0 || v > max)
		return sl_err_set(err, SL_EINPUT, "%s: must be a whole number from 1 to %lld, got %lld",
				  key, max, v);
	*out = (int)v;
	return 0;
}

/* "sosp25_merged_layers": [[first, last], ...] in the artifact's numbering, increasing and
 * disjoint, each of at least two layers, none the embedding; builds sosp25_layer_map. */
static int parse_merged_layers(const json_t *root, struct sl_model_config *out, struct sl_err *err)
{
	const json_t *ranges = json_object_get(root, "sosp25_merged_layers");
	if (!ranges)
		return 0;
	const char *key = "sosp25_merged_layers";
	if (!json_is_array(ranges))
		return sl_err_set(err, SL_EINPUT, "%s: expected an array of [first, last] ranges", key);
	int plan_layers = out->num_blocks + 2, extra = 0, next_free = 1;
	long long first[SL_MODEL_MAX_MERGED], last[SL_MODEL_MAX_MERGED];
	size_t count = json_array_size(ranges);
	for (size_t i = 0; i < count; i++) {
		const json_t *r = json_array_get(ranges, i);
		if (!json_is_array(r) || json_array_size(r) != 2 ||
		    !json_is_integer(json_array_get(r, 0)) || !json_is_integer(json_array_get(r, 1)))
			return sl_err_set(err, SL_EINPUT, "%s[%zu]: expected [first, last] (whole "
					  "numbers)", key, i);
		long long a = json_integer_value(json_array_get(r, 0));
		long long b = json_integer_value(json_array_get(r, 1));
		if (a < next_free || b <= a || extra + (b - a) > SL_MODEL_MAX_MERGED)
			return sl_err_set(err, SL_EINPUT, "%s[%zu]: [%lld, %lld] must follow the "
					  "previous range, start after layer 0 and span 2 to %d "
					  "layers in all", key, i, a, b, SL_MODEL_MAX_MERGED + 1);
		first[i] = a;
		last[i] = b;
		extra += (int)(b - a);
		next_free = (int)b + 1;
	}
	int source = plan_layers + extra;
	if (count && last[count - 1] >= source)
		return sl_err_set(err, SL_EINPUT, "%s: layer %lld is past the artifact's last layer "
				  "%d (%d blocks + 2 + %d merged)", key, last[count - 1], source - 1,
				  out->num_blocks, extra);
	out->sosp25_layer_count = count ? source : 0;
	for (int l = 0, plan = 0; count && l < source; l++) {
		int inside = 0;
		for (size_t i = 0; i < count; i++)
			inside |= l > first[i] && l <= last[i];
		plan += l > 0 && !inside;
		out->sosp25_layer_map[l] = (unsigned short)plan;
	}
	return 0;
}

int sl_model_source_layer_map(const struct sl_model_config *model, int source_layers, int *map)
{
	int plan_layers = sl_model_plan_layers(model);
	if (source_layers == plan_layers) {
		for (int l = 0; l < source_layers; l++)
			map[l] = l;
		return 0;
	}
	if (!model->sosp25_layer_count || source_layers != model->sosp25_layer_count)
		return -1;
	for (int l = 0; l < source_layers; l++)
		map[l] = model->sosp25_layer_map[l];
	return 0;
}

int sl_model_config_load(const char *name_or_path, struct sl_model_config *out,
			 struct sl_err *err)
{
	char path[4096];
	if (is_path(name_or_path))
		snprintf(path, sizeof(path), "%s", name_or_path);
	else
		snprintf(path, sizeof(path), "%s/models/%s.json", sl_paths_data_dir(), name_or_path);

	struct sl_err load_err = {0};
	json_t *root = sl_json_load_file(path, "model", &load_err);
	if (!root) {
		if (!is_path(name_or_path) && load_err.code == SL_ENOTFOUND) {
			char known[1024];
			return sl_err_set(err, SL_ENOTFOUND,
					  "unknown model '%s' (known: %s; or give a JSON file of "
					  "hyper-parameters)",
					  name_or_path, known_models(known, sizeof(known)));
		}
		if (err)
			*err = load_err;
		return load_err.code;
	}
	memset(out, 0, sizeof(*out));
	int rc = 0;
	const char *name = NULL;
	if (json_object_get(root, "name"))
		rc = sl_json_get_string(root, "", "name", &name, err);
	if (!rc)
		snprintf(out->name, sizeof(out->name), "%s", name ? name : name_or_path);
	if (!rc) rc = get_positive(root, "layers", SL_MAX_MODEL_BLOCKS, &out->num_blocks, err);
	if (!rc) rc = get_positive(root, "hidden", SL_MAX_HIDDEN, &out->hidden, err);
	if (!rc) rc = get_positive(root, "heads", SL_MAX_HEADS, &out->heads, err);
	if (!rc) rc = get_positive(root, "seq_len", SL_MAX_SEQ_LEN, &out->seq_len, err);
	if (!rc) rc = get_positive(root, "vocab", SL_MAX_VOCAB, &out->vocab, err);
	out->ffn_hidden = out->hidden * 4;
	if (!rc && json_object_get(root, "ffn_hidden"))
		rc = get_positive(root, "ffn_hidden", SL_MAX_FFN_HIDDEN, &out->ffn_hidden, err);
	out->default_global_batch = 1024;
	if (!rc)
		rc = sl_json_opt_int(root, "", "global_batch", &out->default_global_batch, err);
	if (!rc && (out->default_global_batch <= 0 ||
		    out->default_global_batch > SL_MAX_GLOBAL_BATCH))
		rc = sl_err_set(err, SL_EINPUT, "global_batch: must be a whole number from 1 to %lld, "
				"got %lld", SL_MAX_GLOBAL_BATCH, out->default_global_batch);
	if (!rc)
		rc = parse_merged_layers(root, out, err);
	if (!rc && out->hidden % out->heads != 0)
		rc = sl_err_set(err, SL_EINPUT,
				"hidden %d is not divisible by heads %d: choose heads that divide hidden",
				out->hidden, out->heads);
	json_decref(root);
	if (rc)
		sl_err_prefix(err, "model '%s'", path);
	return rc;
}

int sl_model_plan_layers(const struct sl_model_config *model) { return model->num_blocks + 2; }

long long sl_model_param_count(const struct sl_model_config *model)
{
	long long h = model->hidden, f = model->ffn_hidden;
	long long embedding = (long long)model->vocab * h + (long long)model->seq_len * h;
	/* per block: QKV + proj (4h^2 + 4h), MLP (2hf + f + h), two LayerNorms (4h) */
	long long block = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;
	long long final_norm = 2 * h;
	return embedding + model->num_blocks * block + final_norm;
}
