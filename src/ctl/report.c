/* The report of a controller run (report.h). */
#include "ctl/report.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/run_command.h"

/* Calls fn for every JSON object line of path. */
static int each_line(const char *path, void (*fn)(void *, json_t *), void *ctx,
		     struct sl_err *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return sl_err_set(err, SL_EINPUT, "cannot read '%s': %s (is this the --run-dir of "
				  "'sailor control'?)", path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		json_t *e = line[0] == '{' ? json_loads(line, 0, NULL) : NULL;
		if (e)
			fn(ctx, e);
		json_decref(e);
	}
	free(line);
	fclose(f);
	return 0;
}

struct acc {
	FILE *dat;
	FILE *gp;
	long long steps, last_step;
	double t_end;
	int generations, reconfigs, failures, pool_changes;
	double reconf_total_s, reconf_max_s;
	long long lost_max;
	FILE *summary;
	FILE *evals_dat;              /* the held-out evaluations: t_s step val_loss generation */
	int evals;
	long long val_step;
	double val_loss;
	double outer_steps, outer_wait_s, outer_bytes; /* the newest "outer" event's totals */
};

static double num(json_t *e, const char *key) { return json_number_value(json_object_get(e, key)); }

static void on_step(void *ctx, json_t *e)
{
	struct acc *a = ctx;
	double dt = num(e, "step_time_s");
	fprintf(a->dat, "%.6f %lld %.9g %.9g %.9g %lld\n", num(e, "t_s"),
		(long long)json_integer_value(json_object_get(e, "step")), num(e, "loss"),
		dt > 0 ? 1.0 / dt : 0.0, num(e, "predicted_it_s"),
		(long long)json_integer_value(json_object_get(e, "generation")));
	a->steps++;
	a->last_step = json_integer_value(json_object_get(e, "step"));
	if (num(e, "t_s") > a->t_end)
		a->t_end = num(e, "t_s");
}

static void mark(struct acc *a, double t, const char *color, const char *label, double y)
{
	fprintf(a->gp, "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead lc rgb '%s' dt 2 lw 1.5\n",
		t, t, color);
	fprintf(a->gp, "set label '%s' at %.3f, graph %.2f offset 0.3,0 tc rgb '%s' font ',9'\n",
		label, t, y, color);
}

static void on_event(void *ctx, json_t *e)
{
	struct acc *a = ctx;
	const char *type = json_string_value(json_object_get(e, "event"));
	double t = num(e, "t_s");
	char label[128];
	if (!type)
		return;
	if (!strcmp(type, "generation_start")) {
		a->generations++;
		json_t *plan = json_object_get(e, "plan");
		snprintf(label, sizeof(label), "gen %lld (%lld GPUs)",
			 (long long)json_integer_value(json_object_get(e, "generation")),
			 (long long)json_integer_value(json_object_get(plan, "gpus")));
		mark(a, t, "gray40", label, 0.93 - 0.07 * (a->generations % 3));
	} else if (!strcmp(type, "pool_change")) {
		a->pool_changes++;
		snprintf(label, sizeof(label), "pool: %lld GPUs",
			 (long long)json_integer_value(json_object_get(e, "gpus")));
		mark(a, t, "#1f77b4", label, 0.08);
	} else if (!strcmp(type, "failure")) {
		a->failures++;
		long long lost = json_integer_value(json_object_get(e, "lost_steps"));
		if (lost > a->lost_max)
			a->lost_max = lost;
		snprintf(label, sizeof(label), "failure (%lld steps lost)", lost);
		mark(a, t, "#d62728", label, 0.16);
	} else if (!strcmp(type, "eval")) {
		long long step = json_integer_value(json_object_get(e, "step"));
		fprintf(a->evals_dat, "%.6f %lld %.9g %lld\n", t, step, num(e, "val_loss"),
			(long long)json_integer_value(json_object_get(e, "generation")));
		if (!a->evals || step >= a->val_step) {
			a->val_step = step;
			a->val_loss = num(e, "val_loss");
		}
		a->evals++;
	} else if (!strcmp(type, "outer")) {
		a->outer_steps = num(e, "outer_steps");
		a->outer_wait_s = num(e, "outer_wait_s");
		a->outer_bytes = num(e, "rank0_bytes_sent");
	} else if (!strcmp(type, "reconfigured")) {
		a->reconfigs++;
		double s = num(e, "total_s");
		a->reconf_total_s += s;
		if (s > a->reconf_max_s)
			a->reconf_max_s = s;
		if (a->summary)
			fprintf(a->summary, "reconfiguration gen %lld -> %lld: %.2f s (plan %.3f, "
				"checkpoint %.2f, stop %.2f, start %.2f, load %.3f, first step %.2f)\n",
				(long long)json_integer_value(json_object_get(e, "from_generation")),
				(long long)json_integer_value(json_object_get(e, "to_generation")), s,
				num(e, "plan_s"), num(e, "checkpoint_s"), num(e, "stop_s"),
				num(e, "start_load_s") - num(e, "load_s"), num(e, "load_s"),
				num(e, "first_step_s"));
	}
}

/* gnuplot on the script gp, waited for. */
static int run_gnuplot(const char *gp, struct sl_err *err)
{
	char *argv[] = {"gnuplot", (char *)gp, NULL};
	struct sl_run_command child = {.argv = argv, .use_path = 1,
				       .exec_failure = SL_RUN_COMMAND_EXEC_RETURN};
	int rc = sl_run_command_start(&child, err);
	if (rc && !child.exec_errno)
		return rc;
	if (rc) /* the exit status below says 127, as a shell would */
		fprintf(stderr, "sailor report: cannot run gnuplot: %s (install gnuplot-nox: "
			"scripts/install-deps.sh)\n", strerror(child.exec_errno));
	int status = sl_run_command_wait(&child);
	if (child.term_signal || status)
		return sl_err_set(err, SL_EIO, "gnuplot failed on '%s' (exit %d)", gp,
				  child.term_signal ? -1 : status);
	return 0;
}

int sl_ctl_report(const char *run_dir, const char *output, FILE *summary, struct sl_err *err)
{
	char dir[PATH_MAX], dat[PATH_MAX + 16], gp[PATH_MAX + 16], path[PATH_MAX + 32];
	char evals[PATH_MAX + 16];
	char out_default[PATH_MAX + 16];
	snprintf(dir, sizeof(dir), "%s/report", run_dir);
	if (mkdir(dir, 0777) && errno != EEXIST)
		return sl_err_set(err, SL_EIO, "cannot create '%s': %s", dir, strerror(errno));
	if (!output) {
		snprintf(out_default, sizeof(out_default), "%s/report.png", run_dir);
		output = out_default;
	}
	size_t n = strlen(output);
	int svg = n > 4 && !strcmp(output + n - 4, ".svg");
	if (!svg && !(n > 4 && !strcmp(output + n - 4, ".png")))
		return sl_err_set(err, SL_EUSAGE, "output '%s': name it .png or .svg", output);
	if (strchr(output, '\'') || strchr(run_dir, '\''))
		return sl_err_set(err, SL_EUSAGE, "paths with a quote (') cannot go into a gnuplot "
				  "script; rename '%s'", strchr(output, '\'') ? output : run_dir);
	snprintf(dat, sizeof(dat), "%s/steps.dat", dir);
	snprintf(gp, sizeof(gp), "%s/report.gp", dir);
	snprintf(evals, sizeof(evals), "%s/evals.dat", dir);
	struct acc a = {.summary = summary};
	a.dat = fopen(dat, "w");
	a.gp = fopen(gp, "w");
	a.evals_dat = fopen(evals, "w");
	if (!a.dat || !a.gp || !a.evals_dat) {
		if (a.dat)
			fclose(a.dat);
		if (a.gp)
			fclose(a.gp);
		if (a.evals_dat)
			fclose(a.evals_dat);
		return sl_err_set(err, SL_EIO, "cannot write in '%s': %s", dir, strerror(errno));
	}
	fprintf(a.dat, "# t_s step loss measured_it_s predicted_it_s generation\n");
	fprintf(a.evals_dat, "# t_s step val_loss generation\n");
	fprintf(a.gp, "# gnuplot script written by 'sailor report %s'\n", run_dir);
	if (svg)
		fprintf(a.gp, "set terminal svg size 1200,800 dynamic font 'sans,11' background rgb 'white'\n");
	else
		fprintf(a.gp, "set terminal pngcairo size 1200,800 font 'sans,10'\n");
	fprintf(a.gp, "set output '%s'\n", output);
	snprintf(path, sizeof(path), "%s/steps.jsonl", run_dir);
	int rc = each_line(path, on_step, &a, err);
	snprintf(path, sizeof(path), "%s/events.jsonl", run_dir);
	if (!rc)
		rc = each_line(path, on_event, &a, err);
	fclose(a.dat);
	fclose(a.evals_dat);
	if (!rc && a.steps == 0)
		rc = sl_err_set(err, SL_EINPUT, "run '%s' has no steps yet: nothing to draw", run_dir);
	if (rc) {
		fclose(a.gp);
		return rc;
	}
	fprintf(a.gp,
		"set multiplot layout 2,1 title 'sailor control: %s (%lld steps, %d generations, %d "
		"pool changes, %d failures)'\n"
		"set grid\nset key top right opaque\nset xrange [0:%.3f]\n"
		"set ylabel 'iterations / s'\nset format x ''\n"
		"plot '%s' using 1:4 with points pt 7 ps 0.5 lc rgb '#2ca02c' title 'measured', \\\n"
		"     '' using 1:5 with steps lw 2 lc rgb '#ff7f0e' title 'predicted (planner)'\n"
		"set format x '%%g'\nset xlabel 'time since start (s)'\nset ylabel 'loss'\n"
		"plot '%s' using 1:3 with lines lw 1.5 lc rgb '#9467bd' title 'loss'",
		run_dir, a.last_step, a.generations, a.pool_changes, a.failures, a.t_end * 1.02 + 0.1,
		dat, dat);
	if (a.evals) /* gnuplot refuses a file without points */
		fprintf(a.gp, ", \\\n     '%s' using 1:3 with linespoints pt 7 ps 0.7 lc rgb "
			"'#e377c2' title 'held-out loss (--val-data)'", evals);
	fprintf(a.gp, "\nunset multiplot\n");
	fclose(a.gp);
	if (summary) {
		fprintf(summary, "%lld steps logged, last step %lld, %d generations, %d pool changes, "
			"%d reconfigurations (mean %.2f s, max %.2f s), %d failures (at most %lld steps "
			"lost)\n", a.steps, a.last_step, a.generations, a.pool_changes, a.reconfigs,
			a.reconfigs ? a.reconf_total_s / a.reconfigs : 0.0, a.reconf_max_s,
			a.failures, a.lost_max);
		if (a.evals)
			fprintf(summary, "%d held-out evaluations, the newest: val loss %.4f after step "
				"%lld\n", a.evals, a.val_loss, a.val_step);
		if (a.outer_steps > 0)
			fprintf(summary, "islands: %.2f outer steps; rank 0's island waited %.2f s on "
				"them and rank 0 sent %.0f bytes\n", a.outer_steps, a.outer_wait_s,
				a.outer_bytes);
	}
	if ((rc = run_gnuplot(gp, err)))
		return rc;
	if (summary)
		fprintf(summary, "wrote '%s'\n", output);
	return 0;
}
