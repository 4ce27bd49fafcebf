/*
 * How a rank waits for a message when it sleeps between tests: the sequence of sleeps that the
 * executor's sleeping wait runs (runtime/comm_mpi.c, SL_COMM_WAIT_SLEEP) and that the
 * simulator's replay model replays (sim/replay_cpu_quota.c, sim/replay_collectives.c). One
 * definition, so that the model cannot drift from what a rank does.
 */
#ifndef SL_PLAN_RANK_WAIT_H
#define SL_PLAN_RANK_WAIT_H

/* A sleeping wait tests, then sleeps SL_RANK_WAIT_SLEEP_FIRST_S, doubling up to
 * SL_RANK_WAIT_SLEEP_MAX_S, between tests. */
#define SL_RANK_WAIT_SLEEP_FIRST_S 20e-6
#define SL_RANK_WAIT_SLEEP_MAX_S 320e-6

#endif
