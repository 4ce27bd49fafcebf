/* A controller starting on a run directory an earlier controller used: the record of steps is
 * made whole again before anything runs.
 *
 * An earlier controller killed with SIGKILL (or whose machine crashed) leaves RUNDIR/steps.jsonl
 * short: its generation went on training, and checkpointing, after the last line the controller
 * received, and those steps are only in the generation's own file (RUNDIR/gen-<n>/steps.jsonl,
 * steps_file.h). The new controller resumes from the newest checkpoint, so:
 *   - every step up to that checkpoint must be on record once: the line of RUNDIR/steps.jsonl
 *     (the last one of a step, as readers take), else the line of the newest generation's file
 *     that has it, marked "recovered": true;
 *   - a step after that checkpoint will run again and be recorded then: its old lines go, so the
 *     file never holds a step twice.
 * RUNDIR/steps.jsonl is rewritten (atomic_file.h) in step order. The new controller numbers its
 * generations on from the largest gen-<n> found, so the earlier ones' logs stay.
 *
 * Invariant: after sl_ctl_restart_reconcile, RUNDIR/steps.jsonl holds each step 1..ckpt_step at
 * most once, and every such step any earlier controller or generation recorded.
 */
#ifndef SL_CTL_RESTART_H
#define SL_CTL_RESTART_H

#include "util/err.h"

struct sl_ctl_restart_info {
	int generations;         /* the largest n of RUNDIR/gen-<n> (0: none) */
	long long steps_on_record;   /* lines kept or recovered (one per step) */
	long long steps_recovered;   /* of those, taken from a generation's file */
	long long steps_to_rerun;    /* steps after the checkpoint dropped from the record */
	long long newest_step;       /* the newest step any record held before (0: none) */
};

/* Reconciles run_dir's records with resume_step (the newest checkpoint's step; 0 or less when
 * there is none, and then every step runs again). A run directory without steps.jsonl or any
 * gen-<n> gives info all zero and changes nothing. Returns 0 or SL_EIO / SL_ENOMEM with err
 * filled (RUNDIR/steps.jsonl is then untouched). */
int sl_ctl_restart_reconcile(const char *run_dir, long long resume_step,
			     struct sl_ctl_restart_info *info, struct sl_err *err);

#endif
