/* Table-driven option parsing and help: see args.h. */
#include "cli/args.h"

#include "cluster/catalogue.h"
#include "cluster/network.h"
#include "cluster/zone_files.h"
#include "cluster/cluster_file.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void sl_cli_parser_init(struct sl_cli_parser *parser, const struct sl_cli_command *command,
			int argc, char **argv)
{
	memset(parser, 0, sizeof(*parser));
	parser->command = command;
	parser->argc = argc;
	parser->argv = argv;
	size_t n = command->option_count < SL_CLI_MAX_OPTIONS ? command->option_count
							      : SL_CLI_MAX_OPTIONS;
	char *s = parser->short_options;
	*s++ = '+'; /* stop at the first positional argument, like git */
	*s++ = ':'; /* report a missing argument distinctly */
	for (size_t i = 0; i < n; i++) {
		const struct sl_cli_option *opt = &command->options[i];
		parser->long_options[i] = (struct option){
			opt->name, opt->metavar ? required_argument : no_argument, NULL,
			256 + (int)i};
		if (opt->short_name) {
			*s++ = opt->short_name;
			if (opt->metavar)
				*s++ = ':';
		}
	}
	parser->long_options[n] = (struct option){"help", no_argument, NULL, 'h'};
	*s++ = 'h';
	*s = '\0';
	optind = 0; /* full re-initialisation of getopt for each subcommand */
	opterr = 0;
}

int sl_cli_next(struct sl_cli_parser *parser)
{
	const struct sl_cli_command *command = parser->command;
	int c = getopt_long(parser->argc, parser->argv, parser->short_options,
			    parser->long_options, NULL);
	parser->arg = optarg;
	if (c == -1) {
		parser->next_index = optind;
		return SL_CLI_END;
	}
	if (c == 'h') {
		sl_cli_print_help(stdout, command);
		return SL_CLI_HELP;
	}
	if (c >= 256)
		return c - 256;
	for (size_t i = 0; i < command->option_count; i++)
		if (command->options[i].short_name && command->options[i].short_name == c)
			return (int)i;
	const char *bad = parser->argv[optind - 1 >= 0 ? optind - 1 : 0];
	if (c == ':')
		sl_cli_usage_error(command, "option '%s' needs a value", bad);
	else
		sl_cli_usage_error(command, "unknown option '%s'", bad);
	return SL_CLI_ERROR;
}

void sl_cli_print_help(FILE *stream, const struct sl_cli_command *command)
{
	fprintf(stream, "usage: sailor %s %s\n\n%s\n", command->name, command->synopsis,
		command->summary);
	if (command->description)
		fprintf(stream, "\n%s\n", command->description);
	fprintf(stream, "\noptions:\n");
	static const struct sl_cli_option help = {"help", 'h', NULL, "show this help", NULL};
	for (size_t i = 0; i <= command->option_count; i++) {
		const struct sl_cli_option *opt = i < command->option_count ? &command->options[i] : &help;
		char left[96];
		int len = snprintf(left, sizeof(left), "  %c%c%s--%s%s%s",
				   opt->short_name ? '-' : ' ', opt->short_name ? opt->short_name : ' ',
				   opt->short_name ? ", " : "  ", opt->name, opt->metavar ? " " : "",
				   opt->metavar ? opt->metavar : "");
		fprintf(stream, "%s%*s%s", left, len < 34 ? 34 - len : 1, "", opt->help);
		if (opt->default_text)
			fprintf(stream, " (default: %s)", opt->default_text);
		fputc('\n', stream);
	}
	fprintf(stream, "\ndocumentation: docs/%s.md\n", command->name);
}

int sl_cli_error(const struct sl_cli_command *command, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "sailor %s: ", command->name);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

int sl_cli_usage_error(const struct sl_cli_command *command, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "sailor %s: ", command->name);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(try 'sailor %s --help')\n", command->name);
	return 2;
}

int sl_cli_parse_long(const struct sl_cli_command *command, const char *option, const char *text,
		      long long min_value, long long max_value, long long *out)
{
	char *end = NULL;
	errno = 0;
	long long value = strtoll(text, &end, 10);
	if (end == text || *end != '\0')
		return sl_cli_usage_error(command, "--%s: '%s' is not a whole number (give %lld to %lld)",
					  option, text, min_value, max_value);
	if (errno == ERANGE || value < min_value || value > max_value)
		return sl_cli_usage_error(command, "--%s: %s is out of range: give %lld to %lld",
					  option, text, min_value, max_value);
	*out = value;
	return 0;
}

int sl_cli_parse_double(const struct sl_cli_command *command, const char *option, const char *text,
			double min_value, double max_value, double *out)
{
	char *end = NULL;
	errno = 0;
	double value = strtod(text, &end);
	if (end == text || *end != '\0' || isnan(value))
		return sl_cli_usage_error(command, "--%s: '%s' is not a number (give %g to %g)", option,
					  text, min_value, max_value);
	/* ERANGE also flags an underflow to a denormal or 0: no option means such a value */
	if (errno == ERANGE || !isfinite(value) || value < min_value || value > max_value)
		return sl_cli_usage_error(command, "--%s: %s is out of range: give %g to %g", option,
					  text, min_value, max_value);
	*out = value;
	return 0;
}

/* Whether path starts (after blanks) with '{': a JSON file, not a trace CSV. */
static int json_file(const char *path)
{
	FILE *f = fopen(path, "r");
	int c = EOF;
	while (f && (c = fgetc(f)) != EOF && (c == ' ' || c == '\n' || c == '\r' || c == '\t'))
		;
	if (f)
		fclose(f);
	return c == '{';
}

int sl_cli_zones_add(const struct sl_cli_command *command, struct sl_cli_zones *zones,
		     const char *file)
{
	if (zones->count == SL_CLI_MAX_ZONE_FILES)
		return sl_cli_usage_error(command, "--zones: at most %d files",
					  SL_CLI_MAX_ZONE_FILES);
	zones->files[zones->count++] = file;
	return 0;
}

int sl_cli_use_zones(const struct sl_cli_zones *zones, const char *pool, const char *cluster,
		     struct sl_err *err)
{
	int rc = 0;
	for (int i = 0; zones && i < zones->count && !rc; i++)
		rc = sl_zone_files_add_overlay(zones->files[i], err);
	if (!rc && pool && json_file(pool))
		rc = sl_zone_files_add_member(pool, "pool", err);
	if (!rc && cluster && json_file(cluster))
		rc = sl_zone_files_add_member(cluster, "cluster", err);
	return rc;
}

int sl_cli_load_environment_files(const char *network, const char *cluster_path,
				  const struct sl_cli_zones *zones, const char *pool,
				  struct sl_cluster *cluster, int *have, struct sl_err *err)
{
	*have = 0;
	int rc = sl_cli_use_zones(zones, pool, cluster_path, err);
	if (rc || (!network && !cluster_path))
		return rc;
	struct sl_catalogue cat;
	rc = sl_catalogue_load(NULL, &cat, err);
	if (!rc && network)
		rc = sl_network_set_overlay(network, &cat, err);
	if (!rc && cluster_path) {
		rc = sl_cluster_load(cluster_path, &cat, cluster, err);
		*have = !rc;
	}
	return rc;
}
