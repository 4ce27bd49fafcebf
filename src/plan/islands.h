/* The plan's optional "islands" section (docs/formats.md#islands, docs/design/islands.md): the
 * plan's pipelines grouped into islands that synchronise every step inside and exchange
 * pseudo-gradients between them every H inner steps (DiLoCo's outer step), with its outer
 * optimizer, wire format, fragments and overlap. A plan without the section has no islands
 * (plan->islands == NULL) and runs exactly as before; one island is the synchronous plan.
 *
 * Invariants the reader guarantees: 1 <= count <= D; every pipeline in exactly one island, none
 * empty; pipeline 0 in island 0; 1 <= inner_steps[i] <= SL_ISLANDS_MAX_INNER_STEPS with
 * inner_steps[0] the largest (island 0 counts the run's steps); 0 < outer_lr <=
 * SL_ISLANDS_MAX_OUTER_LR; 0 <= outer_momentum < 1; 0 < merge <= 1; 1 <= fragments <=
 * SL_ISLANDS_MAX_FRAGMENTS; 0 <= overlap_steps < the smallest inner_steps. Whether fragments
 * exceed the model's tensors is checked where the model is known (sl_islands_check_model).
 *
 * Ownership: one allocation (the struct and its arrays), freed with free() by sl_plan_free. */
#ifndef SL_PLAN_ISLANDS_H
#define SL_PLAN_ISLANDS_H

#include <stddef.h>

#include <jansson.h>

#include "model/model_config.h"
#include "util/err.h"

#define SL_ISLANDS_MAX_ISLANDS 64
#define SL_ISLANDS_MAX_INNER_STEPS 1000000
#define SL_ISLANDS_MAX_OUTER_LR 4.0
#define SL_ISLANDS_MAX_FRAGMENTS 4096
#define SL_ISLANDS_DEFAULT_INNER_STEPS 50
#define SL_ISLANDS_DEFAULT_OUTER_LR 0.7
#define SL_ISLANDS_DEFAULT_OUTER_MOMENTUM 0.9
#define SL_ISLANDS_DEFAULT_MERGE 0.5

/* How the outer exchange encodes values (docs/design/islands.md#the-wire). */
enum sl_islands_wire { SL_ISLANDS_WIRE_FP32 = 0, SL_ISLANDS_WIRE_BF16 = 1, SL_ISLANDS_WIRE_INT8 = 2 };

struct sl_plan_islands {
	int count;               /* n */
	int num_pipelines;       /* D */
	int *island_of;          /* D: the island of pipeline j */
	int *inner_steps;        /* n: H_i */
	double outer_lr;         /* eta */
	double outer_momentum;   /* mu (Nesterov) */
	double merge;            /* alpha: weight of the global weights when an overlapped
				  * fragment lands */
	enum sl_islands_wire wire;
	int fragments;           /* F */
	int overlap_steps;       /* tau: 0 = blocking */
};

/* "fp32" / "bf16" / "int8". */
const char *sl_islands_wire_name(enum sl_islands_wire w);

/* Reads the section from obj (the value of "islands") for a plan of D pipelines; *out is
 * allocated. ctx prefixes errors ("islands"). */
int sl_islands_from_json(const json_t *obj, int num_pipelines, struct sl_plan_islands **out,
			 struct sl_err *err);

/* The section as written by sl_plan_to_json (every field, so that a reader sees the values). */
json_t *sl_islands_to_json(const struct sl_plan_islands *isl);

/* A section of count islands over num_pipelines pipelines, zeroed but for its arrays (one
 * allocation: free() releases it); NULL when out of memory. */
struct sl_plan_islands *sl_islands_alloc(int count, int num_pipelines);

/* A deep copy (NULL for NULL); NULL with err set when out of memory. */
struct sl_plan_islands *sl_islands_copy(const struct sl_plan_islands *isl, struct sl_err *err);

/* The parameter tensors of the whole model (embedding tables, each block's, the final norm):
 * the most fragments a plan may ask for. */
int sl_islands_model_tensors(const struct sl_model_config *model);

#define SL_ISLANDS_TENSOR_NAME_MAX 64

/* Tensor t of the whole model in the order of docs/design/islands.md#the-algorithm (the layers'
 * own order): its checkpoint name and elements. */
void sl_islands_tensor(const struct sl_model_config *model, int t, char *name, size_t size,
		       long long *numel);

/* The index of the tensor named `name` (the head's copy of the tied table is
 * "layer0.wte.weight", index 0); -1 if the model has none. */
int sl_islands_tensor_index(const struct sl_model_config *model, const char *name);

/* starts[0..fragments]: fragment f holds tensors starts[f] .. starts[f+1]-1 (the balanced cut
 * of docs/design/islands.md; every fragment non-empty). SL_EINPUT when fragments is out of 1..T. */
int sl_islands_fragment_starts(const struct sl_model_config *model, int fragments, int *starts);

/* ---- islands by a rule (islands_template.c) ----
 * A template is the section without "pipelines", with "by": "region" | "zone"
 * (docs/formats.md#islands-template). */

/* Reads and checks a template file (*out: a new reference). */
int sl_islands_template_load(const char *path, json_t **out, struct sl_err *err);

/* plan->islands becomes the template's islands for this plan: its pipelines grouped by the
 * region (zone) of their first stage, in the order of their first pipeline; none when they all
 * fall in one group (one island is the synchronous plan). */
struct sl_plan;
struct sl_catalogue;
int sl_islands_template_apply(const json_t *tmpl, struct sl_plan *plan,
			      const struct sl_catalogue *cat, struct sl_err *err);

/* The checks that need the model: fragments against its tensors. */
int sl_islands_check_model(const struct sl_plan_islands *isl, const struct sl_model_config *model,
			   struct sl_err *err);

#endif
