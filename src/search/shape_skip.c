/* Which replica kinds (GPU type, TP degree) fit a stage of a shape, memoised per partition
 * (sl_search_kind_level), and from that the skip rules of the search with memory options: the
 * shapes and partitions where the options change no kind's fit (options_change_no_shape,
 * fastest_changed_kind_s), and the records the search without options keeps of the shapes it
 * took to its threshold limit, which the search with options reads (shape_record_*).
 *
 * Invariants: sl_search_kind_level answers bit for bit what sl_search_least_level and
 * sl_sim_replica_fits would (the memo sums the memory in sim/memory.c's order); a shape is
 * skipped only where the search without options already simulated or soundly pruned every plan
 * the search with options would build there; records are sorted by shape_key in the order the
 * loops visit shapes, and an out-of-memory record list is never trusted (failed).
 */
#include <assert.h>
#include <float.h>
#include <stdlib.h>

#include "search/search_state.h"

/* The least recomputation level (index into sl_search_recompute_order) under which replica kind
 * (g, tp_values[t]) of stage k (layers [first, last] of P) fits with nmb micro-batches per
 * pipeline and D pipelines, -1 if none: with options (ZeRO-1 when D > 1) as
 * sl_search_least_level, without as sl_sim_replica_fits (0 or -1). Bit for bit what those give,
 * memoised per partition: asked for every (kind, D) of every shape, they were a fifth of the
 * search. Under sosp25 whether a replica fits depends on neither D nor nmb; under sailor, once
 * D > 1 and the stage holds as many micro-batches in flight as it can (nmb >= P - k), only the
 * optimizer state depends on D (ZeRO-1 divides it): the other parts are kept, and the total is
 * summed in sim/memory.c's order. Other cases are computed directly. */
int sl_search_kind_level(struct search_state *st, int options, int k, int g, int t, int first,
			 int last, int P, int mbs, int nmb, int D)
{
	const struct sl_sim_env *env = st->env;
	int tp = tp_values[t];
	struct sl_sim_replica_query q = {.gpu = g, .mbs = mbs, .tp = tp, .first_layer = first,
					.last_layer = last, .stage = k, .num_stages = P,
					.microbatches = nmb, .num_pipelines = D};
	if (st->cm == SL_COST_SOSP25) {
		if (st->kind_mem_stamp[k][g][t] != st->partition_stamp) {
			st->kind_mem_stamp[k][g][t] = st->partition_stamp;
			st->sosp25_fits[k][g][t] =
				(signed char)sl_sim_replica_fits(env, st->cm, &q);
		}
		/* no options under sosp25 (sl_search_options_on) */
		return st->sosp25_fits[k][g][t] ? 0 : -1;
	}
	if (D < 2 || nmb < P - k) {
		if (options)
			return sl_search_least_level(env, st->req, &q);
		return sl_sim_replica_fits(env, st->cm, &q) ? 0 : -1;
	}
	struct kind_memory *m = st->kind_mem[k][g][t];
	if (st->kind_mem_stamp[k][g][t] != st->partition_stamp) {
		st->kind_mem_stamp[k][g][t] = st->partition_stamp;
		/* the levels beyond none only where recomputation changes the stage, and only in a
		 * search with options (a search without them asks for level 0 alone) */
		int levels = st->options_on && sl_sim_effective_recompute(env, first, last,
									 SL_RECOMPUTE_FULL) !=
							SL_RECOMPUTE_NONE
				     ? SL_SEARCH_RECOMPUTE_LEVELS
				     : 1;
		st->kind_mem_levels[k][g][t] = (signed char)levels;
		for (int lv = 0; lv < levels; lv++) {
			struct sl_sim_memory mem;
			/* D = 2 without ZeRO-1: the full optimizer state, a data-parallel group */
			struct sl_sim_replica_query full = q;
			full.microbatches = P - k;
			full.num_pipelines = 2;
			full.recompute = sl_search_recompute_order[lv];
			full.zero = 0;
			sl_sim_replica_memory(env, st->cm, &full, &mem);
			m[lv] = (struct kind_memory){mem.params_bytes + mem.grads_bytes,
						     mem.optimizer_bytes, mem.activations_bytes,
						     mem.buffers_bytes, mem.runtime_bytes,
						     mem.capacity_bytes};
		}
	}
	int levels = options ? st->kind_mem_levels[k][g][t] : 1;
	for (int lv = 0; lv < levels; lv++) {
		double optimizer = options ? m[lv].optimizer_full / D : m[lv].optimizer_full;
		double total = m[lv].params_grads + optimizer + m[lv].activations + m[lv].buffers +
			       m[lv].runtime;
		if (total <= m[lv].capacity)
			return lv;
	}
	return -1;
}

/* The fastest fit time among the replica kinds that fit only with some option at this shape
 * (DBL_MAX: none, the options change nothing). Cheap: sl_search_kind_level is memoised.
 * Where none does, the replica kinds that fit and their times are those of the search without
 * options: every kind either fits without any option (so with options at no recomputation too)
 * or fits under none. The search with options then takes exactly the steps the search without
 * them took here, and that search already simulated each of its plans with the options
 * (simulate_variant), or pruned it by a bound that holds for them too (the bounds count neither
 * the optimizer nor recomputation, sim/bounds.c) and that its result only lowers. */
double sl_search_fastest_changed_kind_s(struct search_state *st,
					const struct sl_partition *part, int mbs, int D, int nmb)
{
	const struct sl_assign_input *in = &st->assign;
	int P = part->num_stages;
	double fastest_s = DBL_MAX;
	for (int k = 0; k < P; k++) {
		int first = part->first[k], last = part->first[k + 1] - 1;
		for (int ti = 0; ti < in->type_count; ti++)
			for (int t = 0; t < TP_SLOTS; t++) {
				int g = in->types[ti];
				if (st->stage_time_s[k][g][t] < 0 ||
				    sl_search_kind_level(st, 0, k, g, t, first, last, P, mbs, nmb, D) == 0)
					continue;
				int level = sl_search_kind_level(st, 1, k, g, t, first, last, P, mbs, nmb, D);
				if (level < 0)
					continue;
				double c = level > 0 ? st->stage_time_rc_s[k][g][t][level]
						     : st->stage_time_s[k][g][t];
				if (c < fastest_s)
					fastest_s = c;
			}
	}
	return fastest_s;
}

/* Whether every replica kind with a time fits this partition without options whatever D and
 * nmb: then at none of its shapes do the options let a kind fit that did not (the search with
 * options would skip each, sl_search_fastest_changed_kind_s). A replica needs the most memory
 * without options once D > 1 (a data-parallel communicator) and its stage holds all the
 * micro-batches it can (sim/memory.c), which sl_search_kind_level's memo evaluates. */
int sl_search_options_change_no_shape(struct search_state *st, const struct sl_partition *part,
				      int mbs)
{
	const struct sl_sim_env *env = st->env;
	const struct sl_assign_input *in = &st->assign;
	int P = part->num_stages;
	for (int k = 0; k < P; k++) {
		int first = part->first[k], last = part->first[k + 1] - 1;
		for (int ti = 0; ti < in->type_count; ti++)
			for (int t = 0; t < TP_SLOTS; t++) {
				int g = in->types[ti];
				/* the kinds search_partition gives a time */
				if (tp_values[t] > sl_sim_gpus_per_node(env, g) ||
				    st->type_gpus[g] < tp_values[t] ||
				    sl_sim_stage_compute_s(env, st->cm,
							   &(struct sl_sim_replica_query){
								   .gpu = g, .mbs = mbs,
								   .tp = tp_values[t],
								   .first_layer = first,
								   .last_layer = last}) < 0)
					continue;
				if (sl_search_kind_level(st, 0, k, g, t, first, last, P, mbs, P, 2) != 0)
					return 0;
			}
	}
	return 1;
}

/* Shapes the search without options took to its threshold limit (sl_search_shape_record_add):
 * the key orders them as the loops visit them, so the search with options finds them by
 * bisection. */
static unsigned long long shape_key(int P, int partition, int D, int order)
{
	static_assert(SL_ZONE_ORDERS_MAX <= 16 && SL_PLAN_MAX_PIPELINES < (1 << 16),
		      "the key's fields do not overlap");
	return ((unsigned long long)P << 44) | ((unsigned long long)partition << 24) |
	       ((unsigned long long)(SL_PLAN_MAX_PIPELINES - D) << 4) | (unsigned long long)order;
}

void sl_search_shape_record_add(struct search_state *st, int P, int D, int order,
				double tau_max_s)
{
	struct shape_records *r = st->record_into;
	if (!r || r->failed)
		return;
	if (r->count == r->capacity) {
		int capacity = r->capacity ? 2 * r->capacity : 256;
		struct shape_record *v = realloc(r->v, sizeof(*v) * (size_t)capacity);
		if (!v) {
			r->failed = 1; /* then the search with options searches this item's shapes */
			return;
		}
		r->v = v;
		r->capacity = capacity;
	}
	r->v[r->count++] = (struct shape_record){shape_key(P, st->partition_index, D, order),
						 tau_max_s};
}

/* The largest threshold the search without options considered at this shape, if it went to its
 * limit; -1 otherwise. */
double sl_search_shape_record_find(const struct search_state *st, int P, int D, int order)
{
	const struct shape_records *r = st->record_from;
	if (!r || r->failed)
		return -1;
	unsigned long long key = shape_key(P, st->partition_index, D, order);
	int lo = 0, hi = r->count;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (r->v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->count && r->v[lo].key == key ? r->v[lo].tau_max_s : -1;
}
