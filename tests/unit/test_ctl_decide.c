/* Unit tests of the controller's decisions (ctl/decide.h): host health and exclusion, the
 * effective pool, the launcher's death lines, what a pool change does, how a generation ended,
 * the liveness probe's verdict and the parts of a reconfiguration. No processes are started. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cluster/catalogue.h"
#include "ctl/decide.h"

static struct sl_catalogue cat;
static struct sl_cluster cluster;
static int a100, v100, zone_a, zone_b;

/* hosts: 0 a100-0 (A100-40, zone a, 2 slots), 1 a100-1 (same), 2 v100-0 (V100-16, zone b, 2) */
static int setup(void **state)
{
	(void)state;
	struct sl_err err = {0};
	if (sl_catalogue_load("data", &cat, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	json_t *j = json_loads(
		"{\"schema\": \"sailor.cluster/1\", \"hosts\": ["
		"{\"name\": \"a100-0\", \"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"slots\": 2},"
		"{\"name\": \"a100-1\", \"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"slots\": 2},"
		"{\"name\": \"v100-0\", \"gpu\": \"V100-16\", \"zone\": \"us-central1-b\", \"slots\": 2}"
		"]}", 0, NULL);
	int rc = sl_cluster_from_json(j, "test", &cat, &cluster, &err);
	json_decref(j);
	if (rc) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	a100 = sl_catalogue_gpu_index(&cat, "A100-40");
	v100 = sl_catalogue_gpu_index(&cat, "V100-16");
	zone_a = sl_catalogue_zone_index(&cat, "us-central1-a");
	zone_b = sl_catalogue_zone_index(&cat, "us-central1-b");
	return a100 < 0 || v100 < 0 || zone_a < 0 || zone_b < 0;
}

static int teardown(void **state)
{
	(void)state;
	sl_cluster_free(&cluster);
	return 0;
}

static struct sl_pool pool_of(int a100_count, int v100_count)
{
	struct sl_pool p;
	memset(&p, 0, sizeof(p));
	p.counts[a100][zone_a] = a100_count;
	p.counts[v100][zone_b] = v100_count;
	return p;
}

static void host_excluded_after_repeated_failures(void **state)
{
	(void)state;
	struct sl_ctl_hosts h;
	sl_ctl_hosts_init(&h, cluster.host_count);
	assert_int_equal(h.count, 3);
	/* exclude_after 2: the first failure is forgiven, the second leaves it out, once */
	assert_int_equal(sl_ctl_hosts_record_failure(&h, 1, 2), 0);
	assert_int_equal(h.excluded[1], 0);
	assert_int_equal(sl_ctl_hosts_record_failure(&h, 1, 2), 1);
	assert_int_equal(h.excluded[1], 1);
	assert_int_equal(sl_ctl_hosts_record_failure(&h, 1, 2), 0); /* already out */
	assert_int_equal(h.fails[1], 3);
	/* other hosts are untouched; out-of-range hosts are ignored */
	assert_int_equal(h.fails[0] + h.fails[2], 0);
	assert_int_equal(sl_ctl_hosts_record_failure(&h, -1, 2), 0);
	assert_int_equal(sl_ctl_hosts_record_failure(&h, 3, 2), 0);
	/* exclude_after 1 excludes at once; 0 never */
	assert_int_equal(sl_ctl_hosts_record_failure(&h, 2, 1), 1);
	assert_int_equal(sl_ctl_hosts_record_failure(&h, 0, 0), 0);
	assert_int_equal(sl_ctl_hosts_record_failure(&h, 0, 0), 0);
	assert_int_equal(h.excluded[0], 0);
	/* hosts that joined (Slurm's dynamic nodes): admitted, no failures; the others keep theirs;
	 * a smaller count shrinks nothing */
	sl_ctl_hosts_grow(&h, 5);
	assert_int_equal(h.count, 5);
	assert_int_equal(h.fails[3] + h.fails[4] + h.excluded[3] + h.excluded[4], 0);
	assert_int_equal(h.excluded[1], 1);
	assert_int_equal(sl_ctl_hosts_record_failure(&h, 4, 1), 1);
	sl_ctl_hosts_grow(&h, 2);
	assert_int_equal(h.count, 5);
}

static void excluded_host_stays_out_until_the_pool_offers_its_kind_again(void **state)
{
	(void)state;
	struct sl_ctl_hosts h;
	sl_ctl_hosts_init(&h, cluster.host_count);
	sl_ctl_hosts_record_failure(&h, 1, 2);
	sl_ctl_hosts_record_failure(&h, 1, 2);
	sl_ctl_hosts_record_failure(&h, 2, 2); /* one failure of the V100 host: not out */
	assert_int_equal(h.excluded[1], 1);
	int back[4] = {-1, -1, -1, -1};
	/* a change of another kind (V100s 2 -> 4) readmits nothing of the A100s, and forgets the
	 * V100 host's failure (its kind came back in greater number) */
	struct sl_pool p0 = pool_of(4, 2), p1 = pool_of(4, 4);
	assert_int_equal(sl_ctl_hosts_pool_changed(&h, &cluster, &p0, &p1, back, 4), 0);
	assert_int_equal(h.excluded[1], 1);
	assert_int_equal(h.fails[2], 0);
	/* fewer A100s: still out */
	struct sl_pool p2 = pool_of(2, 4);
	assert_int_equal(sl_ctl_hosts_pool_changed(&h, &cluster, &p1, &p2, back, 4), 0);
	assert_int_equal(h.excluded[1], 1);
	/* the same number again (4 -> 2 -> 2 is no offer): still out */
	assert_int_equal(sl_ctl_hosts_pool_changed(&h, &cluster, &p2, &p2, back, 4), 0);
	/* more A100s than before: it is back, failures forgotten, and named */
	struct sl_pool p3 = pool_of(3, 4);
	assert_int_equal(sl_ctl_hosts_pool_changed(&h, &cluster, &p2, &p3, back, 4), 1);
	assert_int_equal(back[0], 1);
	assert_int_equal(h.excluded[1], 0);
	assert_int_equal(h.fails[1], 0);
	/* and it takes exclude_after new failures to leave it out again */
	assert_int_equal(sl_ctl_hosts_record_failure(&h, 1, 2), 0);
	assert_int_equal(sl_ctl_hosts_record_failure(&h, 1, 2), 1);
}

static void effective_pool_counts_only_hosts_not_left_out(void **state)
{
	(void)state;
	struct sl_ctl_hosts h;
	sl_ctl_hosts_init(&h, cluster.host_count);
	struct sl_pool p = pool_of(8, 1), out;
	/* a pool of 8 A100s on 2 hosts of 2 slots: 4 usable; the V100 pool (1) is below its slots */
	sl_ctl_effective_pool(&p, &cluster, &h, &out);
	assert_int_equal(out.counts[a100][zone_a], 4);
	assert_int_equal(out.counts[v100][zone_b], 1);
	h.excluded[0] = 1;
	sl_ctl_effective_pool(&p, &cluster, &h, &out);
	assert_int_equal(out.counts[a100][zone_a], 2);
	h.excluded[1] = 1;
	sl_ctl_effective_pool(&p, &cluster, &h, &out);
	assert_int_equal(out.counts[a100][zone_a], 0);
	assert_int_equal(out.counts[v100][zone_b], 1);
	/* a kind the cluster has no host for is never usable */
	int h100 = sl_catalogue_gpu_index(&cat, "H100-80");
	assert_true(h100 >= 0);
	p.counts[h100][zone_a] = 5;
	sl_ctl_effective_pool(&p, &cluster, &h, &out);
	assert_int_equal(out.counts[h100][zone_a], 0);
	assert_int_equal(sl_ctl_host_index(&cluster, "v100-0"), 2);
	assert_int_equal(sl_ctl_host_index(&cluster, "v100"), -1);
}

static void launcher_death_lines(void **state)
{
	(void)state;
	int rank = -1;
	char host[16];
	const char *died = "sailor run: rank 3 (stage 1, pipeline 0, tp rank 1 of 2, layers "
			   "2-3, A100-40 in us-central1-a, on a100-1) died (signal 9, Killed) during "
			   "step 17; the job was stopped";
	assert_int_equal(sl_ctl_parse_rank_death(died, &rank, host, sizeof(host)), 1);
	assert_int_equal(rank, 3);
	assert_string_equal(host, "a100-1");
	const char *failed = "sailor run: rank 0 (stage 0, pipeline 0, tp rank 0 of 1, layers "
			     "0-3, V100-16 in us-central1-b, on v100-0) failed during step 1; ...";
	assert_int_equal(sl_ctl_parse_rank_death(failed, &rank, host, sizeof(host)), 1);
	assert_int_equal(rank, 0);
	assert_string_equal(host, "v100-0");
	/* signal 15 is the controller's own stop, not a death */
	const char *stopped = "sailor run: rank 1 (stage 0, pipeline 0, tp rank 1 of 2, layers "
			      "0-3, A100-40 in us-central1-a, on a100-0) died (signal 15, "
			      "Terminated) during step 5";
	assert_int_equal(sl_ctl_parse_rank_death(stopped, &rank, host, sizeof(host)), 0);
	/* a long host name is cut to the buffer, NUL-terminated */
	const char *longname = "rank 2 (stage 0, on a-very-long-host-name-indeed) died (signal 9, "
			       "Killed)";
	assert_int_equal(sl_ctl_parse_rank_death(longname, &rank, host, sizeof(host)), 1);
	assert_int_equal(strlen(host), sizeof(host) - 1);
	assert_memory_equal(host, "a-very-long-hos", sizeof(host));
	/* other lines: progress, mpirun chatter, half a line */
	assert_int_equal(sl_ctl_parse_rank_death("step 10/100 loss 3.2", &rank, host, 16), 0);
	assert_int_equal(sl_ctl_parse_rank_death("mpirun: Forwarding signal 10 to job", &rank,
						 host, 16), 0);
	assert_int_equal(sl_ctl_parse_rank_death("rank 2 (stage 0, on a100-0", &rank, host, 16), 0);
	assert_int_equal(sl_ctl_parse_rank_death("rank x (stage 0, on h) died", &rank, host, 16),
			 0);
}

/* What says a job lost ranks: OpenMPI's messages as a surviving rank prints them (through
 * srun, one line at a time; measured on the Slurm testbed, slurm_control_node_death.sh) and
 * srun's node failure; nothing else. */
static void peer_lost_lines(void **state)
{
	(void)state;
	char what[64];
	assert_int_equal(sl_ctl_parse_peer_lost("An MPI communication peer process has unexpectedly "
						"disconnected.  This", what, sizeof(what)), 1);
	assert_string_equal(what, "MPI: a peer process disconnected");
	assert_int_equal(sl_ctl_parse_peer_lost("WARNING: Open MPI failed to TCP connect to a peer "
						"MPI process.  This", what, sizeof(what)), 1);
	assert_string_equal(what, "MPI: a peer process refused to connect");
	assert_int_equal(sl_ctl_parse_peer_lost("srun: error: Node failure on fa1", what,
						sizeof(what)), 1);
	assert_string_equal(what, "srun: node failure on fa1");
	/* a short buffer: cut, still terminated */
	char tiny[8];
	assert_int_equal(sl_ctl_parse_peer_lost("srun: error: Node failure on fa1", tiny,
						sizeof(tiny)), 1);
	assert_string_equal(tiny, "srun: n");
	assert_int_equal(sl_ctl_parse_peer_lost("  Peer host:  fa1", what, sizeof(what)), 0);
	assert_int_equal(sl_ctl_parse_peer_lost("srun: error: fa0: task 0: Killed", what,
						sizeof(what)), 0);
	assert_int_equal(sl_ctl_parse_peer_lost("srun: error: Node failure on ", what,
						sizeof(what)), 0);
	assert_int_equal(sl_ctl_parse_peer_lost("step 10/100 loss 3.2", what, sizeof(what)), 0);
}

static void pool_change_decisions(void **state)
{
	(void)state;
	/* a generation runs and is not being stopped */
	assert_int_equal(sl_ctl_decide_pool_change(1, SL_CTL_STOP_NONE, 1, 1), SL_CTL_KEEP);
	assert_int_equal(sl_ctl_decide_pool_change(1, SL_CTL_STOP_NONE, 1, 0),
			 SL_CTL_STOP_FOR_PLAN);
	assert_int_equal(sl_ctl_decide_pool_change(1, SL_CTL_STOP_NONE, 0, 0),
			 SL_CTL_STOP_FOR_NO_PLAN);
	/* a reconfiguration is stopping it: the newest pool's plan (or none) is what starts */
	assert_int_equal(sl_ctl_decide_pool_change(1, SL_CTL_STOP_RECONFIGURE, 1, 0),
			 SL_CTL_RETARGET);
	assert_int_equal(sl_ctl_decide_pool_change(1, SL_CTL_STOP_RECONFIGURE, 0, 0),
			 SL_CTL_RETARGET);
	assert_int_equal(sl_ctl_decide_pool_change(1, SL_CTL_STOP_RECONFIGURE, 1, 1),
			 SL_CTL_RETARGET);
	/* a generation killed for a node's death: the newest pool's plan (without the node) is
	 * the next one */
	assert_int_equal(sl_ctl_decide_pool_change(1, SL_CTL_STOP_NODE_DEATH, 1, 0),
			 SL_CTL_RETARGET);
	assert_int_equal(sl_ctl_decide_pool_change(1, SL_CTL_STOP_NODE_DEATH, 0, 0),
			 SL_CTL_RETARGET);
	/* stopping for another reason: it re-plans when the generation has ended */
	for (enum sl_ctl_stop s = SL_CTL_STOP_NO_PLAN; s <= SL_CTL_STOP_HANG; s++)
		for (int valid = 0; valid < 2; valid++)
			assert_int_equal(sl_ctl_decide_pool_change(1, s, valid, 0), SL_CTL_KEEP);
	/* nothing runs */
	assert_int_equal(sl_ctl_decide_pool_change(0, SL_CTL_STOP_NONE, 1, 0), SL_CTL_START);
	assert_int_equal(sl_ctl_decide_pool_change(0, SL_CTL_STOP_NONE, 0, 0), SL_CTL_WAIT);
}

static void generation_outcomes(void **state)
{
	(void)state;
	/* exit 0 at the last step: complete, whatever the stop */
	assert_int_equal(sl_ctl_classify_end(0, 100, 100, SL_CTL_STOP_NONE, 0), SL_CTL_COMPLETE);
	assert_int_equal(sl_ctl_classify_end(0, 100, 100, SL_CTL_STOP_RECONFIGURE, 0),
			 SL_CTL_COMPLETE);
	/* ended unasked: failed (even with exit 0 before the last step) */
	assert_int_equal(sl_ctl_classify_end(0, 50, 100, SL_CTL_STOP_NONE, 0), SL_CTL_FAILED);
	assert_int_equal(sl_ctl_classify_end(1, 50, 100, SL_CTL_STOP_NONE, 1), SL_CTL_FAILED);
	assert_int_equal(sl_ctl_classify_end(1, 100, 100, SL_CTL_STOP_NONE, 0), SL_CTL_FAILED);
	/* asked to stop: stopped, unless a rank died on the way or it hung */
	assert_int_equal(sl_ctl_classify_end(0, 50, 100, SL_CTL_STOP_RECONFIGURE, 0),
			 SL_CTL_STOPPED);
	assert_int_equal(sl_ctl_classify_end(0, 50, 100, SL_CTL_STOP_SIGNAL, 0), SL_CTL_STOPPED);
	assert_int_equal(sl_ctl_classify_end(1, 50, 100, SL_CTL_STOP_NO_PLAN, 0), SL_CTL_STOPPED);
	assert_int_equal(sl_ctl_classify_end(1, 50, 100, SL_CTL_STOP_RECONFIGURE, 1),
			 SL_CTL_FAILED);
	assert_int_equal(sl_ctl_classify_end(137, 50, 100, SL_CTL_STOP_HANG, 0), SL_CTL_FAILED);
	assert_int_equal(sl_ctl_classify_end(137, 50, 100, SL_CTL_STOP_NODE_DEATH, 0),
			 SL_CTL_FAILED);
	assert_string_equal(sl_ctl_stop_name(SL_CTL_STOP_NODE_DEATH), "node death");
	assert_string_equal(sl_ctl_outcome_name(SL_CTL_STOPPED), "stopped");
	assert_string_equal(sl_ctl_stop_name(SL_CTL_STOP_NO_PLAN), "no plan");
	assert_string_equal(sl_ctl_stop_name(SL_CTL_STOP_HANG), "hang");
	/* failures in a row count only generations that never stepped */
	assert_int_equal(sl_ctl_consecutive_failures(0, 0), 1);
	assert_int_equal(sl_ctl_consecutive_failures(2, 0), 3);
	assert_int_equal(sl_ctl_consecutive_failures(2, 5), 1);
	/* work lost: from the newest checkpoint (none: step 0) to the newest step */
	assert_int_equal(sl_ctl_lost_steps(47, 40), 7);
	assert_int_equal(sl_ctl_lost_steps(7, -1), 7);
	assert_int_equal(sl_ctl_lost_steps(40, 40), 0);
}

static void probe_blames_the_hosts_of_silent_ranks(void **state)
{
	(void)state;
	/* 6 ranks: 0-1 on host 0, 2-3 on host 1, 4-5 on host 2 */
	int rank_host[6] = {0, 0, 1, 1, 2, 2};
	unsigned char answered[6] = {1, 1, 1, 0, 1, 1};
	int hosts[4] = {-1, -1, -1, -1};
	assert_int_equal(sl_ctl_silent_hosts(6, rank_host, answered, hosts, 4), 1);
	assert_int_equal(hosts[0], 1);
	/* two silent ranks on one host: named once; a second host in rank order */
	unsigned char two[6] = {1, 1, 0, 0, 1, 0};
	assert_int_equal(sl_ctl_silent_hosts(6, rank_host, two, hosts, 4), 2);
	assert_int_equal(hosts[0], 1);
	assert_int_equal(hosts[1], 2);
	/* everyone answered, or no one: nothing tells the hosts apart */
	unsigned char all[6] = {1, 1, 1, 1, 1, 1}, none[6] = {0};
	assert_int_equal(sl_ctl_silent_hosts(6, rank_host, all, hosts, 4), 0);
	assert_int_equal(sl_ctl_silent_hosts(6, rank_host, none, hosts, 4), 0);
	/* at most max hosts are written */
	int one[1] = {-1};
	assert_int_equal(sl_ctl_silent_hosts(6, rank_host, two, one, 1), 1);
	assert_int_equal(one[0], 1);
}

static void reconfiguration_parts_add_up(void **state)
{
	(void)state;
	struct sl_ctl_reconf r = {.active = 1, .from_gen = 1, .change_s = 100.0, .plan_s = 0.01,
				  .term_s = 100.02, .ckpt_s = 100.10, .exit_s = 100.20,
				  .start_s = 100.21, .ready_s = 100.60, .load_s = 0.05};
	struct sl_ctl_reconf_parts p;
	sl_ctl_reconf_parts(&r, 100.65, 0.03, &p);
	assert_true(fabs(p.total_s - 0.65) < 1e-9);
	assert_true(fabs(p.checkpoint_s - 0.08) < 1e-9);
	assert_true(fabs(p.stop_s - 0.10) < 1e-9);
	assert_true(fabs(p.between_s - 0.01) < 1e-9);
	assert_true(fabs(p.load_s - 0.05) < 1e-9);
	/* started 100.21, first step began 100.62: 0.41 s of start and load */
	assert_true(fabs(p.start_s + p.load_s - 0.41) < 1e-9);
	assert_true(fabs(p.first_step_s - 0.03) < 1e-9);
	/* the parts and the gap from the change to the stop (planning) cover the total */
	double sum = (r.term_s - r.change_s) + p.checkpoint_s + p.stop_s + p.between_s + p.start_s +
		     p.load_s + p.first_step_s;
	assert_true(fabs(sum - p.total_s) < 1e-9);
	/* no checkpoint written (a stop for no plan): the stop counts from the SIGTERM */
	r.ckpt_s = 0;
	sl_ctl_reconf_parts(&r, 100.65, 0.03, &p);
	assert_true(p.checkpoint_s == 0);
	assert_true(fabs(p.stop_s - 0.18) < 1e-9);
	/* no "ready" line (an older worker): all of it is start */
	r.ready_s = 0;
	sl_ctl_reconf_parts(&r, 100.65, 0.03, &p);
	assert_true(p.load_s == 0);
	assert_true(fabs(p.start_s - 0.41) < 1e-9);
	/* a load longer than what was measured around it cannot make start negative */
	r.ready_s = 100.60;
	r.load_s = 5.0;
	sl_ctl_reconf_parts(&r, 100.65, 0.03, &p);
	assert_true(p.start_s >= 0 && fabs(p.load_s - 0.41) < 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(host_excluded_after_repeated_failures),
		cmocka_unit_test(excluded_host_stays_out_until_the_pool_offers_its_kind_again),
		cmocka_unit_test(effective_pool_counts_only_hosts_not_left_out),
		cmocka_unit_test(launcher_death_lines),
		cmocka_unit_test(peer_lost_lines),
		cmocka_unit_test(pool_change_decisions),
		cmocka_unit_test(generation_outcomes),
		cmocka_unit_test(probe_blames_the_hosts_of_silent_ranks),
		cmocka_unit_test(reconfiguration_parts_add_up),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
