/* Unit tests of Slurm as the controller's pool source (ctl/pool_watch_slurm.c) without Slurm: a
 * stand-in `scontrol` first on PATH prints the node lines of a file the test rewrites. Nodes
 * that join and leave (the cluster only grows, indices stay), a node sailor cannot use left out
 * and reported once per message, a node described anew, no usable node at the start. The same
 * against the real daemons: tests/integration/slurm_control_dynamic.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "cluster/catalogue.h"
#include "cluster/cluster_file.h"
#include "ctl/pool_watch.h"

static struct sl_catalogue cat;
static char dir[] = "/tmp/sailor-test-slurm-watch-XXXXXX";
static char nodes_path[128];
static int a100, v100, zone_a, zone_b;

static int setup(void **state)
{
	(void)state;
	struct sl_err err = {0};
	if (sl_catalogue_load("data", &cat, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	a100 = sl_catalogue_gpu_index(&cat, "A100-40");
	v100 = sl_catalogue_gpu_index(&cat, "V100-16");
	zone_a = sl_catalogue_zone_index(&cat, "us-central1-a");
	zone_b = sl_catalogue_zone_index(&cat, "us-central1-b");
	if (!mkdtemp(dir))
		return -1;
	snprintf(nodes_path, sizeof(nodes_path), "%s/nodes.txt", dir);
	char script[160], path[4096];
	snprintf(script, sizeof(script), "%s/scontrol", dir);
	FILE *f = fopen(script, "w");
	if (!f)
		return -1;
	fprintf(f, "#!/bin/sh\ncat '%s'\n", nodes_path);
	fclose(f);
	chmod(script, 0755);
	snprintf(path, sizeof(path), "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin");
	setenv("PATH", path, 1);
	unsetenv("SLURM_CONF");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

static void nodes_are(const char *text)
{
	FILE *f = fopen(nodes_path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

#define N1 "NodeName=n1 CPUTot=8 AvailableFeatures=A100-40,us-central1-a Gres=gpu:4 State=IDLE\n"
#define N2 "NodeName=n2 CPUTot=8 AvailableFeatures=V100-16,us-central1-b Gres=gpu:2 State=IDLE\n"
#define X1 "NodeName=x1 CPUTot=8 AvailableFeatures=us-central1-a Gres=gpu:2 State=IDLE\n"
#define X1_FEW_CPUS "NodeName=x1 CPUTot=1 AvailableFeatures=A100-40,us-central1-a Gres=gpu:2 State=IDLE\n"

/* How many problems are waiting; the first one's node and message. */
static int take_problems(struct sl_ctl_pool_watch *w, char *node, char *msg)
{
	int n = 0;
	char nd[SL_CLUSTER_NAME_MAX], m[SL_ERR_MSG_MAX];
	while (sl_ctl_pool_watch_node_problem(w, nd, sizeof(nd), m, sizeof(m))) {
		if (n++ == 0) {
			strcpy(node, nd);
			strcpy(msg, m);
		}
	}
	return n;
}

static void nodes_join_leave_and_bad_ones_are_said_once(void **state)
{
	(void)state;
	struct sl_ctl_pool_watch w;
	struct sl_cluster cluster;
	json_t *cluster_json = NULL;
	struct sl_err err = {0};
	char node[SL_CLUSTER_NAME_MAX], msg[SL_ERR_MSG_MAX], where[2048];
	double t = 100;
	nodes_are(N1 X1);
	assert_int_equal(sl_ctl_pool_watch_init_slurm(&w, NULL, &cat, &cluster, &cluster_json, t,
						      &err), 0);
	assert_int_equal(cluster.host_count, 1);
	assert_int_equal(w.current.counts[a100][zone_a], 4);
	assert_int_equal(take_problems(&w, node, msg), 1);
	assert_string_equal(node, "x1");
	assert_non_null(strstr(msg, "node 'x1': no feature names a GPU type"));

	/* polled again: nothing changed, x1 not said again */
	assert_int_equal(sl_ctl_pool_watch_poll(&w, t += 1, &err), 0);
	assert_int_equal(take_problems(&w, node, msg), 0);

	/* n2 registers: it joins, as host 1 */
	nodes_are(N1 X1 N2);
	assert_int_equal(sl_ctl_pool_watch_poll(&w, t += 1, &err), 1);
	assert_int_equal(cluster.host_count, 2);
	assert_string_equal(cluster.hosts[1].name, "n2");
	assert_int_equal(w.current.counts[v100][zone_b], 2);
	assert_int_equal(json_array_size(json_object_get(cluster_json, "hosts")), 2);
	assert_true(sl_ctl_pool_watch_host_usable(&w, 1));
	sl_ctl_pool_watch_describe(&w, where, sizeof(where));
	assert_non_null(strstr(where, "changed: n2 (new) -> IDLE"));
	assert_non_null(strstr(where, "sailor cannot use: x1"));
	assert_int_equal(take_problems(&w, node, msg), 0);

	/* n1 is deleted: it leaves; the hosts keep their indices */
	nodes_are(X1 N2);
	assert_int_equal(sl_ctl_pool_watch_poll(&w, t += 1, &err), 1);
	assert_int_equal(cluster.host_count, 2);
	assert_false(sl_ctl_pool_watch_host_usable(&w, 0));
	assert_true(sl_ctl_pool_watch_host_usable(&w, 1));
	assert_int_equal(w.current.counts[a100][zone_a], 0);
	sl_ctl_pool_watch_describe(&w, where, sizeof(where));
	assert_non_null(strstr(where, "changed: n1 IDLE -> (gone)"));

	/* x1 gets a GPU type but fewer CPUs than GPUs: another message, said once */
	nodes_are(X1_FEW_CPUS N2);
	assert_int_equal(sl_ctl_pool_watch_poll(&w, t += 1, &err), 0);
	assert_int_equal(take_problems(&w, node, msg), 1);
	assert_non_null(strstr(msg, "node 'x1': 2 GPUs in its Gres but 1 CPUs"));
	assert_int_equal(sl_ctl_pool_watch_poll(&w, t += 1, &err), 0);
	assert_int_equal(take_problems(&w, node, msg), 0);

	/* n1 comes back as a V100 node: host 0 again, described anew */
	nodes_are("NodeName=n1 CPUTot=8 AvailableFeatures=V100-16,us-central1-b Gres=gpu:2 "
		  "State=IDLE\n" X1_FEW_CPUS N2);
	assert_int_equal(sl_ctl_pool_watch_poll(&w, t += 1, &err), 1);
	assert_int_equal(cluster.host_count, 2);
	assert_int_equal(cluster.hosts[0].gpu, v100);
	assert_int_equal(w.current.counts[v100][zone_b], 4);
	const char *gpu = json_string_value(json_object_get(
		json_array_get(json_object_get(cluster_json, "hosts"), 0), "gpu"));
	assert_string_equal(gpu, "V100-16");
	sl_ctl_pool_watch_free(&w);
	sl_cluster_free(&cluster);
	json_decref(cluster_json);
}

static void no_usable_node_at_the_start_is_an_error(void **state)
{
	(void)state;
	struct sl_ctl_pool_watch w;
	struct sl_cluster cluster;
	json_t *cluster_json = NULL;
	struct sl_err err = {0};
	nodes_are(X1);
	assert_int_equal(sl_ctl_pool_watch_init_slurm(&w, NULL, &cat, &cluster, &cluster_json, 0,
						      &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "sailor can use none of the 1 node of slurm (each"));
	assert_non_null(strstr(err.msg, "node 'x1': no feature names a GPU type"));
	sl_ctl_pool_watch_free(&w);
	sl_cluster_free(&cluster);
	json_decref(cluster_json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nodes_join_leave_and_bad_ones_are_said_once),
		cmocka_unit_test(no_usable_node_at_the_start_is_an_error),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
