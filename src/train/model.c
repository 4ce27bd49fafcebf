/* A stage of GPT layers (model.h): building, initialising, forward and backward of a micro-batch.
 * Invariants: layers[i] is plan layer first + i; acts has, per slot, one B*T*C buffer per layer
 * that outputs an activation; the head, if present, is layers[layer_count - 1]; every layer's
 * selected slot equals gpt->slot. */
#include "train/model.h"

#include <stdlib.h>
#include <string.h>

int sl_gpt_init(struct sl_gpt *gpt, const struct sl_model_config *model, int first, int last,
		int max_batch, int seq, int tp, int tp_rank, const struct sl_tp_comm *comm,
		int threads, struct sl_err *err)
{
	return sl_gpt_init_slots(gpt, model, first, last, max_batch, seq, 1, tp, tp_rank, comm,
				 threads, err);
}

int sl_gpt_init_slots(struct sl_gpt *gpt, const struct sl_model_config *model, int first,
		      int last, int max_batch, int seq, int slots, int tp, int tp_rank,
		      const struct sl_tp_comm *comm, int threads, struct sl_err *err)
{
	struct sl_gpt_options opts = {.slots = slots};
	return sl_gpt_init_opts(gpt, model, first, last, max_batch, seq, &opts, tp, tp_rank, comm,
				threads, err);
}

/* The stage's shape against the model, before anything is allocated: the recomputation mode,
 * the layer range, the slots, TP against the model's widths, heads against hidden, and the
 * sequence length. */
static int check_stage_shape(const struct sl_model_config *model, int first, int last, int seq,
			     const struct sl_gpt_options *opts, int tp, struct sl_err *err)
{
	int slots = opts->slots;
	if (opts->recompute < SL_GPT_RECOMPUTE_NONE || opts->recompute > SL_GPT_RECOMPUTE_SELECTIVE)
		return sl_err_set(err, SL_EINPUT, "recompute mode %d: must be none, full or selective",
				  opts->recompute);
	int n = model->num_blocks;
	if (first < 0 || last > n + 1 || first > last)
		return sl_err_set(err, SL_EINPUT, "stage layers %d..%d: must lie within 0..%d", first,
				  last, n + 1);
	if (slots < 1)
		return sl_err_set(err, SL_EINPUT, "stage %d..%d: %d activation slots, need 1 or more",
				  first, last, slots);
	/* Checked here first so that the message names the model's shape rather than whichever
	 * layer's missing collective validation would meet first. */
	if (tp > 1 && first <= n && last >= 1 && (model->heads % tp || model->ffn_hidden % tp))
		return sl_err_set(err, SL_EINPUT,
				  "model '%s': tp %d must divide heads %d and ffn_hidden %d",
				  model->name, tp, model->heads, model->ffn_hidden);
	if (model->hidden % model->heads)
		return sl_err_set(err, SL_EINPUT,
				  "model '%s': hidden %d is not divisible by heads %d: choose heads "
				  "that divide hidden",
				  model->name, model->hidden, model->heads);
	if (seq > model->seq_len)
		return sl_err_set(err, SL_EINPUT,
				  "sequence length %d is longer than model '%s' allows (seq_len %d): "
				  "use --seq-len %d or less",
				  seq, model->name, model->seq_len, model->seq_len);
	return 0;
}

/* Each of the stage's layers (gpt->layers[0 .. layer_count)), plan layer first + i. On failure
 * gpt->layer_count is the number built, for sl_gpt_free. */
static int init_layers(struct sl_gpt *gpt, const struct sl_model_config *model,
		       const struct sl_gpt_options *opts, const struct sl_tp_comm *comm,
		       struct sl_err *err)
{
	int n = model->num_blocks;
	int rc = 0;
	int count = 0;
	for (int i = 0; i < gpt->layer_count && !rc; i++) {
		int index = gpt->first + i;
		struct sl_gpt_layer_config cfg = {
			.kind = index == 0 ? SL_GPT_EMBEDDING
					   : (index == n + 1 ? SL_GPT_HEAD : SL_GPT_BLOCK),
			.index = index,
			.num_blocks = n,
			.hidden = model->hidden,
			.heads = model->heads,
			.ffn_hidden = model->ffn_hidden,
			.max_seq_len = model->seq_len,
			.vocab = model->vocab,
			.tp = gpt->tp,
			.tp_rank = gpt->tp_rank,
			.own_wte = index == n + 1 && gpt->first > 0,
			.slots = gpt->slots,
			.recompute = opts->recompute,
			.moments = opts->moments,
		};
		if (comm)
			cfg.comm = *comm;
		rc = sl_gpt_layer_init(&gpt->layers[i], &cfg, gpt->max_batch, gpt->seq, err);
		if (!rc)
			count++;
	}
	if (rc)
		gpt->layer_count = count;
	return rc;
}

/* One working set for every recomputing block (they run one at a time): as large as the
 * largest any layer asks, attached to those that ask. */
static int attach_shared_working_set(struct sl_gpt *gpt, struct sl_err *err)
{
	for (int i = 0; i < gpt->layer_count; i++)
		if (gpt->layers[i].shared_floats > gpt->shared_floats)
			gpt->shared_floats = gpt->layers[i].shared_floats;
	if (!gpt->shared_floats)
		return 0;
	gpt->shared = sl_alloc_floats(gpt->shared_floats);
	if (!gpt->shared)
		return sl_err_set(err, SL_ENOMEM, "cannot allocate the recomputation working "
				  "set (%.1f MiB)",
				  (double)gpt->shared_floats * sizeof(float) / (1 << 20));
	for (int i = 0; i < gpt->layer_count; i++)
		if (gpt->layers[i].shared_floats)
			sl_gpt_layer_attach_shared(&gpt->layers[i], gpt->shared);
	return 0;
}

/* Activation buffers between layers (per slot; none after the head), plus two gradient
 * buffers, in one block. */
static int alloc_activations(struct sl_gpt *gpt, struct sl_err *err)
{
	size_t act = (size_t)gpt->max_batch * gpt->seq * gpt->model.hidden;
	act = (act + 15) / 16 * 16;
	size_t nacts = (size_t)gpt->layer_count * gpt->slots;
	gpt->act_block = sl_alloc_floats(act * (nacts + 2));
	if (!gpt->act_block)
		return sl_err_set(err, SL_ENOMEM, "cannot allocate activations for micro-batch %d x %d",
				  gpt->max_batch, gpt->seq);
	for (size_t k = 0; k < nacts; k++)
		gpt->acts[k] = gpt->layers[k % gpt->layer_count].cfg.kind == SL_GPT_HEAD
				       ? NULL
				       : gpt->act_block + act * k;
	gpt->grad_a = gpt->act_block + act * nacts;
	gpt->grad_b = gpt->grad_a + act;
	return 0;
}

/* The parameter list, in stage order. */
static int collect_params(struct sl_gpt *gpt, struct sl_err *err)
{
	int total = 0;
	for (int i = 0; i < gpt->layer_count; i++)
		total += gpt->layers[i].param_count;
	gpt->params = calloc((size_t)total, sizeof(*gpt->params));
	if (!gpt->params)
		return sl_err_set(err, SL_ENOMEM, "cannot allocate the parameter list");
	for (int i = 0; i < gpt->layer_count; i++)
		for (int j = 0; j < gpt->layers[i].param_count; j++) {
			gpt->params[gpt->param_count++] = &gpt->layers[i].params[j];
			gpt->param_numel += gpt->layers[i].params[j].numel;
		}
	return 0;
}

int sl_gpt_init_opts(struct sl_gpt *gpt, const struct sl_model_config *model, int first,
		     int last, int max_batch, int seq, const struct sl_gpt_options *opts, int tp,
		     int tp_rank, const struct sl_tp_comm *comm, int threads, struct sl_err *err)
{
	memset(gpt, 0, sizeof(*gpt));
	int rc = check_stage_shape(model, first, last, seq, opts, tp, err);
	if (rc)
		return rc;
	int slots = opts->slots;
	gpt->model = *model;
	gpt->first = first;
	gpt->last = last;
	gpt->max_batch = max_batch;
	gpt->seq = seq;
	gpt->tp = tp;
	gpt->tp_rank = tp_rank;
	gpt->slots = slots;
	gpt->recompute = opts->recompute;
	gpt->layer_count = last - first + 1;
	gpt->layers = calloc((size_t)gpt->layer_count, sizeof(*gpt->layers));
	gpt->acts = calloc((size_t)gpt->layer_count * slots, sizeof(*gpt->acts));
	gpt->stage_inputs = calloc((size_t)slots, sizeof(*gpt->stage_inputs));
	if (!gpt->layers || !gpt->acts || !gpt->stage_inputs) {
		sl_gpt_free(gpt);
		return sl_err_set(err, SL_ENOMEM, "cannot allocate the model's layers");
	}
	rc = init_layers(gpt, model, opts, comm, err);
	if (!rc)
		rc = attach_shared_working_set(gpt, err);
	if (!rc && first == 0 && last == model->num_blocks + 1)
		sl_gpt_layer_tie(&gpt->layers[gpt->layer_count - 1], &gpt->layers[0]);
	if (!rc)
		rc = alloc_activations(gpt, err);
	if (!rc)
		rc = sl_gpt_workspace_init(&gpt->ws, gpt->layers, gpt->layer_count, threads, err);
	if (!rc)
		rc = collect_params(gpt, err);
	if (rc)
		sl_gpt_free(gpt);
	return rc;
}

void sl_gpt_free(struct sl_gpt *gpt)
{
	if (gpt->layers)
		for (int i = 0; i < gpt->layer_count; i++)
			sl_gpt_layer_free(&gpt->layers[i]);
	free(gpt->layers);
	free(gpt->acts);
	free(gpt->stage_inputs);
	free(gpt->act_block);
	free(gpt->shared);
	free(gpt->params);
	sl_gpt_workspace_free(&gpt->ws);
	memset(gpt, 0, sizeof(*gpt));
}

void sl_gpt_init_weights(struct sl_gpt *gpt, uint64_t seed)
{
	for (int i = 0; i < gpt->layer_count; i++)
		sl_gpt_layer_init_weights(&gpt->layers[i], seed);
}

void sl_gpt_zero_grad(struct sl_gpt *gpt)
{
	for (int i = 0; i < gpt->param_count; i++)
		memset(gpt->params[i]->grad, 0, (size_t)gpt->params[i]->numel * sizeof(float));
}

struct sl_param *sl_gpt_find_param(const struct sl_gpt *gpt, const char *name)
{
	for (int i = 0; i < gpt->param_count; i++)
		if (!strcmp(gpt->params[i]->name, name))
			return gpt->params[i];
	return NULL;
}

struct sl_gpt_layer *sl_gpt_head(struct sl_gpt *gpt)
{
	struct sl_gpt_layer *last = &gpt->layers[gpt->layer_count - 1];
	return last->cfg.kind == SL_GPT_HEAD ? last : NULL;
}

void sl_gpt_select_slot(struct sl_gpt *gpt, int slot)
{
	if (slot == gpt->slot)
		return;
	gpt->slot = slot;
	for (int i = 0; i < gpt->layer_count; i++)
		sl_gpt_layer_select_slot(&gpt->layers[i], slot);
}

/* The selected slot's activations: acts of layer i is slot_acts(gpt)[i]. */
static float **slot_acts(const struct sl_gpt *gpt)
{
	return gpt->acts + (size_t)gpt->slot * gpt->layer_count;
}

int sl_gpt_forward(struct sl_gpt *gpt, const struct sl_gpt_microbatch *mb, const float *input,
		   double *loss, struct sl_err *err)
{
	if (gpt->first > 0 && !input)
		return sl_err_set(err, SL_EINPUT, "stage %d..%d: forward needs an input activation",
				  gpt->first, gpt->last);
	gpt->stage_inputs[gpt->slot] = input;
	float **acts = slot_acts(gpt);
	const float *x = input;
	for (int i = 0; i < gpt->layer_count; i++) {
		int rc = sl_gpt_layer_forward(&gpt->layers[i], &gpt->ws, mb, x, acts[i], loss, err);
		if (!rc && gpt->between_layers)
			rc = gpt->between_layers(gpt->between_layers_ctx, err);
		if (rc)
			return rc;
		x = acts[i];
	}
	return 0;
}

int sl_gpt_backward(struct sl_gpt *gpt, const struct sl_gpt_microbatch *mb,
		    const float *grad_output, float loss_scale, struct sl_err *err)
{
	const float *dout = grad_output;
	float *bufs[2] = {gpt->grad_a, gpt->grad_b};
	float **acts = slot_acts(gpt);
	int which = 0;
	for (int i = gpt->layer_count - 1; i >= 0; i--) {
		struct sl_gpt_layer *layer = &gpt->layers[i];
		const float *input = i > 0 ? acts[i - 1] : gpt->stage_inputs[gpt->slot];
		float *din = layer->cfg.kind == SL_GPT_EMBEDDING ? NULL : bufs[which];
		int rc = sl_gpt_layer_backward(layer, &gpt->ws, mb, input, dout, din, loss_scale,
					       err);
		if (!rc && gpt->between_layers)
			rc = gpt->between_layers(gpt->between_layers_ctx, err);
		if (rc)
			return rc;
		dout = din;
		which ^= 1;
	}
	return 0;
}

const float *sl_gpt_output(const struct sl_gpt *gpt)
{
	return slot_acts(gpt)[gpt->layer_count - 1];
}

const float *sl_gpt_grad_input(const struct sl_gpt *gpt)
{
	if (gpt->first == 0)
		return NULL;
	/* the first layer wrote into the buffer chosen on the last iteration of the loop */
	return (gpt->layer_count % 2) ? gpt->grad_a : gpt->grad_b;
}

void sl_gpt_memory(const struct sl_gpt *gpt, struct sl_gpt_memory *out)
{
	memset(out, 0, sizeof(*out));
	size_t numel = (size_t)gpt->param_numel;
	out->params_bytes = numel * sizeof(float);
	out->grads_bytes = numel * sizeof(float);
	out->optimizer_bytes = 0;
	for (int i = 0; i < gpt->param_count; i++)
		if (gpt->params[i]->exp_avg)
			out->optimizer_bytes += 2 * (size_t)gpt->params[i]->numel * sizeof(float);
	size_t act = (size_t)gpt->max_batch * gpt->seq * gpt->model.hidden;
	act = (act + 15) / 16 * 16;
	/* the head outputs no activation, but its buffer is allocated all the same */
	out->activations_bytes = act * (size_t)gpt->layer_count * gpt->slots * sizeof(float);
	for (int i = 0; i < gpt->layer_count; i++)
		out->activations_bytes += gpt->layers[i].cache_floats * sizeof(float);
	out->activations_bytes += gpt->shared_floats * sizeof(float);
	out->workspace_bytes = (gpt->ws.floats + 2 * act) * sizeof(float);
}
