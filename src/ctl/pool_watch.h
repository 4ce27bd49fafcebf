/* Where the controller learns the pool: a pool file it re-reads whenever the file changes, or an
 * availability trace replayed in time.
 *
 *   pool file  sailor.pool/1 (cluster/pool.h). Checked every call by modification time and size;
 *              a writer should replace it atomically (write a temporary file, rename it over).
 *              A file that does not parse keeps the previous pool and is reported once.
 *   trace      SOSP'25 CSV (cluster/pool.h): step i starts time_scale x (the durations of steps
 *              0..i-1) seconds after the start; the last step lasts for ever.
 *
 * Invariant: `current` is always a valid pool (the last one read). Ownership: the struct owns the
 * trace (sl_ctl_pool_watch_free).
 */
#ifndef SL_CTL_POOL_WATCH_H
#define SL_CTL_POOL_WATCH_H

#include <sys/types.h>
#include <time.h>

#include "cluster/pool.h"

struct sl_ctl_pool_watch {
	const char *pool_path;          /* or NULL */
	const char *trace_path;         /* or NULL */
	const struct sl_catalogue *cat;
	struct timespec mtime;
	off_t size;
	int file_error_reported;
	struct sl_pool_trace trace;
	int trace_step;                 /* index of the step in force */
	double time_scale;
	double start_s;                 /* monotonic time of step 0 */
	struct sl_pool current;
};

/* Reads the first pool. */
int sl_ctl_pool_watch_init(struct sl_ctl_pool_watch *w, const char *pool_path,
			   const char *trace_path, double time_scale,
			   const struct sl_catalogue *cat, double now_s, struct sl_err *err);

/* 1 when the pool changed since the last call (w->current holds the new one), 0 when not;
 * SL_EINPUT (with err) once for a pool file that stopped parsing (the pool stays). */
int sl_ctl_pool_watch_poll(struct sl_ctl_pool_watch *w, double now_s, struct sl_err *err);

/* A name for the pool in force: "pool file" or "trace step i of n". */
void sl_ctl_pool_watch_describe(const struct sl_ctl_pool_watch *w, char *buf, size_t size);

void sl_ctl_pool_watch_free(struct sl_ctl_pool_watch *w);

#endif
