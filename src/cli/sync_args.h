/* The island planner's flags, shared by `sailor plan` and `sailor control`: --sync,
 * --max-inner-steps and --island-token-value (search/islands_search.h). */
#ifndef SL_CLI_SYNC_ARGS_H
#define SL_CLI_SYNC_ARGS_H

#include "cli/args.h"
#include "search/search.h"
#include "search/token_value.h"

#define SL_CLI_SYNC_HELP "how replicas synchronise: every step over all of them, in islands (one per region or zone) with DiLoCo-style outer steps between them, or whichever ranks better by effective throughput (sailor cost model)"
#define SL_CLI_MAX_INNER_STEPS_HELP "islands: the most inner steps between outer steps (how stale an island may get)"
#define SL_CLI_TOKEN_VALUE_HELP "islands: what a token of an island plan is worth against a synchronous one, in (0, 1], or a sailor.token_value/1 file"

/* The flags as read so far. */
struct sl_cli_sync {
	struct sl_token_value token_value; /* req->token_value points here once set */
	int island_options;                /* --max-inner-steps or --island-token-value given */
};

/* One of the three flags ("sync", "max-inner-steps", "island-token-value") into req and s: 0, or
 * the exit status (2 usage, 1 a token-value file that is wrong), the message said. */
int sl_cli_sync_take(const struct sl_cli_command *cmd, const char *flag, const char *arg,
		     struct sl_search_request *req, struct sl_cli_sync *s);

/* After every flag: the flags together (usage errors), then the shipped token values where
 * islands are searched and none was given. 0, or the exit status, the message said. */
int sl_cli_sync_finish(const struct sl_cli_command *cmd, struct sl_search_request *req,
		       struct sl_cli_sync *s);

#endif
