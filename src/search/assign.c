/* Replica assignment: see assign.h. */
#include "search/assign.h"

#include <string.h>

static int eligible_types(const struct sl_assign_input *in, int stage)
{
	int n = 0;
	for (int i = 0; i < in->type_count; i++)
		n += in->tp_for[stage][in->types[i]] > 0;
	return n;
}

/* Per-replica price of type g for stage k under the preference: GPUs first (throughput) or
 * dollars first (cost). Lower is preferred; the other quantity breaks ties. */
static int prefer(const struct sl_assign_input *in, int k, int a, int b)
{
	double gpus_a = in->tp_for[k][a], gpus_b = in->tp_for[k][b];
	double usd_a = gpus_a * in->usd_per_hour[a], usd_b = gpus_b * in->usd_per_hour[b];
	double first_a = in->prefer_cost ? usd_a : gpus_a, first_b = in->prefer_cost ? usd_b : gpus_b;
	double second_a = in->prefer_cost ? gpus_a : usd_a, second_b = in->prefer_cost ? gpus_b : usd_b;
	if (first_a != first_b)
		return first_a < first_b;
	if (second_a != second_b)
		return second_a < second_b;
	return a < b;
}

void sl_assign_order_of(const struct sl_assign_input *in, struct sl_assign_order *order)
{
	int P = in->num_stages;
	/* stages by fewest eligible types first (stable by index) */
	int eligible[SL_PLAN_MAX_STAGES];
	for (int i = 0; i < P; i++) {
		eligible[i] = eligible_types(in, i);
		int j = i;
		while (j > 0 && eligible[order->stages[j - 1]] > eligible[i]) {
			order->stages[j] = order->stages[j - 1];
			j--;
		}
		order->stages[j] = (short)i;
	}
	/* per stage, its eligible types (positions in in->types), preferred first */
	for (int k = 0; k < P; k++) {
		int n = 0;
		for (int ti = 0; ti < in->type_count; ti++) {
			int g = in->types[ti];
			if (in->tp_for[k][g] <= 0)
				continue;
			int j = n++;
			while (j > 0 && prefer(in, k, g, in->types[order->types[k][j - 1]])) {
				order->types[k][j] = order->types[k][j - 1];
				j--;
			}
			order->types[k][j] = (unsigned char)ti;
		}
		order->type_count[k] = (unsigned char)n;
	}
}

int sl_assign_count(const struct sl_assign_input *in, const struct sl_assign_order *order,
		    struct sl_assign_result *res)
{
	int P = in->num_stages, D = in->num_pipelines;
	int type_count = in->type_count, zone_count = in->zone_order_count;
	/* GPUs left per (position in in->types, position in the fill order): only what the search
	 * covers is copied (the threshold search calls this several times per shape and fill
	 * order, and whole tables were most of its cost) */
	int zone_left[SL_MAX_GPU_TYPES][SL_MAX_SEARCH_ZONES];
	for (int ti = 0; ti < type_count; ti++)
		memcpy(zone_left[ti], in->avail[in->types[ti]], sizeof(int) * (size_t)zone_count);
	/* stage k's groups at k * stride, whatever order the stages choose in */
	int stride = zone_count * type_count;

	for (int oi = 0; oi < P; oi++) {
		int k = order->stages[oi];
		int n = order->type_count[k];
		/* whole replicas only: a replica's tp GPUs live in one zone. The groups taken, in
		 * the canonical (zone rank, gpu) order (the zone rank being the fill order): kept
		 * sorted as they come, there are rarely more than two or three */
		struct cell {
			int zi, ti, count;
		} cells[SL_MAX_GPU_TYPES * SL_MAX_SEARCH_ZONES];
		int cell_count = 0, placed = 0;
		for (int i = 0; i < n && placed < D; i++) {
			int ti = order->types[k][i], tp = in->tp_for[k][in->types[ti]];
			for (int zi = 0; zi < zone_count && placed < D; zi++) {
				int can = zone_left[ti][zi] / tp;
				int got = can < D - placed ? can : D - placed;
				if (!got)
					continue;
				zone_left[ti][zi] -= got * tp;
				placed += got;
				int j = cell_count++;
				while (j > 0 && (cells[j - 1].zi > zi ||
						 (cells[j - 1].zi == zi && cells[j - 1].ti > ti))) {
					cells[j] = cells[j - 1];
					j--;
				}
				cells[j] = (struct cell){zi, ti, got};
			}
		}
		if (placed < D)
			return -1;
		int used = res->begin[k] = k * stride;
		for (int c = 0; c < cell_count; c++) {
			int g = in->types[cells[c].ti];
			res->groups[used++] = (struct sl_assign_group){
				(short)g, (short)in->zone_order[cells[c].zi], (short)in->tp_for[k][g],
				cells[c].count};
		}
		res->end[k] = used;
	}
	return 0;
}

void sl_assign_write(const struct sl_assign_input *in, const struct sl_assign_result *res,
		     struct sl_plan *plan)
{
	for (int k = 0; k < in->num_stages; k++) {
		int j = 0;
		for (int i = res->begin[k]; i < res->end[k]; i++) {
			const struct sl_assign_group *grp = &res->groups[i];
			for (int c = 0; c < grp->count; c++) {
				struct sl_replica *r = sl_plan_replica(plan, k, j++);
				r->gpu = grp->gpu;
				r->zone = grp->zone;
				r->tp = grp->tp;
				r->pad = 0;
			}
		}
	}
}
