/* `sailor report RUNDIR`: draws a controller run (src/ctl/report.h) and summarises it. */
#include <stdio.h>

#include "cli/args.h"
#include "ctl/report.h"
#include "util/log.h"

static int run_report(int argc, char **argv);

enum { OPT_OUTPUT };

static const struct sl_cli_option options[] = {
	[OPT_OUTPUT] = {"output", 'o', "FILE.png|FILE.svg", "where to draw the figure", "RUNDIR/report.png"},
};

const struct sl_cli_command sl_cmd_report = {
	.name = "report",
	.synopsis = "[-o FILE.png|FILE.svg] RUNDIR",
	.summary = "draw a 'sailor control' run: throughput and loss over time, reconfigurations",
	.description =
		"Reads RUNDIR/steps.jsonl and RUNDIR/events.jsonl of 'sailor control' and draws, with\n"
		"gnuplot, throughput (measured and predicted) and loss over time with generations, pool\n"
		"changes and failures marked; prints a summary (reconfiguration times, work lost).\n"
		"The data and the gnuplot script stay in RUNDIR/report/.",
	.options = options,
	.option_count = sizeof(options) / sizeof(options[0]),
	.run = run_report,
};

static int run_report(int argc, char **argv)
{
	struct sl_cli_parser parser;
	sl_cli_parser_init(&parser, &sl_cmd_report, argc, argv);
	const char *output = NULL;
	for (int idx; (idx = sl_cli_next(&parser)) != SL_CLI_END;) {
		if (idx == SL_CLI_ERROR)
			return 2;
		if (idx == SL_CLI_HELP)
			return 0;
		if (idx == OPT_OUTPUT)
			output = parser.arg;
	}
	if (parser.next_index != argc - 1)
		return sl_cli_usage_error(&sl_cmd_report, "give exactly one RUNDIR (the --run-dir "
					  "of 'sailor control')");
	struct sl_err err = {0};
	int rc = sl_ctl_report(argv[parser.next_index], output, stdout, &err);
	if (rc) {
		if (rc == SL_EUSAGE)
			return sl_cli_usage_error(&sl_cmd_report, "%s", err.msg);
		sl_cli_error(&sl_cmd_report, "%s", err.msg);
		return 1;
	}
	return 0;
}
