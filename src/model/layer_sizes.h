/* Per-layer sizes of a model in the plan's layer numbering: parameters per GPU, activation
 * memory and output size per sample, and forward FLOPs per sample, for each TP degree 1..8.
 *
 * Named models (those in data/models/layer_sizes_sosp25.json, the SOSP'25 artifact's
 * llm_info.json): parameters and activation figures are the artifact's measured values
 * (params_floats, act_mem_floats, act_output_floats; "floats" are 4-byte units) for the TP
 * degrees it lists; a TP degree it lacks is derived from the largest listed degree below it by
 * scaling the sharded parts (see layer_sizes.c). The layer count is the plan's,
 * sl_model_plan_layers(): 26 for OPT-350, 34 GPT-Neo-2.7, 50 OPT-30, 34 LLAMA-3-8. The file
 * numbers LLAMA-3-8's final RMSNorm as a layer of its own (33, before the head 34); its model file
 * says so ("sosp25_merged_layers") and the two are read as one layer 33, their parameters and
 * activations added up.
 * A model given as a hyper-parameter file gets the same figures from formulas (Megatron GPT
 * layers: QKV/proj/MLP sharded over TP, LayerNorms and biases of row-parallel layers replicated;
 * activation memory per Korthikanti et al. 2022, "Reducing Activation Recomputation", eq. 1-2,
 * in fp32). FLOPs always come from formulas (2 FLOPs per multiply-add; see layer_sizes.c).
 *
 * Invariants: num_layers >= 3; kind[0] = EMBEDDING, kind[num_layers-1] = HEAD; all values >= 0.
 * Ownership: sl_layer_sizes_load allocates, sl_layer_sizes_free frees.
 */
#ifndef SL_MODEL_LAYER_SIZES_H
#define SL_MODEL_LAYER_SIZES_H

#include "model/model_config.h"
#include "util/err.h"

#define SL_LAYER_SIZES_MAX_TP 8

enum sl_layer_kind { SL_LAYER_EMBEDDING = 0, SL_LAYER_BLOCK = 1, SL_LAYER_HEAD = 3 };

struct sl_layer_sizes {
	int num_layers;
	int from_file;            /* 1: the artifact's measured figures; 0: formulas */
	int tp_in_file[SL_LAYER_SIZES_MAX_TP + 1]; /* [t] = 1 when TP degree t is measured */
	enum sl_layer_kind *kind; /* [layer] */
	/* [t][layer] for t = 1..8 (index 0 unused): per GPU under TP degree t */
	double *params[SL_LAYER_SIZES_MAX_TP + 1];          /* parameters (elements) */
	double *act_mem_bytes[SL_LAYER_SIZES_MAX_TP + 1];   /* activation memory per sample */
	double *act_output_bytes[SL_LAYER_SIZES_MAX_TP + 1];/* the layer's output per sample */
	double *fwd_flops;        /* [layer] forward FLOPs per sample, whole layer (not sharded) */
	/* Parameters of the word embedding matrix (vocab x hidden, unsharded); the head of a
	 * tied model holds a copy of it in another stage (see memory.c). */
	double word_embedding_params;
	int head_holds_embedding; /* 1: the head layer's params include the (tied) word embedding */
};

/* For a model config loaded by sl_model_config_load: the artifact's figures when the model's
 * name is in data/models/layer_sizes_sosp25.json under data_dir (NULL = sl_paths_data_dir())
 * and its shape agrees, else formulas. */
int sl_layer_sizes_load(const struct sl_model_config *model, const char *data_dir,
			struct sl_layer_sizes **out, struct sl_err *err);
/* Formulas only (used for hyper-parameter files and by tests). */
int sl_layer_sizes_from_formulas(const struct sl_model_config *model, struct sl_layer_sizes **out,
				 struct sl_err *err);
void sl_layer_sizes_free(struct sl_layer_sizes *sizes);

#endif
