/* Communication times: the SOSP'25 primitives (exact) and the sailor model's point-to-point
 * transfers and data-parallel all-reduce (see sim.h for the overall model).
 *
 * Placement assumption (both models): a replica of tp GPUs is one node (a VM with tp GPUs, as in
 * the SOSP'25 plans where gpus_per_node = tp), so every transfer between replicas crosses nodes
 * and uses the inter-node fits of cluster/network.h. */
#include <math.h>

#include <string.h>

#include "sim/internal.h"

/* ---- SOSP'25 (SIMULATOR.md section 3, Python form) ---- */

/* Every message also waits the fit's latency_s: 0 for the artifact's fits (their latency is in
 * them, so these are SIMULATOR.md's formulas exactly), the extra delay of a link the artifact
 * never measured (cluster/link_model.h) otherwise. */
double sl_sosp25_send_time(const struct sl_link_fit *fit, double nbytes)
{
	if (nbytes == 0)
		return 0.0;
	return fit->latency_s + (nbytes / 1e9) / sl_link_fit_gbps(fit, nbytes);
}

static double sosp25_ar_time(double nbytes, int n, const struct sl_link_fit *fit)
{
	if (nbytes == 0 || n <= 1)
		return 0.0;
	return 2.0 * (n - 1) * sl_sosp25_send_time(fit, nbytes / n);
}

double sl_sosp25_ar_time_buckets(double nbytes, int n, const struct sl_link_fit *fit)
{
	double full = floor(nbytes / SL_SOSP25_BUCKET_BYTES);
	double rest = nbytes - full * SL_SOSP25_BUCKET_BYTES;
	double t = 0.0;
	for (double i = 0; i < full; i++)
		t += sosp25_ar_time(SL_SOSP25_BUCKET_BYTES, n, fit);
	return t + sosp25_ar_time(rest, n, fit);
}

/* ---- sailor ---- */

/* Fixed cost of DeepSpeed's gradient reduction per iteration even without peers: flattening the
 * gradients into buckets and back, the Python loop over parameters, stream syncs. red_grads of
 * the D = 1 GH200 runs: 4.1, 4.7, 8.0 and 8.2 ms (mean 6.3 ms). */
#define REDUCE_FIXED_S 0.006

/* How far an NCCL send between nodes can run ahead of its receive: the bytes it can stage.
 * Send/recv between nodes moves its message in chunks of NCCL_P2P_NET_CHUNKSIZE (128 KiB,
 * src/init.cc), NCCL_STEPS (8, include/device.h) of them in flight per channel, over
 * NCCL_NCHANNELS_PER_NET_PEER channels per peer (2, src/graph/paths.cc; NCCL 2.x before it
 * became automatic): 2 MiB. A message that fits is copied into those slots by the sender's
 * kernel, which then finishes; the proxy threads move it over the network into the receiver's
 * slots, posted when the receiving host enqueues its receive, ahead of its GPU. A larger message
 * advances only as the receiver's kernel drains it, so the sender waits for the receiver (a
 * rendezvous). */
#define NCCL_P2P_STAGING_BYTES (2.0 * 8.0 * 131072.0)

void sl_sim_p2p_transfer(const struct sl_sim_env *env, const struct sl_replica *src,
			 const struct sl_replica *dst, double bytes, struct sl_sim_transfer *out)
{
	/* DeepSpeed's PipelineEngine partitions what it sends between stages when the model is
	 * tensor-parallel (engine.py: is_pipe_partitioned = is_grad_partitioned =
	 * is_model_parallel): each TP rank of the sender sends only its 1/tp slice of the stage
	 * output (or of the gradient), to the matching rank of the receiver, and the receiver's TP
	 * group all-gathers the slices (PartitionedTensor.full()) before using them. So one copy of
	 * the tensor crosses the network, over c = min(tp_src, tp_dst) GPU pairs in parallel whose
	 * aggregate bandwidth the count-c inter-node fit gives (SIMULATOR.md 2.5), then an
	 * intra-node all-gather over the receiver's NVLink/PCIe (intra-node fit). An earlier
	 * version of this model sent a full copy from every TP rank; the SOSP'25 RTX runs, whose
	 * nodes share one NIC (data/validation/mit-rtx-*, no constant set from them), ruled that
	 * out: up to 7.8x the measured time. */
	int c = src->tp < dst->tp ? src->tp : dst->tp;
	const struct sl_link_fit *fit = sl_network_fit(env->network, src->zone, src->gpu, c,
						      dst->zone, dst->gpu, c);
	/* c pairs each send bytes/c; the count-c fit is their aggregate bandwidth */
	out->net_s = fit->latency_s + (bytes / 1e9) / sl_link_fit_gbps_positive(fit, bytes / c);
	out->gather_s = 0.0;
	if (dst->tp > 1) {
		/* ring all-gather: every GPU receives the (tp-1) slices it lacks */
		const struct sl_link_fit *intra = sl_network_intra_fit(env->network, dst->gpu, dst->tp);
		double slice = bytes / dst->tp;
		out->gather_s =
			((dst->tp - 1) * slice / 1e9) / sl_link_fit_gbps_positive(intra, slice);
	}
	out->eager = bytes / c <= NCCL_P2P_STAGING_BYTES;
}

double sl_sim_p2p_time(const struct sl_sim_env *env, const struct sl_replica *src,
		       const struct sl_replica *dst, double bytes)
{
	struct sl_sim_transfer x;
	sl_sim_p2p_transfer(env, src, dst, bytes, &x);
	return x.net_s + x.gather_s;
}

/* One ring step: every node sends chunk bytes (spread over c GPU pairs) to its successor, and
 * its GPUs fold the chunk they receive into their own and pass it on.
 *   - The wire: the count-c fit is the aggregate bandwidth of c pairs each sending chunk/c.
 *   - The node: NCCL's ring kernels (recvReduceSend) read each received byte from the
 *     connection's buffer and write the result to the next one, two passes of the chunk over
 *     the node's GPU interconnect (NVLink-C2C, or PCIe through host memory where GPUs lack
 *     GPUDirect RDMA), at the bandwidth the node's c GPUs reach there (intra-node fit). They
 *     follow the bytes' arrival, so the two add.
 * Where the wire is far slower than the node (the RTX nodes' 1 Gb/s links: 0.11 GB/s against
 * 5-25 GB/s of PCIe) a ring reaches the wire's speed; where they are alike (GH200: 95 GB/s of
 * network, 250 GB/s of NVLink) it reaches about 0.55 of it, as the measured red_grads of the
 * SOSP'25 GH200 runs show (D = 2: 0.58, D = 16: 0.37, D = 32: 0.57 of the count-4 fit). */
static double ring_step(const struct sl_sim_env *env, const struct sl_replica *a,
			const struct sl_replica *b, double chunk)
{
	int c = a->tp < b->tp ? a->tp : b->tp;
	const struct sl_link_fit *fit = sl_network_fit(env->network, a->zone, a->gpu, c, b->zone,
						      b->gpu, c);
	/* the wire and both nodes are read at one message size: its logarithm taken once, and
	 * one node's time where both sides are of one GPU type (the same fit) */
	double log2_mb = log2(chunk / c / 1e6);
	double wire_s = fit->latency_s +
			(chunk / 1e9) / sl_link_fit_gbps_positive_at(fit, log2_mb);
	double node_s = 0.0;
	for (int side = 0; side < (a->gpu == b->gpu ? 1 : 2); side++) {
		const struct sl_replica *r = side ? b : a;
		const struct sl_link_fit *intra = sl_network_intra_fit(env->network, r->gpu, c);
		double s = (2.0 * chunk / 1e9) / sl_link_fit_gbps_positive_at(intra, log2_mb);
		if (s > node_s)
			node_s = s;
	}
	return wire_s + node_s;
}

double sl_sim_allreduce_time(const struct sl_sim_env *env, const struct sl_replica *reps, int D,
			     double grad_bytes)
{
	if (D <= 1 || grad_bytes <= 0)
		return REDUCE_FIXED_S;
	/* DeepSpeed reduces each TP rank's shard in buckets of 5e8 elements; the tp shards of a node
	 * reduce concurrently, so a bucket round moves (bucket elements · 4 · tp) bytes per node.
	 * Smallest tp decides the shard size. */
	int tmin = reps[0].tp;
	for (int j = 1; j < D; j++)
		if (reps[j].tp < tmin)
			tmin = reps[j].tp;
	double shard = grad_bytes / tmin;
	double bucket = SL_DS_BUCKET_ELEMENTS * SL_FP32_BYTES;
	double t = REDUCE_FIXED_S;
	for (double done = 0; done < shard; done += bucket) {
		double node_bytes = (shard - done < bucket ? shard - done : bucket) * tmin;
		/* ring all-reduce: 2(D-1) steps of node_bytes/D each, every step paced by the slowest
		 * hop of the ring (replica order j -> j+1, closing D-1 -> 0) */
		double chunk = node_bytes / D, worst = 0;
		for (int j = 0; j < D; j++) {
			const struct sl_replica *a = &reps[j], *n = &reps[(j + 1) % D];
			/* a hop's time depends only on the two replicas' (zone, gpu, tp): consecutive
			 * equal hops (a zone's run of replicas in a plan) are timed once */
			if (j > 0 && !memcmp(a, &reps[j - 1], sizeof(*a)) && !memcmp(n, a, sizeof(*a)))
				continue;
			double s = ring_step(env, a, n, chunk);
			if (s > worst)
				worst = s;
		}
		t += 2.0 * (D - 1) * worst;
	}
	return t;
}

double sl_sim_allreduce_hop_bound(const struct sl_sim_env *env, const struct sl_replica *a,
				  const struct sl_replica *b, int D, double grad_bytes, int tmin)
{
	if (D <= 1 || grad_bytes <= 0)
		return REDUCE_FIXED_S;
	/* sl_sim_allreduce_time with every hop of the ring as fast as a -> b */
	double shard = grad_bytes / tmin;
	double bucket = SL_DS_BUCKET_ELEMENTS * SL_FP32_BYTES;
	double t = REDUCE_FIXED_S;
	for (double done = 0; done < shard; done += bucket) {
		double node_bytes = (shard - done < bucket ? shard - done : bucket) * tmin;
		t += 2.0 * (D - 1) * ring_step(env, a, b, node_bytes / D);
	}
	return t;
}

double sl_sim_tied_time(const struct sl_sim_env *env, const struct sl_replica *first,
			const struct sl_replica *last, double bytes_per_gpu)
{
	/* a 2-member all-reduce of the embedding gradient shard: each side sends it once */
	int c = first->tp < last->tp ? first->tp : last->tp;
	double chunk = bytes_per_gpu * c / 2.0;
	return 2.0 * ring_step(env, first, last, chunk);
}
