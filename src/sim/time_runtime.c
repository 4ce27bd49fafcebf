/* The cost model of our own runtime, `sailor run` (src/runtime), used when every GPU type of a plan
 * is profiled by `sailor profile` (profiles of schema sailor.profile/1 measure our runtime's
 * layers; the shipped SOSP'25 profiles measure Megatron-DeepSpeed's, for which time_sailor.c
 * models DeepSpeed's engine). Where the two runtimes differ, this file follows ours:
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
 *   grad sync  after the last backward: the stage's gradient all-reduce (per TP rank over the
 *              replicas when the stage has one TP degree, else whole tensors over every rank of
 *              the stage), then the tied token table over the first and last stages, each a ring
 *              all-reduce in buckets of SL_RUNTIME_BUCKET_BYTES that starts when its last member
 *              arrives: 2(m-1) ring steps of 1/m of a bucket, each paced by the slowest hop of the
 *              ring (rank order): a step is the slower of the hop's point-to-point send and
 *              MPI's copies and sums on the receiving device (half of the two-rank all-reduce
 *              the network profile measured within a host of that type, when it has one); a
 *              hop between hosts whose link the ring also loads the other way takes at least
 *              half of the two-rank all-reduce measured between those hosts' zones and types
 *              (both_ways_s: TCP's acknowledgements queue behind the other direction's data).
 *   norm       the loss and then the global gradient norm are all-reduces of a few bytes over
 *              the world, ring rounds that need each rank and its neighbour (they end when the
 *              last rank is through). The step ends there for timing purposes.
 *   optimizer  AdamW over the rank's own shard (the profile's update seconds per parameter),
 *              after the norm; it delays the rank's next step. Two steps are run and the second
 *              is timed, from norm to norm.
 *   options    per stage (plan.h): recompute "full" reruns the stage's blocks' forward in
 *              backward and keeps no block intermediates per slot, only one working set (a
 *              block's cache and its output) per stage; "selective" reruns the attention core
 *              (T / (6C + T) of a block's forward by FLOPs) and moves its scores and weighted
 *              sum from the slots to the working set. ZeRO-1 over m ranks of the stage's sync
 *              group: the update covers 1/m of the stage and the moments 1/m (the pipeline's
 *              tied token table keeps its moments whole; a stage of mixed TP degrees shards
 *              whole tensors and keeps a summed gradient and an fp32 copy of its piece). Its
 *              sync is a reduce-scatter and, after the update, an all-gather, in calls of
 *              ZERO_BUCKET_BYTES. MPI's blocking forms move what the all-reduce moved and are
 *              timed as it is; where some rank waits asleep (CPU quota below), every rank runs
 *              the non-blocking forms, timed as OpenMPI's libnbc runs them
 *              (zero_reduce_scatter, zero_allgather): the whole buffer goes up a binomial tree
 *              to the group's first rank and a part back to each rank, then every rank sends
 *              its part to every other one, all at once, on the hosts' links (both ways at once:
 *              both_ways_s).
 *   CPU quota  a device that is a CPU quota (the testbed's; catalogue cpu_quota) computes at
 *              full speed for cores x period of every period (plus up to 1 ms Linux carries
 *              over from the last one, start_period) and stands still for the rest. Its rank
 *              waits for messages asleep (comm.h, SL_COMM_WAIT_SLEEP), whose tests cost the
 *              CPU the profile measured (wait_idle). Work the profile timed at the quota's
 *              average rate is replayed against the budget (run_work): after a wait that
 *              crossed a period boundary, work starts with a full budget and runs up to
 *              1/cores times faster than average for that budget, which pipelines, whose ranks
 *              wait and work in turn, show. The two small world all-reduces after the sync
 *              are replayed round by round (world_scalar_allreduces).
 *   memory     peak resident memory of the process, per rank: the runtime baseline (what the
 *              profile measured on an MPI rank of the device less its tensors: binary,
 *              libraries, OpenMPI; else the catalogue's runtime_overhead_bytes) + the
 *              layers' parameter storage (values, gradients, two moments) + slots x their
 *              activation cache of one micro-batch + the backward workspace + the receive
 *              buffers of stages > 0 (an input activation and an output gradient per slot) + the
 *              gradient bucket + one gradient buffer; the layer figures are the profile's,
 *              measured on the runtime's own layers. Every buffer the runtime allocates is
 *              zeroed, so all of it is resident from the start: the 16 MiB gradient bucket
 *              counts even for a rank with nothing to all-reduce. With ZeRO-1 and the
 *              non-blocking collectives a rank also holds the scratch of libnbc's
 *              reduce-scatter.
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

#include "runtime/comm.h"
#include "runtime/placement.h"
#include "runtime/roles.h"
#include "runtime/schedule.h"
#include "sim/internal.h"

/* dist/grad_sync.h's SL_GRAD_BUCKET_FLOATS (4 Mi floats), repeated so that sim does not include
 * the runtime's MPI-facing header; test_sim_runtime checks they agree. */
#define SL_RUNTIME_BUCKET_BYTES (16.0 * 1024 * 1024)
/* dist/zero.h's SL_ZERO_BUCKET_FLOATS (1 Mi floats), the sharded optimizer's calls */
#define ZERO_BUCKET_BYTES (4.0 * 1024 * 1024)

/* OpenMPI's TCP transport sends a message of up to its eager limit (btl_tcp_eager_limit, 64 KiB
 * in OpenMPI 4.1) at once; a larger one goes by rendezvous and moves only while both ends are
 * inside MPI calls (no progress thread): after MPI_Isend it waits for the sender's next
 * receive, send or collective, and then for the receiver to be in the matching receive. Between
 * ranks of one host the receiver copies the data itself (shared memory). */
#define TCP_EAGER_BYTES 65536.0
#define TCP_HEADER_BYTES 64.0 /* its match header counts against the limit */
#define PENDING_MAX 128
#define PHASE_DRAWS 8

struct pending_send {
	int dst, kind, microbatch;
};

struct rank_state {
	double clock;       /* seconds since the previous step's norm */
	int pc;             /* next instruction */
	int host;           /* placement: a host index (cluster file) or the replica's own */
	double fwd_s, bwd_s, update_s;
	double gather_s;    /* ZeRO-1's all-gather of the updated parameters, after the update */
	double compute_s, wait_s;
	double reduce_arrive_s, sync_end_s;
	struct pending_send pending[PENDING_MAX]; /* Isends waiting for this rank's next MPI call */
	int pending_count;
	/* a device that is a CPU quota (catalogue cpu_quota): budget per period and its use */
	double quota_cores, period_s, used_s;
	double budget_s;    /* this period's: cores x period plus what the last one left (carry) */
	long period;        /* the period ((clock - phase) / period_s) whose budget used_s counts */
	double test_cpu_s, test_late_s; /* a sleeping wait's test: its CPU, how late it comes */
	double phase_s;     /* where this device's periods start: cgroups keep their own timers */
};

/* Linux keeps up to min_cfs_rq_runtime (1 ms) of a cgroup's unused runtime on the CPU when
 * its task goes to sleep, and since Linux 5.4 that runtime no longer expires at the period's
 * end (sched-bwc.rst): a rank that left budget unused, say because it went to wait, runs up to
 * 1 ms more than its quota in the next period it runs in. */
#define CFS_LOCAL_RUNTIME_S 0.001

/* Starts period k (> r->period) with a fresh budget and the carry of the one it leaves. */
static void start_period(struct rank_state *r, long k)
{
	double left = r->period == LONG_MIN ? 0 : r->budget_s - r->used_s;
	r->budget_s = r->quota_cores * r->period_s + fmin(CFS_LOCAL_RUNTIME_S, fmax(0, left));
	r->period = k;
	r->used_s = 0;
}

/* Moves r into the period that holds its clock. Periods are counted by number so that rounding
 * never leaves the clock on a boundary it cannot cross. */
static void enter_period(struct rank_state *r)
{
	long k = (long)floor((r->clock - r->phase_s) / r->period_s + 1e-9);
	if (k > r->period)
		start_period(r, k);
}

/* Advances r by want_s of running and by any throttled time in between. */
static void run_for(struct rank_state *r, double want_s)
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
		done += take;
	}
}

static int has_quota(const struct rank_state *r)
{
	return r->quota_cores > 0 && r->quota_cores < 1 && r->period_s > 0;
}

/* Runs work that the profile timed at the device's steady rate (wall_s, the quota's average)
 * from the rank's clock. On a CPU-quota device that is wall_s x cores of CPU, done at full speed
 * while the current period's budget lasts and stopped until the next period when it is spent:
 * so an operation that starts with a fresh budget (after a wait) finishes sooner than wall_s,
 * one that starts with a spent budget later. Elsewhere it takes wall_s. */
static void run_work(struct rank_state *r, double wall_s)
{
	if (!has_quota(r)) {
		r->clock += wall_s;
		return;
	}
	run_for(r, wall_s * r->quota_cores);
}

/* Linux wakes a sleeping thread up to its timer slack (50 us by default) after the time it
 * asked for: half of it on average, where the profile did not measure the sleeping wait. */
#define TIMER_SLACK_S 50e-6

/* Waits until until_s inside MPI. A rank on a CPU-quota device waits asleep between tests
 * (comm.h, SL_COMM_WAIT_SLEEP): it sees its message at the first test after it came (sleeps of
 * SL_COMM_IDLE_SLEEP_FIRST_S doubling to SL_COMM_IDLE_SLEEP_MAX_S, each test and sleep late by
 * what the profile measured), and each test costs the CPU the profile measured (20-29 us on
 * the testbed, a quarter of a cpu-fast device's budget over a long wait): paid from the budget,
 * so a long wait can leave the rank throttled when its message comes. A wait that crosses a
 * period boundary leaves a fresh budget (enter_period). */
static void wait_idle(struct rank_state *r, double until_s)
{
	if (until_s <= r->clock)
		return;
	if (!has_quota(r)) {
		r->clock = until_s;
		return;
	}
	double sleep_s = SL_COMM_IDLE_SLEEP_FIRST_S, c = r->test_cpu_s;
	for (;;) {
		/* a cycle: the test (c of CPU, from the budget), then the sleep and its lateness */
		double cycle = sleep_s + r->test_late_s;
		if (sleep_s >= SL_COMM_IDLE_SLEEP_MAX_S) {
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
			}
		}
		if (c > 0)
			run_for(r, c);
		if (r->clock >= until_s)
			return;
		r->clock += fmax(0, cycle - c);
		sleep_s = fmin(2 * sleep_s, SL_COMM_IDLE_SLEEP_MAX_S);
	}
}

static double gbps_at(const struct sl_net_fit *fit, double bytes)
{
	double gbps = sl_net_fit_gbps(fit, bytes);
	if (!(gbps > 0))
		gbps = fit->a0 > 0 ? fit->a0 : 1.0;
	return gbps;
}

/* Seconds to move bytes from rank a to rank b (hosts and device types from the table). */
static double link_time(const struct sl_sim_env *env, const struct sl_role *a, int host_a,
			const struct sl_role *b, int host_b, double bytes)
{
	if (bytes <= 0)
		return 0;
	const struct sl_net_fit *fit =
		host_a == host_b ? sl_network_intra_fit(env->network, a->gpu, 2)
				 : sl_network_fit(env->network, a->zone, a->gpu, 1, b->zone, b->gpu, 1);
	return (bytes / 1e9) / gbps_at(fit, bytes);
}

/* The work of MPI's copies and sums when rank rb receives bytes to add to its own: half of the
 * two-rank all-reduce of 2 x bytes the network profile measured on one host of rb's type, where
 * the wire is nearly free (none measured: nothing). */
static double reduce_cpu_s(const struct sl_sim_env *env, const struct sl_role *rb, double bytes)
{
	const struct sl_net_fit *ar =
		sl_network_allreduce_fit(env->network, rb->zone, rb->gpu, rb->zone, rb->gpu, 1);
	return ar && bytes > 0 ? 0.5 * (2 * bytes / 1e9) / gbps_at(ar, 2 * bytes) : 0;
}

/* Whether the ring's hop i (members[i] -> members[i + 1]) between two hosts shares its link with
 * traffic the other way: another hop that sends from the receiving host to the sender's zone
 * (the testbed shapes a host's link per destination zone; the sender's TCP acknowledgements
 * queue behind that data). */
static int ring_loads_reverse(const struct sl_role_table *t, const struct rank_state *st,
			      const int *members, int m, int i)
{
	int a = members[i], b = members[(i + 1) % m];
	for (int j = 0; j < m; j++) {
		int c = members[j], d = members[(j + 1) % m];
		if (st[c].host == st[b].host && st[d].host != st[c].host &&
		    t->roles[d].zone == t->roles[a].zone)
			return 1;
	}
	return 0;
}

/* Seconds a ring step of bytes takes between two hosts whose link carries the ring's traffic both
 * ways at once: half of the two-rank all-reduce of 2 x bytes the network profile measured
 * between hosts of these zones and types, which loads the link that way (none measured: 0). */
static double both_ways_s(const struct sl_sim_env *env, const struct sl_role *ra,
			  const struct sl_role *rb, double bytes)
{
	const struct sl_net_fit *ar =
		sl_network_allreduce_fit(env->network, ra->zone, ra->gpu, rb->zone, rb->gpu, 0);
	return ar && bytes > 0 ? 0.5 * (2 * bytes / 1e9) / gbps_at(ar, 2 * bytes) : 0;
}

/* A ring all-reduce of bytes over members (world ranks, in ring order), in buckets. */
static double ring_allreduce_s(const struct sl_sim_env *env, const struct sl_role_table *t,
			       const struct rank_state *st, const int *members, int m, double bytes)
{
	if (m <= 1 || bytes <= 0)
		return 0;
	double total = 0;
	for (double done = 0; done < bytes; done += SL_RUNTIME_BUCKET_BYTES) {
		double bucket = fmin(SL_RUNTIME_BUCKET_BYTES, bytes - done);
		double chunk = bucket / m, worst = 0;
		for (int i = 0; i < m; i++) {
			int a = members[i], b = members[(i + 1) % m];
			const struct sl_role *ra = &t->roles[a], *rb = &t->roles[b];
			/* a ring step sends chunk bytes to the next rank and reduces them there: the
			 * wire (point-to-point fit of the hop) or the work of MPI's copies and sums,
			 * whichever is slower (reduce_cpu_s) */
			double s = fmax(link_time(env, ra, st[a].host, rb, st[b].host, chunk),
					reduce_cpu_s(env, rb, chunk));
			if (st[a].host != st[b].host && ring_loads_reverse(t, st, members, m, i))
				s = fmax(s, both_ways_s(env, ra, rb, chunk));
			if (s > worst)
				worst = s;
		}
		total += 2.0 * (m - 1) * worst;
	}
	return total;
}

/* An all-reduce of bytes over members: it starts when the last of them arrives and they wait
 * until it ends. Returns its egress in USD: 2(m-1)/m of the bytes from each member to
 * the next. */
static double group_allreduce(const struct sl_sim_env *env, const struct sl_role_table *t,
			      struct rank_state *st, const int *members, int m, double bytes)
{
	double start = 0, usd = 0;
	for (int i = 0; i < m; i++)
		start = fmax(start, st[members[i]].clock);
	double dur = ring_allreduce_s(env, t, st, members, m, bytes);
	for (int i = 0; i < m; i++)
		wait_idle(&st[members[i]], start + dur);
	for (int i = 0; m > 1 && i < m; i++) {
		const struct sl_role *a = &t->roles[members[i]];
		const struct sl_role *n = &t->roles[members[(i + 1) % m]];
		usd += 2.0 * (m - 1) / m * bytes / 1e9 *
		       sl_network_egress_usd_per_gb(env->network, a->zone, n->zone);
	}
	return usd;
}

/* CPU a rank spends in one round of a collective of a few bytes (an MPI test that finds its
 * message, a send, a sum). */
#define SCALAR_ROUND_CPU_S 20e-6

/* After the gradient sync every rank joins two all-reduces of a few bytes over the world (the
 * loss with the stop flag, then the gradient norm), each 2(W-1) rounds of OpenMPI's ring in
 * rank order (comm_mpi.c asks libnbc for its ring). A rank's round starts once its own previous
 * round and its left neighbour's are done, and needs the rank to run: on a CPU-quota device
 * whose budget is spent that waits for its next period, which is where such a collective's
 * time goes on the testbed. Returns when the last rank is done; done: W doubles of scratch. */
static double world_scalar_allreduces(struct rank_state *st, int W, double *done)
{
	double end = 0;
	for (int r = 0; r < W; r++)
		end = fmax(end, st[r].clock);
	if (W < 2)
		return end;
	for (int r = 0; r < W; r++)
		done[r] = st[r].clock;
	for (int round = 0; round < 2 * 2 * (W - 1); round++) {
		double left_prev = done[W - 1];
		for (int r = 0; r < W; r++) {
			double start = fmax(done[r], left_prev);
			left_prev = done[r];
			wait_idle(&st[r], start);
			run_work(&st[r], has_quota(&st[r]) ? SCALAR_ROUND_CPU_S / st[r].quota_cores
							  : SCALAR_ROUND_CPU_S);
			done[r] = st[r].clock;
		}
	}
	end = 0;
	for (int r = 0; r < W; r++)
		end = fmax(end, done[r]);
	return end;
}

/* Bytes of one rank's parameters in layers [first, last] at TP degree tp (fp32). */
static double shard_bytes(const struct sl_sim_env *env, int tp, int first, int last)
{
	return SL_FP32_BYTES * sl_sim_stage_params(env, tp, first, last);
}

static const struct sl_profile_memory *memory_of(const struct sl_sim_env *env, int gpu, int mbs,
						 int tp)
{
	const struct sl_profile *prof = env->profiles[gpu];
	const struct sl_profile_entry *e = prof ? sl_profile_find(prof, mbs, tp) : NULL;
	return e && e->memory.present ? &e->memory : NULL;
}

/* The largest parameter tensor of layers [first, last] (fp32): the token table when the stage
 * holds the embedding or the head, else a block's MLP matrix (4 h x h). */
static double largest_whole_tensor_bytes(const struct sl_sim_env *env, int first, int last)
{
	double h = env->model.hidden;
	double ffn = env->model.ffn_hidden > 0 ? env->model.ffn_hidden : 4 * h;
	double biggest = ffn * h;
	if (first == 0 || last == env->num_layers - 1)
		biggest = fmax(biggest, (double)env->model.vocab * h);
	return SL_FP32_BYTES * biggest;
}

/* Whether stage k's replicas all have one TP degree (then its sync groups are per TP rank). */
static int stage_uniform(const struct sl_plan *plan, int k)
{
	int uniform = 1;
	for (int j = 1; j < plan->num_pipelines; j++)
		uniform &= sl_plan_replica(plan, k, j)->tp == sl_plan_replica(plan, k, 0)->tp;
	return uniform;
}

/* Stage k's gradient-sync groups: one per TP rank (one TP degree), else one of every rank. */
static int stage_sync_groups(const struct sl_plan *plan, int k)
{
	return stage_uniform(plan, k) ? sl_plan_replica(plan, k, 0)->tp : 1;
}

/* Writes the world ranks of stage k's sync group gi (in group-rank order, dist/groups.c) to
 * members and the bytes the group reduces to *bytes; returns their number. */
static int stage_sync_members(const struct sl_sim_env *env, const struct sl_plan *plan,
			      const struct sl_role_table *t, int k, int gi, int *members,
			      double *bytes)
{
	int uniform = stage_uniform(plan, k), m = 0, tp_of = 1, P = plan->num_stages;
	for (int j = 0; j < plan->num_pipelines; j++) {
		const struct sl_replica *rep = sl_plan_replica(plan, k, j);
		for (int tr = 0; tr < rep->tp; tr++)
			if (!uniform || tr == gi) {
				members[m++] = sl_role_of(t, k, j, tr)->rank;
				tp_of = rep->tp;
			}
	}
	/* uniform: each rank's shard; mixed: whole tensors */
	int first = plan->stages[k].first_layer, last = plan->stages[k].last_layer;
	*bytes = shard_bytes(env, uniform ? tp_of : 1, first, last);
	if (P > 1 && env->sizes->head_holds_embedding && (k == 0 || k == P - 1))
		/* the tied table is reduced in the embedding group instead */
		*bytes -= SL_FP32_BYTES * (double)env->model.vocab * env->model.hidden /
			  (uniform ? tp_of : 1);
	return m;
}

/* Ranks of stage k's gradient-sync group: the replicas (one TP degree), else every rank. */
static int stage_sync_group_size(const struct sl_plan *plan, int k)
{
	int D = plan->num_pipelines, ranks = 0;
	if (stage_uniform(plan, k))
		return D;
	for (int j = 0; j < D; j++)
		ranks += sl_plan_replica(plan, k, j)->tp;
	return ranks;
}

/* Whether stage k shards its optimizer (ZeRO-1 over a sync group of more than one rank). */
static int stage_zero(const struct sl_plan *plan, int k)
{
	return plan->stages[k].zero && stage_sync_group_size(plan, k) > 1;
}

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

/* Memory of one rank (see the top of the file). */
/* Activation-cache bytes of one block at (mbs, tp) that selective recomputation does not keep:
 * the attention scores/softmax [B, heads/tp, T, T] and their weighted sum [B, T, C/tp]. */
static double attention_core_bytes(const struct sl_sim_env *env, int mbs, int tp)
{
	double T = env->model.seq_len, C = env->model.hidden, H = env->model.heads;
	return SL_FP32_BYTES * mbs * (H / tp * T * T + T * C / tp);
}

/* The share of a block's forward that is the attention core (QK^T and the weighted sum), by
 * FLOPs: 4 B T^2 C against 24 B T C^2 in the matrices, so T / (6 C + T). Selective
 * recomputation reruns that much of the forward in backward. */
static double attention_core_share(const struct sl_sim_env *env)
{
	double T = env->model.seq_len, C = env->model.hidden;
	return T / (6.0 * C + T);
}

static void rank_memory(const struct sl_sim_env *env, const struct sl_role *r, int mbs, int slots,
			int P, double whole_tensor_bytes,
			int recompute, int zero_group, int zero_rank, double zero_whole_bytes,
			int nonblocking, struct sl_sim_memory *mem)
{
	const struct sl_gpu_type *g = &env->catalogue.gpus[r->gpu];
	const struct sl_profile_memory *pm = memory_of(env, r->gpu, mbs, r->tp);
	int L = env->num_layers;
	memset(mem, 0, sizeof(*mem));
	double storage = 0, act = 0, shared = 0;
	for (int l = r->first_layer; pm && l <= r->last_layer; l++) {
		int kind = l == 0 ? SL_KIND_EMBEDDING : (l == L - 1 ? SL_KIND_HEAD : SL_KIND_BLOCK);
		storage += pm->params_bytes[kind];
		double a = pm->activations_bytes[kind];
		/* recomputed tensors live once per stage, not per slot (train/gpt_layers.h) */
		if (kind == SL_KIND_BLOCK && recompute == SL_RECOMPUTE_FULL) {
			shared = fmax(shared, a + SL_FP32_BYTES * (double)mbs * env->model.seq_len *
							 env->model.hidden);
			a = 0;
		} else if (kind == SL_KIND_BLOCK && recompute == SL_RECOMPUTE_SELECTIVE) {
			double core = fmin(a, attention_core_bytes(env, mbs, r->tp));
			shared = fmax(shared, core);
			a -= core;
		}
		act += a;
	}
	if (pm && r->first_layer == 0 && r->last_layer == L - 1) {
		/* one stage holds both ends: the head uses the embedding's table, no copy of its own */
		storage -= 4.0 * SL_FP32_BYTES * (double)env->model.vocab / r->tp * env->model.hidden;
	}
	double activation_msg = SL_FP32_BYTES * (double)mbs * env->model.seq_len * env->model.hidden;
	double zero_scratch = 0;
	/* storage = values | grads | exp_avg | exp_avg_sq, one quarter each */
	mem->params_bytes = storage / 4;
	mem->grads_bytes = storage / 4;
	mem->optimizer_bytes = storage / 2;
	if (zero_group > 1) {
		/* ZeRO-1 (dist/zero.h): the moments of 1/m of the stage's flat view; a stage of mixed
		 * TP degrees shards whole tensors and also keeps the summed gradient and an fp32 copy
		 * of its piece. The tied token table of a pipeline keeps its moments whole. */
		double table = (P > 1 && (r->stage == 0 || r->stage == P - 1))
				       ? 2.0 * SL_FP32_BYTES * env->model.vocab / r->tp * env->model.hidden
				       : 0;
		double rest = fmax(0, mem->optimizer_bytes - table);
		/* zero_whole_bytes: the two moments of the stage's whole tensors (mixed TP), whose
		 * piece comes with as many bytes of summed gradient and fp32 values */
		mem->optimizer_bytes = table + (zero_whole_bytes > 0 ? 2.0 * zero_whole_bytes : rest) /
						       zero_group;
		/* Where some rank waits asleep (a CPU quota) every rank runs the gradient
		 * reduce-scatter as MPI_Ireduce_scatter (comm.h, nonblocking_collectives).
		 * OpenMPI's libnbc reduces over a binomial tree into a scratch of two buffers the
		 * size of the call (a bucket of the stage's flat view, at most
		 * SL_ZERO_BUCKET_FLOATS): a rank fills one per round it receives in, two at most; a
		 * rank that only sends fills none. */
		if (nonblocking) {
			int receives = 0;
			for (int half = 1; half < zero_group && zero_rank % (2 * half) == 0;
			     half *= 2)
				receives += zero_rank + half < zero_group;
			double view = zero_whole_bytes > 0 ? zero_whole_bytes / 2 : mem->params_bytes;
			zero_scratch = fmin(2, receives) * fmin(ZERO_BUCKET_BYTES, view);
		}
	}
	mem->activations_bytes = slots * act + shared + (pm ? pm->workspace_bytes : 0);
	/* the gradient bucket is allocated (and zeroed, so resident) by every rank, large enough
	 * for the largest whole tensor when a stage mixes TP degrees (grad_sync.c) */
	mem->buffers_bytes = (r->stage > 0 ? 2.0 * slots * activation_msg : 0) +
			     fmax(SL_RUNTIME_BUCKET_BYTES, whole_tensor_bytes) + activation_msg +
			     zero_scratch;
	(void)P;
	/* the process baseline as the profile measured it on an MPI rank of this device type;
	 * else the catalogue's figure */
	mem->runtime_bytes = pm && pm->mpi_ranks && pm->runtime_rss_bytes > 0
				     ? pm->runtime_rss_bytes
				     : g->runtime_overhead_bytes;
	mem->total_bytes = mem->params_bytes + mem->grads_bytes + mem->optimizer_bytes +
			   mem->activations_bytes + mem->buffers_bytes + mem->runtime_bytes;
	mem->capacity_bytes = g->memory_bytes;
}

/* What the simulation of the instruction lists shares. */
struct run {
	const struct sl_sim_env *env;
	const struct sl_role_table *t;
	struct rank_state *st;
	double *arrival;    /* [rank][kind][micro-batch]: when the message is there, -1 unknown */
	double *ready;      /* same index: a large message the sender has started (rendezvous),
			     * which moves once the receiver is in its receive; -1 none */
	int *source;        /* same index: its sender */
	double *link_free;  /* [host][zone]: when the host's link to the zone is free */
	int nmax;
	double act_bytes;
	double egress_usd;
};

/* The message from rank src to rank dst starts moving at start_s. */
static void transfer(struct run *x, int src, int dst, int kind, int m, double start_s)
{
	const struct sl_role *from = &x->t->roles[src], *to = &x->t->roles[dst];
	struct rank_state *s = &x->st[src], *d = &x->st[dst];
	double start = start_s, *free_at = NULL;
	if (d->host != s->host) {
		free_at = &x->link_free[(size_t)s->host * x->env->catalogue.zone_count + to->zone];
		start = fmax(start, *free_at);
		x->egress_usd += x->act_bytes / 1e9 *
				 sl_network_egress_usd_per_gb(x->env->network, from->zone, to->zone);
	}
	double end = start + link_time(x->env, from, s->host, to, d->host, x->act_bytes);
	if (free_at)
		*free_at = end;
	x->arrival[((size_t)dst * 2 + kind) * x->nmax + m] = end;
}

/* Rank r enters an MPI call at its clock: its waiting Isends are offered to their receivers
 * (OpenMPI's rendezvous: the data moves once the receiver has matched it in a receive). */
static void progress(struct run *x, int r)
{
	struct rank_state *me = &x->st[r];
	for (int i = 0; i < me->pending_count; i++) {
		size_t at = ((size_t)me->pending[i].dst * 2 + me->pending[i].kind) * x->nmax +
			    me->pending[i].microbatch;
		x->ready[at] = me->clock;
		x->source[at] = r;
	}
	me->pending_count = 0;
}

/* A message of bytes from rank a to rank b inside a collective, which can move from start_s
 * (both ranks are in the call: OpenMPI's rendezvous): on the sending host's link to b's zone
 * after what is already queued there, or through shared memory on one host; both_ways: the
 * collective sends as much from b to a at the same time (both_ways_s). Returns its arrival and
 * counts its egress. */
static double collective_send(struct run *x, int a, int b, double bytes, double start_s,
			      int both_ways)
{
	const struct sl_role *from = &x->t->roles[a], *to = &x->t->roles[b];
	int host_a = x->st[a].host, host_b = x->st[b].host;
	double start = start_s, *free_at = NULL;
	if (host_a != host_b) {
		free_at = &x->link_free[(size_t)host_a * x->env->catalogue.zone_count + to->zone];
		start = fmax(start, *free_at);
		x->egress_usd += bytes / 1e9 *
				 sl_network_egress_usd_per_gb(x->env->network, from->zone, to->zone);
	}
	double move = link_time(x->env, from, host_a, to, host_b, bytes);
	if (both_ways && free_at)
		move = fmax(move, both_ways_s(x->env, from, to, bytes));
	double end = start + move;
	if (free_at)
		*free_at = end;
	return end;
}

/* ZeRO-1's gradient reduce-scatter (dist/zero.c) over members, in group-rank order, in calls
 * of at most ZERO_BUCKET_BYTES, one after the other. Our ranks make the non-blocking call, which
 * OpenMPI's libnbc serves by reducing the call's whole buffer to group rank 0 along a binomial
 * tree (round r: rank i, a multiple of 2^r, receives rank i + 2^(r-1)'s partial sum, then adds
 * it) and sending every other rank its part from there. So the links into rank 0 carry a
 * whole buffer per round, where a ring moves 1/m of it per step. ready: m doubles of
 * scratch. */
static void zero_reduce_scatter(struct run *x, const int *members, int m, double bytes,
				double *ready)
{
	if (m <= 1)
		return;
	for (double done = 0; done < bytes; done += ZERO_BUCKET_BYTES) {
		double call = fmin(ZERO_BUCKET_BYTES, bytes - done);
		for (int i = 0; i < m; i++)
			ready[i] = x->st[members[i]].clock;
		for (int half = 1; half < m; half *= 2)
			for (int i = 0; i + half < m; i += 2 * half) {
				int p = i + half;
				double at = collective_send(x, members[p], members[i], call,
							    fmax(ready[i], ready[p]), 0);
				ready[p] = at; /* the sender is through to its part's receive */
				ready[i] = at + reduce_cpu_s(x->env, &x->t->roles[members[i]], call);
			}
		double root_done = ready[0];
		for (int i = 1; i < m; i++) {
			double at = collective_send(x, members[0], members[i], call / m,
						    fmax(ready[0], ready[i]), 0);
			wait_idle(&x->st[members[i]], at);
			root_done = fmax(root_done, at);
		}
		wait_idle(&x->st[members[0]], root_done);
	}
}

/* ZeRO-1's all-gather of the updated parameters (dist/zero.c) over members, in calls of at
 * most ZERO_BUCKET_BYTES: libnbc's all-gatherv posts all of a rank's sends (its part to every
 * other rank, the right neighbour first) and receives at once, and a rank is through when all of
 * its own are done. from, through: m doubles of scratch each. */
static void zero_allgather(struct run *x, const int *members, int m, double bytes, double *from,
			   double *through)
{
	if (m <= 1)
		return;
	for (double done = 0; done < bytes; done += ZERO_BUCKET_BYTES) {
		double part = fmin(ZERO_BUCKET_BYTES, bytes - done) / m;
		for (int i = 0; i < m; i++)
			from[i] = through[i] = x->st[members[i]].clock;
		for (int r = 1; r < m; r++)
			for (int i = 0; i < m; i++) {
				int j = (i + r) % m;
				double at = collective_send(x, members[i], members[j], part,
							    fmax(from[i], from[j]), 1);
				through[i] = fmax(through[i], at);
				through[j] = fmax(through[j], at);
			}
		for (int i = 0; i < m; i++)
			wait_idle(&x->st[members[i]], through[i]);
	}
}

int sl_sim_runtime(const struct sl_sim_env *env, const struct sl_plan *plan, long long G,
		   struct sl_sim_result *out, struct sl_err *err)
{
	const int P = plan->num_stages, D = plan->num_pipelines, b = plan->micro_batch;
	for (int k = 0; k < P; k++)
		for (int j = 0; j < D; j++) {
			const struct sl_replica *r = sl_plan_replica(plan, k, j);
			if (!memory_of(env, r->gpu, b, r->tp))
				return sl_err_set(err, SL_ENOTFOUND, "profile '%s': no memory figures "
						  "for mbs %d tp %d: profile it again with `sailor "
						  "profile`", env->profiles[r->gpu]->path, b, r->tp);
		}
	struct sl_role_table t;
	memset(&t, 0, sizeof(t));
	struct sl_schedule *sched = NULL;
	struct rank_state *st = NULL;
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
			st[r].update_s /= stage_sync_group_size(plan, ro->stage);
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
	struct run x = {.env = env, .t = &t, .st = st, .arrival = arrival, .ready = ready,
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
		quota |= has_quota(&st[r]);
	/* then every rank runs the collectives as their non-blocking forms (comm.h), which
	 * OpenMPI's libnbc serves: ZeRO-1's are timed as it runs them (zero_reduce_scatter,
	 * zero_allgather); MPI's blocking ones move a ring's bytes, as the all-reduce */
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
		struct rank_state *me = &st[best];
		const struct sl_instr *in = &sched[best].instrs[me->pc++];
		switch (in->op) {
		case SL_INSTR_FORWARD:
		case SL_INSTR_BACKWARD: {
			double t0 = me->clock;
			run_work(me, in->op == SL_INSTR_FORWARD ? me->fwd_s : me->bwd_s);
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
			wait_idle(me, at);
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
				    me->pending_count == PENDING_MAX)
					transfer(&x, best, d, kind, in->microbatch, me->clock);
				else
					me->pending[me->pending_count++] =
						(struct pending_send){d, kind, in->microbatch};
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
		int groups = stage_sync_groups(plan, k);
		for (int gi = 0; gi < groups; gi++) {
			double bytes;
			int m = stage_sync_members(env, plan, &t, k, gi, members, &bytes);
			if (stage_zero(plan, k) && quota)
				zero_reduce_scatter(&x, members, m, bytes, round_done);
			else /* MPI's blocking reduce-scatter and all-gather: a ring's bytes */
				x.egress_usd += group_allreduce(env, &t, st, members, m, bytes);
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
			x.egress_usd += group_allreduce(env, &t, st, members, m, bytes);
		}
	}
	for (int r = 0; r < W; r++)
		st[r].sync_end_s = st[r].clock;
	/* the global norm: everyone waits for the last rank; then each rank's optimizer step */
	double norm = world_scalar_allreduces(st, W, round_done);
	for (int r = 0; r < W; r++) {
		wait_idle(&st[r], norm);
		run_work(&st[r], st[r].update_s);
		st[r].gather_s = st[r].clock;
	}
	/* ZeRO-1 stages all-gather their updated parameters (dist/zero.c) */
	for (int k = 0; quota && k < P; k++)
		for (int gi = 0; stage_zero(plan, k) && gi < stage_sync_groups(plan, k); gi++) {
			double bytes;
			int m = stage_sync_members(env, plan, &t, k, gi, members, &bytes);
			zero_allgather(&x, members, m, bytes, round_done, round_done + W);
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
		int mixed = !stage_uniform(plan, k);
		double whole = mixed ? largest_whole_tensor_bytes(env, ro->first_layer, ro->last_layer)
				     : 0;
		int zgroup = plan->stages[k].zero ? stage_sync_group_size(plan, k) : 1;
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
		rank_memory(env, ro, b, sched[r].slots, P, whole, plan->stages[k].recompute,
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
