/* Unit tests for Slurm's nodes as hosts and pool (cluster/slurm.h), on scontrol --oneliner text
 * as Slurm 22.05 prints it (no slurmctld needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/catalogue.h"
#include "cluster/slurm.h"
#include "cluster/slurm_health.h"

static struct sl_catalogue cat;

static int setup(void **state)
{
	(void)state;
	struct sl_err err = {0};
	if (sl_catalogue_load("data", &cat, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	return 0;
}

/* three nodes as scontrol prints them: OS= and Reason= hold blanks */
static const char *const text =
	"NodeName=n1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=0.10 "
	"AvailableFeatures=A100-40,us-central1-a,ib ActiveFeatures=A100-40,us-central1-a,ib "
	"Gres=gpu:a100:4(S:0-1) NodeAddr=10.0.0.1 NodeHostName=n1 Version=22.05.8 OS=Linux 6.1 #1 "
	"SMP PREEMPT_DYNAMIC  RealMemory=1000 AllocMem=0 State=MIXED ThreadsPerCore=1 "
	"Partitions=gpu,debug BootTime=2026-11-25T10:59:53\n"
	"NodeName=n2 Arch=x86_64 AvailableFeatures=V100-16,us-central1-b "
	"ActiveFeatures=V100-16,us-central1-b Gres=gpu:2,mps:100 NodeAddr=n2 NodeHostName=n2 "
	"OS=Linux 6.1 #1 SMP State=IDLE+DRAIN Partitions=gpu Reason=bad fan State=IDLE "
	"[root@2026-11-25T11:07:00]\n"
	"NodeName=n3 Arch=x86_64 AvailableFeatures=A100-40,us-central1-a Gres=gpu:4 "
	"NodeAddr=10.0.0.3 State=DOWN* Partitions=debug Reason=Not responding\n";

static void parses_nodes_and_states(void **state)
{
	(void)state;
	struct sl_slurm_nodes nodes;
	struct sl_err err = {0};
	assert_int_equal(sl_slurm_parse_nodes(text, NULL, &nodes, &err), 0);
	assert_int_equal(nodes.count, 3);
	assert_string_equal(nodes.nodes[0].name, "n1");
	assert_string_equal(nodes.nodes[0].address, "10.0.0.1");
	assert_string_equal(nodes.nodes[0].features, "A100-40,us-central1-a,ib");
	assert_int_equal(nodes.nodes[0].gpus, 4);        /* gpu:a100:4(S:0-1) */
	assert_true(nodes.nodes[0].usable);               /* MIXED */
	assert_int_equal(nodes.nodes[1].gpus, 2);        /* gpu:2,mps:100 */
	assert_string_equal(nodes.nodes[1].state, "IDLE+DRAIN"); /* not the Reason's "State=" */
	assert_false(nodes.nodes[1].usable);
	assert_false(nodes.nodes[2].usable);              /* DOWN* */
	sl_slurm_nodes_free(&nodes);
	/* a partition keeps its nodes only, by exact name */
	assert_int_equal(sl_slurm_parse_nodes(text, "gpu", &nodes, &err), 0);
	assert_int_equal(nodes.count, 2);
	sl_slurm_nodes_free(&nodes);
	assert_int_equal(sl_slurm_parse_nodes(text, "gp", &nodes, &err), 0);
	assert_int_equal(nodes.count, 0);
	sl_slurm_nodes_free(&nodes);
}

/* A node Slurm lost (down, not responding) is told from one an admin drained, which still
 * runs its job: `run --slurm` names a lost node as a generation's failure. */
static void a_lost_node_is_down_or_not_responding(void **state)
{
	(void)state;
	assert_true(sl_slurm_state_lost("DOWN"));
	assert_true(sl_slurm_state_lost("DOWN+NOT_RESPONDING"));
	assert_true(sl_slurm_state_lost("ALLOCATED+NOT_RESPONDING"));
	assert_true(sl_slurm_state_lost("IDLE*"));
	assert_false(sl_slurm_state_lost("ALLOCATED"));
	assert_false(sl_slurm_state_lost("MIXED+DRAIN"));
	assert_false(sl_slurm_state_lost("IDLE"));
}

static void cluster_and_pool(void **state)
{
	(void)state;
	struct sl_slurm_nodes nodes;
	struct sl_cluster cluster;
	struct sl_err err = {0};
	assert_int_equal(sl_slurm_parse_nodes(text, NULL, &nodes, &err), 0);
	assert_int_equal(sl_slurm_to_cluster(&nodes, &cat, &cluster, &err), 0);
	assert_int_equal(cluster.host_count, 3);
	int a100 = sl_catalogue_gpu_index(&cat, "A100-40");
	int za = sl_catalogue_zone_index(&cat, "us-central1-a");
	assert_int_equal(cluster.hosts[0].gpu, a100);
	assert_int_equal(cluster.hosts[0].zone, za);
	assert_int_equal(cluster.hosts[0].slots, 4);
	struct sl_pool pool;
	sl_slurm_pool(&nodes, &cluster, &pool);
	/* only n1 is usable: n2 drained, n3 down */
	assert_int_equal(sl_pool_total(&pool), 4);
	assert_int_equal(pool.counts[a100][za], 4);
	char line[512];
	sl_slurm_describe(&nodes, line, sizeof(line));
	assert_string_equal(line, "every partition: 3 nodes, 1 usable (left out: n2 IDLE+DRAIN, n3 "
				  "DOWN*)");
	sl_cluster_free(&cluster);
	sl_slurm_nodes_free(&nodes);
}

static void bad_features_are_named(void **state)
{
	(void)state;
	static const struct {
		const char *line, *want;
	} cases[] = {
		{"NodeName=x AvailableFeatures=us-central1-a Gres=gpu:2 State=IDLE\n",
		 "node 'x': no feature names a GPU type sailor knows (features: 'us-central1-a'"},
		{"NodeName=x AvailableFeatures=(null) Gres=gpu:2 State=IDLE\n",
		 "node 'x': no feature names a GPU type sailor knows (features: ''"},
		{"NodeName=x AvailableFeatures=A100-40,mars-1a Gres=gpu:2 State=IDLE\n",
		 "node 'x': no feature names a zone sailor knows (features: 'A100-40,mars-1a'"},
		{"NodeName=x AvailableFeatures=A100-40,V100-16,us-central1-a Gres=gpu:2 State=IDLE\n",
		 "node 'x': features 'A100-40,V100-16,us-central1-a' name two GPU types"},
		{"NodeName=x AvailableFeatures=A100-40,us-central1-a Gres=(null) State=IDLE\n",
		 "node 'x': 0 GPUs in its Gres; give it Gres=gpu:<count>"},
		{"NodeName=x CPUTot=1 AvailableFeatures=A100-40,us-central1-a Gres=gpu:2 State=IDLE\n",
		 "node 'x': 2 GPUs in its Gres but 1 CPUs; each GPU takes a task of one CPU: give "
		 "it Gres=gpu:1, or at least CPUs=2"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sl_slurm_nodes nodes;
		struct sl_cluster cluster;
		struct sl_err err = {0};
		assert_int_equal(sl_slurm_parse_nodes(cases[i].line, NULL, &nodes, &err), 0);
		assert_int_equal(sl_slurm_to_cluster(&nodes, &cat, &cluster, &err), SL_EINPUT);
		if (!strstr(err.msg, cases[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].want);
		/* the one node alone says the same (the controller's per-node check) */
		struct sl_host host;
		struct sl_err one = {0};
		assert_int_equal(sl_slurm_node_host(&nodes.nodes[0], &cat, &host, &one), SL_EINPUT);
		assert_string_equal(one.msg, err.msg);
		sl_slurm_nodes_free(&nodes);
	}
}

/* The slurmd probe (slurm_health.h) against a port of this process: a listening socket answers;
 * the same port closed refuses; a name that does not resolve counts as refused. */
static void slurmd_probe_answers_and_refusals(void **state)
{
	(void)state;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t len = sizeof(a);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	assert_int_equal(listen(fd, 4), 0);
	int port = ntohs(a.sin_port);
	const char *addresses[] = {"127.0.0.1", "no-such-node.invalid"};
	signed char found[2];
	assert_int_equal(sl_slurm_health_probe(addresses, 2, port, 1.0, found, NULL), 0);
	assert_int_equal(found[0], SL_SLURM_HEALTH_ANSWERS);
	assert_int_equal(found[1], SL_SLURM_HEALTH_REFUSED);
	close(fd); /* nothing listens there now */
	assert_int_equal(sl_slurm_health_probe(addresses, 1, port, 1.0, found, NULL), 0);
	assert_int_equal(found[0], SL_SLURM_HEALTH_REFUSED);
}

/* scancel (a stand-in first on PATH that writes its arguments): a signal goes to running jobs
 * only (scancel retries a signal to a pending job for minutes: bench/chaos_slurm.sh found the
 * controller held 30 s by it); a cancel takes every job of the name, pending ones too; the
 * pending ones alone can be cancelled (a stop of a job that has not started). */
static void a_signal_goes_to_running_jobs_only(void **state)
{
	(void)state;
	char dir[] = "/tmp/sailor-test-scancel-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char script[96], args[96], path[8300], line[256] = "", old_path[8192];
	snprintf(script, sizeof(script), "%s/scancel", dir);
	snprintf(args, sizeof(args), "%s/args", dir);
	FILE *f = fopen(script, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\necho \"$*\" >'%s'\n", args);
	fclose(f);
	assert_int_equal(chmod(script, 0755), 0);
	snprintf(old_path, sizeof(old_path), "%s", getenv("PATH") ? getenv("PATH") : "/usr/bin");
	snprintf(path, sizeof(path), "%s:%s", dir, old_path);
	setenv("PATH", path, 1);
	struct sl_err err = {0};
	assert_int_equal(sl_slurm_cancel_name("sailor-run-7", "USR2", &err), 0);
	f = fopen(args, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_string_equal(line, "--name=sailor-run-7 --signal=USR2 --state=RUNNING\n");
	assert_int_equal(sl_slurm_cancel_name("sailor-run-7", NULL, &err), 0);
	f = fopen(args, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_string_equal(line, "--name=sailor-run-7\n");
	assert_int_equal(sl_slurm_cancel_pending("sailor-run-7", &err), 0);
	f = fopen(args, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_string_equal(line, "--name=sailor-run-7 --state=PENDING\n");
	setenv("PATH", old_path, 1);
	unlink(args);
	unlink(script);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses_nodes_and_states),
		cmocka_unit_test(a_lost_node_is_down_or_not_responding),
		cmocka_unit_test(cluster_and_pool),
		cmocka_unit_test(bad_features_are_named),
		cmocka_unit_test(slurmd_probe_answers_and_refusals),
		cmocka_unit_test(a_signal_goes_to_running_jobs_only),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
