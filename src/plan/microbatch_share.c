/* The plan's micro-batch sharing rule (microbatch_share.h). */
#include "plan/microbatch_share.h"

#include <stdlib.h>

/* Counts above this are refused: a step of a million micro-batches per pipeline is a typo. */
#define SL_PLAN_MAX_PIPELINE_MICROBATCHES (1 << 20)

int sl_plan_microbatch_counts(const struct sl_plan *plan, long long global_batch, int *counts,
			      struct sl_err *err)
{
	const int D = plan->num_pipelines, b = plan->micro_batch;
	if (D < 1 || b < 1)
		return sl_err_set(err, SL_EINPUT, "needs at least one pipeline and a micro-batch of "
				  "at least 1");
	if (global_batch < 1)
		return sl_err_set(err, SL_EINPUT, "global batch %lld must be at least 1",
				  global_batch);
	if (global_batch % b)
		return sl_err_set(err, SL_EINPUT,
				  "global batch %lld is not a multiple of micro_batch %d: choose a "
				  "global batch that micro-batches divide", global_batch, b);
	const long long M = global_batch / b;
	if (plan->uneven_microbatches) {
		long long total = 0;
		for (int j = 0; j < D; j++) {
			int n = plan->microbatches[j];
			if (n < 1 || n > SL_PLAN_MAX_PIPELINE_MICROBATCHES)
				return sl_err_set(err, SL_EINPUT, "microbatches_per_pipeline[%d]: %d "
						  "micro-batches per step, outside 1..%d", j, n,
						  SL_PLAN_MAX_PIPELINE_MICROBATCHES);
			total += n;
			if (counts)
				counts[j] = n;
		}
		if (total != M)
			return sl_err_set(err, SL_EINPUT,
					  "microbatches_per_pipeline: add up to %lld micro-batches of "
					  "%d = %lld samples but the global batch is %lld: make them "
					  "add up to %lld", total, b, total * b, global_batch, M);
		return 0;
	}
	if (M % D && plan->format != SL_PLAN_FORMAT_SOSP25)
		return sl_err_set(err, SL_EINPUT,
				  "global batch %lld is %lld micro-batches of %d, which %d pipelines "
				  "cannot share evenly: give \"microbatches_per_pipeline\" or a global "
				  "batch that is a multiple of %lld",
				  global_batch, M, b, D, (long long)b * D);
	const long long q = M / D, r = M % D;
	if (q < 1)
		return sl_err_set(err, SL_EINPUT,
				  "global batch %lld is %lld micro-batches of %d, fewer than the plan's "
				  "%d pipelines: use at most %lld pipelines or a larger global batch",
				  global_batch, M, b, D, M);
	if (q + (r > 0) > SL_PLAN_MAX_PIPELINE_MICROBATCHES)
		return sl_err_set(err, SL_EINPUT, "global batch %lld: %lld micro-batches per "
				  "pipeline and step, more than %d", global_batch, q + (r > 0),
				  SL_PLAN_MAX_PIPELINE_MICROBATCHES);
	for (int j = 0; counts && j < D; j++)
		counts[j] = (int)(q + (j < r));
	return 0;
}

/* qsort_r order of pipeline indices: smaller time first, then the lower index (deterministic). */
static int faster_first(const void *a, const void *b, void *ctx)
{
	const double *pipeline_s = ctx;
	int i = *(const int *)a, j = *(const int *)b;
	if (pipeline_s[i] != pipeline_s[j])
		return pipeline_s[i] < pipeline_s[j] ? -1 : 1;
	return (i > j) - (i < j);
}

int sl_plan_split_microbatches(struct sl_plan *plan, long long global_batch,
			       const double *pipeline_s)
{
	const int D = plan->num_pipelines, b = plan->micro_batch;
	if (plan->uneven_microbatches)
		return 0;
	if (D < 1 || b < 1 || global_batch < 1 || global_batch % b)
		return -1;
	const long long M = global_batch / b;
	if (M < D)
		return -1;
	long long r = M % D;
	if (!r)
		return 0;
	const int q = (int)(M / D);
	int order[SL_PLAN_MAX_PIPELINES];
	for (int j = 0; j < D; j++) {
		plan->microbatches[j] = q;
		order[j] = j;
	}
	if (pipeline_s)
		qsort_r(order, (size_t)D, sizeof(order[0]), faster_first, (void *)pipeline_s);
	for (long long i = 0; i < r; i++)
		plan->microbatches[order[i]] = q + 1;
	plan->uneven_microbatches = 1;
	return 0;
}
