/* When islands step, sync and land (docs/design/islands.md): pure arithmetic on the plan's
 * islands section, the same on every rank, so that every rank knows every island's step counts,
 * sync points and token counts without exchanging them. The runtime executes it; the simulator
 * and the planner can count with it.
 *
 * Run steps c = 0, 1, ... are island 0's inner steps (H0 = inner_steps[0], the largest). Round r
 * is run steps r*H0 .. r*H0+H0-1. Island i makes its k-th inner step of a round at run step
 * r*H0 + floor(k*H0/Hi), so after run steps 0..c-1 it has made
 *     steps_before(i, c) = r*Hi + ceil(p*Hi/H0),   c = r*H0 + p.
 * Fragment f syncs after island i's inner step s (1-based) when (s + shift(i, f)) mod Hi == 0,
 * shift(i, f) = floor(f*Hi/F): its k-th sync is at s = k*Hi - shift, inside round k. Only the
 * syncs of complete rounds are scheduled (k*H0 <= the run's steps): every island then has made
 * the same syncs of every fragment at every round end and at the end, where each fragment syncs
 * once more (the final flush). The k-th syncs of a fragment in every island meet in one
 * exchange; syncs due after the same inner step go in descending f, the order (k ascending, f
 * descending) every island shares whatever its H. */
#ifndef SL_PLAN_OUTER_SCHEDULE_H
#define SL_PLAN_OUTER_SCHEDULE_H

#include "plan/islands.h"

struct sl_outer_schedule {
	const struct sl_plan_islands *islands; /* borrowed */
	long long run_steps;                   /* the run's steps (--steps) */
	long long first_round;                 /* the first round whose syncs are made: 1, or
						* after a resume at run step S the first round
						* that starts at or after S (sl_outer_schedule_
						* resume_at), so that every island resumes at
						* the same place in the sequence of syncs */
};

/* The first round whose syncs a run resumed after run step S makes: S / H0 + 1 when S ends a
 * round, else the round after the one S is in (its syncs may have been made before S in some
 * islands and not in others). */
long long sl_outer_schedule_resume_at(const struct sl_outer_schedule *s, long long step);

/* Inner steps island i has made in run steps 0..c-1. */
long long sl_outer_schedule_steps_before(const struct sl_outer_schedule *s, int island,
					 long long c);

/* 1 when island i makes an inner step at run step c. */
int sl_outer_schedule_steps_at(const struct sl_outer_schedule *s, int island, long long c);

/* floor(f * Hi / F). */
int sl_outer_schedule_shift(const struct sl_outer_schedule *s, int island, int fragment);

/* 1 when fragment f syncs after island i's inner step `step` (1-based), in a complete round. */
int sl_outer_schedule_syncs_after(const struct sl_outer_schedule *s, int island, long long step,
				  int fragment);

/* Island i's inner step of fragment f's last scheduled sync at or before `step` (0: none). */
long long sl_outer_schedule_last_sync(const struct sl_outer_schedule *s, int island,
				      long long step, int fragment);

/* Inner steps island j trained since its previous sync of f, for the k-th sync (1-based) of f
 * (k = 0: the final flush, after the run's steps). */
long long sl_outer_schedule_steps_in_sync(const struct sl_outer_schedule *s, int island,
					  int fragment, long long k);

/* The k of a sync of f that island i makes after its inner step `step`. */
long long sl_outer_schedule_sync_index(const struct sl_outer_schedule *s, int island,
				       long long step, int fragment);

#endif
