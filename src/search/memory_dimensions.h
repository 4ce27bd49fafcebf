/* The memory options as search dimensions (plan.h "recompute" and "zero" per stage).
 *
 * Under the sailor cost model (sim/memory_options.c) the options of a stage trade as follows, for
 * replicas already chosen: recomputation only adds time (none < selective < full) and only
 * saves memory; ZeRO-1 on a stage with D > 1 replicas saves memory and optimizer time and costs
 * nothing else (same sync, same bytes). So the fastest option set that fits is, per stage:
 * ZeRO-1 when D > 1, and the least recomputation under which every replica of the stage fits.
 * The planner searches replicas with each replica's least-fitting recomputation (its time at that
 * level), then sets the stage's options with sl_search_choose_options; the brute force
 * (exhaustive.c) tries every option set instead, and the oracle test checks the two agree.
 *
 * Under the model of our own runtime (time_replay.c: plans of devices profiled by `sailor
 * profile`) ZeRO-1 is not free: OpenMPI's reduce-scatter and all-gather move about twice what
 * an all-reduce moves over a slow link. There the search also tries each plan's variant without
 * ZeRO-1 (sl_search_choose_options_zero), with the least recomputation that fits then.
 *
 * The options are searched only when the request asks (memory_options) and the cost model has
 * them (sailor); otherwise every plan is built without options, as before they existed. */
#ifndef SL_SEARCH_MEMORY_DIMENSIONS_H
#define SL_SEARCH_MEMORY_DIMENSIONS_H

#include "search/search.h"

/* Recomputation levels in order of the time they add. */
#define SL_SEARCH_RECOMPUTE_LEVELS 3
extern const enum sl_recompute sl_search_recompute_order[SL_SEARCH_RECOMPUTE_LEVELS];

/* Whether req searches memory options. */
int sl_search_options_on(const struct sl_search_request *req);

/* The least recomputation (index into sl_search_recompute_order) under which the replica of
 * query fits (ZeRO-1 when its num_pipelines D > 1; query's own options are not read); -1 when it
 * fits under none. With options off: 0 if it fits without options, else -1. */
int sl_search_least_level(const struct sl_sim_env *env, const struct sl_search_request *req,
			  const struct sl_sim_replica_query *query);

/* Sets every stage's options of plan to the fastest set that fits (see above) for its replicas
 * and micro-batch counts; with options off, clears them. */
void sl_search_choose_options(const struct sl_sim_env *env, const struct sl_search_request *req,
			      struct sl_plan *plan, long long global_batch);

/* The same, with ZeRO-1 left off everywhere when !zero_allowed. */
void sl_search_choose_options_zero(const struct sl_sim_env *env,
				   const struct sl_search_request *req, struct sl_plan *plan,
				   long long global_batch, int zero_allowed);

#endif
