/* The cost model of our own runtime, `sailor run` (src/runtime), used when every GPU type of a plan
 * is profiled by `sailor profile` (profiles of schema sailor.profile/1 measure our runtime's
 * layers; the shipped SOSP'25 profiles measure Megatron-DeepSpeed's, for which time_sailor.c
 * models DeepSpeed's engine). Where the two runtimes differ, this model follows ours. This file
 * holds its entry, sl_sim_replay, and the replay of the ranks' instruction lists; the rest is
 * in files named for their job, which share replay.h:
 *
 *   replay_cpu_quota.c    how a rank on a device that is a CPU quota works and waits
 *   replay_collectives.c  link times; the gradient all-reduces, ZeRO-1's reduce-scatter and
 *                          all-gather, the world's small all-reduces
 *   replay_sync_groups.c  which ranks sync a stage's gradients, and how many bytes
 *   replay_memory.c       peak resident memory of a rank
 *
 *   schedule   the very instruction lists the ranks execute (plan/schedule.h: 1F1B with
 *              min(P-k, n) activation slots), run here with times instead of tensors: forward and
 *              backward take the profile's stage times at the rank's (micro-batch, TP); a
 *              receive waits until its message has arrived; sends are non-blocking (MPI_Isend).
 *   transfers  every TP rank of the receiving replica gets a whole copy of the activation or
 *              gradient (no partition + all-gather as in DeepSpeed), from one sender rank.
 *              Moving it costs each end the CPU the network profile's message probe measured
 *              (the copies into and out of TCP or shared memory): the sender at its Isend, the
 *              receiver when the message is there.
 *              Messages between hosts share the sending host's link to the receiver's zone one
 *              after the other (the testbed's per-zone tc class, a NIC on real hosts): arrival =
 *              max(sent, link free) + bytes / fit bandwidth(bytes). Ranks on one host use the
 *              intra-node fit (shared memory).
 *   grad sync  after the last backward: the stage's gradient all-reduce, then the tied token
 *              table over the first and last stages, each a ring all-reduce that starts when its
 *              last member arrives (replay_collectives.c; the groups: replay_sync_groups.c).
 *   norm       the loss and then the global gradient norm are all-reduces of a few bytes over
 *              the world, ring rounds that need each rank and its neighbour (they end when the
 *              last rank is through), each round after the first ending at a test of the rank's
 *              sleeping wait. The step ends there for timing purposes.
 *   optimizer  AdamW over the rank's own shard (the profile's update seconds per parameter),
 *              after the norm; it delays the rank's next step. Two steps are run and the second
 *              is timed, from norm to norm.
 *   options    per stage (plan.h): recompute "full" reruns the stage's blocks' forward in
 *              backward; "selective" reruns the attention core (its share of a block's
 *              forward as profiled, else by FLOPs: sl_sim_stage_recompute_s); what each
 *              keeps: replay_memory.c. ZeRO-1 over m ranks of the
 *              stage's sync group: the update covers 1/m of the stage (its moments:
 *              replay_memory.c); its sync is a reduce-scatter and, after the update, an
 *              all-gather (replay_collectives.c).
 *   CPU quota  a device that is a CPU quota computes at full speed for part of every period
 *              and stands still for the rest, and its ranks wait asleep (replay_cpu_quota.c).
 *              The periods' phases are nobody's to know: the step time is the mean over
 *              PHASE_DRAWS spreads of them.
 *   spells     a device whose speed wanders (catalogue speed_spells) is slow for part of the
 *              time, in spells longer than a step, each replica on its own: each draw puts
 *              every replica in or out of a spell (spell_factor), so that the mean over the
 *              draws is the profile's speed for one replica and the slowest of several for a
 *              sync.
 *   memory     peak resident memory of the process, per rank (replay_memory.c); a stage
 *              reports its rank with the highest share of its device.
 *   timeline   with env->timeline set, the timed step of the first draw is recorded span by
 *              span (plan/timeline.h), as `sailor run --timeline` records a run.
 * The ranks' hosts come from the cluster file the simulator was given (the launcher's own
 * placement, plan/placement.h), else every replica is a host of its own.
 *
 * Unlike the rest of sl_simulate this model allocates (the instruction lists of every rank); it
 * is meant for plans of our runtime, tens of ranks, not for the planner's inner loop over
 * thousands of GPUs. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/placement.h"
#include "plan/schedule.h"
#include "sim/replay.h"

/* OpenMPI's TCP transport sends a message of up to its eager limit at once
 * (SL_RT_TCP_EAGER_BYTES); a larger one goes by rendezvous and moves only while both ends are
 * inside MPI calls (no progress thread): after MPI_Isend it waits for the sender's next
 * receive, send or collective, and then for the receiver to be in the matching receive. None of
 * it moves before: the TCP transport offers put (btl_tcp_flags), so the rendezvous header goes
 * alone, without the 64 KiB "phase 1" fragment btl_tcp_rndv_eager_limit names (a 128 KiB
 * message over a 50 Mbit/s testbed link took 12.0 ms from the receive whether the receiver
 * entered it at once or 50 or 100 ms after the Isend; docs/design/runtime-model.md).
 * Between ranks of one host the receiver copies the data itself (shared memory). */
#define TCP_EAGER_BYTES SL_RT_TCP_EAGER_BYTES
#define TCP_HEADER_BYTES SL_RT_TCP_HEADER_BYTES
#define PHASE_DRAWS 8

/* Linux wakes a sleeping thread up to its timer slack (50 us by default) after the time it
 * asked for: half of it on average, where the profile did not measure the sleeping wait. */
#define TIMER_SLACK_S 50e-6

int sl_sim_replay_uses(const struct sl_sim_env *env, const struct sl_plan *plan)
{
	for (long i = 0; i < (long)plan->num_stages * plan->num_pipelines; i++) {
		const struct sl_profile *p = env->profiles[plan->replicas[i].gpu];
		if (!p || !p->runtime_sailor)
			return 0;
	}
	return 1;
}

int sl_sim_replay_model_possible(const struct sl_sim_env *env, enum sl_cost_model cm)
{
	if (cm != SL_COST_SAILOR)
		return 0;
	for (int g = 0; g < env->catalogue.gpu_count; g++)
		if (env->profiles[g] && env->profiles[g]->runtime_sailor)
			return 1;
	return 0;
}

/* The CPU the message from rank src to rank dst costs the sender (receiver 0) or the receiver
 * (1): the network profile's message probe for the two devices' types, between hosts or within
 * one (0 where not measured). The sender pays at its Isend, once per receiver; the
 * receiver once the message is there. */
static double message_cpu_s(const struct sl_replay *x, int src, int dst, int receiver)
{
	const struct sl_role *from = &x->t->roles[src], *to = &x->t->roles[dst];
	return sl_network_message_cpu_s(x->env->network, from->gpu, to->gpu,
					x->st[src].host == x->st[dst].host, x->act_bytes, receiver);
}

/* The message from rank src to rank dst starts moving at start_s. */
static void transfer(struct sl_replay *x, int src, int dst, int kind, int m, double start_s)
{
	const struct sl_role *from = &x->t->roles[src], *to = &x->t->roles[dst];
	struct sl_replay_rank *s = &x->st[src], *d = &x->st[dst];
	double start = start_s, *free_at = NULL;
	x->source[((size_t)dst * 2 + kind) * x->nmax + m] = src; /* (the receiver's CPU needs it) */
	if (d->host != s->host) {
		free_at = &x->link_free[sl_replay_link(x, s->host, to->zone)];
		start = fmax(start, *free_at);
		x->egress_usd += x->act_bytes / 1e9 *
				 sl_network_egress_usd_per_gb(x->env->network, from->zone, to->zone);
	}
	double full = sl_replay_link_s(x->env, from, s->host, to, d->host, x->act_bytes);
	double end = start + full;
	if (free_at && sl_replay_link_take_whole(x, src, dst, x->act_bytes, start, &end)) {
		x->arrival[((size_t)dst * 2 + kind) * x->nmax + m] = end;
		return;
	}
	if (free_at) {
		/* A link that idled lets its burst through at once (the network profile's burst
		 * probe): a token bucket that refills at the link's rate while it is quiet and that
		 * this message drains first; what an eager message left owing (negative tokens,
		 * sl_replay_link_take_whole) is paid first. */
		double *tokens = &x->link_tokens[free_at - x->link_free];
		double burst = sl_network_burst_bytes(x->env->network, from->zone, from->gpu,
						      to->zone, to->gpu);
		*tokens = fmin(burst, *tokens + (start - *free_at) * x->act_bytes / full);
		double at_once = fmin(*tokens, x->act_bytes);
		*tokens -= at_once;
		end = start + full * (x->act_bytes - at_once) / x->act_bytes;
		*free_at = end;
	}
	x->arrival[((size_t)dst * 2 + kind) * x->nmax + m] = end;
}

/* Rank r enters an MPI call at its clock: its waiting Isends are offered to their receivers
 * (OpenMPI's rendezvous: the data moves once the receiver has matched it in a receive). */
static void progress(struct sl_replay *x, int r)
{
	struct sl_replay_rank *me = &x->st[r];
	for (int i = 0; i < me->pending_count; i++) {
		size_t at = ((size_t)me->pending[i].dst * 2 + me->pending[i].kind) * x->nmax +
			    me->pending[i].microbatch;
		x->ready[at] = me->clock;
		x->source[at] = r;
	}
	me->pending_count = 0;
}

/* What one call of sl_sim_replay works on: the plan's ranks with their instruction lists, the
 * replay's tables (x) and the collectives' scratch. */
struct runtime_sim {
	const struct sl_sim_env *env;
	const struct sl_plan *plan;
	struct sl_role_table t;
	struct sl_schedule *sched; /* [W] each rank's instruction list */
	struct sl_replay_rank *st;     /* [W] */
	struct sl_replay x;     /* owns arrival, ready, source, link_free and link_tokens */
	int *members;              /* [W] the world ranks of one group */
	double *round_done;        /* [2W] doubles: the collectives' scratch */
	int W, hosts;
	int quota;                 /* some rank's device is a CPU quota */
	struct sl_timeline *rec;   /* the spans of the step being recorded, NULL: none */
	double rec_origin_s;       /* that step's start */
};

/* A span of rank r in the step being recorded (env->timeline; plan/timeline.h). */
static void record(struct runtime_sim *s, int r, int kind, int microbatch, double start_s,
		   double end_s, double cpu_s)
{
	if (s->rec)
		sl_timeline_add(s->rec, r, 1, kind, microbatch, start_s - s->rec_origin_s,
				end_s - s->rec_origin_s, cpu_s);
}

/* Every replica's device needs the profile's memory figures at its (micro-batch, TP). */
static int check_memory_figures(const struct sl_sim_env *env, const struct sl_plan *plan,
				struct sl_err *err)
{
	const int P = plan->num_stages, D = plan->num_pipelines, b = plan->micro_batch;
	for (int k = 0; k < P; k++)
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			if (!sl_replay_profile_memory(env, r->gpu, b, r->tp))
				return sl_err_set(err, SL_ENOTFOUND, "profile '%s': no memory figures "
						  "for mbs %d tp %d: profile it again with `sailor "
						  "profile`", env->profiles[r->gpu]->path, b, r->tp);
		}
	return 0;
}

/* Builds the ranks' table, their placement and instruction lists, and allocates the replay's
 * tables. */
static int build(struct runtime_sim *s, long long G, struct sl_sim_result *out,
		 struct sl_err *err)
{
	const struct sl_sim_env *env = s->env;
	const struct sl_plan *plan = s->plan;
	const int P = plan->num_stages, D = plan->num_pipelines, b = plan->micro_batch;
	int rc = sl_role_table_build(plan, G, &s->t, err);
	if (!rc && env->cluster)
		rc = sl_placement_assign(&s->t, env->cluster, &env->catalogue, err);
	if (!rc)
		rc = sl_schedule_build_all(&s->t, &s->sched, err);
	if (rc)
		return rc;
	const int W = s->W = s->t.world_size;
	int nmax = 0;
	for (int j = 0; j < D; j++)
		if (s->t.microbatches[j] > nmax)
			nmax = s->t.microbatches[j];
	out->microbatches = nmax;
	s->hosts = env->cluster ? env->cluster->host_count : P * D;
	struct sl_replay *x = &s->x;
	s->st = calloc((size_t)W, sizeof(*s->st));
	x->arrival = malloc((size_t)W * 2 * (size_t)nmax * sizeof(double));
	x->ready = malloc((size_t)W * 2 * (size_t)nmax * sizeof(double));
	x->source = malloc((size_t)W * 2 * (size_t)nmax * sizeof(int));
	s->members = malloc((size_t)W * sizeof(int));
	sl_replay_zone_slots(x, plan);
	x->link_free = calloc((size_t)s->hosts * (size_t)x->link_zones, sizeof(double));
	x->link_tokens = calloc((size_t)s->hosts * (size_t)x->link_zones, sizeof(double));
	s->round_done = malloc((size_t)W * 2 * sizeof(double));
	if (!s->st || !x->arrival || !x->ready || !x->source || !s->members || !x->link_free ||
	    !x->link_tokens || !s->round_done)
		return sl_err_set(err, SL_ENOMEM, "out of memory");
	for (long i = 0; i < (long)W * 2 * nmax; i++)
		x->arrival[i] = -1;
	x->env = env;
	x->t = &s->t;
	x->st = s->st;
	x->nmax = nmax;
	x->act_bytes = SL_FP32_BYTES * (double)b * env->model.seq_len * env->model.hidden;
	return 0;
}

/* Each rank's times (forward, backward with its recomputation, its share of the update), its
 * host and its device's CPU quota. */
static int init_ranks(struct runtime_sim *s, struct sl_sim_result *out, struct sl_err *err)
{
	const struct sl_sim_env *env = s->env;
	const struct sl_plan *plan = s->plan;
	const int D = plan->num_pipelines, b = plan->micro_batch;
	struct sl_replay_rank *st = s->st;
	for (int r = 0; r < s->W; r++) {
		const struct sl_role *ro = &s->t.roles[r];
		st[r].host = env->cluster ? ro->host : ro->stage * D + ro->pipeline;
		if (sl_sim_layers_fwd_bwd(env, SL_COST_SAILOR, ro->gpu, b, ro->tp, ro->first_layer,
					  ro->last_layer, &st[r].fwd_s, &st[r].bwd_s))
			return sl_err_set(err, SL_ENOTFOUND, "no layer times for %s mbs %d tp %d",
					  env->catalogue.gpus[ro->gpu].name, b, ro->tp);
		st[r].update_s = sl_sim_layers_update_s(env, SL_COST_SAILOR, ro->gpu, b, ro->tp,
							ro->first_layer, ro->last_layer);
		if (st[r].update_s < 0)
			st[r].update_s = 0;
		const struct sl_plan_stage *ps = &plan->stages[ro->stage];
		/* backward reruns the blocks' forward (full) or their attention core (selective),
		 * as the planner's model charges it (memory_options.c) */
		struct sl_sim_replica_query q = {.gpu = ro->gpu, .mbs = b, .tp = ro->tp,
						 .first_layer = ro->first_layer,
						 .last_layer = ro->last_layer,
						 .recompute = ps->recompute};
		double recompute_s = sl_sim_stage_recompute_s(env, SL_COST_SAILOR, &q);
		if (recompute_s > 0)
			st[r].bwd_s += recompute_s;
		if (ps->zero && D > 1) /* each rank updates 1/m of the stage */
			st[r].update_s /= sl_replay_stage_sync_group_size(plan, ro->stage);
		const struct sl_gpu_type *gt = &env->catalogue.gpus[ro->gpu];
		st[r].spell_fraction = gt->spell_fraction;
		st[r].spell_slowdown = gt->spell_slowdown;
		st[r].quota_cores = gt->cpu_quota_cores;
		st[r].period_s = gt->cpu_quota_period_s;
		const struct sl_profile *prof = env->profiles[ro->gpu];
		st[r].test_cpu_s = prof && prof->idle_measured ? prof->idle_cpu_per_test_s : 0;
		st[r].test_late_s = prof && prof->idle_measured ? prof->idle_late_per_test_s
								: 0.5 * TIMER_SLACK_S;
		if (sl_sim_time_source(env, ro->gpu, b, ro->tp) == SL_TIME_ESTIMATED)
			out->stages[ro->stage].time_estimated = 1;
	}
	return 0;
}

/* The factor on the passes of a replica's ranks (`replica`: its first rank) in draw `draw` of
 * PHASE_DRAWS: 1 + slowdown in the draws it spends in a spell, 1 in the others, over the mean
 * of those, so that the draws average to the profile's speed (a profile samples the device in
 * and out of spells as a run does). The draws in a spell are a Beatty sequence of the
 * fraction, shifted per replica by a golden-ratio step: every replica has round(fraction x
 * draws) of them, give or take one, and two replicas have theirs in different draws: measured,
 * each vCPU has its spells at its own times, and a rank stays on the vCPU it woke on for many
 * steps (docs/design/runtime-model.md, speed spells). */
static double spell_factor(const struct sl_replay_rank *rank, int replica, int draw)
{
	double f = rank->spell_fraction, slow = rank->spell_slowdown;
	if (!(f > 0 && slow > 0))
		return 1;
	double shift = 0.6180339887 * (replica + 1) + 0.5;
	shift -= floor(shift);
	int in_spell = floor(f * (draw + 1) + shift) > floor(f * draw + shift);
	double spells = floor(f * PHASE_DRAWS + shift) - floor(shift);
	if (spells <= 0)
		return 1;
	return (1 + (in_spell ? slow : 0)) / (1 + slow * spells / PHASE_DRAWS);
}

/* Starts draw `draw`: every rank at time 0 with no budget used, its periods shifted by the
 * draw's phase, in or out of a spell, and every link free. */
static void start_draw(struct runtime_sim *s, int draw)
{
	struct sl_replay_rank *st = s->st;
	for (int r = 0; r < s->W; r++) {
		double u = 0.6180339887 * (r + 1) + 0.7548776662 * draw;
		st[r].phase_s = s->quota ? (u - floor(u)) * st[r].period_s : 0;
		/* a TP group's ranks share their replica's spells: measured, their passes slow and
		 * speed up together, where two data-parallel replicas stay apart for many steps
		 * (docs/design/runtime-model.md, speed spells) */
		const struct sl_role *ro = &s->t.roles[r];
		int replica = s->t.replica_first_rank[ro->stage * s->t.num_pipelines + ro->pipeline];
		st[r].pass_factor = spell_factor(&st[r], replica, draw);
		st[r].clock = 0;
		st[r].used_s = st[r].cpu_s = st[r].tests = 0;
		st[r].awake = 0;
		st[r].period = LONG_MIN;
		st[r].pending_count = 0;
	}
	for (long i = 0; i < (long)s->hosts * s->x.link_zones; i++) {
		s->x.link_free[i] = 0;
		s->x.link_tokens[i] = HUGE_VAL; /* quiet before the step: full (capped at use) */
	}
}

/* The runnable rank with the earliest clock, -1 if none; *progressed: some rank waiting in MPI
 * offered its pending Isends (a rank passed over may now have its message). */
static int next_rank(struct runtime_sim *s, int *progressed)
{
	const struct sl_replay *x = &s->x;
	struct sl_replay_rank *st = s->st;
	int best = -1;
	*progressed = 0;
	for (int r = 0; r < s->W; r++) {
		const struct sl_schedule *sc = &s->sched[r];
		if (st[r].pc >= sc->count)
			continue;
		const struct sl_instr *in = &sc->instrs[st[r].pc];
		/* waiting in a receive or a collective is being inside MPI */
		if (st[r].pending_count && in->op != SL_INSTR_FORWARD &&
		    in->op != SL_INSTR_BACKWARD && in->op != SL_INSTR_LOAD_MICROBATCH) {
			progress(&s->x, r);
			*progressed = 1; /* a rank passed over above may now have its message */
		}
		if (in->op == SL_INSTR_REDUCE_GRADIENTS || in->op == SL_INSTR_OPTIMIZER_STEP)
			continue; /* collective: after every rank got there */
		if (in->op == SL_INSTR_RECV_ACTIVATION || in->op == SL_INSTR_RECV_GRADIENT) {
			int kind = in->op == SL_INSTR_RECV_GRADIENT;
			size_t at = ((size_t)r * 2 + kind) * x->nmax + in->microbatch;
			if (x->arrival[at] < 0 && x->ready[at] < 0)
				continue;
		}
		if (best < 0 || st[r].clock < st[best].clock)
			best = r;
	}
	return best;
}

/* Rank r runs its next instruction. */
static void execute(struct runtime_sim *s, int r)
{
	struct sl_replay *x = &s->x;
	struct sl_replay_rank *st = s->st, *me = &st[r];
	const struct sl_instr *in = &s->sched[r].instrs[me->pc++];
	switch (in->op) {
	case SL_INSTR_FORWARD:
	case SL_INSTR_BACKWARD: {
		double t0 = me->clock, cpu0 = me->cpu_s;
		sl_replay_run_work(me, (in->op == SL_INSTR_FORWARD ? me->fwd_s : me->bwd_s) *
					   me->pass_factor);
		me->compute_s += me->clock - t0;
		record(s, r, in->op, in->microbatch, t0, me->clock, me->cpu_s - cpu0);
		break;
	}
	case SL_INSTR_RECV_ACTIVATION:
	case SL_INSTR_RECV_GRADIENT: {
		int kind = in->op == SL_INSTR_RECV_GRADIENT;
		size_t idx = ((size_t)r * 2 + kind) * x->nmax + in->microbatch;
		if (x->arrival[idx] < 0) /* a rendezvous: it moves from now (or when offered) */
			transfer(x, x->source[idx], r, kind, in->microbatch,
				 fmax(x->ready[idx], me->clock));
		double at = x->arrival[idx];
		double t0 = me->clock, cpu0 = me->cpu_s;
		sl_replay_wait_idle(me, at);
		sl_replay_run_cpu(me, message_cpu_s(x, x->source[idx], r, 1));
		me->wait_s += me->clock - t0;
		record(s, r, in->op, in->microbatch, t0, me->clock, me->cpu_s - cpu0);
		break;
	}
	case SL_INSTR_SEND_ACTIVATION:
	case SL_INSTR_SEND_GRADIENT: {
		int kind = in->op == SL_INSTR_SEND_GRADIENT;
		double t0 = me->clock, cpu0 = me->cpu_s;
		progress(x, r); /* MPI_Isend is an MPI call */
		for (int p = 0; p < in->peer_count; p++) {
			int d = in->peers[p];
			sl_replay_run_cpu(me, message_cpu_s(x, r, d, 0));
			if (st[d].host == me->host ||
			    x->act_bytes + TCP_HEADER_BYTES <= TCP_EAGER_BYTES ||
			    me->pending_count == SL_RT_PENDING_MAX)
				transfer(x, r, d, kind, in->microbatch, me->clock);
			else
				me->pending[me->pending_count++] =
					(struct sl_replay_pending_send){d, kind, in->microbatch};
		}
		record(s, r, in->op, in->microbatch, t0, me->clock, me->cpu_s - cpu0);
		break;
	}
	default: /* load-microbatch: reading tokens, nothing to time */
		break;
	}
}

/* Runs the instruction lists of one step up to the gradient reduction: always advance the
 * runnable rank with the earliest clock, so messages take the shared links in the order of
 * simulated time. */
static int run_lists(struct runtime_sim *s, struct sl_err *err)
{
	struct sl_replay *x = &s->x;
	struct sl_replay_rank *st = s->st;
	const int W = s->W;
	for (int r = 0; r < W; r++) {
		st[r].pc = 0;
		st[r].compute_s = st[r].wait_s = 0;
	}
	for (long i = 0; i < (long)W * 2 * x->nmax; i++)
		x->arrival[i] = x->ready[i] = -1;
	x->egress_usd = 0;
	for (;;) {
		int progressed;
		int best = next_rank(s, &progressed);
		if (best < 0 && progressed)
			continue;
		if (best < 0)
			break;
		execute(s, best);
	}
	for (int r = 0; r < W; r++)
		if (st[r].pc >= s->sched[r].count ||
		    s->sched[r].instrs[st[r].pc].op != SL_INSTR_REDUCE_GRADIENTS)
			return sl_err_set(err, SL_EINPUT, "runtime model: rank %d did not reach its "
					  "gradient reduction (schedule inconsistent)", r);
	return 0;
}

/* The gradient sync: stage groups first, then the tied token table (grad_sync.c's order). */
static void sync_gradients(struct runtime_sim *s, struct sl_sim_result *out)
{
	const struct sl_sim_env *env = s->env;
	const struct sl_plan *plan = s->plan;
	const int P = plan->num_stages, D = plan->num_pipelines;
	struct sl_replay *x = &s->x;
	int *members = s->members;
	for (int k = 0; k < P; k++) {
		/* one group per TP rank where the stage's replicas share a TP degree: their rings
		 * run at once over the same hosts (sl_replay_group_allreduce's sharing) */
		int groups = sl_replay_stage_sync_groups(plan, k);
		for (int gi = 0; gi < groups; gi++) {
			double bytes;
			int m = sl_replay_stage_sync_members(env, plan, &s->t, k, gi, members, &bytes);
			if (sl_replay_stage_zero(plan, k) && s->quota)
				sl_replay_zero_reduce_scatter(x, members, m, bytes, s->round_done);
			else /* MPI's blocking reduce-scatter and all-gather: a ring's bytes */
				x->egress_usd += sl_replay_group_allreduce(x, members, m, bytes,
								       groups, s->round_done);
		}
		out->stages[k].dp_sync_s = 0;
	}
	if (P > 1 && env->sizes->head_holds_embedding) {
		int uniform = 1;
		int t0 = sl_plan_replica(plan, 0, 0)->tp;
		for (int j = 0; j < D; j++)
			uniform &= sl_plan_replica(plan, 0, j)->tp == t0 &&
				   sl_plan_replica(plan, P - 1, j)->tp == t0;
		int groups = uniform ? t0 : 1;
		for (int gi = 0; gi < groups; gi++) {
			int m = 0;
			for (int side = 0; side < 2; side++) {
				int k = side ? P - 1 : 0;
				for (int j = 0; j < D; j++) {
					const struct sl_replica *rep = sl_plan_replica(plan, k, j);
					for (int tr = 0; tr < rep->tp; tr++)
						if (!uniform || tr == gi)
							members[m++] = sl_role_of(&s->t, k, j, tr)->rank;
				}
			}
			double bytes = SL_FP32_BYTES * (double)env->model.vocab * env->model.hidden /
				       (uniform ? t0 : 1);
			x->egress_usd += sl_replay_group_allreduce(x, members, m, bytes, groups,
								       s->round_done);
		}
	}
	for (int r = 0; r < s->W; r++)
		s->st[r].sync_end_s = s->st[r].clock;
}

/* After the sync: the global norm (everyone waits for the last rank), then each rank's
 * optimizer step and ZeRO-1's all-gather of the updated parameters (runtime/zero.c). Returns
 * the norm's end. */
static double norm_and_update(struct runtime_sim *s)
{
	const struct sl_plan *plan = s->plan;
	const int P = plan->num_stages, W = s->W;
	struct sl_replay_rank *st = s->st;
	for (int r = 0; r < W; r++)
		st[r].span_cpu_mark_s = st[r].cpu_s;
	double norm = sl_replay_world_scalar_allreduces(&s->x, W, s->round_done);
	for (int r = 0; r < W; r++) {
		sl_replay_wait_idle(&st[r], norm);
		record(s, r, SL_TL_SCALARS, -1, st[r].sync_end_s, st[r].clock,
		       st[r].cpu_s - st[r].span_cpu_mark_s);
		st[r].span_cpu_mark_s = st[r].cpu_s;
		st[r].span_start_s = st[r].clock;
		sl_replay_run_work(&st[r], st[r].update_s);
		st[r].gather_s = st[r].clock;
	}
	for (int k = 0; s->quota && k < P; k++)
		for (int gi = 0; sl_replay_stage_zero(plan, k) && gi < sl_replay_stage_sync_groups(plan, k);
		     gi++) {
			double bytes;
			int m = sl_replay_stage_sync_members(s->env, plan, &s->t, k, gi, s->members,
							 &bytes);
			sl_replay_zero_allgather(&s->x, s->members, m, bytes, s->round_done,
					     s->round_done + W);
		}
	for (int r = 0; r < W; r++) {
		record(s, r, SL_TL_UPDATE, -1, st[r].span_start_s, st[r].clock,
		       st[r].cpu_s - st[r].span_cpu_mark_s);
		st[r].gather_s = st[r].clock - st[r].gather_s;
	}
	return norm;
}

/* What a rank touches of libnbc's scratch in its in-place ring all-reduces: OpenMPI's ring
 * (NBC_ARED_RING, which comm_mpi.c asks for) allocates a buffer the size of the call and
 * receives each round's segment, ceil(count / m) of count elements, into its start; freed, it
 * is reused from glibc's heap and stays resident. The largest over the rank's calls: its stage's
 * gradients over its sync group (all in one bucket for these models, at most
 * SL_RUNTIME_BUCKET_BYTES otherwise; a ZeRO stage reduce-scatters instead) and the tied token
 * table over the first and last stages. */
static double ring_scratch_bytes(const struct runtime_sim *s, const struct sl_role *ro)
{
	const struct sl_sim_env *env = s->env;
	const struct sl_plan *plan = s->plan;
	const int P = plan->num_stages, D = plan->num_pipelines, k = ro->stage;
	int uniform = sl_replay_stage_uniform(plan, k);
	double bytes = 0, most = 0;
	int m = sl_replay_stage_sync_members(env, plan, &s->t, k, uniform ? ro->tp_rank : 0,
					 s->members, &bytes);
	if (m > 1 && !plan->stages[k].zero)
		most = ceil(fmin(bytes, SL_RUNTIME_BUCKET_BYTES) / SL_FP32_BYTES / m) *
		       SL_FP32_BYTES;
	if (P > 1 && env->sizes->head_holds_embedding && (k == 0 || k == P - 1)) {
		int tied_uniform = 1, tp = sl_plan_replica(plan, 0, 0)->tp, ranks = 0;
		for (int j = 0; j < D; j++) {
			tied_uniform &= sl_plan_replica(plan, 0, j)->tp == tp &&
					sl_plan_replica(plan, P - 1, j)->tp == tp;
			ranks += sl_plan_replica(plan, 0, j)->tp +
				 sl_plan_replica(plan, P - 1, j)->tp;
		}
		double table = (double)env->model.vocab * env->model.hidden /
			       (tied_uniform ? tp : 1);
		int members = tied_uniform ? 2 * D : ranks;
		most = fmax(most, ceil(table / members) * SL_FP32_BYTES);
	}
	return most;
}

/* Per stage figures (the slowest rank of the stage) and the iteration's, from its time T and
 * the pipelines' end. */
static void stage_figures(const struct runtime_sim *s, struct sl_sim_result *out, double T,
			  double pipeline_end, int draws)
{
	const struct sl_replay_rank *st = s->st;
	for (int r = 0; r < s->W; r++) {
		const struct sl_role *ro = &s->t.roles[r];
		struct sl_sim_stage *sg = &out->stages[ro->stage];
		sg->fwd_s = fmax(sg->fwd_s, st[r].fwd_s);
		sg->bwd_s = fmax(sg->bwd_s, st[r].bwd_s);
		sg->compute_s = fmax(sg->compute_s, st[r].compute_s);
		sg->p2p_s = fmax(sg->p2p_s, st[r].wait_s);
		sg->optimizer_s = fmax(sg->optimizer_s, st[r].update_s + st[r].gather_s);
		sg->dp_sync_s = fmax(sg->dp_sync_s, st[r].sync_end_s - st[r].reduce_arrive_s);
		sg->bubble_s = fmax(sg->bubble_s,
				    T - st[r].compute_s - st[r].update_s - st[r].gather_s);
		if (sl_replay_has_quota(&st[r])) {
			sg->cpu_s = fmax(sg->cpu_s, st[r].cpu_steps_s / draws);
			sg->wait_tests = fmax(sg->wait_tests, st[r].tests_steps / draws);
			sg->dp_sync_cpu_s = fmax(sg->dp_sync_cpu_s, st[r].sync_cpu_steps_s / draws);
		}
	}
	out->iteration_time_s = T;
	out->pipeline_time_s = pipeline_end;
	double opt = 0;
	for (int r = 0; r < s->W; r++)
		opt = fmax(opt, st[r].update_s + st[r].gather_s);
	out->optimizer_s = opt;
	out->dp_sync_s = fmax(0, T - pipeline_end);
	out->throughput_it_s = 1.0 / T;
	out->slowest_pipeline = 0;
}

/* GPU rent of every GPU of the plan for T seconds, and the egress of one step. */
static void cost(const struct runtime_sim *s, struct sl_sim_result *out, double T,
		 double egress_usd)
{
	const struct sl_plan *plan = s->plan;
	double usd_per_hour = 0;
	for (long i = 0; i < (long)plan->num_stages * plan->num_pipelines; i++)
		usd_per_hour += plan->replicas[i].tp *
				sl_catalogue_gpu_usd_per_hour(&s->env->catalogue, plan->replicas[i].gpu,
							      plan->replicas[i].zone);
	out->gpu_usd_per_hour = usd_per_hour;
	out->gpu_cost_usd_per_iter = usd_per_hour / 3600.0 * T;
	out->egress_cost_usd_per_iter = egress_usd;
	out->cost_usd_per_iter = out->gpu_cost_usd_per_iter + egress_usd;
}

/* Memory: each stage reports its rank with the highest share of its device. */
static void rank_memories(const struct runtime_sim *s, struct sl_sim_result *out)
{
	const struct sl_sim_env *env = s->env;
	const struct sl_plan *plan = s->plan;
	const int P = plan->num_stages, b = plan->micro_batch;
	out->fits_memory = 1;
	for (int k = 0; k < P; k++) {
		out->stages[k].fits = 1;
		out->stages[k].memory.total_bytes = -1;
	}
	for (int r = 0; r < s->W; r++) {
		const struct sl_role *ro = &s->t.roles[r];
		int k = ro->stage;
		struct sl_sim_memory mem;
		/* a stage that mixes TP degrees sizes its bucket for its largest whole tensor */
		int mixed = !sl_replay_stage_uniform(plan, k);
		double whole = mixed ? sl_replay_largest_whole_tensor_bytes(env, ro->first_layer,
									ro->last_layer)
				     : 0;
		int zgroup = plan->stages[k].zero ? sl_replay_stage_sync_group_size(plan, k) : 1;
		/* mixed TP: ZeRO shards the stage's whole tensors (all of them, as moments) */
		double whole_all = mixed ? 2.0 * SL_FP32_BYTES *
						   sl_sim_stage_params(env, 1, ro->first_layer,
								       ro->last_layer)
					 : 0;
		/* this rank's place in the stage's ZeRO group: the replica (one TP degree), else
		 * its rank among all of the stage's (groups.c orders both by world rank) */
		int zrank = ro->pipeline;
		if (mixed) {
			zrank = ro->tp_rank;
			for (int j = 0; j < ro->pipeline; j++)
				zrank += sl_plan_replica(plan, k, j)->tp;
		}
		sl_replay_rank_memory(env, ro, b, s->sched[r].slots, P, whole, plan->stages[k].recompute,
				  zgroup, zrank, mixed && zgroup > 1 ? whole_all : 0, s->quota,
				  ring_scratch_bytes(s, ro), &mem);
		struct sl_sim_stage *sg = &out->stages[k];
		if (sg->memory.total_bytes < 0 ||
		    mem.total_bytes / mem.capacity_bytes >
			    sg->memory.total_bytes / sg->memory.capacity_bytes) {
			sg->memory = mem;
			sg->memory_replica = ro->pipeline;
		}
		if (mem.total_bytes > mem.capacity_bytes) {
			sg->fits = 0;
			out->fits_memory = 0;
		}
	}
}

/* Replays two steps per phase draw, the second one timed (a step starts where the previous
 * one's optimizer left each rank, and its CPU budget), from norm to norm. Devices that are CPU
 * quotas have periods whose phases nobody knows (each cgroup keeps its own timer), and a
 * message that reaches a throttled rank waits for its next period: the step time is the mean
 * over PHASE_DRAWS spreads of phases (golden-ratio sequences, so the draws cover [0, period)
 * evenly and the result is deterministic), and of which replicas are in a speed spell
 * (spell_factor). With such devices every rank runs the collectives as their non-blocking
 * forms (comm.h), which OpenMPI's libnbc serves: ZeRO-1's are timed as it runs them
 * (sl_replay_zero_reduce_scatter, sl_replay_zero_allgather); MPI's blocking ones move a ring's bytes,
 * as the all-reduce. */
static int replay(struct runtime_sim *s, struct sl_sim_result *out, struct sl_err *err)
{
	struct sl_replay_rank *st = s->st;
	const int W = s->W;
	double T = 0, pipeline_end = 0, egress_usd = 0, T_sum = 0;
	s->quota = 0;
	int spells = 0; /* some rank's device has speed spells */
	for (int r = 0; r < W; r++) {
		s->quota |= sl_replay_has_quota(&st[r]);
		spells |= st[r].spell_fraction > 0 && st[r].spell_slowdown > 0;
	}
	const int draws = s->quota || spells ? PHASE_DRAWS : 1;
	for (int draw = 0; draw < draws; draw++) {
		double prev_norm = 0;
		start_draw(s, draw);
		for (int step = 0; step < 2; step++) {
			/* the timeline is of the step timed, in the first draw */
			s->rec = draw == 0 && step == 1 && s->env->timeline
					 ? &s->env->timeline->spans : NULL;
			s->rec_origin_s = prev_norm;
			int rc = run_lists(s, err);
			if (rc)
				return rc;
			pipeline_end = 0;
			for (int r = 0; r < W; r++) {
				st[r].reduce_arrive_s = st[r].clock;
				st[r].sync_cpu_mark_s = st[r].cpu_s;
				pipeline_end = fmax(pipeline_end, st[r].clock - prev_norm);
			}
			sync_gradients(s, out);
			for (int r = 0; r < W; r++)
				record(s, r, SL_TL_GRAD_SYNC, -1, st[r].reduce_arrive_s,
				       st[r].sync_end_s, st[r].cpu_s - st[r].sync_cpu_mark_s);
			for (int r = 0; step == 1 && r < W; r++)
				st[r].sync_cpu_steps_s += st[r].cpu_s - st[r].sync_cpu_mark_s;
			double norm = norm_and_update(s);
			for (int r = 0; r < W; r++) { /* the CPU of a cycle, update to update */
				if (step == 1) {
					st[r].cpu_steps_s += st[r].cpu_s - st[r].cpu_mark_s;
					st[r].tests_steps += st[r].tests - st[r].tests_mark;
				}
				st[r].cpu_mark_s = st[r].cpu_s;
				st[r].tests_mark = st[r].tests;
			}
			egress_usd = s->x.egress_usd;
			T = norm - prev_norm;
			prev_norm = norm;
		}
		T_sum += T;
	}
	s->rec = NULL;
	T = T_sum / draws;
	stage_figures(s, out, T, pipeline_end, draws);
	cost(s, out, T, egress_usd);
	return 0;
}

int sl_sim_replay(const struct sl_sim_env *env, const struct sl_plan *plan, long long G,
		   struct sl_sim_result *out, struct sl_err *err)
{
	int rc = check_memory_figures(env, plan, err);
	if (rc)
		return rc;
	struct runtime_sim s;
	memset(&s, 0, sizeof(s));
	s.env = env;
	s.plan = plan;
	rc = build(&s, G, out, err);
	if (!rc)
		rc = init_ranks(&s, out, err);
	if (!rc)
		rc = replay(&s, out, err);
	if (!rc)
		rank_memories(&s, out);
	/* The schedules were built one per rank of s.t: freed while s.t still counts them, before
	 * a timeline takes the table over (which leaves s.t empty). */
	sl_schedule_free_all(s.sched, s.t.world_size);
	if (!rc && env->timeline) { /* the roles go with the spans (sim.h: one call a timeline) */
		if (env->timeline->recorded)
			sl_role_table_free(&env->timeline->roles);
		env->timeline->roles = s.t;
		env->timeline->recorded = 1;
		memset(&s.t, 0, sizeof(s.t));
	}
	sl_role_table_free(&s.t);
	free(s.st);
	free(s.x.arrival);
	free(s.x.ready);
	free(s.x.source);
	free(s.members);
	free(s.x.link_free);
	free(s.x.link_tokens);
	free(s.round_done);
	return rc;
}
