/* Zone sets, fill orders and the canonical replica order: see zones.h and search.h. */
#include "search/zones.h"

#include <assert.h>
#include <string.h>

#include "search/search.h"

static_assert(SL_ZONE_ORDERS_EXHAUSTIVE == 3 && SL_ZONE_ORDERS_MAX == 6,
	      "SL_ZONE_ORDERS_MAX is the number of orders of SL_ZONE_ORDERS_EXHAUSTIVE zones");

int sl_zone_order_count(int n)
{
	if (n > SL_ZONE_ORDERS_EXHAUSTIVE)
		return 2;
	int orders = 1;
	for (int i = 2; i <= n; i++)
		orders *= i;
	return orders;
}

static void reverse(int *a, int n)
{
	for (int i = 0, j = n - 1; i < j; i++, j--) {
		int t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}

void sl_zone_next_permutation(int *a, int n)
{
	int i = n - 2;
	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i >= 0) {
		int j = n - 1;
		while (a[j] <= a[i])
			j--;
		int t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
	reverse(a + i + 1, n - i - 1);
}

void sl_zone_next_order(int *order, int n)
{
	if (n <= SL_ZONE_ORDERS_EXHAUSTIVE)
		sl_zone_next_permutation(order, n);
	else
		reverse(order, n);
}

int sl_zone_sets(const struct sl_catalogue *cat, const struct sl_pool *pool,
		 int sets[SL_ZONE_SETS_MAX][SL_MAX_SEARCH_ZONES], int *sizes)
{
	int zones[SL_MAX_SEARCH_ZONES];
	int pool_zones = sl_pool_zones(pool, zones, SL_MAX_SEARCH_ZONES);
	long long zone_gpus[SL_MAX_SEARCH_ZONES] = {0};
	int used[SL_MAX_SEARCH_ZONES], used_count = 0; /* positions in zones[] */
	for (int i = 0; i < pool_zones && i < SL_MAX_SEARCH_ZONES; i++) {
		for (int g = 0; g < cat->gpu_count; g++)
			zone_gpus[i] += pool->counts[g][zones[i]];
		/* most GPUs first, then by index: the fill order of assign.c */
		int j = used_count++;
		while (j > 0 && zone_gpus[used[j - 1]] < zone_gpus[i]) {
			used[j] = used[j - 1];
			j--;
		}
		used[j] = i;
	}
	for (int i = 0; i < used_count; i++)
		used[i] = zones[used[i]];
	int count = 0;
	memcpy(sets[count], used, sizeof(int) * (size_t)used_count);
	sizes[count++] = used_count;
	int regions[SL_MAX_SEARCH_ZONES], region_count = 0;
	for (int i = 0; i < used_count; i++) {
		int r = sl_catalogue_zone_region(cat, used[i]), seen = 0;
		for (int j = 0; j < region_count; j++)
			seen |= regions[j] == r;
		if (!seen)
			regions[region_count++] = r;
	}
	if (region_count > 1) {
		for (int j = 0; j < region_count; j++) {
			int n = 0;
			for (int i = 0; i < used_count; i++)
				if (sl_catalogue_zone_region(cat, used[i]) == regions[j])
					sets[count][n++] = used[i];
			sizes[count++] = n;
		}
	}
	if (used_count > 1) {
		for (int i = 0; i < used_count; i++) {
			int dup = 0;
			for (int s = 0; s < count; s++)
				dup |= sizes[s] == 1 && sets[s][0] == used[i];
			if (dup)
				continue;
			sets[count][0] = used[i];
			sizes[count++] = 1;
		}
	}
	return count;
}

static int replica_before(const struct sl_replica *x, const struct sl_replica *y,
			  const int *zone_rank)
{
	if (x->zone != y->zone)
		return zone_rank[x->zone] < zone_rank[y->zone];
	if (x->gpu != y->gpu)
		return x->gpu < y->gpu;
	return x->tp < y->tp;
}

void sl_search_canonicalize(struct sl_plan *plan, const int *zone_rank)
{
	/* insertion sort: stable, allocation-free, and plans arrive nearly sorted */
	for (int k = 0; k < plan->num_stages; k++) {
		struct sl_replica *r = sl_plan_replica(plan, k, 0);
		for (int i = 1; i < plan->num_pipelines; i++) {
			struct sl_replica key = r[i];
			int j = i;
			while (j > 0 && replica_before(&key, &r[j - 1], zone_rank)) {
				r[j] = r[j - 1];
				j--;
			}
			r[j] = key;
		}
	}
}

void sl_search_zone_rank_of(const struct sl_plan *plan, const int *zones, int zone_count,
			    int *zone_rank)
{
	int next = 0;
	for (int z = 0; z < SL_MAX_ZONES; z++)
		zone_rank[z] = -1;
	for (int k = 0; k < plan->num_stages; k++)
		for (int j = 0; j < plan->num_pipelines; j++) {
			int z = sl_plan_replica(plan, k, j)->zone;
			if (zone_rank[z] < 0)
				zone_rank[z] = next++;
		}
	for (int i = 0; i < zone_count; i++)
		if (zone_rank[zones[i]] < 0)
			zone_rank[zones[i]] = next++;
}

