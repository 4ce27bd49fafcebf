/* The plan: how one training job is laid out over GPUs. P pipeline stages, each a contiguous
 * range of layers; every stage has the same number D of replicas, replica j of stage k feeds
 * replica j of stage k+1 (that chain is pipeline j); a replica is (GPU type, zone, TP degree) and
 * occupies tp GPUs of one node. One micro-batch size for the whole plan.
 *
 * Our file format (README "sailor simulate" documents it):
 *   {"schema": "sailor.plan/1", "model": "OPT-350", "global_batch": 1024, "micro_batch": 8,
 *    "stages": [{"layers": [0, 12],
 *                "replicas": [{"gpu": "A100-40", "zone": "us-central1-a", "tp": 4, "count": 6},
 *                             ...]}, ...],
 *    "microbatches_per_pipeline": [n_0, ..., n_{D-1}]}
 *   "layers" is an inclusive [first, last] range; "count" (default 1) is a run-length; "model",
 *   "global_batch" and "microbatches_per_pipeline" are optional (the planner writes all three
 *   where they apply). How the global batch is shared over pipelines, with and without
 *   "microbatches_per_pipeline": plan/microbatch_share.h.
 *   "measured" (optional): a run of the plan, for `sailor validate`: {"iteration_s": median
 *   seconds per step, "peak_memory_bytes": the largest peak resident memory of a rank (our
 *   runtime) or GPU, "dp_sync_s": optional}, beside provenance the loader ignores.
 *   Memory options, per stage, both optional:
 *     "recompute": "none" (default) | "full" | "selective" — activation recomputation: "full"
 *       keeps only each block's input during forward and recomputes the block in backward;
 *       "selective" recomputes only the attention core (scores, softmax, weighted sum).
 *     "zero": 0 (default) | 1 — ZeRO stage 1: the stage's AdamW moments are split across its D
 *       data-parallel replicas; gradients are reduce-scattered and updated parameters
 *       all-gathered instead of all-reduced.
 *   Both are accepted where they change nothing (recompute on a stage without blocks, zero on
 *   a stage with one replica): the stage then runs and costs exactly as without them.
 *   "islands" (optional): the pipelines grouped into islands with outer steps between them
 *   (plan/islands.h, docs/design/islands.md).
 * The SOSP'25 artifact's plans are read as they are: a validation file (top-level "mbs", "gbs",
 * "pipeline_list": [{"layers_per_stage", "tmp_per_stage": [[ [[[gpu, gpus_per_node, zone]], tp],
 * ...D ], ...P ]}], plus "real", "max_mem", "red_grads" kept in `measured`) or a planner plan
 * ("mbs", "pipelines": [{"layers_per_stage", "tmp_stages", "dp_degrees"}]).
 *
 * Layer numbering: 0 embedding, 1..N transformer blocks, N+1 final norm + head + loss (LLAMA-3-8
 * in the SOSP'25 data has a separate final-norm layer: see model/layer_sizes.h).
 *
 * Invariants the loader guarantees: 1 <= num_stages <= SL_PLAN_MAX_STAGES, 1 <= num_pipelines
 * <= SL_PLAN_MAX_PIPELINES, every replica's gpu/zone a valid catalogue index, tp >= 1,
 * micro_batch >= 1, global_batch >= 0 (0 = not given). sl_plan_check adds the checks that need
 * the model: layers cover 0..L-1 exactly once in order, tp <= the GPU's gpus_per_node, the
 * global batch shared over the pipelines by the rule of plan/microbatch_share.h.
 *
 * Ownership: `replicas` and `microbatches` are owned by the plan when allocated by
 * sl_plan_reserve (capacity > 0) and freed by sl_plan_free. A caller (the planner) may instead
 * point them at its own memory and leave capacity 0: sl_plan_free then frees nothing.
 */
#ifndef SL_PLAN_PLAN_H
#define SL_PLAN_PLAN_H

#include <jansson.h>

#include "cluster/catalogue.h"
#include "model/model_config.h"
#include "plan/islands.h"
#include "util/err.h"
#include "util/limits.h"

#define SL_PLAN_MAX_STAGES 64
#define SL_PLAN_MAX_PIPELINES 1024
#define SL_PLAN_PATH_MAX 512
/* The highest layer number a plan may name: the model's head with SL_MAX_MODEL_BLOCKS blocks. */
#define SL_PLAN_MAX_LAYER (SL_MAX_MODEL_BLOCKS + 1)

enum sl_plan_format { SL_PLAN_FORMAT_SAILOR = 0, SL_PLAN_FORMAT_SOSP25 = 1 };

struct sl_replica {
	short gpu;   /* catalogue GPU index */
	short zone;  /* catalogue zone index */
	short tp;    /* tensor-parallel degree: GPUs of this replica, all in one node */
	short pad;   /* keep 0 */
};

enum sl_recompute {
	SL_RECOMPUTE_NONE = 0,      /* keep every activation of every micro-batch in flight */
	SL_RECOMPUTE_FULL = 1,      /* keep block inputs only; recompute blocks in backward */
	SL_RECOMPUTE_SELECTIVE = 2, /* recompute only the attention core in backward */
};

/* "none" / "full" / "selective". */
const char *sl_recompute_name(enum sl_recompute r);

struct sl_plan_stage {
	int first_layer;             /* inclusive */
	int last_layer;              /* inclusive */
	unsigned char recompute;     /* enum sl_recompute */
	unsigned char zero;          /* 0: replicated optimizer state; 1: ZeRO-1 over the replicas */
	unsigned char pad[2];        /* keep 0 */
};

/* What a measured run (a SOSP'25 validation file) says it took; absent fields have has_* = 0. */
struct sl_plan_measured {
	int has_real;
	double real_s;          /* measured iteration time */
	int has_max_mem;
	double max_mem_bytes;   /* measured peak GPU memory (max over workers) */
	int has_red_grads;
	double red_grads_s;     /* measured gradient-reduction time per iteration */
};

struct sl_plan {
	char model[SL_MODEL_NAME_MAX]; /* "" when the file names none */
	long long global_batch;        /* samples per iteration; 0 = not given (use the model's) */
	int micro_batch;               /* samples per micro-batch */
	int num_stages;                /* P */
	int num_pipelines;             /* D */
	struct sl_plan_stage stages[SL_PLAN_MAX_STAGES];
	struct sl_replica *replicas;   /* P*D entries, stage-major: replicas[k * D + j] */
	int *microbatches;             /* D entries, used only when uneven_microbatches */
	int uneven_microbatches;       /* 1: microbatches[] given ("microbatches_per_pipeline");
					* 0: shared by the rule of plan/microbatch_share.h */
	int capacity;                  /* replicas owned (0 = borrowed memory) */
	int mb_capacity;               /* microbatches owned (0 = borrowed memory) */
	enum sl_plan_format format;    /* which file format it was read from (for error paths) */
	char path[SL_PLAN_PATH_MAX];   /* the file it was read from, "" if built in memory */
	struct sl_plan_measured measured;
	struct sl_plan_islands *islands; /* the "islands" section (plan/islands.h); NULL: none,
					  * every pipeline syncs every step. Owned: freed by
					  * sl_plan_free, deep-copied by sl_plan_copy */
};

static inline struct sl_replica *sl_plan_replica(const struct sl_plan *plan, int stage, int j)
{
	return &plan->replicas[(long)stage * plan->num_pipelines + j];
}

/* Zeroes a plan (no allocation). */
void sl_plan_init(struct sl_plan *plan);

/* Sets num_stages = stages and num_pipelines = pipelines and makes room for P*D replicas and D
 * micro-batch counts, reusing owned memory when large enough. Contents are left unset. */
int sl_plan_reserve(struct sl_plan *plan, int stages, int pipelines, struct sl_err *err);

/* Frees owned memory and zeroes the plan. */
void sl_plan_free(struct sl_plan *plan);

/* Deep copy into dst (dst must be initialised; its owned memory is reused). */
int sl_plan_copy(struct sl_plan *dst, const struct sl_plan *src, struct sl_err *err);

/* Reads a plan file in either format (detected by its fields). Errors name the file and the JSON
 * path and say what would fix it. out must be initialised (sl_plan_init) and is overwritten. */
int sl_plan_load(const char *path, const struct sl_catalogue *cat, struct sl_plan *out,
		 struct sl_err *err);
int sl_plan_from_json(const json_t *root, const char *path, const struct sl_catalogue *cat,
		      struct sl_plan *out, struct sl_err *err);

/* Checks that need the model: num_layers plan layers covered exactly once and in order, every
 * stage non-empty, tp <= gpus_per_node of its GPU, global batch (after defaults) >= 1 and
 * shareable over the pipelines (sl_plan_microbatch_counts). global_batch is
 * the batch the plan will be simulated with. Messages name plan->path and the field. */
int sl_plan_check(const struct sl_plan *plan, int num_layers, long long global_batch,
		  const struct sl_catalogue *cat, struct sl_err *err);

/* Our format, run-length encoded (consecutive equal replicas in a stage merge into one entry
 * with "count"). Fields in the order of the format above; "model" and "global_batch" only when
 * set; "microbatches_per_pipeline" only when uneven. New reference. */
json_t *sl_plan_to_json(const struct sl_plan *plan, const struct sl_catalogue *cat);

/* Writes sl_plan_to_json to path (indented, newline-terminated). */
int sl_plan_save(const struct sl_plan *plan, const struct sl_catalogue *cat, const char *path,
		 struct sl_err *err);

/* Names the plan's model ("model"): the name or hyper-parameter file the plan was made for, as
 * `sailor simulate` and `sailor run` will load it. Returns 0, or -1 (model left as it was) when
 * the text does not fit SL_MODEL_NAME_MAX. */
int sl_plan_set_model(struct sl_plan *plan, const char *model);

/* Total GPUs the plan occupies (sum of tp over all replicas). */
long long sl_plan_gpu_count(const struct sl_plan *plan);

/* Index of the run-length entry ("replicas[i]" in our format, as sl_plan_to_json writes it) that
 * holds replica j of a stage: consecutive equal replicas form one entry. For error messages. */
int sl_plan_replica_entry(const struct sl_plan *plan, int stage, int j);

/* Micro-batches of pipeline j for global batch G under the sharing rule of microbatch_share.h
 * (microbatches[j] when given, else G / (micro_batch · D), the first (G / micro_batch) mod D
 * pipelines one more). For a plan that sl_plan_check accepted. */
int sl_plan_pipeline_microbatches(const struct sl_plan *plan, int j, long long global_batch);

#endif
