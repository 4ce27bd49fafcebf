/* Distributed checkpoints (rank_checkpoint.h).
 * Invariants: only rank 0 touches the checkpoint directory while saving (one writer, the atomic
 * rename of checkpoint.c); a save's outcome is agreed by an all-reduce so no rank continues
 * believing a checkpoint exists that does not. A snapshot travels with SNAPSHOT_TAG on the world
 * communicator, which no schedule message uses; the gather completes before the save returns. */
#include "runtime/rank_checkpoint.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "train/gpt_layers.h"
#include "util/clock.h"

/* How much nicer than the ranks the persist thread is (nice values run to 19, the lowest). */
#define PERSIST_NICE 10

int sl_rank_checkpoint_whole_model_init(struct sl_gpt *whole, const struct sl_model_config *model,
			     struct sl_err *err)
{
	return sl_gpt_init(whole, model, 0, model->num_blocks + 1, 1, 1, 1, 0, NULL, 1, err);
}

/* A shadow stage is never run: its TP hooks only have to exist for the layers to build. */
static int never_called(float *buf, long long count, void *ctx) { return SL_EIO; }

/* Copies a shard to its whole-tensor place in runs of contiguous elements (the mapping of
 * sl_param_full_index: along shard_dim, each of the shard_parts parts holds shard_len
 * consecutive indices starting at shard_start of that part). */
static void place_whole(float *whole, const float *shard, const struct sl_param *p)
{
	if (p->shard_dim < 0 || p->tp <= 1) {
		memcpy(whole, shard, (size_t)p->numel * sizeof(float));
		return;
	}
	long long part_full = p->full_shape[p->shard_dim] / p->shard_parts;
	long long cols = p->shape[1], full_cols = p->full_shape[1];
	if (p->shard_dim == 1) {
		for (long long r = 0; r < p->shape[0]; r++)
			for (int part = 0; part < p->shard_parts; part++)
				memcpy(whole + r * full_cols + part * part_full + p->shard_start,
				       shard + r * cols + part * p->shard_len,
				       (size_t)p->shard_len * sizeof(float));
	} else {
		for (int part = 0; part < p->shard_parts; part++)
			memcpy(whole + (part * part_full + p->shard_start) * full_cols,
			       shard + part * p->shard_len * cols,
			       (size_t)(p->shard_len * cols) * sizeof(float));
	}
}

/* Snapshot messages use one tag above every schedule tag (schedule.h keeps those below
 * 32000), so a snapshot never matches a step's activation or gradient. */
#define SNAPSHOT_TAG 32100
/* MPI counts are ints: a snapshot goes in pieces of at most this many floats. */
#define SNAPSHOT_PIECE (1LL << 28)

/* Where one sender's snapshot goes: its parameters in its own order (the order a stage built
 * at its (tp, TP rank) has), each sent as value, exp_avg, exp_avg_sq. */
struct sender {
	int rank;
	int count;
	struct sl_param *layout;     /* descriptions only (no arrays) */
	struct sl_param **dest;      /* the same tensor in the whole model */
	long long floats;            /* 3 x the sum of numel */
	float *staging;              /* rank 0: the snapshot received (its own: snap.buf) */
};

/* This process's snapshot state, built at the first save and kept (the shapes never change
 * within a job): every pipeline-0 rank has `buf` for its own shards; rank 0 also has one
 * sender per TP rank of each stage of pipeline 0, and the staging buffers they arrive in. The
 * persist thread places staging into the whole model and writes it; the next save waits for
 * it before any of these buffers is reused. */
static struct {
	int ready;
	const struct sl_gpt *whole;
	float *buf;
	long long floats;
	int sender_count;
	struct sender *senders;
} snap;

static void snapshot_release(void)
{
	for (int i = 0; i < snap.sender_count; i++) {
		struct sender *s = &snap.senders[i];
		free(s->layout);
		free(s->dest);
		if (s->staging != snap.buf)
			free(s->staging);
	}
	free(snap.senders);
	free(snap.buf);
	memset(&snap, 0, sizeof(snap));
}

static long long snapshot_floats(const struct sl_gpt *g)
{
	long long n = 0;
	for (int i = 0; i < g->param_count; i++)
		n += 3 * g->params[i]->numel;
	return n;
}

/* Rank 0: the layout of TP rank t of replica (k, 0), from a shadow of that stage built at the
 * sender's (tp, TP rank), the description the sender has. Once per job. */
static int sender_init(struct sender *s, const struct sl_role_table *table, struct sl_gpt *whole,
		       int k, int t, struct sl_err *err)
{
	const struct sl_role *src = sl_role_of(table, k, 0, t);
	struct sl_gpt shadow;
	struct sl_tp_comm hooks = {.allreduce_sum = never_called, .allreduce_max = never_called};
	int rc = sl_gpt_init(&shadow, &whole->model, src->first_layer, src->last_layer, 1, 1,
			     src->tp, src->tp_rank, &hooks, 1, err);
	if (rc)
		return rc;
	s->rank = src->rank;
	s->count = shadow.param_count;
	s->layout = calloc((size_t)s->count + 1, sizeof(*s->layout));
	s->dest = calloc((size_t)s->count + 1, sizeof(*s->dest));
	if (!s->layout || !s->dest)
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	for (int i = 0; i < s->count && !rc; i++) {
		s->layout[i] = *shadow.params[i];
		s->layout[i].value = s->layout[i].grad = NULL;
		s->layout[i].exp_avg = s->layout[i].exp_avg_sq = NULL;
		s->floats += 3 * s->layout[i].numel;
		s->dest[i] = sl_gpt_find_param(whole, s->layout[i].name);
		if (!s->dest[i])
			rc = sl_err_set(err, SL_EINPUT, "checkpoint: tensor '%s' of stage %d has no "
					"place in the whole model", s->layout[i].name, k);
	}
	sl_gpt_free(&shadow);
	return rc;
}

static int snapshot_init(struct sl_comm *comm, const struct sl_role_table *table,
			 const struct sl_gpt *local, struct sl_gpt *whole, struct sl_err *err)
{
	if (snap.ready && snap.whole == whole)
		return 0;
	snapshot_release();
	const struct sl_role *me = &table->roles[comm->rank];
	int rc = 0;
	if (me->pipeline == 0) {
		snap.floats = snapshot_floats(local);
		snap.buf = malloc((size_t)(snap.floats > 0 ? snap.floats : 1) * sizeof(float));
		if (!snap.buf)
			rc = sl_err_set(err, SL_ENOMEM, "out of memory for the checkpoint snapshot "
					"(%lld floats)", snap.floats);
	}
	if (!rc && comm->rank == 0) {
		int n = 0;
		for (int k = 0; k < table->num_stages; k++)
			n += sl_role_of(table, k, 0, 0)->tp;
		snap.senders = calloc((size_t)n, sizeof(*snap.senders));
		if (!snap.senders)
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
		for (int k = 0; k < table->num_stages && !rc; k++)
			for (int t = 0; t < sl_role_of(table, k, 0, 0)->tp && !rc; t++) {
				struct sender *s = &snap.senders[snap.sender_count++];
				rc = sender_init(s, table, whole, k, t, err);
				if (!rc && s->rank == 0)
					s->staging = snap.buf;
				else if (!rc)
					s->staging = malloc((size_t)s->floats * sizeof(float));
				if (!rc && !s->staging)
					rc = sl_err_set(err, SL_ENOMEM, "out of memory for the checkpoint "
							"staging of rank %d", s->rank);
			}
	}
	if (rc) {
		snapshot_release();
		return rc;
	}
	snap.ready = 1;
	snap.whole = whole;
	return 0;
}

static int transfer(struct sl_comm *comm, float *buf, long long floats, int peer, int send,
		    struct sl_err *err)
{
	int rc = 0;
	for (long long off = 0; off < floats && !rc; off += SNAPSHOT_PIECE) {
		long long n = floats - off < SNAPSHOT_PIECE ? floats - off : SNAPSHOT_PIECE;
		struct sl_comm_request req = {0};
		rc = send ? sl_comm_isend(comm, buf + off, n, SL_COMM_FLOAT, peer, SNAPSHOT_TAG, &req,
					  err)
			  : sl_comm_irecv(comm, buf + off, n, SL_COMM_FLOAT, peer, SNAPSHOT_TAG, &req,
					  err);
		if (!rc)
			rc = sl_comm_wait(comm, &req, err);
	}
	return rc;
}

/* The snapshot (CheckFreq's "snapshot" phase, the part training waits for): every rank of
 * pipeline 0 copies its shards and moments into its snapshot buffer in one pass and sends it to
 * rank 0 as one message, which lands in that sender's staging buffer. Placing the shards into the
 * whole model is left to place_all (in the persist, off the training's path). */
static int gather(struct sl_comm *comm, const struct sl_role_table *table,
		  const struct sl_gpt *local, struct sl_gpt *whole, struct sl_err *err)
{
	int rc = snapshot_init(comm, table, local, whole, err);
	const struct sl_role *me = &table->roles[comm->rank];
	if (!rc && me->pipeline == 0) {
		float *out = snap.buf;
		for (int i = 0; i < local->param_count; i++) {
			const struct sl_param *p = local->params[i];
			size_t bytes = (size_t)p->numel * sizeof(float);
			memcpy(out, p->value, bytes);
			memcpy(out + p->numel, p->exp_avg, bytes);
			memcpy(out + 2 * p->numel, p->exp_avg_sq, bytes);
			out += 3 * p->numel;
		}
		if (comm->rank != 0)
			rc = transfer(comm, snap.buf, snap.floats, 0, 1, err);
	}
	for (int i = 0; !rc && comm->rank == 0 && i < snap.sender_count; i++) {
		struct sender *s = &snap.senders[i];
		if (s->rank != 0)
			rc = transfer(comm, s->staging, s->floats, s->rank, 0, err);
	}
	return rc;
}

/* Rank 0 (the persist thread, or the caller when synchronous): every staging buffer to its
 * place in the whole model. */
static void place_all(struct sl_gpt *whole)
{
	(void)whole; /* the destinations were resolved against it by sender_init */
	for (int i = 0; i < snap.sender_count; i++) {
		const struct sender *s = &snap.senders[i];
		const float *in = s->staging;
		for (int j = 0; j < s->count; j++) {
			const struct sl_param *p = &s->layout[j];
			place_whole(s->dest[j]->value, in, p);
			place_whole(s->dest[j]->exp_avg, in + p->numel, p);
			place_whole(s->dest[j]->exp_avg_sq, in + 2 * p->numel, p);
			in += 3 * p->numel;
		}
	}
}

/* every rank learns the outcome (a failure on one rank fails the save everywhere) */
static int agree(struct sl_comm *comm, int rc, const char *what, struct sl_err *err)
{
	int failed = rc != 0;
	struct sl_err e2 = {0};
	if (sl_comm_allreduce(comm, &comm->world, &failed, 1, SL_COMM_INT32, SL_COMM_MAX, &e2))
		return sl_err_set(err, SL_EIO, "%s", e2.msg);
	if (failed && !rc)
		rc = sl_err_set(err, SL_EIO, "%s failed on rank 0 (see its message)", what);
	return rc;
}

/* The one persist of this process (only rank 0 persists). Fields other than done are touched
 * by the background thread only between pthread_create and done = 1; the main thread reads
 * them after seeing done (or after joining). */
static struct {
	pthread_t thread;
	int in_flight;            /* started and not joined */
	atomic_int done;          /* the thread has finished writing */
	int reported;             /* sl_rank_checkpoint_persisted told about it */
	struct sl_gpt *whole;
	char dir[4096];
	struct sl_checkpoint_state st;  /* st.train: a deep copy owned here */
	int keep;
	int rc;
	struct sl_err err;
	char path[4300];
	double wait_s, snapshot_s;  /* the save's time in the training's path (main thread) */
	double place_s, write_s;    /* the persist's */
	double cpu_s;               /* CPU time the persist thread used */
	int lower_priority;         /* async: the thread yields the CPU to training */
} persist = {.reported = 1};

static void *persist_main(void *arg)
{
	(void)arg;
	if (persist.lower_priority) {
		/* Linux: a thread's nice value is its own. The persist has a whole checkpoint interval
		 * to finish; the ranks' steps should not wait for the cores it uses. */
		id_t tid = (id_t)syscall(SYS_gettid);
		errno = 0;
		int nice_now = getpriority(PRIO_PROCESS, tid);
		if (errno == 0) {
			int lower = nice_now + PERSIST_NICE;
			setpriority(PRIO_PROCESS, tid, lower > 19 ? 19 : lower);
		}
	}
	double t0 = sl_now_s(), cpu0 = sl_clock_s(CLOCK_THREAD_CPUTIME_ID);
	place_all(persist.whole);
	double t1 = sl_now_s();
	persist.rc = sl_checkpoint_save(persist.dir, persist.whole, &persist.st, persist.keep,
					persist.path, sizeof(persist.path), &persist.err);
	persist.place_s = t1 - t0;
	persist.write_s = sl_now_s() - t1;
	persist.cpu_s = sl_clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	atomic_store(&persist.done, 1);
	return NULL;
}

/* Rank 0: waits for the persist in flight; returns its outcome (0 when none). */
static int join_persist(char *path_out, size_t path_size, struct sl_err *err)
{
	if (!persist.in_flight)
		return 0;
	pthread_join(persist.thread, NULL);
	persist.in_flight = 0;
	json_decref(persist.st.train);
	persist.st.train = NULL;
	if (persist.rc)
		return sl_err_set(err, persist.rc, "%s", persist.err.msg);
	if (path_out)
		snprintf(path_out, path_size, "%s", persist.path);
	return 0;
}

void sl_rank_checkpoint_wait_local(void)
{
	struct sl_err ignored;
	join_persist(NULL, 0, &ignored);
	snapshot_release();
}

static int sync_forced(void)
{
	const char *e = getenv("SAILOR_SYNC_CHECKPOINTS");
	return e && !strcmp(e, "1");
}

int sl_rank_checkpoint_finish(struct sl_comm *comm, char *path_out, size_t path_size,
			      struct sl_err *err)
{
	int rc = comm->rank == 0 ? join_persist(path_out, path_size, err) : 0;
	return agree(comm, rc, "checkpoint persist", err);
}

int sl_rank_checkpoint_persisted(struct sl_rank_checkpoint_report *r)
{
	if (persist.reported || !atomic_load(&persist.done) || persist.rc)
		return 0;
	persist.reported = 1;
	r->step = persist.st.step;
	r->wait_s = persist.wait_s;
	r->snapshot_s = persist.snapshot_s;
	r->place_s = persist.place_s;
	r->write_s = persist.write_s;
	r->persist_s = persist.place_s + persist.write_s;
	r->persist_cpu_s = persist.cpu_s;
	snprintf(r->path, sizeof(r->path), "%s", persist.path);
	return 1;
}

static int save(struct sl_comm *comm, const struct sl_role_table *table,
		const struct sl_gpt *local, struct sl_gpt *whole, const char *dir,
		const struct sl_checkpoint_state *st, int keep, int async, char *path_out,
		size_t path_size, struct sl_err *err)
{
	/* the previous persist must be on disk before its buffers (staging, whole) are reused */
	double t0 = sl_now_s();
	int rc = sl_rank_checkpoint_finish(comm, NULL, 0, err);
	if (rc)
		return rc;
	double t1 = sl_now_s();
	rc = gather(comm, table, local, whole, err);
	if (!rc && comm->rank == 0) {
		persist.wait_s = t1 - t0;
		persist.snapshot_s = sl_now_s() - t1;
		persist.lower_priority = async;
		persist.whole = whole;
		snprintf(persist.dir, sizeof(persist.dir), "%s", dir);
		persist.st = *st;
		persist.st.train = st->train ? json_deep_copy(st->train) : NULL;
		persist.keep = keep;
		persist.rc = 0;
		persist.path[0] = 0;
		persist.reported = 0;
		atomic_store(&persist.done, 0);
		if (async && !pthread_create(&persist.thread, NULL, persist_main, NULL)) {
			persist.in_flight = 1;
			if (path_out && path_size)
				path_out[0] = 0;
		} else {
			/* synchronous (asked for, or no thread could be started) */
			persist_main(NULL);
			json_decref(persist.st.train);
			persist.st.train = NULL;
			rc = persist.rc;
			if (rc)
				sl_err_set(err, rc, "%s", persist.err.msg);
			else if (path_out)
				snprintf(path_out, path_size, "%s", persist.path);
		}
	}
	return agree(comm, rc, "checkpoint save", err);
}

int sl_rank_checkpoint_save_async(struct sl_comm *comm, const struct sl_role_table *table,
				  const struct sl_gpt *local, struct sl_gpt *whole, const char *dir,
				  const struct sl_checkpoint_state *st, int keep, char *path_out,
				  size_t path_size, struct sl_err *err)
{
	return save(comm, table, local, whole, dir, st, keep, !sync_forced(), path_out, path_size,
		    err);
}

struct load_outcome {
	int32_t rc;
	int32_t pad;
	char path[4096];
};

int sl_rank_checkpoint_load(struct sl_comm *comm, struct sl_gpt *local, const char *dir,
			    struct sl_checkpoint_state *st, char *path_out, size_t path_size,
			    struct sl_err *err)
{
	struct load_outcome out;
	memset(&out, 0, sizeof(out));
	struct sl_err e0 = {0};
	memset(st, 0, sizeof(*st));
	if (comm->rank == 0) {
		out.rc = sl_checkpoint_load_latest(dir, local, st, out.path, sizeof(out.path), &e0);
		if (out.rc)
			snprintf(out.path, sizeof(out.path), "%s", e0.msg);
	}
	int rc = sl_comm_broadcast(comm, &comm->world, &out, (long long)sizeof(out), SL_COMM_BYTE,
				   0, err);
	if (rc)
		return rc;
	if (out.rc)
		return sl_err_set(err, out.rc, "%s", out.path);
	if (comm->rank != 0)
		rc = sl_checkpoint_load(out.path, local, st, err);
	/* every rank must have loaded before anyone trains on */
	int failed = rc != 0;
	struct sl_err e2 = {0};
	if (sl_comm_allreduce(comm, &comm->world, &failed, 1, SL_COMM_INT32, SL_COMM_MAX, &e2))
		return sl_err_set(err, SL_EIO, "%s", e2.msg);
	if (failed && !rc)
		rc = sl_err_set(err, SL_EINPUT, "checkpoint '%s' could not be loaded on every rank",
				out.path);
	if (!rc && path_out)
		snprintf(path_out, path_size, "%s", out.path);
	if (comm->rank != 0 && st->train) {
		json_decref(st->train);
		st->train = NULL;
	}
	return rc;
}
