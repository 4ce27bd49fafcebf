/* Plans offered later, in order: see offers.h. */
#include "search/offers.h"

#include <stdlib.h>

int sl_offers_add(struct sl_offers *offers, const struct sl_plan *plan,
		  const struct sl_sim_result *res, struct sl_err *err)
{
	if (offers->count == offers->capacity) {
		int cap = offers->capacity ? 2 * offers->capacity : 8;
		struct sl_search_candidate *grown =
			realloc(offers->kept, (size_t)cap * sizeof(*grown));
		if (!grown)
			return sl_err_set(err, SL_ENOMEM, "out of memory for the island plans");
		offers->kept = grown;
		offers->capacity = cap;
	}
	struct sl_search_candidate *c = &offers->kept[offers->count];
	sl_plan_init(&c->plan);
	int rc = sl_plan_copy(&c->plan, plan, err);
	if (rc) {
		sl_plan_free(&c->plan);
		return rc;
	}
	sl_sim_result_copy(&c->result, res);
	offers->count++;
	return 0;
}

int sl_offers_make(const struct sl_offers *offers, struct sl_ranking *rank, struct sl_err *err)
{
	int rc = 0;
	for (int i = 0; i < offers->count && !rc; i++)
		rc = sl_ranking_consider(rank, &offers->kept[i].plan, &offers->kept[i].result, err);
	return rc;
}

void sl_offers_free(struct sl_offers *offers)
{
	for (int i = 0; i < offers->count; i++)
		sl_plan_free(&offers->kept[i].plan);
	free(offers->kept);
	*offers = (struct sl_offers){0};
}
