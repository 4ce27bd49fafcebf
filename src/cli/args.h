/* Command-line options declared once per subcommand, used both to parse (getopt_long) and to
 * print --help, so the help text cannot drift from what is accepted.
 *
 * Usage in a subcommand:
 *   static const struct sl_cli_option options[] = {
 *       {"model", 'm', "NAME|FILE", "model to simulate", NULL},
 *       {"json", 0, NULL, "print one JSON object on stdout", NULL},
 *   };
 *   struct sl_cli_parser parser;
 *   sl_cli_parser_init(&parser, &command, argc, argv);
 *   for (int idx; (idx = sl_cli_next(&parser)) != SL_CLI_END;) {
 *       if (idx == SL_CLI_ERROR) return 2;          // message already printed
 *       if (idx == SL_CLI_HELP) return 0;           // help already printed
 *       ... options[idx], parser.arg ...
 *   }
 *   positional arguments: argv[parser.next_index .. argc-1]
 */
#ifndef SL_CLI_ARGS_H
#define SL_CLI_ARGS_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

struct sl_cli_option {
	const char *name;        /* long name, kebab-case, without "--" */
	char short_name;         /* 0 for none */
	const char *metavar;     /* NULL for a flag without argument */
	const char *help;        /* one line */
	const char *default_text;/* shown as "(default: ...)", NULL for none */
};

struct sl_cli_command {
	const char *name;        /* "simulate" */
	const char *synopsis;    /* "--model M --plan FILE [options]" */
	const char *summary;     /* one line, shown by `sailor --help` */
	const char *description; /* a paragraph shown by `sailor NAME --help`, may be NULL */
	const struct sl_cli_option *options;
	size_t option_count;
	int (*run)(int argc, char **argv); /* returns the exit status: 0 ok, 1 failure, 2 usage */
};

enum { SL_CLI_END = -1, SL_CLI_ERROR = -2, SL_CLI_HELP = -3 };

#define SL_CLI_MAX_OPTIONS 48

/* The help of --profiles, which simulate, validate and plan share (sl_sim_env_load_overlaid). */
#define SL_CLI_PROFILES_HELP \
	"DIR/<MODEL>/<GPU>.json replace the shipped profiles (e.g. data/profiles-sosp25-simulator)"

/* The help of --gpus, which simulate, validate, plan and run share (sl_catalogue_set_overlay). */
#define SL_CLI_GPUS_HELP \
	"more device types (sailor.gpus/1, e.g. data/testbed/gpus-cpu.json) beside data/gpus.json"

/* --network and --cluster, which simulate and validate share (our runtime's plans). */
#define SL_CLI_NETWORK_HELP \
	"measured links (sailor.network/1, from `sailor profile --network`) over the shipped fits"
#define SL_CLI_CLUSTER_HELP \
	"hosts the ranks run on (sailor.cluster/1): our runtime's model places them as `sailor run` does"

/* --zones, which plan, simulate, validate, control and run share (cluster/zone_files.h). */
#define SL_CLI_ZONES_HELP \
	"more zones, prices and links (sailor.zones/1) over data/zones/*.json; repeatable"
#define SL_CLI_MAX_ZONE_FILES 8

struct sl_cluster;
struct sl_err;
struct sl_cli_command;
/* The --zones files of a command line, in order. */
struct sl_cli_zones {
	const char *files[SL_CLI_MAX_ZONE_FILES];
	int count;
};
/* Records one --zones FILE; returns 2 (a usage error, said) past SL_CLI_MAX_ZONE_FILES. */
int sl_cli_zones_add(const struct sl_cli_command *command, struct sl_cli_zones *zones,
		     const char *file);
/* Adds the command's zones to the zone catalogue: the --zones files (in order), then the
 * "zones" of its pool and cluster files (NULL: none; a file that is not JSON has none). After
 * --gpus, whatever the order of the options, so that a zone file may price its types. */
int sl_cli_use_zones(const struct sl_cli_zones *zones, const char *pool, const char *cluster,
		     struct sl_err *err);

/* Adds the zones (sl_cli_use_zones: zones and the "zones" of the pool and cluster files, each
 * may be NULL), applies --network (NULL: none) and loads --cluster (NULL: none; else *cluster is
 * filled and *have set) against the catalogue as --gpus and the zones left it. */
int sl_cli_load_environment_files(const char *network, const char *cluster_path,
				  const struct sl_cli_zones *zones, const char *pool,
				  struct sl_cluster *cluster, int *have, struct sl_err *err);

struct sl_cli_parser {
	const struct sl_cli_command *command;
	int argc;
	char **argv;
	struct option long_options[SL_CLI_MAX_OPTIONS + 2];
	char short_options[3 * SL_CLI_MAX_OPTIONS + 4];
	const char *arg;   /* the current option's argument, or NULL */
	int next_index;    /* after SL_CLI_END: index of the first positional argument */
};

void sl_cli_parser_init(struct sl_cli_parser *parser, const struct sl_cli_command *command,
			int argc, char **argv);
/* Returns the index of the next option in command->options, or SL_CLI_END / SL_CLI_ERROR /
 * SL_CLI_HELP. -h/--help is handled here. */
int sl_cli_next(struct sl_cli_parser *parser);

void sl_cli_print_help(FILE *stream, const struct sl_cli_command *command);

/* Prints "sailor NAME: <message>\n(try 'sailor NAME --help')" on stderr; returns 2. */
/* The one way a command reports a failure: "sailor <command>: <message>" on stderr. Returns 1
 * (the exit status of a failure). Usage errors go through sl_cli_usage_error instead. */
int sl_cli_error(const struct sl_cli_command *command, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

int sl_cli_usage_error(const struct sl_cli_command *command, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parses a whole number or a finite double in [min_value, max_value] from an option argument
 * (the ranges come from util/limits.h). Anything else gets one usage error naming the option,
 * the value and the range; returns 2 then, 0 on success. */
int sl_cli_parse_long(const struct sl_cli_command *command, const char *option, const char *text,
		      long long min_value, long long max_value, long long *out);
int sl_cli_parse_double(const struct sl_cli_command *command, const char *option, const char *text,
			double min_value, double max_value, double *out);

/* The subcommand table (src/cli/commands.c). */
extern const struct sl_cli_command *const sl_cli_commands[];
extern const size_t sl_cli_command_count;

#endif
