/* GPT-2 layers: parameters, activation caches, forward and backward (see gpt_layers.h).
 *
 * Block forward, x -> out, with the cached tensors named as in the struct:
 *   ln1 = LN1(x); qkv = ln1 Wqkv^T + bqkv; atty = attention(qkv);
 *   res1 = x + atty Wproj^T + bproj; ln2 = LN2(res1); fch = ln2 Wfc^T + bfc; fcg = gelu(fch);
 *   out = res1 + fcg Wmproj^T + bmproj.
 * Block backward, from dout (workspace names):
 *   dfc = (dout Wmproj) * gelu'(fch); dln = dfc Wfc; dres = dout + LN2'(dln);
 *   dy = dres Wproj; dqkv = attention'(dy); dln = dqkv Wqkv; dx = dres + LN1'(dln);
 *   plus the parameter gradients of each product (kernels.h, sl_matmul_backward).
 * Invariants: parameter storage is one block (values, grads, exp_avg, exp_avg_sq, each in
 * parameter order; the moments only of the parameters cfg.moments keeps them for), so the
 * optimizer and checkpoints see each array as contiguous per parameter; the activation caches
 * (one per slot, side by side), the recomputed tensors' working set (borrowed) and the
 * workspace are allocated once, at init, for the largest micro-batch, and the step loop never
 * allocates (selecting a slot only re-points the views). tp == 1 runs the original kernels
 * only; the vocabulary-parallel paths (tp > 1) are separate branches. */
#include "train/gpt_layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/cpu/kernels.h"

#define INIT_STD 0.02f

float *sl_alloc_floats(size_t n)
{
	size_t bytes = (n ? n : 1) * sizeof(float);
	bytes = (bytes + 63) / 64 * 64;
	float *p = aligned_alloc(64, bytes);
	if (p)
		memset(p, 0, bytes);
	return p;
}

const char *sl_gpt_recompute_name(int recompute)
{
	switch (recompute) {
	case SL_GPT_RECOMPUTE_NONE: return "none";
	case SL_GPT_RECOMPUTE_FULL: return "full";
	case SL_GPT_RECOMPUTE_SELECTIVE: return "selective";
	}
	return "?";
}

/* Rounds a sub-buffer size up so every view stays 64-byte aligned. */
static size_t pad16(size_t n) { return (n + 15) / 16 * 16; }

static struct sl_param *add_param(struct sl_gpt_layer *layer, const char *suffix, long long full0,
				  long long full1, int shard_dim, int shard_parts)
{
	struct sl_param *p = &layer->params[layer->param_count++];
	char name[SL_PARAM_NAME_MAX];
	snprintf(name, sizeof(name), "layer%d.%s", layer->cfg.index, suffix);
	sl_param_describe(p, name, full0, full1, shard_dim, shard_parts, layer->cfg.tp,
			  layer->cfg.tp_rank);
	p->init_std = INIT_STD;
	return p;
}

static void set_const(struct sl_param *p, float value)
{
	p->init_std = 0.0f;
	p->init_value = value;
}

static void describe_params(struct sl_gpt_layer *layer)
{
	const struct sl_gpt_layer_config *c = &layer->cfg;
	long long C = c->hidden, F = c->ffn_hidden;
	struct sl_param *p;
	switch (c->kind) {
	case SL_GPT_EMBEDDING:
		/* vocabulary-parallel by rows (uneven when tp does not divide vocab) */
		add_param(layer, "wte.weight", c->vocab, C, 0, 1);
		add_param(layer, "wpe.weight", c->max_seq_len, C, -1, 1);
		break;
	case SL_GPT_BLOCK: {
		float proj_std = INIT_STD / sqrtf(2.0f * (float)c->num_blocks);
		set_const(add_param(layer, "ln1.weight", C, 0, -1, 1), 1.0f);
		set_const(add_param(layer, "ln1.bias", C, 0, -1, 1), 0.0f);
		add_param(layer, "attn.qkv.weight", 3 * C, C, 0, 3)->decay = 1;
		set_const(add_param(layer, "attn.qkv.bias", 3 * C, 0, 0, 3), 0.0f);
		p = add_param(layer, "attn.proj.weight", C, C, 1, 1);
		p->decay = 1;
		p->init_std = proj_std;
		set_const(add_param(layer, "attn.proj.bias", C, 0, -1, 1), 0.0f);
		set_const(add_param(layer, "ln2.weight", C, 0, -1, 1), 1.0f);
		set_const(add_param(layer, "ln2.bias", C, 0, -1, 1), 0.0f);
		add_param(layer, "mlp.fc.weight", F, C, 0, 1)->decay = 1;
		set_const(add_param(layer, "mlp.fc.bias", F, 0, 0, 1), 0.0f);
		p = add_param(layer, "mlp.proj.weight", C, F, 1, 1);
		p->decay = 1;
		p->init_std = proj_std;
		set_const(add_param(layer, "mlp.proj.bias", C, 0, -1, 1), 0.0f);
		break;
	}
	case SL_GPT_HEAD:
		set_const(add_param(layer, "ln_f.weight", C, 0, -1, 1), 1.0f);
		set_const(add_param(layer, "ln_f.bias", C, 0, -1, 1), 0.0f);
		if (c->own_wte) {
			p = add_param(layer, "wte.weight", c->vocab, C, 0, 1);
			snprintf(p->name, sizeof(p->name), "layer0.wte.weight");
		}
		break;
	}
}

static int validate(const struct sl_gpt_layer_config *c, int max_batch, int seq,
		    struct sl_err *err)
{
	if (c->hidden <= 0 || c->heads <= 0 || c->ffn_hidden <= 0 || c->max_seq_len <= 0 ||
	    c->vocab <= 0 || c->num_blocks <= 0)
		return sl_err_set(err, SL_EINPUT, "layer %d: every size must be positive", c->index);
	if (c->hidden % c->heads)
		return sl_err_set(err, SL_EINPUT,
				  "layer %d: hidden %d is not divisible by heads %d: choose heads "
				  "that divide hidden",
				  c->index, c->hidden, c->heads);
	if (c->tp < 1 || c->tp_rank < 0 || c->tp_rank >= c->tp)
		return sl_err_set(err, SL_EINPUT, "layer %d: tp rank %d of %d is out of range",
				  c->index, c->tp_rank, c->tp);
	if (c->kind == SL_GPT_BLOCK && (c->heads % c->tp || c->ffn_hidden % c->tp))
		return sl_err_set(err, SL_EINPUT,
				  "layer %d: tp %d must divide heads %d and ffn_hidden %d", c->index,
				  c->tp, c->heads, c->ffn_hidden);
	if (c->kind != SL_GPT_BLOCK && c->vocab < c->tp)
		return sl_err_set(err, SL_EINPUT,
				  "layer %d: vocabulary %d is smaller than tp %d: every rank needs "
				  "rows of the token table",
				  c->index, c->vocab, c->tp);
	if (c->tp > 1 && (!c->comm.allreduce_sum ||
			  (c->kind == SL_GPT_HEAD && !c->comm.allreduce_max)))
		return sl_err_set(err, SL_EINPUT,
				  "layer %d: tp %d needs a tensor-parallel all-reduce sum%s (cfg.comm)",
				  c->index, c->tp, c->kind == SL_GPT_HEAD ? " and max" : "");
	if (c->slots < 0)
		return sl_err_set(err, SL_EINPUT, "layer %d: %d activation slots", c->index,
				  c->slots);
	if (max_batch <= 0 || seq <= 0)
		return sl_err_set(err, SL_EINPUT, "layer %d: micro-batch and sequence must be positive",
				  c->index);
	if (seq > c->max_seq_len)
		return sl_err_set(err, SL_EINPUT,
				  "sequence length %d is longer than the model's seq_len %d: use "
				  "--seq-len %d or less",
				  seq, c->max_seq_len, c->max_seq_len);
	return 0;
}

/* Carves the activation cache into views; with base == NULL only counts the floats. Tensors
 * the layer recomputes (cfg.recompute) are carved from `shared` instead, counted in *shared_n. */
static size_t layout_cache(struct sl_gpt_layer *l, float *base, float *shared, size_t *shared_n)
{
	size_t n = (size_t)l->max_batch * l->seq, off = 0, soff = 0;
	size_t C = (size_t)l->cfg.hidden, Cl = (size_t)l->local_hidden, Fl = (size_t)l->local_ffn;
	int full = l->cfg.kind == SL_GPT_BLOCK && l->cfg.recompute == SL_GPT_RECOMPUTE_FULL;
	int core = l->cfg.kind == SL_GPT_BLOCK && l->cfg.recompute != SL_GPT_RECOMPUTE_NONE;
#define VIEW_IN(field, count, recomputed)                                     \
	do {                                                                  \
		if (recomputed) {                                             \
			l->field = shared ? shared + soff : NULL;             \
			soff += pad16(count);                                 \
		} else {                                                      \
			l->field = base ? base + off : NULL;                  \
			off += pad16(count);                                  \
		}                                                             \
	} while (0)
#define VIEW(field, count) VIEW_IN(field, count, full)
	switch (l->cfg.kind) {
	case SL_GPT_EMBEDDING:
		break;
	case SL_GPT_BLOCK:
		VIEW(ln1, n * C);
		VIEW(ln1_mean, n);
		VIEW(ln1_rstd, n);
		VIEW(qkv, n * 3 * Cl);
		VIEW_IN(att, (size_t)l->max_batch * l->local_heads * l->seq * l->seq, core);
		VIEW_IN(atty, n * Cl, core);
		VIEW(res1, n * C);
		VIEW(ln2, n * C);
		VIEW(ln2_mean, n);
		VIEW(ln2_rstd, n);
		VIEW(fch, n * Fl);
		VIEW(fcg, n * Fl);
		break;
	case SL_GPT_HEAD:
		VIEW(ln1, n * C);
		VIEW(ln1_mean, n);
		VIEW(ln1_rstd, n);
		VIEW(logits, n * (size_t)l->local_vocab);
		VIEW(lse, n);
		VIEW(losses, n);
		if (l->cfg.tp > 1)
			VIEW(ce_sum, 2 * n);
		break;
	}
#undef VIEW
#undef VIEW_IN
	if (shared_n)
		*shared_n = soff;
	return off;
}

/* 1 when the layer keeps AdamW moments for p in its storage (cfg.moments). */
static int keeps_moments(const struct sl_gpt_layer *l, const struct sl_param *p)
{
	if (l->cfg.moments == SL_GPT_MOMENTS_ALL)
		return 1;
	return l->cfg.moments == SL_GPT_MOMENTS_TABLE_ONLY && !strcmp(p->name, "layer0.wte.weight");
}

int sl_gpt_layer_init(struct sl_gpt_layer *layer, const struct sl_gpt_layer_config *cfg,
		      int max_batch, int seq, struct sl_err *err)
{
	memset(layer, 0, sizeof(*layer));
	int rc = validate(cfg, max_batch, seq, err);
	if (rc)
		return rc;
	layer->cfg = *cfg;
	layer->head_size = cfg->hidden / cfg->heads;
	layer->local_heads = cfg->kind == SL_GPT_BLOCK ? cfg->heads / cfg->tp : cfg->heads;
	layer->local_hidden = layer->local_heads * layer->head_size;
	layer->local_ffn = cfg->kind == SL_GPT_BLOCK ? cfg->ffn_hidden / cfg->tp : cfg->ffn_hidden;
	long long v0, vl;
	sl_param_shard_range(cfg->vocab, cfg->tp, cfg->tp_rank, &v0, &vl);
	layer->vocab_start = (int)v0;
	layer->local_vocab = (int)vl;
	layer->max_batch = max_batch;
	layer->seq = seq;
	layer->slots = cfg->slots > 0 ? cfg->slots : 1;
	describe_params(layer);

	size_t total = 0, with_moments = 0;
	for (int i = 0; i < layer->param_count; i++) {
		total += (size_t)layer->params[i].numel;
		if (keeps_moments(layer, &layer->params[i]))
			with_moments += (size_t)layer->params[i].numel;
	}
	layer->storage_floats = 2 * total + 2 * with_moments;
	layer->storage = sl_alloc_floats(layer->storage_floats);
	layer->slot_floats = layout_cache(layer, NULL, NULL, &layer->shared_floats);
	layer->cache_floats = layer->slot_floats * (size_t)layer->slots;
	layer->cache = layer->cache_floats ? sl_alloc_floats(layer->cache_floats) : NULL;
	if (!layer->storage || (layer->cache_floats && !layer->cache)) {
		size_t bytes = (layer->storage_floats + layer->cache_floats) * sizeof(float);
		sl_gpt_layer_free(layer);
		return sl_err_set(err, SL_ENOMEM, "layer %d: cannot allocate %.1f MiB", cfg->index,
				  (double)bytes / (1 << 20));
	}
	size_t off = 0, moff = 0;
	float *m = layer->storage + 2 * total, *v = m + with_moments;
	for (int i = 0; i < layer->param_count; i++) {
		struct sl_param *p = &layer->params[i];
		p->value = layer->storage + off;
		p->grad = layer->storage + total + off;
		off += (size_t)p->numel;
		if (keeps_moments(layer, p)) {
			p->exp_avg = m + moff;
			p->exp_avg_sq = v + moff;
			moff += (size_t)p->numel;
		}
	}
	sl_gpt_layer_select_slot(layer, 0);
	if (cfg->kind == SL_GPT_HEAD && cfg->own_wte)
		layer->wte = &layer->params[layer->param_count - 1];
	return 0;
}

void sl_gpt_layer_free(struct sl_gpt_layer *layer)
{
	free(layer->storage);
	free(layer->cache);
	layer->storage = layer->cache = NULL;
}

void sl_gpt_layer_init_weights(struct sl_gpt_layer *layer, uint64_t seed)
{
	memset(layer->storage, 0, layer->storage_floats * sizeof(float));
	for (int i = 0; i < layer->param_count; i++)
		sl_param_init(&layer->params[i], seed);
}

void sl_gpt_layer_select_slot(struct sl_gpt_layer *layer, int slot)
{
	layer->slot = slot;
	layout_cache(layer, layer->cache ? layer->cache + layer->slot_floats * (size_t)slot : NULL,
		     layer->shared, NULL);
}

void sl_gpt_layer_attach_shared(struct sl_gpt_layer *layer, float *shared)
{
	layer->shared = shared;
	sl_gpt_layer_select_slot(layer, layer->slot);
}

void sl_gpt_layer_tie(struct sl_gpt_layer *head, struct sl_gpt_layer *embedding)
{
	head->wte = sl_gpt_layer_param(embedding, "wte.weight");
}

struct sl_param *sl_gpt_layer_param(struct sl_gpt_layer *layer, const char *name)
{
	/* accepts the full name or the part after "layer<k>." */
	for (int i = 0; i < layer->param_count; i++) {
		const char *full = layer->params[i].name;
		const char *dot = strchr(full, '.');
		if (!strcmp(full, name) || (dot && !strcmp(dot + 1, name)))
			return &layer->params[i];
	}
	return NULL;
}

/* Parameter order of describe_params(), for readable kernel calls. */
enum { LN1_W, LN1_B, QKV_W, QKV_B, PROJ_W, PROJ_B, LN2_W, LN2_B, FC_W, FC_B, MPROJ_W, MPROJ_B };
enum { WTE, WPE };
enum { LNF_W, LNF_B };
#define V(i) (l->params[i].value)
#define G(i) (l->params[i].grad)

static int check_mb(const struct sl_gpt_layer *l, const struct sl_gpt_microbatch *mb,
		    struct sl_err *err)
{
	if (mb->batch <= 0 || mb->batch > l->max_batch || mb->seq <= 0 || mb->seq > l->seq)
		return sl_err_set(err, SL_EINPUT,
				  "layer %d: micro-batch %d x %d exceeds the %d x %d it was sized for",
				  l->cfg.index, mb->batch, mb->seq, l->max_batch, l->seq);
	return 0;
}

static int allreduce(const struct sl_gpt_layer *l, float *buf, long long count,
		     struct sl_err *err)
{
	if (l->cfg.tp <= 1)
		return 0;
	int rc = l->cfg.comm.allreduce_sum(buf, count, l->cfg.comm.ctx);
	if (rc)
		return sl_err_set(err, rc, "layer %d: tensor-parallel all-reduce failed",
				  l->cfg.index);
	return 0;
}

/* out = residual + partial + bias, row by row (the tp > 1 epilogue of a row-parallel product). */
static void add_residual_bias(float *out, const float *residual, const float *partial,
			      const float *bias, int rows, int C)
{
#pragma omp parallel for schedule(static)
	for (int i = 0; i < rows; i++) {
		size_t o = (size_t)i * C;
		for (int j = 0; j < C; j++)
			out[o + j] = residual[o + j] + partial[o + j] + bias[j];
	}
}

static int block_forward(struct sl_gpt_layer *l, struct sl_gpt_workspace *ws,
			 const struct sl_gpt_microbatch *mb, const float *x, float *out,
			 struct sl_err *err)
{
	int B = mb->batch, T = mb->seq, N = B * T;
	int C = l->cfg.hidden, Cl = l->local_hidden, Fl = l->local_ffn;
	int rc;
	sl_layernorm_forward(l->ln1, l->ln1_mean, l->ln1_rstd, x, V(LN1_W), V(LN1_B), N, C);
	sl_matmul_forward(l->qkv, l->ln1, V(QKV_W), V(QKV_B), N, C, 3 * Cl);
	sl_attention_forward(l->atty, l->att, l->qkv, B, T, l->local_heads, l->head_size);
	if (l->cfg.tp == 1) {
		sl_matmul_forward_residual(l->res1, x, l->atty, V(PROJ_W), V(PROJ_B), N, Cl, C);
	} else {
		sl_matmul_forward(ws->dres, l->atty, V(PROJ_W), NULL, N, Cl, C);
		if ((rc = allreduce(l, ws->dres, (long long)N * C, err)))
			return rc;
		add_residual_bias(l->res1, x, ws->dres, V(PROJ_B), N, C);
	}
	sl_layernorm_forward(l->ln2, l->ln2_mean, l->ln2_rstd, l->res1, V(LN2_W), V(LN2_B), N, C);
	sl_matmul_forward(l->fch, l->ln2, V(FC_W), V(FC_B), N, C, Fl);
	sl_gelu_forward(l->fcg, l->fch, (long)N * Fl);
	if (l->cfg.tp == 1) {
		sl_matmul_forward_residual(out, l->res1, l->fcg, V(MPROJ_W), V(MPROJ_B), N, Fl, C);
	} else {
		sl_matmul_forward(ws->dres, l->fcg, V(MPROJ_W), NULL, N, Fl, C);
		if ((rc = allreduce(l, ws->dres, (long long)N * C, err)))
			return rc;
		add_residual_bias(out, l->res1, ws->dres, V(MPROJ_B), N, C);
	}
	return 0;
}

void sl_gpt_layer_recompute_attention(struct sl_gpt_layer *block,
				      const struct sl_gpt_microbatch *mb)
{
	sl_attention_forward(block->atty, block->att, block->qkv, mb->batch, mb->seq,
			     block->local_heads, block->head_size);
}

static int block_backward(struct sl_gpt_layer *l, struct sl_gpt_workspace *ws,
			  const struct sl_gpt_microbatch *mb, const float *x, const float *dout,
			  float *dx, struct sl_err *err)
{
	int B = mb->batch, T = mb->seq, N = B * T;
	int C = l->cfg.hidden, Cl = l->local_hidden, Fl = l->local_ffn;
	int rc;
	/* recomputation: rebuild what forward did not keep (bit-for-bit, gpt_layers.h) */
	if (l->cfg.recompute == SL_GPT_RECOMPUTE_FULL) {
		if ((rc = block_forward(l, ws, mb, x, ws->recompute_out, err)))
			return rc;
	} else if (l->cfg.recompute == SL_GPT_RECOMPUTE_SELECTIVE) {
		sl_gpt_layer_recompute_attention(l, mb);
	}
	/* MLP */
	sl_matmul_backward(ws->dfc, G(MPROJ_W), G(MPROJ_B), dout, l->fcg, V(MPROJ_W), N, Fl, C);
	sl_gelu_backward(ws->dfc, l->fch, ws->dfc, (long)N * Fl);
	sl_matmul_backward(ws->dln, G(FC_W), G(FC_B), ws->dfc, l->ln2, V(FC_W), N, C, Fl);
	if ((rc = allreduce(l, ws->dln, (long long)N * C, err)))
		return rc;
	memcpy(ws->dres, dout, (size_t)N * C * sizeof(float));
	sl_layernorm_backward(ws->dres, G(LN2_W), G(LN2_B), ws->dln, l->res1, V(LN2_W), l->ln2_mean,
			      l->ln2_rstd, N, C);
	/* attention */
	sl_matmul_backward(ws->dy, G(PROJ_W), G(PROJ_B), ws->dres, l->atty, V(PROJ_W), N, Cl, C);
	sl_attention_backward(ws->dqkv, ws->att_scratch, ws->threads, ws->dy, l->att, l->qkv, B, T,
			      l->local_heads, l->head_size);
	sl_matmul_backward(ws->dln, G(QKV_W), G(QKV_B), ws->dqkv, l->ln1, V(QKV_W), N, C, 3 * Cl);
	if ((rc = allreduce(l, ws->dln, (long long)N * C, err)))
		return rc;
	memcpy(dx, ws->dres, (size_t)N * C * sizeof(float));
	sl_layernorm_backward(dx, G(LN1_W), G(LN1_B), ws->dln, x, V(LN1_W), l->ln1_mean,
			      l->ln1_rstd, N, C);
	return 0;
}

static int embedding_forward(struct sl_gpt_layer *l, const struct sl_gpt_microbatch *mb,
			     float *out, struct sl_err *err)
{
	int n = mb->batch * mb->seq;
	for (int i = 0; i < n; i++)
		if (mb->tokens[i] < 0 || mb->tokens[i] >= l->cfg.vocab)
			return sl_err_set(err, SL_EINPUT,
					  "token %d at position %d is outside the model's vocabulary "
					  "of %d",
					  (int)mb->tokens[i], i, l->cfg.vocab);
	if (l->cfg.tp == 1) {
		sl_embedding_forward(out, mb->tokens, V(WTE), V(WPE), mb->batch, mb->seq,
				     l->cfg.hidden);
		return 0;
	}
	/* Each token's row lives on one rank; the others add zeros, so the sum is exact. */
	sl_embedding_forward_shard(out, mb->tokens, V(WTE), l->vocab_start, l->local_vocab, n,
				   l->cfg.hidden);
	int rc = allreduce(l, out, (long long)n * l->cfg.hidden, err);
	if (rc)
		return rc;
	sl_embedding_add_positions(out, V(WPE), mb->batch, mb->seq, l->cfg.hidden);
	return 0;
}

static int allreduce_max(const struct sl_gpt_layer *l, float *buf, long long count,
			 struct sl_err *err)
{
	int rc = l->cfg.comm.allreduce_max(buf, count, l->cfg.comm.ctx);
	if (rc)
		return sl_err_set(err, rc, "layer %d: tensor-parallel all-reduce (max) failed",
				  l->cfg.index);
	return 0;
}

/* Cross-entropy over logits split by vocabulary rows across the TP group (crossentropy.c):
 * lse = M + log(sum of the ranks' exp-sums), M the maximum over every rank's logits. */
static int vocab_parallel_crossentropy(struct sl_gpt_layer *l, const int32_t *targets, int N,
				       struct sl_err *err)
{
	float *max = l->lse, *sumexp = l->ce_sum, *target_logit = l->ce_sum + N;
	int rc;
	sl_crossentropy_rowmax(max, l->logits, N, l->local_vocab);
	if ((rc = allreduce_max(l, max, N, err)))
		return rc;
	sl_crossentropy_shard_partials(sumexp, target_logit, l->logits, max, targets,
				       l->vocab_start, N, l->local_vocab);
	/* exp-sums and target logits in one sum: the buffer is contiguous */
	if ((rc = allreduce(l, l->ce_sum, 2LL * N, err)))
		return rc;
	for (int i = 0; i < N; i++) {
		l->lse[i] = max[i] + logf(sumexp[i]);
		l->losses[i] = l->lse[i] - target_logit[i];
	}
	return 0;
}

static int head_forward(struct sl_gpt_layer *l, const struct sl_gpt_microbatch *mb,
			const float *x, double *loss, struct sl_err *err)
{
	int N = mb->batch * mb->seq, C = l->cfg.hidden, Vocab = l->cfg.vocab;
	if (!l->wte)
		return sl_err_set(err, SL_EINPUT, "layer %d: the head has no embedding table to use "
				  "(tie it to layer 0)", l->cfg.index);
	for (int i = 0; i < N; i++)
		if (mb->targets[i] < 0 || mb->targets[i] >= Vocab)
			return sl_err_set(err, SL_EINPUT,
					  "target token %d at position %d is outside the model's "
					  "vocabulary of %d",
					  (int)mb->targets[i], i, Vocab);
	sl_layernorm_forward(l->ln1, l->ln1_mean, l->ln1_rstd, x, V(LNF_W), V(LNF_B), N, C);
	if (l->cfg.tp == 1) {
		sl_matmul_forward(l->logits, l->ln1, l->wte->value, NULL, N, C, Vocab);
		sl_crossentropy_forward(l->losses, l->lse, l->logits, mb->targets, N, Vocab);
	} else {
		sl_matmul_forward(l->logits, l->ln1, l->wte->value, NULL, N, C, l->local_vocab);
		int rc = vocab_parallel_crossentropy(l, mb->targets, N, err);
		if (rc)
			return rc;
	}
	/* every TP rank holds the same losses[], so sums them to the same loss */
	double sum = 0.0;
	for (int i = 0; i < N; i++)
		sum += l->losses[i];
	if (loss)
		*loss = sum / N;
	return 0;
}

static int head_backward(struct sl_gpt_layer *l, struct sl_gpt_workspace *ws,
			 const struct sl_gpt_microbatch *mb, const float *x, float *dx,
			 float loss_scale, struct sl_err *err)
{
	int N = mb->batch * mb->seq, C = l->cfg.hidden, Vocab = l->cfg.vocab;
	if (l->cfg.tp == 1) {
		sl_crossentropy_backward(l->logits, l->logits, l->lse, mb->targets, N, Vocab,
					 loss_scale / (float)N);
		sl_matmul_backward(ws->dln, l->wte->grad, NULL, l->logits, l->ln1, l->wte->value,
				   N, C, Vocab);
	} else {
		sl_crossentropy_backward_shard(l->logits, l->logits, l->lse, mb->targets,
					       l->vocab_start, N, l->local_vocab,
					       loss_scale / (float)N);
		sl_matmul_backward(ws->dln, l->wte->grad, NULL, l->logits, l->ln1, l->wte->value,
				   N, C, l->local_vocab);
		/* d ln sums the contributions of every rank's vocabulary rows */
		int rc = allreduce(l, ws->dln, (long long)N * C, err);
		if (rc)
			return rc;
	}
	memset(dx, 0, (size_t)N * C * sizeof(float));
	sl_layernorm_backward(dx, G(LNF_W), G(LNF_B), ws->dln, x, V(LNF_W), l->ln1_mean,
			      l->ln1_rstd, N, C);
	return 0;
}

int sl_gpt_layer_forward(struct sl_gpt_layer *layer, struct sl_gpt_workspace *ws,
			 const struct sl_gpt_microbatch *mb, const float *input, float *output,
			 double *loss, struct sl_err *err)
{
	int rc = check_mb(layer, mb, err);
	if (rc)
		return rc;
	if (layer->shared_floats && !layer->shared)
		return sl_err_set(err, SL_EINPUT, "layer %d: recomputes but has no working set "
				  "(sl_gpt_layer_attach_shared)", layer->cfg.index);
	switch (layer->cfg.kind) {
	case SL_GPT_EMBEDDING:
		return embedding_forward(layer, mb, output, err);
	case SL_GPT_BLOCK:
		return block_forward(layer, ws, mb, input, output, err);
	case SL_GPT_HEAD:
		return head_forward(layer, mb, input, loss, err);
	}
	return 0;
}

int sl_gpt_layer_backward(struct sl_gpt_layer *layer, struct sl_gpt_workspace *ws,
			  const struct sl_gpt_microbatch *mb, const float *input,
			  const float *grad_output, float *grad_input, float loss_scale,
			  struct sl_err *err)
{
	int rc = check_mb(layer, mb, err);
	if (rc)
		return rc;
	if (layer->shared_floats && !layer->shared)
		return sl_err_set(err, SL_EINPUT, "layer %d: recomputes but has no working set "
				  "(sl_gpt_layer_attach_shared)", layer->cfg.index);
	struct sl_gpt_layer *l = layer;
	switch (layer->cfg.kind) {
	case SL_GPT_EMBEDDING:
		if (l->cfg.tp == 1)
			sl_embedding_backward(G(WTE), G(WPE), grad_output, mb->tokens, mb->batch,
					      mb->seq, l->cfg.hidden);
		else
			sl_embedding_backward_shard(G(WTE), G(WPE), grad_output, mb->tokens,
						    l->vocab_start, l->local_vocab, mb->batch,
						    mb->seq, l->cfg.hidden);
		return 0;
	case SL_GPT_BLOCK:
		return block_backward(layer, ws, mb, input, grad_output, grad_input, err);
	case SL_GPT_HEAD:
		return head_backward(layer, ws, mb, input, grad_input, loss_scale, err);
	}
	return 0;
}

int sl_gpt_workspace_init(struct sl_gpt_workspace *ws, const struct sl_gpt_layer *layers,
			  int count, int threads, struct sl_err *err)
{
	memset(ws, 0, sizeof(*ws));
	size_t dres = 0, dln = 0, dy = 0, dqkv = 0, dfc = 0, att = 0, rout = 0;
	for (int i = 0; i < count; i++) {
		const struct sl_gpt_layer *l = &layers[i];
		size_t n = (size_t)l->max_batch * l->seq, C = (size_t)l->cfg.hidden;
		if (l->cfg.kind == SL_GPT_EMBEDDING)
			continue;
		dln = n * C > dln ? n * C : dln;
		if (l->cfg.kind != SL_GPT_BLOCK)
			continue;
		dres = n * C > dres ? n * C : dres;
		dy = n * l->local_hidden > dy ? n * l->local_hidden : dy;
		dqkv = 3 * n * l->local_hidden > dqkv ? 3 * n * l->local_hidden : dqkv;
		dfc = n * l->local_ffn > dfc ? n * l->local_ffn : dfc;
		if (l->cfg.recompute == SL_GPT_RECOMPUTE_FULL)
			rout = n * C > rout ? n * C : rout;
		size_t a = sl_attention_scratch_floats(l->seq, threads);
		att = a > att ? a : att;
		ws->max_tokens = (int)n > ws->max_tokens ? (int)n : ws->max_tokens;
		ws->seq = l->seq > ws->seq ? l->seq : ws->seq;
	}
	ws->threads = threads;
	ws->floats = pad16(dres) + pad16(dln) + pad16(dy) + pad16(dqkv) + pad16(dfc) + pad16(rout) +
		     pad16(att);
	ws->block = sl_alloc_floats(ws->floats);
	if (!ws->block)
		return sl_err_set(err, SL_ENOMEM, "cannot allocate a %.1f MiB workspace",
				  (double)ws->floats * sizeof(float) / (1 << 20));
	float *p = ws->block;
	ws->dres = p, p += pad16(dres);
	ws->dln = p, p += pad16(dln);
	ws->dy = p, p += pad16(dy);
	ws->dqkv = p, p += pad16(dqkv);
	ws->dfc = p, p += pad16(dfc);
	ws->recompute_out = rout ? p : NULL, p += pad16(rout);
	ws->att_scratch = p;
	return 0;
}

void sl_gpt_workspace_free(struct sl_gpt_workspace *ws)
{
	free(ws->block);
	memset(ws, 0, sizeof(*ws));
}
