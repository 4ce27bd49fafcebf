/* `sailor version`: prints the version and the build's optional parts. */
#include <stdio.h>

#include "cli/args.h"

#define SAILOR_VERSION "0.1.0"

static int run_version(int argc, char **argv);

const struct sl_cli_command sl_cmd_version = {
	.name = "version",
	.synopsis = "",
	.summary = "print sailor's version",
	.options = NULL,
	.option_count = 0,
	.run = run_version,
};

static int run_version(int argc, char **argv)
{
	struct sl_cli_parser parser;
	sl_cli_parser_init(&parser, &sl_cmd_version, argc, argv);
	for (int idx; (idx = sl_cli_next(&parser)) != SL_CLI_END;)
		return idx == SL_CLI_HELP ? 0 : 2;
	if (parser.next_index < argc)
		return sl_cli_usage_error(&sl_cmd_version, "unexpected argument '%s'",
					  argv[parser.next_index]);
	printf("sailor %s\n", SAILOR_VERSION);
	return 0;
}
