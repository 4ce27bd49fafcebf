/* The planner's result set under construction: top K plans meeting the constraints, the best plan
 * that fits ignoring the constraints, and (on request) the Pareto frontier. Used by the search (search.c,
 * evaluate.c) and exhaustive.c. Not thread-safe. */
#ifndef SL_SEARCH_RANKING_H
#define SL_SEARCH_RANKING_H

#include "search/search.h"

struct sl_ranking {
	const struct sl_search_request *req;
	struct sl_search_outcome *out;
	int top_capacity;
	int pareto_capacity;
};

/* Allocates outcome->best for req->top_k plans. */
int sl_ranking_init(struct sl_ranking *rank, const struct sl_search_request *req,
		    struct sl_search_outcome *outcome, struct sl_err *err);

/* Offers a simulated plan; copies it if it enters any of the sets. */
int sl_ranking_consider(struct sl_ranking *rank, const struct sl_plan *plan,
			const struct sl_sim_result *res, struct sl_err *err);

/* Orders the Pareto frontier by throughput, descending. */
void sl_ranking_finish(struct sl_ranking *rank);

#endif
