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
 * Activation slots (1F1B and other schedules with several micro-batches in flight): a stage
 * built with S slots has S sets of inter-layer activations, each layer S activation caches, and
 * remembers S stage inputs. sl_gpt_select_slot(gpt, s) chooses the slot that the following
 * sl_gpt_forward() fills and sl_gpt_backward() consumes, and that sl_gpt_output() reads:
 *   select(0) forward(A); select(1) forward(B); select(1) backward(B); select(0) backward(A)
 * gives what forward(A) backward(A) forward(B) backward(B) gives with one slot. A slot's
 * output and remembered input stay valid until the next forward into that slot (the caller
 * keeps its input buffer unchanged until the slot's backward). The workspace and the two
 * gradient buffers are shared by all slots: sl_gpt_grad_input() is the result of the last
 * backward, whatever its slot, valid until the next backward.
 *
 * Memory options (struct sl_gpt_options): with recomputation (gpt_layers.h) a block keeps per
 * slot only what the option keeps, and the stage holds one working set of the recomputed
 * tensors, shared by its blocks and slots; with a sharded optimizer the layers hold no AdamW
 * moments (cfg.moments), which runtime/zero.h keeps instead.
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
	int slots, slot;            /* activation slots, and the one selected */
	struct sl_gpt_layer *layers; /* last - first + 1, owned */
	int layer_count;
	struct sl_gpt_workspace ws;
	float **acts;               /* acts[s * layer_count + i]: output of layers[i] in slot s,
				     * B*T*C floats (NULL for the head) */
	float *act_block;           /* the allocation acts point into (owned) */
	float *shared;              /* the recomputed tensors' working set (owned, NULL if none) */
	size_t shared_floats;
	int recompute;              /* enum sl_gpt_recompute of the stage's blocks */
	float *grad_a, *grad_b;     /* backward ping-pong buffers, B*T*C each (in act_block) */
	const float **stage_inputs; /* per slot: input of layers[0] at its last forward
				     * (owned array, borrowed buffers) */
	struct sl_param **params;   /* every parameter of the stage (owned array, borrowed items) */
	int param_count;
	long long param_numel;      /* elements over all params */
	/* Called after every layer's forward and backward when set (0 or an error code, err
	 * set): the runtime's chance to move transfers in flight, which OpenMPI advances only
	 * inside an MPI call (an island's outer exchange, runtime/outer_sync.h). */
	int (*between_layers)(void *ctx, struct sl_err *err);
	void *between_layers_ctx;
};

/* Memory the stage holds, in bytes, by purpose. */
struct sl_gpt_memory {
	size_t params_bytes, grads_bytes, optimizer_bytes; /* values, gradients, AdamW m and v */
	size_t activations_bytes;   /* layer caches and the activations between layers, all
				     * slots, and the recomputed tensors' working set */
	size_t workspace_bytes;     /* backward scratch shared by the layers */
};

/* Builds a stage of plan layers [first, last] for micro-batches of up to max_batch x seq, with
 * `slots` activation slots (>= 1; slot 0 selected). Checks: seq <= model seq_len,
 * 0 <= first <= last <= N+1, tp divides heads and ffn_hidden, vocab >= tp. tp > 1 needs comm
 * with allreduce_sum, and allreduce_max when the stage holds the head (gpt_layers.h). */
int sl_gpt_init_slots(struct sl_gpt *gpt, const struct sl_model_config *model, int first,
		      int last, int max_batch, int seq, int slots, int tp, int tp_rank,
		      const struct sl_tp_comm *comm, int threads, struct sl_err *err);
/* How a stage trades memory: activation slots (>= 1), recomputation of its blocks (enum
 * sl_gpt_recompute), which parameters keep AdamW moments (enum sl_gpt_moments). */
struct sl_gpt_options {
	int slots;
	int recompute;
	int moments;
};
int sl_gpt_init_opts(struct sl_gpt *gpt, const struct sl_model_config *model, int first,
		     int last, int max_batch, int seq, const struct sl_gpt_options *opts, int tp,
		     int tp_rank, const struct sl_tp_comm *comm, int threads, struct sl_err *err);
/* sl_gpt_init_slots() with one slot (the single-process trainer). */
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

/* Selects activation slot s (0 <= s < slots) for the following forward, backward and
 * sl_gpt_output(); see above. Cheap (re-points views), never allocates. */
void sl_gpt_select_slot(struct sl_gpt *gpt, int slot);

/* Forward of one micro-batch through the stage, into the selected slot. input: the previous
 * stage's output (NULL when
 * the stage starts at layer 0, which reads mb->tokens). loss: set when the stage ends with the
 * head. The stage's output activation is sl_gpt_output() otherwise. */
int sl_gpt_forward(struct sl_gpt *gpt, const struct sl_gpt_microbatch *mb, const float *input,
		   double *loss, struct sl_err *err);
/* Backward of the micro-batch of the last forward into the selected slot. grad_output: NULL
 * when the stage ends with the head (loss_scale is then d total/d loss). The gradient for the
 * previous stage is sl_gpt_grad_input() afterwards (NULL when the stage starts at layer 0). */
int sl_gpt_backward(struct sl_gpt *gpt, const struct sl_gpt_microbatch *mb,
		    const float *grad_output, float loss_scale, struct sl_err *err);
/* The selected slot's output activation (NULL when the stage ends with the head). */
const float *sl_gpt_output(const struct sl_gpt *gpt);
const float *sl_gpt_grad_input(const struct sl_gpt *gpt);

void sl_gpt_memory(const struct sl_gpt *gpt, struct sl_gpt_memory *out);

#endif
