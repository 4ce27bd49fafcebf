/* The worker's header and summary (runner.h: what rank 0 prints before the first step and after
 * the last, in text and in JSON). */
#include <math.h>
#include <stdlib.h>

#include "runtime/runner_state.h"
#include "train/cpu/kernels.h"
#include "train/progress.h"
#include "util/clock.h"

void sl_runner_print_header(struct worker *w, long long start)
{
	const struct sl_train_options *o = &w->o->train;
	fprintf(w->out, "model %s: %d blocks, hidden %d, %d heads, vocab %d\n", w->model.name,
		w->model.num_blocks, w->model.hidden, w->model.heads, w->model.vocab);
	fprintf(w->out, "plan '%s': %d stage%s x %d pipeline%s, %d ranks, %d thread%s each\n",
		w->o->plan, w->table.num_stages, w->table.num_stages > 1 ? "s" : "",
		w->table.num_pipelines, w->table.num_pipelines > 1 ? "s" : "", w->table.world_size,
		sl_cpu_threads(), sl_cpu_threads() > 1 ? "s" : "");
	for (int k = 0; k < w->table.num_stages; k++) {
		int rec = sl_runner_stage_recompute(w, k);
		fprintf(w->out, "  stage %d  layers %d-%d%s%s%s:", k, w->plan.stages[k].first_layer,
			w->plan.stages[k].last_layer, rec ? ", recompute " : "",
			rec ? sl_gpt_recompute_name(rec) : "",
			w->plan.stages[k].zero && w->table.num_pipelines > 1 ? ", ZeRO-1" : "");
		for (int j = 0; j < w->table.num_pipelines; j++) {
			const struct sl_role *r = sl_role_of(&w->table, k, j, 0);
			fprintf(w->out, "%s %s tp%d %s (ranks %d-%d)", j ? "," : "",
				w->cat.gpus[r->gpu].name, r->tp, w->cat.zones[r->zone].name, r->rank,
				r->rank + r->tp - 1);
		}
		fprintf(w->out, "\n");
	}
	fprintf(w->out, "batch: micro-batch %d x %d tokens, global batch %lld = %d micro-batches "
		"(per pipeline:", w->plan.micro_batch, w->seq, w->global, w->nmb_total);
	for (int j = 0; j < w->table.num_pipelines; j++)
		fprintf(w->out, " %d", w->table.microbatches[j]);
	fprintf(w->out, "), %lld tokens per step\n", w->global * w->seq);
	sl_runner_islands_print_header(w);
	fprintf(w->out, "data '%s': %lld tokens, %lld windows of %d+1 tokens%s\n", o->data,
		w->file.count, w->loader.windows, w->seq, o->shuffle ? ", shuffled" : "");
	sl_runner_eval_header(w);
	if (w->resumed_from[0])
		fprintf(w->out, "resumed from '%s' after step %lld\n", w->resumed_from, start);
	fflush(w->out);
}

int sl_runner_print_end(struct worker *w, long long ran, double last_loss, const char *ckpt,
		     struct sl_err *err)
{
	enum { F = T_COUNT + 4 };
	double mine[F];
	for (int i = 0; i < T_COUNT; i++)
		mine[i] = ran > 0 ? w->times[i] / (double)ran : 0.0;
	mine[T_COUNT] = (double)sl_peak_rss_bytes();
	mine[T_COUNT + 1] = (double)w->me.stage;
	mine[T_COUNT + 2] = w->outer_on ? w->outer.stats.bytes_sent : 0;
	mine[T_COUNT + 3] = w->outer_on ? w->outer.stats.wait_s : 0;
	double *all = calloc((size_t)w->comm->size * F, sizeof(double));
	if (!all)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	int rc = sl_comm_allgather(w->comm, &w->comm->world, mine, all, F, SL_COMM_DOUBLE, err);
	if (rc || w->comm->rank != 0) {
		free(all);
		return rc;
	}
	double median = sl_median_sort(w->step_times, ran);
	double tokens = sl_runner_islands_tokens_per_step(w);
	int P = w->table.num_stages;
	if (w->o->train.json) {
		char loss_text[32] = "null";
		if (ran > 0)
			snprintf(loss_text, sizeof(loss_text), "%.17g", last_loss);
		fprintf(w->out,
			"{\"event\":\"end\",\"steps_run\":%lld,\"final_loss\":%s,"
			"\"median_step_time_s\":%.6f,\"tokens_per_step\":%.0f,\"tokens_per_s\":%.1f,"
			"\"flops_per_step\":%.6g,\"ranks\":%d,\"threads_per_rank\":%d,"
			"\"blas_core\":\"%s\",\"stages\":[",
			ran, loss_text, median, tokens, median > 0 ? tokens / median : 0.0,
			tokens * sl_train_flops_per_token(&w->model, w->seq), w->comm->size,
			sl_cpu_threads(), sl_cpu_blas_core());
	} else if (ran > 0) {
		fprintf(w->out, "time per step by stage (mean over the stage's ranks; ms)\n"
				"  stage   compute  p2p-wait   dp-sync optimizer      step  peak RSS MiB\n");
	}
	for (int k = 0; k < P; k++) {
		double sum[T_COUNT] = {0}, rss = 0.0;
		int count = 0;
		for (int r = 0; r < w->comm->size; r++) {
			const double *v = all + (size_t)r * F;
			if ((int)v[T_COUNT + 1] != k)
				continue;
			for (int i = 0; i < T_COUNT; i++)
				sum[i] += v[i];
			rss = v[T_COUNT] > rss ? v[T_COUNT] : rss;
			count++;
		}
		for (int i = 0; i < T_COUNT; i++)
			sum[i] /= count > 0 ? count : 1;
		if (w->o->train.json)
			fprintf(w->out,
				"%s{\"stage\":%d,\"layers\":[%d,%d],\"ranks\":%d,\"compute_s\":%.6f,"
				"\"p2p_wait_s\":%.6f,\"dp_sync_s\":%.6f,\"optimizer_s\":%.6f,"
				"\"step_s\":%.6f,\"cpu_s\":%.6f,\"dp_sync_cpu_s\":%.6f,"
				"\"wait_cpu_s\":%.6f,\"wait_tests\":%.1f,\"peak_rss_bytes\":%.0f}",
				k ? "," : "", k, w->plan.stages[k].first_layer,
				w->plan.stages[k].last_layer, count, sum[T_COMPUTE], sum[T_P2P],
				sum[T_SYNC], sum[T_OPTIM], sum[T_STEP], sum[T_CPU], sum[T_SYNC_CPU],
				sum[T_WAIT_CPU], sum[T_TESTS], rss);
		else if (ran > 0)
			fprintf(w->out, "  %-5d %9.1f %9.1f %9.1f %9.1f %9.1f %13.1f\n", k,
				1e3 * sum[T_COMPUTE], 1e3 * sum[T_P2P], 1e3 * sum[T_SYNC],
				1e3 * sum[T_OPTIM], 1e3 * sum[T_STEP], rss / (1 << 20));
	}
	if (w->o->train.json && w->outer_on) {
		/* the outer exchange: bytes every rank sent between islands, the longest wait */
		double bytes = 0, wait = 0;
		for (int r = 0; r < w->comm->size; r++) {
			bytes += all[(size_t)r * F + T_COUNT + 2];
			wait = fmax(wait, all[(size_t)r * F + T_COUNT + 3]);
		}
		fprintf(w->out, "],\"islands\":{\"count\":%d,\"outer_steps\":%lld,"
			"\"bytes_between_islands\":%.0f,\"outer_wait_s_max\":%.6f}}\n",
			w->plan.islands->count, w->outer.stats.outer_steps, bytes, wait);
	} else if (w->o->train.json) {
		fprintf(w->out, "]}\n");
	}
	else if (ran > 0)
		fprintf(w->out, "done: %lld steps, final loss %.4f, median %.1f ms/step (%.0f "
			"tokens/s)\n", ran, last_loss, 1e3 * median, tokens / median);
	if (ckpt && !w->o->train.json)
		fprintf(w->out, "checkpoint '%s'\n", ckpt);
	fflush(w->out);
	free(all);
	return 0;
}

