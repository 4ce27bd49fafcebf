/* The controller's loop (controller.h). Single-threaded: it polls the generation's pipes with a
 * short timeout, then looks at the pool, its signals and its timers; the HTTP server (if any)
 * only reads texts this loop publishes. */
#include "ctl/controller.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl/decide.h"
#include "ctl/events.h"
#include "ctl/generation.h"
#include "ctl/pool_watch.h"
#include "ctl/restart.h"
#include "ctl/run_lock.h"
#include "ctl/status_http.h"
#include "ctl/steps_file.h"
#include "cluster/cluster_file.h"
#include "runtime/launch_slurm.h"
#include "runtime/placement.h"
#include "runtime/roles.h"
#include "runtime/runner.h"
#include "train/checkpoint.h"
#include "util/json.h"
#include "util/log.h"

#define STOP_NONE SL_CTL_STOP_NONE
#define STOP_RECONFIGURE SL_CTL_STOP_RECONFIGURE
#define STOP_NO_PLAN SL_CTL_STOP_NO_PLAN
#define STOP_SIGNAL SL_CTL_STOP_SIGNAL
#define STOP_HANG SL_CTL_STOP_HANG

#define RATE_WINDOW 10

struct candidate {
	int valid;
	struct sl_plan plan;
	struct sl_sim_result res;
	char *key;        /* canonical JSON text: equal plans have equal keys */
	double plan_s;
};

struct ctl {
	const struct sl_ctl_options *o;
	struct sl_sim_env *env;
	struct sl_cluster cluster;
	json_t *cluster_json;
	struct sl_ctl_pool_watch pool;
	struct sl_ctl_events ev;
	struct sl_ctl_run_lock lock;  /* held for the controller's life (run_lock.h) */
	struct sl_ctl_http *http;
	FILE *steps_file;
	char self[PATH_MAX];
	double start_s;
	struct sl_ctl_hosts hosts;
	/* the generation */
	struct sl_ctl_gen gen;
	int running;
	int gen_count;
	struct candidate cur;         /* plan of the running (or last) generation */
	struct candidate next;        /* plan to start next */
	enum sl_ctl_stop stop;
	double last_output_s;
	int gen_steps;                /* steps this generation completed */
	struct sl_ctl_seen_steps seen; /* the steps of this generation on record (steps_file.h) */
	char gen_steps_path[PATH_MAX + 16]; /* gen-<n>/steps.jsonl: rank 0's own record */
	int dead_rank;
	char dead_host[256];
	/* the liveness probe of a silent generation */
	int world;                    /* its ranks */
	int *rank_host;               /* cluster file index of each rank's host */
	unsigned char *answered;      /* which ranks answered the probe */
	double probe_s;               /* when the probe was sent (0: none in flight) */
	int silent_hosts[16];         /* hosts of the ranks that did not answer */
	int silent_count;
	char last_error[512];
	int end_seen;
	/* progress */
	long long step;               /* newest step completed by any generation */
	long long recorded_max;       /* newest step in steps.jsonl */
	long long ckpt_step;          /* newest checkpoint persisted */
	double loss;
	double step_times[RATE_WINDOW];
	int step_time_count;
	double usd;                   /* spent by finished generations */
	double gen_usd_per_hour;
	int reconfigurations, failures, consecutive_failures;
	struct sl_ctl_reconf rc;
	int signal_seen;
	int waiting;                  /* no plan possible: waiting for a pool change */
	double published_s;
	/* test-only (SAILOR_TEST_DROP_STEP_LINE): step lines to ignore when they come by pipe */
	long long *drop_steps;
	int drop_count;
	int drop_after_stop;          /* also every step line that arrives once a stop was asked */
};

static volatile sig_atomic_t got_signal;
static void on_signal(int sig) { got_signal = sig; }

/* ---- plans ---- */

static void candidate_free(struct candidate *c)
{
	if (c->valid)
		sl_plan_free(&c->plan);
	free(c->key);
	memset(c, 0, sizeof(*c));
}

/* The cluster without the hosts left out (a view: hosts are copied, strings shared). */
static int filtered_cluster(const struct ctl *c, struct sl_cluster *out)
{
	*out = c->cluster;
	out->hosts = calloc((size_t)c->cluster.host_count + 1, sizeof(*out->hosts));
	if (!out->hosts)
		return SL_ENOMEM;
	out->host_count = 0;
	for (int h = 0; h < c->cluster.host_count; h++)
		if (!c->hosts.excluded[h] &&
		    sl_ctl_pool_watch_host_usable(&c->pool, h)) /* Slurm: not drained or down */
			out->hosts[out->host_count++] = c->cluster.hosts[h];
	return 0;
}

static void run_options(const struct ctl *c, const char *plan_path, struct sl_run_options *ro)
{
	memset(ro, 0, sizeof(*ro));
	sl_train_options_defaults(&ro->train);
	ro->train.model = c->o->model;
	ro->train.data = c->o->data;
	ro->train.steps = c->o->steps;
	ro->train.global_batch = c->o->global_batch;
	ro->train.seq_len = c->o->seq_len;
	ro->plan = plan_path;
}

/* Whether the runtime executes the plan on the cluster left: the checks `sailor run` makes
 * before it starts anything (plan against model and batch, data, placement on hosts). With
 * rank_host, also where each rank goes (the cluster file's host index; malloc'd, *world
 * entries): the placement is deterministic, so it is the launcher's. */
static int runnable(struct ctl *c, const struct sl_plan *plan, int **rank_host, int *world,
		    struct sl_err *err)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/candidate-plan.json", c->o->run_dir);
	int rc = sl_plan_save(plan, &c->env->catalogue, path, err);
	if (rc)
		return rc;
	struct sl_run_options ro;
	run_options(c, path, &ro);
	struct sl_role_table table;
	struct sl_catalogue cat;
	memset(&table, 0, sizeof(table));
	rc = sl_dist_validate(&ro, &table, &cat, err);
	if (!rc) {
		struct sl_cluster view;
		rc = filtered_cluster(c, &view);
		if (!rc)
			rc = sl_place_roles(&table, &view, &cat, err);
		if (!rc && rank_host) {
			*rank_host = malloc((size_t)table.world_size * sizeof(int));
			if (!*rank_host) {
				rc = sl_err_set(err, SL_ENOMEM, "out of memory");
			} else {
				*world = table.world_size;
				for (int r = 0; r < table.world_size; r++)
					(*rank_host)[r] = sl_ctl_host_index(
						&c->cluster, view.hosts[table.roles[r].host].name);
			}
		}
		free(view.hosts);
		sl_role_table_free(&table);
	}
	unlink(path);
	return rc;
}

static char *plan_key(const struct ctl *c, const struct sl_plan *plan)
{
	json_t *j = sl_plan_to_json(plan, &c->env->catalogue);
	char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	return text;
}

/* Plans on the pool left; the best candidate the runtime can execute, or why there is none. */
static int plan_now(struct ctl *c, struct candidate *cand, char *why, size_t why_size)
{
	candidate_free(cand);
	double t0 = sl_ctl_now_s();
	struct sl_pool pool;
	sl_ctl_effective_pool(&c->pool.current, &c->cluster, &c->hosts, &pool);
	if (sl_pool_total(&pool) == 0) {
		snprintf(why, why_size, "no GPU of the pool is on a host of the cluster file%s",
			 sl_pool_total(&c->pool.current) ? " that is not left out" : "");
		return 0;
	}
	struct sl_search_request req = c->o->req;
	req.global_batch = c->o->global_batch;
	if (req.top_k < 16)
		req.top_k = 16; /* the first few may not be runnable here (placement, heads) */
	struct sl_search_outcome out;
	struct sl_err err = {0};
	int rc = sl_search_run(c->env, &pool, &req, &out, &err);
	if (rc) {
		snprintf(why, why_size, "%s", err.msg);
		sl_search_outcome_free(&out);
		return 0;
	}
	if (out.count == 0)
		snprintf(why, why_size, "no plan on this pool meets the constraints (--max-cost, "
			 "--min-throughput)%s", out.has_fastest || out.has_cheapest ? "" :
			 ": none fits in memory");
	char first_refusal[SL_ERR_MSG_MAX] = "";
	for (int i = 0; i < out.count; i++) {
		struct sl_err e = {0};
		if (runnable(c, &out.best[i].plan, NULL, NULL, &e)) {
			if (!first_refusal[0])
				snprintf(first_refusal, sizeof(first_refusal), "%s", e.msg);
			/* never silent: a user who reads the planner's best plan must see why another
			 * one runs (after issue 23 the reason is the hosts, never the batch or layers) */
			json_t *f = json_object();
			json_object_set_new(f, "rank", json_integer(i + 1));
			json_object_set_new(f, "of", json_integer(out.count));
			json_object_set_new(f, "predicted_it_s",
					    json_real(out.best[i].result.throughput_it_s));
			json_object_set_new(f, "reason", json_string(e.msg));
			sl_ctl_event(&c->ev, "plan_skipped", f);
			continue;
		}
		sl_plan_init(&cand->plan);
		if (sl_plan_copy(&cand->plan, &out.best[i].plan, &e))
			break;
		if (c->o->model)
			sl_plan_set_model(&cand->plan, c->o->model);
		cand->valid = 1;
		cand->res = out.best[i].result;
		cand->key = plan_key(c, &cand->plan);
		break;
	}
	if (!cand->valid && out.count)
		snprintf(why, why_size, "none of the %d best plans can run on the cluster's hosts; "
			 "the first: %s", out.count, first_refusal);
	sl_search_outcome_free(&out);
	cand->plan_s = sl_ctl_now_s() - t0;
	return 0;
}

static json_t *plan_summary(const struct ctl *c, const struct candidate *p)
{
	if (!p->valid)
		return json_null();
	const struct sl_catalogue *cat = &c->env->catalogue;
	json_t *o = json_object();
	json_object_set_new(o, "stages", json_integer(p->plan.num_stages));
	json_object_set_new(o, "pipelines", json_integer(p->plan.num_pipelines));
	json_object_set_new(o, "micro_batch", json_integer(p->plan.micro_batch));
	json_object_set_new(o, "gpus", json_integer(p->res.num_gpus));
	json_t *by = json_object();
	for (int k = 0; k < p->plan.num_stages; k++)
		for (int j = 0; j < p->plan.num_pipelines; j++) {
			const struct sl_replica *r = sl_plan_replica(&p->plan, k, j);
			const char *name = cat->gpus[r->gpu].name;
			json_t *n = json_object_get(by, name);
			json_object_set_new(by, name, json_integer((n ? json_integer_value(n) : 0) +
								   r->tp));
		}
	json_object_set_new(o, "gpus_by_type", by);
	json_object_set_new(o, "predicted_it_s", json_real(p->res.throughput_it_s));
	json_object_set_new(o, "usd_per_hour", json_real(p->res.gpu_usd_per_hour));
	json_object_set_new(o, "usd_per_iter", json_real(p->res.cost_usd_per_iter));
	json_object_set_new(o, "time_estimated", json_boolean(p->res.time_estimated));
	return o;
}

/* ---- generations ---- */

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

static long long newest_checkpoint(const struct ctl *c)
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

static int start_generation(struct ctl *c, struct sl_err *err)
{
	int index = ++c->gen_count;
	char dir[PATH_MAX], plan_path[PATH_MAX + 16], cluster_path[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/gen-%d", c->o->run_dir, index);
	if (mkdir(dir, 0777) && errno != EEXIST)
		return sl_err_set(err, SL_EIO, "cannot create '%s': %s", dir, strerror(errno));
	snprintf(plan_path, sizeof(plan_path), "%s/plan.json", dir);
	snprintf(cluster_path, sizeof(cluster_path), "%s/cluster.json", dir);
	snprintf(c->gen_steps_path, sizeof(c->gen_steps_path), "%s/steps.jsonl", dir);
	/* rank 0 appends to it: a file of an earlier controller on this run directory must not
	 * pass for this generation's steps */
	if (unlink(c->gen_steps_path) && errno != ENOENT)
		return sl_err_set(err, SL_EIO, "cannot remove '%s': %s", c->gen_steps_path,
				  strerror(errno));
	int rc = sl_plan_save(&c->next.plan, &c->env->catalogue, plan_path, err);
	if (!rc)
		rc = write_cluster_file(c, cluster_path, err);
	if (rc)
		return rc;
	free(c->rank_host);
	free(c->answered);
	c->rank_host = NULL;
	c->answered = NULL;
	c->world = 0;
	if ((rc = runnable(c, &c->next.plan, &c->rank_host, &c->world, err)))
		return rc;
	c->answered = calloc((size_t)c->world, 1);
	if (!c->answered)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	/* the previous generation is reaped; a rank of it that escaped (a host's mpirun lost) must
	 * not train beside the next one */
	if ((rc = sl_ctl_wait_no_training(c->o->ckpt_dir, c->o->stop_timeout_s, NULL, err)))
		return rc;
	long long resume = newest_checkpoint(c);
	if (c->recorded_max > (resume > 0 ? resume : 0) && (rc = forget_steps_after(c, resume, err)))
		return rc;
	char steps[32], gb[32], every[32], seq[32], threads[32], seed[32];
	snprintf(steps, sizeof(steps), "%lld", c->o->steps);
	snprintf(gb, sizeof(gb), "%lld", c->o->global_batch);
	snprintf(every, sizeof(every), "%lld", c->o->ckpt_every);
	snprintf(seq, sizeof(seq), "%d", c->o->seq_len);
	snprintf(threads, sizeof(threads), "%d", c->o->threads_per_rank > 0 ?
		 c->o->threads_per_rank : 1);
	snprintf(seed, sizeof(seed), "%llu", c->o->seed);
	const char *fixed[] = {c->self, "run", "--plan", plan_path, "--cluster", cluster_path,
			       "--model", c->o->model, "--data", c->o->data, "--steps", steps,
			       "--global-batch", gb, "--ckpt-dir", c->o->ckpt_dir, "--ckpt-every",
			       every, "--threads-per-rank", threads, "--json", "--events-file",
			       c->gen_steps_path};
	int nfixed = (int)(sizeof(fixed) / sizeof(fixed[0]));
	char **argv = calloc((size_t)(nfixed + 16 + c->o->extra_count), sizeof(char *));
	if (!argv)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	int n = 0;
	for (int i = 0; i < nfixed; i++)
		argv[n++] = (char *)fixed[i];
	if (c->o->seq_len > 0) {
		argv[n++] = "--seq-len";
		argv[n++] = seq;
	}
	if (c->o->seed_given) {
		argv[n++] = "--seed";
		argv[n++] = seed;
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
	for (int i = 0; i < c->o->extra_count; i++)
		argv[n++] = c->o->extra[i];
	argv[n] = NULL;
	char *env[] = {"SAILOR_SYNC_CHECKPOINTS=1", NULL};
	rc = sl_ctl_gen_start(&c->gen, index, argv, c->o->sync_checkpoints ? env : NULL, dir, err);
	free(argv);
	if (rc)
		return rc;
	c->running = 1;
	c->stop = STOP_NONE;
	c->last_output_s = sl_ctl_now_s();
	c->gen_steps = 0;
	sl_ctl_seen_steps_clear(&c->seen);
	c->dead_rank = -1;
	c->dead_host[0] = 0;
	c->probe_s = 0;
	c->silent_count = 0;
	c->last_error[0] = 0;
	c->end_seen = 0;
	c->step_time_count = 0;
	candidate_free(&c->cur);
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
	json_object_set_new(f, "plan", plan_summary(c, &c->cur));
	sl_ctl_event(&c->ev, "generation_start", f);
	return 0;
}

static void stop_generation(struct ctl *c, enum sl_ctl_stop why)
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

/* How long the ranks get to answer the liveness probe: a rank's handler writes at once, so a
 * second (or the hang timeout, if shorter) is ample even on a loaded machine. */
static double probe_window_s(const struct ctl *c)
{
	return c->o->hang_timeout_s < 1.0 ? c->o->hang_timeout_s : 1.0;
}

static double mean_step_time(const struct ctl *c)
{
	int n = c->step_time_count < RATE_WINDOW ? c->step_time_count : RATE_WINDOW;
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += c->step_times[i];
	return n ? sum / n : 0.0;
}

/* A step of the running generation, from its pipe or, recovered after its end, from its own
 * file (recover_steps): the same accounting either way. */
static void on_step(struct ctl *c, json_t *e, int recovered)
{
	long long step = json_integer_value(json_object_get(e, "step"));
	double dt = json_number_value(json_object_get(e, "step_time_s"));
	c->step = step;
	c->loss = json_number_value(json_object_get(e, "loss"));
	c->step_times[c->step_time_count++ % RATE_WINDOW] = dt;
	c->gen_steps++;
	if (sl_ctl_seen_steps_add(&c->seen, step))
		sl_log_warn("out of memory: step %lld may be recorded twice", step);
	json_t *s = json_deep_copy(e);
	if (step > c->recorded_max)
		c->recorded_max = step;
	json_object_set_new(s, "generation", json_integer(c->gen.index));
	json_object_set_new(s, "t_s", json_real(sl_ctl_now_s() - c->start_s));
	json_object_set_new(s, "predicted_it_s", json_real(c->cur.res.throughput_it_s));
	if (recovered)
		json_object_set_new(s, "recovered", json_true()); /* t_s: when it was recovered */
	char *text = json_dumps(s, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	if (text && c->steps_file) {
		fprintf(c->steps_file, "%s\n", text);
		fflush(c->steps_file);
	}
	free(text);
	json_decref(s);
	c->probe_s = 0; /* a step: the generation is not stuck */
	if (c->gen_steps == 1 && c->rc.active && c->rc.start_s > 0) {
		/* the first step under the new plan: the reconfiguration is over */
		struct sl_ctl_reconf_parts parts;
		sl_ctl_reconf_parts(&c->rc, sl_ctl_now_s(), dt, &parts);
		json_t *f = json_object();
		json_object_set_new(f, "from_generation", json_integer(c->rc.from_gen));
		json_object_set_new(f, "to_generation", json_integer(c->gen.index));
		json_object_set_new(f, "total_s", json_real(parts.total_s));
		json_object_set_new(f, "plan_s", json_real(parts.plan_s));
		json_object_set_new(f, "checkpoint_s", json_real(parts.checkpoint_s));
		json_object_set_new(f, "stop_s", json_real(parts.stop_s));
		json_object_set_new(f, "between_s", json_real(parts.between_s));
		json_object_set_new(f, "start_s", json_real(parts.start_s));
		json_object_set_new(f, "load_s", json_real(parts.load_s));
		json_object_set_new(f, "start_load_s", json_real(parts.start_s + parts.load_s));
		json_object_set_new(f, "first_step_s", json_real(parts.first_step_s));
		if (recovered) /* its times run to the generation's end, not to the first step */
			json_object_set_new(f, "first_step_recovered", json_true());
		sl_ctl_event(&c->ev, "reconfigured", f);
		c->rc.active = 0;
	}
}

/* Test-only fault injection: SAILOR_TEST_DROP_STEP_LINE=S[,S...] makes the controller ignore
 * the pipe's line of each step S (in every generation that runs it), as if mpirun had lost it;
 * the word "stop" in the list: every step line that arrives after the controller asked the
 * generation to stop (the lines the real fault loses). It lets
 * tests/integration/control_steps_recovered.sh check the recovery from the generation's own file
 * deterministically. Read only here; never set it outside tests. */
static int dropped_for_test(const struct ctl *c, long long step)
{
	int drop = c->drop_after_stop && c->stop != STOP_NONE;
	for (int i = 0; i < c->drop_count && !drop; i++)
		drop = c->drop_steps[i] == step;
	if (drop)
		sl_log_warn("SAILOR_TEST_DROP_STEP_LINE: ignoring the line of step %lld of "
			    "generation %d", step, c->gen.index);
	return drop;
}

static int parse_drop_steps(struct ctl *c, struct sl_err *err)
{
	const char *text = getenv("SAILOR_TEST_DROP_STEP_LINE");
	if (!text || !text[0])
		return 0;
	const char *p = text;
	while (*p) {
		if (!strncmp(p, "stop", 4) && (p[4] == ',' || !p[4])) {
			c->drop_after_stop = 1;
			p += p[4] ? 5 : 4;
			continue;
		}
		char *end;
		errno = 0;
		long long step = strtoll(p, &end, 10);
		if (end == p || errno || step < 1 || (*end && *end != ','))
			return sl_err_set(err, SL_EUSAGE, "SAILOR_TEST_DROP_STEP_LINE '%s': give step "
					  "numbers (or 'stop') separated by commas", text);
		long long *grown = realloc(c->drop_steps, (size_t)(c->drop_count + 1) *
							  sizeof(*grown));
		if (!grown)
			return sl_err_set(err, SL_ENOMEM, "out of memory");
		c->drop_steps = grown;
		c->drop_steps[c->drop_count++] = step;
		p = *end ? end + 1 : end;
	}
	return 0;
}

static void on_line(void *ctx, int is_stderr, const char *line)
{
	struct ctl *c = ctx;
	c->last_output_s = sl_ctl_now_s();
	if (is_stderr) {
		/* the launcher names a dead rank: "rank R (stage .., on HOST) died ..." */
		int rank;
		char host[sizeof(c->dead_host)];
		if (sl_ctl_parse_rank_death(line, &rank, host, sizeof(host))) {
			c->dead_rank = rank;
			memcpy(c->dead_host, host, sizeof(host));
		}
		/* the generation's failure, as `sailor run` reports it (cli/options.h, sl_cli_error) */
		if (!strncmp(line, "sailor run: ", 12))
			snprintf(c->last_error, sizeof(c->last_error), "%s", line);
		return;
	}
	if (line[0] != '{')
		return;
	json_t *e = json_loads(line, 0, NULL);
	const char *type = json_string_value(json_object_get(e, "event"));
	if (type && !strcmp(type, "step")) {
		long long step = json_integer_value(json_object_get(e, "step"));
		if (!dropped_for_test(c, step))
			on_step(c, e, 0);
	} else if (type && !strcmp(type, "alive")) {
		/* a rank's answer to the liveness probe (written by its SIGUSR1 handler) */
		json_int_t r = json_integer_value(json_object_get(e, "rank"));
		if (r >= 0 && r < c->world)
			c->answered[r] = 1;
	} else if (type && !strcmp(type, "ready")) {
		/* the generation loaded its checkpoint and starts training */
		if (c->rc.active && c->rc.start_s > 0 && c->rc.ready_s == 0) {
			c->rc.ready_s = sl_ctl_now_s();
			c->rc.load_s = json_number_value(json_object_get(e, "load_s"));
		}
	} else if (type && !strcmp(type, "checkpoint")) {
		long long s = json_integer_value(json_object_get(e, "step"));
		if (s > c->ckpt_step)
			c->ckpt_step = s;
		if (c->rc.active && c->stop != STOP_NONE)
			c->rc.ckpt_s = sl_ctl_now_s();
		json_t *f = json_object();
		json_object_set_new(f, "generation", json_integer(c->gen.index));
		json_object_set(f, "step", json_object_get(e, "step"));
		json_object_set(f, "path", json_object_get(e, "path"));
		json_object_set(f, "persist_s", json_object_get(e, "persist_s"));
		sl_ctl_event(&c->ev, "checkpoint", f);
	} else if (type && !strcmp(type, "end")) {
		c->end_seen = 1;
	}
	json_decref(e);
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

/* After the generation's end: the steps in its own file (rank 0's --events-file) whose lines did
 * not come through the pipe are handled as if they had, in step order, and logged as an event
 * (steps_file.h says why lines go missing). Steps after the checkpoint the generation stopped at
 * are kept, as the pipe's are: steps.jsonl holds a step once per generation that ran it, and
 * its readers take the last. */
static void recover_steps(struct ctl *c)
{
	json_t *missing = NULL;
	int skipped = 0;
	struct sl_err err = {0};
	if (sl_ctl_steps_file_missing(c->gen_steps_path, &c->seen, &missing, &skipped, &err)) {
		sl_log_warn("generation %d: %s: steps whose lines did not arrive are not recovered",
			    c->gen.index, err.msg);
		return;
	}
	size_t n = json_array_size(missing);
	if (n == 0) {
		json_decref(missing);
		return;
	}
	/* on the pipe they would have come in step order: the newest step and its loss stay the
	 * newest the generation ran, whichever way it came */
	long long newest_seen = sl_ctl_seen_steps_newest(&c->seen);
	long long step_before = c->step;
	double loss_before = c->loss;
	json_t *steps = json_array();
	size_t i;
	json_t *e;
	json_array_foreach(missing, i, e) {
		on_step(c, e, 1);
		json_array_append_new(steps, json_integer(json_integer_value(
						     json_object_get(e, "step"))));
	}
	long long newest_recovered = json_integer_value(json_array_get(steps, n - 1));
	if (newest_seen > newest_recovered) {
		c->step = step_before;
		c->loss = loss_before;
	}
	json_t *f = json_object();
	json_object_set_new(f, "generation", json_integer(c->gen.index));
	json_object_set_new(f, "steps", steps);
	json_object_set_new(f, "file", json_string(c->gen_steps_path));
	json_object_set_new(f, "skipped_lines", json_integer(skipped));
	sl_ctl_event(&c->ev, "steps_recovered", f);
	sl_log_warn("generation %d: the line of %zu step%s (the newest: %lld) did not arrive on its "
		    "output; taken from '%s'", c->gen.index, n, n == 1 ? "" : "s",
		    newest_recovered, c->gen_steps_path);
	json_decref(missing);
}

/* The generation ended: account for it and say how. Returns 1 when the job is complete. */
static int generation_ended(struct ctl *c)
{
	double now = sl_ctl_now_s();
	double run_s = now - c->gen.started_s;
	c->usd += c->gen_usd_per_hour * run_s / 3600.0;
	c->running = 0;
	sl_ctl_gen_close(&c->gen);
	int orphans = sl_ctl_reap_orphans();
	if (orphans)
		sl_log_warn("generation %d left %d processes behind: killed", c->gen.index, orphans);
	if (c->o->slurm) {
		/* Slurm: nothing of the generation's job stays queued or running */
		char job[64];
		struct sl_err e = {0};
		sl_launch_slurm_job_name((int)c->gen.pid, job, sizeof(job));
		if (sl_launch_slurm_end(job, 30, &e))
			sl_log_warn("generation %d: %s", c->gen.index, e.msg);
	}
	/* nothing writes the generation's file any more: take the steps the pipe lost, before
	 * anything is judged on the newest step */
	recover_steps(c);
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
	long long resume = newest_checkpoint(c);
	/* the hosts to blame: the dead rank's, or those of the ranks silent to the probe */
	int blamed[16], nblamed = 0;
	int h = c->dead_host[0] ? sl_ctl_host_index(&c->cluster, c->dead_host) : -1;
	if (h >= 0)
		blamed[nblamed++] = h;
	else if (c->stop == STOP_HANG)
		for (int i = 0; i < c->silent_count && nblamed < 16; i++)
			blamed[nblamed++] = c->silent_hosts[i];
	int rank = c->dead_rank;
	for (int r = 0; rank < 0 && c->stop == STOP_HANG && nblamed && r < c->world; r++)
		if (!c->answered[r])
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
	json_object_set_new(f, "reason", json_string(c->stop == STOP_HANG ? "no output (hang)" :
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

/* ---- status ---- */

static double spent_usd(const struct ctl *c)
{
	double usd = c->usd;
	if (c->running)
		usd += c->gen_usd_per_hour * (sl_ctl_now_s() - c->gen.started_s) / 3600.0;
	return usd;
}

static void publish(struct ctl *c)
{
	if (!c->http)
		return;
	double mean = mean_step_time(c);
	double measured = mean > 0 ? 1.0 / mean : 0.0;
	const char *state = c->running ? (c->stop != STOP_NONE ? "stopping" : "running")
				       : c->waiting ? "waiting for a pool change" : "starting";
	json_t *s = json_object();
	json_object_set_new(s, "schema", json_string("sailor.control.status/1"));
	json_object_set_new(s, "state", json_string(state));
	json_object_set_new(s, "generation", json_integer(c->gen_count));
	json_object_set_new(s, "plan", plan_summary(c, &c->cur));
	json_object_set_new(s, "pool", sl_pool_to_json(&c->pool.current, &c->env->catalogue));
	json_object_set_new(s, "step", json_integer(c->step));
	json_object_set_new(s, "steps", json_integer(c->o->steps));
	json_object_set_new(s, "loss", isfinite(c->loss) ? json_real(c->loss) : json_null());
	json_object_set_new(s, "measured_it_s", json_real(measured));
	json_object_set_new(s, "predicted_it_s",
			    json_real(c->cur.valid ? c->cur.res.throughput_it_s : 0.0));
	json_object_set_new(s, "checkpoint_step", json_integer(c->ckpt_step));
	json_object_set_new(s, "usd_spent", json_real(spent_usd(c)));
	json_object_set_new(s, "reconfigurations", json_integer(c->reconfigurations));
	json_object_set_new(s, "failures", json_integer(c->failures));
	json_object_set_new(s, "recent_events", json_deep_copy(c->ev.recent));
	char *text = json_dumps(s, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(s);
	char *m = NULL;
	size_t msize = 0;
	FILE *f = open_memstream(&m, &msize);
	if (f && text) {
#define G(name, help, fmt, value)                                                           \
	fprintf(f, "# HELP sailor_" name " " help "\n# TYPE sailor_" name " gauge\nsailor_" name \
		   " " fmt "\n", value)
		G("step", "Optimizer steps completed.", "%lld", c->step);
		G("steps_target", "Steps the job trains to.", "%lld", c->o->steps);
		G("generation", "Current generation (1-based).", "%d", c->gen_count);
		G("running", "1 while a generation runs.", "%d", c->running);
		G("loss", "Loss of the newest step.", "%.9g", isfinite(c->loss) ? c->loss : 0.0);
		G("measured_iterations_per_second", "Measured it/s (mean of the last 10 steps).",
		  "%.9g", measured);
		G("predicted_iterations_per_second", "The planner's it/s for the plan running.",
		  "%.9g", c->cur.valid ? c->cur.res.throughput_it_s : 0.0);
		G("checkpoint_step", "Step of the newest persisted checkpoint.", "%lld",
		  c->ckpt_step);
		G("plan_gpus", "GPUs of the plan running.", "%lld",
		  c->cur.valid ? c->cur.res.num_gpus : 0LL);
#undef G
		fprintf(f, "# HELP sailor_spent_usd_total Dollars spent at the catalogue's prices.\n"
			   "# TYPE sailor_spent_usd_total counter\nsailor_spent_usd_total %.9g\n",
			spent_usd(c));
		fprintf(f, "# HELP sailor_reconfigurations_total Plan changes.\n# TYPE "
			   "sailor_reconfigurations_total counter\nsailor_reconfigurations_total "
			   "%d\n", c->reconfigurations);
		fprintf(f, "# HELP sailor_failures_total Generations that failed.\n# TYPE "
			   "sailor_failures_total counter\nsailor_failures_total %d\n", c->failures);
		fprintf(f, "# HELP sailor_pool_gpus GPUs available per type and zone.\n# TYPE "
			   "sailor_pool_gpus gauge\n");
		const struct sl_catalogue *cat = &c->env->catalogue;
		for (int g = 0; g < cat->gpu_count; g++)
			for (int z = 0; z < cat->zone_count; z++)
				if (c->pool.current.counts[g][z])
					fprintf(f, "sailor_pool_gpus{gpu=\"%s\",zone=\"%s\"} %d\n",
						cat->gpus[g].name, cat->zones[z].name,
						c->pool.current.counts[g][z]);
	}
	if (f)
		fclose(f);
	if (text && m)
		sl_ctl_http_publish(c->http, text, m);
	free(text);
	free(m);
	c->published_s = sl_ctl_now_s();
}

/* ---- the loop ---- */

static void log_plan(struct ctl *c, const struct candidate *p, const char *why, int same)
{
	json_t *f = json_object();
	if (p->valid) {
		json_object_set_new(f, "plan", sl_plan_to_json(&p->plan, &c->env->catalogue));
		json_object_set_new(f, "summary", plan_summary(c, p));
		json_object_set_new(f, "plan_s", json_real(p->plan_s));
		json_object_set_new(f, "same_as_running", json_boolean(same));
		sl_ctl_event(&c->ev, "plan", f);
		c->waiting = 0;
	} else {
		json_object_set_new(f, "reason", json_string(why));
		sl_ctl_event(&c->ev, "no_plan", f);
		sl_log_warn("no plan possible: %s; waiting for a pool change", why);
		c->waiting = 1;
	}
}

static int setup(struct ctl *c, struct sl_err *err)
{
	const struct sl_ctl_options *o = c->o;
	c->start_s = sl_ctl_now_s();
	c->loss = NAN;
	/* what a generation leaves behind becomes ours to end */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	c->dead_rank = -1;
	ssize_t len = readlink("/proc/self/exe", c->self, sizeof(c->self) - 1);
	if (len <= 0)
		return sl_err_set(err, SL_EIO, "cannot find the sailor binary (/proc/self/exe)");
	c->self[len] = 0;
	int rc = sl_sim_env_load_overlaid(o->model, NULL, o->profiles, &c->env, err);
	if (rc)
		return rc;
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
	if (!o->slurm)
		c->cluster_json = sl_json_load_file(o->cluster, "cluster file", err);
	if (!c->cluster_json)
		return SL_EINPUT;
	if (mkdir(o->run_dir, 0777) && errno != EEXIST)
		return sl_err_set(err, SL_EIO, "cannot create run directory '%s': %s", o->run_dir,
				  strerror(errno));
	/* the checkpoint folder too is this controller's alone; sailor run makes it otherwise */
	int have_ckpt_dir = !mkdir(o->ckpt_dir, 0777) || errno == EEXIST;
	if ((rc = sl_ctl_run_lock_take(&c->lock, o->run_dir, have_ckpt_dir ? o->ckpt_dir : NULL,
				       o->stop_timeout_s + 10.0, err)))
		return rc;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/events.jsonl", o->run_dir);
	if ((rc = sl_ctl_events_open(&c->ev, path, o->json ? stdout : NULL, c->start_s, err)))
		return rc;
	/* a rank a dead controller left behind may still train (and checkpoint): its steps must
	 * be on record before the reconciliation, and nothing may train beside it */
	double training_waited_s = 0;
	if (have_ckpt_dir && (rc = sl_ctl_wait_no_training(o->ckpt_dir, o->stop_timeout_s + 10.0,
							   &training_waited_s, err)))
		return rc;
	/* an earlier controller's records (restart.h): made whole before anything is appended */
	struct sl_ctl_restart_info restart;
	long long resume = newest_checkpoint(c);
	if ((rc = sl_ctl_restart_reconcile(o->run_dir, resume, &restart, err)))
		return rc;
	c->gen_count = restart.generations;
	c->recorded_max = restart.steps_on_record ? (resume > 0 ? resume : 0) : 0;
	if (restart.generations || restart.newest_step || c->lock.waited_pid ||
	    training_waited_s > 0.05) {
		json_t *f = json_object();
		json_object_set_new(f, "newest_checkpoint", json_integer(resume > 0 ? resume : 0));
		json_object_set_new(f, "generations", json_integer(restart.generations));
		json_object_set_new(f, "newest_step", json_integer(restart.newest_step));
		json_object_set_new(f, "steps_on_record", json_integer(restart.steps_on_record));
		json_object_set_new(f, "steps_recovered", json_integer(restart.steps_recovered));
		json_object_set_new(f, "steps_to_rerun", json_integer(restart.steps_to_rerun));
		if (c->lock.waited_pid) {
			json_object_set_new(f, "waited_for_pid", json_integer(c->lock.waited_pid));
			json_object_set_new(f, "waited_s", json_real(c->lock.waited_s));
		}
		if (training_waited_s > 0.05) /* a rank left behind still trained */
			json_object_set_new(f, "waited_for_training_s", json_real(training_waited_s));
		sl_ctl_event(&c->ev, "controller_restart", f);
		sl_log_note("run directory '%s' holds %d generation%s of an earlier controller: "
			    "resuming from step %lld; %lld step%s recovered from their files, %lld "
			    "to run again", o->run_dir, restart.generations,
			    restart.generations == 1 ? "" : "s", resume > 0 ? resume : 0,
			    restart.steps_recovered, restart.steps_recovered == 1 ? "" : "s",
			    restart.steps_to_rerun);
	}
	snprintf(path, sizeof(path), "%s/steps.jsonl", o->run_dir);
	c->steps_file = fopen(path, "a");
	if (!c->steps_file)
		return sl_err_set(err, SL_EIO, "cannot write '%s': %s", path, strerror(errno));
	if ((rc = parse_drop_steps(c, err)))
		return rc;
	if (!o->slurm && (rc = sl_ctl_pool_watch_init(&c->pool, o->pool, o->trace, o->time_scale,
						      &c->env->catalogue, c->start_s, err)))
		return rc;
	/* the generations' data and model must be usable before anything starts */
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
	if (o->http) {
		int port = 0;
		if ((rc = sl_ctl_http_start(&c->http, o->http, &port, err)))
			return rc;
		f = json_object();
		json_object_set_new(f, "address", json_string(o->http));
		json_object_set_new(f, "port", json_integer(port));
		sl_ctl_event(&c->ev, "http", f);
	}
	return 0;
}

static void pool_event(struct ctl *c, const char *type)
{
	char where[256];
	sl_ctl_pool_watch_describe(&c->pool, where, sizeof(where));
	json_t *f = json_object();
	json_object_set_new(f, "source", json_string(where));
	json_object_set_new(f, "gpus", json_integer(sl_pool_total(&c->pool.current)));
	json_object_set_new(f, "pool", sl_pool_to_json(&c->pool.current, &c->env->catalogue));
	sl_ctl_event(&c->ev, type, f);
}

/* Plans and starts a generation when none runs and a plan is possible. */
static int maybe_start(struct ctl *c, struct sl_err *err)
{
	if (c->running || c->waiting)
		return 0;
	if (!c->next.valid) {
		char why[SL_ERR_MSG_MAX + 128] = "";
		plan_now(c, &c->next, why, sizeof(why));
		log_plan(c, &c->next, why, 0);
		if (!c->next.valid)
			return 0;
	}
	return start_generation(c, err);
}

static int loop(struct ctl *c, struct sl_err *err)
{
	pool_event(c, "pool");
	int rc = maybe_start(c, err);
	if (!rc && c->o->slurm && c->waiting && !c->gen_count)
		/* Slurm: a job that cannot start on the nodes there are is bad input, not a wait */
		return sl_err_set(err, SL_EINFEASIBLE, "slurm: no plan is possible on the nodes Slurm "
				  "offers now (%lld GPUs; the reason is above); add or resume nodes, or "
				  "ask for less (--global-batch, --max-cost, --min-throughput)",
				  sl_pool_total(&c->pool.current));
	while (!rc) {
		double now = sl_ctl_now_s();
		if (c->running) {
			if (sl_ctl_gen_pump(&c->gen, 100, on_line, c)) {
				if (generation_ended(c)) {
					json_t *f = json_object();
					json_object_set_new(f, "step", json_integer(c->step));
					json_object_set_new(f, "generations", json_integer(c->gen_count));
					json_object_set_new(f, "reconfigurations",
							    json_integer(c->reconfigurations));
					json_object_set_new(f, "failures", json_integer(c->failures));
					json_object_set_new(f, "usd_spent", json_real(c->usd));
					json_object_set_new(f, "wall_s", json_real(now - c->start_s));
					sl_ctl_event(&c->ev, "done", f);
					return 0;
				}
				if (c->stop == STOP_SIGNAL)
					return sl_err_set(err, SL_EIO, "stopped by signal %d after step "
							  "%lld (checkpoint of step %lld in '%s')",
							  c->signal_seen, c->step,
							  newest_checkpoint(c), c->o->ckpt_dir);
				if (c->consecutive_failures >= c->o->max_failures) {
					json_t *f = json_object();
					json_object_set_new(f, "failures",
							    json_integer(c->consecutive_failures));
					sl_ctl_event(&c->ev, "gave_up", f);
					return sl_err_set(err, SL_EINFEASIBLE,
							  "%d generations in a row failed without "
							  "completing a step; giving up (see %s/gen-%d/"
							  "stderr.log)", c->consecutive_failures,
							  c->o->run_dir, c->gen_count);
				}
				if (c->stop != STOP_RECONFIGURE)
					candidate_free(&c->next); /* re-plan on what is left */
				rc = maybe_start(c, err);
				continue;
			}
			if (c->stop == STOP_NONE && c->o->hang_timeout_s > 0 &&
			    c->probe_s == 0 && now - c->last_output_s > c->o->hang_timeout_s) {
				/* silent: ask every rank to answer, to learn which host stopped */
				memset(c->answered, 0, (size_t)c->world);
				c->probe_s = now;
				sl_ctl_gen_probe(&c->gen);
			}
			if (c->stop == STOP_NONE && c->probe_s > 0 &&
			    now - c->probe_s > probe_window_s(c)) {
				c->silent_count = sl_ctl_silent_hosts(c->world, c->rank_host,
								      c->answered, c->silent_hosts,
								      16);
				char names[512] = "";
				for (int i = 0; i < c->silent_count; i++)
					snprintf(names + strlen(names), sizeof(names) - strlen(names),
						 "%s'%s'", i ? ", " : "",
						 c->cluster.hosts[c->silent_hosts[i]].name);
				sl_log_warn("generation %d printed nothing for %.1f s%s%s: stopping it",
					    c->gen.index, now - c->last_output_s,
					    c->silent_count ? "; no answer from host " : "", names);
				stop_generation(c, STOP_HANG);
				/* a stuck job cannot write its checkpoint: no use waiting for one */
				sl_ctl_gen_kill(&c->gen);
			}
			if (c->stop != STOP_NONE && !c->gen.killed &&
			    now - c->gen.term_sent_s > c->o->stop_timeout_s)
				sl_ctl_gen_kill(&c->gen);
		} else {
			poll(NULL, 0, 100);
		}
		if (got_signal && !c->signal_seen) {
			c->signal_seen = got_signal;
			json_t *f = json_object();
			json_object_set_new(f, "signal", json_integer(c->signal_seen));
			sl_ctl_event(&c->ev, "signal", f);
			if (!c->running)
				return sl_err_set(err, SL_EIO, "stopped by signal %d", c->signal_seen);
			c->stop = STOP_NONE; /* a signal outranks a stop in progress */
			c->gen.term_sent_s = 0;
			stop_generation(c, STOP_SIGNAL);
		}
		struct sl_err perr = {0};
		struct sl_pool before = c->pool.current;
		int changed = sl_ctl_pool_watch_poll(&c->pool, sl_ctl_now_s(), &perr);
		if (changed < 0) {
			json_t *f = json_object();
			json_object_set_new(f, "message", json_string(perr.msg));
			sl_ctl_event(&c->ev, "pool_error", f);
			sl_log_warn("%s", perr.msg);
		}
		if (changed > 0 && !c->signal_seen) {
			pool_event(c, "pool_change");
			/* hosts left out come back when the pool offers more of their kind */
			int back[16];
			int nback = sl_ctl_hosts_pool_changed(&c->hosts, &c->cluster, &before,
							      &c->pool.current, back, 16);
			for (int i = 0; i < nback && i < 16; i++) {
				json_t *f = json_object();
				json_object_set_new(f, "host",
						    json_string(c->cluster.hosts[back[i]].name));
				sl_ctl_event(&c->ev, "host_readmitted", f);
			}
			c->waiting = 0;
			struct candidate p = {0};
			char why[SL_ERR_MSG_MAX + 128] = "";
			double t0 = sl_ctl_now_s();
			plan_now(c, &p, why, sizeof(why));
			int same = c->running && p.valid && c->cur.valid && !strcmp(p.key, c->cur.key) &&
				   !sl_ctl_pool_watch_hosts_lost(&c->pool, c->rank_host, c->world);
			log_plan(c, &p, why, same);
			switch (sl_ctl_decide_pool_change(c->running, c->stop, p.valid, same)) {
			case SL_CTL_STOP_FOR_PLAN:
			case SL_CTL_STOP_FOR_NO_PLAN:
				c->rc = (struct sl_ctl_reconf){.active = p.valid,
							       .from_gen = c->gen.index,
							       .change_s = t0, .plan_s = p.plan_s};
				if (p.valid)
					c->reconfigurations++;
				candidate_free(&c->next);
				c->next = p;
				stop_generation(c, p.valid ? STOP_RECONFIGURE : STOP_NO_PLAN);
				break;
			case SL_CTL_RETARGET:
				candidate_free(&c->next); /* a newer pool while stopping: its plan */
				c->next = p;
				if (!p.valid)
					c->stop = STOP_NO_PLAN;
				break;
			case SL_CTL_START:
			case SL_CTL_WAIT:
				candidate_free(&c->next);
				c->next = p;
				if (p.valid)
					rc = start_generation(c, err);
				break;
			case SL_CTL_KEEP:
				candidate_free(&p);
				break;
			}
		}
		if (c->http && sl_ctl_now_s() - c->published_s > 0.25)
			publish(c);
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
	int rc = setup(c, err);
	if (!rc)
		rc = loop(c, err);
	if (c->running) {
		/* an error of the controller itself: no generation outlives it */
		sl_ctl_gen_terminate(&c->gen);
		double t0 = sl_ctl_now_s();
		while (!sl_ctl_gen_pump(&c->gen, 100, on_line, c))
			if (sl_ctl_now_s() - t0 > o->stop_timeout_s)
				sl_ctl_gen_kill(&c->gen);
		sl_ctl_gen_close(&c->gen);
		if (o->slurm) { /* Slurm: nor its job */
			char job[64];
			struct sl_err e = {0};
			sl_launch_slurm_job_name((int)c->gen.pid, job, sizeof(job));
			if (sl_launch_slurm_end(job, 30, &e))
				sl_log_warn("%s", e.msg);
		}
	}
	if (c->http) {
		publish(c);
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
	candidate_free(&c->cur);
	candidate_free(&c->next);
	free(c->rank_host);
	free(c->answered);
	free(c->drop_steps);
	sl_ctl_seen_steps_free(&c->seen);
	sl_ctl_pool_watch_free(&c->pool);
	json_decref(c->cluster_json);
	sl_cluster_free(&c->cluster);
	sl_sim_env_free(c->env);
	free(c);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}
