/* Uneven micro-batch counts (behind `sailor plan --uneven-microbatches`): when the pipelines of a
 * plan differ in speed (replicas of different GPU types or TP degrees), giving each pipeline a
 * number of micro-batches proportional to its speed lets them finish together instead of waiting
 * for the straggler; gradient sync then weights replicas by the samples they processed. The
 * runtime executes such plans only once it supports them, hence the option.
 */
#ifndef SL_SEARCH_UNEVEN_H
#define SL_SEARCH_UNEVEN_H

#include "search/ranking.h"

/* For every plan in rank's top list whose pipelines differ in speed, simulates the variant with
 * micro-batch counts n_j proportional to 1 / (pipeline j's slowest stage time), summing to
 * global_batch / micro_batch (plans whose micro-batch does not divide the global batch are
 * left alone), and offers it to rank. Adds the simulations to *simulated. */
int sl_search_try_uneven(const struct sl_sim_env *env, struct sl_ranking *rank,
			 long long global_batch, long long *simulated, struct sl_err *err);

/* Gives plan (in place) micro-batch counts in proportion to its pipelines' speed. Returns 1 if it
 * did, 0 if the plan does not qualify (one pipeline, pipelines equally fast, micro-batch not
 * dividing the global batch), or a negative error. */
int sl_uneven_apply(const struct sl_sim_env *env, enum sl_cost_model cm, struct sl_plan *plan,
		    long long global_batch, struct sl_err *err);

/* The planner's split where the D pipelines of a plan do not divide the G / b micro-batches
 * (plan/microbatch_share.h): floor(M / D) each, the extra ones to the pipelines whose slowest
 * stage computes fastest, written into the plan as "microbatches_per_pipeline" so that the plan
 * runs what was simulated. Any counts the plan had are replaced (the search builds its plans
 * without). Returns 0, or -1 when no split exists (M < D, or b does not divide G). */
int sl_search_share_microbatches(const struct sl_sim_env *env, enum sl_cost_model cm,
				 struct sl_plan *plan, long long global_batch);

/* Stage k's compute per micro-batch on replica r without options, as sl_sim_stage_compute_s
 * gives it (< 0: none), from where a search already has it (ctx: its state). */
struct sl_stage_kind_times {
	double (*time_s)(const void *ctx, int k, const struct sl_replica *r);
	const void *ctx;
};

/* sl_search_share_microbatches with the stage times from kinds (NULL: the simulator's). */
int sl_search_share_microbatches_timed(const struct sl_sim_env *env, enum sl_cost_model cm,
				       struct sl_plan *plan, long long global_batch,
				       const struct sl_stage_kind_times *kinds);

/* The counts themselves: n[j] for D pipelines whose slowest stage takes pipeline_s[j] per
 * micro-batch, summing to total (>= D), each >= 1, by largest remainder (ties to the lower j).
 * Returns 0, or -1 when total < D. */
int sl_uneven_counts(const double *pipeline_s, int D, long long total, int *n);

#endif
