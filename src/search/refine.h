/* Local search after the structured search: hill-climbing from the best plan found, with the
 * exact simulator as the judge. The structured search decides from compute times alone; this
 * step sees what only the whole simulation sees — which stage boundary crosses a slow zone link,
 * asymmetric links, a replica whose TP degree changes the gradient sync — by trying small moves:
 *   - shift a stage boundary by one layer;
 *   - give every replica of a (gpu, zone, tp) group of a stage another (gpu, zone, tp);
 *   - give one replica of such a group another (gpu, zone, tp);
 *   - when no single move improves and the plan is a single pipeline with a small neighbourhood,
 *     two stages' replicas changed together.
 * Each round takes the best improving move (best-improvement), until none improves,
 * SL_REFINE_MAX_ROUNDS rounds have run or SL_REFINE_MAX_SIMULATIONS simulations are spent. Every move keeps the plan within the pool.
 */
#ifndef SL_SEARCH_REFINE_H
#define SL_SEARCH_REFINE_H

#include "search/ranking.h"

#define SL_REFINE_MAX_ROUNDS 32
/* Simulations the local search may spend in all (a round in progress finishes): on large
 * pools of several types and zones a round tries thousands of moves, and the structured search
 * has already done the heavy lifting. */
#define SL_REFINE_MAX_SIMULATIONS 4000
#define SL_REFINE_PAIR_BUDGET 4096

/* Refines the plan in rank->out->best[0] (nothing to do when there is none); every plan it
 * simulates is offered to rank. Adds the number of simulations to *simulated. */
int sl_search_refine(const struct sl_sim_env *env, const struct sl_pool *pool,
		     struct sl_ranking *rank, long long *simulated, struct sl_err *err);

#endif
