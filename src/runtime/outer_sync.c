/* The islands' outer step on one rank (outer_sync.h).
 * Invariants: every rank of an island runs the same sequence of starts and landings (the
 * schedule is the island's); every member of an outer group starts phase 1 and phase 2 of the
 * exchanges in the same order (start order, k ascending then f descending: outer_schedule.h),
 * each phase on its own communicator; a fragment has at most one exchange in flight (tau < H);
 * the buffers of an exchange are untouched from its start until its request completes. */
#include "runtime/outer_sync.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/islands.h"
#include "runtime/groups.h"
#include "runtime/outer_wire.h"
#include "train/cpu/kernels.h"
#include "train/gpt_layers.h"
#include "util/clock.h"
#include "util/test_faults.h"


static int fewest_pipelines(const struct sl_role_table *t)
{
	int q = t->island_pipelines[0];
	for (int i = 1; i < t->num_islands; i++)
		q = t->island_pipelines[i] < q ? t->island_pipelines[i] : q;
	return q;
}

static long long whole_numel(const struct sl_param *p)
{
	return p->full_shape[0] * p->full_shape[1];
}

/* Lane layout: which fragment each parameter is in, and where in that fragment's lane vector. */
static int layout(struct sl_outer_sync *o, const struct sl_model_config *model,
		  struct sl_err *err)
{
	int F = o->isl->fragments;
	int *starts = malloc((size_t)(F + 1) * sizeof(int));
	if (!starts)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	int rc = sl_islands_fragment_starts(model, F, starts);
	if (rc)
		rc = sl_islands_check_model(o->isl, model, err);
	if (!rc && sl_islands_fragment_starts(model, F, starts))
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
	for (int i = 0; !rc && i < o->count; i++) {
		const struct sl_param *p = o->params[i];
		int t = sl_islands_tensor_index(model, p->name);
		if (t < 0) {
			rc = sl_err_set(err, SL_EINPUT, "islands: tensor '%s' is not one of model '%s's",
					p->name, model->name);
			break;
		}
		int f = 0;
		while (f + 1 < F && starts[f + 1] <= t)
			f++;
		o->fragment_of[i] = f;
		o->lane_off[i] = o->frags[f].lane_len;
		o->frags[f].lane_len += o->mixed ? whole_numel(p) : p->numel;
	}
	free(starts);
	return rc;
}

/* Pieces, chunks and their byte counts; buffers for the carriers. */
static int size_fragment(struct sl_outer_sync *o, struct sl_outer_fragment *fr, int Q,
			 struct sl_err *err)
{
	int n = o->n, q = o->me.island_pipeline;
	long long L = o->lane_member ? fr->lane_len : 0;
	fr->island_counts = calloc((size_t)(o->island_lane.size > 0 ? o->island_lane.size : 1),
				   sizeof(int));
	if (!fr->island_counts)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	for (int m = 0; m < o->island_lane.size; m++)
		fr->island_counts[m] = m < Q ? (int)((long long)(m + 1) * L / Q -
						     (long long)m * L / Q) : 0;
	if (L > INT32_MAX / 4)
		return sl_err_set(err, SL_EINPUT, "islands: a lane of %lld values is larger than "
				  "one MPI exchange allows", L);
	if (!o->carrier)
		return 0;
	fr->piece_off = (long long)q * L / Q;
	fr->piece_len = (long long)(q + 1) * L / Q - fr->piece_off;
	fr->counts = calloc((size_t)(8 * n), sizeof(int));
	if (!fr->counts)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	int *sc = fr->counts, *sd = sc + n, *r1c = sd + n, *r1d = r1c + n, *r2c = r1d + n,
	    *r2d = r2c + n, *s2c = r2d + n; /* phase 2 sends: my averaged chunk to every member,
					       * from displacement 0 (calloc) */
	long long P = fr->piece_len, mine = (long long)(o->me.island + 1) * P / n -
					    (long long)o->me.island * P / n;
	int my_bytes = (int)sl_outer_wire_bytes(sl_outer_sync_wire(o), mine);
	long long at = 0, at1 = 0;
	for (int c = 0; c < n; c++) {
		long long len = (long long)(c + 1) * P / n - (long long)c * P / n;
		sc[c] = r2c[c] = (int)sl_outer_wire_bytes(sl_outer_sync_wire(o), len);
		sd[c] = r2d[c] = (int)at;
		at += sc[c];
		r1c[c] = s2c[c] = my_bytes;
		r1d[c] = (int)at1;
		at1 += my_bytes;
	}
	fr->send = malloc((size_t)at + 1);
	fr->recv2 = malloc((size_t)at + 1);
	fr->recv1 = malloc((size_t)at1 + 1);
	fr->mid = malloc((size_t)my_bytes + 1);
	if (!fr->send || !fr->recv1 || !fr->mid || !fr->recv2)
		return sl_err_set(err, SL_ENOMEM, "out of memory for the outer exchange's buffers");
	return 0;
}

/* Three splits, on every rank: the two phases' outer groups and the island lane group. */
static int build_groups(struct sl_outer_sync *o, int Q, struct sl_err *err)
{
	const struct sl_role *me = &o->me;
	int P = o->table->num_stages, stride = 1;
	for (int r = 0; r < o->table->world_size; r++)
		stride = o->table->roles[r].tp + 1 > stride ? o->table->roles[r].tp + 1 : stride;
	int lane = o->mixed ? 0 : me->tp_rank;
	int colour = SL_COMM_NO_GROUP;
	if (o->carrier)
		colour = (me->stage * stride + lane) * Q + me->island_pipeline;
	int rc = sl_comm_split(o->comm, colour, me->island, &o->outer1, err);
	if (!rc)
		rc = sl_comm_split(o->comm, colour, me->island, &o->outer2, err);
	colour = o->lane_member ? (me->island * P + me->stage) * stride + lane : SL_COMM_NO_GROUP;
	if (!rc)
		rc = sl_comm_split(o->comm, colour, me->island_pipeline, &o->island_lane, err);
	if (!rc && o->carrier && o->outer1.size != o->n)
		rc = sl_err_set(err, SL_EIO, "islands: an outer group has %d members for %d islands",
				o->outer1.size, o->n);
	return rc;
}

int sl_outer_sync_init(struct sl_outer_sync *o, struct sl_comm *comm,
		       const struct sl_role_table *table, const struct sl_plan_islands *isl,
		       const struct sl_model_config *model, long long run_steps,
		       const struct sl_comm_group *tp, struct sl_param *const *params, int count,
		       struct sl_err *err)
{
	memset(o, 0, sizeof(*o));
	o->comm = comm;
	o->table = table;
	o->isl = isl;
	o->sched = (struct sl_outer_schedule){isl, run_steps, 1};
	o->me = table->roles[comm->rank];
	o->n = isl->count;
	o->tp = tp;
	o->mixed = !sl_groups_stage_uniform_tp(table, o->me.stage);
	o->lane_member = !o->mixed || o->me.tp_rank == 0;
	int Q = fewest_pipelines(table);
	o->pieces = Q;
	o->blocking = sl_test_outer_blocking();
	o->carrier = o->lane_member && o->me.island_pipeline < Q;
	o->count = count;
	int F = isl->fragments;
	o->params = malloc((size_t)count * sizeof(*o->params));
	o->fragment_of = calloc((size_t)count, sizeof(int));
	o->lane_off = calloc((size_t)count, sizeof(long long));
	o->global = calloc((size_t)count, sizeof(float *));
	o->momentum = calloc((size_t)count, sizeof(float *));
	o->frags = calloc((size_t)F, sizeof(*o->frags));
	if (!o->params || !o->fragment_of || !o->lane_off || !o->global || !o->momentum ||
	    !o->frags)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	memcpy(o->params, params, (size_t)count * sizeof(*o->params));
	for (int i = 0; i < count; i++) {
		o->global[i] = sl_alloc_floats((size_t)params[i]->numel);
		o->momentum[i] = sl_alloc_floats((size_t)params[i]->numel);
		if (!o->global[i] || !o->momentum[i])
			return sl_err_set(err, SL_ENOMEM, "out of memory for the global weights");
		memset(o->momentum[i], 0, (size_t)params[i]->numel * sizeof(float));
	}
	int rc = layout(o, model, err);
	if (!rc)
		rc = build_groups(o, Q, err);
	long long most = 1, chunk = 1;
	for (int f = 0; !rc && f < F; f++) {
		rc = size_fragment(o, &o->frags[f], Q, err);
		most = o->frags[f].lane_len > most ? o->frags[f].lane_len : most;
		long long c = o->frags[f].piece_len / o->n + 1;
		chunk = c > chunk ? c : chunk;
	}
	if (rc)
		return rc;
	o->scratch = sl_alloc_floats((size_t)most);
	o->acc = sl_alloc_floats((size_t)chunk);
	if (!o->scratch || !o->acc)
		return sl_err_set(err, SL_ENOMEM, "out of memory for the outer exchange");
	sl_outer_sync_take_values(o);
	return 0;
}

void sl_outer_sync_free(struct sl_outer_sync *o)
{
	for (int i = 0; o->global && i < o->count; i++) {
		free(o->global[i]);
		free(o->momentum[i]);
	}
	for (int f = 0; o->frags && f < o->isl->fragments; f++) {
		struct sl_outer_fragment *fr = &o->frags[f];
		free(fr->island_counts);
		free(fr->counts);
		free(fr->send);
		free(fr->recv1);
		free(fr->mid);
		free(fr->recv2);
		free(fr->pending);
	}
	if (o->comm) {
		sl_comm_group_free(o->comm, &o->outer1);
		sl_comm_group_free(o->comm, &o->outer2);
		sl_comm_group_free(o->comm, &o->island_lane);
	}
	free(o->params);
	free(o->fragment_of);
	free(o->lane_off);
	free(o->global);
	free(o->momentum);
	free(o->frags);
	free(o->scratch);
	free(o->acc);
	memset(o, 0, sizeof(*o));
}

void sl_outer_sync_take_values(struct sl_outer_sync *o)
{
	for (int i = 0; i < o->count; i++)
		memcpy(o->global[i], o->params[i]->value, (size_t)o->params[i]->numel * sizeof(float));
}
