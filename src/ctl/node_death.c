/* A node of the running generation died (--slurm): found from what its peers say or from its
 * slurmd refusing connections, told to Slurm, and the generation killed at once so that the next
 * one resumes from the newest checkpoint on the nodes left.
 *
 * Why not wait for Slurm: Slurm marks a node whose slurmd is gone NOT_RESPONDING only after
 * SlurmdTimeout (300 s by default), and srun ends the step on it ~20 s after that; meanwhile the
 * ranks left block in MPI on their dead peers and cannot checkpoint (their stop runs out
 * --stop-timeout). But when a node's processes are killed its kernel closes their connections
 * and refuses new ones. Two signs follow, and either one is enough:
 *   - a rank that talked to the dead ones prints OpenMPI's "peer process has unexpectedly
 *     disconnected" (or "failed to TCP connect to a peer") within milliseconds, if it was
 *     waiting on them (not always: measured, in one kill of three nothing was printed). That
 *     says ranks are gone, not why (a rank that crashed on a healthy node reads the same), so
 *     the generation's nodes are asked at once: a node whose slurmd refuses the connection or
 *     does not answer within SLURMD_PROBE_S is dead, by Slurm's own definition
 *     (cluster/slurm_health.h); one whose slurmd answers is alive, and the generation goes on
 *     to end as the launcher reports it (a rank's failure);
 *   - once the generation is quiet for a few steps' time, the watch (sl_ctl_node_death_watch)
 *     asks the generation's slurmds every WATCH_EVERY_S, and a node whose slurmd refused
 *     WATCH_REFUSALS times in a row is dead.
 * The job's tasks are then killed on every node (slurm_hooks.c, sl_ctl_slurm_kill_tasks), the
 * node marked down with a reason, the job cancelled, and the pool asked for at once, so that the
 * next plan is made while the job ends. srun outlives its tasks for a moment: killed with them,
 * it held the next generation back ~2.3 s (each surviving node's slurmstepd retrying to tell the
 * dead srun of its tasks' ends); alive, the job left squeue 0.25 s after the kill on the testbed.
 * The launcher is killed once the job is gone (sl_ctl_node_death_end).
 *
 * A host that loses power closes nothing: its peers block in MPI without an error and the
 * generation prints nothing. Then whichever comes first decides: Slurm's SlurmdTimeout (the
 * pool poll sees the node NOT_RESPONDING: sl_ctl_node_death_pool) or the controller's
 * --hang-timeout (the liveness probe names the hosts whose ranks did not answer, and their
 * slurmd is asked as here: hang_probe.c). docs/control.md says which to set.
 *
 * Invariants: a dead node is marked down in Slurm once (reason naming the failure) and left out
 * of this controller's plans (until the pool offers its GPUs again, decide.h); a generation is
 * killed at most once for node deaths. */
#include <stdio.h>
#include <string.h>

#include "cluster/slurm.h"
#include "cluster/slurm_health.h"
#include "ctl/ctl_state.h"
#include "runtime/launch_slurm.h"
#include "util/clock.h"
#include "util/log.h"

/* How long the nodes' slurmd get to accept a connection: the kernel answers a SYN without
 * slurmd being scheduled, and testbed links add at most tens of ms; a host that lost power
 * never answers, and the controller's loop waits this long once. */
#define SLURMD_PROBE_S 1.0

/* The watch of the generation's nodes (sl_ctl_node_death_watch). A connection that sends
 * nothing costs slurmd two error lines in its log ("Zero Bytes were transmitted or received"),
 * so the nodes are asked only once the generation is quiet: no line for WATCH_QUIET_STEPS times
 * its longest recent (or predicted) step, and at least WATCH_QUIET_MIN_S; a training generation
 * prints a line every step, and a pipeline that lost a node stops printing. Then every
 * WATCH_EVERY_S, waiting at most WATCH_WAIT_S (an answer takes a round trip: ms), and a node
 * whose slurmd refused WATCH_REFUSALS times in a row is dead: twice, because a slurmd that an
 * administrator restarts refuses for a moment (Slurm itself lets its jobs run on). Silence
 * within WATCH_WAIT_S does not count (one lost packet); a host that lost power is left to the
 * timeouts above. */
#define WATCH_QUIET_STEPS 3.0
#define WATCH_QUIET_MIN_S 0.5
#define WATCH_EVERY_S 0.25
#define WATCH_WAIT_S 0.2
#define WATCH_REFUSALS 2

/* sl_ctl_node_death_end: how often squeue is asked whether the dead generation's job is gone,
 * and how long its srun may take to leave after the kill. Bounded, whatever Slurm does: the
 * job's end was measured at 0.25 s with srun alive and ~2.5 s with it killed. */
#define NODE_END_POLL_S 0.1
#define NODE_END_WAIT_S 5.0

void sl_ctl_node_death_setup(struct ctl *c)
{
	c->slurmd_port = SL_SLURM_HEALTH_DEFAULT_PORT;
	struct sl_err e = {0};
	if (c->o->slurm && sl_slurm_health_port(&c->slurmd_port, &e))
		sl_log_warn("%s", e.msg);
}

void sl_ctl_node_death_reset(struct ctl *c)
{
	memset(c->node_alive, 0, sizeof(c->node_alive));
	memset(c->node_refusals, 0, sizeof(c->node_refusals));
	c->node_watch_s = 0;
	c->node_end_poll_s = 0;
	c->dead_node_count = 0;
}

/* The distinct hosts of the running generation's ranks (cluster indices). */
static int generation_hosts(const struct ctl *c, int *hosts, int max)
{
	int n = 0;
	for (int r = 0; r < c->probe.world && c->probe.rank_host; r++) {
		int h = c->probe.rank_host[r], seen = 0;
		for (int i = 0; i < n; i++)
			seen |= hosts[i] == h;
		if (!seen && n < max)
			hosts[n++] = h;
	}
	return n;
}

static int is_dead(const struct ctl *c, int h)
{
	for (int i = 0; i < c->dead_node_count; i++)
		if (c->dead_nodes[i] == h)
			return 1;
	return 0;
}

/* Host h is dead (how: what said so): Slurm is told (marked down with a reason, unless Slurm has
 * it down already: a node only NOT_RESPONDING keeps its jobs completing until SlurmdTimeout
 * makes it DOWN, and squeue would hold the generation's job that long), the host is left out
 * here too (scontrol may be refused: a user without the right to change nodes), and the first
 * dead host and its first rank are the ones the failure names. */
static void record_dead(struct ctl *c, int h, const char *how)
{
	const char *name = c->cluster.hosts[h].name;
	char reason[400], slurm[SL_ERR_MSG_MAX] = "already down";
	snprintf(reason, sizeof(reason), "sailor: node death: ranks of generation %d lost after "
		 "step %lld (%s); slurmd does not answer", c->gen.index, c->step, how);
	struct sl_err e = {0};
	if (strstr(sl_ctl_pool_watch_host_state(&c->pool, h), "DOWN")) {
		reason[0] = 0;
	} else if (sl_slurm_health_mark_down(name, reason, &e)) {
		snprintf(slurm, sizeof(slurm), "%s", e.msg);
		sl_log_warn("%s; this controller leaves node '%s' out, Slurm does not", e.msg, name);
	} else {
		snprintf(slurm, sizeof(slurm), "marked down");
	}
	if (h < c->hosts.count)
		c->hosts.excluded[h] = 1;
	if (c->dead_node_count < (int)(sizeof(c->dead_nodes) / sizeof(c->dead_nodes[0])))
		c->dead_nodes[c->dead_node_count++] = h;
	if (!c->dead_host[0]) {
		snprintf(c->dead_host, sizeof(c->dead_host), "%s", name);
		for (int r = 0; r < c->probe.world && c->dead_rank < 0; r++)
			if (c->probe.rank_host[r] == h)
				c->dead_rank = r;
	}
	json_t *f = json_object();
	json_object_set_new(f, "node", json_string(name));
	json_object_set_new(f, "generation", json_integer(c->gen.index));
	json_object_set_new(f, "step", json_integer(c->step));
	json_object_set_new(f, "detected_by", json_string(how));
	json_object_set_new(f, "slurm", json_string(slurm));
	json_object_set_new(f, "reason", json_string(reason));
	sl_ctl_event(&c->ev, "node_death", f);
	sl_log_warn("node '%s' died (%s): generation %d is killed and resumes from the newest "
		    "checkpoint without it", name, how, c->gen.index);
}

/* The slurmd of the n hosts asked at once (up to timeout_s); found[i] for hosts[i]. 0 when
 * the probe could not be made (then nothing is known). */
static int ask(const struct ctl *c, const int *hosts, int n, double timeout_s, signed char *found)
{
	const char *addresses[SL_CTL_MAX_HOSTS];
	for (int i = 0; i < n; i++) {
		const struct sl_host *x = &c->cluster.hosts[hosts[i]];
		addresses[i] = x->address[0] ? x->address : x->name;
	}
	struct sl_err e = {0};
	if (sl_slurm_health_probe(addresses, n, c->slurmd_port, timeout_s, found, &e)) {
		sl_log_warn("%s", e.msg);
		return 0;
	}
	return 1;
}

/* The n hosts are dead: the job's tasks go first, before Slurm is told (a job killed for a node
 * failure takes no more signals: slurm_hooks.c), then each is recorded, then the job cancelled
 * (it ends with the node marked down; not where scontrol was refused). */
static void all_dead(struct ctl *c, const int *hosts, int n, const char *how)
{
	sl_ctl_slurm_kill_tasks(c);
	for (int i = 0; i < n; i++)
		record_dead(c, hosts[i], how);
	sl_ctl_slurm_cancel_job(c);
}

int sl_ctl_node_death_confirm(struct ctl *c, const int *hosts, int n, const char *how)
{
	int which[SL_CTL_MAX_HOSTS], m = 0, dead[SL_CTL_MAX_HOSTS], nd = 0;
	for (int i = 0; c->o->slurm && i < n && m < SL_CTL_MAX_HOSTS; i++) {
		int h = hosts[i];
		if (h >= 0 && h < c->cluster.host_count && !is_dead(c, h) && !c->node_alive[h])
			which[m++] = h;
	}
	signed char found[SL_CTL_MAX_HOSTS];
	if (!m || !ask(c, which, m, SLURMD_PROBE_S, found))
		return 0;
	for (int i = 0; i < m; i++) {
		if (found[i] == SL_SLURM_HEALTH_ANSWERS)
			c->node_alive[which[i]] = 1; /* not asked again in this generation */
		else
			dead[nd++] = which[i];
	}
	if (nd)
		all_dead(c, dead, nd, how);
	return nd;
}

/* Nodes died: the generation's tasks were killed (its ranks left cannot checkpoint without the
 * dead ones; waiting for its stop would cost --stop-timeout), its launcher ends with srun
 * (sl_ctl_node_death_end), and the pool is asked for at once, so that the next plan, without
 * the node, is made while the job ends. seen_s: when it was seen. */
static void kill_generation(struct ctl *c, double seen_s)
{
	c->rc = (struct sl_ctl_reconf){.active = 1, .from_gen = c->gen.index, .change_s = seen_s};
	if (c->stop != STOP_SIGNAL) /* a signal's stop still ends the controller */
		c->stop = STOP_NODE_DEATH;
	c->gen.term_sent_s = c->rc.term_s = sl_now_s();
	json_t *f = json_object();
	json_object_set_new(f, "generation", json_integer(c->gen.index));
	json_object_set_new(f, "reason", json_string(sl_ctl_stop_name(STOP_NODE_DEATH)));
	json_object_set_new(f, "step", json_integer(c->step));
	sl_ctl_event(&c->ev, "stop_requested", f);
	sl_ctl_pool_watch_refresh(&c->pool);
}

void sl_ctl_node_death_line(struct ctl *c, const char *line)
{
	char what[300];
	if (!c->o->slurm || !c->running || c->dead_node_count ||
	    !sl_ctl_parse_peer_lost(line, what, sizeof(what)))
		return;
	double seen_s = sl_now_s();
	int hosts[SL_CTL_MAX_HOSTS];
	int n = generation_hosts(c, hosts, SL_CTL_MAX_HOSTS);
	if (sl_ctl_node_death_confirm(c, hosts, n, what) > 0)
		kill_generation(c, seen_s);
}

void sl_ctl_node_death_pool(struct ctl *c)
{
	if (!c->o->slurm || !c->running || c->dead_node_count)
		return;
	double seen_s = sl_now_s();
	int hosts[SL_CTL_MAX_HOSTS], lost[SL_CTL_MAX_HOSTS], n_lost = 0;
	int n = generation_hosts(c, hosts, SL_CTL_MAX_HOSTS);
	for (int i = 0; i < n; i++)
		if (sl_slurm_state_lost(sl_ctl_pool_watch_host_state(&c->pool, hosts[i])))
			lost[n_lost++] = hosts[i];
	if (!n_lost)
		return;
	/* asked as after an MPI message: a node only briefly not responding (a loaded slurmd, a
	 * network blip) whose slurmd answers is not killed and marked down, but stopped for a new
	 * plan like a drained one (the pool change does that) */
	char how[200];
	snprintf(how, sizeof(how), "Slurm: %s", sl_ctl_pool_watch_host_state(&c->pool, lost[0]));
	if (sl_ctl_node_death_confirm(c, lost, n_lost, how) > 0)
		kill_generation(c, seen_s);
}

/* How long the generation may print nothing before its nodes are asked. */
static double quiet_allowed_s(const struct ctl *c)
{
	double step_s = c->cur.valid && c->cur.res.throughput_it_s > 0 ?
				1.0 / c->cur.res.throughput_it_s : 0.0;
	int n = c->step_time_count < RATE_WINDOW ? c->step_time_count : RATE_WINDOW;
	for (int i = 0; i < n; i++)
		if (c->step_times[i] > step_s)
			step_s = c->step_times[i];
	double t = WATCH_QUIET_STEPS * step_s;
	return t > WATCH_QUIET_MIN_S ? t : WATCH_QUIET_MIN_S;
}

void sl_ctl_node_death_watch(struct ctl *c, double now_s)
{
	if (!c->o->slurm || !c->running || !c->gen_ready || c->dead_node_count ||
	    c->stop == STOP_NODE_DEATH || now_s - c->node_watch_s < WATCH_EVERY_S)
		return;
	if (now_s - c->last_output_s < quiet_allowed_s(c)) {
		memset(c->node_refusals, 0, sizeof(c->node_refusals));
		return;
	}
	c->node_watch_s = now_s;
	int hosts[SL_CTL_MAX_HOSTS], dead[SL_CTL_MAX_HOSTS], nd = 0;
	int n = generation_hosts(c, hosts, SL_CTL_MAX_HOSTS);
	signed char found[SL_CTL_MAX_HOSTS];
	if (!n || !ask(c, hosts, n, WATCH_WAIT_S, found))
		return;
	for (int i = 0; i < n; i++) {
		int h = hosts[i];
		/* only a refusal counts: silence within WATCH_WAIT_S may be one lost packet */
		c->node_refusals[h] = found[i] == SL_SLURM_HEALTH_REFUSED ? c->node_refusals[h] + 1
									    : 0;
		if (c->node_refusals[h] >= WATCH_REFUSALS)
			dead[nd++] = h;
	}
	if (!nd)
		return;
	char how[160];
	snprintf(how, sizeof(how), "its slurmd refused %d connections %.2f s apart",
		 WATCH_REFUSALS, WATCH_EVERY_S);
	all_dead(c, dead, nd, how);
	kill_generation(c, now_s);
}

void sl_ctl_node_death_end(struct ctl *c, double now_s)
{
	if (!c->o->slurm || !c->running || !c->dead_node_count || c->gen.killed ||
	    now_s - c->node_end_poll_s < NODE_END_POLL_S)
		return;
	c->node_end_poll_s = now_s;
	char job[64];
	sl_launch_slurm_job_name((int)c->gen.pid, job, sizeof(job));
	if (now_s - c->gen.term_sent_s > NODE_END_WAIT_S || sl_slurm_jobs_named(job) == 0)
		sl_ctl_gen_kill(&c->gen);
}
