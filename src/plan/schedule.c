/* The pipeline schedule as data (schedule.h): the 1F1B instruction list of each rank (the
 * checker is schedule_check.c).
 *
 * Invariants of a built schedule: forwards and backwards each visit m = 0 .. n-1 in order;
 * micro-batch m uses slot m % slots from its load/receive to its backward, and 1F1B never has
 * more than slots = min(P-k, n) micro-batches in flight; every send of one kind goes to the same
 * peer list, so peer_pool holds at most four lists (activation source, activation destinations,
 * gradient source, gradient destinations); the step ends with reduce-gradients, optimizer-step.
 */
#include "plan/schedule.h"
#include "plan/schedule_rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sl_instr_op_name(enum sl_instr_op op)
{
	switch (op) {
	case SL_INSTR_LOAD_MICROBATCH: return "load-microbatch";
	case SL_INSTR_RECV_ACTIVATION: return "recv-activation";
	case SL_INSTR_FORWARD: return "forward";
	case SL_INSTR_SEND_ACTIVATION: return "send-activation";
	case SL_INSTR_RECV_GRADIENT: return "recv-gradient";
	case SL_INSTR_BACKWARD: return "backward";
	case SL_INSTR_SEND_GRADIENT: return "send-gradient";
	case SL_INSTR_REDUCE_GRADIENTS: return "reduce-gradients";
	case SL_INSTR_OPTIMIZER_STEP: return "optimizer-step";
	}
	return "?";
}

int sl_schedule_tag(enum sl_msg_kind kind, int microbatch)
{
	return 2 * microbatch + (int)kind;
}

int sl_instr_is_recv(enum sl_instr_op op)
{
	return op == SL_INSTR_RECV_ACTIVATION || op == SL_INSTR_RECV_GRADIENT;
}

int sl_instr_is_send(enum sl_instr_op op)
{
	return op == SL_INSTR_SEND_ACTIVATION || op == SL_INSTR_SEND_GRADIENT;
}

enum sl_msg_kind sl_instr_msg_kind(enum sl_instr_op op)
{
	return op == SL_INSTR_RECV_ACTIVATION || op == SL_INSTR_SEND_ACTIVATION
		       ? SL_MSG_ACTIVATION : SL_MSG_GRADIENT;
}

char *sl_instr_format(const struct sl_instr *in, char *buf, size_t size)
{
	if (!size)
		return buf;
	int used;
	if (in->op == SL_INSTR_REDUCE_GRADIENTS || in->op == SL_INSTR_OPTIMIZER_STEP)
		used = snprintf(buf, size, "%s", sl_instr_op_name(in->op));
	else
		used = snprintf(buf, size, "%s m=%d slot=%d", sl_instr_op_name(in->op),
				in->microbatch, in->slot);
	if ((sl_instr_is_recv(in->op) || sl_instr_is_send(in->op)) && used >= 0 && (size_t)used < size) {
		used += snprintf(buf + used, size - (size_t)used, " %s",
				 sl_instr_is_recv(in->op) ? "from" : "to");
		if (in->peer_count <= 0 || !in->peers)
			snprintf(buf + used, size - (size_t)used, " nobody");
		for (int i = 0; i < in->peer_count && in->peers && (size_t)used < size; i++)
			used += snprintf(buf + used, size - (size_t)used, "%s%d", i ? "," : " ",
					 in->peers[i]);
	}
	return buf;
}

/* ---- the role table ---------------------------------------------------------------------- */

/* The table is usually sl_role_table_build's, but the checker also takes hand-made ones:
 * refuse anything the peer rules would index out of bounds with. */
int sl_schedule_check_table(const struct sl_role_table *tb, struct sl_err *err)
{
	int P = tb->num_stages, D = tb->num_pipelines, W = tb->world_size;
	if (W < 1 || P < 1 || D < 1 || !tb->roles || !tb->replica_first_rank || !tb->microbatches)
		return sl_err_set(err, SL_EINPUT, "role table: needs ranks, stages, pipelines and "
				  "their arrays (world size %d, %d stages, %d pipelines)", W, P, D);
	if (W < P * D)
		return sl_err_set(err, SL_EINPUT, "role table: world size %d is below the %d "
				  "replicas of %d stages x %d pipelines", W, P * D, P, D);
	for (int j = 0; j < D; j++) {
		int n = tb->microbatches[j];
		if (n < 1 || n > SL_SCHEDULE_MAX_MICROBATCHES)
			return sl_err_set(err, SL_EINPUT, "role table: pipeline %d has %d "
					  "micro-batches per step; the schedule needs 1 .. %d (message "
					  "tags 2*m+kind must stay below MPI's guaranteed 32767): use a "
					  "larger micro-batch or more pipelines",
					  j, n, SL_SCHEDULE_MAX_MICROBATCHES);
	}
	for (int k = 0; k < P; k++)
		for (int j = 0; j < D; j++) {
			int f = tb->replica_first_rank[k * D + j];
			if (f < 0 || f >= W || tb->roles[f].stage != k || tb->roles[f].pipeline != j ||
			    tb->roles[f].tp_rank != 0)
				return sl_err_set(err, SL_EINPUT, "role table: replica (stage %d, "
						  "pipeline %d) starts at rank %d, which is not its "
						  "tp rank 0", k, j, f);
		}
	for (int r = 0; r < W; r++) {
		const struct sl_role *ro = &tb->roles[r];
		if (ro->rank != r || ro->stage < 0 || ro->stage >= P || ro->pipeline < 0 ||
		    ro->pipeline >= D || ro->tp < 1 || ro->tp > SL_SCHEDULE_MAX_TP ||
		    ro->tp_rank < 0 || ro->tp_rank >= ro->tp)
			return sl_err_set(err, SL_EINPUT, "role table: rank %d has an impossible role "
					  "(rank %d, stage %d of %d, pipeline %d of %d, tp rank %d of "
					  "%d; tp at most %d)", r, ro->rank, ro->stage, P, ro->pipeline,
					  D, ro->tp_rank, ro->tp, SL_SCHEDULE_MAX_TP);
		int f = tb->replica_first_rank[ro->stage * D + ro->pipeline];
		if (f + ro->tp_rank != r || tb->roles[f].tp != ro->tp)
			return sl_err_set(err, SL_EINPUT, "role table: rank %d (stage %d, pipeline "
					  "%d, tp rank %d of %d) is not rank %d + tp rank of its "
					  "replica, or the replica's ranks disagree on its tp", r,
					  ro->stage, ro->pipeline, ro->tp_rank, ro->tp, f);
	}
	return 0;
}

/* The world ranks of one of ro's peer lists (see the TP rule in schedule.h); returns how many
 * (0 when the neighbour stage does not exist or this TP rank has nobody to send to). */
int sl_schedule_peers_of(const struct sl_role_table *tb, const struct sl_role *ro,
			 enum sl_peer_list w, int *out)
{
	int P = tb->num_stages, k = ro->stage, j = ro->pipeline, t = ro->tp_rank;
	int nk = (w == ACT_SRC || w == GRAD_DST) ? k - 1 : k + 1;
	if (nk < 0 || nk >= P)
		return 0;
	const struct sl_role *first = sl_role_of(tb, nk, j, 0);
	int tn = first->tp;
	if (w == ACT_SRC || w == GRAD_SRC) {
		out[0] = first->rank + t % tn;
		return 1;
	}
	/* destinations: the neighbour's TP ranks i whose source rule names t */
	int c = 0;
	for (int i = t; i < tn; i += ro->tp)
		out[c++] = first->rank + i;
	return c;
}

const char *sl_schedule_role_text(const struct sl_role_table *tb, int r, char *buf, size_t size)
{
	const struct sl_role *ro = &tb->roles[r];
	snprintf(buf, size, "rank %d (stage %d of %d, pipeline %d, tp rank %d of %d)", r,
		 ro->stage, tb->num_stages, ro->pipeline, ro->tp_rank, ro->tp);
	return buf;
}

/* ---- building ---------------------------------------------------------------------------- */

struct builder {
	struct sl_schedule *s;
	const int *lists[4];
	int counts[4];
	int slots;
};

static void emit(struct builder *b, enum sl_instr_op op, int m, enum sl_peer_list w)
{
	struct sl_instr *in = &b->s->instrs[b->s->count];
	in->op = op;
	in->microbatch = m;
	in->slot = m >= 0 ? m % b->slots : -1;
	in->peer_count = 0;
	in->peers = NULL;
	if (sl_instr_is_recv(op) || sl_instr_is_send(op)) {
		if (!b->counts[w])
			return; /* a send with nobody to send to is no instruction */
		in->peer_count = b->counts[w];
		in->peers = b->lists[w];
	}
	b->s->count++;
}

static void emit_forward(struct builder *b, int m)
{
	const struct sl_schedule *s = b->s;
	if (s->stage == 0 || s->stage == s->num_stages - 1)
		emit(b, SL_INSTR_LOAD_MICROBATCH, m, ACT_SRC);
	if (s->stage > 0)
		emit(b, SL_INSTR_RECV_ACTIVATION, m, ACT_SRC);
	emit(b, SL_INSTR_FORWARD, m, ACT_SRC);
	if (s->stage < s->num_stages - 1)
		emit(b, SL_INSTR_SEND_ACTIVATION, m, ACT_DST);
}

static void emit_backward(struct builder *b, int m)
{
	const struct sl_schedule *s = b->s;
	if (s->stage < s->num_stages - 1)
		emit(b, SL_INSTR_RECV_GRADIENT, m, GRAD_SRC);
	emit(b, SL_INSTR_BACKWARD, m, GRAD_SRC);
	if (s->stage > 0)
		emit(b, SL_INSTR_SEND_GRADIENT, m, GRAD_DST);
}

int sl_schedule_build(const struct sl_role_table *table, int rank, struct sl_schedule *out,
		      struct sl_err *err)
{
	memset(out, 0, sizeof(*out));
	int rc = sl_schedule_check_table(table, err);
	if (rc)
		return rc;
	if (rank < 0 || rank >= table->world_size)
		return sl_err_set(err, SL_EINPUT, "schedule: rank %d is outside the job's %d ranks",
				  rank, table->world_size);
	const struct sl_role *ro = &table->roles[rank];
	int P = table->num_stages, k = ro->stage, n = table->microbatches[ro->pipeline];
	out->rank = rank;
	out->stage = k;
	out->pipeline = ro->pipeline;
	out->tp_rank = ro->tp_rank;
	out->tp = ro->tp;
	out->num_stages = P;
	out->microbatches = n;
	out->slots = sl_schedule_min_int(P - k, n);

	/* 2 sources + destinations on each side, each at most SL_SCHEDULE_MAX_TP */
	out->peer_pool = malloc(sizeof(int) * (2 + 2 * SL_SCHEDULE_MAX_TP));
	/* per micro-batch at most load, recv, forward, send, recv, backward, send */
	out->instrs = malloc(sizeof(struct sl_instr) * ((size_t)n * 7 + 2));
	if (!out->peer_pool || !out->instrs) {
		sl_schedule_free(out);
		return sl_err_set(err, SL_ENOMEM, "schedule: out of memory for rank %d's %d "
				  "micro-batches", rank, n);
	}
	struct builder b = {.s = out, .slots = out->slots};
	for (int w = ACT_SRC; w <= GRAD_DST; w++) {
		int *list = out->peer_pool + out->peer_pool_count;
		b.counts[w] = sl_schedule_peers_of(table, ro, (enum sl_peer_list)w, list);
		b.lists[w] = list;
		out->peer_pool_count += b.counts[w];
	}

	int warmup = sl_schedule_min_int(P - k - 1, n);
	for (int m = 0; m < warmup; m++)
		emit_forward(&b, m);
	for (int i = 0; i < n - warmup; i++) {
		emit_forward(&b, warmup + i);
		emit_backward(&b, i);
	}
	for (int m = n - warmup; m < n; m++)
		emit_backward(&b, m);
	emit(&b, SL_INSTR_REDUCE_GRADIENTS, -1, ACT_SRC);
	emit(&b, SL_INSTR_OPTIMIZER_STEP, -1, ACT_SRC);
	return 0;
}

void sl_schedule_free(struct sl_schedule *s)
{
	if (!s)
		return;
	free(s->instrs);
	free(s->peer_pool);
	memset(s, 0, sizeof(*s));
}

int sl_schedule_build_all(const struct sl_role_table *table, struct sl_schedule **out,
			  struct sl_err *err)
{
	*out = NULL;
	int rc = sl_schedule_check_table(table, err);
	if (rc)
		return rc;
	struct sl_schedule *all = calloc((size_t)table->world_size, sizeof(*all));
	if (!all)
		return sl_err_set(err, SL_ENOMEM, "schedule: out of memory for %d ranks",
				  table->world_size);
	for (int r = 0; r < table->world_size; r++) {
		rc = sl_schedule_build(table, r, &all[r], err);
		if (rc) {
			sl_schedule_free_all(all, r);
			return rc;
		}
	}
	*out = all;
	return 0;
}

void sl_schedule_free_all(struct sl_schedule *all, int world_size)
{
	if (!all)
		return;
	for (int r = 0; r < world_size; r++)
		sl_schedule_free(&all[r]);
	free(all);
}

