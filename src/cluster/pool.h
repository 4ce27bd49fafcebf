/* Pools: how many GPUs of each type are available in each zone. A pool is a dense table
 * counts[gpu][zone] over the catalogue's indices; a trace is a list of pools, each with the
 * time it lasts.
 *
 * File formats:
 *   pool JSON   {"schema": "sailor.pool/1",
 *                "gpus": [{"gpu": "A100-40", "zone": "us-central1-a", "count": 32}, ...]}
 *               (a (gpu, zone) pair listed twice adds up; counts >= 0).
 *   trace CSV   the SOSP'25 artifact's availability traces: a header ",Timestamp,<GPU>_<zone>,..."
 *               then one row "<index>,<unix time>,<count>,..." per change. Parsed as that
 *               artifact's parse_trace does (SIMULATOR.md section 2.10): a new step starts
 *               whenever the counts change; a step lasts until the next change; the last step
 *               always lasts 0 s; a first step with no GPUs at all is dropped.
 *
 * Invariants: counts are >= 0; duration_s >= 0. Ownership: sl_pool_trace owns its steps array
 * (sl_pool_trace_free); struct sl_pool is plain data.
 */
#ifndef SL_CLUSTER_POOL_H
#define SL_CLUSTER_POOL_H

#include <jansson.h>

#include "cluster/catalogue.h"
#include "util/err.h"

struct sl_pool {
	int counts[SL_MAX_GPU_TYPES][SL_MAX_ZONES];
	double duration_s;   /* how long this pool lasts (trace step); 0 for a pool file */
	double timestamp_s;  /* the trace row's unix time where the step starts; 0 for a pool file */
};

struct sl_pool_trace {
	int step_count;
	struct sl_pool *steps;
};

/* Loads a sailor.pool/1 JSON file. Unknown GPU types or zones are errors naming the file, the
 * JSON path ("gpus[2].zone") and the known names. */
int sl_pool_load(const char *path, const struct sl_catalogue *cat, struct sl_pool *out,
		 struct sl_err *err);
int sl_pool_from_json(const json_t *root, const char *path, const struct sl_catalogue *cat,
		      struct sl_pool *out, struct sl_err *err);

/* Checks the zones a trace CSV's header names before sl_trace_load_csv reads it: an unknown one
 * gets "trace 'p': line L: column C: unknown zone 'x' (nearest: ...)", its nearest names by edit
 * distance among the catalogue's hundreds. Anything else is left to the loader. */
int sl_trace_check_zones(const char *path, const struct sl_catalogue *cat, struct sl_err *err);

/* sl_trace_check_zones, then sl_trace_load_csv: a trace CSV as `plan --trace` and `control
 * --trace` read it. */
int sl_trace_load(const char *path, const struct sl_catalogue *cat, struct sl_pool_trace *out,
		  struct sl_err *err);

/* Loads a trace CSV (above). Errors name the file, line and column name. */
int sl_trace_load_csv(const char *path, const struct sl_catalogue *cat, struct sl_pool_trace *out,
		      struct sl_err *err);

/* Either format by content: a file whose first non-blank byte is '{' is a pool JSON (one step
 * of duration 0), anything else a trace CSV. */
int sl_pool_trace_load(const char *path, const struct sl_catalogue *cat,
		       struct sl_pool_trace *out, struct sl_err *err);

void sl_pool_trace_free(struct sl_pool_trace *trace);

/* The zones where the pool has GPUs, ascending: writes at most max of them into zones and
 * returns how many there are (which may be more than max). */
int sl_pool_zones(const struct sl_pool *pool, int *zones, int max);

/* Total GPUs in the pool; GPUs of one type over all zones. */
long long sl_pool_total(const struct sl_pool *pool);
long long sl_pool_gpu_total(const struct sl_pool *pool, int gpu);

/* The pool as sailor.pool/1 JSON (entries with count > 0, catalogue order: gpu, then zone).
 * New reference. */
json_t *sl_pool_to_json(const struct sl_pool *pool, const struct sl_catalogue *cat);

#endif
