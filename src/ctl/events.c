/* The controller's event log (events.h). */
#include "ctl/events.h"

#include <errno.h>
#include <string.h>
#include <sys/time.h>

#include "util/clock.h"

int sl_ctl_events_open(struct sl_ctl_events *ev, const char *path, FILE *echo, double start_s,
		       struct sl_err *err)
{
	memset(ev, 0, sizeof(*ev));
	/* append: a controller restarted on the same run directory continues the log */
	ev->file = fopen(path, "a");
	if (!ev->file)
		return sl_err_set(err, SL_EIO, "cannot write event log '%s': %s", path,
				  strerror(errno));
	ev->echo = echo;
	ev->start_s = start_s;
	ev->recent = json_array();
	return 0;
}

void sl_ctl_event(struct sl_ctl_events *ev, const char *type, json_t *fields)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	json_t *obj = json_object();
	json_object_set_new(obj, "schema", json_string("sailor.control.event/1"));
	json_object_set_new(obj, "event", json_string(type));
	json_object_set_new(obj, "t_s", json_real(sl_now_s() - ev->start_s));
	json_object_set_new(obj, "time", json_real((double)tv.tv_sec + 1e-6 * (double)tv.tv_usec));
	if (fields) {
		const char *key;
		json_t *value;
		json_object_foreach(fields, key, value)
			json_object_set(obj, key, value);
		json_decref(fields);
	}
	char *text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
	if (text) {
		if (ev->file) {
			fprintf(ev->file, "%s\n", text);
			fflush(ev->file);
		}
		if (ev->echo) {
			fprintf(ev->echo, "%s\n", text);
			fflush(ev->echo);
		}
		free(text);
	}
	json_array_append_new(ev->recent, obj);
	while (json_array_size(ev->recent) > SL_CTL_RECENT_EVENTS)
		json_array_remove(ev->recent, 0);
}

void sl_ctl_events_close(struct sl_ctl_events *ev)
{
	if (ev->file)
		fclose(ev->file);
	ev->file = NULL;
	json_decref(ev->recent);
	ev->recent = NULL;
}
