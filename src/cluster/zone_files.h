/* Zone files (schema "sailor.zones/1"): the clouds' regions and zones, where they are, what their
 * GPUs cost and what sending a GB out of them costs; the user's own zones, prices and links.
 *
 * Sources, in order (later ones add or override): the shipped data/zones/ *.json (sorted by file
 * name: aws, azure, gcp), then the overlays of the process: `--zones FILE` and the "zones" of a
 * pool or cluster file (sl_zone_files_add_overlay*), in the order they were added.
 *
 *   {"schema": "sailor.zones/1", "provider": "gcp", "note": "...", "sources": {...},
 *    "egress_usd_per_gb": {"zone": 0.01},                       provider defaults
 *    "regions": [{"name": "europe-west4", "provider": "gcp" (default: the file's),
 *                 "continent": "europe", "city": "Groningen", "country": "Netherlands",
 *                 "lat": 53.2, "lon": 6.57,
 *                 "egress_usd_per_gb": {"zone", "continent", "world", "internet"},
 *                 "gpu_usd_per_hour": {"A100-40": {"on_demand": 4.1, "spot": 1.6}}}],
 *    "zones": [{"name": "europe-west4-a", "region": "europe-west4"}],
 *    "egress_pairs": [{"from": "us-central1", "to": "australia-southeast1", "usd_per_gb": 0.15}],
 *    "links": [{"from": "europe-west4-a", "to": "asia-east1-a", "bandwidth_bps": 5e8,
 *               "latency_s": 0.12}]}
 *
 * Merging: a region or zone named again takes the fields its later entry gives (a zone may move
 * to another region); pairs and links add up, the last one naming a pair wins. A region new to
 * the catalogue needs provider, continent, lat, lon; every region must end up with an egress
 * price to the internet and to other continents, and one between its zones if it has several
 * (its own, else its provider's "egress_usd_per_gb"); one to other regions of its continent may
 * be missing (the intercontinental one stands in, flagged). Egress kinds:
 *   zone       between two zones of the region;
 *   continent  to another region of the provider on the same continent;
 *   world      to a region of the provider on another continent;
 *   internet   to anywhere outside the provider (another cloud): each side pays its own.
 * Names of pairs and links are zone or region names of the merged catalogue.
 *
 * Errors name the file and the JSON path and say what to write; nothing is guessed.
 * Ownership: sl_zone_files_load allocates *out; sl_zone_files_free frees it. The overlays are a
 * setting of the process (like --gpus): their JSON stays loaded until cleared.
 */
#ifndef SL_CLUSTER_ZONE_FILES_H
#define SL_CLUSTER_ZONE_FILES_H

#include <jansson.h>

#include "cluster/catalogue.h"
#include "cluster/egress.h"
#include "util/err.h"

#define SL_ZONES_SCHEMA "sailor.zones/1"
#define SL_ZONE_FILES_MAX 16        /* shipped and overlay files together */
#define SL_ZONE_FILES_ORIGIN_MAX 320      /* "zones 'path'" or "pool 'path': zones" */
#define SL_ZONE_FILES_PAIRS_MAX 4096
#define SL_ZONE_FILES_LINKS_MAX 1024

struct sl_zone_files_price {
	char gpu[SL_GPU_NAME_MAX];
	double on_demand_usd_per_hour;
	double spot_usd_per_hour;        /* < 0: not given */
	int file;
	char ctx[160];                   /* its JSON path, for messages */
};

struct sl_zone_files_region {
	char name[SL_ZONE_NAME_MAX];
	char provider[SL_PROVIDER_NAME_MAX];
	int continent;                   /* sl_zone_files_continent index; -1: not given */
	char city[SL_CITY_NAME_MAX];
	char country[SL_CITY_NAME_MAX];
	double lat_deg, lon_deg;         /* NAN: not given */
	double egress_usd_per_gb[SL_EGRESS_KINDS]; /* after the provider's defaults; < 0: none */
	int egress_file[SL_EGRESS_KINDS];          /* the file each price came from */
	int price_count;
	struct sl_zone_files_price prices[SL_MAX_GPU_TYPES];
	int file;                        /* the file that named it last */
	int index;                       /* its index in that file's "regions" */
};

struct sl_zone_files_zone {
	char name[SL_ZONE_NAME_MAX];
	int region;                      /* index into regions */
	int file;
};

/* An egress pair or a link: from and to are zone or region names. */
struct sl_zone_files_pair {
	char from[SL_ZONE_NAME_MAX], to[SL_ZONE_NAME_MAX];
	double usd_per_gb;               /* pairs */
	double bandwidth_bps, latency_s; /* links */
	int file;
	int index;                       /* its index in that file's list, for messages */
};

struct sl_zone_files {
	int file_count;
	char files[SL_ZONE_FILES_MAX][SL_ZONE_FILES_ORIGIN_MAX]; /* each file's origin, for messages */
	int shipped[SL_ZONE_FILES_MAX];                     /* 1: data/zones/, 0: the user's */
	int region_count;
	struct sl_zone_files_region *regions;  /* SL_MAX_REGIONS */
	int zone_count;
	struct sl_zone_files_zone *zones;     /* SL_MAX_ZONES */
	int pair_count;
	struct sl_zone_files_pair *pairs;      /* SL_ZONE_FILES_PAIRS_MAX */
	int link_count;
	struct sl_zone_files_pair *links;      /* SL_ZONE_FILES_LINKS_MAX */
};

/* Loads the shipped files under data_dir (NULL = sl_paths_data_dir()) and the overlays, merged and
 * checked (above). */
int sl_zone_files_load(const char *data_dir, struct sl_zone_files **out, struct sl_err *err);
void sl_zone_files_free(struct sl_zone_files *zf);

/* Adds `--zones FILE` to the overlays; the file is read and checked now (errors name it). */
int sl_zone_files_add_overlay(const char *path, struct sl_err *err);
/* Adds the "zones" member of a pool or cluster file: an object (a zone file's content) or a
 * string (a zone file's path, relative to the folder of the file that names it). origin names
 * that file in messages ("pool 'p.json'"). A file without "zones" adds nothing. */
int sl_zone_files_add_member(const char *path, const char *what, struct sl_err *err);
/* Drops every overlay (tests). */
void sl_zone_files_clear_overlays(void);
/* The overlays, for processes this one starts (`sailor control` hands them to its generations):
 * how many; overlay i written as a zone file at path (atomically). */
int sl_zone_files_overlay_count(void);
int sl_zone_files_overlay_save(int i, const char *path, struct sl_err *err);

/* The continents, in index order: africa, asia, europe, middle-east, north-america, oceania,
 * south-america. Returns NULL past the end. */
const char *sl_zone_files_continent(int index);

/* The at most three zone or region names of zf nearest to name (util/nearest_names.h). */
const char *sl_zone_files_nearest(const struct sl_zone_files *zf, const char *name, char *buf,
				  size_t size);

#endif
