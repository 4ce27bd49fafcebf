/* The cost model of our own runtime, `sailor run` (src/runtime), used when every GPU type of a plan
 * is profiled by `sailor profile` (profiles of schema sailor.profile/1 measure our runtime's
 * layers; the shipped SOSP'25 profiles measure Megatron-DeepSpeed's, for which time_sailor.c
 * models DeepSpeed's engine). Where the two runtimes differ, this model follows ours. This file
 * holds its entry, sl_sim_runtime, and the replay of the ranks' instruction lists; the rest is
 * in files named for their job, which share runtime_model.h:
 *
 *   runtime_cpu_quota.c    how a rank on a device that is a CPU quota works and waits
 *   runtime_collectives.c  link times; the gradient all-reduces, ZeRO-1's reduce-scatter and
 *                          all-gather, the world's small all-reduces
 *   runtime_sync_groups.c  which ranks sync a stage's gradients, and how many bytes
 *   runtime_memory.c       peak resident memory of a rank
 *
 *   schedule   the very instruction lists the ranks execute (dist/schedule.h: 1F1B with
 *              min(P-k, n) activation slots), run here with times instead of tensors: forward and
 *              backward take the profile's stage times at the rank's (micro-batch, TP); a
 *              receive waits until its message has arrived; sends are non-blocking (MPI_Isend).
 *   transfers  every TP rank of the receiving replica gets a whole copy of the activation or
 *              gradient (no partition + all-gather as in DeepSpeed), from one sender rank.
 *              Messages between hosts share the sending host's link to the receiver's zone one
 *              after the other (the testbed's per-zone tc class, a NIC on real hosts): arrival =
 *              max(sent, link free) + bytes / fit bandwidth(bytes). Ranks on one host use the
 *              intra-node fit (shared memory).
 *   grad sync  after the last backward: the stage's gradient all-reduce, then the tied token
 *              table over the first and last stages, each a ring all-reduce that starts when its
 *              last member arrives (runtime_collectives.c; the groups: runtime_sync_groups.c).
 *   norm       the loss and then the global gradient norm are all-reduces of a few bytes over
 *              the world, ring rounds that need each rank and its neighbour (they end when the
 *              last rank is through). The step ends there for timing purposes.
 *   optimizer  AdamW over the rank's own shard (the profile's update seconds per parameter),
 *              after the norm; it delays the rank's next step. Two steps are run and the second
 *              is timed, from norm to norm.
 *   options    per stage (plan.h): recompute "full" reruns the stage's blocks' forward in
 *              backward; "selective" reruns the attention core (T / (6C + T) of a block's
 *              forward by FLOPs); what each keeps: runtime_memory.c. ZeRO-1 over m ranks of the
 *              stage's sync group: the update covers 1/m of the stage (its moments:
 *              runtime_memory.c); its sync is a reduce-scatter and, after the update, an
 *              all-gather (runtime_collectives.c).
 *   CPU quota  a device that is a CPU quota computes at full speed for part of every period
 *              and stands still for the rest, and its ranks wait asleep (runtime_cpu_quota.c).
 *              The periods' phases are nobody's to know: the step time is the mean over
 *              PHASE_DRAWS spreads of them.
 *   memory     peak resident memory of the process, per rank (runtime_memory.c); a stage
 *              reports its rank with the highest share of its device.
 * The ranks' hosts come from the cluster file the simulator was given (the launcher's own
 * placement, dist/placement.h), else every replica is a host of its own.
 *
 * Unlike the rest of sl_simulate this model allocates (the instruction lists of every rank); it
 * is meant for plans of our runtime, tens of ranks, not for the planner's inner loop over
 * thousands of GPUs. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/placement.h"
#include "runtime/schedule.h"
#include "sim/runtime_model.h"

/* OpenMPI's TCP transport sends a message of up to its eager limit (btl_tcp_eager_limit, 64 KiB
 * in OpenMPI 4.1) at once; a larger one goes by rendezvous and moves only while both ends are
 * inside MPI calls (no progress thread): after MPI_Isend it waits for the sender's next
 * receive, send or collective, and then for the receiver to be in the matching receive. Between
 * ranks of one host the receiver copies the data itself (shared memory). */
#define TCP_EAGER_BYTES 65536.0
#define TCP_HEADER_BYTES 64.0 /* its match header counts against the limit */
#define PHASE_DRAWS 8

/* Linux wakes a sleeping thread up to its timer slack (50 us by default) after the time it
 * asked for: half of it on average, where the profile did not measure the sleeping wait. */
#define TIMER_SLACK_S 50e-6

int sl_sim_runtime_uses(const struct sl_sim_env *env, const struct sl_plan *plan)
{
	for (long i = 0; i < (long)plan->num_stages * plan->num_pipelines; i++) {
		const struct sl_profile *p = env->profiles[plan->replicas[i].gpu];
		if (!p || !p->runtime_sailor)
			return 0;
	}
	return 1;
}

int sl_sim_runtime_model_possible(const struct sl_sim_env *env, enum sl_cost_model cm)
{
	if (cm != SL_COST_SAILOR)
		return 0;
	for (int g = 0; g < env->catalogue.gpu_count; g++)
		if (env->profiles[g] && env->profiles[g]->runtime_sailor)
			return 1;
	return 0;
}

/* The share of a block's forward that is the attention core (QK^T and the weighted sum), by
 * FLOPs: 4 B T^2 C against 24 B T C^2 in the matrices, so T / (6 C + T). Selective
 * recomputation reruns that much of the forward in backward. */
static double attention_core_share(const struct sl_sim_env *env)
{
	double T = env->model.seq_len, C = env->model.hidden;
	return T / (6.0 * C + T);
}

/* The message from rank src to rank dst starts moving at start_s. */
static void transfer(struct sl_rt_replay *x, int src, int dst, int kind, int m, double start_s)
{
	const struct sl_role *from = &x->t->roles[src], *to = &x->t->roles[dst];
	struct sl_rt_rank *s = &x->st[src], *d = &x->st[dst];
	double start = start_s, *free_at = NULL;
	if (d->host != s->host) {
		free_at = &x->link_free[(size_t)s->host * x->env->catalogue.zone_count + to->zone];
		start = fmax(start, *free_at);
		x->egress_usd += x->act_bytes / 1e9 *
				 sl_network_egress_usd_per_gb(x->env->network, from->zone, to->zone);
	}
	double end = start + sl_rt_link_s(x->env, from, s->host, to, d->host, x->act_bytes);
	if (free_at)
		*free_at = end;
	x->arrival[((size_t)dst * 2 + kind) * x->nmax + m] = end;
}

/* Rank r enters an MPI call at its clock: its waiting Isends are offered to their receivers
 * (OpenMPI's rendezvous: the data moves once the receiver has matched it in a receive). */
static void progress(struct sl_rt_replay *x, int r)
{
	struct sl_rt_rank *me = &x->st[r];
	for (int i = 0; i < me->pending_count; i++) {
		size_t at = ((size_t)me->pending[i].dst * 2 + me->pending[i].kind) * x->nmax +
			    me->pending[i].microbatch;
		x->ready[at] = me->clock;
		x->source[at] = r;
	}
	me->pending_count = 0;
}

int sl_sim_runtime(const struct sl_sim_env *env, const struct sl_plan *plan, long long G,
		   struct sl_sim_result *out, struct sl_err *err)
{
	const int P = plan->num_stages, D = plan->num_pipelines, b = plan->micro_batch;
	for (int k = 0; k < P; k++)
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			if (!sl_rt_profile_memory(env, r->gpu, b, r->tp))
				return sl_err_set(err, SL_ENOTFOUND, "profile '%s': no memory figures "
						  "for mbs %d tp %d: profile it again with `sailor "
						  "profile`", env->profiles[r->gpu]->path, b, r->tp);
		}
	struct sl_role_table t;
	memset(&t, 0, sizeof(t));
	struct sl_schedule *sched = NULL;
	struct sl_rt_rank *st = NULL;
	double *arrival = NULL, *ready = NULL;
	int *source = NULL;
	int *members = NULL;
	double *link_free = NULL;
	double *round_done = NULL; /* 2W doubles: the collectives' scratch */
	int rc = sl_role_table_build(plan, G, &t, err);
	if (!rc && env->cluster)
		rc = sl_place_roles(&t, env->cluster, &env->catalogue, err);
	if (!rc)
		rc = sl_schedule_build_all(&t, &sched, err);
	if (rc)
		goto out;
	const int W = t.world_size;
	int nmax = 0;
	for (int j = 0; j < D; j++)
		if (t.microbatches[j] > nmax)
			nmax = t.microbatches[j];
	out->microbatches = nmax;
	int hosts = env->cluster ? env->cluster->host_count : P * D;
	st = calloc((size_t)W, sizeof(*st));
	arrival = malloc((size_t)W * 2 * (size_t)nmax * sizeof(double));
	ready = malloc((size_t)W * 2 * (size_t)nmax * sizeof(double));
	source = malloc((size_t)W * 2 * (size_t)nmax * sizeof(int));
	members = malloc((size_t)W * sizeof(int));
	link_free = calloc((size_t)hosts * (size_t)env->catalogue.zone_count, sizeof(double));
	round_done = malloc((size_t)W * 2 * sizeof(double));
	if (!st || !arrival || !ready || !source || !members || !link_free || !round_done) {
		rc = sl_err_set(err, SL_ENOMEM, "out of memory");
		goto out;
	}
	for (long i = 0; i < (long)W * 2 * nmax; i++)
		arrival[i] = -1;
	double act_bytes = SL_FP32_BYTES * (double)b * env->model.seq_len * env->model.hidden;

	for (int r = 0; r < W; r++) {
		const struct sl_role *ro = &t.roles[r];
		st[r].host = env->cluster ? ro->host : ro->stage * D + ro->pipeline;
		if (sl_sim_stage_fwd_bwd(env, SL_COST_SAILOR, ro->gpu, b, ro->tp, ro->first_layer,
					 ro->last_layer, &st[r].fwd_s, &st[r].bwd_s)) {
			rc = sl_err_set(err, SL_ENOTFOUND, "no layer times for %s mbs %d tp %d",
					env->catalogue.gpus[ro->gpu].name, b, ro->tp);
			goto out;
		}
		st[r].update_s = sl_sim_stage_update_s(env, SL_COST_SAILOR, ro->gpu, b, ro->tp,
						       ro->first_layer, ro->last_layer);
		if (st[r].update_s < 0)
			st[r].update_s = 0;
		const struct sl_plan_stage *ps = &plan->stages[ro->stage];
		int first_block = ro->first_layer > 0 ? ro->first_layer : 1;
		int last_block = ro->last_layer < env->num_layers - 1 ? ro->last_layer
								     : env->num_layers - 2;
		if (ps->recompute != SL_RECOMPUTE_NONE && first_block <= last_block) {
			/* backward reruns the blocks' forward (full) or their attention core */
			double bf = 0, bb = 0;
			sl_sim_stage_fwd_bwd(env, SL_COST_SAILOR, ro->gpu, b, ro->tp, first_block,
					     last_block, &bf, &bb);
			st[r].bwd_s += ps->recompute == SL_RECOMPUTE_FULL ? bf
									  : bf * attention_core_share(env);
		}
		if (ps->zero && D > 1) /* each rank updates 1/m of the stage */
			st[r].update_s /= sl_rt_stage_sync_group_size(plan, ro->stage);
		const struct sl_gpu_type *gt = &env->catalogue.gpus[ro->gpu];
		st[r].quota_cores = gt->cpu_quota_cores;
		st[r].period_s = gt->cpu_quota_period_s;
		const struct sl_profile *prof = env->profiles[ro->gpu];
		st[r].test_cpu_s = prof && prof->idle_measured ? prof->idle_cpu_per_test_s : 0;
		st[r].test_late_s = prof && prof->idle_measured ? prof->idle_late_per_test_s
								: 0.5 * TIMER_SLACK_S;
		if (sl_sim_time_source(env, ro->gpu, b, ro->tp) == SL_TIME_ESTIMATED)
			out->stages[ro->stage].time_estimated = 1;
	}

	/* run the instruction lists: always advance the runnable rank with the earliest clock, so
	 * messages take the shared links in the order of simulated time */
	struct sl_rt_replay x = {.env = env, .t = &t, .st = st, .arrival = arrival, .ready = ready,
			.source = source, .link_free = link_free, .nmax = nmax, .act_bytes = act_bytes};
	/* Two steps, the second one timed: a step starts where the previous one's optimizer left
	 * each rank (and its CPU budget). */
	double T = 0, pipeline_end = 0, egress_usd = 0, T_sum = 0;
	/* Devices that are CPU quotas have periods whose phases nobody knows (each cgroup keeps its
	 * own timer), and a message that reaches a throttled rank waits for its next period: the
	 * step time is the mean over PHASE_DRAWS spreads of phases (golden-ratio sequences, so
	 * the draws cover [0, period) evenly and the result is deterministic). */
	int quota = 0;
	for (int r = 0; r < W; r++)
		quota |= sl_rt_has_quota(&st[r]);
	/* then every rank runs the collectives as their non-blocking forms (comm.h), which
	 * OpenMPI's libnbc serves: ZeRO-1's are timed as it runs them (sl_rt_zero_reduce_scatter,
	 * sl_rt_zero_allgather); MPI's blocking ones move a ring's bytes, as the all-reduce */
	const int draws = quota ? PHASE_DRAWS : 1;
	for (int draw = 0; draw < draws; draw++) {
	double prev_norm = 0;
	for (int r = 0; r < W; r++) {
		double u = 0.6180339887 * (r + 1) + 0.7548776662 * draw;
		st[r].phase_s = quota ? (u - floor(u)) * st[r].period_s : 0;
		st[r].clock = 0;
		st[r].used_s = 0;
		st[r].period = LONG_MIN;
		st[r].pending_count = 0;
	}
	for (long i = 0; i < (long)hosts * env->catalogue.zone_count; i++)
		link_free[i] = 0;
	for (int step = 0; step < 2; step++) {
	for (int r = 0; r < W; r++) {
		st[r].pc = 0;
		st[r].compute_s = st[r].wait_s = 0;
	}
	for (long i = 0; i < (long)W * 2 * nmax; i++)
		arrival[i] = ready[i] = -1;
	x.egress_usd = 0;
	for (;;) {
		int best = -1, progressed = 0;
		for (int r = 0; r < W; r++) {
			const struct sl_schedule *s = &sched[r];
			if (st[r].pc >= s->count)
				continue;
			const struct sl_instr *in = &s->instrs[st[r].pc];
			/* waiting in a receive or a collective is being inside MPI */
			if (st[r].pending_count && in->op != SL_INSTR_FORWARD &&
			    in->op != SL_INSTR_BACKWARD && in->op != SL_INSTR_LOAD_MICROBATCH) {
				progress(&x, r);
				progressed = 1; /* a rank passed over above may now have its message */
			}
			if (in->op == SL_INSTR_REDUCE_GRADIENTS || in->op == SL_INSTR_OPTIMIZER_STEP)
				continue; /* collective: after every rank got there */
			if (in->op == SL_INSTR_RECV_ACTIVATION || in->op == SL_INSTR_RECV_GRADIENT) {
				int kind = in->op == SL_INSTR_RECV_GRADIENT;
				size_t at = ((size_t)r * 2 + kind) * nmax + in->microbatch;
				if (arrival[at] < 0 && ready[at] < 0)
					continue;
			}
			if (best < 0 || st[r].clock < st[best].clock)
				best = r;
		}
		if (best < 0 && progressed)
			continue;
		if (best < 0)
			break;
		struct sl_rt_rank *me = &st[best];
		const struct sl_instr *in = &sched[best].instrs[me->pc++];
		switch (in->op) {
		case SL_INSTR_FORWARD:
		case SL_INSTR_BACKWARD: {
			double t0 = me->clock;
			sl_rt_run_work(me, in->op == SL_INSTR_FORWARD ? me->fwd_s : me->bwd_s);
			me->compute_s += me->clock - t0;
			break;
		}
		case SL_INSTR_RECV_ACTIVATION:
		case SL_INSTR_RECV_GRADIENT: {
			int kind = in->op == SL_INSTR_RECV_GRADIENT;
			size_t idx = ((size_t)best * 2 + kind) * nmax + in->microbatch;
			if (arrival[idx] < 0) /* a rendezvous: it moves from now (or when offered) */
				transfer(&x, source[idx], best, kind, in->microbatch,
					 fmax(ready[idx], me->clock));
			double at = arrival[idx];
			double t0 = me->clock;
			sl_rt_wait_idle(me, at);
			me->wait_s += me->clock - t0;
			break;
		}
		case SL_INSTR_SEND_ACTIVATION:
		case SL_INSTR_SEND_GRADIENT: {
			int kind = in->op == SL_INSTR_SEND_GRADIENT;
			progress(&x, best); /* MPI_Isend is an MPI call */
			for (int p = 0; p < in->peer_count; p++) {
				int d = in->peers[p];
				if (st[d].host == me->host || act_bytes + TCP_HEADER_BYTES <= TCP_EAGER_BYTES ||
				    me->pending_count == SL_RT_PENDING_MAX)
					transfer(&x, best, d, kind, in->microbatch, me->clock);
				else
					me->pending[me->pending_count++] =
						(struct sl_rt_pending_send){d, kind, in->microbatch};
			}
			break;
		}
		default: /* load-microbatch: reading tokens, nothing to time */
			break;
		}
	}
	for (int r = 0; r < W; r++)
		if (st[r].pc >= sched[r].count ||
		    sched[r].instrs[st[r].pc].op != SL_INSTR_REDUCE_GRADIENTS) {
			rc = sl_err_set(err, SL_EINPUT, "runtime model: rank %d did not reach its "
					"gradient reduction (schedule inconsistent)", r);
			goto out;
		}
	pipeline_end = 0;
	for (int r = 0; r < W; r++) {
		st[r].reduce_arrive_s = st[r].clock;
		pipeline_end = fmax(pipeline_end, st[r].clock - prev_norm);
	}

	/* gradient sync: stage groups first, then the tied token table (grad_sync.c's order) */
	for (int k = 0; k < P; k++) {
		int groups = sl_rt_stage_sync_groups(plan, k);
		for (int gi = 0; gi < groups; gi++) {
			double bytes;
			int m = sl_rt_stage_sync_members(env, plan, &t, k, gi, members, &bytes);
			if (sl_rt_stage_zero(plan, k) && quota)
				sl_rt_zero_reduce_scatter(&x, members, m, bytes, round_done);
			else /* MPI's blocking reduce-scatter and all-gather: a ring's bytes */
				x.egress_usd += sl_rt_group_allreduce(env, &t, st, members, m, bytes);
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
							members[m++] = sl_role_of(&t, k, j, tr)->rank;
				}
			}
			double bytes = SL_FP32_BYTES * (double)env->model.vocab * env->model.hidden /
				       (uniform ? t0 : 1);
			x.egress_usd += sl_rt_group_allreduce(env, &t, st, members, m, bytes);
		}
	}
	for (int r = 0; r < W; r++)
		st[r].sync_end_s = st[r].clock;
	/* the global norm: everyone waits for the last rank; then each rank's optimizer step */
	double norm = sl_rt_world_scalar_allreduces(st, W, round_done);
	for (int r = 0; r < W; r++) {
		sl_rt_wait_idle(&st[r], norm);
		sl_rt_run_work(&st[r], st[r].update_s);
		st[r].gather_s = st[r].clock;
	}
	/* ZeRO-1 stages all-gather their updated parameters (dist/zero.c) */
	for (int k = 0; quota && k < P; k++)
		for (int gi = 0; sl_rt_stage_zero(plan, k) && gi < sl_rt_stage_sync_groups(plan, k); gi++) {
			double bytes;
			int m = sl_rt_stage_sync_members(env, plan, &t, k, gi, members, &bytes);
			sl_rt_zero_allgather(&x, members, m, bytes, round_done, round_done + W);
		}
	for (int r = 0; r < W; r++)
		st[r].gather_s = st[r].clock - st[r].gather_s;
	egress_usd = x.egress_usd;
	T = norm - prev_norm;
	prev_norm = norm;
	} /* steps */
	T_sum += T;
	} /* phase draws */
	T = T_sum / draws;

	/* per stage figures: the slowest rank of the stage */
	for (int r = 0; r < W; r++) {
		const struct sl_role *ro = &t.roles[r];
		struct sl_sim_stage *s = &out->stages[ro->stage];
		s->fwd_s = fmax(s->fwd_s, st[r].fwd_s);
		s->bwd_s = fmax(s->bwd_s, st[r].bwd_s);
		s->compute_s = fmax(s->compute_s, st[r].compute_s);
		s->p2p_s = fmax(s->p2p_s, st[r].wait_s);
		s->optimizer_s = fmax(s->optimizer_s, st[r].update_s + st[r].gather_s);
		s->dp_sync_s = fmax(s->dp_sync_s, st[r].sync_end_s - st[r].reduce_arrive_s);
		s->bubble_s = fmax(s->bubble_s,
				   T - st[r].compute_s - st[r].update_s - st[r].gather_s);
	}
	out->iteration_time_s = T;
	out->pipeline_time_s = pipeline_end;
	double opt = 0;
	for (int r = 0; r < W; r++)
		opt = fmax(opt, st[r].update_s + st[r].gather_s);
	out->optimizer_s = opt;
	out->dp_sync_s = fmax(0, T - pipeline_end);
	out->throughput_it_s = 1.0 / T;
	out->slowest_pipeline = 0;

	/* cost */
	double usd_per_hour = 0;
	for (long i = 0; i < (long)P * D; i++)
		usd_per_hour += plan->replicas[i].tp *
				env->catalogue.gpus[plan->replicas[i].gpu].usd_per_hour;
	out->gpu_usd_per_hour = usd_per_hour;
	out->gpu_cost_usd_per_iter = usd_per_hour / 3600.0 * T;
	out->egress_cost_usd_per_iter = egress_usd;
	out->cost_usd_per_iter = out->gpu_cost_usd_per_iter + egress_usd;

	/* memory: the rank of each stage with the highest share of its device */
	out->fits_memory = 1;
	for (int k = 0; k < P; k++) {
		out->stages[k].fits = 1;
		out->stages[k].memory.total_bytes = -1;
	}
	for (int r = 0; r < W; r++) {
		const struct sl_role *ro = &t.roles[r];
		int k = ro->stage;
		struct sl_sim_memory mem;
		/* a stage that mixes TP degrees sizes its bucket for its largest whole tensor */
		int mixed = !sl_rt_stage_uniform(plan, k);
		double whole = mixed ? sl_rt_largest_whole_tensor_bytes(env, ro->first_layer, ro->last_layer)
				     : 0;
		int zgroup = plan->stages[k].zero ? sl_rt_stage_sync_group_size(plan, k) : 1;
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
		sl_rt_rank_memory(env, ro, b, sched[r].slots, P, whole, plan->stages[k].recompute,
			    zgroup, zrank, mixed && zgroup > 1 ? whole_all : 0, quota, &mem);
		struct sl_sim_stage *s = &out->stages[k];
		if (s->memory.total_bytes < 0 ||
		    mem.total_bytes / mem.capacity_bytes >
			    s->memory.total_bytes / s->memory.capacity_bytes) {
			s->memory = mem;
			s->memory_replica = ro->pipeline;
		}
		if (mem.total_bytes > mem.capacity_bytes) {
			s->fits = 0;
			out->fits_memory = 0;
		}
	}
out:
	if (sched)
		sl_schedule_free_all(sched, t.world_size);
	sl_role_table_free(&t);
	free(st);
	free(arrival);
	free(ready);
	free(source);
	free(members);
	free(link_free);
	free(round_done);
	return rc;
}

