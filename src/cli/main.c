/* `sailor <subcommand> [options]`: dispatches through the table in commands.c. */
#include <stdio.h>
#include <string.h>

#include "cli/options.h"
#include "train/cpu/kernels.h"

static void print_overview(FILE *stream)
{
	fprintf(stream, "usage: sailor <command> [options]\n\n"
			"Plans, simulates and runs distributed training over heterogeneous GPU pools.\n\n"
			"commands:\n");
	for (size_t i = 0; i < sl_cli_command_count; i++)
		fprintf(stream, "  %-10s %s\n", sl_cli_commands[i]->name, sl_cli_commands[i]->summary);
	fprintf(stream, "\n'sailor <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	sl_cpu_blas_single_threaded();
	if (argc < 2) {
		print_overview(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		print_overview(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version"))
		argv[1] = "version";
	for (size_t i = 0; i < sl_cli_command_count; i++)
		if (!strcmp(argv[1], sl_cli_commands[i]->name))
			return sl_cli_commands[i]->run(argc - 1, argv + 1);
	fprintf(stderr, "sailor: '%s' is not a sailor command (see 'sailor --help')\n", argv[1]);
	return 2;
}
