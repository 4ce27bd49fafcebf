/* What `sailor plan` says about a plan's sync: every step, or islands with their outer step,
 * the tokens per second trained and effective (search/islands_search.h), and the bytes the
 * outer step sends over each link between zones per 1,000 tokens. */
#ifndef SL_CLI_PLAN_ISLANDS_REPORT_H
#define SL_CLI_PLAN_ISLANDS_REPORT_H

#include <stdio.h>

#include "search/token_value.h"
#include "sim/sim.h"
#include "util/json.h"

/* The report's lines for plan, ranked with result `ranked` (effective for islands). */
void sl_cli_plan_sync_print(FILE *f, const struct sl_sim_env *env, const struct sl_plan *plan,
			    const struct sl_sim_result *ranked, const struct sl_token_value *tv);

/* --json's "sync" object for plan: {"mode": "every-step"} or {"mode": "islands", ...}. */
json_t *sl_cli_plan_sync_json(const struct sl_sim_env *env, const struct sl_plan *plan,
			      const struct sl_sim_result *ranked, const struct sl_token_value *tv);

/* The simulator's own estimate of plan (`sailor simulate`'s), whatever the ranking made of it. */
json_t *sl_cli_plan_estimate_json(const struct sl_sim_env *env, const struct sl_plan *plan,
				  const struct sl_sim_result *ranked);

#endif
