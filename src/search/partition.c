/* Candidate layer partitions: see partition.h. */
#include "search/partition.h"

#include <float.h>
#include <string.h>

long long sl_partition_count(int num_layers, int num_stages, long long limit)
{
	/* C(n-1, p-1) computed incrementally; each intermediate is itself a binomial, so exact. */
	long long n = num_layers - 1, k = num_stages - 1, c = 1;
	if (k < 0 || k > n)
		return 0;
	if (k > n - k)
		k = n - k;
	for (long long i = 1; i <= k; i++) {
		c = c * (n - k + i) / i;
		if (c > limit)
			return limit + 1;
	}
	return c;
}

static void uniform_sosp25(int num_layers, int num_stages, struct sl_partition *part)
{
	int chunk = num_layers / num_stages, rest = num_layers % num_stages;
	part->num_stages = num_stages;
	int layer = 0;
	for (int k = 0; k < num_stages; k++) {
		part->first[k] = layer;
		layer += chunk + (k >= num_stages - rest ? 1 : 0);
	}
	part->first[num_stages] = num_layers;
}

/* Min-max split by dynamic programming: best[k][i] = the smallest possible slowest stage when the
 * first i layers form k stages. O(P·L²) with L <= a few hundred. */
static void balanced(int num_layers, int num_stages, const double *layer_time_s,
		     struct sl_partition_scratch *scratch, struct sl_partition *part)
{
	double *prefix = scratch->prefix;
	double (*best)[SL_PARTITION_MAX_LAYERS + 1] = scratch->best;
	int (*cut)[SL_PARTITION_MAX_LAYERS + 1] = scratch->cut;
	prefix[0] = 0;
	for (int l = 0; l < num_layers; l++)
		prefix[l + 1] = prefix[l] + layer_time_s[l];
	for (int i = 0; i <= num_layers; i++)
		best[1][i] = prefix[i];
	for (int k = 2; k <= num_stages; k++) {
		for (int i = 0; i <= num_layers; i++) {
			best[k][i] = DBL_MAX;
			cut[k][i] = -1;
			for (int j = k - 1; j < i; j++) {
				double slowest = best[k - 1][j];
				double last = prefix[i] - prefix[j];
				if (last > slowest)
					slowest = last;
				/* strict '<' keeps the earliest cut: deterministic ties */
				if (slowest < best[k][i]) {
					best[k][i] = slowest;
					cut[k][i] = j;
				}
			}
		}
	}
	part->num_stages = num_stages;
	part->first[num_stages] = num_layers;
	int i = num_layers;
	for (int k = num_stages; k >= 2; k--) {
		i = cut[k][i];
		part->first[k - 1] = i;
	}
	part->first[0] = 0;
}

static int same(const struct sl_partition *a, const struct sl_partition *b)
{
	return a->num_stages == b->num_stages &&
	       !memcmp(a->first, b->first, sizeof(int) * (size_t)(a->num_stages + 1));
}

static int add_unique(struct sl_partition *out, int count, int max_out,
		      const struct sl_partition *part)
{
	if (count >= max_out)
		return count;
	for (int i = 0; i < count; i++)
		if (same(&out[i], part))
			return count;
	out[count] = *part;
	return count + 1;
}

struct collect_ctx {
	struct sl_partition *out;
	int count, max_out;
};

static int collect(const struct sl_partition *part, void *ctx)
{
	struct collect_ctx *c = ctx;
	c->count = add_unique(c->out, c->count, c->max_out, part);
	return 0;
}

int sl_partition_candidates(int num_layers, int num_stages, const double *const *layer_time_s,
			    int gpu_count, struct sl_partition_scratch *scratch,
			    struct sl_partition *out, int max_out)
{
	if (num_stages < 1 || num_stages > num_layers || num_stages > SL_PLAN_MAX_STAGES ||
	    num_layers > SL_PARTITION_MAX_LAYERS)
		return 0;
	struct sl_partition part;
	uniform_sosp25(num_layers, num_stages, &part);
	int count = add_unique(out, 0, max_out, &part);
	for (int g = 0; g < gpu_count; g++) {
		if (!layer_time_s[g])
			continue;
		balanced(num_layers, num_stages, layer_time_s[g], scratch, &part);
		count = add_unique(out, count, max_out, &part);
	}
	if (sl_partition_count(num_layers, num_stages, SL_PARTITION_ENUMERATE_MAX) <=
	    SL_PARTITION_ENUMERATE_MAX) {
		struct collect_ctx ctx = {out, count, max_out};
		sl_partition_each(num_layers, num_stages, collect, &ctx);
		count = ctx.count;
	}
	return count;
}

static int each_rec(struct sl_partition *part, int stage, int num_layers,
		    int (*visit)(const struct sl_partition *, void *), void *ctx)
{
	int stages = part->num_stages;
	if (stage == stages)
		return visit(part, ctx);
	/* stage `stage` starts after the previous one; leave at least one layer per later stage */
	int lo = part->first[stage - 1] + 1;
	int hi = num_layers - (stages - stage);
	for (int f = lo; f <= hi; f++) {
		part->first[stage] = f;
		int rc = each_rec(part, stage + 1, num_layers, visit, ctx);
		if (rc)
			return rc;
	}
	return 0;
}

int sl_partition_each(int num_layers, int num_stages,
		      int (*visit)(const struct sl_partition *part, void *ctx), void *ctx)
{
	if (num_stages < 1 || num_stages > num_layers || num_stages > SL_PLAN_MAX_STAGES)
		return 0;
	struct sl_partition part = {.num_stages = num_stages};
	part.first[0] = 0;
	part.first[num_stages] = num_layers;
	return each_rec(&part, 1, num_layers, visit, ctx);
}
