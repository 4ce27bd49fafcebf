/* Private to the network module (network.c, network_overlay.c): the table behind struct
 * sl_network and what the two files share. Nothing here is public API (network.h).
 *
 * Invariants: measured has (M·G·C)² entries over the M measured zones (zones a fit file names,
 * mzone[] in catalogue order), measured_present marking the fits given; rows[] holds, per catalogue zone
 * pair asked for, its block of (G·C)² resolved fits and its egress price, built once under lock
 * and published with release semantics (a block, once there, never changes).
 */
#ifndef SL_CLUSTER_NETWORK_STATE_H
#define SL_CLUSTER_NETWORK_STATE_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include "cluster/egress.h"
#include "cluster/link_model.h"
#include "cluster/network.h"
#include "cluster/zone_files.h"

/* A zone pair's resolved fits, [end(src)][end(dst)] with end = gpu·C + count, and its egress. */
struct pair_block {
	double egress_usd_per_gb;
	char egress_source[SL_ZONE_FILES_ORIGIN_MAX + 64];
	struct sl_link_fit fits[];
};

/* two-rank all-reduce fits measured by `sailor profile --network` (overlay only) */
struct measured_allreduce {
	int za, ga, zb, gb, same_host;
	struct sl_link_fit fit;
	double burst_bytes; /* the pair's burst probe (0: none) */
	double whole_message_bytes; /* the pair's eager probe (0: none) */
	double largest_bytes; /* the largest size the fit was measured at (0: not known) */
	/* the pair's message probe: CPU per message at each end (sizes 0: none), and the
	 * pair's fastest point-to-point rate (its waits' test counts go with it) */
	int message_sizes;
	double p2p_max_bps;
	double message_bytes[SL_NET_MESSAGE_CPU_SIZES];
	double message_cpu_s[2][SL_NET_MESSAGE_CPU_SIZES]; /* [sender, receiver] */
};

struct sl_network {
	struct sl_catalogue *cat;       /* a copy: pairs resolve after the caller's may be gone */
	int zones, gpus;
	/* the measured zones */
	int mzones;
	int *mzone;                     /* [m] -> catalogue zone */
	int *mzone_of;                  /* [catalogue zone] -> m, or -1 */
	/* [end(src)][end(dst)] over M; an entry counts only where measured_present is set: both
	 * calloc'd, so the pages of absent entries (most of them) are never touched */
	struct sl_link_fit *measured;
	unsigned char *measured_present;
	const struct sl_link_fit **wan; /* [m][m]: slowest measured, either way */
	const struct sl_link_fit *wan_any;
	struct sl_link_fit intra[SL_MAX_GPU_TYPES][SL_NET_COUNTS];
	int intra_present[SL_MAX_GPU_TYPES][SL_NET_COUNTS];
	int gpu_measured[SL_MAX_GPU_TYPES]; /* the files have some link for this GPU type */
	int stand_in[SL_MAX_GPU_TYPES];
	/* the class model's reference fit per count (link_model.h), and whether there is one */
	struct sl_link_fit reference[SL_NET_COUNTS];
	int have_reference;
	struct sl_egress *egress;
	struct sl_link_model *model;
	/* resolved zone pairs */
	pthread_mutex_t lock;
	/* rows[za]: NULL, or the row of zone za, zone_count block pointers (NULL: not resolved) */
	_Atomic(struct pair_block *) *_Atomic *rows;
	struct measured_allreduce allreduce[SL_NET_MAX_ALLREDUCE];
	int allreduce_count;
};

/* Index of an (M zone, gpu, count) end in measured. */
static inline size_t sl_network_end(const struct sl_network *net, int m, int gpu, int ci)
{
	return ((size_t)m * (size_t)net->gpus + (size_t)gpu) * SL_NET_COUNTS + (size_t)ci;
}

/* A fit [[a2, a1, a0], max_bps] of a file; ctx names it in messages. */
int sl_network_parse_fit(const json_t *v, const char *ctx, struct sl_link_fit *out,
			 struct sl_err *err);
/* The fits of root (zone_bandwidths.json's form) into measured, marked source; keys that are
 * not zones or GPU types are skipped. */
int sl_network_links_from_json(struct sl_network *net, json_t *root, const char *path,
			       int source, struct sl_err *err);
/* {gpu: {count: fit}} into intra. */
int sl_network_intra_from_json(struct sl_network *net, json_t *root, const char *path,
			       struct sl_err *err);

/* The --network file (network_overlay.c): NULL and 0 when none is set; else its root (a new
 * reference), checked to be a sailor.network/1 file. */
json_t *sl_network_overlay_open(struct sl_err *err, int *rc);
/* Its links, all-reduce pairs and intra-node fits over the shipped ones. */
int sl_network_overlay_apply(struct sl_network *net, json_t *root, struct sl_err *err);

#endif
