/* The controller's decisions (decide.h). */
#include "ctl/decide.h"

#include <stdio.h>
#include <string.h>

const char *sl_ctl_stop_name(enum sl_ctl_stop stop)
{
	static const char *const names[] = {"none", "reconfigure", "no plan", "signal", "hang",
					     "node death"};
	return (unsigned)stop < sizeof(names) / sizeof(names[0]) ? names[stop] : "?";
}

const char *sl_ctl_outcome_name(enum sl_ctl_outcome outcome)
{
	static const char *const names[] = {"complete", "stopped", "failed"};
	return (unsigned)outcome < sizeof(names) / sizeof(names[0]) ? names[outcome] : "?";
}

void sl_ctl_hosts_init(struct sl_ctl_hosts *h, int count)
{
	memset(h, 0, sizeof(*h));
	h->count = count < 0 ? 0 : count > SL_CTL_MAX_HOSTS ? SL_CTL_MAX_HOSTS : count;
}

void sl_ctl_hosts_grow(struct sl_ctl_hosts *h, int count)
{
	count = count > SL_CTL_MAX_HOSTS ? SL_CTL_MAX_HOSTS : count;
	for (int i = h->count; i < count; i++) {
		h->fails[i] = 0;
		h->excluded[i] = 0;
	}
	if (count > h->count)
		h->count = count;
}

int sl_ctl_hosts_record_failure(struct sl_ctl_hosts *h, int host, int exclude_after)
{
	if (host < 0 || host >= h->count)
		return 0;
	h->fails[host]++;
	if (h->excluded[host] || exclude_after <= 0 || h->fails[host] < exclude_after)
		return 0;
	h->excluded[host] = 1;
	return 1;
}

int sl_ctl_hosts_pool_changed(struct sl_ctl_hosts *h, const struct sl_cluster *cluster,
			      const struct sl_pool *before, const struct sl_pool *after,
			      int *readmitted, int max)
{
	int n = 0;
	for (int i = 0; i < h->count && i < cluster->host_count; i++) {
		int g = cluster->hosts[i].gpu, z = cluster->hosts[i].zone;
		if (after->counts[g][z] <= before->counts[g][z])
			continue;
		/* the pool offers more of this kind than before: the pool says it is back */
		if (h->excluded[i]) {
			if (readmitted && n < max)
				readmitted[n] = i;
			n++;
		}
		h->excluded[i] = 0;
		h->fails[i] = 0;
	}
	return n;
}

void sl_ctl_effective_pool(const struct sl_pool *pool, const struct sl_cluster *cluster,
			   const struct sl_ctl_hosts *h, struct sl_pool *out)
{
	*out = *pool;
	long long slots[SL_MAX_GPU_TYPES][SL_MAX_ZONES];
	memset(slots, 0, sizeof(slots));
	for (int i = 0; i < cluster->host_count; i++)
		if (!(i < h->count && h->excluded[i]))
			slots[cluster->hosts[i].gpu][cluster->hosts[i].zone] += cluster->hosts[i].slots;
	for (int g = 0; g < SL_MAX_GPU_TYPES; g++)
		for (int z = 0; z < SL_MAX_ZONES; z++)
			if (out->counts[g][z] > slots[g][z])
				out->counts[g][z] = (int)slots[g][z];
}

int sl_ctl_host_index(const struct sl_cluster *cluster, const char *name)
{
	for (int i = 0; i < cluster->host_count; i++)
		if (!strcmp(cluster->hosts[i].name, name))
			return i;
	return -1;
}

int sl_ctl_parse_rank_death(const char *line, int *rank, char *host, size_t host_size)
{
	/* the launcher (cmd_run.c): "rank R (stage .., pipeline .., .., on HOST) died (signal S,
	 * ..) during step N; ..." or "... on HOST) failed during step N; ..." */
	const char *p = strstr(line, "rank ");
	const char *on = p ? strstr(p, ", on ") : NULL;
	if (!on || !(strstr(on, ") died") || strstr(on, ") failed")) || strstr(on, "(signal 15,"))
		return 0;
	int r;
	if (sscanf(p, "rank %d (", &r) != 1 || r < 0)
		return 0;
	const char *start = on + 5;
	const char *end = strchr(start, ')');
	if (!end || host_size == 0)
		return 0;
	size_t n = (size_t)(end - start);
	if (n >= host_size)
		n = host_size - 1;
	memcpy(host, start, n);
	host[n] = 0;
	*rank = r;
	return 1;
}

/* The first word after prefix in line, into host; 0 when there is none. */
static int word_after(const char *line, const char *prefix, char *host, size_t host_size)
{
	const char *p = strstr(line, prefix);
	if (!p || host_size == 0)
		return 0;
	p += strlen(prefix);
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strcspn(p, " \t\r\n");
	if (n == 0)
		return 0;
	if (n >= host_size)
		n = host_size - 1;
	memcpy(host, p, n);
	host[n] = 0;
	return 1;
}

int sl_ctl_parse_peer_lost(const char *line, char *what, size_t what_size)
{
	/* OpenMPI 4's help texts (btl tcp), printed by a rank whose peer is gone, the host or
	 * address a few lines further down:
	 *   "An MPI communication peer process has unexpectedly disconnected." (an open connection
	 *   closed: the peer's processes were killed) ... "Peer host: fa1";
	 *   "WARNING: Open MPI failed to TCP connect to a peer MPI process." (a new connection
	 *   refused) ... "Message: connect() to 10.95.1.3:1024 failed" */
	static const struct {
		const char *text, *what;
	} lines[] = {
		{"peer process has unexpectedly disconnected", "MPI: a peer process disconnected"},
		{"failed to TCP connect to a peer MPI process", "MPI: a peer process refused to connect"},
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (strstr(line, lines[i].text)) {
			snprintf(what, what_size, "%s", lines[i].what);
			return 1;
		}
	char host[256];
	if (word_after(line, "srun: error: Node failure on ", host, sizeof(host))) {
		snprintf(what, what_size, "srun: node failure on %s", host);
		return 1;
	}
	return 0;
}

enum sl_ctl_pool_action sl_ctl_decide_pool_change(int running, enum sl_ctl_stop stopping,
						  int plan_valid, int same_as_running)
{
	if (!running)
		return plan_valid ? SL_CTL_START : SL_CTL_WAIT;
	if (stopping == SL_CTL_STOP_NONE) {
		if (plan_valid && same_as_running)
			return SL_CTL_KEEP;
		return plan_valid ? SL_CTL_STOP_FOR_PLAN : SL_CTL_STOP_FOR_NO_PLAN;
	}
	/* a reconfiguration under way stops for the newest pool's plan, even one equal to the
	 * plan being stopped (the generation will not finish its stop any sooner by keeping it);
	 * a generation killed for a node's death: the newest pool's plan is the next one (the pool
	 * without the node, polled at once after it was marked down: planned while the job ends) */
	if (stopping == SL_CTL_STOP_RECONFIGURE || stopping == SL_CTL_STOP_NODE_DEATH)
		return SL_CTL_RETARGET;
	/* a stop for no plan, a hang or a signal: the generation ends anyway; after a hang or no
	 * plan the controller re-plans on the pool then in force */
	return SL_CTL_KEEP;
}

enum sl_ctl_outcome sl_ctl_classify_end(int exit_status, long long step, long long steps,
					enum sl_ctl_stop stopping, int rank_died)
{
	if (exit_status == 0 && step >= steps)
		return SL_CTL_COMPLETE;
	/* a rank that died while a stop was on its way is still a failure: its step may not have
	 * been checkpointed, and its host counts towards exclusion */
	if (stopping == SL_CTL_STOP_NONE || stopping == SL_CTL_STOP_HANG ||
	    stopping == SL_CTL_STOP_NODE_DEATH || rank_died)
		return SL_CTL_FAILED;
	return SL_CTL_STOPPED;
}

int sl_ctl_consecutive_failures(int before, int steps_run)
{
	return steps_run > 0 ? 1 : before + 1;
}

long long sl_ctl_lost_steps(long long step, long long resume_step)
{
	long long from = resume_step > 0 ? resume_step : 0;
	return step > from ? step - from : 0;
}

int sl_ctl_silent_hosts(int world, const int *rank_host, const unsigned char *answered,
			int *hosts, int max)
{
	int silent = 0;
	for (int r = 0; r < world; r++)
		silent += !answered[r];
	if (silent == 0 || silent == world)
		return 0;
	int n = 0;
	for (int r = 0; r < world; r++) {
		if (answered[r] || rank_host[r] < 0)
			continue;
		int seen = 0;
		for (int i = 0; i < n && i < max; i++)
			seen |= hosts[i] == rank_host[r];
		if (seen)
			continue;
		if (n < max)
			hosts[n] = rank_host[r];
		n++;
	}
	return n < max ? n : max;
}

void sl_ctl_reconf_parts(const struct sl_ctl_reconf *r, double now_s, double first_step_s,
			 struct sl_ctl_reconf_parts *out)
{
	memset(out, 0, sizeof(*out));
	out->total_s = now_s - r->change_s;
	out->plan_s = r->plan_s;
	if (r->ckpt_s > 0 && r->term_s > 0)
		out->checkpoint_s = r->ckpt_s - r->term_s;
	if (r->exit_s > 0)
		out->stop_s = r->exit_s - (r->ckpt_s > 0 ? r->ckpt_s : r->term_s);
	if (r->exit_s > 0 && r->start_s > 0)
		out->between_s = r->start_s - r->exit_s;
	double start_load = now_s - first_step_s - r->start_s;
	if (start_load < 0)
		start_load = 0;
	out->load_s = r->ready_s > 0 ? r->load_s : 0.0;
	if (out->load_s > start_load)
		out->load_s = start_load;
	if (out->load_s < 0)
		out->load_s = 0;
	out->start_s = start_load - out->load_s;
	out->first_step_s = first_step_s;
}
