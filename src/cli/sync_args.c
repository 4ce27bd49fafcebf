/* The island planner's flags: see sync_args.h. */
#include "cli/sync_args.h"

#include <stdlib.h>
#include <string.h>

#include "plan/islands.h"
#include "search/islands_search.h"

int sl_cli_sync_take(const struct sl_cli_command *cmd, const char *flag, const char *arg,
		     struct sl_search_request *req, struct sl_cli_sync *s)
{
	struct sl_err err = {0};
	if (!strcmp(flag, "sync")) {
		if (!strcmp(arg, "every-step"))
			req->sync = SL_SYNC_EVERY_STEP;
		else if (!strcmp(arg, "islands"))
			req->sync = SL_SYNC_ISLANDS;
		else if (!strcmp(arg, "auto"))
			req->sync = SL_SYNC_AUTO;
		else
			return sl_cli_usage_error(cmd, "--sync: '%s' is not every-step, islands or "
						  "auto", arg);
		return 0;
	}
	s->island_options = 1;
	if (!strcmp(flag, "max-inner-steps")) {
		long long v = 0;
		if (sl_cli_parse_long(cmd, "max-inner-steps", arg, 1, SL_ISLANDS_MAX_INNER_STEPS, &v))
			return 2;
		req->max_inner_steps = (int)v;
		return 0;
	}
	if (sl_token_value_parse(arg, &s->token_value, &err)) {
		/* a number out of range is usage; a file that is wrong, bad input */
		char *end = NULL;
		strtod(arg, &end);
		if (end != arg && !*end)
			return sl_cli_usage_error(cmd, "%s", err.msg);
		sl_cli_error(cmd, "%s", err.msg);
		return 1;
	}
	req->token_value = &s->token_value;
	return 0;
}

int sl_cli_sync_finish(const struct sl_cli_command *cmd, struct sl_search_request *req,
		       struct sl_cli_sync *s)
{
	if (s->island_options && req->sync == SL_SYNC_EVERY_STEP)
		return sl_cli_usage_error(cmd, "--max-inner-steps and --island-token-value apply to "
					  "island plans: add --sync islands or --sync auto");
	if (req->sync != SL_SYNC_EVERY_STEP && req->cost_model == SL_COST_SOSP25)
		return sl_cli_usage_error(cmd, "--sync %s: the sosp25 cost model has no islands (the "
					  "SOSP'25 simulator models synchronous plans only): use "
					  "--cost-model sailor, or --sync every-step",
					  sl_sync_mode_name(req->sync));
	if (req->sync == SL_SYNC_EVERY_STEP || req->token_value)
		return 0;
	struct sl_err err = {0};
	if (sl_token_value_load_default(&s->token_value, &err)) {
		sl_cli_error(cmd, "%s", err.msg);
		return 1;
	}
	req->token_value = &s->token_value;
	return 0;
}
