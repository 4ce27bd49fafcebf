/* A timeline: what each rank of a job did when, step by step — the spans of its schedule's
 * instructions (plan/schedule.h) and of the step's phases after them — as `sailor run
 * --timeline` measures it and `sailor simulate --timeline` models it. Both write one file format,
 * schema sailor.timeline/1, so a run and its prediction can be laid side by side
 * (bench/testbed/timeline_compare.py) and the gap between them found rank by rank, instruction by
 * instruction. The file is Chrome's trace-event JSON (Perfetto and chrome://tracing open it) with
 * sailor's fields added: docs/formats.md.
 *
 * Times are seconds from the timeline's origin. A run's origin is the earliest span start over all
 * ranks, each rank's times read on CLOCK_REALTIME: exact between ranks of one host (the testbed's
 * namespaces share the machine's clock), as good as the hosts' clock sync between hosts. The
 * model's origin is the start of the step it times.
 *
 * Ownership: a struct sl_timeline owns its spans; sl_timeline_free releases them. */
#ifndef SL_PLAN_TIMELINE_H
#define SL_PLAN_TIMELINE_H

#include "plan/roles.h"
#include "plan/schedule.h"
#include "util/err.h"

/* The step's phases after its instruction list; a span's kind is one of these or an
 * enum sl_instr_op. */
enum sl_timeline_phase {
	SL_TL_WAIT_SENDS = SL_INSTR_OPTIMIZER_STEP + 1, /* waiting for earlier sends of a slot
							 * (before a forward) or of the step */
	SL_TL_GRAD_SYNC,  /* the gradient sync (runtime/grad_sync.h; ZeRO-1's reduce-scatter) */
	SL_TL_SCALARS,    /* the world's loss-and-stop all-reduce, then the gradient norm's */
	SL_TL_UPDATE,     /* the optimizer's update, and ZeRO-1's all-gather of what it updated */
	SL_TL_KIND_COUNT
};

/* A rank records at most this many spans (about 3.4 MB); later ones are counted, not kept. */
#define SL_TIMELINE_MAX_SPANS 60000

struct sl_timeline_span {
	int rank;
	int step;          /* 1-based, as the step lines print it */
	int kind;          /* enum sl_instr_op or enum sl_timeline_phase */
	int microbatch;    /* pipeline-local micro-batch, -1 for the step's phases */
	double start_s, end_s;
	double cpu_s;      /* the rank's process CPU over the span; < 0: not known */
};

struct sl_timeline {
	struct sl_timeline_span *spans;
	long count, cap;
	long dropped;      /* spans not kept: past SL_TIMELINE_MAX_SPANS, or no memory */
};

/* "forward", "recv-activation", ... (sl_instr_op_name), "wait-sends", "grad-sync",
 * "loss-and-norm", "update"; "?" for anything else. */
const char *sl_timeline_kind_name(int kind);

/* Appends a span (never fails: one that cannot be kept is counted in tl->dropped). */
void sl_timeline_add(struct sl_timeline *tl, int rank, int step, int kind, int microbatch,
		     double start_s, double end_s, double cpu_s);

void sl_timeline_free(struct sl_timeline *tl);

struct sl_catalogue;
struct sl_cluster;

/* What a timeline file says besides its spans. */
struct sl_timeline_meta {
	const char *source;      /* "run" or "simulate" */
	const char *plan_path;   /* the plan file, as given */
	const char *model;       /* the model's name */
	const struct sl_catalogue *cat;   /* names the ranks' GPU types and zones */
	const struct sl_cluster *cluster; /* names their hosts; NULL: hosts not named */
	double origin_s;         /* subtracted from every time */
};

/* Writes tl to path (atomically; util/atomic_file.h), one process per rank named for its role in
 * table. Errors name the file. */
int sl_timeline_write(const struct sl_timeline *tl, const struct sl_role_table *table,
		      const struct sl_timeline_meta *meta, const char *path, struct sl_err *err);

/* The earliest span start, 0 for an empty timeline. */
double sl_timeline_first_start_s(const struct sl_timeline *tl);

#endif
