/* The planner search's private state and what its files share; not an API (search.h is).
 *
 * The search is split by job: search.c drives it (work items on threads, the passes with and
 * without memory options, the relaxed searches), thresholds.c walks one work item (depths,
 * partitions, data-parallel degrees, time thresholds), enumerate.c simulates every assignment of
 * a small shape, evaluate.c simulates and ranks one candidate plan (and its uneven and options
 * variants), prune.c holds the lower bounds that prune shapes and plans, shape_skip.c says which
 * replica kinds fit a shape (memoised) and which shapes the search with options may skip.
 *
 * Invariants: one struct search_state per thread and search pass, touched by that thread only
 * (the shared bound is the one value threads share, lowered atomically); every value a bound
 * reads is no more than what the simulator gives the plan, so pruning only drops plans that
 * cannot enter the result (not where bounds_unsound).
 */
#ifndef SL_SEARCH_SEARCH_STATE_H
#define SL_SEARCH_SEARCH_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "search/assign.h"
#include "search/memory_dimensions.h"
#include "search/options_memo.h"
#include "search/partition.h"
#include "search/partition_cache.h"
#include "search/ranking.h"
#include "search/search.h"
#include "search/zones.h"

#define TP_SLOTS 4                       /* TP degrees 1, 2, 4, 8 */
static const int tp_values[TP_SLOTS] = {1, 2, 4, 8};

/* Complete enumeration of small shapes (enumerate.c): when a shape (micro-batch, partition, D)
 * admits at most SL_SEARCH_ENUMERATE_MAX canonical replica assignments, all of them are
 * simulated instead of the threshold heuristic: the heuristic decides from compute times alone,
 * and on small pools which stage sits in which zone and on which GPU is decided by the links as
 * much as by compute. */
#define SL_SEARCH_ENUMERATE_MAX 512

struct enumeration;

/* search_thresholds' record of a shape of one work item in the search without options */
struct shape_record {
	unsigned long long key;  /* shape_key */
	double tau_max_s;        /* the largest threshold it considered */
};

/* One fill order of the work item's zone set (zones.h): its zones in order, and the GPUs per
 * (type, position in that order), as sl_assign_input holds them. */
struct fill_order {
	int zones[SL_MAX_SEARCH_ZONES];
	int avail[SL_MAX_GPU_TYPES][SL_MAX_SEARCH_ZONES];
};

/* eligible_at's result at one threshold of the current shape (thresholds.c). */
#define ELIGIBLE_MEMO_SLOTS 8
struct eligible_memo {
	int tau_index, eligible;
	double rent_usd_per_s;
	double fastest_eligible_s[SL_PLAN_MAX_STAGES];
	int tp_for[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES];
	struct sl_assign_order order;        /* sl_assign_order_of these eligible replicas */
};

struct shape_records {
	struct shape_record *v;
	int count, capacity;
	int failed;              /* out of memory: no record is trusted */
};

/* A replica kind's memory at one recomputation level with D > 1 and as many micro-batches in
 * flight as its stage can hold (sim/memory.c), by the parts that do not depend on D; see
 * sl_search_kind_level. */
struct kind_memory {
	double params_grads, optimizer_full, activations, buffers, runtime, capacity;
};

/* sl_search_sync_lower_bound's memo: entries of the current work item (stamp) by (stage layers,
 * D) */
#define SYNC_MEMO_SLOTS 4096
struct sync_memo {
	unsigned long long key;
	unsigned stamp;
	double value;
};

struct search_state {
	const struct sl_sim_env *env;
	const struct sl_search_request *req;
	enum sl_cost_model cm;
	long long global_batch;
	struct sl_ranking rank;
	struct sl_plan plan;                 /* scratch plan, reused */
	struct sl_plan uneven_plan;          /* scratch: plan with uneven micro-batch counts */
	struct sl_sim_result result;         /* scratch result */
	struct sl_assign_input assign;       /* set per work item, fill order and threshold */
	/* the order of the eligible replicas in assign (eligible_at, in its memo) */
	const struct sl_assign_order *assign_order;
	long long type_gpus[SL_MAX_GPU_TYPES]; /* GPUs of each type in the zones searched */
	struct sl_assign_result *assigned;   /* scratch for sl_assign_count */
	long long enumerate_max;             /* shapes with at most this many assignments: all */
	struct enumeration *enumeration;     /* scratch for sl_search_enumerate_small_shape */
	double *layer_time_storage;          /* [gpu][layer] scratch for partition candidates */
	size_t layer_time_capacity;          /* its doubles */
	_Atomic double *shared_bound;        /* see sl_search_shared_bound_lower; NULL: own ranking only */
	double sync_lb_s;                    /* the current shape's sync lower bound (search_partition) */
	int tau_count;
	struct sl_partition *partitions;     /* scratch: SL_PARTITION_MAX_CANDIDATES */
	struct sl_partition_scratch *partition_scratch; /* scratch for sl_partition_candidates */
	/* the partitions computed before, by this state's searches too (NULL: none kept) */
	struct sl_partition_cache *partition_cache;
	/* which partitions the memory options change nothing at, likewise (NULL: none kept) */
	struct sl_options_memo *options_memo;
	unsigned partition_types;            /* the current depth's candidates' types (partition_cache.h) */
	unsigned long long offered_kinds;    /* the work item's kinds (options_memo.h) */
	long long simulated;
	int options_on;                      /* sl_search_options_on(req) */
	/* the simulator may model plans as our runtime, whose times the bounds do not bound
	 * (sl_sim_replay_model_possible): then nothing is pruned by a bound */
	int bounds_unsound;
	/* The search without memory options (search_with_options) hands each plan it simulates to
	 * this state too: the search with options at the same replicas (NULL: none) */
	struct search_state *variant;
	/* the search with options, after that: skip shapes where the options change nothing */
	int skip_unchanged_shapes;
	long long shapes, skipped_shapes, gpu_pruned_shapes; /* sl_search_stats */
	struct sync_memo *sync_memo;         /* [SYNC_MEMO_SLOTS], stamped by item_stamp */
	/* the plan bounds' transfer times (sim/transfer_cache.h; NULL when it could not be made:
	 * then they are timed anew) */
	struct sl_sim_transfer_cache *transfer_cache;
	/* sl_search_kind_level's memo for the current partition (entries of other partitions: older
	 * stamp) */
	struct kind_memory (*kind_mem)[SL_MAX_GPU_TYPES][TP_SLOTS][SL_SEARCH_RECOMPUTE_LEVELS];
	int partition_index;                 /* the partition's index among its depth's candidates */
	struct shape_records *record_into;   /* the work item's records (search without options) */
	const struct shape_records *record_from; /* and the search with options reading them */
	int fill_order_count, fill_order_index;

	/* ---- Scratch: from here on a state is not zeroed, neither a fresh one (malloc'd) nor a
	 * spare one reused (search_state.c), but for the stamps: the four counters and the two
	 * stamp arrays that follow them. Every table below is written before it is read, or read
	 * only where its stamp equals a counter; the counters keep counting over reuse, so no entry
	 * of a former search ever matches. (Zeroing these 300 KB faulted in pages no search
	 * touched, some ms of every `sailor plan`.) ---- */
	unsigned partition_stamp;            /* the partition being searched (from 1) */
	unsigned item_stamp;                 /* the work item being searched (from 1) */
	unsigned shape_stamp;                /* the shape being searched (from 1) */
	unsigned taus_stamp;                 /* the partition taus etc. hold (0: none, see fit_kinds) */
	unsigned eligible_memo_stamp[ELIGIBLE_MEMO_SLOTS]; /* eligible_memo's, by shape_stamp */
	/* kind_mem's stamps (partition_stamp) */
	unsigned kind_mem_stamp[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	/* ---- the stamps end here (SEARCH_STATE_STAMPS_END) ---- */
	/* the current (shape, D)'s thresholds: the distinct fit times of the replica kinds that fit */
	double taus[SL_PLAN_MAX_STAGES * SL_MAX_GPU_TYPES * TP_SLOTS];
	double taus_scratch[SL_PLAN_MAX_STAGES * SL_MAX_GPU_TYPES * TP_SLOTS];
	int fits[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	long long need_per_pipeline[SL_PLAN_MAX_STAGES * SL_MAX_GPU_TYPES * TP_SLOTS + 1];
	int missing_stages[SL_PLAN_MAX_STAGES * SL_MAX_GPU_TYPES * TP_SLOTS + 1];
	double fastest_fit_s[SL_PLAN_MAX_STAGES], cheapest_fit_usd_per_s[SL_PLAN_MAX_STAGES];
	/* per stage, per gpu, per tp slot: compute seconds per micro-batch (< 0: none) */
	double stage_time_s[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	/* the same with each recomputation level of search/memory_dimensions.h (memory options on; level 0
	 * is stage_time_s) */
	double stage_time_rc_s[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS][SL_SEARCH_RECOMPUTE_LEVELS];
	/* at the current (D, micro-batches): the time of each replica kind at the least
	 * recomputation under which it fits (= stage_time_s without options) */
	double fit_time_s[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	/* what sl_search_kind_level keeps beside kind_mem */
	signed char kind_mem_levels[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	signed char sosp25_fits[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES][TP_SLOTS];
	/* The work item's zone set in each fill order searched. What a shape needs before replicas
	 * are chosen (which kinds fit, the thresholds, the bounds) does not depend on the order, so
	 * each shape computes it once and then tries every order (thresholds.c); st->assign holds
	 * the order being tried, fill_order_index its index. */
	struct fill_order fill_orders[SL_ZONE_ORDERS_MAX];
	struct eligible_memo eligible_memo[ELIGIBLE_MEMO_SLOTS];
};

/* The bytes a reused state has zeroed (all before the scratch), and where the stamps a fresh
 * one has zeroed too end. */
#define SEARCH_STATE_RESET_BYTES offsetof(struct search_state, partition_stamp)
#define SEARCH_STATE_STAMPS_END offsetof(struct search_state, taus)

/* search_state.c: a thread's state for one search of req on pool (its ranking writes into
 * outcome), as a fresh one whether or not its buffers were used before; NULL with err set when
 * memory ran out. Release it when the search is done (NULL is allowed). */
struct search_state *sl_search_state_new(const struct sl_sim_env *env, const struct sl_pool *pool,
					 const struct sl_search_request *req,
					 struct sl_search_outcome *outcome, struct sl_err *err);
void sl_search_state_release(struct search_state *st);

/* GPUs of type g in the zones being searched. */
static inline long long sl_search_subset_gpus(const struct sl_assign_input *in, int g)
{
	long long n = 0;
	for (int zi = 0; zi < in->zone_order_count; zi++)
		n += in->avail[g][zi];
	return n;
}

/* Makes fill order o of the work item's zone set the one st->assign fills. */
static inline void sl_search_use_fill_order(struct search_state *st, int o)
{
	const struct fill_order *f = &st->fill_orders[o];
	int n = st->assign.zone_order_count;
	st->fill_order_index = o;
	memcpy(st->assign.zone_order, f->zones, sizeof(int) * (size_t)n);
	for (int g = 0; g < st->env->catalogue.gpu_count; g++)
		memcpy(st->assign.avail[g], f->avail[g], sizeof(int) * (size_t)n);
}

/* evaluate.c: simulates st->plan (with its uneven and options variants) and ranks it. */
int sl_search_simulate_and_rank(struct search_state *st, struct sl_err *err);

/* prune.c: the shared bound, and the lower bounds on shapes and plans. */
void sl_search_shared_bound_lower(_Atomic double *bound, double value);
int sl_search_prunable(const struct search_state *st, double time_lb_s, double cost_lb);
double sl_search_time_lower_bound(int stages, double nmb, const double *fastest_s);
double sl_search_busiest_microbatches(const struct search_state *st, int mbs, long long D,
				      long long nmb);
double sl_search_fewest_microbatches(const struct search_state *st, int mbs, long long D,
				     long long nmb);
double sl_search_sync_lower_bound(struct search_state *st, const struct sl_partition *part,
				  int D);
int sl_search_assigned_prunable(const struct search_state *st, long long nmb);
/* sl_search_share_microbatches for st->plan, a plan of the current shape, its stage times taken
 * from st->stage_time_s (the simulator's, already asked for every kind of the shape). */
int sl_search_share_shape_microbatches(struct search_state *st);
int sl_search_counted_prunable(struct search_state *st, long long nmb);

/* enumerate.c: the scratch of an enumeration (malloc'd, free() releases it), and every
 * assignment of a small shape; returns 1 if it did (rc in *rc). */
struct enumeration *sl_search_enumeration_new(void);
int sl_search_enumerate_small_shape(struct search_state *st, int P, int D, long long nmb,
				    int fits[][SL_MAX_GPU_TYPES][TP_SLOTS], int *rc,
				    struct sl_err *err);

/* shape_skip.c: which replica kinds fit, and the shapes the search with options skips. */
int sl_search_kind_level(struct search_state *st, int options, int k, int g, int t, int first,
			 int last, int P, int mbs, int nmb, int D);
double sl_search_fastest_changed_kind_s(struct search_state *st,
					const struct sl_partition *part, int mbs, int D, int nmb);
int sl_search_options_change_no_shape(struct search_state *st, const struct sl_partition *part,
				      int mbs);
void sl_search_shape_record_add(struct search_state *st, int P, int D, int order,
				double tau_max_s);
double sl_search_shape_record_find(const struct search_state *st, int P, int D, int order);

/* thresholds.c: one work item, every depth and partition at one micro-batch size. */
int sl_search_micro_batch(struct search_state *st, int mbs, struct sl_err *err);

#endif
