/* The worker's --timeline output (runner_state.h): the ranks' spans gathered on rank 0, which
 * writes the file (plan/timeline.h).
 * Invariants: a rank other than 0 sends its span count, then its spans only when that count is
 * not 0; one that cannot pack its spans sends a count of 0 and counts them dropped, so rank 0
 * never waits for a message that does not come. Spans gathered from other ranks are all kept:
 * each rank capped its own. */
#include <stdlib.h>

#include "runtime/runner_state.h"
#include "util/log.h"

/* --timeline: every rank's spans go to rank 0, rank by rank (seven doubles a span, after their
 * count), and rank 0 writes the file on its host. Point-to-point rather than an all-gather, so
 * that only rank 0 holds the whole job's spans. */
#define TIMELINE_TAG 32200 /* above every schedule tag (schedule.h), below the snapshot's */
#define SPAN_DOUBLES 7

static void pack_spans(const struct sl_timeline *tl, double *out)
{
	for (long i = 0; i < tl->count; i++) {
		const struct sl_timeline_span *sp = &tl->spans[i];
		double *o = out + i * SPAN_DOUBLES;
		o[0] = sp->rank, o[1] = sp->step, o[2] = sp->kind, o[3] = sp->microbatch;
		o[4] = sp->start_s, o[5] = sp->end_s, o[6] = sp->cpu_s;
	}
}

int sl_runner_write_timeline(struct worker *w, struct sl_err *err)
{
	struct sl_comm *comm = w->comm;
	struct sl_timeline *tl = &w->timeline;
	struct sl_comm_request req = {0};
	int rc = 0;
	if (comm->rank != 0) {
		double head[2] = {(double)tl->count, (double)tl->dropped};
		double *packed = malloc((size_t)(tl->count ? tl->count : 1) * SPAN_DOUBLES *
					sizeof(double));
		if (!packed) /* the count says none: rank 0 still gets its two messages */
			head[0] = 0, head[1] += (double)tl->count;
		else
			pack_spans(tl, packed);
		rc = sl_comm_isend(comm, head, 2, SL_COMM_DOUBLE, 0, TIMELINE_TAG, &req, err);
		if (!rc)
			rc = sl_comm_wait(comm, &req, err);
		if (!rc && head[0] > 0)
			rc = sl_comm_isend(comm, packed, (long long)head[0] * SPAN_DOUBLES,
					   SL_COMM_DOUBLE, 0, TIMELINE_TAG, &req, err);
		if (!rc && head[0] > 0)
			rc = sl_comm_wait(comm, &req, err);
		free(packed);
		return rc;
	}
	double *packed = NULL;
	for (int r = 1; r < comm->size && !rc; r++) {
		double head[2];
		rc = sl_comm_irecv(comm, head, 2, SL_COMM_DOUBLE, r, TIMELINE_TAG, &req, err);
		if (!rc)
			rc = sl_comm_wait(comm, &req, err);
		if (rc)
			break;
		long count = (long)head[0];
		tl->dropped += (long)head[1];
		double *grown = count ? realloc(packed, (size_t)count * SPAN_DOUBLES *
							sizeof(double)) : packed;
		if (!grown)
			return free(packed), sl_err_set(err, SL_ENOMEM, "out of memory gathering the "
						       "timeline");
		packed = grown;
		if (count > 0)
			rc = sl_comm_irecv(comm, packed, (long long)count * SPAN_DOUBLES,
					   SL_COMM_DOUBLE, r, TIMELINE_TAG, &req, err);
		if (count > 0 && !rc)
			rc = sl_comm_wait(comm, &req, err);
		for (long i = 0; i < count && !rc; i++) {
			const double *o = packed + i * SPAN_DOUBLES;
			/* rank 0's cap does not apply to the gathered spans: they were capped at
			 * their own rank */
			struct sl_timeline_span sp = {(int)o[0], (int)o[1], (int)o[2], (int)o[3],
						      o[4], o[5], o[6]};
			if (tl->count == tl->cap) {
				long cap = tl->cap ? 2 * tl->cap : 1024;
				struct sl_timeline_span *more =
					realloc(tl->spans, (size_t)cap * sizeof(*more));
				if (!more)
					return free(packed), sl_err_set(err, SL_ENOMEM,
									"out of memory gathering "
									"the timeline");
				tl->spans = more;
				tl->cap = cap;
			}
			tl->spans[tl->count++] = sp;
		}
	}
	free(packed);
	if (rc)
		return rc;
	struct sl_timeline_meta meta = {.source = "run", .plan_path = w->o->plan,
					.model = w->model.name, .cat = &w->cat,
					.origin_s = sl_timeline_first_start_s(tl)};
	rc = sl_timeline_write(tl, &w->table, &meta, w->o->timeline, err);
	if (!rc && tl->dropped)
		sl_log_warn("timeline '%s': %ld spans were not kept (a rank keeps at most %d: "
			    "run fewer --steps)", w->o->timeline, tl->dropped,
			    SL_TIMELINE_MAX_SPANS);
	return rc;
}
