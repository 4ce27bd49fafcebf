/* Ranking of simulated plans and the planner's result set (top K, Pareto frontier), shared by the planner and the exhaustive search so both judge alike. */
#include "search/ranking.h"

#include <stdlib.h>
#include <string.h>

const char *sl_objective_name(enum sl_objective objective)
{
	return objective == SL_OBJECTIVE_COST ? "cost" : "throughput";
}

/* Relative tolerance under which two objective values count as equal, so that tie-breaks (not
 * floating-point noise in the last bits) decide between equivalent plans. */
#define TIE_RELATIVE 1e-12

static int nearly_equal(double a, double b)
{
	double scale = a > b ? a : b;
	return (a > b ? a - b : b - a) <= TIE_RELATIVE * (scale > 0 ? scale : 1);
}

int sl_search_meets(const struct sl_search_request *req, const struct sl_sim_result *res)
{
	if (!res->fits_memory)
		return 0;
	if (req->max_cost_usd_per_iter > 0 && res->cost_usd_per_iter > req->max_cost_usd_per_iter)
		return 0;
	if (req->min_throughput_it_s > 0 && res->throughput_it_s < req->min_throughput_it_s)
		return 0;
	return 1;
}

int sl_search_better(const struct sl_search_request *req, const struct sl_sim_result *a,
		     const struct sl_sim_result *b)
{
	double va = req->objective == SL_OBJECTIVE_COST ? -a->cost_usd_per_iter : a->throughput_it_s;
	double vb = req->objective == SL_OBJECTIVE_COST ? -b->cost_usd_per_iter : b->throughput_it_s;
	if (!nearly_equal(va, vb))
		return va > vb;
	if (a->num_gpus != b->num_gpus)
		return a->num_gpus < b->num_gpus;
	if (!nearly_equal(a->cost_usd_per_iter, b->cost_usd_per_iter))
		return a->cost_usd_per_iter < b->cost_usd_per_iter;
	if (!nearly_equal(a->throughput_it_s, b->throughput_it_s))
		return a->throughput_it_s > b->throughput_it_s;
	return 0;
}


/* The same GPUs doing the same work: per stage, the same multiset of replicas (the order differs
 * between zone orders), and the same micro-batch counts per pipeline in multiset. The top list
 * keeps only the better of such twins, so --top K shows K different choices. */
static int equivalent_plan(const struct sl_plan *a, const struct sl_plan *b)
{
	if (a->num_stages != b->num_stages || a->num_pipelines != b->num_pipelines ||
	    a->micro_batch != b->micro_batch || a->uneven_microbatches != b->uneven_microbatches)
		return 0;
	for (int k = 0; k < a->num_stages; k++) {
		if (a->stages[k].first_layer != b->stages[k].first_layer)
			return 0;
		/* every replica of a's stage occurs as often in b's stage */
		for (int j = 0; j < a->num_pipelines; j++) {
			const struct sl_replica *r = sl_plan_replica(a, k, j);
			int in_a = 0, in_b = 0;
			for (int i = 0; i < a->num_pipelines; i++) {
				in_a += !memcmp(sl_plan_replica(a, k, i), r, sizeof(*r));
				in_b += !memcmp(sl_plan_replica(b, k, i), r, sizeof(*r));
			}
			if (in_a != in_b)
				return 0;
			/* runs: skip the rest of this run */
			while (j + 1 < a->num_pipelines && !memcmp(sl_plan_replica(a, k, j + 1), r, sizeof(*r)))
				j++;
		}
	}
	return 1;
}

/* Recomputation in order of the time it adds: none, selective, full. */
static int recompute_rank(int recompute)
{
	return recompute == SL_RECOMPUTE_SELECTIVE ? 1 : recompute == SL_RECOMPUTE_FULL ? 2 : 0;
}

/* A total order on plans, for ties the results cannot break (twins in another zone order, say):
 * without it the plan kept would depend on which thread found its tie first. */
static int plan_compare(const struct sl_plan *a, const struct sl_plan *b)
{
	if (a->micro_batch != b->micro_batch)
		return a->micro_batch < b->micro_batch ? -1 : 1;
	if (a->num_stages != b->num_stages)
		return a->num_stages < b->num_stages ? -1 : 1;
	if (a->num_pipelines != b->num_pipelines)
		return a->num_pipelines < b->num_pipelines ? -1 : 1;
	for (int k = 0; k < a->num_stages; k++)
		if (a->stages[k].first_layer != b->stages[k].first_layer)
			return a->stages[k].first_layer < b->stages[k].first_layer ? -1 : 1;
	size_t n = (size_t)a->num_stages * (size_t)a->num_pipelines;
	for (size_t i = 0; i < n; i++) {
		const struct sl_replica *x = &a->replicas[i], *y = &b->replicas[i];
		if (x->zone != y->zone)
			return x->zone < y->zone ? -1 : 1;
		if (x->gpu != y->gpu)
			return x->gpu < y->gpu ? -1 : 1;
		if (x->tp != y->tp)
			return x->tp < y->tp ? -1 : 1;
	}
	if (a->uneven_microbatches != b->uneven_microbatches)
		return a->uneven_microbatches < b->uneven_microbatches ? -1 : 1;
	for (int j = 0; a->uneven_microbatches && j < a->num_pipelines; j++)
		if (a->microbatches[j] != b->microbatches[j])
			return a->microbatches[j] > b->microbatches[j] ? -1 : 1;
	/* the same replicas with other memory options: fewer options first (plans without any
	 * compare equal here, as before the options existed) */
	for (int k = 0; k < a->num_stages; k++) {
		int ra = recompute_rank(a->stages[k].recompute), rb = recompute_rank(b->stages[k].recompute);
		if (ra != rb)
			return ra < rb ? -1 : 1;
		if (a->stages[k].zero != b->stages[k].zero)
			return a->stages[k].zero < b->stages[k].zero ? -1 : 1;
	}
	return 0;
}

/* sl_search_better, ties broken by the plans themselves. */
static int candidate_better(const struct sl_search_request *req, const struct sl_plan *plan,
			    const struct sl_sim_result *res, const struct sl_search_candidate *other)
{
	if (sl_search_better(req, res, &other->result))
		return 1;
	if (sl_search_better(req, &other->result, res))
		return 0;
	return plan_compare(plan, &other->plan) < 0;
}

static int store(struct sl_search_candidate *slot, const struct sl_plan *plan,
		 const struct sl_sim_result *res, struct sl_err *err)
{
	int rc = sl_plan_copy(&slot->plan, plan, err);
	if (!rc)
		sl_sim_result_copy(&slot->result, res);
	return rc;
}

/* *to = *from, the result copied as far as it goes (sl_sim_result_copy). */
static void move_candidate(struct sl_search_candidate *to, const struct sl_search_candidate *from)
{
	to->plan = from->plan;
	sl_sim_result_copy(&to->result, &from->result);
}

int sl_ranking_init(struct sl_ranking *rank, const struct sl_search_request *req,
		    struct sl_search_outcome *outcome, struct sl_err *err)
{
	memset(rank, 0, sizeof(*rank));
	rank->req = req;
	rank->out = outcome;
	rank->top_capacity = req->top_k > 0 ? req->top_k : 1;
	outcome->best = calloc((size_t)rank->top_capacity, sizeof(*outcome->best));
	if (!outcome->best)
		return sl_err_set(err, SL_ENOMEM, "out of memory for %d plans", rank->top_capacity);
	outcome->best_capacity = rank->top_capacity;
	for (int i = 0; i < rank->top_capacity; i++)
		sl_plan_init(&outcome->best[i].plan);
	return 0;
}

/* Keeps the Pareto set of (throughput up, cost down) over plans that fit; a plan enters if no
 * kept plan is at least as good on both, and evicts those it dominates. */
static int consider_pareto(struct sl_ranking *rank, const struct sl_plan *plan,
			   const struct sl_sim_result *res, struct sl_err *err)
{
	struct sl_search_outcome *out = rank->out;
	for (int i = 0; i < out->pareto_count; i++) {
		const struct sl_sim_result *o = &out->pareto[i].result;
		int tie = o->throughput_it_s == res->throughput_it_s &&
			  o->cost_usd_per_iter == res->cost_usd_per_iter;
		if (tie ? plan_compare(&out->pareto[i].plan, plan) <= 0
			: o->throughput_it_s >= res->throughput_it_s &&
				  o->cost_usd_per_iter <= res->cost_usd_per_iter)
			return 0;
	}
	int kept = 0;
	for (int i = 0; i < out->pareto_count; i++) {
		const struct sl_sim_result *o = &out->pareto[i].result;
		if (res->throughput_it_s >= o->throughput_it_s &&
		    res->cost_usd_per_iter <= o->cost_usd_per_iter) {
			sl_plan_free(&out->pareto[i].plan);
			continue;
		}
		if (kept != i)
			move_candidate(&out->pareto[kept], &out->pareto[i]);
		kept++;
	}
	out->pareto_count = kept;
	if (out->pareto_count == rank->pareto_capacity) {
		int cap = rank->pareto_capacity ? 2 * rank->pareto_capacity : 16;
		struct sl_search_candidate *grown = realloc(out->pareto, (size_t)cap * sizeof(*grown));
		if (!grown)
			return sl_err_set(err, SL_ENOMEM, "out of memory for the Pareto frontier");
		out->pareto = grown;
		rank->pareto_capacity = cap;
	}
	struct sl_search_candidate *slot = &out->pareto[out->pareto_count];
	sl_plan_init(&slot->plan);
	int rc = store(slot, plan, res, err);
	if (!rc)
		out->pareto_count++;
	return rc;
}

int sl_ranking_consider(struct sl_ranking *rank, const struct sl_plan *plan,
			const struct sl_sim_result *res, struct sl_err *err)
{
	const struct sl_search_request *req = rank->req;
	struct sl_search_outcome *out = rank->out;
	if (!res->fits_memory)
		return 0;
	/* the frontier too holds only plans that meet the constraints: the search prunes by them,
	 * so one that misses them would be there or not by how tight a bound happened to be */
	if (!sl_search_meets(req, res))
		return 0;
	int rc = 0;
	if (req->pareto && (rc = consider_pareto(rank, plan, res, err)))
		return rc;
	if (out->count == rank->top_capacity &&
	    !candidate_better(req, plan, res, &out->best[out->count - 1]))
		return 0;
	for (int i = 0; i < out->count; i++) {
		if (!plan_compare(&out->best[i].plan, plan))
			return 0;
		if (!equivalent_plan(&out->best[i].plan, plan))
			continue;
		if (!candidate_better(req, plan, res, &out->best[i]))
			return 0;
		/* the newcomer replaces its twin: drop the twin, keeping its plan's memory for
		 * reuse (its figures are overwritten) */
		struct sl_plan twin = out->best[i].plan;
		for (int m = i; m + 1 < out->count; m++)
			move_candidate(&out->best[m], &out->best[m + 1]);
		out->best[out->count - 1].plan = twin;
		out->count--;
		break;
	}
	/* insert in order; the last one falls off when full */
	int pos = out->count < rank->top_capacity ? out->count : rank->top_capacity - 1;
	struct sl_plan spare = out->best[pos].plan;
	while (pos > 0 && candidate_better(req, plan, res, &out->best[pos - 1])) {
		move_candidate(&out->best[pos], &out->best[pos - 1]);
		pos--;
	}
	out->best[pos].plan = spare;
	rc = store(&out->best[pos], plan, res, err);
	if (!rc && out->count < rank->top_capacity)
		out->count++;
	return rc;
}

static int by_throughput_desc(const void *a, const void *b)
{
	const struct sl_search_candidate *x = a, *y = b;
	if (x->result.throughput_it_s != y->result.throughput_it_s)
		return x->result.throughput_it_s > y->result.throughput_it_s ? -1 : 1;
	return (x->result.cost_usd_per_iter > y->result.cost_usd_per_iter) -
	       (x->result.cost_usd_per_iter < y->result.cost_usd_per_iter);
}

void sl_ranking_finish(struct sl_ranking *rank)
{
	struct sl_search_outcome *out = rank->out;
	if (out->pareto_count > 1)
		qsort(out->pareto, (size_t)out->pareto_count, sizeof(*out->pareto), by_throughput_desc);
}

void sl_search_outcome_init(struct sl_search_outcome *outcome)
{
	memset(outcome, 0, sizeof(*outcome));
}

static void free_candidate(struct sl_search_candidate *c)
{
	if (c)
		sl_plan_free(&c->plan);
	free(c);
}

int sl_search_outcome_keep(struct sl_search_candidate **slot, const struct sl_search_candidate *from,
			   struct sl_err *err)
{
	struct sl_search_candidate *c = malloc(sizeof(*c));
	if (!c)
		return sl_err_set(err, SL_ENOMEM, "out of memory for a plan");
	sl_plan_init(&c->plan);
	int rc = sl_plan_copy(&c->plan, &from->plan, err);
	if (rc) {
		free_candidate(c);
		return rc;
	}
	c->result = from->result;
	free_candidate(*slot);
	*slot = c;
	return 0;
}

void sl_search_outcome_free(struct sl_search_outcome *outcome)
{
	if (outcome->best) {
		/* every slot up to the capacity may own memory (the spare of a full list) */
		for (int i = 0; i < outcome->best_capacity; i++)
			sl_plan_free(&outcome->best[i].plan);
		free(outcome->best);
	}
	for (int i = 0; i < outcome->pareto_count; i++)
		sl_plan_free(&outcome->pareto[i].plan);
	free(outcome->pareto);
	free_candidate(outcome->cheapest);
	free_candidate(outcome->fastest);
	memset(outcome, 0, sizeof(*outcome));
}
