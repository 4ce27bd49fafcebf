/* Private to the cost model of our own runtime (time_replay.c and the replay_*.c files it is
 * made of; nothing else in src/sim/ includes this): the state of a rank being replayed, the
 * replay's shared tables, and the functions one of these files offers the others. Their names
 * start sl_replay_ (the replay model), so that they are not read as src/runtime/'s own.
 *
 * Invariants: within one replay of a step (time_replay.c) a rank's clock never moves back;
 * every time a struct sl_replay_rank holds is seconds. Ranks are world ranks of the plan's role
 * table (plan/roles.h), and a group's members are listed in the group's rank order, the
 * order the runtime's collectives use. */
#ifndef SL_SIM_REPLAY_H
#define SL_SIM_REPLAY_H

#include "plan/roles.h"
#include "sim/internal.h"

/* runtime/grad_sync.h's SL_GRAD_BUCKET_FLOATS (4 Mi floats), repeated so that sim does not include
 * the runtime's MPI-facing header; test_sim_replay checks they agree. */
#define SL_RUNTIME_BUCKET_BYTES (16.0 * 1024 * 1024)
/* runtime/zero.h's SL_ZERO_BUCKET_FLOATS (1 Mi floats), the sharded optimizer's calls */
#define SL_RT_ZERO_BUCKET_BYTES (4.0 * 1024 * 1024)

/* Isends a rank can hold back for its next MPI call (OpenMPI's rendezvous, time_replay.c) */
#define SL_RT_PENDING_MAX 128

/* An Isend too large to go at once: it waits for its sender's next MPI call (rendezvous). */
struct sl_replay_pending_send {
	int dst, kind, microbatch;
};

/* A rank as the replay runs it: its clock, its place in its instruction list, its times and
 * its CPU budget. */
struct sl_replay_rank {
	double clock;       /* seconds since the previous step's norm */
	int pc;             /* next instruction */
	int host;           /* placement: a host index (cluster file) or the replica's own */
	double fwd_s, bwd_s, update_s;
	/* a device whose speed wanders (catalogue speed_spells): the share of the time it runs
	 * slowdown slower, and the factor on this draw's forward and backward passes */
	double spell_fraction, spell_slowdown, pass_factor;
	double gather_s;    /* ZeRO-1's all-gather of the updated parameters, after the update */
	double compute_s, wait_s;
	double reduce_arrive_s, sync_end_s;
	/* Isends waiting for this rank's next MPI call */
	struct sl_replay_pending_send pending[SL_RT_PENDING_MAX];
	int pending_count;
	/* a device that is a CPU quota (catalogue cpu_quota): budget per period and its use */
	double quota_cores, period_s, used_s;
	double budget_s;    /* this period's: cores x period plus what the last one left (carry) */
	long period;        /* the period ((clock - phase) / period_s) whose budget used_s counts */
	double test_cpu_s, test_late_s; /* a sleeping wait's test: its CPU, how late it comes */
	double phase_s;     /* where this device's periods start: cgroups keep their own timers */
	int awake;          /* it last ran (1) or slept in a wait (0): what it carries into the
			     * next period (replay_cpu_quota.c) */
	/* a CPU-quota device's CPU (work, wait tests, the sync's sums) and its sleeping waits'
	 * tests: since the draw began, where the timed step began, summed over the draws' timed
	 * steps */
	double cpu_s, cpu_mark_s, cpu_steps_s;
	double tests, tests_mark, tests_steps;
	double sync_cpu_mark_s, sync_cpu_steps_s; /* the same CPU over the gradient sync */
	double span_start_s, span_cpu_mark_s; /* a phase a timeline records: start, CPU then */
};

/* What the replay of the instruction lists shares (time_replay.c), and with it the collectives
 * that queue on the hosts' links (replay_collectives.c). */
struct sl_replay {
	const struct sl_sim_env *env;
	const struct sl_role_table *t;
	struct sl_replay_rank *st;
	double *arrival;    /* [rank][kind][micro-batch]: when the message is there, -1 unknown */
	double *ready;      /* same index: a large message the sender has started (rendezvous),
			     * which moves once the receiver is in its receive; -1 none */
	int *source;        /* same index: its sender */
	double *link_free;  /* [host][zone slot]: when the host's link to the zone is free */
	double *link_tokens; /* [host][zone slot]: bytes the link's burst holds at link_free;
			      * negative: what it owes (sl_replay_link_take_whole) */
	/* the plan's zones, numbered: the link tables are over them, not the catalogue */
	int link_zones;
	short zone_slot[SL_MAX_ZONES]; /* [catalogue zone]: its slot, -1 not in the plan */
	int nmax;
	double act_bytes;
	double egress_usd;
};

/* Numbers the plan's zones into x->zone_slot and x->link_zones (replay_collectives.c). */
void sl_replay_zone_slots(struct sl_replay *x, const struct sl_plan *plan);

/* The index of host's link to zone in link_free and link_tokens. */
static inline size_t sl_replay_link(const struct sl_replay *x, int host, int zone)
{
	return (size_t)host * (size_t)x->link_zones + (size_t)x->zone_slot[zone];
}

/* ---- the CPU-quota model (replay_cpu_quota.c) ---- */

/* Whether r's device is a CPU quota (less than one core in each period). */
int sl_replay_has_quota(const struct sl_replay_rank *r);
/* Runs work the profile timed at the device's average rate (wall_s) from r's clock. */
void sl_replay_run_work(struct sl_replay_rank *r, double wall_s);
/* Runs cpu_s of CPU work that no profile timed at the quota's rate (moving a message): on a
 * CPU-quota device paid from the budget like any work, elsewhere cpu_s of the clock. */
void sl_replay_run_cpu(struct sl_replay_rank *r, double cpu_s);
/* Waits inside MPI until until_s (asleep between tests on a CPU-quota device). */
void sl_replay_wait_idle(struct sl_replay_rank *r, double until_s);
/* The same wait as one part of a longer one: *sleep_s is the sleep it continues with (and
 * leaves for the next part); sleep_first: it begins with a sleep (the rank has just tested). */
void sl_replay_wait_tests(struct sl_replay_rank *r, double until_s, double *sleep_s, int sleep_first);

/* ---- links and collectives (replay_collectives.c) ---- */

/* OpenMPI's TCP transport sends a message of up to its eager limit (btl_tcp_eager_limit, 64 KiB
 * in OpenMPI 4.1) at once, its match header counted against the limit; a larger one goes by
 * rendezvous (time_replay.c). */
#define SL_RT_TCP_EAGER_BYTES 65536.0
#define SL_RT_TCP_HEADER_BYTES 64.0

/* Seconds to move bytes from rank a on host_a to rank b on host_b. */
double sl_replay_link_s(const struct sl_sim_env *env, const struct sl_role *a, int host_a,
		    const struct sl_role *b, int host_b, double bytes);
/* Seconds of MPI's copies and sums when rank rb receives bytes to add to its own. */
double sl_replay_reduce_cpu_s(const struct sl_sim_env *env, const struct sl_role *rb, double bytes);
/* An eager message of bytes from rank src to rank dst on another host whose link the network
 * profile's eager probe found passing such a message whole: it leaves at or after at_s once the
 * link's bucket owes nothing, all at once, and the bucket then owes what it exceeded. Returns 1
 * and when it leaves (and is there) in *leave_s; 0, touching nothing, where this does not apply
 * (one host, over the eager limit, not probed or not passed whole). */
int sl_replay_link_take_whole(struct sl_replay *x, int src, int dst, double bytes, double at_s,
			  double *leave_s);
/* A ring all-reduce of bytes over members, from the last one's arrival, beside sharing - 1
 * other rings over the same hosts at the same time, each member paying its copies and sums
 * from its CPU budget; returns its egress, USD. cpu: m doubles of scratch. */
double sl_replay_group_allreduce(struct sl_replay *x, const int *members, int m, double bytes,
			     int sharing, double *cpu);
/* The loss and gradient-norm all-reduces over the world's W ranks; returns when the last rank
 * is through. done: 2W doubles of scratch. */
double sl_replay_world_scalar_allreduces(struct sl_replay *x, int W, double *done);
/* ZeRO-1's gradient reduce-scatter over members as libnbc runs it. ready: m doubles of scratch. */
void sl_replay_zero_reduce_scatter(struct sl_replay *x, const int *members, int m, double bytes,
			       double *ready);
/* ZeRO-1's all-gather of the updated parameters as libnbc runs it. from, through: m doubles of
 * scratch each. */
void sl_replay_zero_allgather(struct sl_replay *x, const int *members, int m, double bytes,
			  double *from, double *through);

/* ---- a stage's gradient-sync groups (replay_sync_groups.c) ---- */

/* Whether stage k's replicas all have one TP degree. */
int sl_replay_stage_uniform(const struct sl_plan *plan, int k);
/* Stage k's gradient-sync groups: one per TP rank (one TP degree), else one. */
int sl_replay_stage_sync_groups(const struct sl_plan *plan, int k);
/* The world ranks of stage k's sync group gi and the bytes it reduces; returns their number. */
int sl_replay_stage_sync_members(const struct sl_sim_env *env, const struct sl_plan *plan,
			     const struct sl_role_table *t, int k, int gi, int *members,
			     double *bytes);
/* Ranks in one of stage k's sync groups. */
int sl_replay_stage_sync_group_size(const struct sl_plan *plan, int k);
/* Whether stage k shards its optimizer (ZeRO-1 over more than one rank). */
int sl_replay_stage_zero(const struct sl_plan *plan, int k);

/* ---- a rank's memory (replay_memory.c) ---- */

/* The profile's memory figures of gpu at (mbs, tp), or NULL when it has none. */
const struct sl_profile_memory *sl_replay_profile_memory(const struct sl_sim_env *env, int gpu,
						     int mbs, int tp);
/* Bytes of the largest parameter tensor of layers [first, last] (fp32). */
double sl_replay_largest_whole_tensor_bytes(const struct sl_sim_env *env, int first, int last);
/* Peak resident memory of rank r (replay_memory.c says what it counts). */
void sl_replay_rank_memory(const struct sl_sim_env *env, const struct sl_role *r, int mbs, int slots,
		       int P, double whole_tensor_bytes, int recompute, int zero_group,
		       int zero_rank, double zero_whole_bytes, int nonblocking,
		       double ring_scratch_bytes, struct sl_sim_memory *mem);

#endif
