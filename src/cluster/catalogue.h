/* The GPU catalogue and the zones: what kinds of GPU exist, what they cost and hold, and which
 * zones (and regions) GPUs can live in. Everything downstream (pools, plans, the simulator, the
 * planner) refers to a GPU type and a zone by a small integer index into this catalogue.
 *
 * Sources: GPU types from data/gpus.json (order of that file = index order, so output is stable);
 * zones and regions from the zone files (cluster/zone_files.h: data/zones/ *.json, the clouds'
 * regions and zones, and the user's --zones files), zones sorted by name = index order (the five
 * zones of the SOSP'25 artifact keep their order among themselves), regions in order of first
 * appearance over the sorted zones. A region carries its provider, continent, location and the
 * on-demand (and spot) price of each GPU type its provider lists there; a GPU type a region does
 * not list costs the catalogue's usd_per_hour (data/gpus.json: GCP's us-central1 prices, the
 * SOSP'25 artifact's).
 *
 * Sizes: the clouds' GPU zones are a few hundred; tables over zones (pools, the planner's work
 * items) are indexed by zone but loop over the zones a pool or plan uses, never the catalogue.
 *
 * Invariants after a successful load: 1 <= gpu_count <= SL_MAX_GPU_TYPES, 1 <= zone_count <=
 * SL_MAX_ZONES, names unique, every numeric field positive (peak FLOP/s and memory bandwidth may
 * be 0 = unknown). The struct is plain data: copy it freely, nothing to free.
 */
#ifndef SL_CLUSTER_CATALOGUE_H
#define SL_CLUSTER_CATALOGUE_H

#include <stddef.h>

#include "util/err.h"

#define SL_MAX_GPU_TYPES 16
#define SL_MAX_ZONES 512
#define SL_MAX_REGIONS 256
#define SL_GPU_NAME_MAX 32
#define SL_ZONE_NAME_MAX 48
#define SL_PROVIDER_NAME_MAX 16
#define SL_CITY_NAME_MAX 48

struct sl_gpu_type {
	char name[SL_GPU_NAME_MAX];     /* "A100-40" */
	double memory_bytes;            /* device memory as the driver reports it */
	int gpus_per_node;              /* GPUs in one node/VM: the largest TP degree allowed */
	double usd_per_hour;            /* rent of one GPU where a zone lists no price of its own */
	double peak_fp32_flops;         /* datasheet, dense; 0 = unknown */
	double peak_tensor_flops;       /* datasheet, dense, TF32/FP16 tensor cores; 0 = unknown */
	double memory_bandwidth_bps;    /* HBM/GDDR bandwidth; 0 = unknown */
	/* Fixed per-GPU memory the training framework holds besides tensors: CUDA context, cuBLAS /
	 * cuDNN workspaces, caching-allocator slack (gpus.json "runtime_overhead_bytes", sourced
	 * there). Used by the sailor memory model. */
	double runtime_overhead_bytes;
	/* NCCL buffer memory per communicator this GPU joins (gpus.json "nccl_buffer_bytes"). */
	double nccl_buffer_bytes;
	/* GPU type whose network fits stand in for this one when the network file has none for it
	 * (gpus.json "network_as"); its own index when it has fits or no stand-in is named. */
	int network_as;
	/* GPU type whose measured profile scales to this one when no profile of a model exists for
	 * it (gpus.json "estimate_from"); its own index otherwise. */
	int estimate_from;
	/* A device that is a CPU quota (the testbed's classes, gpus.json "cpu_quota": {"cores",
	 * "period_s"}): it computes at full speed for cores x period_s of every period_s and is
	 * stopped for the rest (Linux CFS bandwidth control). 0: not a quota (a GPU). */
	double cpu_quota_cores;
	double cpu_quota_period_s;
	/* A device whose speed wanders (gpus.json "speed_spells": {"fraction", "slowdown"}): for
	 * `fraction` of the time its layers run `slowdown` slower than at its usual speed, in spells
	 * longer than a step (the testbed's vCPUs: docs/design/runtime-model.md, speed spells). One device is
	 * as fast as its profile on average; a sync of several waits for the slowest of them
	 * (time_replay.c). 0: a steady device. */
	double spell_fraction;
	double spell_slowdown;
};

struct sl_zone {
	char name[SL_ZONE_NAME_MAX];    /* "us-central1-a" */
	int region;                     /* index into sl_catalogue.regions */
};

struct sl_region {
	char name[SL_ZONE_NAME_MAX];        /* "europe-west4", "eu-central-1", "westeurope" */
	char provider[SL_PROVIDER_NAME_MAX];/* "gcp", "aws", "azure", or the user's */
	int continent;                      /* index of cluster/zone_files.h's continents */
	char city[SL_CITY_NAME_MAX];
	double lat_deg, lon_deg;
	/* one GPU of each type here, USD per hour, on demand and spot; < 0: not listed */
	double gpu_usd_per_hour[SL_MAX_GPU_TYPES];
	double gpu_spot_usd_per_hour[SL_MAX_GPU_TYPES];
};

struct sl_catalogue {
	int gpu_count;
	struct sl_gpu_type gpus[SL_MAX_GPU_TYPES];
	int zone_count;
	struct sl_zone zones[SL_MAX_ZONES];
	int region_count;
	struct sl_region regions[SL_MAX_REGIONS];
};

/* Loads data/gpus.json (then the overlay's types, if one is set) and the zone files (shipped and
 * overlays, cluster/zone_files.h) under data_dir (NULL = sl_paths_data_dir()). Errors name the file and
 * the JSON path. */
int sl_catalogue_load(const char *data_dir, struct sl_catalogue *out, struct sl_err *err);

#define SL_GPUS_SCHEMA "sailor.gpus/1"
#define SL_STR_(x) #x
#define SL_STR(x) SL_STR_(x)

/* Device types beyond the shipped catalogue (`--gpus FILE` of simulate, validate, plan, run).
 * FILE has data/gpus.json's format (schema "sailor.gpus/1", "gpus": [...], the same fields;
 * unknown fields are errors) and its types come after the shipped ones, with names of their
 * own (data/testbed/gpus-cpu.json: the testbed's CPU device classes "cpu-fast", "cpu-slow").
 * The overlay is a setting of the process, like $SAILOR_DATA: once set, every
 * sl_catalogue_load() includes it, so the simulator, the planner and the runtime, which each
 * load the catalogue themselves, all see the same types. sl_catalogue_set_overlay loads it once
 * to check it (errors name the file and the JSON path) and keeps the previous setting on error;
 * NULL or "" clears it. sl_catalogue_overlay returns the path, or NULL. */
int sl_catalogue_set_overlay(const char *path, struct sl_err *err);
const char *sl_catalogue_overlay(void);

/* Index of a GPU type / zone by exact name, or -1 if unknown. */
int sl_catalogue_gpu_index(const struct sl_catalogue *cat, const char *name);
int sl_catalogue_zone_index(const struct sl_catalogue *cat, const char *name);

/* Region index of a zone index (no bounds check beyond an assert-free clamp: pass valid ones). */
int sl_catalogue_zone_region(const struct sl_catalogue *cat, int zone);

/* Comma-separated list of the known GPU names / zone names, for error messages ("A100-40,
 * A100-80, ..."); writes into buf and returns it (truncated to size). */
const char *sl_catalogue_gpu_names(const struct sl_catalogue *cat, char *buf, size_t size);
const char *sl_catalogue_zone_names(const struct sl_catalogue *cat, char *buf, size_t size);
/* The at most three zone names nearest to an unknown one by edit distance
 * (util/nearest_names.h), for "unknown zone 'x' (nearest: ...)". */
const char *sl_catalogue_zone_suggest(const struct sl_catalogue *cat, const char *name, char *buf,
				      size_t size);

/* What one GPU of a type costs in a zone, USD per hour: the price its region lists, else the
 * type's usd_per_hour (zone < 0: that). *_listed: 1 when the region lists one. */
double sl_catalogue_gpu_usd_per_hour(const struct sl_catalogue *cat, int gpu, int zone);
int sl_catalogue_gpu_price_listed(const struct sl_catalogue *cat, int gpu, int zone);

/* The zone's region entry (valid zone indices only). */
const struct sl_region *sl_catalogue_zone_region_info(const struct sl_catalogue *cat, int zone);

/* Great-circle distance between two zones' regions, km (haversine, Earth radius 6371 km). */
double sl_catalogue_zone_distance_km(const struct sl_catalogue *cat, int za, int zb);

#endif
