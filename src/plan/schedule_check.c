/* The checker of pipeline schedules (schedule.h): every rank's instruction list run together,
 * without the model.
 *
 * The checker first checks each rank alone against what its role implies (clear messages for
 * the common mistakes), then simulates all ranks as a Kahn network: each receive names its one
 * source, so the result (which ranks finish, and the unit-cost clocks) does not depend on the
 * order ranks are advanced in. Messages live in an open-addressing hash keyed by
 * (source, destination, tag).
 */
#include "plan/schedule.h"
#include "plan/schedule_rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checking one rank ------------------------------------------------------------------- */

/* per micro-batch progress flags of the rank being checked */
enum {
	F_LOADED = 1, F_RECV_ACT = 2, F_FWD = 4, F_SENT_ACT = 8, F_RECV_GRAD = 16, F_BWD = 32,
	F_SENT_GRAD = 64,
};

/* "rank R (role) instruction I 'text': " + the problem */
__attribute__((format(printf, 5, 6)))
static int instr_error(struct sl_err *err, const struct sl_role_table *tb,
		       const struct sl_schedule *s, int i, const char *fmt, ...)
{
	char role[160], text[256], what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (i >= 0 && i < s->count)
		return sl_err_set(err, SL_EINPUT, "schedule of %s: instruction %d '%s': %s",
				  sl_schedule_role_text(tb, s->rank, role, sizeof(role)), i,
				  sl_instr_format(&s->instrs[i], text, sizeof(text)), what);
	return sl_err_set(err, SL_EINPUT, "schedule of %s: %s",
			  sl_schedule_role_text(tb, s->rank, role, sizeof(role)), what);
}

/* peers must be exactly the expected list as a set: same count, each expected, none twice */
static int same_peer_set(const struct sl_instr *in, const int *want, int want_count)
{
	if (in->peer_count != want_count || (want_count && !in->peers))
		return 0;
	for (int a = 0; a < in->peer_count; a++) {
		int found = 0;
		for (int b = 0; b < want_count; b++)
			found |= in->peers[a] == want[b];
		for (int b = 0; b < a; b++)
			found &= in->peers[a] != in->peers[b];
		if (!found)
			return 0;
	}
	return 1;
}

static void peers_text(const int *p, int c, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	if (!c)
		snprintf(buf, size, "nobody");
	for (int i = 0; i < c && used < size; i++) {
		int w = snprintf(buf + used, size - used, "%s%d", i ? "," : "", p[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* One rank's list as it is walked: where each micro-batch is and what the step has done. */
struct rank_walk {
	const struct sl_role_table *tb;
	const struct sl_schedule *s;
	int P, k, n;                       /* stages, this rank's stage, its micro-batches */
	unsigned char *flags;              /* [n] F_* per micro-batch */
	int *slot_holder;                  /* [slots] micro-batch in flight there, or -1 */
	int lists[4][SL_SCHEDULE_MAX_TP], counts[4]; /* peers by enum sl_peer_list */
	int next_fwd, next_bwd, reduced, stepped;    /* reduced/stepped: instruction or -1 */
	int loads;                         /* the first or last stage: it loads data */
};

/* The schedule is this role's, with a slot count 1F1B allows. */
static int check_header(struct rank_walk *w, int r, struct sl_err *err)
{
	const struct sl_role *ro = &w->tb->roles[r];
	const struct sl_schedule *s = w->s;
	if (s->rank != r || s->stage != w->k || s->pipeline != ro->pipeline ||
	    s->tp_rank != ro->tp_rank || s->microbatches != w->n) {
		char role[160];
		return sl_err_set(err, SL_EINPUT, "schedule of %s: the schedule is for rank %d "
				  "(stage %d, pipeline %d, tp rank %d, %d micro-batches), not this "
				  "role with %d micro-batches",
				  sl_schedule_role_text(w->tb, r, role, sizeof(role)), s->rank, s->stage,
				  s->pipeline, s->tp_rank, s->microbatches, w->n);
	}
	int max_slots = sl_schedule_min_int(w->P - w->k, w->n);
	if (s->slots < 1 || s->slots > max_slots)
		return instr_error(err, w->tb, s, -1, "%d activation slots; 1F1B needs 1 .. %d "
				   "(min(P-k, n))", s->slots, max_slots);
	if (s->count < 0 || (s->count && !s->instrs))
		return instr_error(err, w->tb, s, -1, "no instruction array for %d instructions",
				   s->count);
	return 0;
}

/* The step's end: reduce-gradients once every micro-batch is backwarded and sent on, then the
 * optimizer step as the last instruction. */
static int check_step_end(struct rank_walk *w, int i, struct sl_err *err)
{
	const struct sl_instr *in = &w->s->instrs[i];
	if (in->op == SL_INSTR_REDUCE_GRADIENTS) {
		if (w->reduced >= 0)
			return instr_error(err, w->tb, w->s, i, "gradients are reduced twice");
		if (w->next_bwd < w->n)
			return instr_error(err, w->tb, w->s, i, "micro-batch %d is not backwarded "
					   "yet", w->next_bwd);
		for (int mm = 0; mm < w->n; mm++) {
			if (w->counts[ACT_DST] && !(w->flags[mm] & F_SENT_ACT))
				return instr_error(err, w->tb, w->s, i, "micro-batch %d's "
						   "activation was never sent", mm);
			if (w->counts[GRAD_DST] && !(w->flags[mm] & F_SENT_GRAD))
				return instr_error(err, w->tb, w->s, i, "micro-batch %d's "
						   "gradient was never sent", mm);
		}
		w->reduced = i;
		return 0;
	}
	if (w->reduced < 0)
		return instr_error(err, w->tb, w->s, i, "optimizer step before reduce-gradients");
	if (i != w->s->count - 1)
		return instr_error(err, w->tb, w->s, i, "the optimizer step must be the last "
				   "instruction (%d follow)", w->s->count - 1 - i);
	w->stepped = i;
	return 0;
}

/* A micro-batch instruction's frame: its operation, micro-batch and slot, and for a send or
 * receive the peers the TP rule gives. */
static int check_frame(struct rank_walk *w, int i, struct sl_err *err)
{
	const struct sl_instr *in = &w->s->instrs[i];
	const struct sl_schedule *s = w->s;
	int m = in->microbatch;
	if ((int)in->op < SL_INSTR_LOAD_MICROBATCH || in->op > SL_INSTR_SEND_GRADIENT)
		return instr_error(err, w->tb, s, i, "unknown operation %d", (int)in->op);
	if (w->reduced >= 0)
		return instr_error(err, w->tb, s, i, "micro-batch work after reduce-gradients");
	if (m < 0 || m >= w->n)
		return instr_error(err, w->tb, s, i, "micro-batch %d outside the pipeline's "
				   "0 .. %d", m, w->n - 1);
	if (in->slot != m % s->slots)
		return instr_error(err, w->tb, s, i, "wrong slot %d: micro-batch %d lives in "
				   "slot %d (m %% %d)", in->slot, m, m % s->slots, s->slots);
	if (sl_instr_is_recv(in->op) || sl_instr_is_send(in->op)) {
		enum sl_peer_list pl = in->op == SL_INSTR_RECV_ACTIVATION ? ACT_SRC
			: in->op == SL_INSTR_SEND_ACTIVATION ? ACT_DST
			: in->op == SL_INSTR_RECV_GRADIENT ? GRAD_SRC : GRAD_DST;
		if (sl_instr_is_recv(in->op) && !w->counts[pl])
			return instr_error(err, w->tb, s, i, "stage %d has no %s neighbour to "
					   "receive from", w->k, pl == ACT_SRC ? "previous" : "next");
		if (!same_peer_set(in, w->lists[pl], w->counts[pl])) {
			char want[SL_SCHEDULE_MAX_TP * 8];
			peers_text(w->lists[pl], w->counts[pl], want, sizeof(want));
			return instr_error(err, w->tb, s, i, "wrong peers: the TP rule gives %s", want);
		}
	}
	return 0;
}

/* Forward and backward: once each, in order, after their inputs, within the slots. */
static int check_compute(struct rank_walk *w, int i, struct sl_err *err)
{
	const struct sl_instr *in = &w->s->instrs[i];
	const struct sl_schedule *s = w->s;
	int m = in->microbatch, k = w->k;
	unsigned char *f = &w->flags[m];
	if (in->op == SL_INSTR_FORWARD) {
		if (m != w->next_fwd)
			return instr_error(err, w->tb, s, i, "%s: micro-batches are forwarded once "
					   "each in order, micro-batch %d is next",
					   m < w->next_fwd ? "forwarded twice" : "out of order",
					   w->next_fwd);
		if (k == 0 && !(*f & F_LOADED))
			return instr_error(err, w->tb, s, i, "forward before micro-batch %d is "
					   "loaded", m);
		if (k > 0 && !(*f & F_RECV_ACT))
			return instr_error(err, w->tb, s, i, "forward before micro-batch %d's "
					   "activation is received", m);
		if (w->slot_holder[in->slot] >= 0)
			return instr_error(err, w->tb, s, i, "slot %d still holds micro-batch %d, "
					   "which is not backwarded yet (more than %d in flight)",
					   in->slot, w->slot_holder[in->slot], s->slots);
		w->slot_holder[in->slot] = m;
		*f |= F_FWD;
		w->next_fwd++;
		return 0;
	}
	if (m != w->next_bwd)
		return instr_error(err, w->tb, s, i, "%s: micro-batches are backwarded once each "
				   "in order, micro-batch %d is next",
				   m < w->next_bwd ? "backwarded twice" : "out of order", w->next_bwd);
	if (w->slot_holder[in->slot] != m)
		return instr_error(err, w->tb, s, i, "micro-batch %d is not in flight in slot %d "
				   "(not forwarded yet)", m, in->slot);
	if (k == w->P - 1 && !(*f & F_LOADED))
		return instr_error(err, w->tb, s, i, "backward before micro-batch %d's targets are "
				   "loaded", m);
	if (k < w->P - 1 && !(*f & F_RECV_GRAD))
		return instr_error(err, w->tb, s, i, "backward before micro-batch %d's gradient is "
				   "received", m);
	w->slot_holder[in->slot] = -1;
	*f |= F_BWD;
	w->next_bwd++;
	return 0;
}

/* Loads, receives and sends: once each, a send after the work that produces it. */
static int check_transfer(struct rank_walk *w, int i, struct sl_err *err)
{
	const struct sl_instr *in = &w->s->instrs[i];
	const struct sl_schedule *s = w->s;
	int m = in->microbatch;
	unsigned char *f = &w->flags[m];
	switch (in->op) {
	case SL_INSTR_LOAD_MICROBATCH:
		if (!w->loads)
			return instr_error(err, w->tb, s, i, "only the first and the last stage load "
					   "data");
		if (*f & F_LOADED)
			return instr_error(err, w->tb, s, i, "micro-batch %d is loaded twice", m);
		*f |= F_LOADED;
		break;
	case SL_INSTR_RECV_ACTIVATION:
		if (*f & F_RECV_ACT)
			return instr_error(err, w->tb, s, i, "activation of micro-batch %d is received "
					   "twice", m);
		*f |= F_RECV_ACT;
		break;
	case SL_INSTR_SEND_ACTIVATION:
		if (!(*f & F_FWD))
			return instr_error(err, w->tb, s, i, "sends micro-batch %d's activation "
					   "before its forward", m);
		if (*f & F_SENT_ACT)
			return instr_error(err, w->tb, s, i, "activation of micro-batch %d is sent "
					   "twice", m);
		*f |= F_SENT_ACT;
		break;
	case SL_INSTR_RECV_GRADIENT:
		if (*f & F_RECV_GRAD)
			return instr_error(err, w->tb, s, i, "gradient of micro-batch %d is received "
					   "twice", m);
		*f |= F_RECV_GRAD;
		break;
	case SL_INSTR_SEND_GRADIENT:
		if (!(*f & F_BWD))
			return instr_error(err, w->tb, s, i, "sends micro-batch %d's gradient before "
					   "its backward", m);
		if (*f & F_SENT_GRAD)
			return instr_error(err, w->tb, s, i, "gradient of micro-batch %d is sent "
					   "twice", m);
		*f |= F_SENT_GRAD;
		break;
	default:
		break;
	}
	return 0;
}

static int check_rank(const struct sl_role_table *tb, const struct sl_schedule *s, int r,
		      unsigned char *flags, int *slot_holder, struct sl_err *err)
{
	const struct sl_role *ro = &tb->roles[r];
	struct rank_walk w = {
		.tb = tb, .s = s, .P = tb->num_stages, .k = ro->stage,
		.n = tb->microbatches[ro->pipeline], .flags = flags, .slot_holder = slot_holder,
		.reduced = -1, .stepped = -1,
	};
	w.loads = w.k == 0 || w.k == w.P - 1;
	int rc = check_header(&w, r, err);
	if (rc)
		return rc;
	for (int pl = ACT_SRC; pl <= GRAD_DST; pl++)
		w.counts[pl] = sl_schedule_peers_of(tb, ro, (enum sl_peer_list)pl, w.lists[pl]);
	memset(flags, 0, (size_t)w.n);
	for (int q = 0; q < s->slots; q++)
		slot_holder[q] = -1;
	for (int i = 0; i < s->count && !rc; i++) {
		enum sl_instr_op op = s->instrs[i].op;
		if (op == SL_INSTR_REDUCE_GRADIENTS || op == SL_INSTR_OPTIMIZER_STEP)
			rc = check_step_end(&w, i, err);
		else if (!(rc = check_frame(&w, i, err)))
			rc = op == SL_INSTR_FORWARD || op == SL_INSTR_BACKWARD
				     ? check_compute(&w, i, err)
				     : check_transfer(&w, i, err);
	}
	if (rc)
		return rc;
	if (w.next_fwd < w.n)
		return instr_error(err, tb, s, -1, "micro-batch %d is never forwarded", w.next_fwd);
	if (w.next_bwd < w.n)
		return instr_error(err, tb, s, -1, "micro-batch %d is never backwarded", w.next_bwd);
	if (w.reduced < 0 || w.stepped < 0)
		return instr_error(err, tb, s, -1, "the step does not end with reduce-gradients, "
				   "optimizer-step");
	return 0;
}

/* ---- checking all ranks together --------------------------------------------------------- */

struct msg {
	int src, dst, tag;   /* src < 0: empty bucket */
	int sent, received;
	long long time;      /* sender's clock at the (latest) send */
	int send_instr;      /* where the (latest) send is, for messages */
};

struct mailbox {
	struct msg *b;
	size_t mask;
};

static struct msg *mail_find(struct mailbox *mb, int src, int dst, int tag, int insert)
{
	size_t h = ((size_t)(unsigned)src * 2654435761u) ^ ((size_t)(unsigned)dst * 40503u) ^
		   ((size_t)(unsigned)tag * 2246822519u);
	for (size_t i = h & mb->mask;; i = (i + 1) & mb->mask) {
		struct msg *e = &mb->b[i];
		if (e->src < 0) {
			if (!insert)
				return NULL;
			memset(e, 0, sizeof(*e));
			e->src = src;
			e->dst = dst;
			e->tag = tag;
			return e;
		}
		if (e->src == src && e->dst == dst && e->tag == tag)
			return e;
	}
}

/* appends printf text to buf at *used, never past size */
__attribute__((format(printf, 4, 5)))
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
	if (*used >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *used, size - *used, fmt, ap);
	va_end(ap);
	if (w > 0)
		*used = *used + (size_t)w < size ? *used + (size_t)w : size;
}

/* No rank can move: name how many are stuck and follow the chain of waits from the lowest
 * stuck rank until it closes a cycle or reaches a rank that finished without sending. */
static int report_deadlock(const struct sl_role_table *tb, const struct sl_schedule *all,
			   const int *pc, int *seen, struct sl_err *err)
{
	int W = tb->world_size, stuck = 0, first = -1;
	for (int r = 0; r < W; r++) {
		seen[r] = 0;
		if (pc[r] < all[r].count) {
			stuck++;
			if (first < 0)
				first = r;
		}
	}
	char msg[SL_ERR_MSG_MAX], role[160], text[256];
	size_t used = 0;
	append(msg, sizeof(msg), &used, "schedules deadlock: %d of %d ranks wait forever; ",
	       stuck, W);
	int r = first;
	for (int hop = 0;; hop++) {
		const struct sl_instr *in = &all[r].instrs[pc[r]];
		int p = in->peers[0];
		seen[r] = 1;
		append(msg, sizeof(msg), &used, "%s%s instruction %d '%s' waits for rank %d",
		       hop ? ", which " : "", sl_schedule_role_text(tb, r, role, sizeof(role)), pc[r],
		       sl_instr_format(in, text, sizeof(text)), p);
		if (pc[p] >= all[p].count) {
			append(msg, sizeof(msg), &used, ", which has finished without sending it");
			break;
		}
		if (seen[p]) {
			append(msg, sizeof(msg), &used, " (a cycle)");
			break;
		}
		r = p;
	}
	return sl_err_set(err, SL_EINPUT, "%s", msg);
}

static int simulate(const struct sl_role_table *tb, const struct sl_schedule *all,
		    struct sl_schedule_check_stats *st, struct sl_err *err)
{
	int W = tb->world_size, rc = 0;
	long long sends = 0;
	for (int r = 0; r < W; r++)
		for (int i = 0; i < all[r].count; i++)
			if (sl_instr_is_send(all[r].instrs[i].op))
				sends += all[r].instrs[i].peer_count;
	size_t cap = 16;
	while (cap < (size_t)sends * 2)
		cap *= 2;
	struct mailbox mb = {.b = malloc(cap * sizeof(struct msg)), .mask = cap - 1};
	int *pc = calloc((size_t)W, sizeof(int));
	int *seen = calloc((size_t)W, sizeof(int));
	long long *clock = calloc((size_t)W, sizeof(long long));
	long long *busy = calloc((size_t)W, sizeof(long long));
	if (!mb.b || !pc || !seen || !clock || !busy) {
		rc = sl_err_set(err, SL_ENOMEM, "schedule check: out of memory for %lld messages",
				sends);
		goto out;
	}
	for (size_t i = 0; i < cap; i++)
		mb.b[i].src = -1;

	long long messages = 0, instructions = 0;
	for (int progress = 1; progress;) {
		progress = 0;
		for (int r = 0; r < W; r++) {
			const struct sl_schedule *s = &all[r];
			for (; pc[r] < s->count; pc[r]++) {
				const struct sl_instr *in = &s->instrs[pc[r]];
				if (sl_instr_is_recv(in->op)) {
					int tag = sl_schedule_tag(sl_instr_msg_kind(in->op), in->microbatch);
					struct msg *e = mail_find(&mb, in->peers[0], r, tag, 0);
					if (!e || e->received >= e->sent)
						break; /* blocked: try again after others moved */
					e->received++;
					messages++;
					if (e->time > clock[r])
						clock[r] = e->time;
				} else if (sl_instr_is_send(in->op)) {
					int tag = sl_schedule_tag(sl_instr_msg_kind(in->op), in->microbatch);
					for (int q = 0; q < in->peer_count; q++) {
						struct msg *e = mail_find(&mb, r, in->peers[q], tag, 1);
						e->sent++;
						e->time = clock[r];
						e->send_instr = pc[r];
					}
				} else if (in->op == SL_INSTR_FORWARD) {
					clock[r] += 1;
					busy[r] += 1;
				} else if (in->op == SL_INSTR_BACKWARD) {
					clock[r] += 2;
					busy[r] += 2;
				}
				instructions++;
				progress = 1;
			}
		}
	}
	for (int r = 0; r < W; r++)
		if (pc[r] < all[r].count) {
			rc = report_deadlock(tb, all, pc, seen, err);
			goto out;
		}
	for (size_t i = 0; i < cap; i++) {
		const struct msg *e = &mb.b[i];
		if (e->src >= 0 && e->sent != e->received) {
			char role[160], text[256];
			rc = sl_err_set(err, SL_EINPUT, "schedule of %s: instruction %d '%s': sent "
					"%d time(s) to rank %d with tag %d, received %d time(s)",
					sl_schedule_role_text(tb, e->src, role, sizeof(role)), e->send_instr,
					sl_instr_format(&all[e->src].instrs[e->send_instr], text,
							sizeof(text)),
					e->sent, e->dst, e->tag, e->received);
			goto out;
		}
	}
	if (st) {
		memset(st, 0, sizeof(*st));
		for (int r = 0; r < W; r++) {
			if (clock[r] > st->ticks)
				st->ticks = clock[r];
			if (busy[r] > st->busy_ticks)
				st->busy_ticks = busy[r];
		}
		st->bubble = st->ticks ? (double)(st->ticks - st->busy_ticks) / (double)st->ticks
				       : 0.0;
		st->messages = messages;
		st->instructions = instructions;
	}
out:
	free(mb.b);
	free(pc);
	free(seen);
	free(clock);
	free(busy);
	return rc;
}

int sl_schedule_check(const struct sl_role_table *table, const struct sl_schedule *schedules,
		      struct sl_schedule_check_stats *stats, struct sl_err *err)
{
	int rc = sl_schedule_check_table(table, err);
	if (rc)
		return rc;
	int max_n = 1;
	for (int j = 0; j < table->num_pipelines; j++)
		max_n = table->microbatches[j] > max_n ? table->microbatches[j] : max_n;
	unsigned char *flags = malloc((size_t)max_n);
	int *slot_holder = malloc(sizeof(int) * (size_t)max_n);
	if (!flags || !slot_holder) {
		free(flags);
		free(slot_holder);
		return sl_err_set(err, SL_ENOMEM, "schedule check: out of memory");
	}
	for (int r = 0; r < table->world_size && !rc; r++)
		rc = check_rank(table, &schedules[r], r, flags, slot_holder, err);
	free(flags);
	free(slot_holder);
	if (rc)
		return rc;
	/* every receive and send now names the TP rule's peers, so the simulation only indexes
	 * valid ranks */
	return simulate(table, schedules, stats, err);
}
