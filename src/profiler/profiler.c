/* The layer profiler (see profiler.h): TP ranks as threads, or as the MPI ranks of the job this
 * process is part of (options.comm), per-iteration times per layer and phase, medians over the
 * repeats.
 * Invariants: every rank of a group runs the same sequence of layer calls (the all-reduces
 * inside the layers pair up); a phase's time is taken between two barriers, so it is the
 * slowest rank's. */
#include "profiler/profiler.h"

#include "runtime/comm.h"

#include <errno.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/comm.h"
#include "model/model_config.h"
#include "train/cpu/kernels.h"
#include "train/gpt_layers.h"
#include "train/optimizer.h"
#include "train/rng.h"
#include "util/atomic_file.h"
#include "util/json.h"
#include "util/clock.h"

#define MAX_TP 64
#define SEED 4242

/* Phases of one iteration, in the order they run. The last is not a layer's own pass: the
 * attention core's forward (scores, softmax, weighted sum) rerun on a block forward filled, what
 * selective recomputation adds to a block's backward (gpt_layers.c). The core is memory-bound,
 * so its share of a block's time is not its share of the FLOPs; measured here, the simulator
 * uses it (sim/memory_options.c). Last, so that the other phases run as they did without it. */
enum { F_EMB, F_BLK, F_HEAD, B_HEAD, B_BLK, B_EMB, U_EMB, U_BLK, U_HEAD, R_ATT, PHASES };
static const char *const phase_names[PHASES] = {
	"forward_embedding", "forward_block", "forward_head", "backward_head", "backward_block",
	"backward_embedding", "update_embedding", "update_block", "update_head",
	"recompute_attention"};

/* --- the in-process TP group ------------------------------------------------------------ */

struct group {
	int tp;
	pthread_barrier_t barrier;
	float *bufs[MAX_TP];
	float *acc;          /* shared result, sized on demand by rank 0 between barriers */
	int ints[MAX_TP];    /* rank_max_int's contributions */
	double phase_values[MAX_TP][PHASES]; /* rank_max_phases' contributions */
	long long acc_count;
	int failed;
};

struct rank {
	struct group *g;        /* threads: the in-process group */
	struct sl_comm *comm;   /* MPI: the job, one rank per TP rank (g unused) */
	int id;
};

/* Every TP rank waits for the others. */
static void rank_barrier(struct rank *r)
{
	if (r->comm)
		sl_comm_barrier(r->comm, &r->comm->world, NULL);
	else
		pthread_barrier_wait(&r->g->barrier);
}

/* The largest of the ranks' values of x (a failure flag, a count rank 0 decided). */
static int rank_max_int(struct rank *r, int x)
{
	if (!r->comm) {
		struct group *g = r->g;
		g->ints[r->id] = x;
		pthread_barrier_wait(&g->barrier);
		int m = g->ints[0];
		for (int k = 1; k < g->tp; k++)
			m = g->ints[k] > m ? g->ints[k] : m;
		pthread_barrier_wait(&g->barrier); /* nobody writes ints again before all read */
		return m;
	}
	double v = x;
	sl_comm_allreduce(r->comm, &r->comm->world, &v, 1, SL_COMM_DOUBLE, SL_COMM_MAX, NULL);
	return (int)v;
}

/* Every phase's largest value over the ranks, into x (each rank's own on entry). */
static void rank_max_phases(struct rank *r, double x[PHASES])
{
	if (!r->comm) {
		struct group *g = r->g;
		memcpy(g->phase_values[r->id], x, sizeof(g->phase_values[r->id]));
		pthread_barrier_wait(&g->barrier);
		for (int k = 0; k < g->tp; k++)
			for (int p = 0; p < PHASES; p++)
				x[p] = fmax(x[p], g->phase_values[k][p]);
		pthread_barrier_wait(&g->barrier);
		return;
	}
	sl_comm_allreduce(r->comm, &r->comm->world, x, PHASES, SL_COMM_DOUBLE, SL_COMM_MAX, NULL);
}

/* A sum or max in rank order, so every rank gets the same bits (what the runtime's MPI
 * all-reduce guarantees as well). Rank 0 reduces into a shared buffer; all copy it out. */
static int reduce(float *buf, long long count, void *ctx, int is_max)
{
	struct rank *r = ctx;
	if (r->comm)
		return sl_comm_allreduce(r->comm, &r->comm->world, buf, count, SL_COMM_FLOAT,
					 is_max ? SL_COMM_MAX : SL_COMM_SUM, NULL);
	struct group *g = r->g;
	g->bufs[r->id] = buf;
	pthread_barrier_wait(&g->barrier);
	if (r->id == 0) {
		if (count > g->acc_count) {
			free(g->acc);
			g->acc = malloc((size_t)count * sizeof(float));
			g->acc_count = g->acc ? count : 0;
			if (!g->acc)
				g->failed = 1;
		}
		for (long long i = 0; g->acc && i < count; i++) {
			float a = g->bufs[0][i];
			for (int k = 1; k < g->tp; k++)
				a = is_max ? fmaxf(a, g->bufs[k][i]) : a + g->bufs[k][i];
			g->acc[i] = a;
		}
	}
	pthread_barrier_wait(&g->barrier);
	if (g->failed)
		return SL_ENOMEM;
	memcpy(buf, g->acc, (size_t)count * sizeof(float));
	pthread_barrier_wait(&g->barrier); /* nobody reuses acc before everyone copied */
	return 0;
}

static int allreduce_sum(float *buf, long long count, void *ctx) { return reduce(buf, count, ctx, 0); }
static int allreduce_max(float *buf, long long count, void *ctx) { return reduce(buf, count, ctx, 1); }

/* --- one rank ------------------------------------------------------------------------------ */

struct job {
	const struct sl_model_config *model;
	int mbs, tp, seq, threads, iterations; /* iterations = warmup + repeats */
	double min_sample_s;  /* a timed sample of a phase lasts at least this long */
	int calls[PHASES];    /* calls of the phase per timed sample (set after iteration 0) */
	int calls_known;      /* calls came from an earlier pass: iteration 0 does not count */
	double *times;        /* [iteration][PHASES], the slowest rank's per call (rank 0) */
	double *cpu_times;    /* [iteration][PHASES], the largest CPU time of a rank per call */
	size_t layer_param_bytes[3], layer_cache_bytes[3], workspace_bytes;
	double rss_bytes;
	double runtime_rss_bytes; /* rss_bytes less the tensors: process, libraries, MPI */
};

struct worker {
	struct job *job;
	struct rank id;
	int rc;
	struct sl_err err;
};

/* Seconds the whole machine's CPUs have been busy (/proc/stat, which network namespaces do not
 * separate): what runs beside the profiled ranks moves their times through shared caches and
 * cores, so each entry records how busy the machine was. 0 where it cannot be read. */
static double machine_busy_s(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		       &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8)
		return 0;
	/* user, nice, system, irq, softirq, steal: not idle (v[3]) or iowait (v[4]) */
	double busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]);
	return busy / (double)sysconf(_SC_CLK_TCK);
}

static double resident_bytes(void)
{
	long pages_total = 0, pages_resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2)
		pages_resident = 0;
	fclose(f);
	return (double)pages_resident * (double)sysconf(_SC_PAGESIZE);
}

static int step_update(struct sl_gpt_layer *layer, long long step)
{
	struct sl_param *params[SL_GPT_MAX_LAYER_PARAMS];
	for (int i = 0; i < layer->param_count; i++)
		params[i] = &layer->params[i];
	struct sl_adamw_config cfg = {0.9, 0.95, 1e-8, 0.1, 1.0};
	double norm = sl_grad_norm(params, layer->param_count);
	sl_adamw_apply(params, layer->param_count, &cfg, 1e-5, step, norm);
	return 0;
}

/* Block copy c of the `copies` the block phases cycle through: layers[1], then more[]. */
static struct sl_gpt_layer *block_copy(struct sl_gpt_layer *layers, struct sl_gpt_layer *more,
				       int copies, int c)
{
	int k = copies > 1 ? c % copies : 0;
	return k == 0 ? &layers[1] : &more[k - 1];
}

static void *run_rank(void *arg)
{
	struct worker *w = arg;
	struct job *j = w->job;
	struct rank *me = &w->id;
	const struct sl_model_config *m = j->model;
	int n = m->num_blocks;
	struct sl_err err = {0};
	struct sl_gpt_layer layers[3];
	memset(layers, 0, sizeof(layers));
	struct sl_gpt_workspace ws;
	memset(&ws, 0, sizeof(ws));
	size_t act = (size_t)j->mbs * (size_t)j->seq * (size_t)m->hidden;
	float *bufs = NULL;
	int32_t *tokens = NULL;
	int rc = 0, made = 0;
	int copies = n > 1 ? n : 1, copies_made = 0; /* block copies, below */
	struct sl_gpt_layer *block_copies = NULL;
	sl_cpu_set_threads(j->threads);
	struct sl_tp_comm comm = {allreduce_sum, allreduce_max, &w->id};
	for (int k = 0; k < 3 && !rc; k++) {
		int index = k == 0 ? 0 : (k == 1 ? 1 : n + 1);
		struct sl_gpt_layer_config cfg = {
			.kind = k == 0 ? SL_GPT_EMBEDDING : (k == 1 ? SL_GPT_BLOCK : SL_GPT_HEAD),
			.index = index, .num_blocks = n, .hidden = m->hidden, .heads = m->heads,
			.ffn_hidden = m->ffn_hidden, .max_seq_len = m->seq_len, .vocab = m->vocab,
			.tp = j->tp, .tp_rank = w->id.id, .own_wte = k == 2, .slots = 1, .comm = comm,
		};
		rc = sl_gpt_layer_init(&layers[k], &cfg, j->mbs, j->seq, &err);
		if (!rc) {
			made++;
			sl_gpt_layer_init_weights(&layers[k], SEED);
		}
	}
	/* A stage runs its blocks one after the other, each with its own weights, so a block's
	 * weights are not in the cache when it runs again; one block called over and over keeps
	 * them there. The block phases cycle through as many copies as the model has blocks. */
	if (copies > 1)
		block_copies = calloc((size_t)copies - 1, sizeof(*block_copies));
	if (!rc && copies > 1 && !block_copies)
		rc = sl_err_set(&err, SL_ENOMEM, "cannot allocate %d block copies", copies - 1);
	for (int k = 1; k < copies && !rc; k++) {
		struct sl_gpt_layer_config cfg = {
			.kind = SL_GPT_BLOCK, .index = k + 1, .num_blocks = n, .hidden = m->hidden,
			.heads = m->heads, .ffn_hidden = m->ffn_hidden, .max_seq_len = m->seq_len,
			.vocab = m->vocab, .tp = j->tp, .tp_rank = w->id.id, .slots = 1, .comm = comm,
		};
		rc = sl_gpt_layer_init(&block_copies[k - 1], &cfg, j->mbs, j->seq, &err);
		if (!rc) {
			copies_made++;
			sl_gpt_layer_init_weights(&block_copies[k - 1], SEED);
		}
	}
	if (!rc)
		rc = sl_gpt_workspace_init(&ws, layers, 3, j->threads, &err);
	/* emb out | block out | head grad_input | block grad_input */
	bufs = rc ? NULL : sl_alloc_floats(4 * act);
	tokens = rc ? NULL : malloc(2 * (size_t)j->mbs * (size_t)j->seq * sizeof(int32_t));
	if (!rc && (!bufs || !tokens))
		rc = sl_err_set(&err, SL_ENOMEM, "cannot allocate activations for micro-batch %d x %d",
				j->mbs, j->seq);
	/* every rank must agree to go on: a rank that failed would leave the others waiting in
	 * an all-reduce */
	if (rank_max_int(me, rc != 0)) {
		if (!rc)
			rc = SL_EIO; /* another rank's error is reported */
		goto out;
	}
	struct sl_gpt_microbatch mb = {j->mbs, j->seq, tokens, tokens + (size_t)j->mbs * j->seq};
	struct sl_rng rng;
	sl_rng_seed(&rng, SEED); /* the same tokens on every rank */
	for (size_t i = 0; i < 2 * (size_t)j->mbs * (size_t)j->seq; i++)
		tokens[i] = (int32_t)sl_rng_below(&rng, (uint64_t)m->vocab);
	float *emb_out = bufs, *blk_out = bufs + act, *head_gin = bufs + 2 * act,
	      *blk_gin = bufs + 3 * act;
	for (int it = 0; it < j->iterations && !rc; it++) {
		double t[PHASES + 1], cpu[PHASES];
		double loss = 0;
		for (int p = 0; p < PHASES && !rc; p++) {
			rank_barrier(me);
			/* backward and update go over the copies a forward has filled */
			int forwarded = j->calls[F_BLK] < copies ? j->calls[F_BLK] : copies;
			t[p] = sl_now_s();
			cpu[p] = sl_clock_s(CLOCK_THREAD_CPUTIME_ID);
			/* iteration 0 counts the calls a sample needs: it calls the phase until
			 * min_sample_s has passed on rank 0 (which tells the others each time) */
			int counting = it == 0 && !j->calls_known;
			for (int c = 0; !rc && (counting || c < j->calls[p]); c++) {
			switch (p) {
			case F_EMB: rc = sl_gpt_layer_forward(&layers[0], &ws, &mb, NULL, emb_out, NULL, &err); break;
			case F_BLK: rc = sl_gpt_layer_forward(block_copy(layers, block_copies, copies, c), &ws, &mb, emb_out, blk_out, NULL, &err); break;
			case F_HEAD: rc = sl_gpt_layer_forward(&layers[2], &ws, &mb, blk_out, NULL, &loss, &err); break;
			case B_HEAD: rc = sl_gpt_layer_backward(&layers[2], &ws, &mb, blk_out, NULL, head_gin, 1.0f, &err); break;
			case B_BLK: rc = sl_gpt_layer_backward(block_copy(layers, block_copies, forwarded, c), &ws, &mb, emb_out, head_gin, blk_gin, 1.0f, &err); break;
			case B_EMB: rc = sl_gpt_layer_backward(&layers[0], &ws, &mb, NULL, blk_gin, NULL, 1.0f, &err); break;
			case U_EMB: rc = step_update(&layers[0], it + 1); break;
			case U_BLK: rc = step_update(block_copy(layers, block_copies, forwarded, c), it + 1); break;
			case U_HEAD: rc = step_update(&layers[2], it + 1); break;
			case R_ATT: sl_gpt_layer_recompute_attention(block_copy(layers, block_copies, forwarded, c), &mb); break;
			}
			if (counting) {
				int more = w->id.id == 0 && sl_now_s() - t[p] < j->min_sample_s &&
					   c + 1 < 1000;
				if (!rank_max_int(me, more)) {
					j->calls[p] = c + 1;
					counting = 0;
					break;
				}
			}
			}
			/* this rank's CPU for the phase, before it waits for the others */
			cpu[p] = sl_clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu[p];
		}
		rank_barrier(me);
		t[PHASES] = sl_now_s();
		if (!rc)
			rank_max_phases(me, cpu);
		/* the slowest rank's phase: phases start on a barrier, so the next barrier's time
		 * on rank 0 is the end of the slowest; rank 0 records its view */
		if (w->id.id == 0 && !rc)
			for (int p = 0; p < PHASES; p++)
				j->times[(size_t)it * PHASES + (size_t)p] = (t[p + 1] - t[p]) / j->calls[p];
		if (w->id.id == 0 && !rc)
			for (int p = 0; p < PHASES; p++)
				j->cpu_times[(size_t)it * PHASES + (size_t)p] = cpu[p] / j->calls[p];
		/* Iteration 0 set how many calls one timed sample makes (above), so that every
		 * sample lasts at least min_sample_s: a device that is a CPU quota runs in bursts of
		 * its cgroup period (10 ms on the testbed), and a phase shorter than that would be
		 * timed as either a burst or a burst plus a whole throttled gap. Counting call by
		 * call (not from one call's time) keeps an unrepresentative first call from
		 * asking for a thousand slow ones. */
		/* a failed rank cannot stop the others mid-iteration without deadlock: layer errors
		 * here are all input errors found identically by every rank */
	}
	if (!rc && w->id.id == 0) {
		for (int k = 0; k < 3; k++) {
			j->layer_param_bytes[k] = layers[k].storage_floats * sizeof(float);
			j->layer_cache_bytes[k] = layers[k].cache_floats * sizeof(float);
		}
		j->workspace_bytes = ws.floats * sizeof(float) + 4 * act * sizeof(float);
	}
	rank_barrier(me);
	if (w->id.id == 0) {
		j->rss_bytes = resident_bytes();
		double tensors = (double)j->workspace_bytes;
		for (int k = 0; k < 3; k++)
			tensors += (double)(j->layer_param_bytes[k] + j->layer_cache_bytes[k]);
		tensors += copies_made * (double)(j->layer_param_bytes[1] + j->layer_cache_bytes[1]);
		j->runtime_rss_bytes = j->rss_bytes > tensors ? j->rss_bytes - tensors : 0;
	}
	rank_barrier(me);
out:
	free(bufs);
	free(tokens);
	sl_gpt_workspace_free(&ws);
	for (int k = 0; k < made; k++)
		sl_gpt_layer_free(&layers[k]);
	for (int k = 0; k < copies_made; k++)
		sl_gpt_layer_free(&block_copies[k]);
	free(block_copies);
	w->rc = rc;
	w->err = err;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of phase p over the timed iterations of samples ([iteration][PHASES], after
 * warmup), and its spread (max - min) / median; col is scratch of repeats doubles. */
static void median_of_repeats(const double *samples, int warmup, int repeats, int p, double *col,
			      double *median, double *spread)
{
	for (int r = 0; r < repeats; r++)
		col[r] = samples[(size_t)(warmup + r) * PHASES + (size_t)p];
	qsort(col, (size_t)repeats, sizeof(double), cmp_double);
	int h = repeats / 2;
	*median = repeats % 2 ? col[h] : 0.5 * (col[h - 1] + col[h]);
	*spread = *median > 0 ? (col[repeats - 1] - col[0]) / *median : 0;
}

/* Runs one (mbs, tp) measurement; j->times gets iterations x PHASES seconds. */
static int measure(struct job *j, struct sl_comm *comm, struct sl_err *err)
{
	/* The entries before this one freed their tensors, but malloc keeps what it freed below
	 * the heap's top resident, where it would count in this entry's runtime_rss_bytes (7.5 MB
	 * of gpt2-tiny's mbs 4 after mbs 1 and 2): give it back first. */
#ifdef __GLIBC__
	malloc_trim(0);
#endif
	if (comm) {
		struct worker w = {.job = j, .id = {.comm = comm, .id = comm->rank}};
		run_rank(&w);
		if (w.rc)
			*err = w.err;
		return w.rc;
	}
	struct group g = {.tp = j->tp};
	struct worker w[MAX_TP];
	pthread_t th[MAX_TP];
	pthread_barrier_init(&g.barrier, NULL, (unsigned)j->tp);
	int started = 0, rc = 0;
	for (int k = 0; k < j->tp; k++) {
		memset(&w[k], 0, sizeof(w[k]));
		w[k].job = j;
		w[k].id = (struct rank){&g, NULL, k};
	}
	for (int k = 1; k < j->tp; k++) {
		if (pthread_create(&th[k], NULL, run_rank, &w[k])) {
			rc = sl_err_set(err, SL_EIO, "cannot start TP rank %d: %s", k, strerror(errno));
			break;
		}
		started++;
	}
	if (rc) {
		/* the started ranks wait on the barrier for all tp: nothing safe to do but exit */
		return rc;
	}
	run_rank(&w[0]); /* rank 0 on this thread: its OpenMP pool is reused across entries */
	for (int k = 1; k <= started; k++)
		pthread_join(th[k], NULL);
	pthread_barrier_destroy(&g.barrier);
	free(g.acc);
	for (int k = 0; k < j->tp && !rc; k++)
		if (w[k].rc && w[k].rc != SL_EIO) {
			*err = w[k].err;
			rc = w[k].rc;
		}
	for (int k = 0; k < j->tp && !rc; k++)
		if (w[k].rc) {
			*err = w[k].err;
			rc = w[k].rc;
		}
	return rc;
}

static void iso_date(char *buf, size_t size)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *layer_memory(const struct job *j, int k)
{
	return json_pack("{s:I, s:I}", "params_bytes", (json_int_t)j->layer_param_bytes[k],
			 "activations_bytes", (json_int_t)j->layer_cache_bytes[k]);
}

int sl_profiler_run(const struct sl_profiler_options *o, json_t **out, struct sl_err *err)
{
	*out = NULL;
	struct sl_model_config model;
	int rc = sl_model_config_load(o->model, &model, err);
	if (rc)
		return rc;
	int seq = o->seq_len > 0 ? o->seq_len : model.seq_len;
	if (seq > model.seq_len)
		return sl_err_set(err, SL_EUSAGE, "--seq-len %d: model '%s' allows at most %d", seq,
				  model.name, model.seq_len);
	if (o->mbs_count < 1 || o->tp_count < 1 || o->repeats < 1 || o->threads < 1 ||
	    o->warmup < 0)
		return sl_err_set(err, SL_EUSAGE, "profiler: empty --mbs or --tp, or repeats/threads "
				  "below 1");
	for (int i = 0; i < o->tp_count; i++) {
		int tp = o->tp[i];
		if (tp > MAX_TP || model.heads % tp || model.ffn_hidden % tp || model.vocab < tp)
			return sl_err_set(err, SL_EUSAGE, "--tp %d: model '%s' has %d heads and "
					  "ffn_hidden %d: a TP degree must divide both (and be at most "
					  "%d)", tp, model.name, model.heads, model.ffn_hidden, MAX_TP);
	}
	if (o->comm && (o->tp_count != 1 || o->tp[0] != o->comm->size))
		return sl_err_set(err, SL_EUSAGE, "--tp: an MPI job of %d ranks profiles TP %d only "
				  "(one TP rank per MPI rank)", o->comm->size, o->comm->size);
	int L = model.num_blocks + 2;
	char host[256] = "unknown", date[32];
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = 0;
	iso_date(date, sizeof(date));
	json_t *root = json_object(), *entries_src = json_object();
	json_object_set_new(root, "schema", json_string(SL_PROFILE_SCHEMA));
	json_t *src = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:i, s:s}",
				"profiler", "sailor profile (our runtime's CPU layers, src/train)",
				"model", model.name, "device_type", o->gpu ? o->gpu : "",
				"host", host, "threads_per_rank", o->threads,
				"openblas_core", sl_cpu_blas_core(), "warmup", o->warmup,
				"repeats", o->repeats, "seq_len", seq, "date", date);
	json_object_set_new(src, "tp_ranks_as",
			    json_string(o->comm ? "MPI ranks of one host, all-reduce over MPI"
						: "threads with an in-process all-reduce"));
	/* On a device that is a CPU quota, a phase's wall time also depends on where its sample
	 * ends in the quota's periods (up to (1 - cores) x period). The CPU a rank spends is what
	 * the quota's budget pays for, and the replay model replays profile times as that CPU at
	 * the quota's rate (sim/replay_cpu_quota.c): so there the time kept is the rank's CPU
	 * time / cores. Measured on the testbed (bench/RESULTS.md) the two agree within 1-3%;
	 * neither repeats within 2% between bring-ups, for reasons the sample's end is not. */
	int cpu_basis = o->cpu_quota_cores > 0 && o->cpu_quota_cores < 1 && o->threads == 1;
	json_object_set_new(
		src, "statistic",
		json_string(cpu_basis ? "median over repeats of the largest CPU time of a TP rank / "
					"the device's CPU quota (cores), the time at the quota's "
					"average rate; median_wall_s: the slowest rank's wall time; "
					"spread = (max - min) / median"
				      : "median over repeats of the slowest TP rank's time; spread = "
					"(max - min) / median"));
	if (cpu_basis)
		json_object_set_new(src, "cpu_quota_cores", json_real(o->cpu_quota_cores));
	if (o->command)
		json_object_set_new(src, "command", json_string(o->command));
	int iterations = o->warmup + o->repeats;
	/* Interleaved passes: pass r times every entry's repeat r (after a warm-up of its own),
	 * so that a slow spell of the machine (a VM whose host is busy, bench/RESULTS.md) falls on
	 * a few samples of every entry, which their medians drop, instead of on every sample of
	 * the entries measured during it. Pass 0 also counts the calls a sample needs and takes
	 * the memory figures, as one run of all repeats did. */
	int E = o->mbs_count * o->tp_count;
	struct job *jobs = calloc((size_t)E, sizeof(*jobs));
	double *all_times = calloc((size_t)E * iterations * PHASES, sizeof(double));
	double *all_cpu = calloc((size_t)E * iterations * PHASES, sizeof(double));
	double *entry_wall = calloc((size_t)E, sizeof(double));
	double *entry_busy = calloc((size_t)E, sizeof(double));
	double *pass_times = calloc((size_t)(o->warmup + 1) * PHASES, sizeof(double));
	double *pass_cpu = calloc((size_t)(o->warmup + 1) * PHASES, sizeof(double));
	double *col = calloc((size_t)o->repeats, sizeof(double));
	if (!jobs || !all_times || !all_cpu || !entry_wall || !entry_busy || !pass_times ||
	    !pass_cpu || !col)
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	for (int r = 0; r < o->repeats && !rc; r++)
		for (int e = 0; e < E && !rc; e++) {
			int a = e / o->tp_count, b = e % o->tp_count;
			struct job j = {.model = &model, .mbs = o->mbs[a], .tp = o->tp[b], .seq = seq,
					.threads = o->threads, .iterations = o->warmup + 1,
					.min_sample_s = o->min_sample_s, .times = pass_times,
					.cpu_times = pass_cpu};
			for (int p = 0; p < PHASES; p++)
				j.calls[p] = r ? jobs[e].calls[p] : 1;
			j.calls_known = r > 0;
			double t0 = sl_now_s(), busy0 = machine_busy_s();
			rc = measure(&j, o->comm, err);
			entry_wall[e] += sl_now_s() - t0;
			entry_busy[e] += machine_busy_s() - busy0;
			if (rc)
				break;
			if (r == 0)
				jobs[e] = j;
			/* an entry's rows: the first pass's warm-up, then one timed repeat per pass
			 * (row warmup + r); pass 0 brings rows 0..warmup, a later pass its last row */
			size_t to = r == 0 ? 0 : (size_t)(o->warmup + r) * PHASES;
			size_t from = r == 0 ? 0 : (size_t)o->warmup * PHASES;
			size_t n = (size_t)(r == 0 ? o->warmup + 1 : 1) * PHASES * sizeof(double);
			memcpy(all_times + (size_t)e * iterations * PHASES + to, pass_times + from, n);
			memcpy(all_cpu + (size_t)e * iterations * PHASES + to, pass_cpu + from, n);
		}
	for (int a = 0; a < o->mbs_count && !rc; a++) {
		char mk[16];
		snprintf(mk, sizeof(mk), "%d", o->mbs[a]);
		json_t *by_tp = json_object();
		json_object_set_new(root, mk, by_tp);
		for (int b = 0; b < o->tp_count && !rc; b++) {
			int ei = a * o->tp_count + b;
			struct job j = jobs[ei];
			double *times = all_times + (size_t)ei * iterations * PHASES;
			double *cpu_times = all_cpu + (size_t)ei * iterations * PHASES;
			double busy_cores = entry_busy[ei] / fmax(entry_wall[ei], 1e-9);
			/* The quota is in force only where the ranks ran no faster than it allows
			 * (up to the 1 ms of a period Linux may carry over): a run of these ranks
			 * outside the testbed's cgroups is timed by the wall clock, as elsewhere. */
			double cpu_sum = 0, wall_sum = 0;
			for (int k = o->warmup * PHASES; k < iterations * PHASES; k++) {
				cpu_sum += cpu_times[k];
				wall_sum += times[k];
			}
			double cpu_per_wall = wall_sum > 0 ? cpu_sum / wall_sum : 0;
			int entry_cpu_basis = cpu_basis && cpu_per_wall < 1.5 * o->cpu_quota_cores;
			double med[PHASES], spread[PHASES], wall_med[PHASES], wall_spread[PHASES];
			for (int p = 0; p < PHASES; p++) {
				median_of_repeats(times, o->warmup, o->repeats, p, col, &wall_med[p],
						  &wall_spread[p]);
				if (entry_cpu_basis) {
					median_of_repeats(cpu_times, o->warmup, o->repeats, p, col,
							  &med[p], &spread[p]);
					med[p] /= o->cpu_quota_cores;
				} else {
					med[p] = wall_med[p];
					spread[p] = wall_spread[p];
				}
			}
			/* the SOSP'25 convention: the step of embedding + 2 blocks + head */
			double update = med[U_EMB] + 2 * med[U_BLK] + med[U_HEAD];
			json_t *layers = json_object();
			for (int l = 0; l < L; l++) {
				double f = l == 0 ? med[F_EMB] : (l == L - 1 ? med[F_HEAD] : med[F_BLK]);
				double bw = l == 0 ? med[B_EMB] : (l == L - 1 ? med[B_HEAD] : med[B_BLK]);
				char lk[16];
				snprintf(lk, sizeof(lk), "%d", l);
				json_object_set_new(layers, lk, json_pack("[f, f, f]", f, bw, update));
			}
			char tk[16], ek[32];
			snprintf(tk, sizeof(tk), "%d", o->tp[b]);
			json_object_set_new(by_tp, tk, layers);
			json_t *e = json_object(), *sp = json_object(), *md = json_object();
			for (int p = 0; p < PHASES; p++) {
				json_object_set_new(sp, phase_names[p], json_real(spread[p]));
				json_object_set_new(md, phase_names[p], json_real(med[p]));
			}
			double params = (double)(j.layer_param_bytes[0] + 2 * j.layer_param_bytes[1] +
						 j.layer_param_bytes[2]) / 16.0; /* 4 arrays of floats */
			json_object_set_new(e, "median_s", md);
			if (cpu_basis) {
				json_object_set_new(e, "time_basis",
						    json_string(entry_cpu_basis ? "cpu / quota cores"
							 : "wall: the ranks ran faster than the "
							   "quota allows, so it was not in force"));
				json_object_set_new(e, "cpu_per_wall", json_real(cpu_per_wall));
				json_t *wm = json_object(), *ws = json_object();
				for (int p = 0; p < PHASES; p++) {
					json_object_set_new(wm, phase_names[p], json_real(wall_med[p]));
					json_object_set_new(ws, phase_names[p], json_real(wall_spread[p]));
				}
				json_object_set_new(e, "median_wall_s", wm);
				json_object_set_new(e, "spread_wall", ws);
			}
			json_t *calls = json_object();
			for (int p = 0; p < PHASES; p++)
				json_object_set_new(calls, phase_names[p], json_integer(j.calls[p]));
			json_object_set_new(e, "calls_per_sample", calls);
			json_object_set_new(e, "spread", sp);
			json_object_set_new(e, "update_s_per_param",
					    json_real(params > 0 ? update / params : 0));
			json_t *mem = json_pack("{s:o, s:o, s:o, s:I, s:f, s:f, s:b}", "embedding",
						layer_memory(&j, 0), "block", layer_memory(&j, 1),
						"head", layer_memory(&j, 2), "workspace_bytes",
						(json_int_t)j.workspace_bytes, "rss_bytes", j.rss_bytes,
						"runtime_rss_bytes", j.runtime_rss_bytes,
						"mpi_ranks", o->comm != NULL);
			json_object_set_new(e, "memory", mem);
			json_object_set_new(e, "wall_s", json_real(entry_wall[ei]));
			/* the ranks' own share is at most tp x the quota (or tp x threads) */
			json_object_set_new(e, "machine_busy_cores", json_real(busy_cores));
			/* entries of several runs may share a file (sl_profiler_write merges): each
			 * keeps what it was measured with */
			json_object_set_new(e, "date", json_string(date));
			json_object_set_new(e, "threads_per_rank", json_integer(o->threads));
			if (o->command)
				json_object_set_new(e, "command", json_string(o->command));
			snprintf(ek, sizeof(ek), "mbs %d tp %d", o->mbs[a], o->tp[b]);
			json_object_set_new(entries_src, ek, e);
			if (o->verbose)
				fprintf(stderr, "profile: %s mbs %d tp %d: block forward %.3f ms, "
					"backward %.3f ms, update %.3f ms (%.1f s)\n", model.name,
					o->mbs[a], o->tp[b], 1e3 * med[F_BLK], 1e3 * med[B_BLK],
					1e3 * update, entry_wall[ei]);
		}
	}
	/* A rank on a CPU quota waits asleep, but each test and wake-up costs CPU its budget pays
	 * for: measure it here, on the device, for the simulator (time_replay.c). */
	if (!rc && o->comm && o->comm->idle_wait == SL_COMM_WAIT_SLEEP && o->comm->rank == 0) {
		struct sl_comm_idle_cost cost;
		rc = sl_comm_idle_wait_probe(o->comm, fmax(o->min_sample_s, 0.2), &cost, err);
		if (!rc)
			json_object_set_new(
				src, "idle_wait",
				json_pack("{s:s, s:f, s:f, s:I}", "statistic",
					  "a receive nothing matches, waited on asleep (comm.h) at "
					  "the longest sleep: process CPU and time past the sleep, per "
					  "test",
					  "cpu_per_test_s", cost.cpu_per_test_s, "late_per_test_s",
					  cost.late_per_test_s, "tests", (json_int_t)cost.tests));
	}
	free(jobs);
	free(all_times);
	free(all_cpu);
	free(entry_wall);
	free(entry_busy);
	free(pass_times);
	free(pass_cpu);
	free(col);
	json_object_set_new(src, "entries", entries_src);
	json_object_set_new(root, "source", src);
	if (rc) {
		json_decref(root);
		return rc;
	}
	*out = root;
	return 0;
}

/* Creates path and every missing folder above it (as mkdir -p): -o may name a new tree. */
static int make_dir(const char *path, struct sl_err *err)
{
	char part[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(part))
		return sl_err_set(err, SL_EINPUT, "output folder name too long: '%s'", path);
	memcpy(part, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (part[i] != '/' && part[i] != '\0')
			continue;
		char end = part[i];
		part[i] = '\0';
		if (mkdir(part, 0777) != 0 && errno != EEXIST)
			return sl_err_set(err, SL_EIO, "cannot create folder '%s': %s", part,
					  strerror(errno));
		part[i] = end;
	}
	return 0;
}

/* Copies into profile the (mbs, tp) entries of the profile already at path that profile lacks,
 * with their provenance, so that a device type can be profiled one TP degree at a time (each in
 * the CPU share of that many devices: scripts/testbed exec --devices N). A file that is not a
 * sailor profile is refused rather than overwritten. */
static int merge_existing(json_t *profile, const char *path, struct sl_err *err)
{
	if (access(path, F_OK) != 0)
		return 0;
	json_error_t jerr;
	json_t *old = json_load_file(path, 0, &jerr);
	const char *schema = old ? json_string_value(json_object_get(old, "schema")) : NULL;
	if (!old || !schema || strcmp(schema, SL_PROFILE_SCHEMA)) {
		json_decref(old);
		return sl_err_set(err, SL_EINPUT, "'%s' exists and is not a %s file written by "
				  "`sailor profile`: move it away or choose another -o", path,
				  SL_PROFILE_SCHEMA);
	}
	const char *key;
	json_t *by_tp;
	json_object_foreach(old, key, by_tp) {
		if (!strcmp(key, "schema") || !strcmp(key, "source") || !json_is_object(by_tp))
			continue;
		json_t *mine = json_object_get(profile, key);
		if (!mine) {
			mine = json_object();
			json_object_set_new(profile, key, mine);
		}
		const char *tk;
		json_t *layers;
		json_object_foreach(by_tp, tk, layers) {
			if (json_object_get(mine, tk))
				continue;
			json_object_set(mine, tk, layers);
			char ek[64];
			snprintf(ek, sizeof(ek), "mbs %s tp %s", key, tk);
			json_t *e = json_object_get(json_object_get(json_object_get(old, "source"),
								    "entries"), ek);
			json_t *entries = json_object_get(json_object_get(profile, "source"), "entries");
			if (e && entries)
				json_object_set(entries, ek, e);
		}
	}
	json_decref(old);
	return 0;
}

int sl_profiler_write(json_t *profile, const char *dir, const char *model,
		      const char *gpu, char *path_out, size_t path_size, struct sl_err *err)
{
	char sub[4096], path[4200];
	if (snprintf(sub, sizeof(sub), "%s/%s", dir, model) >= (int)sizeof(sub))
		return sl_err_set(err, SL_EINPUT, "-o '%s': path too long", dir);
	int rc = make_dir(dir, err);
	if (!rc)
		rc = make_dir(sub, err);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s.json", sub, gpu);
	rc = merge_existing(profile, path, err);
	if (rc)
		return rc;
	/* temporary file, fsync, rename (util/atomic_file): never half a profile */
	struct sl_atomic_file af;
	rc = sl_atomic_open(&af, path, "profile", err);
	if (rc)
		return rc;
	if (sl_json_print(af.f, profile)) {
		sl_atomic_abort(&af);
		return sl_err_set(err, SL_EIO, "cannot write profile '%s'", path);
	}
	rc = sl_atomic_commit(&af, err);
	if (rc)
		return rc;
	if (path_out)
		snprintf(path_out, path_size, "%s", path);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return x < y ? -1 : x > y;
}

int sl_profiler_parse_list(const char *text, int min, int max, int *out, int max_count,
			   int *count, struct sl_err *err)
{
	*count = 0;
	const char *p = text;
	while (*p) {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (end == p || errno || v < min || v > max || (*end && *end != ','))
			return sl_err_set(err, SL_EUSAGE, "'%s': expected comma-separated whole "
					  "numbers from %d to %d, e.g. 1,2,4", text, min, max);
		for (int i = 0; i < *count; i++)
			if (out[i] == (int)v)
				return sl_err_set(err, SL_EUSAGE, "'%s': %ld is listed twice", text, v);
		if (*count == max_count)
			return sl_err_set(err, SL_EUSAGE, "'%s': at most %d values", text, max_count);
		out[(*count)++] = (int)v;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return sl_err_set(err, SL_EUSAGE, "'%s': ends with a comma", text);
	}
	if (*count == 0)
		return sl_err_set(err, SL_EUSAGE, "'%s': expected at least one number", text);
	qsort(out, (size_t)*count, sizeof(int), cmp_int);
	return 0;
}
