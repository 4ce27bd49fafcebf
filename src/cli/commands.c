/* The subcommand table: the single place a subcommand is registered. `sailor --help` lists
 * it in this order; each entry's options and run function live in src/cli/cmd_<name>.c. */
#include "cli/args.h"

extern const struct sl_cli_command sl_cmd_version;
extern const struct sl_cli_command sl_cmd_simulate;
extern const struct sl_cli_command sl_cmd_validate;
extern const struct sl_cli_command sl_cmd_plan;
extern const struct sl_cli_command sl_cmd_train;
extern const struct sl_cli_command sl_cmd_data;
extern const struct sl_cli_command sl_cmd_run;
extern const struct sl_cli_command sl_cmd_profile;
extern const struct sl_cli_command sl_cmd_control;
extern const struct sl_cli_command sl_cmd_report;

const struct sl_cli_command *const sl_cli_commands[] = {
	&sl_cmd_version,
	&sl_cmd_simulate,
	&sl_cmd_validate,
	&sl_cmd_plan,
	&sl_cmd_train,
	&sl_cmd_data,
	&sl_cmd_run,
	&sl_cmd_profile,
	&sl_cmd_control,
	&sl_cmd_report,
};
const size_t sl_cli_command_count = sizeof(sl_cli_commands) / sizeof(sl_cli_commands[0]);
