/* Complete enumeration of small shapes: when a shape (micro-batch, partition, D) admits at most
 * SL_SEARCH_ENUMERATE_MAX canonical replica assignments (search_state.h), every one of them is
 * simulated instead of the threshold heuristic (thresholds.c).
 *
 * Invariants: assignments are canonical (replicas of a stage in non-decreasing option order, so
 * each multiset is visited once) and never take more GPUs of a (type, zone) than the work item's
 * pool holds; each is bounded (sl_search_assigned_prunable) before it is simulated.
 */
#include <stdlib.h>
#include <string.h>

#include "search/search_state.h"
#include "search/uneven.h"

struct enum_option {
	short gpu, zone, tp;
	short slot; /* the zone's position in the work item's fill order (avail's index) */
};

struct enumeration {
	struct search_state *st;
	long long nmb;
	struct enum_option options[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES * SL_MAX_SEARCH_ZONES * TP_SLOTS];
	int option_count[SL_PLAN_MAX_STAGES];
	int used[SL_MAX_GPU_TYPES][SL_MAX_SEARCH_ZONES]; /* by slot */
	struct sl_err *err;
	int rc;
};

/* The enumeration's scratch, malloc'd (free() releases it); NULL when out of memory. */
struct enumeration *sl_search_enumeration_new(void)
{
	return malloc(sizeof(struct enumeration));
}

static void enumerate_from(struct enumeration *en, int stage, int slot, int min_option)
{
	struct search_state *st = en->st;
	struct sl_plan *plan = &st->plan;
	if (en->rc)
		return;
	if (slot == plan->num_pipelines) {
		if (stage + 1 < plan->num_stages) {
			enumerate_from(en, stage + 1, 0, 0);
		} else if (!sl_search_share_shape_microbatches(st) &&
			   !sl_search_assigned_prunable(st, en->nmb)) {
			en->rc = sl_search_simulate_and_rank(st, en->err);
		}
		return;
	}
	for (int i = min_option; i < en->option_count[stage]; i++) {
		const struct enum_option *o = &en->options[stage][i];
		if (en->used[o->gpu][o->slot] + o->tp > st->assign.avail[o->gpu][o->slot])
			continue;
		en->used[o->gpu][o->slot] += o->tp;
		struct sl_replica *r = sl_plan_replica(plan, stage, slot);
		r->gpu = o->gpu;
		r->zone = o->zone;
		r->tp = o->tp;
		r->pad = 0;
		enumerate_from(en, stage, slot + 1, i);
		en->used[o->gpu][o->slot] -= o->tp;
	}
}

/* C(n + D - 1, D): multisets of D options out of n, saturating above limit. */
static long long multisets(int n, int D, long long limit)
{
	long long c = 1;
	for (int i = 1; i <= D; i++) {
		c = c * (n - 1 + i) / i;
		if (c > limit)
			return limit + 1;
	}
	return c;
}

/* Enumerates every assignment of the shape if there are few; returns 1 if it did (rc in *rc). */
int sl_search_enumerate_small_shape(struct search_state *st, int P, int D, long long nmb,
				    int fits[][SL_MAX_GPU_TYPES][TP_SLOTS], int *rc,
				    struct sl_err *err)
{
	if (st->enumerate_max <= 0)
		return 0;
	struct enumeration *en = st->enumeration;
	const struct sl_assign_input *in = &st->assign;
	long long total = 1;
	for (int k = 0; k < P; k++) {
		int n = 0;
		for (int zi = 0; zi < in->zone_order_count; zi++) {
			int z = in->zone_order[zi];
			for (int ti = 0; ti < in->type_count; ti++) {
				int g = in->types[ti];
				for (int t = 0; t < TP_SLOTS; t++)
					if (fits[k][g][t] && in->avail[g][zi] >= tp_values[t])
						en->options[k][n++] = (struct enum_option){
							(short)g, (short)z, (short)tp_values[t], (short)zi};
			}
		}
		en->option_count[k] = n;
		total *= multisets(n, D, st->enumerate_max);
		if (n == 0 || total > st->enumerate_max)
			return n == 0; /* no option: nothing to search either way */
	}
	en->st = st;
	en->nmb = nmb;
	en->err = err;
	en->rc = 0;
	memset(en->used, 0, sizeof(en->used));
	enumerate_from(en, 0, 0, 0);
	*rc = en->rc;
	return 1;
}
