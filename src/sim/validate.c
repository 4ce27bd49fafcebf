/* Validation against measured runs (see validate.h). */
#include "sim/validate.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static struct sl_error_summary summarise(const double *e, int n)
{
	struct sl_error_summary s = {0, 0, 0};
	if (n == 0)
		return s;
	double *a = malloc((size_t)n * sizeof(double));
	if (!a)
		return s;
	for (int i = 0; i < n; i++) {
		a[i] = fabs(e[i]);
		s.mean_abs += a[i] / n;
		if (a[i] > s.max_abs)
			s.max_abs = a[i];
	}
	qsort(a, (size_t)n, sizeof(double), cmp_double);
	s.median_abs = n % 2 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]);
	free(a);
	return s;
}

/* The names of the folder's .json files, sorted, into *names (the caller frees them and the
 * array, also on failure). */
static int list_plan_files(const char *dir, char ***names, int *count, struct sl_err *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return sl_err_set(err, errno == ENOENT ? SL_ENOTFOUND : SL_EIO,
				  "folder '%s': cannot read: %s", dir, strerror(errno));
	int n = 0, cap = 0, rc = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".json") || len >= 256)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 32;
			char **nn = realloc(*names, (size_t)cap * sizeof(*nn));
			if (!nn) {
				rc = sl_err_set(err, SL_ENOMEM, "out of memory");
				break;
			}
			*names = nn;
		}
		(*names)[n] = strdup(e->d_name);
		if (!(*names)[n]) {
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
			break;
		}
		n++;
	}
	closedir(d);
	*count = n;
	if (!rc && n > 0)
		qsort(*names, (size_t)n, sizeof(**names), cmp_name);
	return rc;
}

/* One measured run against its simulation, as a row of the report. */
static void record_run(struct sl_validation_run *r, const char *name, const struct sl_plan *plan,
		       const struct sl_sim_result *res)
{
	snprintf(r->file, sizeof(r->file), "%s", name);
	r->stages = plan->num_stages;
	r->pipelines = plan->num_pipelines;
	r->micro_batch = plan->micro_batch;
	/* an island plan's result describes island 0's step; the plan's batch is the whole */
	r->global_batch = plan->islands ? plan->global_batch : res->global_batch;
	r->real_s = plan->measured.real_s;
	r->sim_s = res->iteration_time_s;
	r->time_error = (r->sim_s - r->real_s) / r->real_s;
	r->real_mem_bytes = plan->measured.max_mem_bytes;
	r->sim_mem_bytes = res->peak_memory_bytes;
	r->memory_error = (r->sim_mem_bytes - r->real_mem_bytes) / r->real_mem_bytes;
	r->red_grads_s = plan->measured.has_red_grads ? plan->measured.red_grads_s : 0.0;
	r->sim_dp_sync_s = res->dp_sync_s;
	r->islands = plan->islands ? plan->islands->count : 1;
}

/* Every named plan file of dir simulated into out->runs (room for n), those without a measured
 * time and memory counted as skipped. */
static int simulate_runs(const struct sl_sim_env *env, const char *dir, char **names, int n,
			 enum sl_cost_model cm, struct sl_validation *out, struct sl_err *err)
{
	int rc = 0;
	struct sl_sim_result *res = malloc(sizeof(*res));
	if (!res)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	struct sl_plan plan;
	sl_plan_init(&plan);
	for (int i = 0; !rc && i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		rc = sl_plan_load(path, &env->catalogue, &plan, err);
		if (rc)
			break;
		/* a 0 is how the artifact's files mark a run that was not timed (mit/N1_D1) */
		if (!plan.measured.has_real || !plan.measured.has_max_mem ||
		    !(plan.measured.real_s > 0) || !(plan.measured.max_mem_bytes > 0)) {
			out->skipped++;
			continue;
		}
		rc = sl_sim_check_plan(env, &plan, 0, err);
		if (rc)
			break; /* the message names the file */
		rc = sl_simulate(env, &plan, cm, res, err);
		if (rc) {
			sl_err_prefix(err, "run '%s'", path);
			break;
		}
		record_run(&out->runs[out->run_count++], names[i], &plan, res);
	}
	sl_plan_free(&plan);
	free(res);
	return rc;
}

/* The summaries of |relative error| of iteration time and of peak memory: of every run, and of
 * each kind's (synchronous, islands). */
static int summarise_runs(struct sl_validation *out, struct sl_err *err)
{
	int n = out->run_count;
	double *te = malloc((size_t)n * 2 * sizeof(double));
	if (!te)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		te[i] = out->runs[i].time_error;
		te[n + i] = out->runs[i].memory_error;
	}
	out->time = summarise(te, n);
	out->memory = summarise(te + n, n);
	for (int kind = 0; kind < 2; kind++) {
		int m = 0;
		for (int i = 0; i < n; i++) {
			if ((out->runs[i].islands > 1) != kind)
				continue;
			te[m] = out->runs[i].time_error;
			te[n + m] = out->runs[i].memory_error;
			m++;
		}
		out->kind_runs[kind] = m;
		out->kind_time[kind] = summarise(te, m);
		out->kind_memory[kind] = summarise(te + n, m);
	}
	free(te);
	return 0;
}

int sl_validation_run(const struct sl_sim_env *env, const char *dir, enum sl_cost_model cm,
		      struct sl_validation *out, struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	out->cost_model = cm;
	char **names = NULL;
	int n = 0;
	int rc = list_plan_files(dir, &names, &n, err);
	if (!rc && n > 0) {
		out->runs = calloc((size_t)n, sizeof(*out->runs));
		if (!out->runs)
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	if (!rc)
		rc = simulate_runs(env, dir, names, n, cm, out, err);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (!rc && out->run_count == 0)
		rc = sl_err_set(err, SL_EINPUT,
				"folder '%s': no measured runs (plan files with \"real\" and "
				"\"max_mem\")", dir);
	if (!rc)
		rc = summarise_runs(out, err);
	if (rc)
		sl_validation_free(out);
	return rc;
}

void sl_validation_free(struct sl_validation *v)
{
	free(v->runs);
	v->runs = NULL;
	v->run_count = 0;
}

static json_t *summary_json(const struct sl_error_summary *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "mean_abs", json_real(s->mean_abs));
	json_object_set_new(o, "median_abs", json_real(s->median_abs));
	json_object_set_new(o, "max_abs", json_real(s->max_abs));
	return o;
}

json_t *sl_validation_to_json(const struct sl_sim_env *env, const struct sl_validation *v)
{
	json_t *o = json_object();
	json_object_set_new(o, "schema", json_string("sailor.validation/1"));
	json_object_set_new(o, "model", json_string(env->model.name));
	json_object_set_new(o, "cost_model", json_string(sl_cost_model_name(v->cost_model)));
	const char *overlay = sl_sim_env_profile_overlay(env);
	json_object_set_new(o, "profiles_overlay", overlay ? json_string(overlay) : json_null());
	json_t *runs = json_array();
	for (int i = 0; i < v->run_count; i++) {
		const struct sl_validation_run *r = &v->runs[i];
		json_t *x = json_object();
		json_object_set_new(x, "file", json_string(r->file));
		json_object_set_new(x, "stages", json_integer(r->stages));
		json_object_set_new(x, "pipelines", json_integer(r->pipelines));
		json_object_set_new(x, "micro_batch", json_integer(r->micro_batch));
		json_object_set_new(x, "global_batch", json_integer(r->global_batch));
		json_object_set_new(x, "real_s", json_real(r->real_s));
		json_object_set_new(x, "simulated_s", json_real(r->sim_s));
		json_object_set_new(x, "time_error", json_real(r->time_error));
		json_object_set_new(x, "real_memory_bytes", json_real(r->real_mem_bytes));
		json_object_set_new(x, "simulated_memory_bytes", json_real(r->sim_mem_bytes));
		json_object_set_new(x, "memory_error", json_real(r->memory_error));
		json_object_set_new(x, "islands", json_integer(r->islands));
		json_array_append_new(runs, x);
	}
	json_object_set_new(o, "runs", runs);
	json_t *s = json_object();
	json_object_set_new(s, "runs", json_integer(v->run_count));
	json_object_set_new(s, "skipped_files", json_integer(v->skipped));
	json_object_set_new(s, "time", summary_json(&v->time));
	json_object_set_new(s, "memory", summary_json(&v->memory));
	for (int kind = 0; v->kind_runs[1] > 0 && kind < 2; kind++) {
		json_t *k = json_object();
		json_object_set_new(k, "runs", json_integer(v->kind_runs[kind]));
		json_object_set_new(k, "time", summary_json(&v->kind_time[kind]));
		json_object_set_new(k, "memory", summary_json(&v->kind_memory[kind]));
		json_object_set_new(s, kind ? "islands" : "synchronous", k);
	}
	json_object_set_new(o, "summary", s);
	return o;
}
