/* Distributed checkpoints (dist_checkpoint.h).
 * Invariants: only rank 0 touches the checkpoint directory while saving (one writer, the atomic
 * rename of checkpoint.c); a save's outcome is agreed by an all-reduce so no rank continues
 * believing a checkpoint exists that does not. Tags: tensor i of a sender uses tags 3i..3i+2 on
 * the world communicator; no other transfer is in flight during a save (the step's sends were
 * waited for before the gradient sync). */
#include "dist/dist_checkpoint.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train/gpt_layers.h"

int sl_dist_whole_model_init(struct sl_gpt *whole, const struct sl_model_config *model,
			     struct sl_err *err)
{
	return sl_gpt_init(whole, model, 0, model->num_blocks + 1, 1, 1, 1, 0, NULL, 1, err);
}

/* A shadow stage is never run: its TP hooks only have to exist for the layers to build. */
static int never_called(float *buf, long long count, void *ctx) { return SL_EIO; }

static void place_whole(float *whole, const float *shard, const struct sl_param *p)
{
	if (p->shard_dim < 0 || p->tp <= 1) {
		memcpy(whole, shard, (size_t)p->numel * sizeof(float));
		return;
	}
	for (long long i = 0; i < p->numel; i++)
		whole[sl_param_full_index(p, i)] = shard[i];
}

/* Rank 0: receives the shards of TP rank t of replica (k, 0) into the whole model. */
static int receive_shards(struct sl_comm *comm, const struct sl_role_table *table,
			  struct sl_gpt *whole, int k, int t, struct sl_err *err)
{
	const struct sl_role *src = sl_role_of(table, k, 0, t);
	struct sl_gpt shadow;
	struct sl_tp_comm hooks = {.allreduce_sum = never_called, .allreduce_max = never_called};
	int rc = sl_gpt_init(&shadow, &whole->model, src->first_layer, src->last_layer, 1, 1,
			     src->tp, src->tp_rank, &hooks, 1, err);
	if (rc)
		return rc;
	for (int i = 0; i < shadow.param_count && !rc; i++) {
		struct sl_param *p = shadow.params[i];
		float *arrays[3] = {p->value, p->exp_avg, p->exp_avg_sq};
		for (int a = 0; a < 3 && !rc; a++) {
			struct sl_comm_request req = {0};
			rc = sl_comm_irecv(comm, arrays[a], p->numel, SL_COMM_FLOAT, src->rank,
					   3 * i + a, &req, err);
			if (!rc)
				rc = sl_comm_wait(comm, &req, err);
		}
		struct sl_param *w = rc ? NULL : sl_gpt_find_param(whole, p->name);
		if (!rc && !w)
			rc = sl_err_set(err, SL_EINPUT, "checkpoint: tensor '%s' of stage %d has no "
					"place in the whole model", p->name, k);
		if (rc)
			break;
		place_whole(w->value, p->value, p);
		place_whole(w->exp_avg, p->exp_avg, p);
		place_whole(w->exp_avg_sq, p->exp_avg_sq, p);
	}
	sl_gpt_free(&shadow);
	return rc;
}

/* Every rank of pipeline 0 sends its shards to rank 0, which places them in whole. */
static int gather(struct sl_comm *comm, const struct sl_role_table *table,
		  const struct sl_gpt *local, struct sl_gpt *whole, struct sl_err *err)
{
	const struct sl_role *me = &table->roles[comm->rank];
	int n = local->param_count, rc = 0;
	struct sl_comm_request *reqs = NULL;
	if (me->pipeline == 0) {
		reqs = calloc((size_t)(3 * n), sizeof(*reqs));
		if (!reqs)
			rc = sl_err_set(err, SL_ENOMEM, "out of memory");
		for (int i = 0; i < n && !rc; i++) {
			const struct sl_param *p = local->params[i];
			const float *arrays[3] = {p->value, p->exp_avg, p->exp_avg_sq};
			for (int a = 0; a < 3 && !rc; a++)
				rc = sl_comm_isend(comm, arrays[a], p->numel, SL_COMM_FLOAT, 0,
						   3 * i + a, &reqs[3 * i + a], err);
		}
	}
	if (!rc && comm->rank == 0) {
		for (int k = 0; k < table->num_stages && !rc; k++)
			for (int t = 0; t < sl_role_of(table, k, 0, 0)->tp && !rc; t++)
				rc = receive_shards(comm, table, whole, k, t, err);
	}
	for (int i = 0; reqs && i < 3 * n; i++) {
		struct sl_err ignored;
		sl_comm_wait(comm, &reqs[i], rc ? &ignored : err);
	}
	free(reqs);
	return rc;
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

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The one persist of this process (only rank 0 persists). Fields other than done are touched
 * by the background thread only between pthread_create and done = 1; the main thread reads
 * them after seeing done (or after joining). */
static struct {
	pthread_t thread;
	int in_flight;            /* started and not joined */
	atomic_int done;          /* the thread has finished writing */
	int reported;             /* sl_dist_checkpoint_persisted told about it */
	const struct sl_gpt *whole;
	char dir[4096];
	struct sl_ckpt_state st;  /* st.train: a deep copy owned here */
	int keep;
	int rc;
	struct sl_err err;
	char path[4300];
	double seconds;
} persist = {.reported = 1};

static void *persist_main(void *arg)
{
	(void)arg;
	double t0 = now_s();
	persist.rc = sl_checkpoint_save(persist.dir, persist.whole, &persist.st, persist.keep,
					persist.path, sizeof(persist.path), &persist.err);
	persist.seconds = now_s() - t0;
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

void sl_dist_checkpoint_wait_local(void)
{
	struct sl_err ignored;
	join_persist(NULL, 0, &ignored);
}

static int sync_forced(void)
{
	const char *e = getenv("SAILOR_SYNC_CHECKPOINTS");
	return e && !strcmp(e, "1");
}

int sl_dist_checkpoint_finish(struct sl_comm *comm, char *path_out, size_t path_size,
			      struct sl_err *err)
{
	int rc = comm->rank == 0 ? join_persist(path_out, path_size, err) : 0;
	return agree(comm, rc, "checkpoint persist", err);
}

int sl_dist_checkpoint_persisted(long long *step, double *persist_s, char *path,
				 size_t path_size)
{
	if (persist.reported || !atomic_load(&persist.done) || persist.rc)
		return 0;
	persist.reported = 1;
	*step = persist.st.step;
	*persist_s = persist.seconds;
	snprintf(path, path_size, "%s", persist.path);
	return 1;
}

static int save(struct sl_comm *comm, const struct sl_role_table *table,
		const struct sl_gpt *local, struct sl_gpt *whole, const char *dir,
		const struct sl_ckpt_state *st, int keep, int async, char *path_out,
		size_t path_size, struct sl_err *err)
{
	/* the previous persist must be on disk before its buffer (whole) is reused */
	int rc = sl_dist_checkpoint_finish(comm, NULL, 0, err);
	if (rc)
		return rc;
	rc = gather(comm, table, local, whole, err);
	if (!rc && comm->rank == 0) {
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

int sl_dist_checkpoint_save(struct sl_comm *comm, const struct sl_role_table *table,
			    const struct sl_gpt *local, struct sl_gpt *whole, const char *dir,
			    const struct sl_ckpt_state *st, int keep, char *path_out,
			    size_t path_size, struct sl_err *err)
{
	return save(comm, table, local, whole, dir, st, keep, 0, path_out, path_size, err);
}

int sl_dist_checkpoint_save_async(struct sl_comm *comm, const struct sl_role_table *table,
				  const struct sl_gpt *local, struct sl_gpt *whole, const char *dir,
				  const struct sl_ckpt_state *st, int keep, char *path_out,
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

int sl_dist_checkpoint_load(struct sl_comm *comm, struct sl_gpt *local, const char *dir,
			    struct sl_ckpt_state *st, char *path_out, size_t path_size,
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
