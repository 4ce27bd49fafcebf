/* The outer step of an island plan chosen by the simulator (islands_search.h, step 4), and the
 * effective figures every plan is ranked by. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/islands_search.h"

void sl_search_effective_result(const struct sl_sim_result *raw, long long global_batch,
				double value, struct sl_sim_result *out)
{
	sl_sim_result_copy(out, raw);
	double t = raw->iteration_time_s;
	double samples_per_s = raw->samples_per_s * value;
	out->samples_per_s = samples_per_s;
	out->tokens_per_s = raw->tokens_per_s * value;
	out->samples_per_iteration = global_batch;
	out->global_batch = global_batch;
	out->iteration_time_s = samples_per_s > 0 ? (double)global_batch / samples_per_s : INFINITY;
	out->throughput_it_s = samples_per_s / (double)global_batch;
	/* the same dollars per second, spread over the time one effective global batch takes */
	double per_s = t > 0 ? out->iteration_time_s / t : 0;
	out->gpu_cost_usd_per_iter = raw->gpu_cost_usd_per_iter * per_s;
	out->egress_cost_usd_per_iter = raw->egress_cost_usd_per_iter * per_s;
	out->cost_usd_per_iter = out->gpu_cost_usd_per_iter + out->egress_cost_usd_per_iter;
}

double sl_search_plan_token_value(const struct sl_token_value *tv, const struct sl_plan *plan,
				  int *extrapolated)
{
	if (extrapolated)
		*extrapolated = 0;
	const struct sl_plan_islands *isl = plan->islands;
	if (!isl || isl->count < 2)
		return 1;
	return sl_token_value_of(tv, isl->count, isl->inner_steps[0], isl->wire, extrapolated);
}

/* The H of island 0 tried: a 1-2-5 ladder up to the bound, and the bound itself. */
static const int h_ladder[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};
#define H_LADDER (int)(sizeof(h_ladder) / sizeof(h_ladder[0]))

/* Fragments and overlap tried together (Streaming DiLoCo's useful corner: few fragments, a
 * short overlap). */
static const int fragments_overlap[][2] = {{1, 0}, {1, 1}, {2, 1}, {4, 0}, {4, 1}, {4, 2}};
#define FO_COUNT (int)(sizeof(fragments_overlap) / sizeof(fragments_overlap[0]))

struct outer_choice {
	int h0;
	enum sl_islands_wire wire;
	int fo;                       /* index into fragments_overlap */
};

struct chooser {
	const struct sl_sim_env *env;
	const struct sl_search_request *req;
	const struct sl_token_value *tv;
	long long global_batch;
	struct sl_plan *plan;
	double step_s[SL_ISLANDS_MAX_ISLANDS]; /* each island's inner step */
	int tensors;
	long long *simulated;
	const struct sl_sim_result *parts;      /* each island's own plan, simulated once */
	struct sl_sim_exchange_cache *exchanges; /* the plan's outer exchanges, each worked out once */
};

/* plan->islands set to c: island i gets H0 x (island 0's step / its step) inner steps, at
 * least 1 and at most H0, so that the islands finish their rounds together. 0 when c is not a
 * valid plan (an overlap reaching the fewest inner steps, more fragments than tensors). */
static int apply(const struct chooser *ch, struct outer_choice c)
{
	struct sl_plan_islands *isl = ch->plan->islands;
	int h_min = c.h0;
	for (int i = 0; i < isl->count; i++) {
		double h = i == 0 || ch->step_s[i] <= 0 ? c.h0 : c.h0 * ch->step_s[0] / ch->step_s[i];
		long long hi = llround(h);
		isl->inner_steps[i] = (int)(hi < 1 ? 1 : hi > c.h0 ? c.h0 : hi);
		h_min = isl->inner_steps[i] < h_min ? isl->inner_steps[i] : h_min;
	}
	isl->wire = c.wire;
	isl->fragments = fragments_overlap[c.fo][0];
	isl->overlap_steps = fragments_overlap[c.fo][1];
	return isl->fragments <= ch->tensors && isl->overlap_steps < h_min;
}

/* The effective result of choice c in *eff; 0 when the plan is invalid or has no prediction. */
static int evaluate(const struct chooser *ch, struct outer_choice c, struct sl_sim_result *eff)
{
	if (!apply(ch, c))
		return 0;
	struct sl_sim_result raw;
	struct sl_err err = {0};
	(*ch->simulated)++;
	if (sl_sim_islands_from_parts(ch->env, ch->plan, ch->parts, ch->exchanges, &raw, NULL, &err))
		return 0;
	double value = sl_search_plan_token_value(ch->tv, ch->plan, NULL);
	sl_search_effective_result(&raw, ch->global_batch, value, eff);
	return 1;
}

/* Whether a ranks before b: what fits before what does not, what meets the constraints before
 * what does not, then the planner's own order. */
static int ranks_before(const struct sl_search_request *req, const struct sl_sim_result *a,
			const struct sl_sim_result *b)
{
	if (a->fits_memory != b->fits_memory)
		return a->fits_memory;
	int ma = sl_search_meets(req, a), mb = sl_search_meets(req, b);
	if (ma != mb)
		return ma;
	return sl_search_better(req, a, b);
}

/* One coordinate: every value of it (the others as in *cur); *cur and *best move to a better
 * one. Returns whether they moved. */
static int descend(const struct chooser *ch, int coordinate, int h_max, struct outer_choice *cur,
		   struct sl_sim_result *best, int *have)
{
	int moved = 0;
	int n = coordinate == 0 ? H_LADDER + 1 : coordinate == 1 ? 3 : FO_COUNT;
	for (int v = 0; v < n; v++) {
		struct outer_choice c = *cur;
		if (coordinate == 0) {
			c.h0 = v < H_LADDER ? h_ladder[v] : h_max;
			if (c.h0 > h_max || (v < H_LADDER && c.h0 == h_max))
				continue;
		} else if (coordinate == 1)
			c.wire = (enum sl_islands_wire)v;
		else
			c.fo = v;
		if (!memcmp(&c, cur, sizeof(c)) && *have)
			continue;
		struct sl_sim_result eff;
		if (!evaluate(ch, c, &eff))
			continue;
		if (!*have || ranks_before(ch->req, &eff, best)) {
			sl_sim_result_copy(best, &eff);
			*cur = c;
			*have = 1;
			moved = 1;
		}
	}
	return moved;
}

int sl_search_choose_outer(const struct sl_sim_env *env, const struct sl_search_request *req,
			   const struct sl_token_value *tv, long long global_batch,
			   struct sl_plan *plan, struct sl_sim_result *best, long long *simulated,
			   struct sl_err *err)
{
	struct sl_plan_islands *isl = plan->islands;
	struct chooser ch = {env, req, tv, global_batch, plan, {0}, 0, simulated, NULL, NULL};
	ch.tensors = sl_islands_model_tensors(&env->model);
	int h_max = req->max_inner_steps > 0 ? req->max_inner_steps : SL_SEARCH_DEFAULT_MAX_INNER_STEPS;
	/* the islands' own plans do not depend on the outer step: simulated once (the step times
	 * set each island's share of H) */
	struct sl_sim_result *parts = malloc(sizeof(*parts) * (size_t)isl->count);
	if (!parts)
		return sl_err_set(err, SL_ENOMEM, "out of memory for the island search");
	struct outer_choice cur = {h_max, SL_ISLANDS_WIRE_INT8, 0};
	struct sl_err sim_err = {0};
	(*simulated)++;
	int rc = sl_sim_islands_parts(env, plan, req->cost_model, parts, &sim_err);
	for (int i = 0; !rc && i < isl->count; i++)
		ch.step_s[i] = parts[i].iteration_time_s;
	ch.parts = parts;
	/* the replicas stay as they are while the outer step varies: one cache for the descent */
	struct sl_sim_exchange_cache exchanges = {0};
	ch.exchanges = &exchanges;
	memset(best, 0, sizeof(*best));
	if (rc) {
		free(parts);
		return 0; /* no prediction for this plan: best stays unfit */
	}
	int have = 0;
	for (int round = 0; round < 4; round++) {
		int moved = 0;
		for (int coordinate = 0; coordinate < 3; coordinate++)
			moved |= descend(&ch, coordinate, h_max, &cur, best, &have);
		if (!moved)
			break;
	}
	if (have)
		apply(&ch, cur);
	free(parts);
	return 0;
}
