/* The controller's event log: RUNDIR/events.jsonl, one JSON object per line, flushed at once, so
 * a reader (sailor report, a test, tail -f) sees every event as it happens.
 *
 * Every line is {"schema": "sailor.control.event/1", "event": TYPE, "t_s": seconds since the
 * controller started, "time": unix seconds, ...fields of the type}; the types and their fields
 * are listed in README.md (`sailor control`, "Event log"). The newest events are also kept in
 * memory for GET /status.
 *
 * Ownership: the log owns its file and its `recent` array (sl_ctl_events_close).
 */
#ifndef SL_CTL_EVENTS_H
#define SL_CTL_EVENTS_H

#include <jansson.h>
#include <stdio.h>

#include "util/err.h"

#define SL_CTL_RECENT_EVENTS 20

struct sl_ctl_events {
	FILE *file;
	FILE *echo;         /* also print each line here (--json: stdout), or NULL */
	double start_s;     /* monotonic time of t_s = 0 */
	json_t *recent;     /* array of the newest SL_CTL_RECENT_EVENTS events */
};

int sl_ctl_events_open(struct sl_ctl_events *ev, const char *path, FILE *echo, double start_s,
		       struct sl_err *err);

/* Appends one event; fields (may be NULL) is stolen and its keys follow the common ones. */
void sl_ctl_event(struct sl_ctl_events *ev, const char *type, json_t *fields);

void sl_ctl_events_close(struct sl_ctl_events *ev);

#endif
