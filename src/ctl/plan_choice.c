/* Plan choice: plans on the pool left (sl_ctl_plan_now), keeps only plans the runtime can
 * execute on the cluster's usable hosts (sl_ctl_runnable), and says what a plan is in events and
 * /status (sl_ctl_plan_summary). Invariants: a candidate's key is its plan's canonical JSON, so
 * equal plans have equal keys; a plan the planner ranks above the one chosen is never skipped
 * silently (a plan_skipped event says why). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctl_state.h"
#include "plan/placement.h"
#include "plan/roles.h"
#include "runtime/runner.h"
#include "search/islands_search.h"
#include "util/clock.h"
#include "util/log.h"

void sl_ctl_candidate_free(struct candidate *c)
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

int sl_ctl_save_plan(const struct ctl *c, const struct sl_plan *plan, const char *path,
		     struct sl_outer_bytes *outer, struct sl_err *err)
{
	if (outer)
		memset(outer, 0, sizeof(*outer));
	long long G = c->o->global_batch > 0 ? c->o->global_batch : c->env->model.default_global_batch;
	int seq = c->o->seq_len > 0 ? c->o->seq_len : c->env->model.seq_len;
	if (!c->islands) { /* as the planner found it; with --sync, maybe islands of its own */
		int rc = sl_plan_save(plan, &c->env->catalogue, path, err);
		if (!rc && outer && plan->islands)
			rc = sl_outer_bytes_count(plan, &c->env->model, G, seq, &c->env->catalogue,
						  outer, err);
		return rc;
	}
	/* --islands: the plan as the planner found it, its pipelines grouped into islands */
	struct sl_plan copy;
	sl_plan_init(&copy);
	int rc = sl_plan_copy(&copy, plan, err);
	if (!rc)
		rc = sl_islands_template_apply(c->islands, &copy, &c->env->catalogue, err);
	if (!rc)
		rc = sl_plan_save(&copy, &c->env->catalogue, path, err);
	/* what a round of its outer exchange sends, by link class (/metrics) */
	if (!rc && outer)
		rc = sl_outer_bytes_count(&copy, &c->env->model, G, seq, &c->env->catalogue, outer,
					  err);
	sl_plan_free(&copy);
	return rc;
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
int sl_ctl_runnable(struct ctl *c, const struct sl_plan *plan, int **rank_host, int *world,
		    struct sl_err *err)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/candidate-plan.json", c->o->run_dir);
	int rc = sl_ctl_save_plan(c, plan, path, NULL, err);
	if (rc)
		return rc;
	struct sl_run_options ro;
	run_options(c, path, &ro);
	struct sl_role_table table;
	struct sl_catalogue cat;
	memset(&table, 0, sizeof(table));
	rc = sl_runner_check_plan(&ro, &table, &cat, NULL, err);
	if (!rc) {
		struct sl_cluster view;
		rc = filtered_cluster(c, &view);
		if (!rc)
			rc = sl_placement_assign(&table, &view, &cat, err);
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
int sl_ctl_plan_now(struct ctl *c, struct candidate *cand, char *why, size_t why_size)
{
	sl_ctl_candidate_free(cand);
	c->search_err = (struct sl_err){0};
	double t0 = sl_now_s();
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
	int rc = sl_search_plan(c->env, &pool, &req, &out, &err); /* --sync: islands may compete */
	if (rc) {
		snprintf(why, why_size, "%s", err.msg);
		c->search_err = err;
		sl_search_outcome_free(&out);
		return 0;
	}
	if (out.count == 0)
		snprintf(why, why_size, "no plan on this pool meets the constraints (--max-cost, "
			 "--min-throughput)%s", out.fastest || out.cheapest ? "" :
			 ": none fits in memory");
	char first_refusal[SL_ERR_MSG_MAX] = "";
	for (int i = 0; i < out.count; i++) {
		struct sl_err e = {0};
		if (sl_ctl_runnable(c, &out.best[i].plan, NULL, NULL, &e)) {
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
	cand->plan_s = sl_now_s() - t0;
	return 0;
}

json_t *sl_ctl_plan_summary(const struct ctl *c, const struct candidate *p)
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

void sl_ctl_log_plan(struct ctl *c, const struct candidate *p, const char *why, int same)
{
	json_t *f = json_object();
	if (p->valid) {
		json_object_set_new(f, "plan", sl_plan_to_json(&p->plan, &c->env->catalogue));
		json_object_set_new(f, "summary", sl_ctl_plan_summary(c, p));
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
