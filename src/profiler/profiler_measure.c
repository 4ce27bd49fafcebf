/* One (micro-batch size, TP degree) measurement of the layer profiler (profiler_measure.h):
 * its TP ranks, threads of this process with an in-process all-reduce or the MPI ranks of the
 * job, each building the model's three kinds of layer and timing every phase of each
 * iteration.
 * Invariants: every rank of a group runs the same sequence of layer calls (the all-reduces
 * inside the layers pair up) and of barriers, after a failed iteration too; a phase's time is
 * taken between two barriers, so it is the slowest rank's. */
#include "profiler/profiler_measure.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/comm.h"
#include "train/cpu/kernels.h"
#include "train/gpt_layers.h"
#include "train/optimizer.h"
#include "train/rng.h"
#include "util/clock.h"

#define SEED 4242

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

struct worker {
	struct job *job;
	struct rank id;
	int rc;
	struct sl_err err;
};

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

/* One rank's tensors: the three kinds of layer, the block copies the block phases cycle
 * through, the workspace, the activations and the tokens. */
struct rank_tensors {
	struct sl_gpt_layer layers[3];     /* embedding, block, head */
	int made;                          /* layers initialised, from layers[0] */
	int copies;                        /* blocks the block phases cycle through (block_copy) */
	struct sl_gpt_layer *block_copies; /* the copies - 1 beyond layers[1] */
	int copies_made;                   /* block_copies initialised */
	struct sl_gpt_workspace ws;
	size_t act;                        /* floats of one activation */
	float *bufs;    /* emb out | block out | head grad_input | block grad_input */
	int32_t *tokens;                   /* the tokens, then the targets */
};

/* Builds this rank's tensors (me: its rank in the TP group, the all-reduces' context); after a
 * failure what was made is left for rank_tensors_free. */
static int rank_tensors_init(struct rank_tensors *rt, const struct job *j, struct rank *me,
			     struct sl_err *err)
{
	const struct sl_model_config *m = j->model;
	int n = m->num_blocks;
	memset(rt, 0, sizeof(*rt));
	rt->act = (size_t)j->mbs * (size_t)j->seq * (size_t)m->hidden;
	rt->copies = n > 1 ? n : 1; /* block copies, below */
	int rc = 0;
	struct sl_tp_comm comm = {allreduce_sum, allreduce_max, me};
	for (int k = 0; k < 3 && !rc; k++) {
		int index = k == 0 ? 0 : (k == 1 ? 1 : n + 1);
		struct sl_gpt_layer_config cfg = {
			.kind = k == 0 ? SL_GPT_EMBEDDING : (k == 1 ? SL_GPT_BLOCK : SL_GPT_HEAD),
			.index = index, .num_blocks = n, .hidden = m->hidden, .heads = m->heads,
			.ffn_hidden = m->ffn_hidden, .max_seq_len = m->seq_len, .vocab = m->vocab,
			.tp = j->tp, .tp_rank = me->id, .own_wte = k == 2, .slots = 1, .comm = comm,
		};
		rc = sl_gpt_layer_init(&rt->layers[k], &cfg, j->mbs, j->seq, err);
		if (!rc) {
			rt->made++;
			sl_gpt_layer_init_weights(&rt->layers[k], SEED);
		}
	}
	/* A stage runs its blocks one after the other, each with its own weights, so a block's
	 * weights are not in the cache when it runs again; one block called over and over keeps
	 * them there. The block phases cycle through as many copies as the model has blocks. */
	if (rt->copies > 1)
		rt->block_copies = calloc((size_t)rt->copies - 1, sizeof(*rt->block_copies));
	if (!rc && rt->copies > 1 && !rt->block_copies)
		rc = sl_err_set(err, SL_ENOMEM, "cannot allocate %d block copies", rt->copies - 1);
	for (int k = 1; k < rt->copies && !rc; k++) {
		struct sl_gpt_layer_config cfg = {
			.kind = SL_GPT_BLOCK, .index = k + 1, .num_blocks = n, .hidden = m->hidden,
			.heads = m->heads, .ffn_hidden = m->ffn_hidden, .max_seq_len = m->seq_len,
			.vocab = m->vocab, .tp = j->tp, .tp_rank = me->id, .slots = 1, .comm = comm,
		};
		rc = sl_gpt_layer_init(&rt->block_copies[k - 1], &cfg, j->mbs, j->seq, err);
		if (!rc) {
			rt->copies_made++;
			sl_gpt_layer_init_weights(&rt->block_copies[k - 1], SEED);
		}
	}
	if (!rc)
		rc = sl_gpt_workspace_init(&rt->ws, rt->layers, 3, j->threads, err);
	rt->bufs = rc ? NULL : sl_alloc_floats(4 * rt->act);
	rt->tokens = rc ? NULL : malloc(2 * (size_t)j->mbs * (size_t)j->seq * sizeof(int32_t));
	if (!rc && (!rt->bufs || !rt->tokens))
		rc = sl_err_set(err, SL_ENOMEM, "cannot allocate activations for micro-batch %d x %d",
				j->mbs, j->seq);
	return rc;
}

static void rank_tensors_free(struct rank_tensors *rt)
{
	free(rt->bufs);
	free(rt->tokens);
	sl_gpt_workspace_free(&rt->ws);
	for (int k = 0; k < rt->made; k++)
		sl_gpt_layer_free(&rt->layers[k]);
	for (int k = 0; k < rt->copies_made; k++)
		sl_gpt_layer_free(&rt->block_copies[k]);
	free(rt->block_copies);
}

/* One call of phase p, the c-th of its sample: the block phases take block copy c, forward
 * cycling through all copies, backward and update through the `forwarded` a forward filled;
 * step is the AdamW step of the update phases. */
static int call_phase(struct rank_tensors *rt, int p, int c, int forwarded,
		      const struct sl_gpt_microbatch *mb, long long step, double *loss,
		      struct sl_err *err)
{
	struct sl_gpt_layer *layers = rt->layers, *more = rt->block_copies;
	struct sl_gpt_workspace *ws = &rt->ws;
	size_t act = rt->act;
	float *emb_out = rt->bufs, *blk_out = rt->bufs + act, *head_gin = rt->bufs + 2 * act,
	      *blk_gin = rt->bufs + 3 * act;
	switch (p) {
	case F_EMB: return sl_gpt_layer_forward(&layers[0], ws, mb, NULL, emb_out, NULL, err);
	case F_BLK: return sl_gpt_layer_forward(block_copy(layers, more, rt->copies, c), ws, mb, emb_out, blk_out, NULL, err);
	case F_HEAD: return sl_gpt_layer_forward(&layers[2], ws, mb, blk_out, NULL, loss, err);
	case B_HEAD: return sl_gpt_layer_backward(&layers[2], ws, mb, blk_out, NULL, head_gin, 1.0f, err);
	case B_BLK: return sl_gpt_layer_backward(block_copy(layers, more, forwarded, c), ws, mb, emb_out, head_gin, blk_gin, 1.0f, err);
	case B_EMB: return sl_gpt_layer_backward(&layers[0], ws, mb, NULL, blk_gin, NULL, 1.0f, err);
	case U_EMB: return step_update(&layers[0], step);
	case U_BLK: return step_update(block_copy(layers, more, forwarded, c), step);
	case U_HEAD: return step_update(&layers[2], step);
	case R_ATT: sl_gpt_layer_recompute_attention(block_copy(layers, more, forwarded, c), mb); return 0;
	}
	return 0;
}

/* Phase p of iteration it on this rank, from a barrier: its calls of one sample; *start_s gets
 * when it started, *cpu_s this rank's CPU for it, taken before it waits for the others. */
static int run_phase(struct worker *w, struct rank_tensors *rt, const struct sl_gpt_microbatch *mb,
		     int it, int p, double *loss, double *start_s, double *cpu_s, struct sl_err *err)
{
	struct job *j = w->job;
	struct rank *me = &w->id;
	int rc = 0;
	rank_barrier(me);
	/* backward and update go over the copies a forward has filled */
	int forwarded = j->calls[F_BLK] < rt->copies ? j->calls[F_BLK] : rt->copies;
	*start_s = sl_now_s();
	*cpu_s = sl_clock_s(CLOCK_THREAD_CPUTIME_ID);
	/* iteration 0 counts the calls a sample needs: it calls the phase until min_sample_s has
	 * passed on rank 0 (which tells the others each time) */
	int counting = it == 0 && !j->calls_known;
	for (int c = 0; !rc && (counting || c < j->calls[p]); c++) {
		rc = call_phase(rt, p, c, forwarded, mb, it + 1, loss, err);
		if (counting) {
			int more = w->id.id == 0 && sl_now_s() - *start_s < j->min_sample_s &&
				   c + 1 < 1000;
			if (!rank_max_int(me, more)) {
				j->calls[p] = c + 1;
				counting = 0;
				break;
			}
		}
	}
	/* this rank's CPU for the phase, before it waits for the others */
	*cpu_s = sl_clock_s(CLOCK_THREAD_CPUTIME_ID) - *cpu_s;
	return rc;
}

/* Iteration it: every phase in turn; rank 0 records each phase's time per call, the slowest
 * rank's, and its CPU time per call, the largest rank's. */
static int run_iteration(struct worker *w, struct rank_tensors *rt,
			 const struct sl_gpt_microbatch *mb, int it, struct sl_err *err)
{
	struct job *j = w->job;
	struct rank *me = &w->id;
	double t[PHASES + 1], cpu[PHASES];
	double loss = 0;
	int rc = 0;
	for (int p = 0; p < PHASES && !rc; p++)
		rc = run_phase(w, rt, mb, it, p, &loss, &t[p], &cpu[p], err);
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
	/* Iteration 0 set how many calls one timed sample makes (run_phase), so that every
	 * sample lasts at least min_sample_s: a device that is a CPU quota runs in bursts of
	 * its cgroup period (10 ms on the testbed), and a phase shorter than that would be
	 * timed as either a burst or a burst plus a whole throttled gap. Counting call by
	 * call (not from one call's time) keeps an unrepresentative first call from
	 * asking for a thousand slow ones. */
	/* a failed rank cannot stop the others mid-iteration without deadlock: layer errors
	 * here are all input errors found identically by every rank */
	return rc;
}

/* Rank 0 records the entry's memory: each kind of layer's parameters and activation cache, the
 * workspace, and the resident set less every tensor (the process, libraries, MPI). Every rank
 * takes part in its barriers, after a failed iteration too. */
static void record_memory(struct worker *w, const struct rank_tensors *rt, int rc)
{
	struct job *j = w->job;
	if (!rc && w->id.id == 0) {
		for (int k = 0; k < 3; k++) {
			j->layer_param_bytes[k] = rt->layers[k].storage_floats * sizeof(float);
			j->layer_cache_bytes[k] = rt->layers[k].cache_floats * sizeof(float);
		}
		j->workspace_bytes = rt->ws.floats * sizeof(float) + 4 * rt->act * sizeof(float);
	}
	rank_barrier(&w->id);
	if (w->id.id == 0) {
		j->rss_bytes = resident_bytes();
		double tensors = (double)j->workspace_bytes;
		for (int k = 0; k < 3; k++)
			tensors += (double)(j->layer_param_bytes[k] + j->layer_cache_bytes[k]);
		tensors += rt->copies_made * (double)(j->layer_param_bytes[1] + j->layer_cache_bytes[1]);
		j->runtime_rss_bytes = j->rss_bytes > tensors ? j->rss_bytes - tensors : 0;
	}
	rank_barrier(&w->id);
}

/* One TP rank of the measurement, on its thread or as this MPI rank: builds its tensors, runs
 * the iterations, records the memory; w->rc and w->err get how it ended. */
static void *run_rank(void *arg)
{
	struct worker *w = arg;
	struct job *j = w->job;
	struct rank *me = &w->id;
	struct sl_err err = {0};
	struct rank_tensors rt;
	int rc = sl_cpu_set_threads(j->threads, &err);
	if (!rc)
		rc = rank_tensors_init(&rt, j, me, &err);
	/* every rank must agree to go on: a rank that failed would leave the others waiting in
	 * an all-reduce */
	if (rank_max_int(me, rc != 0)) {
		if (!rc)
			rc = SL_EIO; /* another rank's error is reported */
	} else {
		struct sl_gpt_microbatch mb = {j->mbs, j->seq, rt.tokens,
					       rt.tokens + (size_t)j->mbs * j->seq};
		struct sl_rng rng;
		sl_rng_seed(&rng, SEED); /* the same tokens on every rank */
		for (size_t i = 0; i < 2 * (size_t)j->mbs * (size_t)j->seq; i++)
			rt.tokens[i] = (int32_t)sl_rng_below(&rng, (uint64_t)j->model->vocab);
		for (int it = 0; it < j->iterations && !rc; it++)
			rc = run_iteration(w, &rt, &mb, it, &err);
		record_memory(w, &rt, rc);
	}
	rank_tensors_free(&rt);
	w->rc = rc;
	w->err = err;
	return NULL;
}

int sl_profiler_measure(struct job *j, struct sl_comm *comm, struct sl_err *err)
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
