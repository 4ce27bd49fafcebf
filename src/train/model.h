/* A GPT model as a stage: a contiguous range [first, last] of plan layers held by one process,
 * with the activations that flow between its layers. The single-process trainer uses one stage
 * with every layer (0 .. N+1); a pipeline worker will hold a sub-range and exchange the
 * stage's input activation and input gradient with its neighbours.
 *
 * Data flow of one micro-batch through a stage (acts[i] is the output of layers[i]):
 *   forward:  input (or tokens) -> layers[0] -> acts[0] -> ... -> acts[last-first]
 *             (the head, when present, produces the loss instead of an activation)
 *   backward: grad_output (or the loss scale) -> ... -> grad_input (absent for layer 0),
 *             two ping-pong gradient buffers between layers.
 *
 * Ownership: sl_gpt_init() allocates the layers, the activation buffers and the workspace;
 * sl_gpt_free() releases them. params[] borrows the layers' parameters (stage order: layer by
 * layer, each in declaration order); the tied embedding table appears once, under layer 0, or
 * as the head's own copy (same name) when the stage holds the head but not layer 0.
 */
#ifndef SL_TRAIN_MODEL_H
#define SL_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "model/model_config.h"
#include "train/gpt_layers.h"
#include "util/err.h"

struct sl_gpt {
	struct sl_model_config model;
	int first, last;            /* plan layers held: first..last inclusive */
	int max_batch, seq;         /* micro-batch capacity */
	int tp, tp_rank;
	struct sl_gpt_layer *layers; /* last - first + 1, owned */
	int layer_count;
	struct sl_gpt_workspace ws;
	float **acts;               /* acts[i]: output of layers[i], B*T*C floats (owned) */
	float *act_block;           /* the allocation acts point into (owned) */
	float *grad_a, *grad_b;     /* backward ping-pong buffers, B*T*C each (in act_block) */
	float *stage_input;         /* input of layers[0] from the last forward (borrowed) */
	struct sl_param **params;   /* every parameter of the stage (owned array, borrowed items) */
	int param_count;
	long long param_numel;      /* elements over all params */
};

/* Memory the stage holds, in bytes, by purpose. */
struct sl_gpt_memory {
	size_t params_bytes, grads_bytes, optimizer_bytes; /* values, gradients, AdamW m and v */
	size_t activations_bytes;   /* layer caches and the activations between layers */
	size_t workspace_bytes;     /* backward scratch shared by the layers */
};

/* Builds a stage of plan layers [first, last] for micro-batches of up to max_batch x seq.
 * Checks: seq <= model seq_len, 0 <= first <= last <= N+1. tp > 1 needs comm. */
int sl_gpt_init(struct sl_gpt *gpt, const struct sl_model_config *model, int first, int last,
		int max_batch, int seq, int tp, int tp_rank, const struct sl_tp_comm *comm,
		int threads, struct sl_err *err);
void sl_gpt_free(struct sl_gpt *gpt);

/* Deterministic GPT-2 initialisation of every parameter from seed (gpt_layers.h). */
void sl_gpt_init_weights(struct sl_gpt *gpt, uint64_t seed);
void sl_gpt_zero_grad(struct sl_gpt *gpt);

struct sl_param *sl_gpt_find_param(const struct sl_gpt *gpt, const char *name);
/* The head layer, or NULL if the stage has none. */
struct sl_gpt_layer *sl_gpt_head(struct sl_gpt *gpt);

/* Forward of one micro-batch through the stage. input: the previous stage's output (NULL when
 * the stage starts at layer 0, which reads mb->tokens). loss: set when the stage ends with the
 * head. The stage's output activation is sl_gpt_output() otherwise. */
int sl_gpt_forward(struct sl_gpt *gpt, const struct sl_gpt_microbatch *mb, const float *input,
		   double *loss, struct sl_err *err);
/* Backward of the micro-batch of the last forward. grad_output: NULL when the stage ends with
 * the head (loss_scale is then d total/d loss). The gradient for the previous stage is
 * sl_gpt_grad_input() afterwards (NULL when the stage starts at layer 0). */
int sl_gpt_backward(struct sl_gpt *gpt, const struct sl_gpt_microbatch *mb,
		    const float *grad_output, float loss_scale, struct sl_err *err);
const float *sl_gpt_output(const struct sl_gpt *gpt);
const float *sl_gpt_grad_input(const struct sl_gpt *gpt);

void sl_gpt_memory(const struct sl_gpt *gpt, struct sl_gpt_memory *out);

#endif
