/* A generation's own record of its steps, and its reconciliation with the pipe.
 *
 * The controller learns of steps from the step lines rank 0 prints on its stdout, which reach the
 * controller through mpirun's output forwarding and the launcher. Now and then (about once in
 * five runs on a loaded 2-core machine) a stop loses the last such line although the step ran.
 * So each generation also runs with `sailor run --events-file RUNDIR/gen-<n>/steps.jsonl`: rank 0
 * appends the same JSON line to that file, flushed, without going through mpirun. After the
 * generation has ended (pipes drained, processes reaped), the steps in the file whose lines the
 * pipe did not deliver are taken from it.
 *
 * Invariants: a step counts as seen once per generation (step numbers within one generation are
 * distinct: it trains from its resume step upwards); a line of the file that does not parse as a
 * step event (a rank killed in the middle of a write) is skipped, never an error.
 * Ownership: the seen set owns its array (sl_ctl_seen_steps_free); the array of missing steps is
 * the caller's (json_decref).
 */
#ifndef SL_CTL_STEPS_FILE_H
#define SL_CTL_STEPS_FILE_H

#include <jansson.h>
#include <stddef.h>

#include "util/err.h"

/* The steps of one generation whose lines came through the pipe. */
struct sl_ctl_seen_steps {
	long long *steps;
	size_t count, cap;
};

/* Records step as seen; returns 0 or SL_ENOMEM. */
int sl_ctl_seen_steps_add(struct sl_ctl_seen_steps *s, long long step);
/* Forgets every step (a new generation); keeps the memory. */
void sl_ctl_seen_steps_clear(struct sl_ctl_seen_steps *s);
/* The largest step seen, or -1 when none. */
long long sl_ctl_seen_steps_newest(const struct sl_ctl_seen_steps *s);
void sl_ctl_seen_steps_free(struct sl_ctl_seen_steps *s);

/* Reads the step events of the file at path and returns in *missing a new array of those whose
 * step is not in seen: the parsed objects, sorted by step, one per step (the file's last line
 * of a step if it holds two). A file that does not exist gives an empty array (the generation
 * ended before its first step). *skipped_lines (may be NULL): lines that did not parse as a step
 * event. Returns 0, or SL_EIO (the file exists but cannot be read) / SL_ENOMEM with err filled;
 * *missing is NULL then. */
int sl_ctl_steps_file_missing(const char *path, const struct sl_ctl_seen_steps *seen,
			      json_t **missing, int *skipped_lines, struct sl_err *err);

#endif
