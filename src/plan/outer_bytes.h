/* What the islands' outer exchange sends, counted from the plan without running it
 * (docs/design/islands.md#who-sends-what): per round (one exchange of every fragment), the bytes
 * every carrier rank sends over the links between islands, by the class of each link
 * (cluster/link_model.h: the two ranks' zones), and per 1,000 tokens trained. `sailor run
 * --dry-run` prints it; the simulator can count with it.
 *
 * The count follows the runtime (runtime/outer_sync.c, runtime/outer_exchange.c) rule for rule:
 *   - lanes: a stage whose replicas (over every island) share one TP degree t has t lanes, lane r
 *     being TP rank r's own shards of the stage's tensors; a stage of mixed TP has one lane, the
 *     stage's whole tensors, carried by TP rank 0 of each replica;
 *   - a rank's lane vector for fragment f holds its tensors of f (the head's copy of the tied
 *     token table included), sharded as train/param.h shards them (sl_outer_bytes_lanes);
 *   - pieces: with Q the fewest pipelines of an island, piece q of every lane vector is carried
 *     by the q-th pipeline (in pipeline order) of every island: one outer group of n members
 *     (n islands) per (stage, lane, piece);
 *   - chunks: piece q of a vector of L values is [floor(q L / Q), floor((q+1) L / Q)), cut into n
 *     chunks the same way; chunk c's bytes are sl_outer_wire_bytes of its length (int8: 4 bytes of
 *     scale per block of 256 values, blocks counted from each chunk's start);
 *   - phase 1: member i sends chunk c to member c (c != i); phase 2: member c sends its averaged
 *     chunk c to every other member. A transfer is counted on the link between the zones of the
 *     two members' replicas.
 * So the total per round equals the sum over ranks of the runtime's bytes_sent over a round
 * (tests/integration/run_islands_dry_run.sh holds `sailor run` to it). A fragment that no island
 * trained since its last sync is skipped by the runtime's final flush; that is the run's end,
 * not a round's, and is not counted here.
 *
 * Pure: no MPI, no allocation beyond the call's own. */
#ifndef SL_PLAN_OUTER_BYTES_H
#define SL_PLAN_OUTER_BYTES_H

#include "cluster/catalogue.h"
#include "cluster/link_model.h"
#include "model/model_config.h"
#include "plan/plan.h"
#include "util/err.h"

struct sl_outer_bytes {
	long long class_bytes[SL_LINK_CLASSES]; /* per round, by the link's class */
	long long total_bytes;       /* per round: every fragment exchanged once */
	long long groups;            /* outer groups: (stage, lane, piece) */
	int pieces;                  /* Q */
	double tokens_per_round;     /* sum over islands of H_i x micro-batches x mbs x seq */
	double bytes_per_1k_tokens;  /* total_bytes per 1,000 tokens of tokens_per_round */
};

/* One transfer of a round's exchange (every fragment's bytes of it together). */
struct sl_outer_transfer {
	long long group;       /* the outer group, 0-based in count order */
	int phase;             /* 1: a chunk to its owner; 2: the averaged chunk back */
	int src_member, dst_member; /* their islands */
	int src_zone, src_gpu, dst_zone, dst_gpu;
	long long bytes;
	int stage, src_pipeline, dst_pipeline; /* the two replicas: (stage, pipeline) */
};
typedef void (*sl_outer_bytes_visit_fn)(void *ctx, const struct sl_outer_transfer *t);

/* lane[f], f < fragments: the values of fragment f in the lane vector of a rank that holds plan
 * layers first..last as TP rank tp_rank of tp (its own shards), or, with whole = 1, the whole
 * tensors (TP rank 0 of a mixed stage). starts: sl_islands_fragment_starts(model, fragments). */
void sl_outer_bytes_lanes(const struct sl_model_config *model, int first, int last, int tp,
			  int tp_rank, int whole, const int *starts, int fragments,
			  long long *lane);

/* Counts the outer exchange of a plan that sl_plan_check accepted for global_batch, trained with
 * sequences of seq_len tokens. A plan without islands, or with one, has no outer step: *out is
 * all zeros. SL_EINPUT (naming islands.fragments) when the model has fewer tensors than
 * fragments; SL_ENOMEM. */
int sl_outer_bytes_count(const struct sl_plan *plan, const struct sl_model_config *model,
			 long long global_batch, int seq_len, const struct sl_catalogue *cat,
			 struct sl_outer_bytes *out, struct sl_err *err);

/* The tokens a round of the plan trains: over its pipelines, the inner steps of its island times
 * its micro-batches (of global_batch), the micro-batch size and seq_len (struct sl_outer_bytes'
 * tokens_per_round; 0 without islands). */
double sl_outer_tokens_per_round(const struct sl_plan *plan, long long global_batch, int seq_len);

/* The same count, calling visit(ctx, t) for every transfer (the simulator times and prices
 * them link by link). */
int sl_outer_bytes_visit(const struct sl_plan *plan, const struct sl_model_config *model,
			 long long global_batch, int seq_len, const struct sl_catalogue *cat,
			 sl_outer_bytes_visit_fn visit, void *ctx, struct sl_outer_bytes *out,
			 struct sl_err *err);

#endif
