/* Status publishing: the texts of /status (JSON, schema sailor.control.status/1) and /metrics
 * (Prometheus) that the HTTP server serves, and the pool events. Invariants: the HTTP thread
 * only reads what sl_ctl_publish hands it; the money spent counts the running generation up to
 * now. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl/ctl_state.h"
#include "ctl/status_http.h"
#include "util/clock.h"

static double mean_step_time(const struct ctl *c)
{
	int n = c->step_time_count < RATE_WINDOW ? c->step_time_count : RATE_WINDOW;
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += c->step_times[i];
	return n ? sum / n : 0.0;
}

static double spent_usd(const struct ctl *c)
{
	double usd = c->usd;
	if (c->running)
		usd += c->gen_usd_per_hour * (sl_now_s() - c->gen.started_s) / 3600.0;
	return usd;
}

/* Island runs: the bytes of their outer exchanges by link class, a Prometheus counter family. */
static void outer_bytes_metric(FILE *f, const struct ctl *c)
{
	if (c->outer_steps <= 0)
		return;
	fprintf(f, "# HELP sailor_outer_bytes_total Bytes the islands' outer exchanges sent, every "
		   "rank, by link class (outer steps x the plan's count).\n"
		   "# TYPE sailor_outer_bytes_total counter\n");
	for (int k = 0; k < SL_LINK_CLASSES; k++)
		if (c->outer_class_bytes[k] > 0)
			fprintf(f, "sailor_outer_bytes_total{link=\"%s\"} %.9g\n",
				sl_link_model_class_name(k), c->outer_class_bytes[k]);
}

void sl_ctl_publish(struct ctl *c)
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
	json_object_set_new(s, "plan", sl_ctl_plan_summary(c, &c->cur));
	json_object_set_new(s, "pool", sl_pool_to_json(&c->pool.current, &c->env->catalogue));
	json_object_set_new(s, "step", json_integer(c->step));
	json_object_set_new(s, "steps", json_integer(c->o->steps));
	json_object_set_new(s, "loss", isfinite(c->loss) ? json_real(c->loss) : json_null());
	if (c->outer_steps > 0)
		json_object_set_new(s, "islands",
				    json_pack("{s:f, s:f, s:f}", "outer_steps", c->outer_steps,
					      "outer_wait_s", c->outer_wait_s, "rank0_bytes_sent",
					      c->outer_bytes));
	json_object_set_new(s, "val_loss", isfinite(c->val_loss) ? json_real(c->val_loss)
							       : json_null());
	json_object_set_new(s, "val_step", json_integer(c->val_step));
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
		if (isfinite(c->val_loss)) { /* absent until the first evaluation */
			G("val_loss", "Loss on the held-out set (--val-data), newest evaluation.",
			  "%.9g", c->val_loss);
			G("val_step", "Step after which the newest held-out evaluation ran.", "%lld",
			  c->val_step);
		}
		if (c->outer_steps > 0) { /* island runs only */
			G("outer_steps", "Islands' outer steps (every fragment synced once), all "
			  "generations.", "%.9g", c->outer_steps);
			G("outer_wait_seconds", "Time rank 0's island waited on outer exchanges, all "
			  "generations.", "%.9g", c->outer_wait_s);
			G("outer_rank0_bytes", "Bytes rank 0 sent in outer exchanges, all generations "
			  "(the pool's: sailor run --dry-run per outer step).", "%.9g", c->outer_bytes);
		}
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
		outer_bytes_metric(f, c);
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
	c->published_s = sl_now_s();
}

void sl_ctl_pool_event(struct ctl *c, const char *type)
{
	char where[1024];
	sl_ctl_pool_watch_describe(&c->pool, where, sizeof(where));
	json_t *f = json_object();
	json_object_set_new(f, "source", json_string(where));
	json_object_set_new(f, "gpus", json_integer(sl_pool_total(&c->pool.current)));
	json_object_set_new(f, "pool", sl_pool_to_json(&c->pool.current, &c->env->catalogue));
	sl_ctl_event(&c->ev, type, f);
}
