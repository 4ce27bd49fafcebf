/* How a plan shares its global batch over its pipelines: the one rule that `plan`, `simulate`,
 * `validate`, `run` and `control` all apply, so that the micro-batches the simulator times are
 * the micro-batches the runtime trains.
 *
 * The rule (docs/formats.md, "plan"):
 *   - the global batch G must be a multiple of micro_batch b: one iteration is M = G / b
 *     micro-batches;
 *   - a plan with "microbatches_per_pipeline" runs exactly those counts (each >= 1, summing to M);
 *   - a plan in our format without it runs M / D on each of its D pipelines, and M must then be
 *     a multiple of D: such a hand-written plan is refused, with a message that says how to fix
 *     it. The planner never emits one: where its D pipelines do not divide M it writes the split
 *     it simulated (sl_plan_split_microbatches);
 *   - a plan read from the SOSP'25 artifact's format (whose planner picks D freely, e.g. 256
 *     micro-batches over 37 pipelines) shares them as evenly as possible, pipelines 0..r-1 one
 *     more than the rest (r = M mod D). Its simulator's Nmb = ceil(G / (b·D)) is then the
 *     busiest pipeline's count, so that cost model's figures are unchanged.
 * In every case the pipelines' counts sum to M: samples per iteration equal the global batch.
 */
#ifndef SL_PLAN_MICROBATCH_SHARE_H
#define SL_PLAN_MICROBATCH_SHARE_H

#include "plan/plan.h"
#include "util/err.h"

/* Fills counts[0..D-1] with the micro-batches each pipeline runs per iteration for global batch
 * global_batch, or fails with a message naming the field to change (no "plan 'P'" prefix: the
 * caller adds the plan's name). counts may be NULL to check only. */
int sl_plan_microbatch_counts(const struct sl_plan *plan, long long global_batch, int *counts,
			      struct sl_err *err);

/* The planner's split where D does not divide M: every pipeline gets floor(M / D) and the
 * M mod D extra micro-batches go to the pipelines with the smallest pipeline_s (ties: the lower
 * index), so that the iteration's slowest pipeline is not given more. Writes plan->microbatches
 * (room reserved by sl_plan_reserve) and sets uneven_microbatches; where D divides M, or the plan
 * already has explicit counts, changes nothing. pipeline_s may be NULL (ties everywhere).
 * Returns 0, or -1 when M < D or G is not a multiple of b (no split exists). */
int sl_plan_split_microbatches(struct sl_plan *plan, long long global_batch,
			       const double *pipeline_s);

#endif
