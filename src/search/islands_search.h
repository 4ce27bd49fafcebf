/* The planner's choice between synchronous plans and island plans (docs/design/islands.md#how-
 * the-planner-chooses-islands). sl_search_plan is the planner's entry for every sync mode:
 * every step (sl_search_run, unchanged), islands, or both ranked together.
 *
 * An island plan is built from synchronous searches, island by island:
 * 1. Borders: islands along regions (an island may span the zones of one region) and, where a
 *    region has several zones, along zones; a layout needs two islands with GPUs.
 * 2. Shapes: each island's own synchronous search (the whole global batch) ranks its best few
 *    plans; their shapes (micro-batch size, stages) are the candidates, since every island of a
 *    plan runs the same stages (the outer step pairs ranks holding the same parameters).
 * 3. Per shape, the global batch is split between the islands in proportion to their speed (so
 *    that their inner steps take about as long), and each island's search pinned to the shape
 *    (sl_search_request.only_shape) chooses its replicas; the island whose step is fastest comes
 *    first (island 0 counts the run's steps and must have the most inner steps).
 * 4. The outer step, by coordinate descent over the simulator's own predictions (sl_sim_islands):
 *    H (island 0's inner steps, at most --max-inner-steps; the others in proportion to their
 *    speed, so that no island waits), the wire format, the fragments and their overlap.
 * Every plan is ranked by its effective figures (sl_search_effective_result): the simulator's
 * tokens per second times the token value (search/token_value.h) of its island count, H and
 * wire, and dollars per effective global batch. A synchronous plan's token value is 1.
 *
 * Counted in stats.simulated[SL_PHASE_ISLANDS]: every plan the islands' searches and the outer
 * step's choice simulate (deterministic, as the other phases). */
#ifndef SL_SEARCH_ISLANDS_SEARCH_H
#define SL_SEARCH_ISLANDS_SEARCH_H

#include "search/search.h"
#include "search/token_value.h"

/* Island plans at most this stale by default (--max-inner-steps). */
#define SL_SEARCH_DEFAULT_MAX_INNER_STEPS 50

/* The planner: req->sync says which plans compete. With islands, req->token_value (NULL: the
 * shipped measurements) values their tokens. SL_EINPUT for `islands` on a pool without two
 * zones, or under the sosp25 cost model. */
int sl_search_plan(const struct sl_sim_env *env, const struct sl_pool *pool,
		   const struct sl_search_request *req, struct sl_search_outcome *outcome,
		   struct sl_err *err);

/* The oracle of sl_search_plan on small pools: the same steps, with every shape instead of the
 * islands' best plans' and sl_search_exhaustive for every synchronous and island search (the
 * batch split and the outer step's choice are sl_search_plan's). Exponential. */
int sl_search_plan_exhaustive(const struct sl_sim_env *env, const struct sl_pool *pool,
			      const struct sl_search_request *req,
			      struct sl_search_outcome *outcome, struct sl_err *err);

/* raw (sl_simulate of an island plan) as ranked: samples per second times value, the iteration
 * one global batch of such samples, its dollars the plan's dollars per second over that time. */
void sl_search_effective_result(const struct sl_sim_result *raw, long long global_batch,
				double value, struct sl_sim_result *out);

/* The token value the planner gives plan (1 without islands). */
double sl_search_plan_token_value(const struct sl_token_value *tv, const struct sl_plan *plan,
				  int *extrapolated);

/* ---- for islands_search.c and islands_outer.c ---- */

/* Chooses H, wire, fragments and overlap of plan->islands (set, with island 0 the fastest) by
 * coordinate descent; *best gets the effective result of the choice (fits_memory 0 when none
 * fits). *simulated counts sl_sim_islands calls. */
int sl_search_choose_outer(const struct sl_sim_env *env, const struct sl_search_request *req,
			   const struct sl_token_value *tv, long long global_batch,
			   struct sl_plan *plan, struct sl_sim_result *best, long long *simulated,
			   struct sl_err *err);

#endif
