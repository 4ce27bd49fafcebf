/* Per-layer sizes: from the SOSP'25 artifact's llm_info.json for the named models, from formulas
 * otherwise (see layer_sizes.h). Invariants: arrays have num_layers entries for every TP 1..8. */
#include "model/layer_sizes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/paths.h"

#define MAX_TP SL_LAYER_SIZES_MAX_TP

static struct sl_layer_sizes *alloc_sizes(int n)
{
	struct sl_layer_sizes *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->num_layers = n;
	s->kind = calloc((size_t)n, sizeof(*s->kind));
	s->fwd_flops = calloc((size_t)n, sizeof(double));
	int ok = s->kind && s->fwd_flops;
	for (int t = 1; t <= MAX_TP && ok; t++) {
		s->params[t] = calloc((size_t)n, sizeof(double));
		s->act_mem_bytes[t] = calloc((size_t)n, sizeof(double));
		s->act_output_bytes[t] = calloc((size_t)n, sizeof(double));
		ok = s->params[t] && s->act_mem_bytes[t] && s->act_output_bytes[t];
	}
	if (!ok) {
		sl_layer_sizes_free(s);
		return NULL;
	}
	return s;
}

void sl_layer_sizes_free(struct sl_layer_sizes *s)
{
	if (!s)
		return;
	for (int t = 1; t <= MAX_TP; t++) {
		free(s->params[t]);
		free(s->act_mem_bytes[t]);
		free(s->act_output_bytes[t]);
	}
	free(s->kind);
	free(s->fwd_flops);
	free(s);
}

/* Megatron pads the vocabulary to a multiple of 128·tp (--make-vocab-size-divisible-by 128);
 * the artifact's OPT-350 figures show it (tp 4: 50688 rows, tp 8: 51200). */
static double padded_vocab(int vocab, int tp)
{
	long long m = 128LL * tp;
	return (double)(((long long)vocab + m - 1) / m * m);
}

/* Forward FLOPs per sample (2 per multiply-add), Megatron GPT layer (Narayanan et al. 2021,
 * "Efficient Large-Scale Language Model Training on GPU Clusters", section 5.1, split by
 * layer): block = QKV 6sh² + projection 2sh² + MLP 4shf + attention scores and context 4s²h;
 * head = logits 2shV plus its final norm, about 5sh; embedding = lookups and position add, about
 * s·h. */
static void fill_flops(struct sl_layer_sizes *s, const struct sl_model_config *m)
{
	double sq = m->seq_len, h = m->hidden, f = m->ffn_hidden, v = m->vocab;
	for (int l = 0; l < s->num_layers; l++) {
		switch (s->kind[l]) {
		case SL_LAYER_EMBEDDING: s->fwd_flops[l] = sq * h; break;
		case SL_LAYER_BLOCK: s->fwd_flops[l] = 8 * sq * h * h + 4 * sq * h * f + 4 * sq * sq * h; break;
		case SL_LAYER_HEAD: s->fwd_flops[l] = 2 * sq * h * v + 5 * sq * h; break;
		}
	}
}

static void set_kinds(struct sl_layer_sizes *s)
{
	int n = s->num_layers;
	for (int l = 0; l < n; l++)
		s->kind[l] = SL_LAYER_BLOCK;
	s->kind[0] = SL_LAYER_EMBEDDING;
	s->kind[n - 1] = SL_LAYER_HEAD;
}

int sl_layer_sizes_from_formulas(const struct sl_model_config *m, struct sl_layer_sizes **out,
				 struct sl_err *err)
{
	int n = m->num_blocks + 2;
	struct sl_layer_sizes *s = alloc_sizes(n);
	if (!s)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	set_kinds(s);
	double sq = m->seq_len, h = m->hidden, f = m->ffn_hidden, a = m->heads;
	for (int t = 1; t <= MAX_TP; t++) {
		double vp = padded_vocab(m->vocab, t);
		for (int l = 0; l < n; l++) {
			double p = 0, act = 0, outf = sq * h;
			switch (s->kind[l]) {
			case SL_LAYER_EMBEDDING:
				/* word embedding sharded by rows, learned positions replicated */
				p = vp * h / t + sq * h;
				act = sq * h;
				break;
			case SL_LAYER_BLOCK:
				/* column-parallel QKV and fc1 (weights and biases sharded), row-parallel
				 * projection and fc2 (weights sharded, biases replicated), 2 LayerNorms */
				p = (3 * h * h + 3 * h) / t + h * h / t + h + (h * f + f) / t + f * h / t + h + 4 * h;
				/* activation floats per sample as the artifact measured them for OPT-350 and
				 * OPT-30 at tp 1/2/4/8 (llm_info.json: exactly s·h·(3 + 40/t) for OPT-350,
				 * whose a·s/h = 32 and f = 4h): s·h replicated 3 (LayerNorm inputs, residual),
				 * sharded QKV 3 + context 1 + MLP f/h, plus the a·s² attention scores */
				act = 3 * sq * h + (sq * h * (4 + f / h) + a * sq * sq) / t;
				break;
			case SL_LAYER_HEAD:
				/* final LayerNorm + the tied word-embedding copy of Megatron-DeepSpeed's last
				 * pipeline stage (llm_info.json OPT-350: vocab_padded·h/t + 2h) */
				p = vp * h / t + 2 * h;
				/* logits and their softmax (2·s·V/t) plus about 1.25·s·h (llm_info.json) */
				act = 2 * sq * vp / t + 1.25 * sq * h;
				outf = sq * vp / t + 1;
				break;
			}
			s->params[t][l] = p;
			s->act_mem_bytes[t][l] = 4 * act;
			s->act_output_bytes[t][l] = 4 * outf;
		}
	}
	s->word_embedding_params = (double)m->vocab * h;
	s->head_holds_embedding = 1;
	s->from_file = 0;
	fill_flops(s, m);
	*out = s;
	return 0;
}

/* Fills TP degrees the file lacks from the largest measured degree below (or the smallest
 * above): sharded quantities scale with t0/t. Parameters and activations of a Megatron layer are
 * almost entirely sharded (LayerNorms and a few biases are not, < 0.1% of a block), so the error
 * is small; outputs of embedding and blocks are full (s·h) and stay, the head's logits shard. */
static void derive_missing_tp(struct sl_layer_sizes *s)
{
	for (int t = 1; t <= MAX_TP; t++) {
		if (s->tp_in_file[t])
			continue;
		int t0 = 0;
		for (int k = t - 1; k >= 1 && !t0; k--)
			if (s->tp_in_file[k])
				t0 = k;
		for (int k = t + 1; k <= MAX_TP && !t0; k++)
			if (s->tp_in_file[k])
				t0 = k;
		double r = (double)t0 / t;
		for (int l = 0; l < s->num_layers; l++) {
			s->params[t][l] = s->params[t0][l] * r;
			s->act_mem_bytes[t][l] = s->act_mem_bytes[t0][l] * r;
			s->act_output_bytes[t][l] = s->kind[l] == SL_LAYER_HEAD ? s->act_output_bytes[t0][l] * r
									      : s->act_output_bytes[t0][l];
		}
	}
}

static int load_from_file(const char *path, const json_t *model_obj, const struct sl_model_config *m,
			  struct sl_layer_sizes **out, struct sl_err *err)
{
	json_t *tp1 = json_object_get(model_obj, "1");
	if (!json_is_object(tp1))
		return sl_err_set(err, SL_EINPUT, "layer sizes '%s': %s.1: missing TP degree 1", path,
				  m->name);
	int n = (int)json_object_size(tp1);
	/* the artifact's numbering folded into the plan's (model_config.h, sosp25_merged_layers) */
	int map[SL_MAX_MODEL_BLOCKS + 2 + SL_MODEL_MAX_MERGED];
	if (n > (int)(sizeof(map) / sizeof(map[0])) || sl_model_source_layer_map(m, n, map))
		return sl_err_set(err, SL_EINPUT,
				  "layer sizes '%s': %s has %d layers but the model file has %d blocks "
				  "(expected %d layers, or %d with its sosp25_merged_layers)", path,
				  m->name, n, m->num_blocks, m->num_blocks + 2,
				  m->sosp25_layer_count ? m->sosp25_layer_count : m->num_blocks + 2);
	struct sl_layer_sizes *s = alloc_sizes(m->num_blocks + 2);
	if (!s)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	set_kinds(s);
	int rc = 0;
	const char *tk;
	json_t *tv;
	json_object_foreach((json_t *)model_obj, tk, tv)
	{
		char *end;
		long t = strtol(tk, &end, 10);
		if (*end || t < 1 || t > MAX_TP)
			continue;
		if (!json_is_object(tv) || (int)json_object_size(tv) != n) {
			rc = sl_err_set(err, SL_EINPUT, "layer sizes '%s': %s.%s: expected %d layers", path,
					m->name, tk, n);
			break;
		}
		for (int l = 0; l < n && !rc; l++) {
			char key[16], ctx[96];
			snprintf(key, sizeof(key), "%d", l);
			snprintf(ctx, sizeof(ctx), "%s.%s.%d", m->name, tk, l);
			json_t *lv = json_object_get(tv, key);
			double p = 0, act = 0, o = 0;
			if (!lv)
				rc = sl_err_set(err, SL_EINPUT, "%s: missing layer", ctx);
			if (!rc) rc = sl_json_get_number(lv, ctx, "params_floats", &p, err);
			if (!rc) rc = sl_json_get_number(lv, ctx, "act_mem_floats", &act, err);
			if (!rc) rc = sl_json_get_number(lv, ctx, "act_output_floats", &o, err);
			if (!rc && (p < 0 || act < 0 || o < 0))
				rc = sl_err_set(err, SL_EINPUT, "%s: sizes must not be negative", ctx);
			/* "floats" are 4-byte units (SIMULATOR.md section 2.4); a folded layer holds
			 * the parameters and activations of all its parts and passes on the last
			 * part's output */
			s->params[t][map[l]] += p;
			s->act_mem_bytes[t][map[l]] += 4 * act;
			s->act_output_bytes[t][map[l]] = 4 * o;
		}
		if (rc) {
			sl_err_prefix(err, "layer sizes '%s'", path);
			break;
		}
		s->tp_in_file[t] = 1;
	}
	if (rc) {
		sl_layer_sizes_free(s);
		return rc;
	}
	derive_missing_tp(s);
	s->from_file = 1;
	s->word_embedding_params = (double)m->vocab * m->hidden;
	/* the head holds the tied embedding copy when its parameters are at least vocab·h */
	s->head_holds_embedding = s->params[1][s->num_layers - 1] >= s->word_embedding_params;
	fill_flops(s, m);
	*out = s;
	return 0;
}

int sl_layer_sizes_load(const struct sl_model_config *m, const char *data_dir,
			struct sl_layer_sizes **out, struct sl_err *err)
{
	*out = NULL;
	char path[4096];
	snprintf(path, sizeof(path), "%s/models/layer_sizes_sosp25.json",
		 data_dir ? data_dir : sl_paths_data_dir());
	json_t *root = sl_json_load_file(path, "layer sizes", err);
	if (!root)
		return err ? err->code : SL_EINPUT;
	json_t *model_obj = json_object_get(root, m->name);
	int rc;
	if (json_is_object(model_obj))
		rc = load_from_file(path, model_obj, m, out, err);
	else
		rc = sl_layer_sizes_from_formulas(m, out, err);
	json_decref(root);
	return rc;
}
