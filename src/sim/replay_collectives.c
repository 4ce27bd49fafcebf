/* The replay model's link times and collectives (time_replay.c): what a message between two
 * ranks takes, and the collectives the ranks run after their last backward.
 *
 *   grad sync  after the last backward: the stage's gradient all-reduce (per TP rank over the
 *              replicas when the stage has one TP degree, else whole tensors over every rank of
 *              the stage; replay_sync_groups.c), then the tied token table over the first and
 *              last stages, each a ring all-reduce in buckets of SL_RUNTIME_BUCKET_BYTES that
 *              starts when its last member arrives: 2(m-1) ring steps of 1/m of a bucket, each
 *              paced by the slowest hop of the ring (rank order): a step is the slower of the
 *              hop's point-to-point send and MPI's copies and sums on the receiving device (half
 *              of the two-rank all-reduce the network profile measured within a host of that
 *              type, when it has one); a hop between hosts that the ring also loads the other
 *              way, back from the receiving host to the sending one (ring_loads_reverse),
 *              moves its chunk no faster than the two-rank all-reduce measured
 *              between those hosts' zones and types at the size that moves what the whole call
 *              moves each way, 2(m-1) chunks (both_ways_s: TCP's acknowledgements queue behind
 *              the other direction's data, longer the longer both ways stay loaded).
 *   ZeRO-1     its sync is a reduce-scatter and, after the update, an all-gather, in calls of
 *              SL_RT_ZERO_BUCKET_BYTES. MPI's blocking forms move what the all-reduce moved and
 *              are timed as it is; where some rank waits asleep (CPU quota,
 *              replay_cpu_quota.c), every rank runs the non-blocking forms, timed as OpenMPI's
 *              libnbc runs them (sl_replay_zero_reduce_scatter, sl_replay_zero_allgather): the whole
 *              buffer goes up a binomial tree to the group's first rank and a part back to each
 *              rank, then every rank sends its part to every other one, all at once, on the
 *              hosts' links (both ways at once: both_ways_s).
 *   norm       the loss and then the global gradient norm are all-reduces of a few bytes over
 *              the world, ring rounds that need each rank and its neighbour (they end when the
 *              last rank is through).
 *
 * Invariants: a collective starts no member before the member's clock and leaves every member
 * at or after the collective's end for it; what crosses zones is added to the egress in USD. */
#include <math.h>
#include <string.h>

#include "plan/rank_wait.h"
#include "sim/replay.h"

void sl_replay_zone_slots(struct sl_replay *x, const struct sl_plan *plan)
{
	memset(x->zone_slot, 0xff, sizeof(x->zone_slot)); /* every slot -1 */
	x->link_zones = 0;
	for (int i = 0; i < plan->num_stages * plan->num_pipelines; i++) {
		int z = plan->replicas[i].zone;
		if (x->zone_slot[z] < 0)
			x->zone_slot[z] = (short)x->link_zones++;
	}
}

/* Seconds to move bytes from rank a to rank b (hosts and device types from the table). */
double sl_replay_link_s(const struct sl_sim_env *env, const struct sl_role *a, int host_a,
		    const struct sl_role *b, int host_b, double bytes)
{
	if (bytes <= 0)
		return 0;
	const struct sl_link_fit *fit =
		host_a == host_b ? sl_network_intra_fit(env->network, a->gpu, 2)
				 : sl_network_fit(env->network, a->zone, a->gpu, 1, b->zone, b->gpu, 1);
	return fit->latency_s + (bytes / 1e9) / sl_link_fit_gbps_positive(fit, bytes);
}

/* The work of MPI's copies and sums when rank rb receives bytes to add to its own: half of the
 * two-rank all-reduce of 2 x bytes the network profile measured on one host of rb's type, where
 * the wire is nearly free (none measured: nothing). */
double sl_replay_reduce_cpu_s(const struct sl_sim_env *env, const struct sl_role *rb, double bytes)
{
	double gbps = sl_network_allreduce_gbps(env->network, rb->zone, rb->gpu, rb->zone, rb->gpu,
						1, 2 * bytes);
	return gbps > 0 ? 0.5 * (2 * bytes / 1e9) / gbps : 0;
}

/* Whether the ring's hop i (members[i] -> members[i + 1]) between two hosts carries traffic
 * the other way: another hop of the ring that sends from the receiving host back to the
 * sending host. Only that pair counts: in the runtime's rings on the testbed, a slow hop whose
 * receiver sends on to the sender's host ran at 77-88 % of the link's rate, one whose receiver
 * sends to another host of the sender's zone at 97-100 % (docs/design/runtime-model.md;
 * the same class of the receiver's link carries that traffic, but the ring was not slowed). */
static int ring_loads_reverse(const struct sl_replay_rank *st, const int *members, int m, int i)
{
	int a = members[i], b = members[(i + 1) % m];
	for (int j = 0; j < m; j++) {
		int c = members[j], d = members[(j + 1) % m];
		if (st[c].host == st[b].host && st[d].host == st[a].host)
			return 1;
	}
	return 0;
}

/* Seconds a message of bytes takes between two hosts whose link carries traffic both ways at
 * once, as part of a call that moves call_bytes each way without a pause: bytes at the rate of
 * the two-rank all-reduce the network profile measured between hosts of these zones and types
 * at the size that moves call_bytes each way (it loads the link both ways; none measured: 0).
 * The rate is the call's, not the message's: the longer both ways stay loaded, the longer the
 * queues in front of each way's acknowledgements grow (on the testbed's links of 1-6 MB/s a
 * 4 MiB all-reduce ran at 74-97 % of the point-to-point rate, one of 256 KiB at about 100 %). */
static double both_ways_s(const struct sl_sim_env *env, const struct sl_role *ra,
			  const struct sl_role *rb, double bytes, double call_bytes)
{
	double gbps = sl_network_allreduce_gbps(env->network, ra->zone, ra->gpu, rb->zone, rb->gpu,
						0, call_bytes);
	return gbps > 0 && bytes > 0 ? (bytes / 1e9) / gbps : 0;
}

int sl_replay_link_take_whole(struct sl_replay *x, int src, int dst, double bytes, double at_s,
			  double *leave_s)
{
	const struct sl_sim_env *env = x->env;
	const struct sl_role *from = &x->t->roles[src], *to = &x->t->roles[dst];
	int host_a = x->st[src].host, host_b = x->st[dst].host;
	if (host_a == host_b || bytes <= 0 ||
	    bytes + SL_RT_TCP_HEADER_BYTES > SL_RT_TCP_EAGER_BYTES ||
	    bytes > sl_network_whole_message_bytes(env->network, from->zone, from->gpu, to->zone,
						   to->gpu))
		return 0;
	size_t link = sl_replay_link(x, host_a, to->zone);
	double *free_at = &x->link_free[link], *tokens = &x->link_tokens[link];
	double rate = bytes / sl_replay_link_s(env, from, host_a, to, host_b, bytes);
	double start = fmax(at_s, *free_at);
	/* the bucket refills at the link's rate up to its burst (a quiet link: full) */
	double burst = sl_network_burst_bytes(env->network, from->zone, from->gpu, to->zone,
					      to->gpu);
	*tokens = fmin(burst, *tokens + (start - *free_at) * rate);
	if (*tokens < 0) { /* what earlier messages left owing is paid first */
		start += -*tokens / rate;
		*tokens = 0;
	}
	*tokens -= bytes;
	*free_at = start;
	*leave_s = start;
	return 1;
}

/* A ring all-reduce of bytes over members (world ranks, in ring order) from start_s, in
 * buckets, while `sharing` rings alike (the other TP ranks' groups of the same replicas) run at
 * the same time over the same hosts: each host's link carries all their hops, so a hop between
 * hosts gets 1/sharing of its link; a hop within a host is its own ranks' copies and shares
 * nothing. A hop whose chunk is an eager message the link passes whole
 * (sl_replay_link_take_whole) waits only for what the link's bucket owes, and leaves it owing; the
 * rings alike share that bucket as they are replayed one after the other. */
static double ring_allreduce_s(struct sl_replay *x, const int *members, int m, double bytes,
			       int sharing, double start_s, double *cpu_s)
{
	for (int i = 0; i < m; i++)
		cpu_s[i] = 0;
	if (m <= 1 || bytes <= 0)
		return 0;
	const struct sl_sim_env *env = x->env;
	const struct sl_role_table *t = x->t;
	const struct sl_replay_rank *st = x->st;
	double total = 0;
	for (double done = 0; done < bytes; done += SL_RUNTIME_BUCKET_BYTES) {
		double bucket = fmin(SL_RUNTIME_BUCKET_BYTES, bytes - done);
		double chunk = bucket / m;
		for (int step = 0; step < 2 * (m - 1); step++) {
			double at = start_s + total, worst = 0;
			for (int i = 0; i < m; i++) {
				int a = members[i], b = members[(i + 1) % m];
				const struct sl_role *ra = &t->roles[a], *rb = &t->roles[b];
				/* a ring step sends chunk bytes to the next rank and reduces them
				 * there: the wire (point-to-point fit of the hop) or the work of
				 * MPI's copies and sums, whichever is slower (sl_replay_reduce_cpu_s) */
				int between_hosts = st[a].host != st[b].host;
				double wire, left = at;
				if (sl_replay_link_take_whole(x, a, b, chunk, at, &left)) {
					/* the other rings alike take their chunks from the same
					 * bucket when they are replayed: no 1/sharing here */
					wire = left - at;
				} else {
					wire = sl_replay_link_s(env, ra, st[a].host, rb, st[b].host,
							    chunk);
					if (between_hosts &&
					    ring_loads_reverse(st, members, m, i))
						wire = fmax(wire, both_ways_s(env, ra, rb, chunk,
									      2 * (m - 1) * chunk));
					if (between_hosts)
						wire *= sharing;
				}
				double cpu = sl_replay_reduce_cpu_s(env, rb, chunk);
				cpu_s[(i + 1) % m] += cpu;
				double s = fmax(wire, cpu);
				if (s > worst)
					worst = s;
			}
			total += worst;
		}
	}
	return total;
}

/* An all-reduce of bytes over members: it starts when the last of them arrives and they wait
 * until it ends. MPI's copies and sums of the chunks a member receives are its own CPU work:
 * on a CPU-quota device they are paid from its budget, counted at the ring's end (so a member
 * leaves the sync with what its sums left of the period, which the small all-reduces after it
 * meet; one whose budget cannot pay them ends later). Returns its egress in USD: 2(m-1)/m of
 * the bytes from each member to the next. cpu: m doubles of scratch. */
double sl_replay_group_allreduce(struct sl_replay *x, const int *members, int m, double bytes,
			     int sharing, double *cpu)
{
	const struct sl_sim_env *env = x->env;
	const struct sl_role_table *t = x->t;
	struct sl_replay_rank *st = x->st;
	double start = 0, usd = 0;
	for (int i = 0; i < m; i++)
		start = fmax(start, st[members[i]].clock);
	double dur = ring_allreduce_s(x, members, m, bytes, sharing, start, cpu);
	for (int i = 0; i < m; i++) {
		struct sl_replay_rank *r = &st[members[i]];
		double work = fmin(cpu[i], dur);
		sl_replay_wait_idle(r, start + dur - work);
		sl_replay_run_work(r, work);
	}
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
/* what one round's message carries: the loss and the stop flag, two doubles */
#define SCALAR_MESSAGE_BYTES 16.0

/* After the gradient sync every rank joins two all-reduces of a few bytes over the world (the
 * loss with the stop flag, then the gradient norm), each 2(W-1) rounds of OpenMPI's ring in
 * rank order (comm_mpi.c asks libnbc for its ring). A rank's round starts once its own previous
 * round is done and its left neighbour's message is there, and needs the rank to run: on a
 * CPU-quota device whose budget is spent that waits for its next period, which is where such a
 * collective's time goes on the testbed. The message is eager: on a link whose bucket owes
 * bytes (an eager message before it, sl_replay_link_take_whole) it waits until they are paid.
 * Each all-reduce is one MPI_Iallreduce that the rank finishes in one sleeping wait (comm_mpi.c's
 * finish): libnbc moves a round on only inside a test, so every round after the first ends at
 * a test after a sleep, and the sleeps go on doubling through the rounds.
 * Returns when the last rank is done; done: 2W doubles of scratch. */
double sl_replay_world_scalar_allreduces(struct sl_replay *x, int W, double *done)
{
	struct sl_replay_rank *st = x->st;
	double end = 0;
	for (int r = 0; r < W; r++)
		end = fmax(end, st[r].clock);
	if (W < 2)
		return end;
	for (int r = 0; r < W; r++)
		done[r] = st[r].clock;
	const int rounds = 2 * (W - 1);
	double *sleep_s = done + W; /* each rank's next sleep in its wait */
	for (int round = 0; round < 2 * rounds; round++) {
		double left_prev = done[W - 1];
		if (round % rounds == 0)
			for (int r = 0; r < W; r++)
				sleep_s[r] = SL_RANK_WAIT_SLEEP_FIRST_S;
		for (int r = 0; r < W; r++) {
			int left = (r + W - 1) % W;
			double there = left_prev;
			sl_replay_link_take_whole(x, left, r, SCALAR_MESSAGE_BYTES, left_prev, &there);
			double start = fmax(done[r], there);
			left_prev = done[r];
			sl_replay_wait_tests(&st[r], start, &sleep_s[r], round % rounds != 0);
			sl_replay_run_work(&st[r], sl_replay_has_quota(&st[r]) ? SCALAR_ROUND_CPU_S / st[r].quota_cores
							  : SCALAR_ROUND_CPU_S);
			done[r] = st[r].clock;
		}
	}
	end = 0;
	for (int r = 0; r < W; r++)
		end = fmax(end, done[r]);
	return end;
}

/* A message of bytes from rank a to rank b inside a collective, which can move from start_s
 * (both ranks are in the call: OpenMPI's rendezvous): on the sending host's link to b's zone
 * after what is already queued there, or through shared memory on one host; both_ways: the
 * collective sends as much from b to a at the same time (both_ways_s). Returns its arrival and
 * counts its egress. */
static double collective_send(struct sl_replay *x, int a, int b, double bytes,
			      double start_s, int both_ways)
{
	const struct sl_role *from = &x->t->roles[a], *to = &x->t->roles[b];
	int host_a = x->st[a].host, host_b = x->st[b].host;
	double start = start_s, *free_at = NULL;
	if (host_a != host_b) {
		free_at = &x->link_free[sl_replay_link(x, host_a, to->zone)];
		start = fmax(start, *free_at);
		x->egress_usd += bytes / 1e9 *
				 sl_network_egress_usd_per_gb(x->env->network, from->zone, to->zone);
	}
	double move = sl_replay_link_s(x->env, from, host_a, to, host_b, bytes);
	if (both_ways && free_at)
		/* each message as half of a two-rank all-reduce of twice its size: these calls
		 * are one exchange each way, not a ring's run of steps */
		move = fmax(move, both_ways_s(x->env, from, to, bytes, 2 * bytes));
	double end = start + move;
	if (free_at)
		*free_at = end;
	return end;
}

/* ZeRO-1's gradient reduce-scatter (runtime/zero.c) over members, in group-rank order, in calls
 * of at most SL_RT_ZERO_BUCKET_BYTES, one after the other. Our ranks make the non-blocking
 * call, which OpenMPI's libnbc serves by reducing the call's whole buffer to group rank 0 along
 * a binomial tree (round r: rank i, a multiple of 2^r, receives rank i + 2^(r-1)'s partial sum,
 * then adds it) and sending every other rank its part from there. So the links into rank 0
 * carry a whole buffer per round, where a ring moves 1/m of it per step. ready: m doubles of
 * scratch. */
void sl_replay_zero_reduce_scatter(struct sl_replay *x, const int *members, int m, double bytes,
			       double *ready)
{
	if (m <= 1)
		return;
	for (double done = 0; done < bytes; done += SL_RT_ZERO_BUCKET_BYTES) {
		double call = fmin(SL_RT_ZERO_BUCKET_BYTES, bytes - done);
		for (int i = 0; i < m; i++)
			ready[i] = x->st[members[i]].clock;
		for (int half = 1; half < m; half *= 2)
			for (int i = 0; i + half < m; i += 2 * half) {
				int p = i + half;
				double at = collective_send(x, members[p], members[i], call,
							    fmax(ready[i], ready[p]), 0);
				ready[p] = at; /* the sender is through to its part's receive */
				/* the sum is the receiver's own CPU work, paid from its budget */
				struct sl_replay_rank *ri = &x->st[members[i]];
				sl_replay_wait_idle(ri, at);
				sl_replay_run_work(ri, sl_replay_reduce_cpu_s(x->env, &x->t->roles[members[i]],
								      call));
				ready[i] = ri->clock;
			}
		double root_done = ready[0];
		for (int i = 1; i < m; i++) {
			double at = collective_send(x, members[0], members[i], call / m,
						    fmax(ready[0], ready[i]), 0);
			sl_replay_wait_idle(&x->st[members[i]], at);
			root_done = fmax(root_done, at);
		}
		sl_replay_wait_idle(&x->st[members[0]], root_done);
	}
}

/* ZeRO-1's all-gather of the updated parameters (runtime/zero.c) over members, in calls of at
 * most SL_RT_ZERO_BUCKET_BYTES: libnbc's all-gatherv posts all of a rank's sends (its part to every
 * other rank, the right neighbour first) and receives at once, and a rank is through when all of
 * its own are done. Taking in the m - 1 parts it receives is the rank's own CPU work (MPI's
 * copies, timed as a reduction's), paid from its budget once its last part is there. from,
 * through: m doubles of scratch each. */
void sl_replay_zero_allgather(struct sl_replay *x, const int *members, int m, double bytes,
			  double *from, double *through)
{
	if (m <= 1)
		return;
	for (double done = 0; done < bytes; done += SL_RT_ZERO_BUCKET_BYTES) {
		double part = fmin(SL_RT_ZERO_BUCKET_BYTES, bytes - done) / m;
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
		for (int i = 0; i < m; i++) {
			struct sl_replay_rank *r = &x->st[members[i]];
			sl_replay_wait_idle(r, through[i]);
			sl_replay_run_work(r, (m - 1) * sl_replay_reduce_cpu_s(x->env, &x->t->roles[members[i]],
									part));
		}
	}
}
