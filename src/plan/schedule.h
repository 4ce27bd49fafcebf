/* The pipeline schedule as data: what each rank of a distributed job does in one training step,
 * as a list of instructions the runtime executes in order (DeepSpeed's TrainSchedule idea,
 * deepspeed/runtime/pipe/schedule.py), and a checker that runs every rank's list together
 * without the model.
 *
 * Schedule (sl_schedule_build): 1F1B per pipeline (PipeDream-Flush / Megatron's non-interleaved
 * schedule). Stage k of P with n micro-batches does w = min(P-k-1, n) warm-up forwards, then
 * n - w steady-state pairs (forward w+i, backward i), then w cool-down backwards; micro-batches
 * are forwarded and backwarded in increasing order. One micro-batch's work expands to
 *   forward:  [load] [recv-activation] forward [send-activation]
 *   backward: [recv-gradient] backward [send-gradient]
 * and the step ends with reduce-gradients, optimizer-step. load is on stage 0 (tokens) and on
 * stage P-1 (targets); both read the same micro-batch when P == 1. A send with no destination
 * (see below) is left out.
 *
 * Activation slots: stage k keeps at most S_k = min(P-k, n) micro-batches in flight (forwarded,
 * not yet backwarded), which is 1F1B's memory bound; micro-batch m lives in slot m % S_k from
 * its load/receive until its backward. Every micro-batch instruction carries that slot.
 *
 * Peers (TP-aware): every TP rank of a replica holds the full activation and the full input
 * gradient (Megatron replicates them across the TP group), so one copy suffices per receiver.
 * Replica (k, j) has TP degree t1, replica (k+1, j) has t2:
 *   activation: TP rank i of (k+1, j) receives from TP rank i % t1 of (k, j); so TP rank s of
 *               (k, j) sends to every i of (k+1, j) with i % t1 == s (none when s >= t2).
 *   gradient:   TP rank s of (k, j) receives from TP rank s % t2 of (k+1, j); so TP rank i of
 *               (k+1, j) sends to every s of (k, j) with s % t2 == i (none when i >= t1).
 * A receive names exactly one source world rank, a send 1..t destination world ranks.
 *
 * Communication semantics assumed (and simulated by the checker): sends are non-blocking and
 * buffered (the runtime must keep the buffer alive until the send completes, e.g. MPI_Isend
 * + wait before the slot is reused), receives block until the matching send was issued.
 * Messages are matched by (source, destination, tag) with tag = sl_schedule_tag(kind, m).
 *
 * The module depends on neither MPI nor the model: only on the role table (plan/roles.h).
 */
#ifndef SL_PLAN_SCHEDULE_H
#define SL_PLAN_SCHEDULE_H

#include <stddef.h>

#include "plan/roles.h"
#include "util/err.h"

/* Tags are 2*m + kind, so m < 16000 keeps them below 32767, the smallest tag upper bound MPI
 * guarantees (MPI_TAG_UB >= 32767). More micro-batches per pipeline are refused. */
#define SL_SCHEDULE_MAX_MICROBATCHES 16000
/* Largest TP degree a replica may have (bounds the peer lists). */
#define SL_SCHEDULE_MAX_TP 64

enum sl_instr_op {
	SL_INSTR_LOAD_MICROBATCH,   /* read micro-batch m's tokens (stage 0) / targets (stage P-1) */
	SL_INSTR_RECV_ACTIVATION,   /* blocking receive of m's input activation from peers[0] */
	SL_INSTR_FORWARD,           /* forward of micro-batch m; keeps its activations in slot */
	SL_INSTR_SEND_ACTIVATION,   /* non-blocking send of m's output activation to peers[] */
	SL_INSTR_RECV_GRADIENT,     /* blocking receive of the gradient of m's output from peers[0] */
	SL_INSTR_BACKWARD,          /* backward of m; accumulates weight gradients, frees slot */
	SL_INSTR_SEND_GRADIENT,     /* non-blocking send of m's input gradient to peers[] */
	SL_INSTR_REDUCE_GRADIENTS,  /* data-parallel gradient sync across the stage's replicas */
	SL_INSTR_OPTIMIZER_STEP,    /* apply the update; last instruction of the step */
};

/* The two kinds of point-to-point message; the values are part of the tag. */
enum sl_msg_kind {
	SL_MSG_ACTIVATION = 0,
	SL_MSG_GRADIENT = 1,
};

struct sl_instr {
	enum sl_instr_op op;
	int microbatch;     /* pipeline-local index m (0 .. n-1); -1 for reduce/optimizer */
	int slot;           /* activation slot m % slots; -1 for reduce/optimizer */
	int peer_count;     /* recv: 1; send: 1..SL_SCHEDULE_MAX_TP; others: 0 */
	const int *peers;   /* peer_count world ranks (NULL when 0); points into the owning
			     * schedule's peer_pool, so it is valid while the schedule is */
};

struct sl_schedule {
	int rank;           /* world rank this schedule is for */
	int stage;          /* k of num_stages */
	int pipeline;       /* j */
	int tp_rank;        /* t of tp */
	int tp;
	int num_stages;     /* P */
	int microbatches;   /* n: micro-batches of this pipeline per step */
	int slots;          /* activation slots the runtime must allocate: min(P-k, n) */
	int count;          /* instructions */
	struct sl_instr *instrs;
	int *peer_pool;     /* storage of every instruction's peers (a handful of ranks: all
			     * sends of one kind go to the same list) */
	int peer_pool_count;
};

/* The step of world rank `rank` of table. Fails (SL_EINPUT) on an inconsistent table, a rank
 * out of range, a TP degree above SL_SCHEDULE_MAX_TP or a pipeline with more than
 * SL_SCHEDULE_MAX_MICROBATCHES micro-batches. On failure *out is zeroed and owns nothing.
 * Ownership: *out owns instrs and peer_pool (both malloc'd); release with sl_schedule_free().
 * Instructions' peers point into peer_pool: a struct copy shares them (free only one). */
int sl_schedule_build(const struct sl_role_table *table, int rank, struct sl_schedule *out,
		      struct sl_err *err);
void sl_schedule_free(struct sl_schedule *s);

/* Every rank's schedule: *out becomes a malloc'd array of table->world_size schedules, indexed
 * by rank; release with sl_schedule_free_all(*out, table->world_size). NULL on failure. */
int sl_schedule_build_all(const struct sl_role_table *table, struct sl_schedule **out,
			  struct sl_err *err);
void sl_schedule_free_all(struct sl_schedule *all, int world_size);

/* "load-microbatch", "recv-activation", "forward", "send-activation", "recv-gradient",
 * "backward", "send-gradient", "reduce-gradients", "optimizer-step"; "?" otherwise. */
const char *sl_instr_op_name(enum sl_instr_op op);

/* The message tag of kind for pipeline-local micro-batch m: 2*m + kind, below 32767 for
 * m < SL_SCHEDULE_MAX_MICROBATCHES. The runtime and the checker both use it. */
int sl_schedule_tag(enum sl_msg_kind kind, int microbatch);

/* One instruction as text, e.g. "forward m=3 slot=1", "send-activation m=3 slot=1 to 4,5",
 * "recv-gradient m=0 slot=0 from 7". Truncated to size; returns buf. */
char *sl_instr_format(const struct sl_instr *in, char *buf, size_t size);

struct sl_schedule_check_stats {
	long long ticks;          /* makespan of a unit-cost run: forward 1, backward 2, transfers,
				   * load, reduce and optimizer free, a receive waits for its send */
	long long busy_ticks;     /* compute ticks of the busiest rank */
	double bubble;            /* (ticks - busy_ticks) / ticks; 1F1B on a homogeneous pipeline:
				   * (P-1) / (n+P-1) */
	long long messages;       /* point-to-point messages matched */
	long long instructions;   /* over all ranks */
};

/* Checks the schedules of all ranks together (schedules[r] for r < world_size), without the
 * model. Per rank, against the table: the schedule's role; every micro-batch forwarded then
 * backwarded exactly once, in increasing order; slot discipline (slot == m % slots, no forward
 * into a slot still holding an un-backwarded micro-batch, 1 <= slots <= min(P-k, n)); load
 * before forward on stage 0 and before backward on stage P-1; receives before the forward /
 * backward that needs them; each receive from the TP rule's source and each send to exactly the
 * TP rule's destinations, once per micro-batch; reduce-gradients then optimizer-step last.
 * Together: simulates all ranks with blocking receives and buffered sends; every send meets
 * exactly one receive (same kind, micro-batch, source, destination) and vice versa, and no rank
 * waits forever (the error lists the stuck ranks and the chain of waits, a cycle or a rank that
 * finished without sending). Errors name the rank, its role, the instruction index and the
 * instruction. stats (optional) gets the unit-cost figures. Returns 0 or SL_EINPUT. */
int sl_schedule_check(const struct sl_role_table *table, const struct sl_schedule *schedules,
		      struct sl_schedule_check_stats *stats, struct sl_err *err);

#endif
