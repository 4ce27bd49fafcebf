/* The network profiler: bandwidth against message size between the hosts of a cluster file,
 * measured by MPI ranks placed on those hosts, fitted to the simulator's network model
 * (cluster/network.h) and written in its file format.
 *
 * Placement (the same on the launcher and every rank, from the cluster file alone): rank h runs
 * on host h, one rank per host in file order; one more rank runs on the first host of each
 * device type that has two or more slots, to measure within a host of that type. Endpoints are the distinct (zone, GPU type) pairs of
 * the hosts (what the network file is keyed by), each stood for by its first host. Measured
 * pairs, one after the other while every other rank waits on a barrier:
 *   - every two endpoints (their first hosts), and an endpoint with itself when it has two
 *     hosts (its first and second host): "between hosts";
 *   - each extra rank and the host it shares: "within a host".
 * Per pair and message size: point-to-point (the sender sends `bytes`, the receiver answers
 * with one byte; bandwidth = bytes / round trip; median over the repeats) and all-reduce (a
 * sum of bytes/4 floats over the two ranks; algorithm bandwidth = bytes / time, median).
 * Between hosts also the burst probe: the message of the size nearest 256 KiB sent after a
 * quarter second of quiet, `repeats` times; burst_bytes = bytes x (1 - after_idle / back to
 * back), what a link that idled lets through at once (source.pairs[].burst_bytes and
 * .burst_probe; the simulator's token bucket, time_replay.c); and the eager probe: after the
 * same quiet a one-byte round trip, then one of a 60 KiB message (under OpenMPI's TCP eager
 * limit: one write, one TCP segment), 7 times; whole_message_bytes = 60 KiB less what the
 * fastest message's extra time moves at the back-to-back rate, the largest eager message the
 * link passes whole when its bucket owes nothing (source.pairs[].whole_message_bytes and
 * .eager_probe; sl_replay_link_take_whole). On ranks that wait asleep (CPU-quota devices), the
 * message probe: each end's thread CPU inside the MPI calls of the point-to-point samples, less
 * what their tests cost when they find nothing (the idle-wait probe, run on one rank at a time
 * before the pairs), per message (source.pairs[].message_cpu: bytes, sender_s, receiver_s; the
 * replay model charges it, time_replay.c).
 *
 * Output (written by rank 0 of sl_netprof_worker), loadable as data/network/zone_bandwidths.json (whose loader
 * skips keys that are not zones):
 *   {"schema": "sailor.network/1",
 *    "source": {host, date, repeats, sizes, "pairs": [raw measurements and fits]},
 *    "intra_node": {"<gpu>": {"2": [[a2, a1, a0], max_bps]}},   intra_node_bandwidths.json's form
 *    "<src zone>": {"<src gpu>": {"1": {"<dst zone>": {"<dst gpu>": {"1": [[a2, a1, a0],
 *                                                                    max_bps]}}}}}, ...}
 * Fits: bandwidth in GB/s = a2 x^2 + a1 x + a0 with x = log2(bytes / 1e6), least squares over
 * the point-to-point measurements; max_bps the largest measured (network.h). Links are
 * measured in one direction (sender = the pair's first endpoint) and written for both: the
 * testbed shapes both directions alike. Counts are 1 (one rank per host sending).
 *
 * Ownership: sl_netprof_layout fills *out, which sl_netprof_layout_free frees.
 */
#ifndef SL_PROFILER_NETPROF_H
#define SL_PROFILER_NETPROF_H

#include <jansson.h>

#include "cluster/network.h"
#include "cluster/cluster_file.h"
#include "runtime/comm.h"
#include "util/err.h"

#define SL_NETPROF_MAX_SIZES 16

struct sl_netprof_options {
	const char *cluster;          /* sailor.cluster/1 */
	const char *output;           /* the network file to write */
	long long sizes[SL_NETPROF_MAX_SIZES]; /* message sizes, bytes, ascending */
	int size_count;
	int repeats;                  /* >= 1, median kept */
	double min_sample_s;          /* a timed sample repeats the operation until it lasts this
				       * long (0: one operation); the time kept is per operation */
	int timeout_s;                /* the launcher stops mpirun after this long */
	const char *command;          /* for provenance */
};

/* Ranks and their hosts: rank_host[r] for r < world. Rank h < host_count is on host h; each
 * device type with a host of two slots or more gets one extra rank, host_count + i on
 * intra_hosts[i] (the first such host of the type), whose pair with that host's first rank
 * measures the type's copies within a host: they run on the type's own devices, so a
 * tenth of a core copies slower than half of one. */
struct sl_netprof_layout {
	int world;
	int *rank_host;
	int intra_hosts[SL_CLUSTER_MAX_HOSTS];
	int intra_count;
};

int sl_netprof_layout(const struct sl_cluster *cluster, struct sl_netprof_layout *out,
		      struct sl_err *err);
void sl_netprof_layout_free(struct sl_netprof_layout *layout);

/* Least-squares fit of GB/s = a2 x^2 + a1 x + a0, x = log2(bytes/1e6), to n >= 3 points
 * (bytes[i], bandwidth_bps[i]); max_bps = the largest bandwidth. With fewer than 3 distinct
 * sizes the fit is a line or a constant. Returns 0, or SL_EINPUT when n < 1. */
int sl_netprof_fit(const double *bytes, const double *bandwidth_bps, int n,
		   struct sl_link_fit *out);

/* Launcher: places the ranks, starts `mpirun ... worker_argv` and waits (at most
 * o->timeout_s). worker_argv: this program and its arguments (every rank runs them). */
int sl_netprof_launch(const struct sl_netprof_options *o, const struct sl_catalogue *cat,
		      const char *const *worker_argv, struct sl_err *err);

/* Worker: every rank of the job calls it; rank 0 writes o->output. */
int sl_netprof_worker(const struct sl_netprof_options *o, const struct sl_catalogue *cat,
		      struct sl_comm *comm, struct sl_err *err);

#endif
