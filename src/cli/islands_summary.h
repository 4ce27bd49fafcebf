/* The islands of a plan as `sailor run --dry-run` shows them (docs/run.md#dry-run): each island's
 * pipelines and zones and its inner steps per round, the outer optimizer, the wire, the fragments
 * and the overlap, and what one round's outer exchange sends between islands, by the class of
 * the link and per 1,000 tokens trained (plan/outer_bytes.h). */
#ifndef SL_CLI_ISLANDS_SUMMARY_H
#define SL_CLI_ISLANDS_SUMMARY_H

#include <stdio.h>

#include "cluster/catalogue.h"
#include "model/model_config.h"
#include "plan/plan.h"
#include "util/err.h"

/* Prints the block to out for a plan that sl_plan_check accepted (nothing for a plan without
 * islands; one line for one island, which is the synchronous plan). The count's error code
 * (out of memory), with err filled. */
int sl_cli_islands_summary(FILE *out, const struct sl_plan *plan,
			   const struct sl_model_config *model, long long global_batch,
			   int seq_len, const struct sl_catalogue *cat, struct sl_err *err);

#endif
