/* Network links between GPUs and what crossing zones costs.
 *
 * Bandwidth fits (data/network/zone_bandwidths.json, the SOSP'25 artifact's
 * multizone_bandwidths_het.json): for a sender (zone, GPU type, count) and a receiver (zone, GPU
 * type, count), bandwidth in GB/s = a2·x² + a1·x + a0 with x = log2(bytes / 1e6), and the largest
 * bandwidth measured (bytes/s). `count` is the number of GPUs of one node sending in parallel to
 * the other node; the fit is their aggregate (SIMULATOR.md section 2.5). Counts are 1, 2, 4, 8.
 *
 * The file is sparse. Every lookup here returns a fit, never NULL: the measured one when the file
 * has it (derived = 0), else a stand-in (derived = 1) chosen in this order:
 *   1. the GPU type's "network_as" stand-in from the catalogue (A100-80 -> A100-40, ...);
 *   2. the same sender and receiver but the nearest count the file has (largest count <= the one
 *      asked, else the smallest);
 *   3. a link of mixed GPU types missing: the slower (lower max bandwidth) of the two homogeneous
 *      links, sender type to sender type and receiver type to receiver type, between the zones;
 *   4. zones without a measured pair for these types: the slower of (a) the same-zone link of the
 *      types and (b) the slowest measured link of any GPU types between the two zones (the
 *      inter-zone path then decides); if neither zone pair has any measurement, the slowest
 *      inter-zone link in the file.
 * Those rules hold between the zones the fits measured (the SOSP'25 artifact's five and any of a
 * --network file). A pair with another zone takes, after the links the user measured (`sailor
 * profile --network`) and the links of the zone files (cluster/zone_files.h), the class model of
 * cluster/link_model.h:
 *   5. the same zone: the same-zone link of the types measured in any zone (a zone's network is
 *      its GPU nodes'; step 4(a));
 *   6. two zones of one region: the link of the types between two zones of a measured region
 *      (us-central1), with the stand-ins of 1-4;
 *   7. other regions and providers: the class's link (the reference fit at that count, scaled,
 *      with the class's latency), or the same-zone link of the types where that is slower (a
 *      node's own network caps what any path can carry), with the class's latency.
 * A user's link (zone files) is the slower of its flat bandwidth and the types' same-zone link,
 * with its latency. Each resolved fit says where it came from (source, sl_network_source_name).
 * Intra-node fits (data/network/intra_node_bandwidths.json, {gpu: {count: [coeffs, max]}}) are
 * looked up the same way by (gpu, count) with the nearest count.
 *
 * Egress prices: cluster/egress.h (the SOSP'25 artifact's data/network/egress_usd_per_gb.json
 * between its zones, the clouds' price lists elsewhere).
 *
 * Names: `sl_network_*` is the whole table (load, lookups, prices); `sl_link_*` one link's fit.
 *
 * Ownership: sl_network_load allocates; sl_network_free frees. The fits and the egress price of
 * a zone pair are resolved when the pair is first asked for (thread-safe), so a catalogue of
 * hundreds of zones costs only the pairs a pool or plan uses; later lookups of the pair are
 * table reads and allocate nothing.
 */
#ifndef SL_CLUSTER_NETWORK_H
#define SL_CLUSTER_NETWORK_H

#include "cluster/catalogue.h"
#include "util/err.h"

#define SL_NET_COUNTS 4 /* counts 1, 2, 4, 8 */

/* Where a fit came from (sl_network_source_name). */
enum sl_link_source {
	SL_LINK_SOURCE_SOSP25_FIT,       /* data/network/zone_bandwidths.json (stand-in: derived) */
	SL_LINK_SOURCE_PROFILED,         /* `sailor profile --network`, given with --network */
	SL_LINK_SOURCE_ZONES_FILE,       /* a link of a zone file */
	SL_LINK_SOURCE_MODEL             /* the class model (cluster/link_model.h): + its link class */
};

struct sl_link_fit {
	double a2, a1, a0;  /* bandwidth in GB/s = a2 x^2 + a1 x + a0, x = log2(bytes/1e6) */
	double max_bps;     /* largest measured bandwidth, bytes/s */
	int derived;        /* 0 measured for exactly this link, 1 a stand-in (see above) */
	/* one-way time every message spends beyond what the fit's bandwidth gives, s: 0 for the
	 * measured fits (their latency is in them), the class's extra delay for class links, the
	 * user's for a zone file's link */
	double latency_s;
	int source;         /* enum sl_link_source */
};

struct sl_network; /* opaque */

/* Loads the three files under data_dir (NULL = sl_paths_data_dir()). Zones and GPU types not in the
 * catalogue are skipped; errors name the file and JSON path. */
int sl_network_load(const char *data_dir, const struct sl_catalogue *cat,
		    struct sl_network **out, struct sl_err *err);
void sl_network_free(struct sl_network *net);

#define SL_NETWORK_SCHEMA "sailor.network/1"

/* Measured links beside the shipped fits (`--network FILE` of simulate, validate and plan): FILE
 * is what `sailor profile --network` writes (schema "sailor.network/1"); its links and its
 * "intra_node" fits replace the shipped ones where both have a link, and add the others. Like
 * the --gpus overlay, a setting of the process: every later sl_network_load() applies it.
 * Checked once here against cat (errors name the file and the JSON path; the previous setting
 * stays on error); NULL or "" clears it. */
int sl_network_set_overlay(const char *path, const struct sl_catalogue *cat, struct sl_err *err);

/* Index of a GPU count in the tables: 1->0, 2->1, 3..4->2, 5+ ->3 (largest power of two <= n). */
int sl_link_count_index(int count);

/* The fit for a link between nodes; counts are GPUs per node sending in parallel (1..8). */
const struct sl_link_fit *sl_network_fit(const struct sl_network *net, int src_zone, int src_gpu,
					int src_count, int dst_zone, int dst_gpu, int dst_count);
/* The intra-node fit for count GPUs of one type (count 1 is treated as 2). */
const struct sl_link_fit *sl_network_intra_fit(const struct sl_network *net, int gpu, int count);

/* Bandwidth in GB/s of a fit at a message size, exactly as the SOSP'25 simulator evaluates it
 * (Python form: x = log2(bytes/1e6), a2 x^2 + a1 x + a0). May be <= 0 for tiny messages. */
double sl_link_fit_gbps(const struct sl_link_fit *fit, double bytes);

/* sl_link_fit_gbps where the quadratic is positive; where it is not (messages far below the sizes
 * measured), the fit's constant term (its value at 1 MB), else 1 GB/s: a rate to divide by. */
double sl_link_fit_gbps_positive(const struct sl_link_fit *fit, double bytes);

/* The same at x = log2(bytes / 1e6) already taken: several fits read at one message size (a
 * ring step's wire and both nodes) take the logarithm once. */
double sl_link_fit_gbps_positive_at(const struct sl_link_fit *fit, double log2_mb);

/* Seconds to send bytes over a fit: latency_s + (bytes/1e9) / gbps; 0 for bytes <= 0. A
 * non-positive fit value (tiny messages) is clamped to the fit's value at 1 MB so the result
 * stays finite. */
double sl_link_send_time_s(const struct sl_link_fit *fit, double bytes);

/* Bytes the link between (zone a, type a) and (zone b, type b) hosts delivers at once after it
 * idled, as the network profile's burst probe measured them (source.pairs[].burst_bytes: a
 * token bucket such as the testbed's tc burst, or a quota device's saved budget); 0 where
 * nothing was measured. */
double sl_network_burst_bytes(const struct sl_network *net, int za, int ga, int zb, int gb);

/* The largest message of at most OpenMPI's TCP eager limit that the link between these zones and
 * types passed whole, at once, after it idled, as the network profile's eager probe measured it
 * (source.pairs[].whole_message_bytes; a shaper that lets a packet through whenever its bucket
 * is not in debt, and TCP, which hands one write to the device as one segment of up to 64 KiB);
 * 0 where not measured. */
double sl_network_whole_message_bytes(const struct sl_network *net, int za, int ga, int zb,
				      int gb);

/* The CPU a message of `bytes` from a device of type ga to one of type gb costs its sender
 * (receiver 0) or its receiver (1), between hosts or (same_host) within one, apart from the sleeps
 * and wake-ups of their waits, as the network profile's message probe measured it
 * (source.pairs[].message_cpu: the thread CPU inside the MPI calls that moved it; netprof.h).
 * It is the end's own copies into and out of TCP or shared memory, not the link's: the figures
 * come from the pair of that kind with the fastest link that measured that end's type at that
 * end (else at the other end), where the fewest empty tests were taken out. Linear between the
 * measured sizes, in proportion to the bytes beyond them. 0 where not measured (files from
 * before the probe, ranks that poll). */
#define SL_NET_MESSAGE_CPU_SIZES 16
double sl_network_message_cpu_s(const struct sl_network *net, int ga, int gb, int same_host,
				 double bytes, int receiver);

/* The all-reduce of two ranks measured by `sailor profile --network` between (zone a, GPU type
 * a) and (zone b, GPU type b), on two hosts or (same_host) on one: its rate in GB/s (bytes /
 * time of the whole all-reduce of a message of that size, "algorithm bandwidth") at bytes,
 * read no further up than the largest size the pair was measured at (source.pairs[].bytes):
 * past it, that size's rate. 0 when the --network overlay has no such pair (the shipped files
 * have none). */
#define SL_NET_MAX_ALLREDUCE 256
double sl_network_allreduce_gbps(const struct sl_network *net, int za, int ga, int zb, int gb,
				 int same_host, double bytes);

/* Egress price from zone a to zone b, USD per GB (1e9 bytes) (cluster/egress.h). */
double sl_network_egress_usd_per_gb(const struct sl_network *net, int src_zone, int dst_zone);
/* Where that price comes from ("SOSP'25 artifact", "gcp list: between zones", ...). */
const char *sl_network_egress_source(const struct sl_network *net, int src_zone, int dst_zone);

/* Words for a fit's source: "SOSP'25 fit", "SOSP'25 fit (stand-in)", "profiled (--network)",
 * "zones file", "class same-continent", ... For a zone file's link, the file
 * (sl_network_link_origin). */
const char *sl_network_source_name(const struct sl_link_fit *fit);
/* The zone file of a zone pair's user link, or NULL. */
const char *sl_network_link_origin(const struct sl_network *net, int src_zone, int dst_zone);

#endif
