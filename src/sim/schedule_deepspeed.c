/* The 1F1B pipeline schedule of one pipeline as DeepSpeed's PipelineEngine runs it
 * (deepspeed/runtime/pipe/schedule.py, TrainSchedule), simulated step by step.
 *
 * DeepSpeed runs 2·(M + P - 1) lockstep steps. Stage k does the forward of micro-batch m at step
 * 2m + k and its backward at step 2m + 2P - k - 1; a step is a forward step on stage k when step
 * and k have the same parity. Transfers are deferred by one step (NCCL send/recv pairs): on a
 * backward step stage k first receives the gradient of its current micro-batch from k+1
 * (RecvGrad), then sends the activation of its previous forward to k+1 (SendActivation), then
 * runs the backward; on a forward step stage k+1 mirrors that (SendGrad, RecvActivation,
 * forward). Every rank issues its operations in this order and each waits for the one before.
 *
 * How long a transfer holds its two sides depends on NCCL's protocol (struct sl_sim_transfer):
 *   - rendezvous (a TP rank's message larger than NCCL's staging slots): the transfer starts
 *     when both sides have reached it and holds both until it ends (the sender's kernel cannot
 *     finish before the receiver has drained all but the last buffer's worth);
 *   - eager (the message fits them): the sender's kernel only copies it into the staging
 *     slots and goes on; the bytes cross the network from then on, and the receiver waits only
 *     if they have not all arrived when it reaches its receive. Then it all-gathers the TP
 *     slices (gather_s) either way.
 * Every stage is a node with one NIC (sim/comm_time.c: a replica is one node): the bytes a stage
 * sends leave through its NIC's transmit side one transfer after the other, and the bytes it
 * receives enter through the receive side likewise, whichever neighbour they go to or come from.
 * This captures warm-up, steady state and cool-down, the stalls of rendezvous transfers, and the
 * round trips of DeepSpeed's deferred sends, which the closed form (M-1)·max + Σ misses.
 *
 * Cost: O(P · (M + P)) with no allocation (P <= SL_SIM_MAX_STAGES). */
#include <string.h>

#include "sim/internal.h"

static int fwd_valid(int k, int s, int M)
{
	int x = s - k;
	return x >= 0 && !(x & 1) && (x >> 1) < M;
}

static int bwd_valid(int k, int s, int P, int M)
{
	int x = s - (2 * P - k - 1);
	return x >= 0 && !(x & 1) && (x >> 1) < M;
}

static double later(double a, double b)
{
	return a > b ? a : b;
}

/* Where the stages stand: each one's clock, and when its NIC's two sides are next free. */
struct pipeline_state {
	double clock_s[SL_SIM_MAX_STAGES];
	double nic_send_free_s[SL_SIM_MAX_STAGES];
	double nic_recv_free_s[SL_SIM_MAX_STAGES];
	double *p2p_s;
};

/* One transfer from stage src to stage dst, issued by both at their current clocks. */
static void transfer(struct pipeline_state *st, int src, int dst, const struct sl_sim_transfer *x)
{
	double *t = st->clock_s;
	double ready = x->eager ? t[src] : later(t[src], t[dst]);
	double start = later(ready, later(st->nic_send_free_s[src], st->nic_recv_free_s[dst]));
	double end = start + x->net_s;
	st->nic_send_free_s[src] = st->nic_recv_free_s[dst] = end;
	if (x->eager) {
		/* the receiver's part: the bytes still in flight when it gets there, then its gather */
		st->p2p_s[dst] += later(0.0, end - later(t[dst], start)) + x->gather_s;
	} else {
		/* both sides for the transfer (waiting for the partner or the NIC is bubble) */
		t[src] = end;
		st->p2p_s[src] += x->net_s;
		st->p2p_s[dst] += x->net_s + x->gather_s;
	}
	t[dst] = later(t[dst], end) + x->gather_s;
}

void sl_sim_schedule_1f1b(int P, int M, const double *fwd_s, const double *bwd_s,
			  const struct sl_sim_transfer *act, const struct sl_sim_transfer *grad,
			  double *finish_s, double *compute_s, double *p2p_s)
{
	struct pipeline_state st;
	st.p2p_s = p2p_s;
	for (int k = 0; k < P; k++) {
		st.clock_s[k] = st.nic_send_free_s[k] = st.nic_recv_free_s[k] = 0.0;
		compute_s[k] = p2p_s[k] = 0.0;
	}
	double *t = st.clock_s;
	int steps = 2 * (M + P - 1);
	for (int s = 0; s < steps; s++) {
		/* exchanges between k (backward step) and k+1 (forward step) */
		for (int k = (s + 1) & 1; k + 1 < P; k += 2) {
			if (bwd_valid(k, s, P, M)) /* gradient of this micro-batch from k+1 */
				transfer(&st, k + 1, k, &grad[k]);
			if (fwd_valid(k, s - 1, M)) /* activation of k's previous forward to k+1 */
				transfer(&st, k, k + 1, &act[k]);
		}
		for (int k = 0; k < P; k++) {
			if (((s ^ k) & 1) == 0) {
				if (fwd_valid(k, s, M)) {
					t[k] += fwd_s[k];
					compute_s[k] += fwd_s[k];
				}
			} else if (bwd_valid(k, s, P, M)) {
				t[k] += bwd_s[k];
				compute_s[k] += bwd_s[k];
			}
		}
	}
	memcpy(finish_s, t, (size_t)P * sizeof(double));
}
