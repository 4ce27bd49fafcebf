/* A model's hyper-parameters: the GPT-style shape both the simulator and the runtime use.
 *
 * A model is named ("OPT-350": data/models/OPT-350.json) or given as a path to a JSON file:
 *   {"schema": "sailor.model/1", "name": "...", "layers": N, "hidden": H, "heads": A,
 *    "seq_len": S, "vocab": V, "ffn_hidden": F (default 4H), "global_batch": G (default 1024)}
 * "layers" counts transformer blocks. The plan's layer numbering adds two: layer 0 is the
 * embedding, 1..N the blocks, N+1 the final norm + LM head + loss (sl_model_plan_layers()).
 */
#ifndef SL_MODEL_MODEL_CONFIG_H
#define SL_MODEL_MODEL_CONFIG_H

#include "util/err.h"

#define SL_MODEL_NAME_MAX 64

struct sl_model_config {
	char name[SL_MODEL_NAME_MAX];
	int num_blocks;     /* transformer blocks ("layers" in the file) */
	int hidden;
	int heads;
	int ffn_hidden;
	int seq_len;
	int vocab;
	long long default_global_batch;
};

/* Loads by name from the data directory if name_or_path has no '/' and no ".json" suffix,
 * else from the file. Validates: every size from 1 to its limit in util/limits.h (layers <=
 * SL_MAX_MODEL_BLOCKS, ...), hidden divisible by heads. */
int sl_model_config_load(const char *name_or_path, struct sl_model_config *out,
			 struct sl_err *err);

/* Number of plan layers: num_blocks + 2. */
int sl_model_plan_layers(const struct sl_model_config *model);

/* Parameter count of the whole model with tied embedding and LM head, learned positions. */
long long sl_model_param_count(const struct sl_model_config *model);

#endif
