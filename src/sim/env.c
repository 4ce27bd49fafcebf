/* The simulation environment: loading everything a model needs once, precomputing prefix sums,
 * and reading the tables (layer times and parameters of a layer range, GPU prices and sizes).
 * The stage queries with memory options are in sim/memory_options.c, memory in sim/memory.c; both read
 * the tables through the readers here, and nothing here calls them back. Invariants: see
 * internal.h. */
#include <dirent.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/internal.h"
#include "util/log.h"
#include "util/paths.h"

const char *sl_cost_model_name(enum sl_cost_model cm)
{
	return cm == SL_COST_SOSP25 ? "sosp25" : "sailor";
}

int sl_cost_model_parse(const char *name, enum sl_cost_model *out, struct sl_err *err)
{
	if (!strcmp(name, "sailor"))
		*out = SL_COST_SAILOR;
	else if (!strcmp(name, "sosp25"))
		*out = SL_COST_SOSP25;
	else
		return sl_err_set(err, SL_EUSAGE, "unknown cost model '%s': use 'sailor' or 'sosp25'",
				  name);
	return 0;
}

/* Profiled slots. The sailor model reads the profile with one correction: a layer's forward or
 * backward time may not decrease as the micro-batch grows (a micro-batch of b samples does a
 * subset of the work of one of 2b), so t_eff(b) = min over profiled b' >= b of t(b'). Entries that
 * break this (OPT-350 on GH-96 at tp 4: block forward 2.38 ms at mbs 1 but 1.51 ms at mbs 2)
 * measured launch or synchronisation stalls of the profiler (CUDA events around each layer of a
 * CPU-bound small micro-batch), not the layer. The sosp25 model reads the raw values. */
static int fill_profiled(struct sl_sim_env *env, int g, struct sl_err *err)
{
	const struct sl_profile *prof = env->profiles[g];
	int L = env->num_layers;
	double *fwd = malloc((size_t)L * sizeof(double)), *bwd = malloc((size_t)L * sizeof(double));
	if (!fwd || !bwd) {
		free(fwd);
		free(bwd);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	int rc = 0;
	for (int i = 0; i < prof->entry_count && !rc; i++) {
		const struct sl_profile_entry *e = &prof->entries[i];
		int s = sl_sim_mbs_slot(e->mbs);
		if (s < 0 || e->tp > SL_SIM_MAX_TP)
			continue;
		for (int l = 0; l < L; l++) {
			fwd[l] = e->fwd_s[l];
			bwd[l] = e->bwd_s[l];
			for (int k = 0; k < prof->entry_count; k++) {
				const struct sl_profile_entry *o = &prof->entries[k];
				if (o->tp != e->tp || o->mbs <= e->mbs)
					continue;
				if (o->fwd_s[l] < fwd[l])
					fwd[l] = o->fwd_s[l];
				if (o->bwd_s[l] < bwd[l])
					bwd[l] = o->bwd_s[l];
			}
		}
		/* the C++ planner takes update = max over layers (SIMULATOR.md 2.2); the values are
		 * all equal in the shipped files */
		double upd = 0;
		for (int l = 0; l < L; l++)
			if (e->update_s[l] > upd)
				upd = e->update_s[l];
		double per_param = upd / sl_sim_profiled_model_params(env->sizes, e->tp);
		struct sl_time_slot *slot = sl_sim_slot_mut(env, g, s, e->tp);
		rc = sl_sim_fill_slot(env, slot, SL_TIME_PROFILED, e->fwd_s, e->bwd_s, fwd, bwd,
				      e->update_s, per_param, err);
		slot->attention_core_share = e->attention_core_share;
	}
	free(fwd);
	free(bwd);
	return rc;
}

static int file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The SOSP'25 simulator's own price and memory tables (SIMULATOR.md section 2.7): GPU_PRICES
 * ($/h, simulations/constants.py) and GPU_MEMORY_GB (GiB). Types it lacks use our catalogue. */
static void sosp25_tables(struct sl_sim_env *env)
{
	static const struct {
		const char *name;
		double usd_per_hour; /* 0 = not in GPU_PRICES */
		double memory_gib;
	} t[] = {
		{"A100-40", 3.673385, 40}, {"V100-16", 2.859998, 16}, {"GH-96", 11.06, 96},
		{"A100-80", 0, 80},        {"Titan-RTX", 0, 24},      {"RTX-2080", 0, 11},
		{"RTX-3090", 0, 24},
	};
	const struct sl_catalogue *cat = &env->catalogue;
	for (int g = 0; g < cat->gpu_count; g++) {
		env->tables->sosp25_usd_per_hour[g] = cat->gpus[g].usd_per_hour;
		env->tables->sosp25_memory_bytes[g] = cat->gpus[g].memory_bytes;
		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
			if (!strcmp(t[i].name, cat->gpus[g].name)) {
				if (t[i].usd_per_hour > 0)
					env->tables->sosp25_usd_per_hour[g] = t[i].usd_per_hour;
				env->tables->sosp25_memory_bytes[g] = t[i].memory_gib * 1073741824.0;
			}
	}
}

static int size_tables(struct sl_sim_env *env, struct sl_err *err)
{
	int L = env->num_layers;
	struct sl_sim_tables *T = env->tables;
	for (int t = 1; t <= SL_SIM_MAX_TP; t++) {
		T->params_prefix[t] = calloc((size_t)L + 1, sizeof(double));
		T->act_prefix[t] = calloc((size_t)L + 1, sizeof(double));
		T->act_rmax[t] = calloc((size_t)L * (size_t)L, sizeof(double));
		if (!T->params_prefix[t] || !T->act_prefix[t] || !T->act_rmax[t])
			return sl_err_set(err, SL_ENOMEM, "out of memory");
		for (int l = 0; l < L; l++) {
			T->params_prefix[t][l + 1] = T->params_prefix[t][l] + env->sizes->params[t][l];
			T->act_prefix[t][l + 1] = T->act_prefix[t][l] + env->sizes->act_mem_bytes[t][l];
		}
		for (int a = 0; a < L; a++) {
			double m = 0;
			for (int b = a; b < L; b++) {
				if (env->sizes->act_mem_bytes[t][b] > m)
					m = env->sizes->act_mem_bytes[t][b];
				T->act_rmax[t][(size_t)a * (size_t)L + (size_t)b] = m;
			}
		}
	}
	return 0;
}

/* Loads the model's profile of every GPU type that has one and fills its time slots. */
static int load_profiles(struct sl_sim_env *env, const char *data_dir, struct sl_err *err)
{
	int rc = 0;
	for (int g = 0; !rc && g < env->catalogue.gpu_count; g++) {
		char *path = env->tables->profile_path[g];
		sl_profile_locate(path, SL_PROFILE_PATH_MAX, data_dir, sl_sim_env_profile_overlay(env),
				  env->model.name, env->catalogue.gpus[g].name);
		/* a model of data/models (ours, e.g. gpt2-tiny) has profiles only where `sailor
		 * profile` wrote them, usually in an overlay folder */
		if (!file_exists(path))
			continue;
		rc = sl_profile_load(path, 0, &env->profiles[g], err);
		/* the artifact's numbering of this model folded into the plan's (model_config.h) */
		int map[SL_MAX_MODEL_BLOCKS + 2 + SL_MODEL_MAX_MERGED];
		if (!rc && env->profiles[g]->num_layers <= (int)(sizeof(map) / sizeof(map[0])) &&
		    !sl_model_source_layer_map(&env->model, env->profiles[g]->num_layers, map))
			sl_profile_fold_layers(env->profiles[g], map);
		if (!rc && env->profiles[g]->num_layers != env->num_layers) {
			/* The artifact's GPT-Neo-2.7/GH-96 profile is a copy of OPT-350's (26 layers):
			 * unusable for this model, so that GPU type falls back to estimated times. */
			sl_log_warn("profile '%s' has %d layers but %s has %d: not used, layer times on "
				    "%s are estimated", path, env->profiles[g]->num_layers, env->model.name,
				    env->num_layers, env->catalogue.gpus[g].name);
			sl_profile_free(env->profiles[g]);
			env->profiles[g] = NULL;
			continue;
		}
		if (!rc)
			rc = fill_profiled(env, g, err);
	}
	return rc;
}

/* The overlay folder must exist and hold at least one profile of the model, and every file in
 * <overlay>/<MODEL>/ must be a <GPU>.json of the catalogue: a misspelt folder or GPU name would
 * otherwise leave the shipped profile in use without a word. */
static int check_overlay(const struct sl_sim_env *env, const char *overlay, struct sl_err *err)
{
	struct stat st;
	if (stat(overlay, &st) != 0 || !S_ISDIR(st.st_mode))
		return sl_err_set(err, SL_EINPUT, "--profiles: '%s' is not a folder (expected a folder "
				  "laid out like data/profiles: <MODEL>/<GPU>.json)", overlay);
	char dir[SL_PROFILE_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/%s", overlay, env->model.name);
	DIR *d = opendir(dir);
	if (!d)
		return sl_err_set(err, SL_EINPUT, "--profiles: '%s' has no profile of %s (expected "
				  "files %s/<GPU>.json)", overlay, env->model.name, dir);
	int found = 0, rc = 0;
	for (struct dirent *e; !rc && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		size_t n = strlen(e->d_name);
		int known = 0;
		for (int g = 0; !known && g < env->catalogue.gpu_count; g++) {
			const char *gpu = env->catalogue.gpus[g].name;
			size_t k = strlen(gpu);
			known = n == k + 5 && !strncmp(e->d_name, gpu, k) && !strcmp(e->d_name + k, ".json");
		}
		if (!known) {
			char names[512];
			rc = sl_err_set(err, SL_EINPUT, "--profiles: '%s/%s' is not named after a GPU "
					"type (<GPU>.json with GPU one of %s)", dir, e->d_name,
					sl_catalogue_gpu_names(&env->catalogue, names, sizeof(names)));
		}
		found++;
	}
	closedir(d);
	if (!rc && !found)
		rc = sl_err_set(err, SL_EINPUT, "--profiles: '%s' is empty (expected <GPU>.json files)",
				dir);
	return rc;
}

int sl_sim_env_load(const char *model, const char *data_dir, struct sl_sim_env **out,
		    struct sl_err *err)
{
	return sl_sim_env_load_overlaid(model, data_dir, NULL, out, err);
}

/* The loads below are independent in pairs and each takes milliseconds of JSON parsing (the
 * whole start-up of `sailor plan` is timed against the SOSP'25 planner), so each pair runs on
 * two cores at once: the catalogue beside the model's layer sizes, then the network fits beside
 * the profiles and the times derived from them. jansson is safe on separate documents once its
 * hash seed is set, which json_object_seed does before the first pair (a no-op when set). */
static int load_catalogue_and_sizes(struct sl_sim_env *env, const char *data_dir,
				    struct sl_err *err)
{
	struct sl_err cat_err = {0}, sizes_err = {0};
	int cat_rc = 0, sizes_rc = 0;
	json_object_seed(0);
#pragma omp parallel sections num_threads(2)
	{
#pragma omp section
		cat_rc = sl_catalogue_load(data_dir, &env->catalogue, &cat_err);
#pragma omp section
		sizes_rc = sl_layer_sizes_load(&env->model, data_dir, &env->sizes, &sizes_err);
	}
	if (cat_rc && err)
		*err = cat_err;
	else if (sizes_rc && err)
		*err = sizes_err;
	return cat_rc ? cat_rc : sizes_rc;
}

/* The network fits, beside the profiles with the tables and estimated times built from them
 * (none of which read the network). */
static int load_network_and_times(struct sl_sim_env *env, const char *data_dir,
				  struct sl_err *err)
{
	struct sl_err net_err = {0}, prof_err = {0};
	int net_rc = 0, prof_rc = 0;
#pragma omp parallel sections num_threads(2)
	{
#pragma omp section
		net_rc = sl_network_load(data_dir, &env->catalogue, &env->network, &net_err);
#pragma omp section
		{
			prof_rc = load_profiles(env, data_dir, &prof_err);
			if (!prof_rc)
				prof_rc = size_tables(env, &prof_err);
			if (!prof_rc)
				prof_rc = sl_sim_estimate_times(env, data_dir,
								sl_sim_env_profile_overlay(env),
								&prof_err);
		}
	}
	if (net_rc && err)
		*err = net_err;
	else if (prof_rc && err)
		*err = prof_err;
	return net_rc ? net_rc : prof_rc;
}

int sl_sim_env_load_overlaid(const char *model, const char *data_dir,
			     const char *profile_overlay_dir, struct sl_sim_env **out,
			     struct sl_err *err)
{
	*out = NULL;
	if (!data_dir)
		data_dir = sl_paths_data_dir();
	struct sl_sim_env *env = calloc(1, sizeof(*env));
	if (!env)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	int rc = sl_model_config_load(model, &env->model, err);
	if (!rc)
		rc = load_catalogue_and_sizes(env, data_dir, err);
	if (!rc) {
		env->num_layers = env->sizes->num_layers;
		env->named_model = env->sizes->from_file;
		env->tables = calloc(1, sizeof(*env->tables));
		if (!env->tables)
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	if (!rc) {
		env->tables->L = env->num_layers;
		if (profile_overlay_dir) {
			if (snprintf(env->tables->profile_overlay_dir, SL_PROFILE_PATH_MAX, "%s",
					  profile_overlay_dir) >= SL_PROFILE_PATH_MAX)
				rc = sl_err_set(err, SL_EINPUT, "--profiles: path too long");
			else
				rc = check_overlay(env, profile_overlay_dir, err);
		}
		env->tables->gpu_count = env->catalogue.gpu_count;
		env->tables->slots = calloc((size_t)env->catalogue.gpu_count * SL_SIM_MBS_SLOTS *
						    SL_SIM_MAX_TP, sizeof(struct sl_time_slot));
		if (!env->tables->slots)
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	if (!rc)
		rc = load_network_and_times(env, data_dir, err);
	if (!rc) sosp25_tables(env);
	if (!rc) {
		static _Atomic unsigned long long loads;
		env->serial = ++loads;
	}
	if (rc) {
		sl_sim_env_free(env);
		return rc;
	}
	*out = env;
	return 0;
}

void sl_sim_env_free(struct sl_sim_env *env)
{
	if (!env)
		return;
	if (env->tables) {
		size_t n = (size_t)env->tables->gpu_count * SL_SIM_MBS_SLOTS * SL_SIM_MAX_TP;
		for (size_t i = 0; env->tables->slots && i < n; i++)
			free(env->tables->slots[i].fwd_prefix);
		free(env->tables->slots);
		for (int t = 1; t <= SL_SIM_MAX_TP; t++) {
			free(env->tables->params_prefix[t]);
			free(env->tables->act_prefix[t]);
			free(env->tables->act_rmax[t]);
		}
		free(env->tables);
	}
	for (int g = 0; g < SL_MAX_GPU_TYPES; g++)
		sl_profile_free(env->profiles[g]);
	sl_layer_sizes_free(env->sizes);
	sl_network_free(env->network);
	free(env);
}

const char *sl_sim_env_profile_overlay(const struct sl_sim_env *env)
{
	return env->tables->profile_overlay_dir[0] ? env->tables->profile_overlay_dir : NULL;
}

/* ---- queries ---- */

enum sl_time_source sl_sim_time_source(const struct sl_sim_env *env, int gpu, int mbs, int tp)
{
	const struct sl_time_slot *s = sl_sim_slot(env, gpu, mbs, tp);
	return s ? s->source : SL_TIME_NONE;
}

int sl_sim_layers_fwd_bwd(const struct sl_sim_env *env, enum sl_cost_model cm, int gpu, int mbs,
			  int tp, int first, int last, double *fwd_s, double *bwd_s)
{
	const struct sl_time_slot *s = sl_sim_slot(env, gpu, mbs, tp);
	if (!s || first < 0 || last < first || last >= env->num_layers)
		return SL_ENOTFOUND;
	if (cm == SL_COST_SOSP25) {
		*fwd_s = s->raw_fwd_prefix[last + 1] - s->raw_fwd_prefix[first];
		*bwd_s = s->raw_bwd_prefix[last + 1] - s->raw_bwd_prefix[first];
	} else {
		*fwd_s = s->fwd_prefix[last + 1] - s->fwd_prefix[first];
		*bwd_s = s->bwd_prefix[last + 1] - s->bwd_prefix[first];
	}
	return 0;
}

double sl_sim_stage_params(const struct sl_sim_env *env, int tp, int a, int b)
{
	const double *p = env->tables->params_prefix[tp];
	double n = p[b + 1] - p[a];
	int L = env->num_layers;
	/* Megatron-DeepSpeed ties the word embedding to the head (TiedLayerSpec): a stage holding
	 * both keeps one copy; the artifact's head figures include the copy (vocab·h/t + 2h). */
	if (a == 0 && b == L - 1 && env->sizes->head_holds_embedding)
		n -= env->sizes->params[tp][L - 1] - 2.0 * env->model.hidden;
	return n;
}

double sl_sim_stage_grad_bytes(const struct sl_sim_env *env, int a, int b)
{
	return SL_FP32_BYTES * sl_sim_stage_params(env, 1, a, b);
}

double sl_sim_layers_update_s(const struct sl_sim_env *env, enum sl_cost_model cm, int gpu,
			      int mbs, int tp, int first, int last)
{
	const struct sl_time_slot *s = sl_sim_slot(env, gpu, mbs, tp);
	if (!s || first < 0 || last < first || last >= env->num_layers)
		return -1.0;
	if (cm == SL_COST_SOSP25)
		return s->raw_update[first]; /* u_i from the first layer only (SIMULATOR.md 4.2) */
	return s->update_per_param_s * sl_sim_stage_params(env, tp, first, last);
}

double sl_sim_gpu_usd_per_hour(const struct sl_sim_env *env, enum sl_cost_model cm, int gpu,
			       int zone)
{
	if (cm == SL_COST_SOSP25)
		return env->tables->sosp25_usd_per_hour[gpu];
	return sl_catalogue_gpu_usd_per_hour(&env->catalogue, gpu, zone);
}

int sl_sim_gpus_per_node(const struct sl_sim_env *env, int gpu)
{
	return env->catalogue.gpus[gpu].gpus_per_node;
}

double sl_sim_gpu_memory_bytes(const struct sl_sim_env *env, int gpu)
{
	return env->catalogue.gpus[gpu].memory_bytes;
}
