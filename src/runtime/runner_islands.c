/* The worker's islands glue (runner_state.h, docs/design/islands.md): which run steps the rank's
 * island trains, the outer step after each of its inner steps, the stop agreed over the world at
 * round ends, the final flush, and what the header and the summary say about it. Without an
 * "islands" section none of this runs and the worker is the synchronous one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runner_state.h"
#include "runtime/zero.h"
#include "train/gpt_layers.h"
#include "util/heap_pages.h"

/* One island has no outer step: it is the synchronous plan, bit for bit. */
int sl_runner_islands_on(const struct worker *w)
{
	return w->plan.islands != NULL && w->plan.islands->count > 1;
}

static int progress_between_layers(void *ctx, struct sl_err *err)
{
	struct worker *w = ctx;
	return sl_outer_sync_progress(&w->outer, err);
}

int sl_runner_islands_setup(struct worker *w, struct sl_err *err)
{
	if (!sl_runner_islands_on(w))
		return 0;
	w->outer_on = 1;
	int rc = sl_outer_sync_init(&w->outer, w->comm, &w->table, w->plan.islands, &w->model,
				    w->o->train.steps, &w->groups.tp, w->gpt.params,
				    w->gpt.param_count, err);
	/* An exchange in flight moves only inside an MPI call: on an island of one rank the
	 * step has none, so the exchange's handshakes and its second phase would wait for the
	 * step's end, a step or more each, where the overlap steps are meant to hide it all
	 * (docs/design/islands.md). A test between layers costs microseconds. */
	if (!rc && w->plan.islands->overlap_steps > 0 && w->outer.carrier) {
		w->gpt.between_layers = progress_between_layers;
		w->gpt.between_layers_ctx = w;
	}
	return rc;
}

void sl_runner_islands_free(struct worker *w)
{
	for (int i = 0; w->view && i < w->outer.count; i++)
		free(w->view[i]);
	free(w->view);
	w->view = NULL;
	if (w->outer_on)
		sl_outer_sync_free(&w->outer);
	w->outer_on = 0;
	w->gpt.between_layers = NULL;
}

int sl_runner_islands_steps_at(const struct worker *w, long long step)
{
	return !w->outer_on || sl_outer_schedule_steps_at(&w->outer.sched, w->me.island, step);
}

long long sl_runner_islands_inner_step(const struct worker *w, long long step)
{
	if (!w->outer_on)
		return step + 1;
	return sl_outer_schedule_steps_before(&w->outer.sched, w->me.island, step) + 1;
}

int sl_runner_islands_microbatches(const struct worker *w)
{
	return w->table.island_microbatches[w->me.island];
}

double sl_runner_islands_tokens_per_step(const struct worker *w)
{
	if (!w->outer_on)
		return (double)(w->global * w->seq);
	const struct sl_plan_islands *isl = w->plan.islands;
	double samples = 0;
	for (int i = 0; i < isl->count; i++)
		samples += (double)isl->inner_steps[i] * w->table.island_microbatches[i];
	return samples * w->plan.micro_batch * w->seq / isl->inner_steps[0];
}

/* Whether this island starts a fragment's exchange after its inner step `inner`. */
static int exchange_starts(const struct worker *w, long long inner)
{
	for (int f = 0; f < w->plan.islands->fragments; f++)
		if (sl_outer_schedule_syncs_after(&w->outer.sched, w->me.island, inner, f))
			return 1;
	return 0;
}

/* A landing changed the values: a sharded optimizer that keeps master copies reloads them. */
static int after_landing(struct worker *w, int landed, struct sl_err *err)
{
	if (!landed || !w->zero_on)
		return 0;
	return sl_zero_load(&w->zero, 0, err);
}

int sl_runner_islands_after_step(struct worker *w, long long step, struct sl_err *err)
{
	if (!w->outer_on)
		return 0;
	int landed = 0;
	long long inner = sl_runner_islands_inner_step(w, step);
	if (!w->heap_given_back && exchange_starts(w, inner)) {
		/* once, before the first exchange (util/heap_pages.h): what the gradient sync
		 * freed in the heap would otherwise stay resident beside its next transient */
		sl_heap_give_back_free_pages();
		w->heap_given_back = 1;
	}
	int rc = sl_outer_sync_after_step(&w->outer, inner, &landed, err);
	if (!rc)
		rc = after_landing(w, landed, err);
	return rc;
}

int sl_runner_islands_progress(struct worker *w, struct sl_err *err)
{
	return w->outer_on ? sl_outer_sync_progress(&w->outer, err) : 0;
}

int sl_runner_islands_round_end(const struct worker *w, long long step)
{
	return !w->outer_on || (step + 1) % w->plan.islands->inner_steps[0] == 0;
}

int sl_runner_islands_agree_stop(struct worker *w, int asked, int *stop, struct sl_err *err)
{
	double flag = asked ? 1.0 : 0.0;
	int rc = sl_outer_sync_round_end(&w->outer, err);
	if (!rc)
		rc = sl_comm_allreduce(w->comm, &w->comm->world, &flag, 1, SL_COMM_DOUBLE, SL_COMM_SUM,
				   err);
	*stop = flag > 0;
	return rc;
}

int sl_runner_islands_finish(struct worker *w, struct sl_err *err)
{
	if (!w->outer_on)
		return 0;
	int landed = 0;
	int rc = sl_outer_sync_finish(&w->outer, &landed, err);
	if (!rc)
		rc = after_landing(w, landed, err);
	return rc;
}

void sl_runner_islands_report(struct worker *w, long long step)
{
	if (!w->outer_on || !w->o->train.json ||
	    w->outer.stats.outer_steps == w->reported_outer_steps)
		return;
	w->reported_outer_steps = w->outer.stats.outer_steps;
	fprintf(w->out, "{\"event\":\"outer\",\"step\":%lld,\"fragment_syncs\":%lld,"
		"\"fragments\":%d,\"outer_wait_s\":%.6f,\"bytes_sent\":%.0f}\n", step + 1,
		w->outer.stats.outer_steps, w->plan.islands->fragments, w->outer.stats.wait_s,
		w->outer.stats.bytes_sent);
	fflush(w->out);
}

void sl_runner_islands_swap_global(struct worker *w)
{
	if (!w->outer_on)
		return;
	for (int i = 0; i < w->outer.count; i++) {
		float *v = w->outer.params[i]->value;
		w->outer.params[i]->value = w->outer.global[i];
		w->outer.global[i] = v;
	}
}

int sl_runner_islands_global_view(struct worker *w, int begin, struct sl_err *err)
{
	if (!w->outer_on)
		return 0;
	struct sl_outer_sync *o = &w->outer;
	if (begin) {
		if (!w->view) {
			w->view = calloc((size_t)o->count, sizeof(float *));
			for (int i = 0; w->view && i < o->count; i++)
				if (!(w->view[i] = sl_alloc_floats((size_t)o->params[i]->numel)))
					return sl_err_set(err, SL_ENOMEM, "out of memory");
			if (!w->view)
				return sl_err_set(err, SL_ENOMEM, "out of memory");
		}
		int rc = sl_outer_sync_settle(o, err);
		if (rc)
			return rc;
		sl_outer_sync_global_view(o, w->view);
	}
	/* swap in (begin) or back (end): the layers read the values through the parameters */
	if (w->view_in == begin)
		return 0;
	w->view_in = begin;
	for (int i = 0; i < o->count; i++) {
		float *v = o->params[i]->value;
		o->params[i]->value = w->view[i];
		w->view[i] = v;
	}
	return 0;
}

void sl_runner_islands_print_header(const struct worker *w)
{
	const struct sl_plan_islands *isl = w->plan.islands;
	if (!isl)
		return;
	if (isl->count == 1) {
		fprintf(w->out, "islands: 1, which is the synchronous plan (no outer step)\n");
		return;
	}
	fprintf(w->out, "islands: %d (pipelines", isl->count);
	for (int i = 0; i < isl->count; i++) {
		fprintf(w->out, "%s", i ? " |" : "");
		for (int j = 0; j < isl->num_pipelines; j++)
			if (isl->island_of[j] == i)
				fprintf(w->out, " %d", j);
	}
	fprintf(w->out, "), inner steps");
	for (int i = 0; i < isl->count; i++)
		fprintf(w->out, "%s%d", i ? "/" : " ", isl->inner_steps[i]);
	fprintf(w->out, ", outer SGD lr %g Nesterov momentum %g, wire %s, %d fragment%s, overlap %d "
		"step%s", isl->outer_lr, isl->outer_momentum, sl_islands_wire_name(isl->wire),
		isl->fragments, isl->fragments > 1 ? "s" : "", isl->overlap_steps,
		isl->overlap_steps == 1 ? "" : "s");
	if (isl->overlap_steps)
		fprintf(w->out, " (merge %g)", isl->merge);
	fprintf(w->out, "; the step lines are island 0's\n");
}
