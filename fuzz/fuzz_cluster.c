/* Fuzz target: cluster files (sailor.cluster/1) through sl_cluster_load, the entry point of
 * `sailor run --cluster`, `sailor profile --network --cluster` and `sailor control --cluster`,
 * then what `sailor run` does with an accepted one before it starts mpirun: place a plan's
 * ranks on the hosts (sl_placement_assign), format the hostfile and rankfile, and build the mpirun
 * command line (sl_launch_build, which writes the two files into the fuzz folder).
 *
 * The plan is made from the cluster itself so that placement is reached with hosts that exist:
 * two stages of OPT-350, D pipelines (1 to 4), replica j of stage k on the GPU type and zone of
 * host (j + k) mod H with TP degree 1, 2 or 4 (at most the GPU's gpus_per_node). D and the TP
 * degree come from the input's length, so the same file always gets the same plan.
 *
 * Invariants checked on accepted files: the loader's (cluster_file.h: host count, names and
 * addresses of [A-Za-z0-9._-] and unique names, valid catalogue indices, slots in range, no
 * reserved mpirun option); after a successful placement every rank sits on a host of its
 * replica's GPU type and zone, a TP group on one host, no host over its slots; the hostfile's
 * slots add up to those of the hosts used, the rankfile has one "rank r=<address> slot=0:*" line per rank
 * in rank order, and no line holds a character OpenMPI's parsers would split on. The hostfile
 * lists only hosts that run ranks (see sl_launch_format_hostfile). */
#include <jansson.h>

#include "cluster/catalogue.h"
#include "cluster/cluster_file.h"
#include "runtime/launch.h"
#include "plan/placement.h"
#include "plan/roles.h"
#include "fuzz_util.h"
#include "plan/plan.h"

static int name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= SL_CLUSTER_NAME_MAX)
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static void check_loaded(const struct sl_cluster *c, const struct sl_catalogue *cat)
{
	fuzz_assert(c->host_count >= 1 && c->host_count <= SL_CLUSTER_MAX_HOSTS);
	for (int i = 0; i < c->host_count; i++) {
		const struct sl_host *h = &c->hosts[i];
		fuzz_assert(name_ok(h->name) && name_ok(h->address));
		fuzz_assert(h->gpu >= 0 && h->gpu < cat->gpu_count);
		fuzz_assert(h->zone >= 0 && h->zone < cat->zone_count);
		fuzz_assert(h->slots >= 1 && h->slots <= SL_CLUSTER_MAX_SLOTS);
		/* names are unique; quadratic only up to a bound, the loader itself sorts */
		for (int k = 0; k < i && k < 64; k++)
			fuzz_assert(strcmp(c->hosts[k].name, h->name) != 0);
	}
	fuzz_assert(!c->agent || c->agent[0]);
	for (int i = 0; i < c->mpirun_arg_count; i++) {
		fuzz_assert(c->mpirun_args[i] != NULL);
		fuzz_assert(strcmp(c->mpirun_args[i], "-np") && strcmp(c->mpirun_args[i], "--hostfile") &&
			    strcmp(c->mpirun_args[i], "--rankfile") && strcmp(c->mpirun_args[i], "--host"));
	}
	fuzz_assert(!c->mpirun_args || c->mpirun_args[c->mpirun_arg_count] == NULL);
}

/* The two-stage plan described above; 0 when it could be made. */
static int make_plan(const struct sl_cluster *c, const struct sl_catalogue *cat, size_t size,
		     struct sl_plan *plan)
{
	struct sl_err err = {0};
	int D = 1 + (int)(size % 4);
	int tp_want = 1 << (int)((size / 4) % 3);
	if (sl_plan_reserve(plan, 2, D, &err))
		return -1;
	plan->micro_batch = 1;
	plan->global_batch = 4 * D;
	plan->stages[0].first_layer = 0;
	plan->stages[0].last_layer = 12;
	plan->stages[1].first_layer = 13;
	plan->stages[1].last_layer = 25;
	for (int k = 0; k < 2; k++)
		for (int j = 0; j < D; j++) {
			const struct sl_host *h = &c->hosts[(j + k) % c->host_count];
			struct sl_replica *r = sl_plan_replica(plan, k, j);
			int per_node = cat->gpus[h->gpu].gpus_per_node;
			r->gpu = (short)h->gpu;
			r->zone = (short)h->zone;
			r->tp = (short)(tp_want < per_node ? tp_want : per_node);
			r->pad = 0;
		}
	return 0;
}

/* Every line of text ends in a newline and holds no control character; returns the lines that
 * are not comments ("#" first). */
static int count_lines(const char *text)
{
	int lines = 0, start = 1;
	for (const char *p = text; *p; p++) {
		fuzz_assert((unsigned char)*p >= 0x20 || *p == '\n');
		if (start && *p != '#')
			lines++;
		start = *p == '\n';
	}
	fuzz_assert(!*text || text[strlen(text) - 1] == '\n');
	return lines;
}

/* The first line of text that is not a comment. */
static char *skip_comments(char *text)
{
	while (*text == '#') {
		char *end = strchr(text, '\n');
		fuzz_assert(end != NULL);
		text = end + 1;
	}
	return text;
}

static void check_placed(const struct sl_role_table *t, const struct sl_cluster *c)
{
	int *used = calloc((size_t)c->host_count, sizeof(int));
	fuzz_assert(used != NULL);
	for (int r = 0; r < t->world_size; r++) {
		const struct sl_role *role = &t->roles[r];
		fuzz_assert(role->host >= 0 && role->host < c->host_count);
		const struct sl_host *h = &c->hosts[role->host];
		fuzz_assert(h->gpu == role->gpu && h->zone == role->zone);
		const struct sl_role *first = &t->roles[r - role->tp_rank];
		fuzz_assert(first->host == role->host);
		used[role->host]++;
	}
	for (int i = 0; i < c->host_count; i++)
		fuzz_assert(used[i] <= c->hosts[i].slots);

	struct sl_err err = {0};
	char *hostfile = sl_launch_format_hostfile(t, c, &err);
	char *rankfile = sl_launch_format_rankfile(t, c, &err);
	fuzz_assert(hostfile && rankfile);
	count_lines(hostfile);
	fuzz_assert(count_lines(rankfile) == t->world_size);
	/* the hostfile lists the hosts that run ranks, their slots summed per address */
	long long want = 0, got = 0;
	for (int i = 0; i < c->host_count; i++)
		want += used[i] ? c->hosts[i].slots : 0;
	free(used);
	for (char *line = skip_comments(hostfile); *line; line = skip_comments(line)) {
		char *end = strchr(line, '\n');
		fuzz_assert(end != NULL);
		char *slots = strstr(line, " slots=");
		fuzz_assert(slots && slots < end);
		got += strtoll(slots + 7, NULL, 10);
		line = end + 1;
	}
	fuzz_assert(got == want);
	int r = 0;
	for (char *line = skip_comments(rankfile); *line; r++, line = skip_comments(line)) {
		char *end = strchr(line, '\n');
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "rank %d=", r);
		fuzz_assert(!strncmp(line, prefix, strlen(prefix)));
		char *addr = line + strlen(prefix);
		size_t n = strspn(addr, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					"0123456789._-");
		fuzz_assert(n > 0 && !strncmp(addr + n, " slot=0:*\n", 10) && addr + n + 9 == end);
		line = end + 1;
	}
	free(hostfile);
	free(rankfile);

	/* the command line, as `sailor run` builds it (the files go into the fuzz folder) */
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/launch", fuzz_dir());
	fuzz_path(dir, sizeof(dir), "launch/x");
	*strrchr(dir, '/') = '\0';
	const char *worker[] = {"/bin/true", "run", NULL};
	struct sl_launch_opts lo = {.mpirun = "mpirun", .dir = dir, .threads_per_rank = 1};
	struct sl_launch_cmd cmd;
	memset(&cmd, 0, sizeof(cmd));
	if (!sl_launch_build(t, c, &lo, worker, &cmd, &err)) {
		fuzz_assert(cmd.argc >= 3 && cmd.argv[cmd.argc] == NULL);
		fuzz_assert(!strcmp(cmd.argv[cmd.argc - 1], "run"));
	}
	sl_launch_cmd_free(&cmd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sl_catalogue cat;
	static int loaded;
	struct sl_err err = {0};
	fuzz_setup();
	if (!loaded && sl_catalogue_load(NULL, &cat, &err)) {
		fprintf(stderr, "fuzz_cluster: %s\n", err.msg);
		abort();
	}
	loaded = 1;
	const char *path = fuzz_write("cluster.json", data, size);
	struct sl_cluster c;
	if (sl_cluster_load(path, &cat, &c, &err)) {
		fuzz_assert(c.host_count == 0 && c.hosts == NULL && err.msg[0]);
		return 0;
	}
	check_loaded(&c, &cat);
	struct sl_plan plan;
	sl_plan_init(&plan);
	struct sl_role_table table;
	memset(&table, 0, sizeof(table));
	if (!make_plan(&c, &cat, size, &plan) &&
	    !sl_role_table_build(&plan, plan.global_batch, &table, &err)) {
		if (!sl_placement_assign(&table, &c, &cat, &err))
			check_placed(&table, &c);
		else
			for (int r = 0; r < table.world_size; r++)
				fuzz_assert(table.roles[r].host == -1);
	}
	sl_role_table_free(&table);
	sl_plan_free(&plan);
	sl_cluster_free(&c);
	return 0;
}
