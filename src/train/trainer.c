/* The training loop (trainer.h).
 * Invariants: nothing is written to the checkpoint directory unless a step completed with a
 * finite loss; a resumed run reads every piece of state that the loop's arithmetic depends on
 * (weights, AdamW moments, step, data position, seed) from the checkpoint, so its losses equal
 * an uninterrupted run's. FLOPs per step for MFU follow PaLM (Chowdhery et al. 2022,
 * appendix B): 6 per weight of every matrix product per token (QKV, projections, MLP and the
 * tied LM head), plus 12 * layers * hidden * seq for attention. */
#include "train/trainer.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "model/model_config.h"
#include "train/checkpoint.h"
#include "train/cpu/kernels.h"
#include "train/data.h"
#include "train/heldout.h"
#include "train/lr_schedule.h"
#include "train/model.h"
#include "train/optimizer.h"
#include "train/progress.h"
#include "train/safetensors.h"
#include "util/atomic_file.h"
#include "util/limits.h"
#include "util/log.h"

void sl_train_options_defaults(struct sl_train_options *o)
{
	memset(o, 0, sizeof(*o));
	o->micro_batch = 4;
	o->steps = 100;
	o->lr = 6e-4;
	o->min_lr = -1.0;
	o->weight_decay = 0.1;
	o->beta1 = 0.9;
	o->beta2 = 0.95;
	o->eps = 1e-8;
	o->grad_clip = 1.0;
	o->seed = 1337;
	o->ckpt_keep = 2;
	o->log_every = 1;
	o->recompute = -1;
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

double sl_train_flops_per_token(const struct sl_model_config *m, int seq)
{
	double C = m->hidden, F = m->ffn_hidden, L = m->num_blocks;
	double matmul_weights = L * (4.0 * C * C + 2.0 * C * F) + (double)m->vocab * C;
	return 6.0 * matmul_weights + 12.0 * L * C * seq;
}

/* Warns about hyper-parameters that differ from the checkpoint's (the run continues with the
 * new ones, but is then no longer identical to an uninterrupted one). */
static void compare_train(const json_t *saved, const json_t *now, const char *path)
{
	if (!json_is_object(saved))
		return;
	const char *key;
	json_t *value;
	json_object_foreach((json_t *)now, key, value) {
		json_t *old = json_object_get(saved, key);
		if (old && !json_equal(old, value)) {
			char *a = json_dumps(old, JSON_ENCODE_ANY), *b = json_dumps(value, JSON_ENCODE_ANY);
			sl_log_warn("checkpoint '%s' was trained with %s %s, continuing with %s", path,
				    key, a ? a : "?", b ? b : "?");
			free(a);
			free(b);
		}
	}
}

static int load_init(struct sl_gpt *gpt, const char *path, struct sl_err *err)
{
	struct sl_safetensors st;
	int rc = sl_safetensors_open(&st, path, err);
	if (rc)
		return rc;
	for (int i = 0; !rc && i < gpt->param_count; i++) {
		struct sl_param *p = gpt->params[i];
		rc = sl_safetensors_read(&st, p->name, p->ndim, p->full_shape, p->value, err);
	}
	sl_safetensors_close(&st);
	return rc;
}

static json_t *model_metadata(const struct sl_model_config *m)
{
	json_t *meta = json_object();
	char text[512];
	snprintf(text, sizeof(text),
		 "{\"name\":\"%s\",\"layers\":%d,\"hidden\":%d,\"heads\":%d,\"ffn_hidden\":%d,"
		 "\"seq_len\":%d,\"vocab\":%d}",
		 m->name, m->num_blocks, m->hidden, m->heads, m->ffn_hidden, m->seq_len, m->vocab);
	json_object_set_new(meta, "format", json_string("pt"));
	json_object_set_new(meta, "sailor.model", json_string(text));
	json_object_set_new(meta, "sailor.tied",
			    json_string("the LM head uses layer0.wte.weight (tied embedding)"));
	return meta;
}

static int export_weights(const struct sl_gpt *gpt, const char *path, struct sl_err *err)
{
	struct sl_st_entry *e = calloc((size_t)gpt->param_count, sizeof(*e));
	if (!e)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	for (int i = 0; i < gpt->param_count; i++) {
		const struct sl_param *p = gpt->params[i];
		e[i] = (struct sl_st_entry){p->name, p->ndim, {p->shape[0], p->shape[1]}, p->value};
	}
	json_t *meta = model_metadata(&gpt->model);
	int rc = sl_safetensors_write(path, e, gpt->param_count, meta, err);
	json_decref(meta);
	free(e);
	return rc;
}

/* Step 1's logits (first micro-batch), loss and every gradient, for reference comparisons. */
static int dump_step(const struct sl_gpt *gpt, const char *path, const float *logits, int B,
		     int T, double loss, struct sl_err *err)
{
	int n = gpt->param_count + 2;
	struct sl_st_entry *e = calloc((size_t)n, sizeof(*e));
	char (*names)[SL_PARAM_NAME_MAX + 8] = calloc((size_t)n, sizeof(*names));
	if (!e || !names) {
		free(e);
		free(names);
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	}
	float loss_f = (float)loss;
	e[0] = (struct sl_st_entry){"logits", 3, {B, T, gpt->model.vocab}, logits};
	e[1] = (struct sl_st_entry){"loss", 1, {1}, &loss_f};
	for (int i = 0; i < gpt->param_count; i++) {
		const struct sl_param *p = gpt->params[i];
		snprintf(names[i + 2], sizeof(names[i + 2]), "grad.%s", p->name);
		e[i + 2] = (struct sl_st_entry){names[i + 2], p->ndim, {p->shape[0], p->shape[1]},
						p->grad};
	}
	json_t *meta = model_metadata(&gpt->model);
	int rc = sl_safetensors_write(path, e, n, meta, err);
	json_decref(meta);
	free(e);
	free(names);
	return rc;
}

struct run {
	const struct sl_train_options *o;
	FILE *out;
	struct sl_model_config model;
	struct sl_token_file file;
	struct sl_data_loader loader;
	struct sl_heldout heldout;   /* with --val-data */
	struct sl_gpt gpt;
	int32_t *tokens, *targets;
	float *dump_logits;
	double *step_times;  /* one per step run, grown as it runs (not sized by --steps up front) */
	long long step_times_cap;
	int seq, nmb;
	long long global;
	char resumed_from[4200];  /* checkpoint resumed from, "" if none */
};

static int save_ckpt(struct run *r, long long step, json_t *train, char *path, size_t size,
		     struct sl_err *err)
{
	struct sl_checkpoint_state st = {
		.step = step,
		.data_epoch = r->loader.epoch,
		.data_next = r->loader.next,
		.data_seq = r->seq,
		.data_tokens = r->file.count,
		.seed = r->o->seed,
		.train = train,
	};
	snprintf(st.data_path, sizeof(st.data_path), "%s", r->o->data);
	return sl_checkpoint_save(r->o->ckpt_dir, &r->gpt, &st, r->o->ckpt_keep, path, size, err);
}

static void print_header(struct run *r, long long start)
{
	const struct sl_train_options *o = r->o;
	struct sl_gpt_memory mem;
	sl_gpt_memory(&r->gpt, &mem);
	static const char *tok_names[] = {"other", "byte", "gpt2"};
	fprintf(r->out, "model %s: %d blocks, hidden %d, %d heads, vocab %d, %.2f M parameters\n",
		r->model.name, r->model.num_blocks, r->model.hidden, r->model.heads,
		r->model.vocab, (double)r->gpt.param_numel / 1e6);
	fprintf(r->out, "data '%s': %lld tokens (%s tokenizer), %lld windows of %d+1 tokens%s\n",
		o->data, r->file.count, r->file.tokenizer <= 2 ? tok_names[r->file.tokenizer] : "?",
		r->loader.windows, r->seq, o->shuffle ? ", shuffled" : "");
	fprintf(r->out,
		"batch: micro-batch %d x %d tokens, global batch %lld = %d micro-batch%s, %lld "
		"tokens per step\n",
		o->micro_batch, r->seq, r->global, r->nmb, r->nmb > 1 ? "es" : "",
		r->global * r->seq);
	fprintf(r->out,
		"threads %d (OpenBLAS %s); memory: parameters %.1f MiB, gradients %.1f MiB, AdamW "
		"%.1f MiB, activations %.1f MiB%s%s%s, workspace %.1f MiB\n",
		sl_cpu_threads(), sl_cpu_blas_core(), mib(mem.params_bytes), mib(mem.grads_bytes),
		mib(mem.optimizer_bytes), mib(mem.activations_bytes),
		r->gpt.recompute ? " (recompute " : "",
		r->gpt.recompute ? sl_gpt_recompute_name(r->gpt.recompute) : "",
		r->gpt.recompute ? ")" : "", mib(mem.workspace_bytes));
	if (o->val_data)
		fprintf(r->out, "val data '%s': %lld tokens, the first %lld windows of %d+1 tokens "
			"(%lld tokens), after every %lld steps and the last\n", o->val_data,
			r->heldout.file.count, r->heldout.windows, r->seq,
			sl_heldout_tokens(&r->heldout), o->eval_every);
	if (r->resumed_from[0])
		fprintf(r->out, "resumed from '%s' after step %lld\n", r->resumed_from, start);
}

static void print_step(struct run *r, long long step, double loss, double lr, double norm,
		       double dt)
{
	sl_print_step(r->out, r->o->json, NULL, step, r->o->steps, loss, lr, norm, dt,
		      (double)(r->global * r->seq));
}

static void print_end(struct run *r, long long ran, double last_loss, const char *ckpt)
{
	struct sl_gpt_memory mem;
	sl_gpt_memory(&r->gpt, &mem);
	size_t batch_bytes = 2 * (size_t)r->o->micro_batch * r->seq * sizeof(int32_t);
	size_t total = mem.params_bytes + mem.grads_bytes + mem.optimizer_bytes +
		       mem.activations_bytes + mem.workspace_bytes + batch_bytes;
	double median = sl_median_sort(r->step_times, ran);
	double tokens = (double)(r->global * r->seq);
	double flops = tokens * sl_train_flops_per_token(&r->model, r->seq);
	size_t rss = sl_peak_rss_bytes();
	char loss_text[32] = "null"; /* JSON has no NaN: no step ran */
	if (ran > 0)
		snprintf(loss_text, sizeof(loss_text), "%.17g", last_loss);
	if (r->o->json) {
		fprintf(r->out,
			"{\"event\":\"end\",\"steps_run\":%lld,\"final_loss\":%s,"
			"\"median_step_time_s\":%.6f,\"tokens_per_step\":%.0f,\"tokens_per_s\":%.1f,"
			"\"flops_per_step\":%.6g,\"threads\":%d,\"blas_core\":\"%s\","
			"\"memory\":{\"params_bytes\":%zu,\"grads_bytes\":%zu,"
			"\"optimizer_bytes\":%zu,\"activations_bytes\":%zu,\"workspace_bytes\":%zu,"
			"\"batch_bytes\":%zu,\"accounted_bytes\":%zu,\"peak_rss_bytes\":%zu}}\n",
			ran, loss_text, median, tokens, median > 0 ? tokens / median : 0.0, flops,
			sl_cpu_threads(), sl_cpu_blas_core(), mem.params_bytes, mem.grads_bytes,
			mem.optimizer_bytes, mem.activations_bytes, mem.workspace_bytes, batch_bytes,
			total, rss);
	} else if (ran > 0) {
		fprintf(r->out,
			"done: %lld steps, final loss %.4f, median %.1f ms/step (%.0f tokens/s); peak "
			"RSS %.1f MiB for %.1f MiB accounted\n",
			ran, last_loss, 1e3 * median, tokens / median, mib(rss), mib(total));
	}
	if (ckpt && !r->o->json)
		fprintf(r->out, "checkpoint '%s'\n", ckpt);
	fflush(r->out);
}

static int setup(struct run *r, struct sl_err *err)
{
	const struct sl_train_options *o = r->o;
	int rc = sl_model_config_load(o->model, &r->model, err);
	if (rc)
		return rc;
	/* files written at the end: a folder that is missing fails now, not after the run */
	if (o->save_safetensors && (rc = sl_atomic_check(o->save_safetensors, "safetensors", err)))
		return rc;
	if (o->dump_first_step && (rc = sl_atomic_check(o->dump_first_step, "safetensors", err)))
		return rc;
	r->seq = o->seq_len > 0 ? o->seq_len : r->model.seq_len;
	if (r->seq > r->model.seq_len)
		return sl_err_set(err, SL_EINPUT,
				  "--seq-len %d is longer than model '%s' allows (seq_len %d)", r->seq,
				  r->model.name, r->model.seq_len);
	/* the kernels count a micro-batch's tokens in an int */
	if ((long long)o->micro_batch * r->seq > SL_MAX_MICROBATCH_TOKENS)
		return sl_err_set(err, SL_EUSAGE,
				  "micro-batch %d x sequence %d = %lld tokens, more than %d: choose "
				  "a smaller --micro-batch or --seq-len", o->micro_batch, r->seq,
				  (long long)o->micro_batch * r->seq, SL_MAX_MICROBATCH_TOKENS);
	r->global = o->global_batch > 0 ? o->global_batch : o->micro_batch;
	if (o->micro_batch <= 0 || r->global % o->micro_batch)
		return sl_err_set(err, SL_EUSAGE,
				  "global batch %lld is not a multiple of micro-batch %d: choose "
				  "sizes where --global-batch / --micro-batch is whole",
				  r->global, o->micro_batch);
	if (r->global / o->micro_batch > (1 << 30))
		return sl_err_set(err, SL_EUSAGE, "too many micro-batches per step");
	r->nmb = (int)(r->global / o->micro_batch);
	int threads = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if ((rc = sl_cpu_set_threads(threads > 0 ? threads : 1, err)))
		return rc;
	if ((rc = sl_token_file_open(&r->file, o->data, err)))
		return rc;
	if ((rc = sl_data_loader_init(&r->loader, &r->file, o->micro_batch, r->seq,
				      r->model.vocab, o->shuffle, o->seed, err)))
		return rc;
	if (o->val_data && (rc = sl_heldout_open(&r->heldout, o->val_data, &r->file, r->seq,
						 o->micro_batch, r->model.vocab,
						 o->val_windows > 0 ? o->val_windows
								    : SL_HELDOUT_DEFAULT_WINDOWS,
						 err)))
		return rc;
	struct sl_gpt_options opts = {.slots = 1,
				      .recompute = o->recompute > 0 ? o->recompute : 0};
	if ((rc = sl_gpt_init_opts(&r->gpt, &r->model, 0, r->model.num_blocks + 1, o->micro_batch,
				   r->seq, &opts, 1, 0, NULL, sl_cpu_threads(), err)))
		return rc;
	size_t n = (size_t)o->micro_batch * r->seq;
	r->tokens = malloc(n * sizeof(int32_t));
	r->targets = malloc(n * sizeof(int32_t));
	r->step_times_cap = 1024;
	r->step_times = malloc((size_t)r->step_times_cap * sizeof(double));
	if (o->dump_first_step)
		r->dump_logits = malloc(n * (size_t)r->model.vocab * sizeof(float));
	if (!r->tokens || !r->targets || !r->step_times || (o->dump_first_step && !r->dump_logits))
		return sl_err_set(err, SL_ENOMEM, "cannot allocate the batch buffers");
	return 0;
}

static void teardown(struct run *r)
{
	sl_gpt_free(&r->gpt);
	sl_data_loader_free(&r->loader);
	sl_heldout_close(&r->heldout);
	sl_token_file_close(&r->file);
	free(r->tokens);
	free(r->targets);
	free(r->dump_logits);
	free(r->step_times);
}

/* Restores state from the newest valid checkpoint; returns the step to start from. */
static int resume(struct run *r, json_t *train, long long *start, struct sl_err *err)
{
	struct sl_checkpoint_state st = {0};
	char path[4200];
	int rc = sl_checkpoint_load_latest(r->o->ckpt_dir, &r->gpt, &st, path, sizeof(path), err);
	if (rc)
		return rc;
	compare_train(st.train, train, path);
	json_decref(st.train);
	if (st.data_tokens != r->file.count)
		return sl_err_set(err, SL_EINPUT,
				  "checkpoint '%s' was trained on %lld tokens of '%s', but data file "
				  "'%s' has %lld: resume with the same data",
				  path, st.data_tokens, st.data_path, r->o->data, r->file.count);
	if (st.data_seq != r->seq)
		return sl_err_set(err, SL_EINPUT,
				  "checkpoint '%s' was trained with sequence length %d, not %d: resume "
				  "with --seq-len %d",
				  path, st.data_seq, r->seq, st.data_seq);
	if (st.seed != r->o->seed)
		sl_log_warn("checkpoint '%s' was trained with --seed %llu; its data order continues",
			    path, (unsigned long long)st.seed);
	r->loader.seed = st.seed;
	if ((rc = sl_data_loader_seek(&r->loader, st.data_epoch, st.data_next, err)))
		return sl_err_prefix(err, "checkpoint '%s'", path);
	*start = st.step;
	snprintf(r->resumed_from, sizeof(r->resumed_from), "%s", path);
	return 0;
}

/* The held-out loss after step (1-based) when it is due: every --eval-every steps and after the
 * last, not after a stop by signal (a stop should be quick). The step's time excludes it. */
static int evaluate(struct run *r, long long step, struct sl_err *err)
{
	const struct sl_train_options *o = r->o;
	if (!o->val_data || stop_signal || (step % o->eval_every && step != o->steps))
		return 0;
	double t0 = sl_now_s(), val_loss = 0.0;
	int rc = sl_heldout_loss(&r->heldout, &r->gpt, &val_loss, err);
	if (!rc)
		sl_print_eval(r->out, o->json, step, val_loss, sl_heldout_tokens(&r->heldout),
			      sl_now_s() - t0);
	return rc;
}

static int train_loop(struct run *r, long long start, json_t *train, struct sl_err *err)
{
	const struct sl_train_options *o = r->o;
	struct sl_lr_schedule sched = sl_train_lr_schedule(o);
	struct sl_adamw_config adamw = sl_train_adamw_config(o);
	struct sl_gpt_microbatch mb = {o->micro_batch, r->seq, r->tokens, r->targets};
	char ckpt[4300] = "";
	double loss = NAN;
	long long ran = 0;
	int rc = 0;
	for (long long step = start; step < o->steps; step++) {
		double t0 = sl_now_s();
		sl_gpt_zero_grad(&r->gpt);
		double loss_sum = 0.0;
		for (int m = 0; m < r->nmb && !rc; m++) {
			double mb_loss = 0.0;
			sl_data_loader_next(&r->loader, r->tokens, r->targets);
			rc = sl_gpt_forward(&r->gpt, &mb, NULL, &mb_loss, err);
			if (!rc && r->dump_logits && step == 0 && m == 0)
				memcpy(r->dump_logits, sl_gpt_head(&r->gpt)->logits,
				       (size_t)o->micro_batch * r->seq * r->model.vocab *
					       sizeof(float));
			if (!rc)
				rc = sl_gpt_backward(&r->gpt, &mb, NULL, 1.0f / (float)r->nmb, err);
			loss_sum += mb_loss;
		}
		if (rc)
			break;
		loss = loss_sum / r->nmb;
		if (!isfinite(loss)) {
			rc = sl_err_set(err, SL_EINFEASIBLE,
					"loss became %f at step %lld: training diverged (try a lower "
					"--lr or --grad-clip); no checkpoint was written for it",
					loss, step + 1);
			break;
		}
		double norm = sl_grad_norm(r->gpt.params, r->gpt.param_count);
		if (r->dump_logits && step == 0 &&
		    (rc = dump_step(&r->gpt, o->dump_first_step, r->dump_logits, o->micro_batch,
				    r->seq, loss, err)))
			break;
		double lr = sl_lr_at(&sched, step);
		sl_adamw_apply(r->gpt.params, r->gpt.param_count, &adamw, lr, step + 1, norm);
		double dt = sl_now_s() - t0;
		if (ran == r->step_times_cap) {
			double *grown = realloc(r->step_times,
						(size_t)(2 * r->step_times_cap) * sizeof(double));
			if (!grown) {
				rc = sl_err_set(err, SL_ENOMEM, "out of memory");
				break;
			}
			r->step_times = grown;
			r->step_times_cap *= 2;
		}
		r->step_times[ran++] = dt;
		if ((step + 1) % o->log_every == 0 || step + 1 == o->steps || step == start)
			print_step(r, step + 1, loss, lr, norm, dt);
		if ((rc = evaluate(r, step + 1, err)))
			break;
		int last = step + 1 == o->steps || stop_signal;
		if (o->ckpt_dir && (last || (o->ckpt_every > 0 && (step + 1) % o->ckpt_every == 0))) {
			if ((rc = save_ckpt(r, step + 1, train, ckpt, sizeof(ckpt), err)))
				break;
			if (!o->json && !last)
				fprintf(r->out, "checkpoint '%s'\n", ckpt);
		}
		if (stop_signal) {
			rc = sl_err_set(err, SL_EIO, "stopped by signal %d after step %lld%s%s%s",
					(int)stop_signal, step + 1, o->ckpt_dir ? " (checkpoint '" : "",
					o->ckpt_dir ? ckpt : "", o->ckpt_dir ? "')" : "");
			break;
		}
	}
	if (!rc && o->save_safetensors && (rc = export_weights(&r->gpt, o->save_safetensors, err)))
		return rc;
	if (!rc) {
		if (start >= o->steps && !o->json)
			fprintf(r->out, "nothing to do: training already reached step %lld of %lld\n",
				start, o->steps);
		print_end(r, ran, loss, ckpt[0] ? ckpt : NULL);
		if (o->save_safetensors && !o->json)
			fprintf(r->out, "weights '%s'\n", o->save_safetensors);
	}
	return rc;
}

int sl_train_run(const struct sl_train_options *o, FILE *out, struct sl_err *err)
{
	if (o->resume && !o->ckpt_dir)
		return sl_err_set(err, SL_EUSAGE, "--resume needs --ckpt-dir");
	if (o->log_every <= 0 || o->ckpt_keep <= 0 || o->steps < 0)
		return sl_err_set(err, SL_EUSAGE, "--log-every, --ckpt-keep must be positive");
	if (!o->val_data != (o->eval_every <= 0) || (o->val_windows && !o->val_data))
		return sl_err_set(err, SL_EUSAGE, "--val-data and --eval-every go together, and "
				  "--val-windows needs them");
	struct run r = {.o = o, .out = out};
	int rc = setup(&r, err);
	long long start = 0;
	json_t *train = sl_train_hparams_json(o, o->micro_batch, r.global, r.seq);
	if (!rc) {
		sl_gpt_init_weights(&r.gpt, o->seed);
		if (o->init_from)
			rc = load_init(&r.gpt, o->init_from, err);
	}
	if (!rc && o->resume)
		rc = resume(&r, train, &start, err);
	if (!rc && !o->json)
		print_header(&r, start);
	if (!rc) {
		struct sigaction sa = {0}, old_int, old_term;
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		stop_signal = 0;
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
		rc = train_loop(&r, start, train, err);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
	json_decref(train);
	teardown(&r);
	return rc;
}
