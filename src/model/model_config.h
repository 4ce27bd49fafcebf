/* A model's hyper-parameters: the GPT-style shape both the simulator and the runtime use.
 *
 * A model is named ("OPT-350": data/models/OPT-350.json) or given as a path to a JSON file:
 *   {"schema": "sailor.model/1", "name": "...", "layers": N, "hidden": H, "heads": A,
 *    "seq_len": S, "vocab": V, "ffn_hidden": F (default 4H), "global_batch": G (default 1024)}
 * "layers" counts transformer blocks. The plan's layer numbering adds two: layer 0 is the
 * embedding, 1..N the blocks, N+1 the final norm + LM head + loss (sl_model_plan_layers()).
 * That one numbering holds for the planner, the simulator, profiles and the runtime.
 *
 * "sosp25_merged_layers" (optional): [[first, last], ...], ranges of the SOSP'25 artifact's
 * layer numbering (its profiles and llm_info.json) that are one plan layer here. LLAMA-3-8's
 * data counts its final RMSNorm as a layer of its own (33) before the head (34): [[33, 34]]
 * folds both into plan layer 33, the runtime's final norm + head. Times and sizes of folded
 * layers add up (sl_model_source_layer_map).
 */
#ifndef SL_MODEL_MODEL_CONFIG_H
#define SL_MODEL_MODEL_CONFIG_H

#include "util/err.h"
#include "util/limits.h"

#define SL_MODEL_NAME_MAX 64
/* Extra layers the SOSP'25 numbering of a model may have over the plan's */
#define SL_MODEL_MAX_MERGED 8

struct sl_model_config {
	char name[SL_MODEL_NAME_MAX];
	int num_blocks;     /* transformer blocks ("layers" in the file) */
	int hidden;
	int heads;
	int ffn_hidden;
	int seq_len;
	int vocab;
	long long default_global_batch;
	/* SOSP'25 layer l is plan layer sosp25_layer_map[l], l < sosp25_layer_count; a count of 0:
	 * the artifact numbers this model's layers as the plan does */
	int sosp25_layer_count;
	unsigned short sosp25_layer_map[SL_MAX_MODEL_BLOCKS + 2 + SL_MODEL_MAX_MERGED];
};

/* Loads by name from the data directory if name_or_path has no '/' and no ".json" suffix,
 * else from the file. Validates: every size from 1 to its limit in util/limits.h (layers <=
 * SL_MAX_MODEL_BLOCKS, ...), hidden divisible by heads. */
int sl_model_config_load(const char *name_or_path, struct sl_model_config *out,
			 struct sl_err *err);

/* For per-layer data in the SOSP'25 numbering with source_layers layers: map[l] = the plan layer
 * that source layer l belongs to (non-decreasing, 0 and the head at the ends). Returns 0 with
 * the identity where source_layers is the plan's count, 0 with the model's map where it is the
 * model's sosp25 count, -1 otherwise (the data is of another model). map needs room for
 * source_layers entries. */
int sl_model_source_layer_map(const struct sl_model_config *model, int source_layers, int *map);

/* Number of plan layers: num_blocks + 2. */
int sl_model_plan_layers(const struct sl_model_config *model);

/* Parameter count of the whole model with tied embedding and LM head, learned positions. */
long long sl_model_param_count(const struct sl_model_config *model);

#endif
