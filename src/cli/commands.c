/* The subcommand table: the single place a subcommand is registered. `sailor --help` lists
 * it in this order; each entry's options and run function live in src/cli/cmd_<name>.c. */
#include "cli/options.h"

extern const struct sl_cli_command sl_cmd_version;

const struct sl_cli_command *const sl_cli_commands[] = {
	&sl_cmd_version,
};
const size_t sl_cli_command_count = sizeof(sl_cli_commands) / sizeof(sl_cli_commands[0]);
