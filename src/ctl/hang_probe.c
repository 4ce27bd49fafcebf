/* The liveness probe: a generation silent for longer than --hang-timeout is asked (SIGUSR1 to
 * every rank) to answer; the hosts of the ranks that did not answer within the probe window are
 * named, and the generation is stopped and killed (a stuck job cannot write its checkpoint).
 * Invariants: at most one probe in flight (probe_s > 0); any step clears it (step_intake.c). */
#include <stdio.h>
#include <string.h>

#include "ctl/ctl_state.h"
#include "util/log.h"

/* A generation still starting (launched, in MPI_Init, loading its checkpoint: no ready line or
 * step yet) cannot answer the probe, and on a loaded host its start alone can outlast a short
 * --hang-timeout: it was stopped as hung before its first step, again and again. So until its
 * ready line its silence is measured against the hang timeout or START_SILENCE_S, whichever is
 * longer: a start that never ends (a host dead before MPI_Init) is still caught. */
#define START_SILENCE_S 60.0

static double silence_allowed_s(const struct ctl *c)
{
	double t = c->o->hang_timeout_s;
	return c->gen_ready || t >= START_SILENCE_S ? t : START_SILENCE_S;
}

/* How long the ranks get to answer the liveness probe: a rank's handler writes at once, so a
 * second (or the hang timeout, if shorter) is ample even on a loaded machine. */
static double probe_window_s(const struct ctl *c)
{
	return c->o->hang_timeout_s < 1.0 ? c->o->hang_timeout_s : 1.0;
}

void sl_ctl_probe_check(struct ctl *c, double now_s)
{
	struct ctl_probe *p = &c->probe;
	if (c->stop == STOP_NONE && c->o->hang_timeout_s > 0 && p->sent_s == 0 &&
	    now_s - c->last_output_s > silence_allowed_s(c)) {
		/* silent: ask every rank to answer, to learn which host stopped */
		memset(p->answered, 0, (size_t)p->world);
		p->sent_s = now_s;
		sl_ctl_gen_probe(&c->gen);
	}
	if (c->stop == STOP_NONE && p->sent_s > 0 && now_s - p->sent_s > probe_window_s(c)) {
		p->silent_count = sl_ctl_silent_hosts(p->world, p->rank_host, p->answered,
						      p->silent_hosts, 16);
		char names[512] = "";
		for (int i = 0; i < p->silent_count; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s'%s'",
				 i ? ", " : "", c->cluster.hosts[p->silent_hosts[i]].name);
		sl_log_warn("generation %d printed nothing for %.1f s%s%s: stopping it",
			    c->gen.index, now_s - c->last_output_s,
			    p->silent_count ? "; no answer from host " : "", names);
		/* Slurm: a silent host whose slurmd does not answer either lost power (or its
		 * network): marked down now, not after SlurmdTimeout (node_death.c) */
		char how[160];
		snprintf(how, sizeof(how), "no output for %.0f s, no answer to the liveness probe",
			 now_s - c->last_output_s);
		int dead = sl_ctl_node_death_confirm(c, p->silent_hosts, p->silent_count, how);
		sl_ctl_stop_generation(c, STOP_HANG);
		/* a stuck job cannot write its checkpoint: no use waiting for one (where nodes died,
		 * the job's tasks are killed already, and its launcher goes once the job is gone:
		 * sl_ctl_node_death_end) */
		if (!dead)
			sl_ctl_gen_kill(&c->gen);
	}
}
