/* The controller's start: the binary to start generations with, the model's environment, the
 * cluster (a file, or Slurm's nodes), the run directory and its lock, an earlier controller's
 * records made whole (restart.h), the event log, steps.jsonl, the pool watch and the HTTP
 * server. Invariants: nothing is appended to the run directory's records before the
 * reconciliation; nothing trains beside a rank an earlier controller left behind. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl_state.h"
#include "ctl/restart.h"
#include "ctl/status_http.h"
#include "train/heldout.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/log.h"

/* The hosts: Slurm's nodes (then Slurm is the pool source too) or the cluster file, with the
 * host table and the JSON that generations' cluster files are copied from. */
static int load_cluster(struct ctl *c, struct sl_err *err)
{
	const struct sl_ctl_options *o = c->o;
	int rc;
	if (o->slurm) {
		/* Slurm: the hosts are the partition's nodes, and it is the pool source too */
		if ((rc = sl_ctl_pool_watch_init_slurm(&c->pool, o->partition, &c->env->catalogue,
						       &c->cluster, &c->cluster_json, c->start_s,
						       err)))
			return rc;
	} else if ((rc = sl_cluster_load(o->cluster, &c->env->catalogue, &c->cluster, err))) {
		return rc;
	}
	if (c->cluster.host_count > SL_CTL_MAX_HOSTS)
		return sl_err_set(err, SL_EINPUT, "cluster file '%s': at most %d hosts",
				  o->slurm ? c->cluster.path : o->cluster, SL_CTL_MAX_HOSTS);
	sl_ctl_hosts_init(&c->hosts, c->cluster.host_count);
	sl_ctl_node_death_setup(c);
	if (!o->slurm)
		c->cluster_json = sl_json_load_file(o->cluster, "cluster file", err);
	if (!c->cluster_json)
		return SL_EINPUT;
	return 0;
}

/* --val-data against the training data and the model, before anything is made or started:
 * every generation would fail on it otherwise (the checks of sl_heldout_open). */
static int check_heldout(const struct ctl *c, struct sl_err *err)
{
	const struct sl_ctl_options *o = c->o;
	if (!o->val_data)
		return 0;
	struct sl_token_file train;
	int rc = sl_token_file_open(&train, o->data, err);
	if (rc)
		return rc;
	struct sl_heldout h;
	const struct sl_model_config *m = &c->env->model;
	rc = sl_heldout_open(&h, o->val_data, &train, o->seq_len > 0 ? o->seq_len : m->seq_len, 1,
			     m->vocab, o->val_windows > 0 ? o->val_windows : SL_HELDOUT_DEFAULT_WINDOWS,
			     err);
	sl_heldout_close(&h);
	sl_token_file_close(&train);
	return rc;
}

/* The run directory made and locked, with the checkpoint folder when it can be made
 * (*have_ckpt_dir), and its event log opened. */
static int take_run_dir(struct ctl *c, int *have_ckpt_dir, struct sl_err *err)
{
	const struct sl_ctl_options *o = c->o;
	if (mkdir(o->run_dir, 0777) && errno != EEXIST)
		return sl_err_set(err, SL_EIO, "cannot create run directory '%s': %s", o->run_dir,
				  strerror(errno));
	/* the checkpoint folder too is this controller's alone; sailor run makes it otherwise */
	*have_ckpt_dir = !mkdir(o->ckpt_dir, 0777) || errno == EEXIST;
	int rc = sl_ctl_run_lock_take(&c->lock, o->run_dir, *have_ckpt_dir ? o->ckpt_dir : NULL,
				      o->stop_timeout_s + 10.0, err);
	if (rc)
		return rc;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/events.jsonl", o->run_dir);
	return sl_ctl_events_open(&c->ev, path, o->json ? stdout : NULL, c->start_s, err);
}

/* What an earlier controller left, said: the controller_restart event and a note. */
static void restart_event(struct ctl *c, const struct sl_ctl_restart_info *restart,
			  long long resume, double training_waited_s)
{
	const struct sl_ctl_options *o = c->o;
	json_t *f = json_object();
	json_object_set_new(f, "newest_checkpoint", json_integer(resume > 0 ? resume : 0));
	json_object_set_new(f, "generations", json_integer(restart->generations));
	json_object_set_new(f, "newest_step", json_integer(restart->newest_step));
	json_object_set_new(f, "steps_on_record", json_integer(restart->steps_on_record));
	json_object_set_new(f, "steps_recovered", json_integer(restart->steps_recovered));
	json_object_set_new(f, "steps_to_rerun", json_integer(restart->steps_to_rerun));
	if (c->lock.waited_pid) {
		json_object_set_new(f, "waited_for_pid", json_integer(c->lock.waited_pid));
		json_object_set_new(f, "waited_s", json_real(c->lock.waited_s));
	}
	if (training_waited_s > 0.05) /* a rank left behind still trained */
		json_object_set_new(f, "waited_for_training_s", json_real(training_waited_s));
	sl_ctl_event(&c->ev, "controller_restart", f);
	sl_log_note("run directory '%s' holds %d generation%s of an earlier controller: "
		    "resuming from step %lld; %lld step%s recovered from their files, %lld "
		    "to run again", o->run_dir, restart->generations,
		    restart->generations == 1 ? "" : "s", resume > 0 ? resume : 0,
		    restart->steps_recovered, restart->steps_recovered == 1 ? "" : "s",
		    restart->steps_to_rerun);
}

/* The run directory's records taken over from an earlier controller, if any, then steps.jsonl
 * opened for appending. */
static int reconcile_run_dir(struct ctl *c, int have_ckpt_dir, struct sl_err *err)
{
	const struct sl_ctl_options *o = c->o;
	int rc;
	/* a rank a dead controller left behind may still train (and checkpoint): its steps must
	 * be on record before the reconciliation, and nothing may train beside it */
	double training_waited_s = 0;
	if (have_ckpt_dir && (rc = sl_ctl_wait_no_training(o->ckpt_dir, o->stop_timeout_s + 10.0,
							   &training_waited_s, err)))
		return rc;
	/* an earlier controller's records (restart.h): made whole before anything is appended */
	struct sl_ctl_restart_info restart;
	long long resume = sl_ctl_newest_checkpoint(c);
	if ((rc = sl_ctl_restart_reconcile(o->run_dir, resume, &restart, err)))
		return rc;
	c->gen_count = restart.generations;
	c->recorded_max = restart.steps_on_record ? (resume > 0 ? resume : 0) : 0;
	if (restart.generations || restart.newest_step || c->lock.waited_pid ||
	    training_waited_s > 0.05)
		restart_event(c, &restart, resume, training_waited_s);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/steps.jsonl", o->run_dir);
	c->steps_file = fopen(path, "a");
	if (!c->steps_file)
		return sl_err_set(err, SL_EIO, "cannot write '%s': %s", path, strerror(errno));
	return 0;
}

/* The start event: the job as the controller runs it. */
static void start_event(struct ctl *c)
{
	const struct sl_ctl_options *o = c->o;
	json_t *f = json_object();
	json_object_set_new(f, "model", json_string(c->env->model.name));
	json_object_set_new(f, "steps", json_integer(o->steps));
	json_object_set_new(f, "global_batch", json_integer(o->global_batch));
	json_object_set_new(f, "ckpt_dir", json_string(o->ckpt_dir));
	json_object_set_new(f, "ckpt_every", json_integer(o->ckpt_every));
	json_object_set_new(f, "run_dir", json_string(o->run_dir));
	json_object_set_new(f, "pool_source", json_string(o->slurm ? "slurm" : o->pool ? o->pool :
							   o->trace));
	json_object_set_new(f, "time_scale", json_real(o->time_scale));
	json_object_set_new(f, "sync_checkpoints", json_boolean(o->sync_checkpoints));
	sl_ctl_event(&c->ev, "start", f);
}

/* --http: the status server started, and the http event with the port it took. */
static int start_http(struct ctl *c, struct sl_err *err)
{
	int port = 0;
	int rc = sl_ctl_http_start(&c->http, c->o->http, &port, err);
	if (rc)
		return rc;
	json_t *f = json_object();
	json_object_set_new(f, "address", json_string(c->o->http));
	json_object_set_new(f, "port", json_integer(port));
	sl_ctl_event(&c->ev, "http", f);
	return 0;
}

int sl_ctl_setup(struct ctl *c, struct sl_err *err)
{
	const struct sl_ctl_options *o = c->o;
	c->start_s = sl_now_s();
	c->loss = NAN;
	c->val_loss = NAN;
	/* what a generation leaves behind becomes ours to end */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	c->dead_rank = -1;
	ssize_t len = readlink("/proc/self/exe", c->self, sizeof(c->self) - 1);
	if (len <= 0)
		return sl_err_set(err, SL_EIO, "cannot find the sailor binary (/proc/self/exe)");
	c->self[len] = 0;
	int rc = sl_sim_env_load_overlaid(o->model, NULL, o->profiles, &c->env, err);
	int have_ckpt_dir = 0;
	if (!rc)
		rc = check_heldout(c, err);
	if (!rc && o->islands)
		rc = sl_islands_template_load(o->islands, &c->islands, err);
	if (!rc)
		rc = load_cluster(c, err);
	if (!rc)
		rc = take_run_dir(c, &have_ckpt_dir, err);
	if (!rc)
		rc = reconcile_run_dir(c, have_ckpt_dir, err);
	if (!rc)
		rc = sl_test_drop_lines_parse(&c->drop, err);
	if (!rc && !o->slurm)
		rc = sl_ctl_pool_watch_init(&c->pool, o->pool, o->trace, o->time_scale,
					    &c->env->catalogue, c->start_s, err);
	if (rc)
		return rc;
	/* the generations' data and model must be usable before anything starts */
	start_event(c);
	if (o->http)
		return start_http(c, err);
	return 0;
}
