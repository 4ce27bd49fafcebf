/* The islands' outer step on one rank (docs/design/islands.md): the global weights and the
 * outer momentum of the rank's own shards, the exchange of pseudo-gradients with the ranks that
 * hold the same parameters in the other islands, and the landing of the average.
 *
 * Lanes and pieces (islands.md#who-sends-what): a rank's lane vector for fragment f is its own
 * shards of f's tensors laid end to end when its stage has one TP degree in every island, else
 * (mixed TP) the stage's whole tensors of f, held by TP rank 0 of each replica. The lane vector
 * is cut into Q pieces (Q = the fewest pipelines of an island); the rank of the q-th pipeline
 * of every island carries piece q over the slow links (an "outer group" of one rank per island);
 * the others receive the averaged pieces from them inside the island.
 *
 * The exchange of a piece: the piece is cut into n chunks (n islands); phase 1 sends chunk c of
 * each island's encoded pseudo-gradient to member c (MPI_Ialltoallv); member c averages its
 * chunk in fp32 in island order, weighted by the tokens each island trained, and encodes the
 * average; phase 2 sends the averaged chunk to every member (MPI_Ialltoallv of one buffer: an
 * all-gather whose two directions run at once, outer_exchange.c). The two phases
 * use two communicators so that every member starts them in the same order whatever the
 * moment its phase 1 finishes. Islands compute the same weights without exchanging them
 * (plan/outer_schedule.h).
 *
 * Ownership: sl_outer_sync_init() allocates everything and splits three groups off the world
 * (every rank calls it, in the same order relative to other splits); sl_outer_sync_free()
 * releases them. The parameters are the caller's (the rank's stage), borrowed.
 */
#ifndef SL_RUNTIME_OUTER_SYNC_H
#define SL_RUNTIME_OUTER_SYNC_H

#include "model/model_config.h"
#include "plan/outer_schedule.h"
#include "plan/roles.h"
#include "runtime/comm.h"
#include "runtime/outer_wire.h"
#include "train/param.h"

/* One fragment's exchange in flight. */
enum sl_outer_phase {
	SL_OUTER_IDLE,
	SL_OUTER_DEFERRED, /* SAILOR_TEST_OUTER_BLOCKING: snapshot taken, phase 1 at the landing */
	SL_OUTER_PHASE1,
	SL_OUTER_PHASE2,
	SL_OUTER_DONE,
	SL_OUTER_SETTLED,  /* exchanged, the average kept in `pending` until its landing step
			    * (a checkpoint settles what is in flight; outer_sync_settle) */
};

struct sl_outer_fragment {
	long long lane_len;          /* its lane vector (this rank's; 0 when not a lane member) */
	long long piece_off, piece_len; /* the piece this rank carries (len 0: none) */
	int *island_counts;          /* per member of the island lane group: its piece length */
	long long land_step;         /* the island's inner step after which it lands */
	enum sl_outer_phase phase;
	int skip;                    /* no island trained since the last sync: nothing to apply */
	int flush;                   /* the final flush: land by replacing */
	float weights[SL_ISLANDS_MAX_ISLANDS]; /* islands' shares of the tokens */
	unsigned char *send, *recv1, *mid, *recv2;
	int *counts;                 /* 6n: send counts, send displs, recv1 counts, recv1 displs,
				      * recv2 counts, recv2 displs (bytes) */
	struct sl_comm_request req1, req2;
	long long fifo;              /* start order, for landing and phase 2 */
	float *pending;              /* SETTLED: the average of the lane vector (lane_len) */
};

struct sl_outer_sync_stats {
	long long outer_steps;       /* fragment syncs applied (each fragment counts once) */
	double bytes_sent;           /* this rank's bytes over the outer groups */
	double wait_s;               /* time this rank waited for exchanges to finish */
};

struct sl_outer_sync {
	struct sl_comm *comm;
	const struct sl_role_table *table;
	const struct sl_plan_islands *isl;
	struct sl_outer_schedule sched;
	struct sl_role me;
	int n;                       /* islands */
	int lane_member;             /* holds a lane vector */
	int mixed;                   /* the lane is whole tensors (mixed TP) */
	int carrier;                 /* carries a piece over the slow links */
	int pieces;                  /* Q: the fewest pipelines of an island */
	const struct sl_comm_group *tp; /* borrowed: the replica's TP group (mixed stages) */
	struct sl_comm_group outer1, outer2, island_lane;
	struct sl_param **params;    /* borrowed array copy */
	int count;
	int *fragment_of;            /* per param */
	long long *lane_off;         /* per param: offset in its fragment's lane vector */
	float **global, **momentum;  /* per param: numel each */
	struct sl_outer_fragment *frags;
	float *scratch;              /* the largest lane vector */
	float *acc;                  /* the largest chunk */
	long long next_fifo, landed_fifo;
	int blocking;                /* SAILOR_TEST_OUTER_BLOCKING (util/test_faults.h) */
	struct sl_outer_sync_stats stats;
};

/* The plan names the wire format with plan/islands.h's enum, the codec with its own. */
_Static_assert((int)SL_ISLANDS_WIRE_FP32 == (int)SL_OUTER_WIRE_FP32 &&
		       (int)SL_ISLANDS_WIRE_BF16 == (int)SL_OUTER_WIRE_BF16 &&
		       (int)SL_ISLANDS_WIRE_INT8 == (int)SL_OUTER_WIRE_INT8,
	       "the plan's and the codec's wire formats must agree");

static inline enum sl_outer_wire_format sl_outer_sync_wire(const struct sl_outer_sync *o)
{
	return (enum sl_outer_wire_format)o->isl->wire;
}

/* The outer optimizer on one value: SGD with Nesterov momentum (torch.optim.SGD, nesterov,
 * no dampening or decay) applies the averaged pseudo-gradient d to the global weight *g with
 * momentum *m, in fp32. */
static inline void sl_outer_sync_nesterov(float *g, float *m, float d, float mu, float lr)
{
	*m = *m * mu + d;
	*g = *g - lr * (d + mu * *m);
}

int sl_outer_sync_init(struct sl_outer_sync *o, struct sl_comm *comm,
		       const struct sl_role_table *table, const struct sl_plan_islands *isl,
		       const struct sl_model_config *model, long long run_steps,
		       const struct sl_comm_group *tp, struct sl_param *const *params, int count,
		       struct sl_err *err);
void sl_outer_sync_free(struct sl_outer_sync *o);

/* The global weights become the values now in the parameters (the start, or after a load). */
void sl_outer_sync_take_values(struct sl_outer_sync *o);

/* After the island's inner step `step` (1-based): tests the exchanges in flight, lands those due
 * and starts the syncs due (without overlap it lands them at once). *landed = 1 when parameter
 * values changed (a sharded optimizer with master copies must reload them). */
int sl_outer_sync_after_step(struct sl_outer_sync *o, long long step, int *landed,
			     struct sl_err *err);

/* At a round end, before anything that waits on every island (the stop agreement): the second
 * phase of every exchange in flight started, waiting for first phases where needed, so that an
 * island still landing one of them is never left waiting on this one. */
int sl_outer_sync_round_end(struct sl_outer_sync *o, struct sl_err *err);

/* Tests the exchanges in flight and starts the second phase of those whose first is done. */
int sl_outer_sync_progress(struct sl_outer_sync *o, struct sl_err *err);

/* Finishes every exchange in flight without landing it (each keeps its average until its
 * landing step): what a checkpoint saves. Collective over the outer groups and the island. */
int sl_outer_sync_settle(struct sl_outer_sync *o, struct sl_err *err);

/* view[i] (numel floats per parameter) = the global weights with every settled exchange's
 * outer step applied, as the islands will hold them once all have landed: the same on every
 * island. Call after sl_outer_sync_settle; changes nothing in o. */
void sl_outer_sync_global_view(const struct sl_outer_sync *o, float **view);

/* After the run's last step: lands everything in flight, then syncs every fragment once more;
 * the parameters then hold the global weights. */
int sl_outer_sync_finish(struct sl_outer_sync *o, int *landed, struct sl_err *err);

#endif
