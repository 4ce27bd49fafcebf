/* The worker's checkpoint glue (runner_state.h): its state in and out of the plan-independent
 * distributed checkpoint (rank_checkpoint.h) -- step, data position, seed, hyper-parameters,
 * and the optimizer's moments, whole even when ZeRO-1 shards them (zero.h) -- and rank 0's
 * report of the checkpoints that finished persisting. Invariants: a sharded optimizer lends
 * whole moments only for the snapshot or the load, and takes them back (sl_zero_release)
 * whatever happened; a resume refuses other data or another sequence length. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/island_checkpoint.h"
#include "runtime/rank_checkpoint.h"
#include "runtime/runner_state.h"
#include "train/checkpoint.h"
#include "util/log.h"

/* Every rank's own island state beside the checkpoint; a failure anywhere fails the save on
 * every rank (as the plan-independent save does). */
static int save_island_state(struct worker *w, long long step, struct sl_err *err)
{
	uint64_t sig = sl_island_checkpoint_signature(&w->table, w->plan.islands, w->comm->rank,
						      &w->outer);
	struct sl_err mine = {0};
	int rc = sl_island_checkpoint_save(w->o->train.ckpt_dir, step, w->o->train.ckpt_keep,
					   w->comm->rank, sig, &w->outer, &mine);
	int failed = rc != 0;
	int arc = sl_comm_allreduce(w->comm, &w->comm->world, &failed, 1, SL_COMM_INT32,
				    SL_COMM_MAX, err);
	if (arc)
		return arc;
	if (rc)
		return sl_err_set(err, rc, "rank %d: %s", w->comm->rank, mine.msg);
	if (failed)
		return sl_err_set(err, SL_EIO, "another rank could not write its island checkpoint "
				  "of step %lld (its log says why)", step);
	return 0;
}

/* After the plan-independent load (the global weights, island 0's moments): every rank's own
 * island state of that step when every rank has a usable one, else a new round from the global
 * weights with those moments and no outer momentum (island_checkpoint.h). */
static int resume_island_state(struct worker *w, long long step, struct sl_err *err)
{
	struct sl_outer_sync *o = &w->outer;
	sl_outer_sync_take_values(o);
	o->sched.first_round = sl_outer_schedule_resume_at(&o->sched, step);
	uint64_t sig = sl_island_checkpoint_signature(&w->table, w->plan.islands, w->comm->rank, o);
	struct sl_island_checkpoint_file file;
	struct sl_err why = {0};
	int usable = sl_island_checkpoint_read(w->o->train.ckpt_dir, step, w->comm->rank, sig, o,
					       &file, &why) == 0;
	int missing = !usable; /* any rank without a usable file: none uses its own */
	int rc = sl_comm_allreduce(w->comm, &w->comm->world, &missing, 1, SL_COMM_INT32,
				   SL_COMM_MAX, err);
	int all = !missing;
	if (!rc && all)
		rc = sl_island_checkpoint_apply(&file, o, err);
	sl_island_checkpoint_file_free(&file);
	if (!rc && !all && w->comm->rank == 0)
		sl_log_note("island state of step %lld not usable (%s): the islands start a new round "
			    "from the checkpoint's global weights, with its optimizer moments and no "
			    "outer momentum", step, usable ? "another rank's file" : why.msg);
	return rc;
}

int sl_runner_save(struct worker *w, long long step, json_t *train, char *path, size_t size,
			struct sl_err *err)
{
	struct sl_checkpoint_state st = {
		.step = step,
		.data_epoch = w->loader.epoch,
		.data_next = w->loader.next,
		.data_seq = w->seq,
		.data_tokens = w->file.count,
		.seed = w->o->train.seed,
		.train = train,
	};
	snprintf(st.data_path, sizeof(st.data_path), "%s", w->o->train.data);
	/* islands: the exchanges in flight finish first (their averages are saved) */
	int rc = w->outer_on ? sl_outer_sync_settle(&w->outer, err) : 0;
	/* a sharded optimizer lends the save whole moments for the snapshot (zero.h) */
	if (!rc && w->zero_on)
		rc = sl_zero_materialize(&w->zero, 1, err);
	if (!rc && w->outer_on)
		rc = save_island_state(w, step, err);
	/* the snapshot is taken now; the file is written in the background (rank_checkpoint.h).
	 * An island run's holds the global weights (island_checkpoint.h) */
	sl_runner_islands_swap_global(w);
	if (!rc)
		rc = sl_rank_checkpoint_save_async(w->comm, &w->table, &w->gpt, &w->whole,
						   w->o->train.ckpt_dir, &st, w->o->train.ckpt_keep,
						   path, size, err);
	sl_runner_islands_swap_global(w);
	if (w->zero_on)
		sl_zero_release(&w->zero);
	return rc;
}

/* Rank 0: says which checkpoints finished persisting since the last call; with json as
 * {"event":"checkpoint","step","path","persist_s"} (the controller logs them). */
void sl_runner_report_persisted(struct worker *w, char *ckpt, size_t size, int last)
{
	struct sl_rank_checkpoint_report r;
	while (sl_rank_checkpoint_persisted(&r)) {
		const char *path = r.path;
		snprintf(ckpt, size, "%s", path);
		if (w->o->train.json) {
			json_t *ev = json_pack("{s:s, s:I, s:s, s:f, s:f, s:f, s:f, s:f, s:f}",
					       "event", "checkpoint", "step", (json_int_t)r.step,
					       "path", path, "persist_s", r.persist_s, "wait_s",
					       r.wait_s, "snapshot_s", r.snapshot_s, "place_s",
					       r.place_s, "write_s", r.write_s, "persist_cpu_s",
					       r.persist_cpu_s);
			char *text = ev ? json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
			if (text)
				fprintf(w->out, "%s\n", text);
			free(text);
			json_decref(ev);
		} else if (!last) {
			fprintf(w->out, "checkpoint '%s'\n", path); /* the last: in the summary */
		}
		fflush(w->out);
	}
}

int sl_runner_resume(struct worker *w, long long *start, struct sl_err *err)
{
	struct sl_checkpoint_state st;
	/* a sharded optimizer reads whole moments, then keeps its pieces of them (zero.h) */
	int rc = w->zero_on ? sl_zero_materialize(&w->zero, 0, err) : 0;
	if (!rc)
		rc = sl_rank_checkpoint_load(w->comm, &w->gpt, w->o->train.ckpt_dir, &st,
					     w->resumed_from, sizeof(w->resumed_from), err);
	if (!rc && w->outer_on)
		rc = resume_island_state(w, st.step, err);
	if (!rc && w->zero_on)
		rc = sl_zero_load(&w->zero, 1, err);
	if (w->zero_on)
		sl_zero_release(&w->zero);
	if (rc)
		return rc;
	json_decref(st.train);
	if (st.data_tokens != w->file.count)
		return sl_err_set(err, SL_EINPUT,
				  "checkpoint '%s' was trained on %lld tokens, but '%s' has %lld: "
				  "resume with the same data",
				  w->resumed_from, st.data_tokens, w->o->train.data, w->file.count);
	if (st.data_seq != w->seq)
		return sl_err_set(err, SL_EINPUT,
				  "checkpoint '%s' was trained with sequence length %d, not %d: resume "
				  "with --seq-len %d",
				  w->resumed_from, st.data_seq, w->seq, st.data_seq);
	w->loader.seed = st.seed;
	if ((rc = sl_data_loader_seek(&w->loader, st.data_epoch, st.data_next, err)))
		return rc;
	*start = st.step;
	return 0;
}
