/* Zones in the planner: which sets of zones a search covers, in which fill orders, and the
 * canonical replica order that follows from a zone order.
 *
 * Zone sets: all zones with GPUs; each region on its own when there are several (a stage whose
 * replicas span regions pays the slow inter-region links in its all-reduce); each zone on its
 * own. Zones are listed most GPUs first (then by index), the order assign.c fills them in.
 * Fill orders: links are not symmetric, so the order decides which zones neighbour in the ring;
 * every order of up to SL_ZONE_ORDERS_EXHAUSTIVE zones is searched, else the order and its
 * reverse.
 */
#ifndef SL_SEARCH_ZONES_H
#define SL_SEARCH_ZONES_H

#include "cluster/catalogue.h"
#include "cluster/pool.h"
#include "util/limits.h"

#define SL_ZONE_ORDERS_EXHAUSTIVE 3
/* The most fill orders of one zone set: SL_ZONE_ORDERS_EXHAUSTIVE! (2 beyond it) */
#define SL_ZONE_ORDERS_MAX 6
#define SL_ZONE_SETS_MAX (2 * SL_MAX_SEARCH_ZONES + 1)

/* Fills sets[i][0..sizes[i]-1] and returns the number of zone sets (at most SL_ZONE_SETS_MAX).
 * The pool has GPUs in at most SL_MAX_SEARCH_ZONES zones (sl_search_run checks). */
int sl_zone_sets(const struct sl_catalogue *cat, const struct sl_pool *pool,
		 int sets[SL_ZONE_SETS_MAX][SL_MAX_SEARCH_ZONES], int *sizes);

/* How many fill orders of a set of n zones are searched. */
int sl_zone_order_count(int n);

/* Turns order (n zones) into the next order to search: the next permutation (lexicographic,
 * wrapping around) for small sets, the reverse for large ones. */
void sl_zone_next_order(int *order, int n);

/* The next permutation of a, lexicographically, wrapping around to the first. */
void sl_zone_next_permutation(int *a, int n);

#endif
