/* Profiles: measured per-layer time of one model on one GPU type, per (micro-batch, TP degree).
 *
 * File (data/profiles/<MODEL>/<GPU>.json, the SOSP'25 artifact's profile.json):
 *   {"<mbs>": {"<tp>": {"<layer>": [forward_s, backward_s, optimizer_update_s], ...}, ...}, ...}
 * Seconds per micro-batch of mbs samples on each GPU of a TP group of size tp, measured with CUDA
 * events around each layer in Megatron-DeepSpeed, fp32; TP communication is inside the times.
 * optimizer_update_s is the step time of the profiled model (embedding + 2 blocks + head),
 * copied into every layer entry (SIMULATOR.md section 2.2). Layers are read by number (not file
 * order) and must be 0..L-1 without gaps.
 *
 * Profiles of our own runtime (schema "sailor.profile/1", written by `sailor profile`) also carry,
 * per entry, the memory the runtime's layers take (source.entries["mbs M tp T"].memory): the
 * bytes of each layer kind's parameter storage (values, gradients, two AdamW moments) and of
 * its activation cache for one micro-batch, and the backward workspace. `runtime_sailor` says
 * the times are our runtime's (the simulator then models `sailor run`, time_replay.c);
 * shipped SOSP'25 profiles are Megatron-DeepSpeed's.
 *
 * Invariants: each entry has num_layers layers; all times >= 0. Ownership: sl_profile_load
 * allocates, sl_profile_free frees.
 */
#ifndef SL_PROFILE_PROFILE_H
#define SL_PROFILE_PROFILE_H

#include <stddef.h>

#include "util/err.h"

#define SL_PROFILE_MAX_ENTRIES 96
#define SL_PROFILE_PATH_MAX 512

enum sl_layer_kind_index { SL_KIND_EMBEDDING = 0, SL_KIND_BLOCK = 1, SL_KIND_HEAD = 2 };

/* Memory of our runtime's layers at one (mbs, tp) (bytes per rank of the TP group). */
struct sl_profile_memory {
	int present;
	double params_bytes[3];       /* storage: values | grads | exp_avg | exp_avg_sq; the head's
				       * includes its own copy of the token table */
	double activations_bytes[3];  /* activation cache of one micro-batch in flight */
	double workspace_bytes;       /* backward scratch shared by a stage's layers + 4 activation
				       * buffers of the micro-batch */
	double runtime_rss_bytes;     /* the profiling rank's resident memory less its tensors:
				       * binary, libraries, and OpenMPI when mpi_ranks; 0 unknown */
	int mpi_ranks;                /* measured as MPI ranks (`sailor profile --host`) */
};

struct sl_profile_entry {
	int mbs;
	int tp;
	struct sl_profile_memory memory; /* runtime_sailor profiles only */
	/* selective recomputation's work over the block's forward, both as measured
	 * (source.entries["mbs M tp T"].median_s: recompute_attention / forward_block; profiler.c);
	 * 0: not measured (runtime_sailor profiles only) */
	double attention_core_share;
	double *fwd_s;     /* [layer] */
	double *bwd_s;     /* [layer] */
	double *update_s;  /* [layer] (the same value in every layer in the shipped files) */
};

struct sl_profile {
	char path[SL_PROFILE_PATH_MAX];
	int runtime_sailor;   /* schema "sailor.profile/1": our runtime's layers */
	/* source.idle_wait (runtime_sailor profiles of a CPU quota, made with MPI ranks): process
	 * CPU per test of a sleeping wait and how late each test comes past its sleep */
	int idle_measured;
	double idle_cpu_per_test_s, idle_late_per_test_s;
	int num_layers;
	int entry_count;
	struct sl_profile_entry entries[SL_PROFILE_MAX_ENTRIES]; /* sorted by (mbs, tp) */
};

/* Loads a profile file; expected_layers > 0 makes a different layer count an error. */
int sl_profile_load(const char *path, int expected_layers, struct sl_profile **out,
		    struct sl_err *err);
void sl_profile_free(struct sl_profile *prof);

/* Folds a profile in another layer numbering into the plan's: source layer l becomes plan layer
 * map[l] (non-decreasing; model_config.h, sl_model_source_layer_map), forward and backward times
 * of folded layers added, their optimizer time the largest (it is per step, not per layer).
 * After it num_layers = map[num_layers - 1] + 1. Nothing to do for the identity. */
void sl_profile_fold_layers(struct sl_profile *prof, const int *map);

/* The entry for (mbs, tp), or NULL. */
const struct sl_profile_entry *sl_profile_find(const struct sl_profile *prof, int mbs, int tp);

/* "<data_dir>/profiles/<model>/<gpu>.json" into buf (data_dir NULL = sl_paths_data_dir()). */
char *sl_profile_path(char *buf, size_t size, const char *data_dir, const char *model,
		      const char *gpu);

/* Where the profile of (model, gpu) is read from: "<overlay_dir>/<model>/<gpu>.json" when
 * overlay_dir is set and that file exists, else sl_profile_path's. An overlay folder replaces
 * some shipped profiles and leaves the others in place. */
char *sl_profile_locate(char *buf, size_t size, const char *data_dir, const char *overlay_dir,
			const char *model, const char *gpu);

/* Lists the (mbs, tp) pairs present, "mbs 1 tp 1, mbs 1 tp 2, ..." (for error messages). */
const char *sl_profile_entries_text(const struct sl_profile *prof, char *buf, size_t size);

#endif
