/* The simulator for plans with islands (sim.h, docs/design/islands.md#what-the-simulator-predicts):
 * each island is its own synchronous plan (its pipelines, its share of the global batch),
 * simulated as any plan; the outer exchange is counted transfer by transfer
 * (plan/outer_bytes.h), timed on the network's links and priced at their egress; a round lasts
 * as long as the slowest island's inner steps plus what it waits on the exchange.
 *
 * Timing of a round's exchange: a transfer takes its link's point-to-point time, and no less than
 * the link's two-rank all-reduce rate at what the pair moves each way (both phases; the exchange
 * loads a link both ways at once). An outer group's member sends its transfers of a phase one after
 * another (one link out of its host), so a phase lasts the longest member's sum; the two phases
 * follow each other; groups run side by side, the slowest sets the round's exchange time E. Groups
 * whose members share a host (the cluster's placement, plan/placement.h: several pipelines of an
 * island, or the TP lanes of a replica, on one host) share its link to a zone (the fits are per
 * zone pair from a host; the testbed shapes each host's traffic per destination zone): a phase
 * lasts at least the sum of every transfer that leaves one host for one zone in it.
 * A fragment's exchange takes X = E / F plus two link latencies of its own (the bytes split, the
 * messages do not).
 * Without overlap every island waits for every fragment: stall = E plus the latencies. With
 * overlap tau, a fragment's exchange runs during the island's next tau inner steps; but at the
 * round end, before the stop agreement, the runtime finishes the first phase of every exchange
 * still in flight and starts its second (sl_outer_sync_round_end: no island may be left waiting
 * on a phase 1 while another is in the agreement), and the agreement's messages cross the links
 * between islands behind that second phase's bytes (one queue per host and zone): an exchange in
 * flight at the round end is over when the agreement is. Fragment f of island i is synced
 * d = floor(f H_i / F) steps before its round end; when d < tau it is in flight there and the
 * island stalls max(0, X - d t_i), else (it lands before the round end) max(0, X - tau t_i).
 * Fragment 0 is synced at the round end itself, so with overlap its exchange is never hidden.
 * Every round ends with the stop agreement over the world: one round trip of the slowest link
 * between islands.
 * Memory (runtime/outer_sync.c's buffers, all allocated at the start and used every round): every
 * rank holds two more copies of its parameter shard (global weights, outer momentum) and one
 * fragment's lane vector in fp32 (the scratch of the pseudo-gradient); a rank that carries a
 * piece over the links between islands (the first Q pipelines of every island, Q the fewest of
 * an island) holds, for every fragment, its piece encoded to send, the n chunks received, the
 * averaged chunk and the n averaged chunks gathered: (3 + 1/n) pieces in the wire's bytes, the
 * pieces of all fragments together being the lane over Q. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/microbatch_share.h"
#include "plan/outer_bytes.h"
#include "plan/placement.h"
#include "sim/internal.h"

/* Island i's own plan: the plan's stages, the island's pipelines, their micro-batches. */
static int island_plan(const struct sl_plan *plan, const int *counts, int island,
		       struct sl_plan *out, struct sl_err *err)
{
	const struct sl_plan_islands *isl = plan->islands;
	int D = 0;
	for (int j = 0; j < plan->num_pipelines; j++)
		D += isl->island_of[j] == island;
	int rc = sl_plan_reserve(out, plan->num_stages, D, err);
	if (rc)
		return rc;
	memcpy(out->stages, plan->stages, sizeof(out->stages));
	snprintf(out->model, sizeof(out->model), "%s", plan->model);
	snprintf(out->path, sizeof(out->path), "%s", plan->path);
	out->micro_batch = plan->micro_batch;
	out->format = plan->format;
	out->uneven_microbatches = 1;
	long long samples = 0;
	for (int j = 0, d = 0; j < plan->num_pipelines; j++) {
		if (isl->island_of[j] != island)
			continue;
		for (int k = 0; k < plan->num_stages; k++)
			*sl_plan_replica(out, k, d) = *sl_plan_replica(plan, k, j);
		out->microbatches[d++] = counts[j];
		samples += (long long)counts[j] * plan->micro_batch;
	}
	out->global_batch = samples;
	return 0;
}

/* A round's exchange, link by link. */
struct exchange {
	const struct sl_sim_env *env;
	int n;
	long long group;            /* the group being summed */
	double phase_s[2][SL_ISLANDS_MAX_ISLANDS]; /* its members' send time per phase */
	double slowest_s;           /* over the groups so far: phase 1 + phase 2 */
	double latency_s;           /* the largest link latency met */
	double egress_usd;
	const struct sl_role_table *roles; /* placed on the cluster's hosts; NULL: no cluster */
	int hosts, zones;
	double *host_phase_s;       /* [(phase * hosts + host) * zones + zone]: every group's sends
				     * out of the host to the zone */
	double *host_bytes;         /* [host * zones + zone]: every group's bytes out of the host
				     * to the zone, both phases (a first visit counts them) */
};

/* The first visit: what leaves each host for each zone over the whole exchange. */
static void count_host_bytes(void *ctx, const struct sl_outer_transfer *t)
{
	struct exchange *x = ctx;
	int host = sl_role_of(x->roles, t->stage, t->src_pipeline, 0)->host;
	if (host >= 0)
		x->host_bytes[host * x->zones + t->dst_zone] += (double)t->bytes;
}

/* Groups that share a host share its link: each phase at least its busiest host's sends. */
static void close_hosts(struct exchange *x)
{
	double p[2] = {0, 0};
	for (int ph = 0; x->roles && ph < 2; ph++)
		for (int i = 0; i < x->hosts * x->zones; i++)
			p[ph] = fmax(p[ph], x->host_phase_s[ph * x->hosts * x->zones + i]);
	x->slowest_s = fmax(x->slowest_s, p[0] + p[1]);
}

static void close_group(struct exchange *x)
{
	double p1 = 0, p2 = 0;
	for (int i = 0; i < x->n; i++) {
		p1 = fmax(p1, x->phase_s[0][i]);
		p2 = fmax(p2, x->phase_s[1][i]);
	}
	x->slowest_s = fmax(x->slowest_s, p1 + p2);
	memset(x->phase_s, 0, sizeof(x->phase_s));
}

static void on_transfer(void *ctx, const struct sl_outer_transfer *t)
{
	struct exchange *x = ctx;
	if (t->group != x->group) {
		close_group(x);
		x->group = t->group;
	}
	const struct sl_link_fit *fit = sl_network_fit(x->env->network, t->src_zone, t->src_gpu, 1,
						       t->dst_zone, t->dst_gpu, 1);
	double s = fit ? sl_link_send_time_s(fit, (double)t->bytes) : 0;
	/* every transfer of the exchange has its reverse at the same time (the pair swaps chunks
	 * in both phases): no faster than the two ranks' all-reduce measured between these zones at
	 * what the link moves each way over the exchange (the pair's two phases; with a cluster,
	 * every group's bytes from the host to the zone), as the replay model times rings that load
	 * a link both ways (replay_collectives.c, both_ways_s: TCP's acknowledgements queue behind
	 * the other direction's data, longer the longer both ways stay loaded) */
	int host = x->roles ? sl_role_of(x->roles, t->stage, t->src_pipeline, 0)->host : -1;
	double each_way = host >= 0 ? x->host_bytes[host * x->zones + t->dst_zone]
				    : 2.0 * (double)t->bytes;
	double gbps = sl_network_allreduce_gbps(x->env->network, t->src_zone, t->src_gpu,
						t->dst_zone, t->dst_gpu, 0, each_way);
	if (gbps > 0)
		s = fmax(s, (double)t->bytes / 1e9 / gbps);
	if (fit) /* the link's own delay beyond its fit; a fragment's messages pay it again */
		x->latency_s = fmax(x->latency_s, fit->latency_s);
	x->phase_s[t->phase - 1][t->src_member] += s;
	if (host >= 0)
		x->host_phase_s[((t->phase - 1) * x->hosts + host) * x->zones + t->dst_zone] += s;
	x->egress_usd += 1e-9 * (double)t->bytes *
			 sl_network_egress_usd_per_gb(x->env->network, t->src_zone, t->dst_zone);
}

/* The wire's bytes per value (runtime/outer_wire.h: int8 adds a 4-byte scale per 256 values). */
static double wire_bytes_per_value(enum sl_islands_wire w)
{
	return w == SL_ISLANDS_WIRE_FP32 ? 4.0 : w == SL_ISLANDS_WIRE_BF16 ? 2.0 : 1.0 + 4.0 / 256;
}

/* The fewest pipelines of an island: Q, the pieces a lane is cut into. */
static int fewest_island_pipelines(const struct sl_plan_islands *isl)
{
	int Q = isl->num_pipelines;
	for (int i = 0; i < isl->count; i++) {
		int m = 0;
		for (int j = 0; j < isl->num_pipelines; j++)
			m += isl->island_of[j] == i;
		Q = m < Q ? m : Q;
	}
	return Q > 0 ? Q : 1;
}

/* The largest extra memory of a rank of island result r (the file's header): two copies of its
 * shard, a fragment's lane in fp32, and a carrier's wire buffers of every fragment. */
static void add_outer_memory(const struct sl_plan_islands *isl, struct sl_sim_result *r,
			     double *extra_max)
{
	double F = isl->fragments, n = isl->count, Q = fewest_island_pipelines(isl);
	double wire_share = wire_bytes_per_value(isl->wire) / 4.0; /* of the fp32 bytes */
	r->peak_memory_bytes = 0;
	r->fits_memory = 1;
	for (int k = 0; k < r->num_stages; k++) {
		struct sl_sim_memory *m = &r->stages[k].memory;
		double shard = m->params_bytes;
		double extra = 2 * shard + shard / F + shard / (F * Q * n) /* the fp32 average */ +
			       (3 + 1 / n) * wire_share * shard / Q;
		*extra_max = fmax(*extra_max, extra);
		m->buffers_bytes += extra;
		m->total_bytes += extra;
		r->stages[k].fits = r->stages[k].fits && m->total_bytes <= m->capacity_bytes;
		r->fits_memory = r->fits_memory && r->stages[k].fits;
		if (m->total_bytes > r->peak_memory_bytes) {
			r->peak_memory_bytes = m->total_bytes;
			r->peak_stage = k;
		}
	}
}

/* The plan as a whole from its islands: per run step (island 0's inner step). */
static void aggregate(const struct sl_plan *plan, const struct sl_sim_islands *d,
		      const struct sl_sim_result *first, struct sl_sim_result *out)
{
	const struct sl_plan_islands *isl = plan->islands;
	double h0 = isl->inner_steps[0];
	sl_sim_result_copy(out, first); /* island 0's stages, for the breakdown by stage */
	out->num_pipelines = plan->num_pipelines;
	out->num_gpus = 0;
	out->gpu_usd_per_hour = 0;
	out->fits_memory = 1;
	out->peak_memory_bytes = 0;
	double egress_per_round = d->outer_egress_usd_per_round;
	for (int i = 0; i < d->count; i++) {
		const struct sl_sim_island *s = &d->island[i];
		out->num_gpus += s->gpus;
		out->gpu_usd_per_hour += s->gpu_usd_per_hour;
		out->fits_memory = out->fits_memory && s->fits_memory;
		out->peak_memory_bytes = fmax(out->peak_memory_bytes, s->peak_memory_bytes);
		egress_per_round += s->inner_steps * s->egress_usd_per_step;
	}
	out->iteration_time_s = d->round_s / h0;
	out->throughput_it_s = out->iteration_time_s > 0 ? 1.0 / out->iteration_time_s : 0;
	out->samples_per_iteration = llround(d->tokens_per_round / d->seq_len / h0);
	out->samples_per_s = d->tokens_per_round / d->seq_len / d->round_s;
	out->tokens_per_s = d->tokens_per_round / d->round_s;
	out->gpu_cost_usd_per_iter = out->gpu_usd_per_hour * out->iteration_time_s / 3600.0;
	out->egress_cost_usd_per_iter = egress_per_round / h0;
	out->cost_usd_per_iter = out->gpu_cost_usd_per_iter + out->egress_cost_usd_per_iter;
}

/* A round's exchange (bytes, time, egress): every transfer of it timed and priced. */
static int exchange_of(const struct sl_sim_env *env, const struct sl_plan *plan, long long G,
		       int seq_len, struct sl_sim_exchange *e, struct sl_err *err)
{
	struct exchange x = {.env = env, .n = plan->islands->count};
	struct sl_role_table roles;
	memset(&roles, 0, sizeof(roles));
	int rc = 0;
	if (env->cluster) {
		x.hosts = env->cluster->host_count;
		x.zones = env->catalogue.zone_count;
		x.host_phase_s = calloc((size_t)(3 * x.hosts * x.zones + 1), sizeof(double));
		x.host_bytes = x.host_phase_s ? x.host_phase_s + 2 * x.hosts * x.zones : NULL;
		rc = !x.host_phase_s ? sl_err_set(err, SL_ENOMEM, "out of memory") : 0;
		if (!rc)
			rc = sl_role_table_build(plan, G, &roles, err);
		if (!rc)
			rc = sl_placement_assign(&roles, env->cluster, &env->catalogue, err);
		x.roles = rc ? NULL : &roles;
	}
	struct sl_outer_bytes b;
	if (!rc && x.roles)
		rc = sl_outer_bytes_visit(plan, &env->model, G, seq_len, &env->catalogue,
					  count_host_bytes, &x, &b, err);
	if (!rc)
		rc = sl_outer_bytes_visit(plan, &env->model, G, seq_len, &env->catalogue,
					  on_transfer, &x, &b, err);
	if (!rc) {
		close_group(&x);
		close_hosts(&x);
	}
	if (env->cluster)
		sl_role_table_free(&roles);
	free(x.host_phase_s);
	if (rc)
		return rc;
	e->wire = plan->islands->wire;
	e->fragments = plan->islands->fragments;
	for (int c = 0; c < SL_LINK_CLASSES; c++)
		e->class_bytes[c] = (double)b.class_bytes[c];
	e->total_bytes = b.total_bytes;
	e->exchange_s = x.slowest_s;
	e->latency_s = x.latency_s;
	e->egress_usd = x.egress_usd;
	return 0;
}

/* Per round: the exchange (from cache when it has this wire and fragments) and each island's
 * wait on it. */
static int outer_round(const struct sl_sim_env *env, const struct sl_plan *plan, long long G,
		       struct sl_sim_exchange_cache *cache, struct sl_sim_islands *d,
		       struct sl_err *err)
{
	const struct sl_plan_islands *isl = plan->islands;
	struct sl_sim_exchange own, *e = NULL;
	for (int i = 0; cache && i < cache->count && !e; i++)
		if (cache->entries[i].wire == (int)isl->wire &&
		    cache->entries[i].fragments == isl->fragments)
			e = &cache->entries[i];
	if (!e) {
		e = cache && cache->count < SL_SIM_EXCHANGE_CACHE ? &cache->entries[cache->count]
								   : &own;
		int rc = exchange_of(env, plan, G, d->seq_len, e, err);
		if (rc)
			return rc;
		if (e != &own)
			cache->count++;
	}
	for (int c = 0; c < SL_LINK_CLASSES; c++)
		d->class_bytes[c] = e->class_bytes[c];
	d->bytes_per_round = (double)e->total_bytes;
	d->tokens_per_round = sl_outer_tokens_per_round(plan, G, d->seq_len);
	d->bytes_per_1k_tokens = d->tokens_per_round > 0
				 ? 1e3 * (double)e->total_bytes / d->tokens_per_round : 0;
	d->outer_egress_usd_per_round = e->egress_usd;
	double F = isl->fragments, lat = e->latency_s;
	d->exchange_s = e->exchange_s;
	d->fragment_exchange_s = e->exchange_s / F + 2 * lat;
	d->round_s = 0;
	for (int i = 0; i < d->count; i++) {
		struct sl_sim_island *s = &d->island[i];
		double hide = isl->overlap_steps * s->step_s;
		s->stall_s = 0;
		for (int f = 0; f < isl->fragments; f++) {
			/* synced `before` steps before the round end; in flight there if it lands
			 * after it, and then over by the end of the round's stop agreement */
			int before = (int)((long long)f * isl->inner_steps[i] / isl->fragments);
			double hidden_by = before < isl->overlap_steps ? before * s->step_s : hide;
			s->stall_s += fmax(0, d->fragment_exchange_s - hidden_by);
		}
		d->round_s = fmax(d->round_s, s->compute_s + s->stall_s);
	}
	d->round_s += 2 * lat; /* the stop agreement at the round end */
	return 0;
}

/* Calls fn(ctx, i, island i's own plan) for every island, in order, until one fails. */
static int each_island_plan(const struct sl_sim_env *env, const struct sl_plan *plan,
			    int (*fn)(void *ctx, int island, const struct sl_plan *sub,
				      struct sl_err *err),
			    void *ctx, struct sl_err *err)
{
	long long G = plan->global_batch > 0 ? plan->global_batch : env->model.default_global_batch;
	int *counts = malloc((size_t)plan->num_pipelines * sizeof(int));
	int rc = !counts ? sl_err_set(err, SL_ENOMEM, "out of memory") : 0;
	if (!rc)
		rc = sl_plan_microbatch_counts(plan, G, counts, err);
	for (int i = 0; !rc && i < plan->islands->count; i++) {
		struct sl_plan sub;
		sl_plan_init(&sub);
		rc = island_plan(plan, counts, i, &sub, err);
		if (!rc)
			rc = fn(ctx, i, &sub, err);
		sl_plan_free(&sub);
	}
	free(counts);
	return rc;
}

struct simulate_parts {
	const struct sl_sim_env *env;
	enum sl_cost_model cm;
	struct sl_sim_result *per_island;
};

static int simulate_part(void *ctx, int island, const struct sl_plan *sub, struct sl_err *err)
{
	struct simulate_parts *p = ctx;
	return sl_simulate(p->env, sub, p->cm, &p->per_island[island], err);
}

int sl_sim_islands_parts(const struct sl_sim_env *env, const struct sl_plan *plan,
			 enum sl_cost_model cm, struct sl_sim_result *per_island, struct sl_err *err)
{
	if (cm == SL_COST_SOSP25)
		return sl_err_set(err, SL_EINPUT, "plan '%s': the sosp25 cost model has no islands "
				  "(the SOSP'25 simulator models synchronous plans only): simulate it "
				  "with --cost-model sailor, or remove \"islands\"", plan->path);
	struct simulate_parts p = {env, cm, per_island};
	return each_island_plan(env, plan, simulate_part, &p, err);
}

int sl_sim_islands_from_parts(const struct sl_sim_env *env, const struct sl_plan *plan,
			      const struct sl_sim_result *per_island,
			      struct sl_sim_exchange_cache *cache, struct sl_sim_result *out,
			      struct sl_sim_islands *detail, struct sl_err *err)
{
	const struct sl_plan_islands *isl = plan->islands;
	long long G = plan->global_batch > 0 ? plan->global_batch : env->model.default_global_batch;
	struct sl_sim_islands *d = detail ? detail : calloc(1, sizeof(*d));
	struct sl_sim_result *r = malloc(sizeof(*r)), *first = malloc(sizeof(*first));
	int rc = !d || !r || !first ? sl_err_set(err, SL_ENOMEM, "out of memory") : 0;
	if (!rc) {
		memset(d, 0, sizeof(*d));
		d->count = isl->count;
		d->seq_len = env->model.seq_len;
	}
	double extra = 0;
	for (int i = 0; !rc && i < isl->count; i++) {
		sl_sim_result_copy(r, &per_island[i]);
		add_outer_memory(isl, r, &extra);
		struct sl_sim_island *s = &d->island[i];
		s->pipelines = r->num_pipelines;
		s->inner_steps = isl->inner_steps[i];
		s->samples_per_step = r->samples_per_iteration;
		s->gpus = r->num_gpus;
		s->step_s = r->iteration_time_s;
		s->compute_s = s->inner_steps * s->step_s;
		s->peak_memory_bytes = r->peak_memory_bytes;
		s->fits_memory = r->fits_memory;
		s->gpu_usd_per_hour = r->gpu_usd_per_hour;
		s->egress_usd_per_step = r->egress_cost_usd_per_iter;
		if (i == 0)
			sl_sim_result_copy(first, r);
	}
	if (!rc) {
		d->outer_memory_bytes = extra;
		rc = outer_round(env, plan, G, cache, d, err);
	}
	if (!rc)
		aggregate(plan, d, first, out);
	free(r);
	free(first);
	if (d != detail)
		free(d);
	return rc;
}

int sl_sim_islands(const struct sl_sim_env *env, const struct sl_plan *plan, enum sl_cost_model cm,
		   struct sl_sim_result *out, struct sl_sim_islands *detail, struct sl_err *err)
{
	struct sl_sim_result *per_island = malloc(sizeof(*per_island) *
						  (size_t)plan->islands->count);
	int rc = !per_island ? sl_err_set(err, SL_ENOMEM, "out of memory") : 0;
	if (!rc)
		rc = sl_sim_islands_parts(env, plan, cm, per_island, err);
	if (!rc)
		rc = sl_sim_islands_from_parts(env, plan, per_island, NULL, out, detail, err);
	free(per_island);
	return rc;
}

/* sl_sim_islands_zone_bytes: each island's transfers, H_i times a round. */
struct scaled_visit {
	const struct sl_sim_env *env;
	const struct sl_plan_islands *isl;
	sl_sim_zone_bytes_fn visit;
	void *ctx;
	double times;
};

static void scaled(void *ctx, int from_zone, int to_zone, double bytes, int both_ways)
{
	struct scaled_visit *v = ctx;
	v->visit(v->ctx, from_zone, to_zone, bytes * v->times, both_ways);
}

static int visit_part(void *ctx, int island, const struct sl_plan *sub, struct sl_err *err)
{
	(void)err;
	struct scaled_visit *v = ctx;
	v->times = v->isl->inner_steps[island];
	sl_sim_zone_bytes(v->env, sub, sub->microbatches, scaled, v);
	return 0;
}

int sl_sim_islands_zone_bytes(const struct sl_sim_env *env, const struct sl_plan *plan,
			      sl_sim_zone_bytes_fn visit, void *ctx, struct sl_err *err)
{
	struct scaled_visit v = {env, plan->islands, visit, ctx, 0};
	return each_island_plan(env, plan, visit_part, &v, err);
}
