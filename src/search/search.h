/* The planner: a joint search over GPU types, zones and parallelization (pipeline depth, layer
 * partition, micro-batch size, data-parallel degree, per-replica GPU type / zone / TP degree)
 * for an objective under constraints. Every candidate is ranked by sl_simulate under the chosen
 * cost model, so the estimate the planner reports is exactly what `sailor simulate` prints for
 * the plan it emits.
 *
 * How the search works (search.c, thresholds.c; search_state.h names the other files): for each
 * set of zones worth trying (every region on its own, each zone on its own, all zones), each
 * micro-batch size, each depth P and each candidate layer partition (partition.h), it precomputes per stage and per (GPU type, TP) the compute time per
 * micro-batch. For each data-parallel degree D that changes the number of micro-batches, and for
 * each time threshold tau (the distinct per-stage times, ascending), assign.h picks for every
 * stage D replicas whose time is <= tau, using the fewest GPUs (then dollars) the pool allows,
 * places them in zones so that pipelines stay inside one zone where they can, and the plan is
 * simulated. A lower bound on the iteration time prunes (b, P, partition, D) combinations that
 * cannot beat the best found so far (not where plans may be modelled as our runtime, whose
 * replay those bounds do not bound: sl_sim_replay_model_possible).
 *
 * With memory_options, each replica is judged at the least activation recomputation under which
 * it fits (its time then includes the recomputation), and every plan gets per stage the fastest
 * option set that fits its replicas (search/memory_dimensions.h): ZeRO-1 when D > 1, the least
 * recomputation that fits all of them. The space only grows: the search without options runs
 * first, as before, and seeds the one with them (search.c, search_with_options).
 *
 * Ownership: sl_search_run fills a struct sl_search_outcome whose plans it owns;
 * sl_search_outcome_free releases them.
 */
#ifndef SL_SEARCH_SEARCH_H
#define SL_SEARCH_SEARCH_H

#include "cluster/pool.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "util/err.h"

enum sl_objective { SL_OBJECTIVE_THROUGHPUT = 0, SL_OBJECTIVE_COST = 1 };

/* How the plans synchronise: every step over all replicas (the plans of every other planner), in
 * islands with outer steps between them (search/islands_search.h), or whichever ranks better. */
enum sl_sync_mode { SL_SYNC_EVERY_STEP = 0, SL_SYNC_ISLANDS = 1, SL_SYNC_AUTO = 2 };

const char *sl_sync_mode_name(enum sl_sync_mode mode);

/* A pipeline shape: micro-batch size and layer partition (first[num_stages] = the layer count).
 * The island search pins one so that every island's plan has it (search/islands_search.h). */
struct sl_search_shape {
	int micro_batch;
	int num_stages;
	int first[SL_PLAN_MAX_STAGES + 1];
};

struct sl_token_value;

const char *sl_objective_name(enum sl_objective objective);

struct sl_search_request {
	enum sl_cost_model cost_model;
	enum sl_objective objective;
	double max_cost_usd_per_iter;  /* 0: no budget */
	double min_throughput_it_s;    /* 0: no floor */
	long long global_batch;        /* <= 0: the model's default */
	int top_k;                     /* plans to keep (>= 1) */
	int pareto;                    /* also collect the throughput-versus-$ frontier */
	int max_stages;                /* 0: up to the number of layers */
	int uneven_microbatches;       /* 1: also offer plans whose pipelines get micro-batch counts
					* in proportion to their speed (search/uneven.h) */
	int structured_only;           /* 1: never enumerate small shapes completely (tests measure
					* the threshold heuristic alone with it) */
	int memory_options;            /* 1: per stage, also search activation recomputation and
					* ZeRO-1 (search/memory_dimensions.h; sailor cost model only); 0: plans
					* without them, the search as it was before they existed */
	const struct sl_search_shape *only_shape; /* NULL: every shape; else only plans of this
						   * one (micro-batch size and partition) */
	enum sl_sync_mode sync;        /* sl_search_plan: which syncs to search (default every step) */
	int max_inner_steps;           /* islands: the most inner steps per round (H); 0: 50 */
	const struct sl_token_value *token_value; /* islands: a token's worth against a
						   * synchronous token (search/token_value.h); NULL:
						   * the shipped measurements */
};

/* One ranked plan with the simulator's verdict on it. For a plan with islands, result is the
 * simulator's with the throughput and the dollars per iteration made effective (per global batch
 * of synchronous-equivalent samples: sl_search_effective_result). */
struct sl_search_candidate {
	struct sl_plan plan;           /* owned */
	struct sl_sim_result result;
};

/* Where a search spends its work (sl_search_outcome.stats): simulations and wall time per phase.
 * The counts are deterministic on one thread (SAILOR_THREADS=1), on any machine: tests hold them
 * under bounds (tests/unit/test_search_budget.c). On more threads they vary a little (which
 * thread lowers the shared bound first decides what later threads prune). */
enum sl_search_phase {
	SL_PHASE_PLAIN = 0,   /* the search without memory options (with options on: its first pass) */
	SL_PHASE_VARIANTS,    /* within it, each plan's variant with the options (counts only: its
			       * time is in SL_PHASE_PLAIN) */
	SL_PHASE_OPTIONS,     /* the search with the options, seeded by the first */
	SL_PHASE_REFINE,      /* local search around the best plans */
	SL_PHASE_UNEVEN,      /* uneven micro-batch counts on the best plans */
	SL_PHASE_RELAXED,     /* nothing met the constraints: the searches for what is possible */
	SL_PHASE_ISLANDS,     /* the island search: its islands' searches and the outer-step
			       * choices (search/islands_search.h) */
	SL_SEARCH_PHASES
};

const char *sl_search_phase_name(enum sl_search_phase phase);

struct sl_search_stats {
	long long simulated[SL_SEARCH_PHASES];
	double time_s[SL_SEARCH_PHASES];
	long long shapes;       /* (micro-batch, partition, D) of a zone set that reached the
				 * replica choice (once for all the set's fill orders) */
	long long skipped_shapes; /* of those, skipped by the search with options (unchanged fit) */
	long long gpu_pruned_shapes; /* of those, pruned by the bound from the pool's GPU count */
	/* the island phase's searches of one island each: made, and not made because an earlier
	 * one stands for them (islands_search.c) */
	long long island_searches, island_searches_reused;
};

struct sl_search_outcome {
	int count;                              /* plans meeting the constraints, best first */
	struct sl_search_candidate *best;       /* [count], at most top_k */
	int best_capacity;                      /* slots allocated in best */
	/* When count == 0 under constraints, what is possible (owned; NULL: none): the cheapest
	 * plan that fits (when a budget was given) and the fastest (when a throughput floor was
	 * given). Pointers, not slots: an outcome is made and freed for every search and every
	 * thread of one, and a candidate is 13 KB to clear. */
	struct sl_search_candidate *cheapest, *fastest;
	int pareto_count;                       /* frontier, by throughput descending */
	struct sl_search_candidate *pareto;
	long long plans_simulated;              /* the sum of stats.simulated */
	double search_time_s;
	struct sl_search_stats stats;
};

/* The threads a search runs on: the machine's cores; SAILOR_THREADS overrides. A search called
 * inside a parallel region runs on its caller's thread alone. */
int sl_search_threads(void);

void sl_search_outcome_init(struct sl_search_outcome *outcome);
void sl_search_outcome_free(struct sl_search_outcome *outcome);

/* *slot (cheapest or fastest of an outcome, NULL) made a copy of from's plan and figures. */
int sl_search_outcome_keep(struct sl_search_candidate **slot, const struct sl_search_candidate *from,
			   struct sl_err *err);

/* Searches pool for req. Returns 0 with outcome->count >= 0 (0: nothing meets the constraints,
 * see cheapest / fastest), or an error: SL_EINPUT for an empty pool, SL_EINFEASIBLE when no plan
 * fits in memory anywhere in the pool ("model X fits on none of the pool's GPUs ..."). */
int sl_search_run(const struct sl_sim_env *env, const struct sl_pool *pool,
		  const struct sl_search_request *req, struct sl_search_outcome *outcome,
		  struct sl_err *err);

/* The ranking used everywhere (planner, exhaustive search, tests): whether a simulated plan
 * meets req's constraints, and whether a is strictly better than b for req's objective (ties
 * broken by fewer GPUs, then lower cost, then higher throughput). */
int sl_search_meets(const struct sl_search_request *req, const struct sl_sim_result *res);
int sl_search_better(const struct sl_search_request *req, const struct sl_sim_result *a,
		     const struct sl_sim_result *b);

/* Brute force over the same space (exhaustive.c), for oracle tests on small pools: every micro-
 * batch size, depth, contiguous partition, D, and per stage every multiset of D replicas
 * (gpu, zone, tp) the pool allows, in the planner's canonical replica order. Fills outcome
 * with the single best plan (top_k ignored). Exponential: only for pools of a few GPUs. */
int sl_search_exhaustive(const struct sl_sim_env *env, const struct sl_pool *pool,
			 const struct sl_search_request *req, struct sl_search_outcome *outcome,
			 struct sl_err *err);

/* The canonical replica order pairs pipelines zone by zone: each stage's replicas sorted by
 * (zone rank, gpu, tp), where zone_rank[z] is the position of zone z in an order of the zones.
 * Both searches emit plans in this order, and search every order of up to 3 zones (links are not
 * symmetric, so the order changes which zones neighbour in the gradient all-reduce ring). */
void sl_search_canonicalize(struct sl_plan *plan, const int *zone_rank);

/* The zone rank a plan is written in: zones by first appearance, stage by stage; the zones of
 * zones[0..zone_count-1] (ascending: the pool's) it does not use after them, by index; other
 * zones -1. zone_rank has SL_MAX_ZONES entries. */
void sl_search_zone_rank_of(const struct sl_plan *plan, const int *zones, int zone_count,
			    int *zone_rank);

#endif
