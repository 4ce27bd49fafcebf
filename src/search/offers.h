/* Plans offered to a ranking later, in the order they came: the island search offers its plans
 * to the result's ranking after the synchronous search's, and when the two run side by side
 * (islands_search.c) its offers wait here until the synchronous ones are made. A ranking keeps
 * the first of two plans it cannot tell apart, so the order is part of the result. */
#ifndef SL_SEARCH_OFFERS_H
#define SL_SEARCH_OFFERS_H

#include "search/ranking.h"

struct sl_offers {
	int count, capacity;
	struct sl_search_candidate *kept; /* [count], owned */
};

/* Keeps a copy of plan and res, after the others. */
int sl_offers_add(struct sl_offers *offers, const struct sl_plan *plan,
		  const struct sl_sim_result *res, struct sl_err *err);

/* Offers every kept plan to rank, in order; the first error stops it. */
int sl_offers_make(const struct sl_offers *offers, struct sl_ranking *rank, struct sl_err *err);

void sl_offers_free(struct sl_offers *offers);

#endif
