/* The controller's main loop (controller.h): plan, start a generation, watch it, re-plan.
 * Single-threaded: each turn polls the generation's pipes with a short timeout, then looks at
 * its end, the liveness probe, the stop timeout, signals, the pool and the status texts, each in
 * a function of its own. The jobs live in files named for them (ctl_state.h lists them).
 * Invariants: one generation at a time; a signal outranks any stop in progress; no generation
 * outlives the controller. */
#include "ctl/controller.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl_state.h"
#include "ctl/status_http.h"
#include "util/clock.h"
#include "util/log.h"

static volatile sig_atomic_t got_signal;
static void on_signal(int sig) { got_signal = sig; }

/* Plans and starts a generation when none runs and a plan is possible. */
static int maybe_start(struct ctl *c, struct sl_err *err)
{
	if (c->running || c->waiting)
		return 0;
	if (!c->next.valid) {
		char why[SL_ERR_MSG_MAX + 128] = "";
		sl_ctl_plan_now(c, &c->next, why, sizeof(why));
		sl_ctl_log_plan(c, &c->next, why, 0);
		if (c->rc.active && c->rc.plan_s == 0) /* after a node's death: a part of it */
			c->rc.plan_s = c->next.plan_s;
		if (!c->next.valid)
			return 0;
	}
	return sl_ctl_start_generation(c, err);
}

/* The generation ended (its pipes drained, it was reaped). *done: the job is complete. Else
 * the next generation starts when a plan is possible; a signal's stop, or too many failures in
 * a row, end the controller with an error. */
static int after_generation(struct ctl *c, double now, int *done, struct sl_err *err)
{
	if (sl_ctl_generation_ended(c)) {
		json_t *f = json_object();
		json_object_set_new(f, "step", json_integer(c->step));
		json_object_set_new(f, "generations", json_integer(c->gen_count));
		json_object_set_new(f, "reconfigurations", json_integer(c->reconfigurations));
		json_object_set_new(f, "failures", json_integer(c->failures));
		json_object_set_new(f, "usd_spent", json_real(c->usd));
		json_object_set_new(f, "wall_s", json_real(now - c->start_s));
		sl_ctl_event(&c->ev, "done", f);
		*done = 1;
		return 0;
	}
	if (c->stop == STOP_SIGNAL)
		return sl_err_set(err, SL_EIO, "stopped by signal %d after step %lld (checkpoint of "
				  "step %lld in '%s')", c->signal_seen, c->step,
				  sl_ctl_newest_checkpoint(c), c->o->ckpt_dir);
	if (c->consecutive_failures >= c->o->max_failures) {
		json_t *f = json_object();
		json_object_set_new(f, "failures", json_integer(c->consecutive_failures));
		sl_ctl_event(&c->ev, "gave_up", f);
		return sl_err_set(err, SL_EINFEASIBLE, "%d generations in a row failed without "
				  "completing a step; giving up (see %s/gen-%d/stderr.log)",
				  c->consecutive_failures, c->o->run_dir, c->gen_count);
	}
	/* re-plan on what is left, unless the plan was made on it while the generation ended (a
	 * pool change during a reconfiguration or after a node's death) */
	if (c->stop != STOP_RECONFIGURE && c->stop != STOP_NODE_DEATH)
		sl_ctl_candidate_free(&c->next);
	return maybe_start(c, err);
}

/* SIGINT or SIGTERM, once: the running generation is stopped (it checkpoints); with none
 * running the controller ends at once. */
static int after_signal(struct ctl *c, struct sl_err *err)
{
	if (!got_signal || c->signal_seen)
		return 0;
	c->signal_seen = got_signal;
	json_t *f = json_object();
	json_object_set_new(f, "signal", json_integer(c->signal_seen));
	sl_ctl_event(&c->ev, "signal", f);
	if (!c->running)
		return sl_err_set(err, SL_EIO, "stopped by signal %d", c->signal_seen);
	c->stop = STOP_NONE; /* a signal outranks a stop in progress */
	c->gen.term_sent_s = 0;
	sl_ctl_stop_generation(c, STOP_SIGNAL);
	return 0;
}

/* The pool changed (after hosts left out came back): re-plan, then what decide.h says. */
static int after_pool_change(struct ctl *c, const struct sl_pool *before, struct sl_err *err)
{
	sl_ctl_pool_event(c, "pool_change");
	/* Slurm lost a node of the generation (not drained: its ranks cannot checkpoint) */
	sl_ctl_node_death_pool(c);
	/* hosts left out come back when the pool offers more of their kind */
	int back[16];
	int nback = sl_ctl_hosts_pool_changed(&c->hosts, &c->cluster, before, &c->pool.current,
					      back, 16);
	for (int i = 0; i < nback && i < 16; i++) {
		json_t *f = json_object();
		json_object_set_new(f, "host", json_string(c->cluster.hosts[back[i]].name));
		sl_ctl_event(&c->ev, "host_readmitted", f);
	}
	c->waiting = 0;
	struct candidate p = {0};
	char why[SL_ERR_MSG_MAX + 128] = "";
	double t0 = sl_now_s();
	sl_ctl_plan_now(c, &p, why, sizeof(why));
	int same = c->running && p.valid && c->cur.valid && !strcmp(p.key, c->cur.key) &&
		   !sl_ctl_pool_watch_hosts_lost(&c->pool, c->probe.rank_host, c->probe.world);
	sl_ctl_log_plan(c, &p, why, same);
	int rc = 0;
	switch (sl_ctl_decide_pool_change(c->running, c->stop, p.valid, same)) {
	case SL_CTL_STOP_FOR_PLAN:
	case SL_CTL_STOP_FOR_NO_PLAN:
		c->rc = (struct sl_ctl_reconf){.active = p.valid, .from_gen = c->gen.index,
					       .change_s = t0, .plan_s = p.plan_s};
		if (p.valid)
			c->reconfigurations++;
		sl_ctl_candidate_free(&c->next);
		c->next = p;
		sl_ctl_stop_generation(c, p.valid ? STOP_RECONFIGURE : STOP_NO_PLAN);
		break;
	case SL_CTL_RETARGET:
		sl_ctl_candidate_free(&c->next); /* a newer pool while stopping: its plan */
		if (c->stop == STOP_NODE_DEATH && c->rc.active)
			c->rc.plan_s = p.plan_s;
		c->next = p;
		if (!p.valid)
			c->stop = STOP_NO_PLAN;
		break;
	case SL_CTL_START:
	case SL_CTL_WAIT:
		sl_ctl_candidate_free(&c->next);
		c->next = p;
		if (p.valid)
			rc = sl_ctl_start_generation(c, err);
		break;
	case SL_CTL_KEEP:
		sl_ctl_candidate_free(&p);
		break;
	}
	return rc;
}

/* The nodes Slurm offers that sailor cannot use, each once (pool_watch.h): a warning and a
 * node_rejected event naming the node and what to fix. */
static void report_node_problems(struct ctl *c)
{
	char node[SL_CLUSTER_NAME_MAX], msg[SL_ERR_MSG_MAX];
	while (sl_ctl_pool_watch_node_problem(&c->pool, node, sizeof(node), msg, sizeof(msg))) {
		json_t *f = json_object();
		json_object_set_new(f, "node", json_string(node));
		json_object_set_new(f, "message", json_string(msg));
		sl_ctl_event(&c->ev, "node_rejected", f);
		sl_log_warn("%s (left out; the controller goes on without it)", msg);
	}
}

/* Polls the pool source; a bad pool is reported and kept out (pool_watch.h). */
static int watch_pool(struct ctl *c, struct sl_err *err)
{
	struct sl_err perr = {0};
	struct sl_pool before = c->pool.current;
	int changed = sl_ctl_pool_watch_poll(&c->pool, sl_now_s(), &perr);
	sl_ctl_hosts_grow(&c->hosts, c->cluster.host_count); /* Slurm: nodes that joined */
	report_node_problems(c);
	if (changed < 0) {
		json_t *f = json_object();
		json_object_set_new(f, "message", json_string(perr.msg));
		sl_ctl_event(&c->ev, "pool_error", f);
		sl_log_warn("%s", perr.msg);
	}
	if (changed > 0 && !c->signal_seen)
		return after_pool_change(c, &before, err);
	return 0;
}

static int loop(struct ctl *c, struct sl_err *err)
{
	report_node_problems(c);
	sl_ctl_pool_event(c, "pool");
	int rc = maybe_start(c, err);
	if (!rc && c->o->slurm && c->waiting && !c->gen_count)
		return sl_ctl_slurm_no_first_plan(c, err);
	while (!rc) {
		double now = sl_now_s();
		if (c->running) {
			if (sl_ctl_gen_pump(&c->gen, 100, sl_ctl_on_line, c)) {
				int done = 0;
				rc = after_generation(c, now, &done, err);
				if (done)
					return 0;
				continue;
			}
			sl_ctl_probe_check(c, now);
			sl_ctl_node_death_watch(c, now);
			sl_ctl_node_death_end(c, now);
			if (c->stop != STOP_NONE && !c->gen.killed &&
			    now - c->gen.term_sent_s > c->o->stop_timeout_s)
				sl_ctl_gen_kill(&c->gen);
		} else {
			poll(NULL, 0, 100);
		}
		if ((rc = after_signal(c, err)))
			return rc;
		rc = watch_pool(c, err);
		if (c->http && sl_now_s() - c->published_s > 0.25)
			sl_ctl_publish(c);
	}
	return rc;
}

int sl_ctl_run(const struct sl_ctl_options *o, struct sl_err *err)
{
	struct ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	c->o = o;
	c->lock.fd[0] = c->lock.fd[1] = -1;
	struct sigaction sa = {0}, old_int, old_term;
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	got_signal = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	signal(SIGPIPE, SIG_IGN);
	int rc = sl_ctl_setup(c, err);
	if (!rc)
		rc = loop(c, err);
	if (c->running) {
		/* an error of the controller itself: no generation outlives it */
		sl_ctl_gen_terminate(&c->gen);
		double t0 = sl_now_s();
		while (!sl_ctl_gen_pump(&c->gen, 100, sl_ctl_on_line, c))
			if (sl_now_s() - t0 > o->stop_timeout_s)
				sl_ctl_gen_kill(&c->gen);
		sl_ctl_gen_close(&c->gen);
		sl_ctl_slurm_end_job(c, 0); /* Slurm: nor its job */
	}
	if (c->http) {
		sl_ctl_publish(c);
		sl_ctl_http_stop(c->http);
	}
	if (c->ev.file && rc) {
		json_t *f = json_object();
		json_object_set_new(f, "message", json_string(err->msg));
		sl_ctl_event(&c->ev, "exit", f);
	}
	sl_ctl_events_close(&c->ev);
	if (c->steps_file)
		fclose(c->steps_file);
	sl_ctl_run_lock_release(&c->lock); /* last: the records above are complete */
	sl_ctl_candidate_free(&c->cur);
	sl_ctl_candidate_free(&c->next);
	free(c->probe.rank_host);
	free(c->probe.answered);
	sl_test_drop_lines_free(&c->drop);
	sl_ctl_seen_steps_free(&c->seen);
	sl_ctl_pool_watch_free(&c->pool);
	json_decref(c->cluster_json);
	json_decref(c->islands);
	sl_cluster_free(&c->cluster);
	sl_sim_env_free(c->env);
	free(c);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}
