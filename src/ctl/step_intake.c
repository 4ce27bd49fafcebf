/* Step intake: the lines of the running generation's pipes (steps, evaluations, probe answers,
 * readiness, checkpoints, the launcher's death lines and `sailor run`'s error) and, after its end, the
 * steps of its own file whose lines did not arrive (steps_file.h). Invariants: a step is
 * accounted the same way whichever way it came; steps.jsonl gets each step of a generation
 * once; the newest step and its loss stay those of the newest step the generation ran. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl_state.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/test_faults.h"

/* A step of the running generation, from its pipe or, recovered after its end, from its own
 * file (recover_steps): the same accounting either way. */
static void on_step(struct ctl *c, json_t *e, int recovered)
{
	long long step = json_integer_value(json_object_get(e, "step"));
	double dt = json_number_value(json_object_get(e, "step_time_s"));
	c->gen_ready = 1;
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
	json_object_set_new(s, "t_s", json_real(sl_now_s() - c->start_s));
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
	c->probe.sent_s = 0; /* a step: the generation is not stuck */
	if (c->gen_steps == 1 && c->rc.active && c->rc.start_s > 0) {
		/* the first step under the new plan: the reconfiguration is over */
		struct sl_ctl_reconf_parts parts;
		sl_ctl_reconf_parts(&c->rc, sl_now_s(), dt, &parts);
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

/* An evaluation on the held-out set: the newest loss for /status and /metrics, and an "eval"
 * event (the record `sailor report` draws from). */
static void on_eval(struct ctl *c, json_t *e)
{
	long long step = json_integer_value(json_object_get(e, "step"));
	if (step >= c->val_step) {
		c->val_step = step;
		c->val_loss = json_number_value(json_object_get(e, "val_loss"));
	}
	json_t *f = json_object();
	json_object_set_new(f, "generation", json_integer(c->gen.index));
	json_object_set(f, "step", json_object_get(e, "step"));
	json_object_set(f, "val_loss", json_object_get(e, "val_loss"));
	json_object_set(f, "val_tokens", json_object_get(e, "val_tokens"));
	json_object_set(f, "eval_s", json_object_get(e, "eval_s"));
	sl_ctl_event(&c->ev, "eval", f);
}

/* An island run's outer steps (its rank 0's counts since the generation started): the totals
 * over generations for /status and /metrics, and an "outer" event. */
static void on_outer(struct ctl *c, json_t *e)
{
	double fragments = json_number_value(json_object_get(e, "fragments"));
	double steps = json_number_value(json_object_get(e, "fragment_syncs")) /
		       (fragments > 0 ? fragments : 1);
	double wait = json_number_value(json_object_get(e, "outer_wait_s"));
	double bytes = json_number_value(json_object_get(e, "bytes_sent"));
	for (int k = 0; k < SL_LINK_CLASSES; k++) /* every rank's bytes: rounds x the plan's count */
		c->outer_class_bytes[k] += (steps - c->gen_outer_steps) *
					   (double)c->gen_outer.class_bytes[k];
	c->outer_steps += steps - c->gen_outer_steps;
	c->outer_wait_s += wait - c->gen_outer_wait_s;
	c->outer_bytes += bytes - c->gen_outer_bytes;
	c->gen_outer_steps = steps;
	c->gen_outer_wait_s = wait;
	c->gen_outer_bytes = bytes;
	json_t *f = json_object();
	json_object_set_new(f, "generation", json_integer(c->gen.index));
	json_object_set(f, "step", json_object_get(e, "step"));
	json_object_set_new(f, "outer_steps", json_real(c->outer_steps));
	json_object_set_new(f, "outer_wait_s", json_real(c->outer_wait_s));
	json_object_set_new(f, "rank0_bytes_sent", json_real(c->outer_bytes));
	sl_ctl_event(&c->ev, "outer", f);
}

/* Test-only fault injection (util/test_faults.h, the drop-step-line hook): the pipe's line
 * of a step the test names (or of every step once a stop was asked) is ignored, as if mpirun
 * had lost it, so that tests/integration/control_steps_recovered.sh checks the recovery from the
 * generation's own file deterministically. Matches nothing in normal use. */
static int dropped_for_test(const struct ctl *c, long long step)
{
	int drop = sl_test_drop_lines_match(&c->drop, step, c->stop != STOP_NONE);
	if (drop)
		sl_test_drop_lines_warn(step, c->gen.index);
	return drop;
}

void sl_ctl_on_line(void *ctx, int is_stderr, const char *line)
{
	struct ctl *c = ctx;
	c->last_output_s = sl_now_s();
	if (is_stderr) {
		/* the launcher names a dead rank: "rank R (stage .., on HOST) died ..." */
		int rank;
		char host[sizeof(c->dead_host)];
		if (sl_ctl_parse_rank_death(line, &rank, host, sizeof(host))) {
			c->dead_rank = rank;
			memcpy(c->dead_host, host, sizeof(host));
		}
		/* a node's ranks lost (OpenMPI's peer disconnect, srun's node failure) */
		sl_ctl_node_death_line(c, line);
		/* the generation's failure, as `sailor run` reports it (cli/args.h, sl_cli_error) */
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
		if (r >= 0 && r < c->probe.world)
			c->probe.answered[r] = 1;
	} else if (type && !strcmp(type, "ready")) {
		/* the generation loaded its checkpoint and starts training */
		c->gen_ready = 1;
		if (c->rc.active && c->rc.start_s > 0 && c->rc.ready_s == 0) {
			c->rc.ready_s = sl_now_s();
			c->rc.load_s = json_number_value(json_object_get(e, "load_s"));
		}
	} else if (type && !strcmp(type, "checkpoint")) {
		long long s = json_integer_value(json_object_get(e, "step"));
		if (s > c->ckpt_step)
			c->ckpt_step = s;
		if (c->rc.active && c->stop != STOP_NONE)
			c->rc.ckpt_s = sl_now_s();
		json_t *f = json_object();
		json_object_set_new(f, "generation", json_integer(c->gen.index));
		json_object_set(f, "step", json_object_get(e, "step"));
		json_object_set(f, "path", json_object_get(e, "path"));
		json_object_set(f, "persist_s", json_object_get(e, "persist_s"));
		sl_ctl_event(&c->ev, "checkpoint", f);
	} else if (type && !strcmp(type, "eval")) {
		on_eval(c, e);
	} else if (type && !strcmp(type, "outer")) {
		on_outer(c, e);
	} else if (type && !strcmp(type, "end")) {
		c->end_seen = 1;
	}
	json_decref(e);
}

/* After the generation's end: the steps in its own file (rank 0's --events-file) whose lines did
 * not come through the pipe are handled as if they had, in step order, and logged as an event
 * (steps_file.h says why lines go missing). Steps after the checkpoint the generation stopped at
 * are kept, as the pipe's are: steps.jsonl holds a step once per generation that ran it, and
 * its readers take the last. */
void sl_ctl_recover_steps(struct ctl *c)
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
