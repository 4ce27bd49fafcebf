/* The 1F1B pipeline schedule of one pipeline as DeepSpeed's PipelineEngine runs it
 * (deepspeed/runtime/pipe/schedule.py, TrainSchedule), simulated step by step.
 *
 * DeepSpeed runs 2·(M + P - 1) lockstep steps. Stage k does the forward of micro-batch m at step
 * 2m + k and its backward at step 2m + 2P - k - 1; a step is a forward step on stage k when step
 * and k have the same parity. Transfers are deferred by one step and blocking (NCCL send/recv
 * pairs): on a backward step stage k first receives the gradient of its current micro-batch from
 * k+1 (RecvGrad), then sends the activation of its previous forward to k+1 (SendActivation),
 * then runs the backward; on a forward step stage k+1 mirrors that (SendGrad, RecvActivation,
 * forward). So at every step the stages pair up, (k in a backward step, k+1 in a forward step),
 * and each transfer starts when both partners are ready and occupies both until it ends. This
 * captures warm-up, steady state and cool-down, and the stalls blocking transfers add (a sender
 * waits for its receiver), which the closed form (M-1)·max + Σ misses.
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

void sl_sim_schedule_1f1b(int P, int M, const double *fwd_s, const double *bwd_s,
			  const double *act_s, const double *grad_s, double *finish_s,
			  double *compute_s, double *p2p_s)
{
	double t[SL_SIM_MAX_STAGES];
	for (int k = 0; k < P; k++)
		t[k] = compute_s[k] = p2p_s[k] = 0.0;
	int steps = 2 * (M + P - 1);
	for (int s = 0; s < steps; s++) {
		/* exchanges between k (backward step) and k+1 (forward step) */
		for (int k = (s + 1) & 1; k + 1 < P; k += 2) {
			if (bwd_valid(k, s, P, M)) { /* gradient of this micro-batch from k+1 */
				double start = t[k] > t[k + 1] ? t[k] : t[k + 1];
				t[k] = t[k + 1] = start + grad_s[k];
				p2p_s[k] += grad_s[k];
				p2p_s[k + 1] += grad_s[k];
			}
			if (fwd_valid(k, s - 1, M)) { /* activation of k's previous forward to k+1 */
				double start = t[k] > t[k + 1] ? t[k] : t[k + 1];
				t[k] = t[k + 1] = start + act_s[k];
				p2p_s[k] += act_s[k];
				p2p_s[k + 1] += act_s[k];
			}
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
