/* Generation start, stop and end: the files a generation is started with (its plan, the
 * cluster file without the hosts left out, its own steps file), the `sailor run` command line,
 * the stop request, and the accounting once it ended (outcome, failure, hosts to blame).
 * Invariants: one generation at a time; a generation starts only after the previous one is
 * reaped and nothing of it trains; steps.jsonl holds each step once (steps after the
 * checkpoint a generation resumes from leave it first). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/ctl_state.h"
#include "cluster/zone_files.h"
#include "ctl/restart.h"
#include "train/checkpoint.h"
#include "util/clock.h"
#include "util/log.h"

static int write_cluster_file(const struct ctl *c, const char *path, struct sl_err *err)
{
	json_t *copy = json_deep_copy(c->cluster_json);
	json_t *hosts = json_object_get(copy, "hosts");
	json_t *kept = json_array();
	size_t i;
	json_t *h;
	json_array_foreach(hosts, i, h) {
		const char *name = json_string_value(json_object_get(h, "name"));
		int skip = 0;
		for (int k = 0; k < c->cluster.host_count; k++)
			if ((c->hosts.excluded[k] || !sl_ctl_pool_watch_host_usable(&c->pool, k)) &&
			    name && !strcmp(c->cluster.hosts[k].name, name))
				skip = 1;
		if (!skip)
			json_array_append(kept, h);
	}
	json_object_set_new(copy, "hosts", kept);
	int rc = json_dump_file(copy, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(copy);
	return rc ? sl_err_set(err, SL_EIO, "cannot write '%s'", path) : 0;
}

long long sl_ctl_newest_checkpoint(const struct ctl *c)
{
	long long *steps = NULL;
	int n = 0;
	long long s = -1;
	if (!sl_checkpoint_list(c->o->ckpt_dir, &steps, &n, NULL) && n > 0)
		s = steps[0];
	free(steps);
	return s;
}

/* The steps after the checkpoint the next generation resumes from run again (a generation failed
 * after them): their lines leave steps.jsonl now, and the new ones take their place, so that the
 * file holds each step once (restart.h does the rewrite; the failed generation's own file keeps
 * them). */
static int forget_steps_after(struct ctl *c, long long resume, struct sl_err *err)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/steps.jsonl", c->o->run_dir);
	fclose(c->steps_file);
	struct sl_ctl_restart_info info;
	int rc = sl_ctl_restart_reconcile(c->o->run_dir, resume, &info, err);
	c->steps_file = fopen(path, "a");
	if (!rc && !c->steps_file)
		rc = sl_err_set(err, SL_EIO, "cannot write '%s': %s", path, strerror(errno));
	if (!rc)
		c->recorded_max = resume > 0 ? resume : 0;
	return rc;
}

/* Where a generation's files are: its folder gen-<n>/, the plan and cluster file in it, and the
 * zone files this controller planned with (zones-<i>.json: an overlay may have come from the pool
 * file, which the ranks never read). */
struct gen_files {
	char dir[PATH_MAX], plan[PATH_MAX + 16], cluster[PATH_MAX + 16];
	char zones[SL_ZONE_FILES_MAX][PATH_MAX + 32];
	int zone_count;
};

/* gen-<index>/ with the plan and the cluster file (without the hosts left out) the generation
 * starts with, and no steps file there of an earlier controller. */
static int write_generation_files(struct ctl *c, int index, struct gen_files *f,
				  struct sl_err *err)
{
	snprintf(f->dir, sizeof(f->dir), "%s/gen-%d", c->o->run_dir, index);
	if (mkdir(f->dir, 0777) && errno != EEXIST)
		return sl_err_set(err, SL_EIO, "cannot create '%s': %s", f->dir, strerror(errno));
	snprintf(f->plan, sizeof(f->plan), "%s/plan.json", f->dir);
	snprintf(f->cluster, sizeof(f->cluster), "%s/cluster.json", f->dir);
	snprintf(c->gen_steps_path, sizeof(c->gen_steps_path), "%s/steps.jsonl", f->dir);
	/* rank 0 appends to it: a file of an earlier controller on this run directory must not
	 * pass for this generation's steps */
	if (unlink(c->gen_steps_path) && errno != ENOENT)
		return sl_err_set(err, SL_EIO, "cannot remove '%s': %s", c->gen_steps_path,
				  strerror(errno));
	int rc = sl_ctl_save_plan(c, &c->next.plan, f->plan, &c->gen_outer, err);
	if (!rc)
		rc = write_cluster_file(c, f->cluster, err);
	f->zone_count = 0;
	for (int i = 0; !rc && i < sl_zone_files_overlay_count(); i++) {
		/* from run_dir, not f->dir: gcc -O1 cannot tell f->zones[i] from f->dir (restrict) */
		snprintf(f->zones[i], sizeof(f->zones[i]), "%s/gen-%d/zones-%d.json", c->o->run_dir,
			 index, i);
		rc = sl_zone_files_overlay_save(i, f->zones[i], err);
		f->zone_count = i + 1;
	}
	return rc;
}

/* The liveness probe set for the next plan: where its ranks run, none of them answered. */
static int reset_probe(struct ctl *c, struct sl_err *err)
{
	free(c->probe.rank_host);
	free(c->probe.answered);
	c->probe.rank_host = NULL;
	c->probe.answered = NULL;
	c->probe.world = 0;
	int rc = sl_ctl_runnable(c, &c->next.plan, &c->probe.rank_host, &c->probe.world, err);
	if (rc)
		return rc;
	c->probe.answered = calloc((size_t)c->probe.world, 1);
	if (!c->probe.answered)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	return 0;
}

/* The numbers on `sailor run`'s command line, as text that lives as long as the command line. */
struct run_numbers {
	char steps[32], gb[32], every[32], seq[32], threads[32], seed[32], eval_every[32];
	char val_windows[32];
};

/* The generation's `sailor run` command line (NULL: out of memory; the caller frees the array,
 * whose strings belong to c, f and nums). */
static char **run_argv(const struct ctl *c, const struct gen_files *f, long long resume,
		       struct run_numbers *nums)
{
	snprintf(nums->steps, sizeof(nums->steps), "%lld", c->o->steps);
	snprintf(nums->gb, sizeof(nums->gb), "%lld", c->o->global_batch);
	snprintf(nums->every, sizeof(nums->every), "%lld", c->o->ckpt_every);
	snprintf(nums->seq, sizeof(nums->seq), "%d", c->o->seq_len);
	snprintf(nums->threads, sizeof(nums->threads), "%d", c->o->threads_per_rank > 0 ?
		 c->o->threads_per_rank : 1);
	snprintf(nums->seed, sizeof(nums->seed), "%llu", c->o->seed);
	snprintf(nums->eval_every, sizeof(nums->eval_every), "%lld", c->o->eval_every);
	snprintf(nums->val_windows, sizeof(nums->val_windows), "%lld", c->o->val_windows);
	const char *fixed[] = {c->self, "run", "--plan", f->plan, "--cluster", f->cluster,
			       "--model", c->o->model, "--data", c->o->data, "--steps", nums->steps,
			       "--global-batch", nums->gb, "--ckpt-dir", c->o->ckpt_dir,
			       "--ckpt-every", nums->every, "--threads-per-rank", nums->threads,
			       "--json", "--events-file", c->gen_steps_path};
	int nfixed = (int)(sizeof(fixed) / sizeof(fixed[0]));
	char **argv = calloc((size_t)(nfixed + 22 + 2 * SL_ZONE_FILES_MAX + c->o->extra_count),
			     sizeof(char *));
	if (!argv)
		return NULL;
	int n = 0;
	for (int i = 0; i < nfixed; i++)
		argv[n++] = (char *)fixed[i];
	if (c->o->seq_len > 0) {
		argv[n++] = "--seq-len";
		argv[n++] = nums->seq;
	}
	if (c->o->seed_given) {
		argv[n++] = "--seed";
		argv[n++] = nums->seed;
	}
	if (c->o->val_data) { /* the held-out evaluation (the controller checked the file) */
		argv[n++] = "--val-data";
		argv[n++] = (char *)c->o->val_data;
		argv[n++] = "--eval-every";
		argv[n++] = nums->eval_every;
	}
	if (c->o->val_windows > 0) {
		argv[n++] = "--val-windows";
		argv[n++] = nums->val_windows;
	}
	if (resume >= 0)
		argv[n++] = "--resume";
	/* Slurm: the generation is a Slurm job on the cluster file's (usable) nodes */
	if (c->o->slurm)
		argv[n++] = "--slurm";
	if (c->o->slurm && c->o->partition) {
		argv[n++] = "--partition";
		argv[n++] = (char *)c->o->partition;
	}
	if (sl_catalogue_overlay()) { /* --gpus: the ranks plan-check with the same types */
		argv[n++] = "--gpus";
		argv[n++] = (char *)sl_catalogue_overlay();
	}
	for (int i = 0; i < f->zone_count; i++) { /* the zones it planned with */
		argv[n++] = "--zones";
		argv[n++] = (char *)f->zones[i];
	}
	for (int i = 0; i < c->o->extra_count; i++)
		argv[n++] = c->o->extra[i];
	argv[n] = NULL;
	return argv;
}

/* The generation just started is the one running: its counters from zero, the next candidate
 * the current one, and the generation_start event. */
static void begin_generation(struct ctl *c, int index, long long resume, const char *dir)
{
	c->running = 1;
	c->stop = STOP_NONE;
	c->last_output_s = sl_now_s();
	c->gen_ready = 0;
	c->gen_steps = 0;
	sl_ctl_seen_steps_clear(&c->seen);
	c->dead_rank = -1;
	c->dead_host[0] = 0;
	c->probe.sent_s = 0;
	c->probe.silent_count = 0;
	sl_ctl_node_death_reset(c);
	c->last_error[0] = 0;
	c->end_seen = 0;
	c->step_time_count = 0;
	sl_ctl_candidate_free(&c->cur);
	c->cur = c->next;
	memset(&c->next, 0, sizeof(c->next));
	c->gen_usd_per_hour = c->cur.res.gpu_usd_per_hour;
	if (c->rc.active)
		c->rc.start_s = c->gen.started_s;
	json_t *f = json_object();
	json_object_set_new(f, "generation", json_integer(index));
	json_object_set_new(f, "resume_step", json_integer(resume >= 0 ? resume : 0));
	json_object_set_new(f, "dir", json_string(dir));
	json_object_set_new(f, "pid", json_integer(c->gen.pid));
	json_object_set_new(f, "plan", sl_ctl_plan_summary(c, &c->cur));
	sl_ctl_event(&c->ev, "generation_start", f);
}

int sl_ctl_start_generation(struct ctl *c, struct sl_err *err)
{
	int index = ++c->gen_count;
	c->gen_outer_steps = c->gen_outer_wait_s = c->gen_outer_bytes = 0; /* its rank 0 counts anew */
	struct gen_files f;
	int rc = write_generation_files(c, index, &f, err);
	if (!rc)
		rc = reset_probe(c, err);
	if (rc)
		return rc;
	/* the previous generation is reaped; a rank of it that escaped (a host's mpirun lost) must
	 * not train beside the next one */
	if ((rc = sl_ctl_wait_no_training(c->o->ckpt_dir, c->o->stop_timeout_s, NULL, err)))
		return rc;
	long long resume = sl_ctl_newest_checkpoint(c);
	if (c->recorded_max > (resume > 0 ? resume : 0) &&
	    (rc = forget_steps_after(c, resume, err)))
		return rc;
	struct run_numbers nums;
	char **argv = run_argv(c, &f, resume, &nums);
	if (!argv)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	char *env[] = {"SAILOR_SYNC_CHECKPOINTS=1", NULL};
	rc = sl_ctl_gen_start(&c->gen, index, argv, c->o->sync_checkpoints ? env : NULL, f.dir,
			      err);
	free(argv);
	if (rc)
		return rc;
	begin_generation(c, index, resume, f.dir);
	return 0;
}

void sl_ctl_stop_generation(struct ctl *c, enum sl_ctl_stop why)
{
	if (!c->running || c->stop != STOP_NONE)
		return;
	c->stop = why;
	sl_ctl_gen_terminate(&c->gen);
	if (c->rc.active)
		c->rc.term_s = c->gen.term_sent_s;
	json_t *f = json_object();
	json_object_set_new(f, "generation", json_integer(c->gen.index));
	json_object_set_new(f, "reason", json_string(sl_ctl_stop_name(why)));
	json_object_set_new(f, "step", json_integer(c->step));
	sl_ctl_event(&c->ev, "stop_requested", f);
}

static void exclude_event(struct ctl *c, int h)
{
	json_t *f = json_object();
	json_object_set_new(f, "host", json_string(c->cluster.hosts[h].name));
	json_object_set_new(f, "failures", json_integer(c->hosts.fails[h]));
	sl_ctl_event(&c->ev, "host_excluded", f);
	sl_log_warn("host '%s' failed %d times: left out until the pool offers its GPUs again",
		    c->cluster.hosts[h].name, c->hosts.fails[h]);
}

/* The generation ended: account for it and say how. Returns 1 when the job is complete. */
int sl_ctl_generation_ended(struct ctl *c)
{
	double now = sl_now_s();
	double run_s = now - c->gen.started_s;
	c->usd += c->gen_usd_per_hour * run_s / 3600.0;
	c->running = 0;
	sl_ctl_gen_close(&c->gen);
	int orphans = sl_ctl_reap_orphans();
	if (orphans)
		sl_log_warn("generation %d left %d processes behind: killed", c->gen.index, orphans);
	sl_ctl_slurm_end_job(c, 1); /* Slurm: nothing of its job stays queued or running */
	/* nothing writes the generation's file any more: take the steps the pipe lost, before
	 * anything is judged on the newest step */
	sl_ctl_recover_steps(c);
	enum sl_ctl_outcome outcome = sl_ctl_classify_end(c->gen.status, c->step, c->o->steps,
							  c->stop, c->dead_rank >= 0);
	if (c->rc.active)
		c->rc.exit_s = now;
	json_t *f = json_object();
	json_object_set_new(f, "generation", json_integer(c->gen.index));
	json_object_set_new(f, "status", json_integer(c->gen.status));
	json_object_set_new(f, "outcome", json_string(sl_ctl_outcome_name(outcome)));
	json_object_set_new(f, "stop_reason", json_string(sl_ctl_stop_name(c->stop)));
	json_object_set_new(f, "step", json_integer(c->step));
	json_object_set_new(f, "steps_run", json_integer(c->gen_steps));
	json_object_set_new(f, "run_s", json_real(run_s));
	json_object_set_new(f, "killed", json_boolean(c->gen.killed));
	sl_ctl_event(&c->ev, "generation_end", f);
	if (outcome == SL_CTL_COMPLETE)
		return 1;
	if (outcome != SL_CTL_FAILED)
		return 0;
	c->failures++;
	c->consecutive_failures = sl_ctl_consecutive_failures(c->consecutive_failures,
							      c->gen_steps);
	long long resume = sl_ctl_newest_checkpoint(c);
	/* the hosts to blame: the dead rank's, or those of the ranks silent to the probe */
	int blamed[16], nblamed = 0;
	int h = c->dead_host[0] ? sl_ctl_host_index(&c->cluster, c->dead_host) : -1;
	if (c->dead_node_count) /* nodes found dead (node_death.c): every one of them */
		for (int i = 0; i < c->dead_node_count && nblamed < 16; i++)
			blamed[nblamed++] = c->dead_nodes[i];
	else if (h >= 0)
		blamed[nblamed++] = h;
	else if (c->stop == STOP_HANG)
		for (int i = 0; i < c->probe.silent_count && nblamed < 16; i++)
			blamed[nblamed++] = c->probe.silent_hosts[i];
	int rank = c->dead_rank;
	for (int r = 0; rank < 0 && c->stop == STOP_HANG && nblamed && r < c->probe.world;
	     r++)
		if (!c->probe.answered[r])
			rank = r;
	f = json_object();
	json_object_set_new(f, "generation", json_integer(c->gen.index));
	json_object_set_new(f, "step", json_integer(c->step));
	json_object_set_new(f, "rank", rank >= 0 ? json_integer(rank) : json_null());
	json_object_set_new(f, "host", nblamed ? json_string(c->cluster.hosts[blamed[0]].name)
					       : json_null());
	json_t *names = json_array();
	for (int i = 0; i < nblamed; i++)
		json_array_append_new(names, json_string(c->cluster.hosts[blamed[i]].name));
	json_object_set_new(f, "hosts", names);
	json_object_set_new(f, "reason", json_string(c->dead_node_count ? "node death" :
						     c->stop == STOP_HANG ? "no output (hang)" :
						     c->dead_rank >= 0 ? "rank died" : "job failed"));
	json_object_set_new(f, "message", json_string(c->last_error));
	json_object_set_new(f, "resume_step", json_integer(resume > 0 ? resume : 0));
	json_object_set_new(f, "lost_steps", json_integer(sl_ctl_lost_steps(c->step, resume)));
	sl_ctl_event(&c->ev, "failure", f);
	sl_log_warn("generation %d failed at step %lld%s%s: resuming from step %lld", c->gen.index,
		    c->step, nblamed ? " on host " : "",
		    nblamed ? c->cluster.hosts[blamed[0]].name : "", resume > 0 ? resume : 0);
	for (int i = 0; i < nblamed; i++)
		if (sl_ctl_hosts_record_failure(&c->hosts, blamed[i], c->o->exclude_after))
			exclude_event(c, blamed[i]);
	/* the newest checkpoint is where the next generation starts */
	c->step = resume > 0 ? resume : 0;
	return 0;
}
