/* The replay model's CPU quotas (time_replay.c): how a rank whose device is a CPU quota (the
 * testbed's; catalogue cpu_quota) works and waits.
 *
 * A device that is a CPU quota computes at full speed for cores x period of every period (plus
 * what Linux carries over from the last one: up to 1 ms if the rank slept through the period's
 * end, all it held if it ran through it; start_period) and stands still for the rest.
 * Its rank waits for messages asleep (runtime/comm.h, SL_COMM_WAIT_SLEEP; plan/rank_wait.h), whose tests cost the CPU the
 * profile measured (sl_replay_wait_idle). Work the profile timed at the quota's average rate is
 * replayed against the budget (sl_replay_run_work): after a wait that crossed a period boundary,
 * work starts with a full budget and runs up to 1/cores times faster than average for that
 * budget, which pipelines, whose ranks wait and work in turn, show. The two small world
 * all-reduces after the sync are replayed round by round (sl_replay_world_scalar_allreduces,
 * replay_collectives.c).
 *
 * Invariants: used_s is the CPU spent in the period numbered r->period (LONG_MIN before the
 * first) and never more than that period's budget_s; awake says whether the rank last ran (1)
 * or slept in a wait (0); a rank whose device is no quota just adds seconds to its clock. */
#include <limits.h>
#include <math.h>

#include "plan/rank_wait.h"
#include "sim/replay.h"

/* A cgroup's runtime lives in a pool that each period refills to the quota, and on the CPU that
 * runs its task, which takes it from the pool in slices of up to sched_cfs_bandwidth_slice_us
 * (5 ms). A task that goes to sleep keeps min_cfs_rq_runtime (1 ms) of it on the CPU and gives
 * the rest back to the pool, where the refill does not add to it; since Linux 5.4 what stays on
 * the CPU no longer expires at the period's end (sched-bwc.rst). So a rank asleep at a period's
 * end carries up to 1 ms of what it left into the next, and a rank running then carries all it
 * holds, up to a slice: the runtime it took when it woke. A rank that woke late in a period, with
 * a quota over 1 ms, runs on past the period's end with both. */
#define CFS_LOCAL_RUNTIME_S 0.001
#define CFS_SLICE_S 0.005

/* Starts period k (> r->period) with a fresh budget and the carry of the one it leaves. */
static void start_period(struct sl_replay_rank *r, long k)
{
	double left = r->period == LONG_MIN ? 0 : r->budget_s - r->used_s;
	double carry_max = r->awake ? CFS_SLICE_S : CFS_LOCAL_RUNTIME_S;
	r->budget_s = r->quota_cores * r->period_s + fmin(carry_max, fmax(0, left));
	r->period = k;
	r->used_s = 0;
}

/* Moves r into the period that holds its clock. Periods are counted by number so that rounding
 * never leaves the clock on a boundary it cannot cross. */
static void enter_period(struct sl_replay_rank *r)
{
	long k = (long)floor((r->clock - r->phase_s) / r->period_s + 1e-9);
	if (k > r->period)
		start_period(r, k);
}

/* Advances r by want_s of running and by any throttled time in between. */
static void run_for(struct sl_replay_rank *r, double want_s)
{
	double done = 0;
	while (want_s - done > 1e-12) {
		enter_period(r);
		double end = r->phase_s + (double)(r->period + 1) * r->period_s;
		double left = r->budget_s - r->used_s;
		double take = left <= 1e-12 ? 0 : fmin(want_s - done, fmin(left, end - r->clock));
		if (take <= 0) { /* throttled until the next period, or at this one's end */
			r->clock = end;
			start_period(r, r->period + 1);
			continue;
		}
		r->clock += take;
		r->used_s += take;
		r->cpu_s += take;
		r->awake = 1;
		done += take;
	}
}

int sl_replay_has_quota(const struct sl_replay_rank *r)
{
	return r->quota_cores > 0 && r->quota_cores < 1 && r->period_s > 0;
}

/* Runs work that the profile timed at the device's steady rate (wall_s, the quota's average)
 * from the rank's clock. On a CPU-quota device that is wall_s x cores of CPU, done at full speed
 * while the current period's budget lasts and stopped until the next period when it is spent:
 * so an operation that starts with a fresh budget (after a wait) finishes sooner than wall_s,
 * one that starts with a spent budget later. Elsewhere it takes wall_s. */
void sl_replay_run_work(struct sl_replay_rank *r, double wall_s)
{
	if (!sl_replay_has_quota(r)) {
		r->clock += wall_s;
		return;
	}
	run_for(r, wall_s * r->quota_cores);
}

void sl_replay_run_cpu(struct sl_replay_rank *r, double cpu_s)
{
	if (cpu_s <= 0)
		return;
	if (sl_replay_has_quota(r))
		run_for(r, cpu_s);
	else
		r->clock += cpu_s;
}

/* Waits until until_s inside MPI. A rank on a CPU-quota device waits asleep between tests
 * (runtime/comm.h, SL_COMM_WAIT_SLEEP; plan/rank_wait.h): it sees its message at the first test after it came (sleeps of
 * SL_RANK_WAIT_SLEEP_FIRST_S doubling to SL_RANK_WAIT_SLEEP_MAX_S, each test and sleep late by
 * what the profile measured), and each test costs the CPU the profile measured (20-29 us on
 * the testbed, a quarter of a cpu-fast device's budget over a long wait): paid from the budget,
 * so a long wait can leave the rank throttled when its message comes. A wait that crosses a
 * period boundary leaves a fresh budget (enter_period). */
void sl_replay_wait_idle(struct sl_replay_rank *r, double until_s)
{
	double sleep_s = SL_RANK_WAIT_SLEEP_FIRST_S;
	sl_replay_wait_tests(r, until_s, &sleep_s, 0);
}

/* The sleeping wait's loop; *sleep_s is the next sleep, carried from one call to the next where
 * one MPI wait spans them (a collective's rounds). sleep_first: the rank has just tested, so
 * the wait begins with a sleep and ends at a test, however early the message was there. */
void sl_replay_wait_tests(struct sl_replay_rank *r, double until_s, double *sleep_s, int sleep_first)
{
	if (until_s <= r->clock && !sleep_first)
		return;
	if (!sl_replay_has_quota(r)) {
		r->clock = fmax(r->clock, until_s);
		return;
	}
	double c = r->test_cpu_s;
	if (sleep_first) {
		r->awake = 0;
		r->clock += *sleep_s + r->test_late_s;
		*sleep_s = fmin(2 * *sleep_s, SL_RANK_WAIT_SLEEP_MAX_S);
	}
	for (;;) {
		/* a cycle: the test (c of CPU, from the budget), then the sleep and its lateness */
		double cycle = *sleep_s + r->test_late_s;
		if (*sleep_s >= SL_RANK_WAIT_SLEEP_MAX_S) {
			/* at the longest sleep: jump over the cycles that neither reach until_s nor the
			 * period's end nor exhaust the budget (the result of running them one by one) */
			enter_period(r);
			double end = r->phase_s + (double)(r->period + 1) * r->period_s;
			double by_time = floor((fmin(end, until_s) - r->clock) / cycle);
			double by_budget = c > 0 ? floor((r->budget_s - r->used_s) / c) : by_time;
			double n = fmin(by_time, by_budget) - 1;
			if (n > 0) {
				r->clock += n * cycle;
				r->used_s += n * c;
				r->cpu_s += n * c;
				r->tests += n;
			}
		}
		if (c > 0)
			run_for(r, c);
		r->tests++;
		if (r->clock >= until_s)
			return;
		r->awake = 0;
		r->clock += fmax(0, cycle - c);
		*sleep_s = fmin(2 * *sleep_s, SL_RANK_WAIT_SLEEP_MAX_S);
	}
}
