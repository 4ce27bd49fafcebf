/* The planner over every sync mode, and the island plans' search: see islands_search.h. */
#include "search/islands_search.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "plan/microbatch_share.h"
#include "search/island_memo.h"
#include "search/offers.h"
#include "search/partition.h"
#include "search/ranking.h"
#include "search/search_state.h"
#include "util/clock.h"

const char *sl_sync_mode_name(enum sl_sync_mode mode)
{
	return mode == SL_SYNC_ISLANDS ? "islands" : mode == SL_SYNC_AUTO ? "auto" : "every-step";
}

/* Each island's best few synchronous plans name the shapes tried. */
#define SHAPES_PER_ISLAND 4
#define MAX_SHAPES 12
#define MAX_LAYOUTS 2
#define ISLAND_PARAM_COPIES 3.0

/* Islands drawn along borders: zone_island[z] is the island of zone z (-1: none). */
struct layout {
	int count;
	int zone_island[SL_MAX_ZONES];
};

/* Borders along regions, and (where some region has several zones) along zones. */
static int layouts_of(const struct sl_catalogue *cat, const struct sl_pool *pool,
		      struct layout *out)
{
	int zones[SL_MAX_ZONES];
	int zone_count = sl_pool_zones(pool, zones, SL_MAX_ZONES);
	int count = 0;
	for (int by_zone = 0; by_zone < 2; by_zone++) {
		struct layout *l = &out[count];
		int key_of_island[SL_MAX_ZONES];
		l->count = 0;
		for (int z = 0; z < SL_MAX_ZONES; z++)
			l->zone_island[z] = -1;
		for (int i = 0; i < zone_count; i++) {
			int key = by_zone ? zones[i] : cat->zones[zones[i]].region, found = -1;
			for (int k = 0; k < l->count; k++)
				found = key_of_island[k] == key ? k : found;
			if (found < 0) {
				found = l->count++;
				key_of_island[found] = key;
			}
			l->zone_island[zones[i]] = found;
		}
		int same_as_regions = by_zone && count == 1 && l->count == out[0].count;
		if (l->count >= 2 && l->count <= SL_ISLANDS_MAX_ISLANDS && !same_as_regions)
			count++;
	}
	return count;
}

static void island_pool(const struct sl_pool *pool, const struct layout *l, int island,
			struct sl_pool *out)
{
	*out = *pool;
	for (int g = 0; g < SL_MAX_GPU_TYPES; g++)
		for (int z = 0; z < SL_MAX_ZONES; z++)
			if (l->zone_island[z] != island)
				out->counts[g][z] = 0;
}

/* An island's own synchronous search: req's objective and cost model, no constraints (they
 * apply to the whole plan), top_k plans, this global batch, maybe a pinned shape. reserved is the
 * environment with room for the outer step (layout_search.reserved). */
static struct sl_search_request island_request(const struct sl_search_request *req,
					       long long global_batch, int top_k,
					       const struct sl_search_shape *shape)
{
	struct sl_search_request sub = *req;
	sub.max_cost_usd_per_iter = 0;
	sub.min_throughput_it_s = 0;
	sub.top_k = top_k;
	sub.pareto = 0;
	sub.global_batch = global_batch;
	sub.only_shape = shape;
	sub.sync = SL_SYNC_EVERY_STEP;
	return sub;
}

static int island_search(const struct sl_sim_env *reserved, const struct sl_pool *pool,
			 const struct sl_search_request *req, long long global_batch, int top_k,
			 const struct sl_search_shape *shape, int exhaustive,
			 struct sl_search_outcome *out, long long *simulated, struct sl_err *err)
{
	struct sl_search_request sub = island_request(req, global_batch, top_k, shape);
	int rc = exhaustive ? sl_search_exhaustive(reserved, pool, &sub, out, err)
			    : sl_search_run(reserved, pool, &sub, out, err);
	*simulated += out->plans_simulated;
	if (rc == SL_EINFEASIBLE) { /* nothing of this island fits: it stays idle */
		err->code = 0;
		err->msg[0] = 0;
		return 0;
	}
	return rc;
}

/* One island's search within the island search, and what it found. */
struct island_task {
	const struct sl_pool *pool;
	const struct sl_search_request *req;
	long long global_batch;
	int top_k;
	const struct sl_search_shape *shape;  /* NULL: every shape (a survey) */
	struct sl_search_outcome out;
	long long simulated;
	int rc;
	struct sl_err err;
};

static void run_task(const struct sl_sim_env *reserved, struct island_task *t, int exhaustive)
{
	t->rc = island_search(reserved, t->pool, t->req, t->global_batch, t->top_k, t->shape,
			      exhaustive, &t->out, &t->simulated, &t->err);
}

/* tasks[0..n-1] searched side by side, each on one thread (a search inside a parallel region
 * runs on its caller's: search.c), so each one's work is what it would be alone: on one thread
 * (SAILOR_THREADS=1) the counts are the same however the tasks fall into batches. A task that an
 * earlier search stands for takes that one's plans instead, unless the memo is off (the oracle
 * searches every island; island_memo.h). Adds their plans simulated to *simulated; returns the
 * first failed task's error, in task order. Every task's outcome is initialised, for the caller
 * to free. */
static int run_tasks(const struct sl_sim_env *reserved, struct sl_island_memo *memo,
		     struct island_task *tasks, int n, int exhaustive, long long *simulated,
		     struct sl_err *err)
{
	struct sl_island_task_key *wanted = n ? malloc((size_t)n * sizeof(*wanted)) : NULL;
	int *source = n ? malloc((size_t)n * sizeof(int)) : NULL; /* -1: searched here */
	int *zone = n ? malloc((size_t)n * sizeof(int)) : NULL;
	int *to_search = n ? malloc((size_t)n * sizeof(int)) : NULL;
	if (n && (!wanted || !source || !zone || !to_search)) {
		free(wanted);
		free(source);
		free(zone);
		free(to_search);
		return sl_err_set(err, SL_ENOMEM, "out of memory for the island search");
	}
	int search_count = 0, types = reserved->catalogue.gpu_count;
	enum sl_cost_model cm = n ? tasks[0].req->cost_model : SL_COST_SAILOR;
	for (int i = 0; i < n; i++) {
		struct island_task *t = &tasks[i];
		sl_search_outcome_init(&t->out);
		t->simulated = 0;
		t->rc = 0;
		t->err = (struct sl_err){0};
		source[i] = -1;
		if (!memo->enabled) {
			to_search[search_count++] = i;
			continue;
		}
		/* a search of the memo's, else one of this batch's (its k-th search goes into
		 * the memo after memo->count's others) */
		sl_island_memo_key(t->pool, t->req, t->global_batch, t->top_k, t->shape, types,
				   &wanted[i]);
		for (int d = 0; d < memo->count && source[i] < 0; d++)
			if ((zone[i] = sl_island_memo_stands_for(memo, cm, &memo->done[d].task,
								 &wanted[i])) >= 0)
				source[i] = d;
		for (int k = 0; k < search_count && source[i] < 0; k++)
			if ((zone[i] = sl_island_memo_stands_for(memo, cm, &wanted[to_search[k]],
								 &wanted[i])) >= 0)
				source[i] = memo->count + k; /* sl_island_memo_add puts it there */
		if (source[i] < 0)
			to_search[search_count++] = i;
	}
	/* one search alone runs outside any parallel construct, on every thread (search.c): the
	 * surveys of a layout's smallest island, or of a region's, come one at a time. Not in a
	 * region made inactive by an if clause: OpenMP counts a team started inside one as nested,
	 * and libgomp starts fresh threads for every such team (80-120 us each here, against 8 us
	 * for one at the top level), and a search starts several. */
	int threads = search_count > 1 ? sl_search_threads() : 1;
	if (threads > 1) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
		for (int k = 0; k < search_count; k++)
			run_task(reserved, &tasks[to_search[k]], exhaustive);
	} else {
		for (int k = 0; k < search_count; k++)
			run_task(reserved, &tasks[to_search[k]], exhaustive);
	}
	int rc = 0;
	memo->made += search_count;
	/* this batch's searches into the memo, in order (the k-th after the memo's earlier ones) */
	for (int k = 0; memo->enabled && k < search_count && !rc; k++) {
		struct island_task *t = &tasks[to_search[k]];
		if (t->rc) /* failed: stands for nothing (its error is returned below) */
			wanted[to_search[k]].pool.zone_count = -1;
		struct sl_search_request sub =
			island_request(t->req, t->global_batch, t->top_k, t->shape);
		rc = sl_island_memo_add(memo, &wanted[to_search[k]], &sub, &t->out, err);
	}
	for (int i = 0; i < n && !rc; i++) {
		if (source[i] < 0)
			continue;
		struct island_task *t = &tasks[i];
		struct sl_search_request sub =
			island_request(t->req, t->global_batch, t->top_k, t->shape);
		int equal = 0;
		rc = sl_island_memo_copy(memo, &memo->done[source[i]], zone[i], &sub, &t->out,
					 &t->simulated, &equal, err);
		if (!rc && !equal) {
			t->rc = island_search(reserved, t->pool, t->req, t->global_batch, t->top_k,
					      t->shape, exhaustive, &t->out, &t->simulated, &t->err);
			memo->made++;
		} else if (!rc) {
			memo->reused++;
		}
	}
	for (int i = 0; i < n; i++) {
		*simulated += tasks[i].simulated;
		if (!rc && tasks[i].rc) {
			rc = tasks[i].rc;
			*err = tasks[i].err;
		}
	}
	free(wanted);
	free(source);
	free(zone);
	free(to_search);
	return rc;
}

static void free_tasks(struct island_task *tasks, int n)
{
	for (int i = 0; tasks && i < n; i++)
		sl_search_outcome_free(&tasks[i].out);
	free(tasks);
}

static void shape_of(const struct sl_plan *plan, struct sl_search_shape *s)
{
	memset(s, 0, sizeof(*s));
	s->micro_batch = plan->micro_batch;
	s->num_stages = plan->num_stages;
	for (int k = 0; k < plan->num_stages; k++)
		s->first[k] = plan->stages[k].first_layer;
	s->first[plan->num_stages] = plan->stages[plan->num_stages - 1].last_layer + 1;
}

/* What the search of one layout keeps between its steps. */
struct layout_search {
	const struct sl_sim_env *env;
	const struct sl_search_request *req;
	const struct sl_token_value *tv;
	long long global_batch;
	struct sl_ranking *ranks[3];              /* the result, and what is possible without the
						   * constraints (cheapest, fastest) */
	struct sl_offers *offers;                 /* not NULL: the result's offers wait here */
	long long *simulated;
	int n;                                    /* islands with a plan */
	struct sl_pool *pools;                    /* [n] (room for every island of the layout) */
	double samples_per_s[SL_ISLANDS_MAX_ISLANDS]; /* each one's best plan's, whole batch */
	struct sl_search_shape shapes[MAX_SHAPES];
	int shape_count;
	int exhaustive;                           /* the oracle: every shape, brute force per island */
	/* the environment of the islands' searches: room for the outer step, the global weights,
	 * the outer momentum and one fragment in flight, the most any choice of fragments and
	 * overlap holds (sim/islands.c) */
	struct sl_sim_env *reserved;
	struct sl_island_memo *memo;
};

/* The surveys of tasks[0..n-1] (island i has gpus[i] GPUs). A shape every island can hold has at
 * most as many stages as the smallest island has GPUs, so the surveys look no deeper and their
 * shapes can be common. But an island that holds no plan takes no part in the island plan, and a
 * region of a few small GPUs must not keep the others shallow: the smallest islands are surveyed
 * first (one search can look no deeper than its GPUs anyway), and the bound is the GPU count of
 * the smallest that holds a plan; then the larger ones, side by side, under it. */
static int survey_bounded(struct layout_search *ls, struct island_task *tasks,
			  const long long *gpus, int n, struct sl_err *err)
{
	struct sl_search_request survey_req = *ls->req;
	const int asked = ls->req->max_stages;
	struct island_task batch[SL_ISLANDS_MAX_ISLANDS];
	int index[SL_ISLANDS_MAX_ISLANDS], rc = 0, found = 0;
	long long surveyed_up_to = 0; /* the islands of at most this many GPUs are surveyed */
	while (!rc) {
		long long smallest = -1;
		for (int i = 0; i < n; i++)
			if (gpus[i] > surveyed_up_to && (smallest < 0 || gpus[i] < smallest))
				smallest = gpus[i];
		if (smallest < 0)
			break;
		/* until one holds a plan: the smallest left, at its own depth; then all the rest */
		if (!found)
			survey_req.max_stages = asked > 0 && asked <= smallest ? asked : (int)smallest;
		int count = 0;
		for (int i = 0; i < n; i++)
			if (gpus[i] > surveyed_up_to && (found || gpus[i] == smallest))
				index[count++] = i;
		for (int k = 0; k < count; k++) {
			batch[k] = tasks[index[k]];
			batch[k].req = &survey_req;
		}
		rc = run_tasks(ls->reserved, ls->memo, batch, count, ls->exhaustive, ls->simulated,
			       err);
		for (int k = 0; k < count; k++) {
			tasks[index[k]] = batch[k];
			tasks[index[k]].req = NULL; /* survey_req ends with this function */
			found |= batch[k].out.count > 0;
			if (gpus[index[k]] > surveyed_up_to)
				surveyed_up_to = gpus[index[k]];
		}
	}
	return rc;
}

/* Step 1-2: the islands with a plan, their speed, the shapes their best plans have. */
static int survey(struct layout_search *ls, const struct sl_pool *pool, const struct layout *l,
		  struct sl_err *err)
{
	ls->n = 0;
	ls->shape_count = 0;
	/* every island's pool, those with a plan then kept at the front: on the heap, for a pool
	 * is 32 KB (every zone of the catalogue), and stack pages touched for the first time are
	 * page faults, dear on a virtual machine (util/heap_pages.h) */
	struct sl_pool *pools = realloc(ls->pools, (size_t)l->count * sizeof(*pools));
	if (pools)
		ls->pools = pools;
	struct island_task *tasks = calloc((size_t)l->count, sizeof(*tasks));
	if (!tasks || !pools) {
		free(tasks);
		return sl_err_set(err, SL_ENOMEM, "out of memory for the island search");
	}
	long long gpus[SL_ISLANDS_MAX_ISLANDS];
	for (int i = 0; i < l->count; i++) {
		island_pool(pool, l, i, &pools[i]);
		gpus[i] = sl_pool_total(&pools[i]);
		tasks[i] = (struct island_task){.pool = &pools[i], .global_batch = ls->global_batch,
						.top_k = SHAPES_PER_ISLAND};
	}
	int rc = survey_bounded(ls, tasks, gpus, l->count, err);
	for (int i = 0; i < l->count && !rc; i++) {
		const struct sl_search_outcome *out = &tasks[i].out;
		if (out->count == 0)
			continue;
		for (int c = 0; c < out->count; c++) {
			struct sl_search_shape s;
			shape_of(&out->best[c].plan, &s);
			int seen = 0;
			for (int k = 0; k < ls->shape_count; k++)
				seen |= !memcmp(&ls->shapes[k], &s, sizeof(s));
			if (!seen && ls->shape_count < MAX_SHAPES)
				ls->shapes[ls->shape_count++] = s;
		}
		/* the speed of the island's best plan sets its share of the batch */
		if (ls->n != i)
			ls->pools[ls->n] = pools[i];
		ls->samples_per_s[ls->n++] = out->best[0].result.samples_per_s;
	}
	free_tasks(tasks, l->count);
	return rc;
}

/* The global batch of shape s split in proportion to the islands' speed, in whole micro-batches;
 * 0 when some island would get none. */
static int split_batch(const struct layout_search *ls, int mbs, long long *batch)
{
	double total = 0;
	for (int i = 0; i < ls->n; i++)
		total += ls->samples_per_s[i];
	long long sum = 0;
	int largest = 0;
	for (int i = 0; i < ls->n; i++) {
		long long m = llround((double)ls->global_batch * ls->samples_per_s[i] / total / mbs);
		batch[i] = m * mbs;
		sum += batch[i];
		largest = batch[i] > batch[largest] ? i : largest;
	}
	batch[largest] += ls->global_batch - sum; /* G and every batch are multiples of mbs */
	for (int i = 0; i < ls->n; i++)
		if (batch[i] < mbs)
			return 0;
	return 1;
}

/* Step 3's plan: the islands' plans of one shape side by side, the fastest island first, each
 * pipeline with its island's micro-batch counts; per stage the most recomputation and ZeRO-1
 * where any island has them. */
static int compose(const struct layout_search *ls, struct sl_search_candidate *const *parts,
		   const long long *batch, struct sl_plan *out, struct sl_err *err)
{
	int order[SL_ISLANDS_MAX_ISLANDS], D = 0;
	for (int i = 0; i < ls->n; i++) {
		int pos = i;
		while (pos > 0 && parts[order[pos - 1]]->result.iteration_time_s >
					  parts[i]->result.iteration_time_s) {
			order[pos] = order[pos - 1];
			pos--;
		}
		order[pos] = i;
		D += parts[i]->plan.num_pipelines;
	}
	const struct sl_plan *first = &parts[order[0]]->plan;
	int P = first->num_stages;
	int rc = sl_plan_reserve(out, P, D, err);
	struct sl_plan_islands *isl = rc ? NULL : sl_islands_alloc(ls->n, D);
	if (!rc && !isl)
		rc = sl_err_set(err, SL_ENOMEM, "out of memory for the island search");
	if (rc)
		return rc;
	memcpy(out->stages, first->stages, sizeof(out->stages));
	out->micro_batch = first->micro_batch;
	out->format = first->format;
	out->global_batch = ls->global_batch;
	out->uneven_microbatches = 1;
	for (int o = 0, j = 0; o < ls->n && !rc; o++) {
		const struct sl_plan *p = &parts[order[o]]->plan;
		rc = sl_plan_microbatch_counts(p, batch[order[o]], out->microbatches + j, err);
		for (int k = 0; k < P; k++) {
			if (p->stages[k].recompute > out->stages[k].recompute)
				out->stages[k].recompute = p->stages[k].recompute;
			out->stages[k].zero |= p->stages[k].zero;
		}
		for (int d = 0; d < p->num_pipelines; d++, j++) {
			for (int k = 0; k < P; k++)
				*sl_plan_replica(out, k, j) = *sl_plan_replica(p, k, d);
			isl->island_of[j] = o;
		}
	}
	isl->outer_lr = SL_ISLANDS_DEFAULT_OUTER_LR;
	isl->outer_momentum = SL_ISLANDS_DEFAULT_OUTER_MOMENTUM;
	isl->merge = SL_ISLANDS_DEFAULT_MERGE;
	isl->fragments = 1;
	free(out->islands);
	out->islands = isl;
	return rc;
}

/* One shape's island plan, composed and its outer step chosen (try_shapes). */
struct composed {
	struct sl_plan plan;
	struct sl_sim_result best;
	long long simulated;
	int rc;
	struct sl_err err;
};

/* Step 3-4 for shapes[0..count-1]: every island's plan of each shape searched side by side; then
 * shape by shape, in order, the islands' plans composed, the outer step chosen, the plan offered
 * (a shape that some island cannot run is dropped). */
static int try_shapes(struct layout_search *ls, const struct sl_search_shape *shapes, int count,
		      struct sl_err *err)
{
	int n = ls->n, task_count = 0;
	long long (*batch)[SL_ISLANDS_MAX_ISLANDS] = calloc((size_t)count, sizeof(*batch));
	int *first_task = malloc((size_t)count * sizeof(int));
	struct island_task *tasks = calloc((size_t)count * (size_t)n, sizeof(*tasks));
	if (!batch || !first_task || !tasks) {
		free(batch);
		free(first_task);
		free(tasks);
		return sl_err_set(err, SL_ENOMEM, "out of memory for the island search");
	}
	for (int s = 0; s < count; s++) {
		first_task[s] = -1;
		if (!split_batch(ls, shapes[s].micro_batch, batch[s]))
			continue;
		first_task[s] = task_count;
		for (int i = 0; i < n; i++)
			tasks[task_count++] = (struct island_task){
				.pool = &ls->pools[i], .req = ls->req, .global_batch = batch[s][i],
				.top_k = 1, .shape = &shapes[s]};
	}
	int rc = run_tasks(ls->reserved, ls->memo, tasks, task_count, ls->exhaustive,
			   ls->simulated, err);
	/* the shapes every island holds a plan of, composed and their outer steps chosen side by
	 * side (each is on its own), then offered in shape order */
	int *whole = rc ? NULL : malloc((size_t)count * sizeof(int));
	int whole_count = 0;
	if (!rc && !whole)
		rc = sl_err_set(err, SL_ENOMEM, "out of memory for the island search");
	for (int s = 0; s < count && !rc; s++) {
		int complete = first_task[s] >= 0;
		for (int i = 0; i < n && complete; i++)
			complete = tasks[first_task[s] + i].out.count > 0;
		if (complete)
			whole[whole_count++] = s;
	}
	struct composed *done = whole_count ? calloc((size_t)whole_count, sizeof(*done)) : NULL;
	if (!rc && whole_count && !done)
		rc = sl_err_set(err, SL_ENOMEM, "out of memory for the island search");
	int threads = !rc && whole_count > 1 ? sl_search_threads() : 1;
#pragma omp parallel for if (threads > 1) num_threads(threads) schedule(dynamic, 1)
	for (int w = 0; w < (rc ? 0 : whole_count); w++) {
		int s = whole[w];
		struct composed *c = &done[w];
		struct sl_search_candidate *parts[SL_ISLANDS_MAX_ISLANDS];
		for (int i = 0; i < n; i++)
			parts[i] = &tasks[first_task[s] + i].out.best[0];
		sl_plan_init(&c->plan);
		c->rc = compose(ls, parts, batch[s], &c->plan, &c->err);
		if (!c->rc)
			c->rc = sl_search_choose_outer(ls->env, ls->req, ls->tv, ls->global_batch,
						       &c->plan, &c->best, &c->simulated, &c->err);
	}
	for (int w = 0; w < whole_count && done; w++) {
		struct composed *c = &done[w];
		*ls->simulated += c->simulated;
		if (!rc && c->rc) {
			rc = c->rc;
			*err = c->err;
		}
		for (int r = 0; !rc && c->best.fits_memory && r < 3; r++)
			rc = r == 0 && ls->offers
				     ? sl_offers_add(ls->offers, &c->plan, &c->best, err)
				     : sl_ranking_consider(ls->ranks[r], &c->plan, &c->best, err);
		sl_plan_free(&c->plan);
	}
	free(done);
	free(whole);
	free_tasks(tasks, task_count);
	free(batch);
	free(first_task);
	return rc;
}

/* The oracle's shapes: every micro-batch size that divides the global batch, depth and
 * contiguous partition (as sl_search_exhaustive's). */
struct every_shape_ctx {
	struct layout_search *ls;
	int mbs;
	struct sl_err *err;
};

static int visit_shape(const struct sl_partition *part, void *vctx)
{
	struct every_shape_ctx *c = vctx;
	struct sl_search_shape s = {.micro_batch = c->mbs, .num_stages = part->num_stages};
	memcpy(s.first, part->first, sizeof(int) * (size_t)(part->num_stages + 1));
	return try_shapes(c->ls, &s, 1, c->err);
}

static int every_shape(struct layout_search *ls, struct sl_err *err)
{
	int L = ls->env->num_layers, rc = 0;
	int max_stages = ls->req->max_stages > 0 && ls->req->max_stages < L ? ls->req->max_stages : L;
	for (int mbs = 1; !rc && mbs <= ls->global_batch && mbs <= 1024 &&
			  ls->global_batch % mbs == 0; mbs *= 2) {
		struct every_shape_ctx c = {ls, mbs, err};
		for (int P = 1; P <= max_stages && !rc; P++)
			rc = sl_partition_each(L, P, visit_shape, &c);
	}
	return rc;
}

/* The island phase of one planning: what it is given and what it found. */
struct island_phase {
	const struct layout *layouts;
	int layout_count;
	const struct sl_token_value *tv;
	struct sl_ranking *ranks[3];  /* the result's, and the relaxed ones (cheapest, fastest) */
	struct sl_offers *offers;     /* not NULL: the result's offers kept for later */
	int exhaustive;
	int most_islands;             /* islands with a plan of their own, in the best layout */
	long long simulated;
	struct sl_search_stats stats;
	double time_s;
};

/* Steps 1-4 over every layout of the pool. */
static int search_islands(const struct sl_sim_env *env, const struct sl_pool *pool,
			  const struct sl_search_request *req, struct island_phase *ip,
			  struct sl_err *err)
{
	double start_s = sl_now_s();
	struct layout_search *ls = calloc(1, sizeof(*ls));
	struct sl_sim_env *reserved = malloc(sizeof(*reserved));
	if (!ls || !reserved) {
		free(ls);
		free(reserved);
		return sl_err_set(err, SL_ENOMEM, "out of memory for the island search");
	}
	*reserved = *env;
	reserved->reserve_param_copies = ISLAND_PARAM_COPIES;
	*ls = (struct layout_search){.env = env, .req = req, .tv = ip->tv, .offers = ip->offers,
				     .simulated = &ip->simulated, .reserved = reserved};
	for (int r = 0; r < 3; r++)
		ls->ranks[r] = ip->ranks[r];
	ls->global_batch = req->global_batch > 0 ? req->global_batch
						 : env->model.default_global_batch;
	ls->exhaustive = ip->exhaustive;
	struct sl_island_memo memo = {.env = reserved, .enabled = !ip->exhaustive};
	ls->memo = &memo;
	int rc = 0;
	for (int l = 0; l < ip->layout_count && !rc; l++) {
		rc = survey(ls, pool, &ip->layouts[l], err);
		ip->most_islands = ls->n > ip->most_islands ? ls->n : ip->most_islands;
		if (!rc && ls->n >= 2 && ip->exhaustive)
			rc = every_shape(ls, err);
		if (!rc && ls->n >= 2 && !ip->exhaustive)
			rc = try_shapes(ls, ls->shapes, ls->shape_count, err);
	}
	ip->stats.island_searches += memo.made;
	ip->stats.island_searches_reused += memo.reused;
	sl_island_memo_free(&memo);
	free(ls->pools);
	free(ls);
	free(reserved);
	ip->time_s = sl_now_s() - start_s;
	return rc;
}

/* Offers every plan of a synchronous outcome to rank. */
static int offer_outcome(struct sl_ranking *rank, const struct sl_search_outcome *from,
			 struct sl_err *err)
{
	int rc = 0;
	for (int i = 0; i < from->count && !rc; i++)
		rc = sl_ranking_consider(rank, &from->best[i].plan, &from->best[i].result, err);
	for (int i = 0; i < from->pareto_count && !rc; i++)
		rc = sl_ranking_consider(rank, &from->pareto[i].plan, &from->pareto[i].result, err);
	return rc;
}

/* from (when there is one) as what is possible (*slot). */
static int keep_possible(const struct sl_search_candidate *from, struct sl_search_candidate **slot,
			 struct sl_err *err)
{
	return from ? sl_search_outcome_keep(slot, from, err) : 0;
}

/* The synchronous outcome's figures, the island phase's, what is possible. */
static int finish(const struct sl_search_request *req, struct sl_search_outcome *sync_out,
		  struct sl_search_outcome *relaxed, struct sl_search_outcome *out,
		  const struct island_phase *ip, struct sl_err *err)
{
	out->stats = sync_out->stats;
	out->stats.simulated[SL_PHASE_ISLANDS] += ip->simulated;
	out->stats.island_searches += ip->stats.island_searches;
	out->stats.island_searches_reused += ip->stats.island_searches_reused;
	out->stats.time_s[SL_PHASE_ISLANDS] += ip->time_s;
	out->plans_simulated = 0;
	for (int ph = 0; ph < SL_SEARCH_PHASES; ph++)
		out->plans_simulated += out->stats.simulated[ph];
	int rc = 0;
	if (out->count == 0)
		rc = keep_possible(sync_out->cheapest, &out->cheapest, err);
	if (out->count == 0 && !rc)
		rc = keep_possible(sync_out->fastest, &out->fastest, err);
	/* an island plan is possible where no synchronous one was */
	if (out->count == 0 && !rc && req->max_cost_usd_per_iter > 0 && !out->cheapest)
		rc = keep_possible(relaxed[0].count ? &relaxed[0].best[0] : NULL, &out->cheapest,
				   err);
	if (out->count == 0 && !rc && req->min_throughput_it_s > 0 && !out->fastest)
		rc = keep_possible(relaxed[1].count ? &relaxed[1].best[0] : NULL, &out->fastest, err);
	return rc;
}

static int plan_with(const struct sl_sim_env *env, const struct sl_pool *pool,
		     const struct sl_search_request *req, int exhaustive,
		     struct sl_search_outcome *outcome, struct sl_err *err);

/* With --sync auto, the synchronous search (into sync_out, its plans offered to the result's
 * ranking first), then the island phase. Inside a parallel region (a trace's steps side by
 * side, cmd_plan.c) the two run as tasks side by side, so that a core done with its own step
 * takes either: the island plans for the result then wait in order (offers.h) until the
 * synchronous ones are offered, and the error reported is the one the synchronous search, then
 * the island phase, would have stopped at. One after the other otherwise, each on every core. */
static int sync_and_islands(const struct sl_sim_env *env, const struct sl_pool *pool,
			    const struct sl_search_request *req, struct island_phase *ip,
			    struct sl_search_outcome *sync_out, struct sl_err *err)
{
	struct sl_search_request sync = *req;
	sync.sync = SL_SYNC_EVERY_STEP;
	int rc = 0;
	if (req->sync != SL_SYNC_AUTO || !omp_in_parallel()) {
		if (req->sync == SL_SYNC_AUTO)
			rc = plan_with(env, pool, &sync, ip->exhaustive, sync_out, err);
		if (!rc)
			rc = offer_outcome(ip->ranks[0], sync_out, err);
		return rc ? rc : search_islands(env, pool, req, ip, err);
	}
	struct sl_offers offers = {0};
	struct sl_err sync_err = {0}, island_err = {0};
	int sync_rc = 0;
	ip->offers = &offers;
#pragma omp task default(shared)
	sync_rc = plan_with(env, pool, &sync, ip->exhaustive, sync_out, &sync_err);
	int island_rc = search_islands(env, pool, req, ip, &island_err);
#pragma omp taskwait
	ip->offers = NULL;
	if (sync_rc || island_rc) {
		rc = sync_rc ? sync_rc : island_rc;
		*err = sync_rc ? sync_err : island_err;
	}
	if (!rc)
		rc = offer_outcome(ip->ranks[0], sync_out, err);
	if (!rc)
		rc = sl_offers_make(&offers, ip->ranks[0], err);
	sl_offers_free(&offers);
	return rc;
}

static int plan_with(const struct sl_sim_env *env, const struct sl_pool *pool,
		     const struct sl_search_request *req, int exhaustive,
		     struct sl_search_outcome *outcome, struct sl_err *err)
{
	if (req->sync == SL_SYNC_EVERY_STEP)
		return exhaustive ? sl_search_exhaustive(env, pool, req, outcome, err)
				  : sl_search_run(env, pool, req, outcome, err);
	sl_search_outcome_init(outcome);
	if (req->cost_model == SL_COST_SOSP25)
		return sl_err_set(err, SL_EINPUT, "--sync %s: the sosp25 cost model has no islands (the "
				  "SOSP'25 simulator models synchronous plans only): plan with "
				  "--cost-model sailor, or --sync every-step", sl_sync_mode_name(req->sync));
	struct layout layouts[MAX_LAYOUTS];
	int layout_count = layouts_of(&env->catalogue, pool, layouts);
	if (layout_count == 0 && req->sync == SL_SYNC_ISLANDS) {
		int zones[SL_MAX_ZONES];
		int n = sl_pool_zones(pool, zones, SL_MAX_ZONES);
		return sl_err_set(err, SL_EINPUT, "--sync islands: the pool's GPUs are all in zone %s: "
				  "there is no slow link to cut into islands; plan with --sync "
				  "every-step (or auto)", n ? env->catalogue.zones[zones[0]].name : "?");
	}
	if (layout_count == 0) { /* auto on one zone: only synchronous plans exist */
		struct sl_search_request sync = *req;
		sync.sync = SL_SYNC_EVERY_STEP;
		return plan_with(env, pool, &sync, exhaustive, outcome, err);
	}
	struct sl_token_value shipped;
	const struct sl_token_value *tv = req->token_value;
	int rc = 0;
	if (!tv && !(rc = sl_token_value_load_default(&shipped, err)))
		tv = &shipped;
	if (rc)
		return rc;
	double start_s = sl_now_s();
	struct sl_search_outcome sync_out, relaxed[2];
	sl_search_outcome_init(&sync_out);
	struct sl_search_request relaxed_req[2] = {*req, *req};
	struct sl_ranking rank, relaxed_rank[2];
	rc = sl_ranking_init(&rank, req, outcome, err);
	for (int r = 0; r < 2; r++) {
		relaxed_req[r].max_cost_usd_per_iter = relaxed_req[r].min_throughput_it_s = 0;
		relaxed_req[r].top_k = 1;
		relaxed_req[r].pareto = 0;
		relaxed_req[r].objective = r == 0 ? SL_OBJECTIVE_COST : SL_OBJECTIVE_THROUGHPUT;
		sl_search_outcome_init(&relaxed[r]);
		if (!rc)
			rc = sl_ranking_init(&relaxed_rank[r], &relaxed_req[r], &relaxed[r], err);
	}
	struct island_phase ip = {.layouts = layouts, .layout_count = layout_count, .tv = tv,
				  .ranks = {&rank, &relaxed_rank[0], &relaxed_rank[1]},
				  .exhaustive = exhaustive};
	if (!rc)
		rc = sync_and_islands(env, pool, req, &ip, &sync_out, err);
	if (!rc && req->sync == SL_SYNC_ISLANDS && !relaxed[0].count)
		rc = sl_err_set(err, SL_EINFEASIBLE, "--sync islands: no island plan on this pool: %s; "
				"plan with --sync every-step or auto", ip.most_islands < 2
				? "fewer than two of its regions (or zones) can hold the model on their "
				  "own GPUs"
				: "no plan of a shape every island holds fits with the outer step's two "
				  "more copies of the parameters (and one fragment in flight)");
	if (!rc) {
		sl_ranking_finish(&rank);
		rc = finish(req, &sync_out, relaxed, outcome, &ip, err);
	}
	outcome->search_time_s = sl_now_s() - start_s;
	sl_search_outcome_free(&sync_out);
	sl_search_outcome_free(&relaxed[0]);
	sl_search_outcome_free(&relaxed[1]);
	return rc;
}

int sl_search_plan(const struct sl_sim_env *env, const struct sl_pool *pool,
		   const struct sl_search_request *req, struct sl_search_outcome *outcome,
		   struct sl_err *err)
{
	return plan_with(env, pool, req, 0, outcome, err);
}

int sl_search_plan_exhaustive(const struct sl_sim_env *env, const struct sl_pool *pool,
			      const struct sl_search_request *req,
			      struct sl_search_outcome *outcome, struct sl_err *err)
{
	return plan_with(env, pool, req, 1, outcome, err);
}
