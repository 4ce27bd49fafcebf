/* The simulator: iteration time (with a breakdown), peak memory per worker and dollars per
 * iteration of any plan, under one of two cost models.
 *
 *   SL_COST_SAILOR  (default) ours: the 1F1B schedule simulated per pipeline (warm-up, steady
 *                   state, cool-down, point-to-point transfers between stages and across zones,
 *                   eager or rendezvous as NCCL's buffer decides, through one NIC per node,
 *                   stragglers), the data-parallel all-reduce as the runtime performs it
 *                   (bucketed ring over the slowest link, TP shards reduced concurrently), the
 *                   optimizer step per stage, and a per-component memory model with per-GPU-type
 *                   runtime overheads, and the per-stage memory options (activation
 *                   recomputation, ZeRO-1). Files: time_sailor.c, comm_time.c, memory.c, memory_options.c.
 *                   When every GPU type of a plan has a profile of OUR runtime (sailor.profile/1,
 *                   written by `sailor profile`), the plan is modelled as `sailor run` executes
 *                   it instead (time_replay.c: its own instruction lists, whole-copy transfers,
 *                   MPI all-reduces, the process's resident memory, the same memory options).
 *                   sl_sim_result.runtime_sailor says which.
 *   SL_COST_SOSP25  the SOSP'25 Sailor simulator exactly as ../shared/reference/sosp25/SIMULATOR.md
 *                   gives it (iteration time, egress cost, its validation memory estimate with the
 *                   fixed 5.06e9-byte overhead, its prices). File: time_sosp25.c.
 *
 * Usage: load an environment once per model (sl_sim_env_load: model, per-layer sizes, GPU
 * catalogue, the model's profile for every GPU type that has one, network fits, egress prices,
 * and precomputed prefix sums), then call sl_simulate as often as needed. sl_simulate and the
 * sl_sim_* queries allocate nothing and only read the environment, so one environment may be
 * shared by threads.
 *
 * Layer times. For a named model on a GPU type with a shipped profile, times are the profile's
 * (data/profiles/<MODEL>/<GPU>.json, or an overlay folder's); a (micro-batch, TP) the profile
 * lacks is an error naming
 * the profile file and the entry. For a GPU type with no profile of the model, or a model given
 * as a hyper-parameter file, times are estimated (SL_TIME_ESTIMATED): per layer, FLOPs divided
 * by the FLOP rate that GPU achieved on the same kind of layer of a profiled reference model at
 * the same (micro-batch, TP) (see sim/estimate.c); results and output say so.
 *
 * Units: seconds, bytes, bytes/s, USD. Ownership: sl_sim_env_load allocates the environment,
 * sl_sim_env_free frees it; results are plain data; *_to_json return new references.
 */
#ifndef SL_SIM_SIM_H
#define SL_SIM_SIM_H

#include <jansson.h>
#include <stdio.h>

#include "cluster/catalogue.h"
#include "cluster/link_model.h"
#include "cluster/network.h"
#include "util/limits.h"
#include "model/layer_sizes.h"
#include "model/model_config.h"
#include "plan/plan.h"
#include "profile/profile.h"
#include "plan/roles.h"
#include "plan/timeline.h"
#include "util/err.h"

#define SL_SIM_MAX_STAGES SL_PLAN_MAX_STAGES         /* 64 */
#define SL_SIM_MAX_PIPELINES SL_PLAN_MAX_PIPELINES   /* 1024 replicas per stage */
#define SL_SIM_MBS_SLOTS 11                          /* micro-batch sizes 1, 2, 4, ..., 1024 */
#define SL_SIM_MAX_TP 8                              /* TP degrees 1..8 */

enum sl_cost_model { SL_COST_SAILOR = 0, SL_COST_SOSP25 = 1 };

/* "sailor" / "sosp25". */
const char *sl_cost_model_name(enum sl_cost_model cm);
/* Parses "sailor" or "sosp25"; SL_EUSAGE naming the value otherwise. */
int sl_cost_model_parse(const char *name, enum sl_cost_model *out, struct sl_err *err);

enum sl_time_source {
	SL_TIME_NONE = 0,      /* no time: a profiled GPU lacks this (mbs, tp), or tp/mbs invalid */
	SL_TIME_PROFILED = 1,  /* measured profile entry */
	SL_TIME_ESTIMATED = 2, /* estimated from FLOPs (no profile of this model on this GPU) */
};

struct sl_sim_tables; /* private precomputation (sim/env.c) */

struct sl_sim_env {
	struct sl_model_config model;
	int num_layers;                /* plan layers L (from the per-layer sizes) */
	int named_model;               /* 1: shipped sizes and profiles; 0: hyper-parameter file */
	struct sl_catalogue catalogue;
	struct sl_layer_sizes *sizes;
	struct sl_network *network;
	struct sl_profile *profiles[SL_MAX_GPU_TYPES]; /* NULL: no profile of the model there */
	struct sl_sim_tables *tables;
	const struct sl_cluster *cluster; /* borrowed, may be NULL: hosts of our runtime's ranks */
	struct sl_sim_timeline *timeline; /* borrowed, may be NULL: filled by the replay model */
	double reserve_param_copies;   /* memory kept free on every rank for this many more copies
					* of its parameters (the island search's room for the outer
					* step: search/islands_search.h); 0 for a plan as it is */
	unsigned long long serial;     /* one per load, kept by copies of the struct: what caches of
					* its times are keyed by (an address may be reused) */
};

/* Gives the environment the cluster file whose hosts our runtime's ranks would run on (the
 * launcher's placement, plan/placement.h): the replay model (time_replay.c) then knows which
 * ranks share a host. Borrowed: it must outlive env. NULL: every replica a host of its own. */
struct sl_cluster;
void sl_sim_env_set_cluster(struct sl_sim_env *env, const struct sl_cluster *cluster);

/* A timeline of the replay model (plan/timeline.h): when sl_simulate models a plan as our
 * runtime (sl_sim_replay_uses) with one set, it records the spans of every rank in the step the
 * model times (the second, its first phase draw), times from that step's start, and the ranks'
 * roles placed on the cluster's hosts; recorded says it did. Other cost models record nothing.
 * One timeline is for one sl_simulate call (free it before another). The caller frees spans and
 * roles with sl_sim_timeline_free. */
struct sl_sim_timeline {
	struct sl_timeline spans;
	struct sl_role_table roles;
	int recorded;
};
void sl_sim_env_set_timeline(struct sl_sim_env *env, struct sl_sim_timeline *timeline);
void sl_sim_timeline_free(struct sl_sim_timeline *timeline);

/* Loads everything for one model (a name or a hyper-parameter file, as sl_model_config_load)
 * from data_dir (NULL = sl_paths_data_dir()). Errors name the file that failed. */
int sl_sim_env_load(const char *model, const char *data_dir, struct sl_sim_env **out,
		    struct sl_err *err);
/* As sl_sim_env_load, but profiles found in profile_overlay_dir (laid out like data/profiles:
 * <MODEL>/<GPU>.json) are used in place of the shipped ones; GPU types it has no file for keep
 * theirs. NULL: no overlay. The folder must exist and hold a profile of this model, and every
 * file in <overlay>/<MODEL>/ must be named after a GPU type of the catalogue (SL_EINPUT naming
 * the folder or file otherwise), so that a typo cannot silently leave the shipped profile in use. */
int sl_sim_env_load_overlaid(const char *model, const char *data_dir,
			     const char *profile_overlay_dir, struct sl_sim_env **out,
			     struct sl_err *err);
void sl_sim_env_free(struct sl_sim_env *env);
/* The overlay folder the environment's profiles came from, or NULL for the shipped ones. */
const char *sl_sim_env_profile_overlay(const struct sl_sim_env *env);

/* Memory of one replica (per GPU), by component. */
struct sl_sim_memory {
	double params_bytes;       /* the replica's parameter shard */
	double grads_bytes;        /* gradient buffers */
	double optimizer_bytes;    /* optimizer state (Adam m and v) */
	double activations_bytes;  /* stored activations of in-flight micro-batches + working set */
	double buffers_bytes;      /* p2p receive buffers, NCCL buffers */
	double runtime_bytes;      /* CUDA context, library workspaces (per GPU type) */
	double total_bytes;
	double capacity_bytes;     /* the GPU's memory */
};

struct sl_sim_stage {
	int first_layer, last_layer;
	int replicas;              /* D */
	long long gpus;            /* GPUs the stage occupies */
	double fwd_s, bwd_s;       /* per micro-batch, slowest replica of the stage */
	double compute_s;          /* per iteration, in the slowest pipeline: forward + backward */
	double p2p_s;              /* per iteration, slowest pipeline: sending/receiving */
	double bubble_s;           /* per iteration, slowest pipeline: idle until its last backward */
	double dp_sync_s;          /* gradient all-reduce of this stage (after the pipeline) */
	double optimizer_s;        /* optimizer step of this stage (slowest replica) */
	double cpu_s;              /* our runtime's model, devices that are CPU quotas: the CPU a
				    * rank of the stage spends per iteration (the most), what its
				    * budget pays; 0 elsewhere */
	double wait_tests;         /* the same ranks: the MPI tests of their sleeping waits per
				    * iteration (the most) */
	double dp_sync_cpu_s;      /* the same ranks: the part of cpu_s spent in the gradient
				    * sync (the most) */
	int memory_replica;        /* replica j with the highest memory / capacity */
	struct sl_sim_memory memory;/* of that replica */
	int fits;                  /* every replica of the stage fits its GPU */
	int time_estimated;        /* some replica's layer times are estimated */
};

struct sl_sim_result {
	enum sl_cost_model cost_model;
	int runtime_sailor;        /* 1: modelled as our runtime (sailor run), 0: DeepSpeed's */
	int num_stages, num_pipelines, micro_batch;
	long long global_batch;
	int microbatches;          /* per pipeline (the largest when uneven) */
	long long samples_per_iteration; /* micro_batch x the pipelines' micro-batches: equals
					  * global_batch (plan/microbatch_share.h) */
	long long num_gpus;
	double iteration_time_s;   /* = pipeline_time_s + dp_sync_s + optimizer_s */
	double pipeline_time_s;    /* until the slowest pipeline's last backward ends */
	double dp_sync_s;          /* exposed gradient synchronisation */
	double optimizer_s;        /* exposed optimizer step */
	int slowest_pipeline;      /* j of the straggler pipeline */
	double throughput_it_s;    /* 1 / iteration_time_s */
	double samples_per_s, tokens_per_s;
	double peak_memory_bytes;  /* max over workers */
	int peak_stage;            /* the stage holding that worker */
	int fits_memory;           /* every worker fits its GPU */
	double gpu_usd_per_hour;   /* rent of all the plan's GPUs */
	double gpu_cost_usd_per_iter;
	double egress_cost_usd_per_iter;
	double cost_usd_per_iter;  /* rent + egress */
	int time_estimated;        /* some layer times are estimated (no profile) */
	int network_derived;       /* some link's bandwidth is a stand-in (see cluster/network.h) */
	struct sl_sim_stage stages[SL_SIM_MAX_STAGES];
};

/* Checks a plan against the environment: sl_plan_check (layers, tp, batch) plus a time for every
 * replica's (gpu, micro_batch, tp) — a profiled GPU lacking the entry is an error naming the
 * profile file and the entry. global_batch <= 0 means plan->global_batch, else the model's. */
int sl_sim_check_plan(const struct sl_sim_env *env, const struct sl_plan *plan,
		      long long global_batch, struct sl_err *err);

/* A plan with islands (plan/islands.h), island by island and the outer step per round
 * (sim/islands.c says how each figure is made). Times per round unless named per step. */
struct sl_sim_island {
	int pipelines;
	int inner_steps;              /* H_i */
	long long samples_per_step;
	long long gpus;
	double step_s;                /* an inner step: the island as a synchronous plan */
	double compute_s;             /* H_i x step_s */
	double stall_s;               /* waiting on the outer exchange */
	double peak_memory_bytes;     /* with the outer step's copies */
	int fits_memory;
	double gpu_usd_per_hour;
	double egress_usd_per_step;   /* the island's own data-parallel sync across zones */
};

struct sl_sim_islands {
	int count;
	int seq_len;
	struct sl_sim_island island[SL_ISLANDS_MAX_ISLANDS];
	double class_bytes[SL_LINK_CLASSES]; /* the exchange's bytes by link class */
	double bytes_per_round;
	double tokens_per_round;
	double bytes_per_1k_tokens;
	double exchange_s;            /* every fragment once, blocking, on the slowest group */
	double fragment_exchange_s;   /* one fragment's */
	double round_s;               /* the slowest island's compute and stall, the stop agreement */
	double outer_egress_usd_per_round;
	double outer_memory_bytes;    /* the largest extra memory of a rank */
};

/* sl_simulate for a plan with more than one island (sl_simulate calls it): out describes the
 * whole plan per run step (island 0's inner step; its stages are island 0's), detail (may be
 * NULL) island by island. The sosp25 cost model refuses islands. */
int sl_sim_islands(const struct sl_sim_env *env, const struct sl_plan *plan, enum sl_cost_model cm,
		   struct sl_sim_result *out, struct sl_sim_islands *detail, struct sl_err *err);

/* Every transfer of a plan's iteration between two replicas, as the sailor model counts them
 * (time_sailor.c; its egress is these bytes priced): visit(ctx, from, to, bytes, both_ways) with
 * zone indices, same-zone transfers included; both_ways: as many bytes go back (activations
 * and their gradients, the tied embedding's gradient). M: micro-batches per pipeline. */
typedef void (*sl_sim_zone_bytes_fn)(void *ctx, int from_zone, int to_zone, double bytes,
				     int both_ways);
void sl_sim_zone_bytes(const struct sl_sim_env *env, const struct sl_plan *plan, const int *M,
		       sl_sim_zone_bytes_fn visit, void *ctx);

/* For a plan with islands: each island's own transfers over a round (sl_sim_zone_bytes of its
 * plan, times its inner steps); the outer exchange is plan/outer_bytes.h's. */
int sl_sim_islands_zone_bytes(const struct sl_sim_env *env, const struct sl_plan *plan,
			      sl_sim_zone_bytes_fn visit, void *ctx, struct sl_err *err);

/* sl_sim_islands in two parts, for a caller that varies only the outer step (H, wire, fragments,
 * overlap: the planner): each island's own plan simulated (per_island[0..count-1]; sosp25
 * refuses), then the whole from them. The two give exactly sl_sim_islands' result. */
int sl_sim_islands_parts(const struct sl_sim_env *env, const struct sl_plan *plan,
			 enum sl_cost_model cm, struct sl_sim_result *per_island, struct sl_err *err);
/* A round's outer exchange depends on the wire and the fragments, not on the inner steps or the
 * overlap: a caller that tries outer steps on one plan keeps each exchange here, so that it is
 * worked out once per (wire, fragments). Valid for one plan's replicas, islands and batch; a
 * zeroed cache is empty. */
#define SL_SIM_EXCHANGE_CACHE 16
struct sl_sim_exchange {
	int wire, fragments;
	double class_bytes[SL_LINK_CLASSES];
	long long total_bytes;
	double exchange_s, latency_s, egress_usd;
};
struct sl_sim_exchange_cache {
	int count;
	struct sl_sim_exchange entries[SL_SIM_EXCHANGE_CACHE];
};

/* cache: NULL, or the plan's exchanges so far (see above). */
int sl_sim_islands_from_parts(const struct sl_sim_env *env, const struct sl_plan *plan,
			      const struct sl_sim_result *per_island,
			      struct sl_sim_exchange_cache *cache, struct sl_sim_result *out,
			      struct sl_sim_islands *detail, struct sl_err *err);

/* The islands' part of `sailor simulate`'s text (after the breakdown) and its JSON ("islands"
 * object; NULL for a plan without islands) (sim/islands_output.c). */
void sl_sim_islands_print(FILE *f, const struct sl_sim_env *env, const struct sl_plan *plan,
			  const struct sl_sim_result *res);
json_t *sl_sim_islands_json(const struct sl_sim_env *env, const struct sl_plan *plan,
			    const struct sl_sim_result *res);

/* *dst = *src up to src's own stages: a result has room for SL_SIM_MAX_STAGES (12 KB), a plan
 * fills num_stages of them, and no reader looks past those. The planner copies results
 * thousands of times (rankings, island plans), so only what is there is copied. */
void sl_sim_result_copy(struct sl_sim_result *dst, const struct sl_sim_result *src);

/* Simulates plan (global batch: plan->global_batch, else the model's default). Allocates
 * nothing. Checks only what it needs to stay safe (sizes, indices, time availability); call
 * sl_sim_check_plan first for user-facing messages. */
int sl_simulate(const struct sl_sim_env *env, const struct sl_plan *plan, enum sl_cost_model cm,
		struct sl_sim_result *out, struct sl_err *err);

/* ---- cheap queries for the planner (all O(1) unless said) ---- */

enum sl_time_source sl_sim_time_source(const struct sl_sim_env *env, int gpu, int mbs, int tp);

/* One replica and where it sits in its plan: what the time and memory queries below need to
 * know. Each query reads the fields it names; unset fields are 0, and recompute NONE with zero
 * 0 is a stage without memory options. */
struct sl_sim_replica_query {
	int gpu, mbs, tp;                /* GPU type index, micro-batch size, TP degree */
	int first_layer, last_layer;     /* the stage's layers */
	int stage, num_stages;           /* its position in the pipeline */
	int microbatches;                /* micro-batches of its pipeline per iteration */
	int num_pipelines;               /* replicas of the stage (data-parallel group, ZeRO-1's D) */
	enum sl_recompute recompute;     /* the stage's memory options (sosp25 ignores them) */
	int zero;
};

/* Forward and backward seconds per micro-batch of q's layers on q's (gpu, mbs, tp) under a cost
 * model, recomputation (q->recompute) included in the backward (sim/memory_options.c). Returns 0, or
 * SL_ENOTFOUND when there is no time. */
int sl_sim_stage_fwd_bwd(const struct sl_sim_env *env, enum sl_cost_model cm,
			 const struct sl_sim_replica_query *q, double *fwd_s, double *bwd_s);

/* fwd + bwd per micro-batch; a negative value when there is no time. */
double sl_sim_stage_compute_s(const struct sl_sim_env *env, enum sl_cost_model cm,
			      const struct sl_sim_replica_query *q);

/* Optimizer step seconds of the replica q (with ZeRO-1 over q->num_pipelines replicas where
 * q->zero applies); negative when there is no time. */
double sl_sim_stage_update_s(const struct sl_sim_env *env, enum sl_cost_model cm,
			     const struct sl_sim_replica_query *q);

/* The query of replica j of stage k of plan, with its pipeline's micro-batch count and the
 * stage's memory options. */
struct sl_sim_replica_query sl_sim_replica_query_of(const struct sl_plan *plan, int k, int j,
						   int microbatches);

/* Memory per GPU of the replica q under a cost model, with q's memory options where they
 * change anything (sim/memory_options.c); all zero when q's layers or TP are out of range. Fills *mem
 * when non-NULL; returns total bytes. */
double sl_sim_replica_memory(const struct sl_sim_env *env, enum sl_cost_model cm,
			     const struct sl_sim_replica_query *q, struct sl_sim_memory *mem);

/* Whether the replica q fits its GPU under the cost model (for sosp25: its planning check with
 * the 2e9/3e9 overheads against GPU_MEMORY_GB, options ignored; for sailor: total <=
 * memory_bytes with q's options). */
int sl_sim_replica_fits(const struct sl_sim_env *env, enum sl_cost_model cm,
			const struct sl_sim_replica_query *q);

/* ---- memory options of a stage (plan.h "recompute", "zero"; sim/memory_options.c) ----
 * Under the sailor cost model: "full" recomputation adds the forward of the stage's blocks to
 * each micro-batch's backward and keeps only block outputs per micro-batch in flight;
 * "selective" adds the attention core's share of it and drops the attention scores; ZeRO-1
 * divides the optimizer state and the optimizer step by the stage's D replicas and keeps the
 * all-reduce's time and bytes (a reduce-scatter plus an all-gather). The sosp25 cost model has
 * no options: sl_simulate refuses a plan using one (SL_EINPUT), and the queries below ignore
 * them. An option that changes nothing (recomputation without blocks, ZeRO-1 with D = 1) is
 * treated as absent everywhere, so the plan costs exactly what it costs without it. */

/* The recomputation that applies to layers [first, last]: `recompute`, or NONE when the range
 * holds no transformer block. */
enum sl_recompute sl_sim_effective_recompute(const struct sl_sim_env *env, int first, int last,
					     enum sl_recompute recompute);
/* Whether ZeRO-1 applies: zero set and more than one replica. */
int sl_sim_effective_zero(int zero, int replicas);
/* Whether some stage of the plan has an option that applies. */
int sl_sim_plan_uses_options(const struct sl_sim_env *env, const struct sl_plan *plan);

/* Seconds q->recompute adds to the backward of one micro-batch of q's layers on q's (gpu, mbs,
 * tp): 0 without (or under sosp25), negative when there is no time. */
double sl_sim_stage_recompute_s(const struct sl_sim_env *env, enum sl_cost_model cm,
				const struct sl_sim_replica_query *q);

/* Whether some plan on env may be modelled as our runtime (sailor.simulation's "runtime": some
 * GPU type has a sailor.profile/1 profile, and cm is sailor). The bounds below are formulas of
 * the DeepSpeed-like sailor model; that model's event replay (time_replay.c) can come out
 * faster than them (measured all-reduce fits, overlapped transfers, CPU-quota bursts), so the
 * planner must not prune with them then. */
int sl_sim_replay_model_possible(const struct sl_sim_env *env, enum sl_cost_model cm);

/* 1 when every GPU type of plan has a profile of our runtime (sailor.profile/1): under the sailor
 * cost model the plan is then modelled as our runtime. */
int sl_sim_replay_uses(const struct sl_sim_env *env, const struct sl_plan *plan);

/* A lower bound on the gradient synchronisation time sl_simulate charges a stage of layers
 * [first, last] with D replicas taken from avail (GPUs per type and zone: avail[g][i] in zone
 * zones[i] of the n zones searched), whatever the replicas' types, zones and TP degrees: the
 * formulas of the cost model evaluated on the fastest hop the GPUs allow (a cross-zone one when
 * no zone can hold D replicas). For the planner's pruning: with the sosp25 model the iteration
 * time is at least the pipeline time plus the largest stage's bound; with the sailor model at
 * least the pipeline time plus stage 0's bound (stage 0 finishes its last backward last in
 * 1F1B). Allocates nothing; O(n² · types² · TP²) over the zones searched, not the catalogue. */
double sl_sim_sync_lower_bound_s(const struct sl_sim_env *env, enum sl_cost_model cm, int first,
				 int last, int D, const int *zones, int n,
				 const int avail[SL_MAX_GPU_TYPES][SL_MAX_SEARCH_ZONES]);

/* The gradient synchronisation a plan cannot hide, as sl_simulate charges it for that plan's
 * replicas (sosp25: its slowest stage's sync; sailor: stage 0's all-reduce, which follows the
 * pipeline's last backward). Cheap next to sl_simulate: no pipeline schedule. For the planner's
 * pruning of assigned plans. */
double sl_sim_plan_sync_lower_bound_s(const struct sl_sim_env *env, enum sl_cost_model cm,
				      const struct sl_plan *plan);

/* A lower bound on the iteration time sl_simulate gives the plan, whatever recomputation its
 * stages take, without running the pipeline schedule: with the sailor model, the busiest stage
 * of any pipeline (its compute and what the transfers at its boundaries hold it for) or NIC, and
 * stage 0's busy time or the pipeline's fill and drain, whichever is longer, plus stage 0's
 * all-reduce; with the sosp25 model the slowest stage's sync. 0 when the plan has no
 * layer times. For the planner's pruning, which passes the plan's sl_sim_plan_sync_lower_bound_s
 * as sync_s (it asks that first: it alone prunes most plans, without the transfers), its
 * thread's transfer cache (sim/transfer_cache.h; NULL: none) and enough_s, the time above which
 * it prunes the plan whatever the bound: the bound may stop as soon as it is past enough_s
 * (DBL_MAX: the whole bound). */
struct sl_sim_transfer_cache;
double sl_sim_plan_time_lower_bound_sync_s(const struct sl_sim_env *env, enum sl_cost_model cm,
					   const struct sl_plan *plan, long long global_batch,
					   double sync_s, struct sl_sim_transfer_cache *cache,
					   double enough_s);

/* Bytes of the unsharded fp32 parameters of layers [first, last] (TP 1). */
double sl_sim_stage_params_bytes(const struct sl_sim_env *env, int first, int last);

/* GPU rent per hour of one GPU of a type in a zone under a cost model: sailor, the zone's price
 * (sl_catalogue_gpu_usd_per_hour); sosp25, that simulator's GPU_PRICES where it has one, the
 * same in every zone as in that simulator. */
double sl_sim_gpu_usd_per_hour(const struct sl_sim_env *env, enum sl_cost_model cm, int gpu,
			       int zone);
int sl_sim_gpus_per_node(const struct sl_sim_env *env, int gpu);
double sl_sim_gpu_memory_bytes(const struct sl_sim_env *env, int gpu);

/* ---- output ---- */

/* The result as JSON: {"schema": "sailor.simulation/1", "model", "cost_model", "global_batch",
 * "micro_batch", ..., "stages": [...]} (the golden files' form). New reference. */
json_t *sl_sim_result_to_json(const struct sl_sim_env *env, const struct sl_plan *plan,
			      const struct sl_sim_result *res);

/* "N" micro-batches per pipeline, or "FEWEST-MOST" where the plan's pipelines differ. */
void sl_sim_microbatches_text(const struct sl_plan *plan, const struct sl_sim_result *res,
			      char *buf, size_t size);

/* What `sailor simulate --json` prints (and `sailor plan --json` for each estimate): the result
 * and "links", which source priced each link the plan's transfers cross (link_report.c). */
json_t *sl_sim_estimate_json(const struct sl_sim_env *env, const struct sl_plan *plan,
			     const struct sl_sim_result *res);
/* The links of the plan (link_report.c): [{"from_zone", "from_gpu", "to_zone", "to_gpu",
 * "class", "bandwidth_source", "zones_file" (a zone file's link), "gbps_at_64mb", "latency_s",
 * "egress_usd_per_gb", "egress_source"}], sorted; new reference. Printed as a table by
 * sl_sim_links_print. */
json_t *sl_sim_links_json(const struct sl_sim_env *env, const struct sl_plan *plan);
void sl_sim_links_print(FILE *out, const struct sl_sim_env *env, const struct sl_plan *plan);

/* The readable breakdown `sailor simulate` prints (then sl_sim_links_print). */
void sl_sim_result_print(FILE *out, const struct sl_sim_env *env, const struct sl_plan *plan,
			 const struct sl_sim_result *res);

#endif
