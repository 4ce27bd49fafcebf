/* The controller's view of the pool (pool_watch.h). */
#include "ctl/pool_watch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int same_pool(const struct sl_pool *a, const struct sl_pool *b)
{
	return !memcmp(a->counts, b->counts, sizeof(a->counts));
}

int sl_ctl_pool_watch_init(struct sl_ctl_pool_watch *w, const char *pool_path,
			   const char *trace_path, double time_scale,
			   const struct sl_catalogue *cat, double now_s, struct sl_err *err)
{
	memset(w, 0, sizeof(*w));
	w->pool_path = pool_path;
	w->trace_path = trace_path;
	w->cat = cat;
	w->time_scale = time_scale > 0 ? time_scale : 1.0;
	w->start_s = now_s;
	if (pool_path) {
		struct stat st;
		if (stat(pool_path, &st))
			return sl_err_set(err, SL_EINPUT, "pool file '%s': %s", pool_path,
					  strerror(errno));
		w->mtime = st.st_mtim;
		w->size = st.st_size;
		return sl_pool_load(pool_path, cat, &w->current, err);
	}
	int rc = sl_trace_load(trace_path, cat, &w->trace, err);
	if (rc)
		return rc;
	/* a trace with no GPU anywhere would have the controller wait for ever */
	long long most = 0;
	for (int i = 0; i < w->trace.step_count; i++)
		if (sl_pool_total(&w->trace.steps[i]) > most)
			most = sl_pool_total(&w->trace.steps[i]);
	if (most == 0)
		return sl_err_set(err, SL_EINPUT, "trace '%s': no step has any GPU; give a trace "
				  "with at least one GPU available", trace_path);
	w->current = w->trace.steps[0];
	return 0;
}

int sl_ctl_pool_watch_poll(struct sl_ctl_pool_watch *w, double now_s, struct sl_err *err)
{
	if (w->slurm)
		return sl_ctl_pool_watch_poll_slurm(w, now_s, err);
	if (w->pool_path) {
		struct stat st;
		if (stat(w->pool_path, &st))
			return 0; /* being replaced: look again later */
		if (st.st_mtim.tv_sec == w->mtime.tv_sec && st.st_mtim.tv_nsec == w->mtime.tv_nsec &&
		    st.st_size == w->size)
			return 0;
		struct sl_pool next;
		struct sl_err e = {0};
		if (sl_pool_load(w->pool_path, w->cat, &next, &e)) {
			if (w->file_error_reported)
				return 0;
			w->file_error_reported = 1;
			return sl_err_set(err, SL_EINPUT, "%s (keeping the previous pool; replace the "
					  "file atomically with a valid sailor.pool/1)", e.msg);
		}
		w->file_error_reported = 0;
		w->mtime = st.st_mtim;
		w->size = st.st_size;
		if (same_pool(&next, &w->current))
			return 0;
		w->current = next;
		return 1;
	}
	/* trace: advance to the step in force now */
	int step = w->trace_step;
	double start = w->start_s;
	for (int i = 0; i < step; i++)
		start += w->trace.steps[i].duration_s * w->time_scale;
	while (step + 1 < w->trace.step_count &&
	       now_s >= start + w->trace.steps[step].duration_s * w->time_scale) {
		start += w->trace.steps[step].duration_s * w->time_scale;
		step++;
	}
	if (step == w->trace_step)
		return 0;
	w->trace_step = step;
	int changed = !same_pool(&w->trace.steps[step], &w->current);
	w->current = w->trace.steps[step];
	return changed;
}

void sl_ctl_pool_watch_describe(const struct sl_ctl_pool_watch *w, char *buf, size_t size)
{
	if (w->slurm)
		sl_ctl_pool_watch_describe_slurm(w, buf, size);
	else if (w->pool_path)
		snprintf(buf, size, "pool file '%s'", w->pool_path);
	else
		snprintf(buf, size, "trace step %d of %d", w->trace_step + 1, w->trace.step_count);
}

void sl_ctl_pool_watch_free(struct sl_ctl_pool_watch *w)
{
	sl_pool_trace_free(&w->trace);
	sl_ctl_pool_watch_free_slurm(w);
}
