/* Replica assignment: given, for every stage, which TP degree each GPU type would need to meet
 * the time threshold (0 = it cannot), choose D replicas per stage from the pool and place them in
 * zones.
 *
 * Types: stages with the fewest eligible types choose first; each takes the type that needs the
 * fewest GPUs per replica (for the cost objective: the fewest dollars per replica), as many
 * replicas as that type has GPUs left, then the next type. Zones: each stage's replicas of a type
 * fill the zones in one fixed order (most GPUs of the zone subset first), so every stage has the
 * same zone mix where the pool allows, and the canonical (zone, gpu, tp) order then keeps each
 * pipeline inside one zone.
 */
#ifndef SL_SEARCH_ASSIGN_H
#define SL_SEARCH_ASSIGN_H

#include "cluster/catalogue.h"
#include "plan/plan.h"
#include "util/limits.h"

struct sl_assign_input {
	int num_stages;
	int num_pipelines;                                    /* D */
	int gpu_count, zone_count;
	int types[SL_MAX_GPU_TYPES];                          /* GPU types with GPUs in the zones */
	int type_count;                                       /* searched, ascending index */
	int tp_for[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES];     /* 0: type not eligible */
	/* GPUs usable per (type, zone): avail[g][i] of zone zone_order[i] (tables over the zones
	 * searched, not the catalogue) */
	int avail[SL_MAX_GPU_TYPES][SL_MAX_SEARCH_ZONES];
	int zone_order[SL_MAX_SEARCH_ZONES];                  /* zones to fill, in order */
	int zone_order_count;
	double usd_per_hour[SL_MAX_GPU_TYPES];
	int prefer_cost;                                      /* 1: fewest dollars per replica */
};

/* The assignment without the plan: per stage, groups of replicas of one (gpu, zone) in the
 * canonical (zone rank, gpu) order the plan is written in. Enough to tell whether the pool can
 * supply the replicas, and for the bounds on the plan (prune.c), at a cost that does not grow
 * with D: the threshold search asks it several times per shape, and writes a plan only for the
 * shapes its bounds leave. */
struct sl_assign_group {
	short gpu, zone, tp;
	int count;
};

struct sl_assign_result {
	int begin[SL_PLAN_MAX_STAGES], end[SL_PLAN_MAX_STAGES]; /* stage k's: groups[begin, end) */
	struct sl_assign_group groups[SL_PLAN_MAX_STAGES * SL_MAX_GPU_TYPES * SL_MAX_SEARCH_ZONES];
};

/* The order sl_assign_count takes the stages in and, per stage, its eligible types in: it
 * depends on the eligible TP degrees and prices, not on the zones, so the threshold search
 * computes it once per threshold and fills every fill order with it. */
struct sl_assign_order {
	short stages[SL_PLAN_MAX_STAGES];                     /* fewest eligible types first */
	unsigned char types[SL_PLAN_MAX_STAGES][SL_MAX_GPU_TYPES]; /* positions in in->types */
	unsigned char type_count[SL_PLAN_MAX_STAGES];
};

void sl_assign_order_of(const struct sl_assign_input *in, struct sl_assign_order *order);

/* Fills res (in's replicas taken in order, which sl_assign_order_of gave for in's eligible
 * replicas) and returns 0, or -1 when the pool cannot supply D eligible replicas to every
 * stage. */
int sl_assign_count(const struct sl_assign_input *in, const struct sl_assign_order *order,
		    struct sl_assign_result *res);

/* Writes res's replicas into plan (reserved for num_stages x num_pipelines). */
void sl_assign_write(const struct sl_assign_input *in, const struct sl_assign_result *res,
		     struct sl_plan *plan);

#endif
