/* Unit tests of the controller's pool watch (ctl/pool_watch.h) and event log (ctl/events.h):
 * a pool file re-read when it changes (and kept when a change does not parse), a trace replayed
 * in scaled time, and the event log's records on disk and in memory. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cluster/catalogue.h"
#include "ctl/events.h"
#include "ctl/generation_process.h"
#include "ctl/pool_watch.h"
#include "util/clock.h"

static struct sl_catalogue cat;
static char dir[] = "/tmp/sailor-test-ctl-XXXXXX";
static int a100, v100, zone_a, zone_b;

static int setup(void **state)
{
	(void)state;
	struct sl_err err = {0};
	if (sl_catalogue_load("data", &cat, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	a100 = sl_catalogue_gpu_index(&cat, "A100-40");
	v100 = sl_catalogue_gpu_index(&cat, "V100-16");
	zone_a = sl_catalogue_zone_index(&cat, "us-central1-a");
	zone_b = sl_catalogue_zone_index(&cat, "us-central1-b");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

/* Replaces path atomically, as the pool watch asks writers to, with a distinct mtime. */
static void replace_file(const char *path, const char *text)
{
	static int serial;
	char tmp[256];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	/* mtimes are compared to the nanosecond; set one that differs from every earlier write */
	struct timespec times[2] = {{.tv_sec = 1000000 + ++serial, .tv_nsec = 0},
				    {.tv_sec = 1000000 + serial, .tv_nsec = 0}};
	assert_int_equal(utimensat(AT_FDCWD, tmp, times, 0), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static const char *pool_text(int a, int v)
{
	static char text[512];
	snprintf(text, sizeof(text),
		 "{\"schema\": \"sailor.pool/1\", \"gpus\": ["
		 "{\"gpu\": \"A100-40\", \"zone\": \"us-central1-a\", \"count\": %d},"
		 "{\"gpu\": \"V100-16\", \"zone\": \"us-central1-b\", \"count\": %d}]}", a, v);
	return text;
}

static void pool_file_changes_are_seen_once(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof(path), "%s/pool.json", dir);
	replace_file(path, pool_text(2, 0));
	struct sl_ctl_pool_watch w;
	struct sl_err err = {0};
	assert_int_equal(sl_ctl_pool_watch_init(&w, path, NULL, 1.0, &cat, 0.0, &err), 0);
	assert_int_equal(w.current.counts[a100][zone_a], 2);
	assert_int_equal(sl_pool_total(&w.current), 2);
	/* nothing new */
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 1.0, &err), 0);
	/* rewritten with the same counts: not a change */
	replace_file(path, pool_text(2, 0));
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 2.0, &err), 0);
	/* other counts: a change, reported once */
	replace_file(path, pool_text(4, 2));
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 3.0, &err), 1);
	assert_int_equal(w.current.counts[a100][zone_a], 4);
	assert_int_equal(w.current.counts[v100][zone_b], 2);
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 4.0, &err), 0);
	char name[300];
	sl_ctl_pool_watch_describe(&w, name, sizeof(name));
	assert_non_null(strstr(name, "pool.json"));
	sl_ctl_pool_watch_free(&w);
}

static void bad_pool_file_keeps_the_pool_and_says_so_once(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof(path), "%s/pool2.json", dir);
	replace_file(path, pool_text(1, 1));
	struct sl_ctl_pool_watch w;
	struct sl_err err = {0};
	assert_int_equal(sl_ctl_pool_watch_init(&w, path, NULL, 1.0, &cat, 0.0, &err), 0);
	/* a GPU type the catalogue lacks: an error naming the file, the pool stays */
	replace_file(path, "{\"schema\": \"sailor.pool/1\", \"gpus\": [{\"gpu\": \"B300\", "
			   "\"zone\": \"us-central1-a\", \"count\": 1}]}");
	memset(&err, 0, sizeof(err));
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 1.0, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "pool2.json"));
	assert_non_null(strstr(err.msg, "keeping the previous pool"));
	assert_int_equal(w.current.counts[a100][zone_a], 1);
	assert_int_equal(w.current.counts[v100][zone_b], 1);
	/* said once, not on every poll */
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 2.0, &err), 0);
	/* half a file (a writer that did not replace it atomically) */
	replace_file(path, "{\"schema\": \"sailor.pool/1\", \"gpus\": [");
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 3.0, &err), 0); /* still the same episode */
	/* a good file again: a change from the pool in force */
	replace_file(path, pool_text(0, 1));
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 4.0, &err), 1);
	assert_int_equal(w.current.counts[a100][zone_a], 0);
	/* and a bad file after that is reported again */
	replace_file(path, "not json");
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 5.0, &err), SL_EINPUT);
	/* a missing file (between unlink and rename): no change, no error */
	unlink(path);
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 6.0, &err), 0);
	sl_ctl_pool_watch_free(&w);
	/* a pool file that does not exist at the start is an error naming it */
	memset(&err, 0, sizeof(err));
	assert_int_equal(sl_ctl_pool_watch_init(&w, path, NULL, 1.0, &cat, 0.0, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "pool2.json"));
	sl_ctl_pool_watch_free(&w);
}

static void trace_is_replayed_in_scaled_time(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof(path), "%s/trace.csv", dir);
	/* steps: 1 A100 for 6 s, 4+2 for 6 s, 1+2 for 6 s, then 2 A100 for ever */
	replace_file(path, ",Timestamp,A100-40_us-central1-a,V100-16_us-central1-b\n"
			   "0,0,1,0\n1,6,4,2\n2,12,1,2\n3,18,2,0\n");
	struct sl_ctl_pool_watch w;
	struct sl_err err = {0};
	/* time scale 0.5: a trace second is half a wall second; the trace starts at t = 100 */
	assert_int_equal(sl_ctl_pool_watch_init(&w, NULL, path, 0.5, &cat, 100.0, &err), 0);
	assert_int_equal(w.trace.step_count, 4);
	assert_int_equal(w.current.counts[a100][zone_a], 1);
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 102.9, &err), 0);
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 103.0, &err), 1);
	assert_int_equal(w.trace_step, 1);
	assert_int_equal(w.current.counts[a100][zone_a], 4);
	assert_int_equal(w.current.counts[v100][zone_b], 2);
	char name[64];
	sl_ctl_pool_watch_describe(&w, name, sizeof(name));
	assert_string_equal(name, "trace step 2 of 4");
	/* a poll late enough to skip a step lands on the step in force, once */
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 109.5, &err), 1);
	assert_int_equal(w.trace_step, 3);
	assert_int_equal(w.current.counts[a100][zone_a], 2);
	assert_int_equal(w.current.counts[v100][zone_b], 0);
	/* the last step lasts for ever */
	assert_int_equal(sl_ctl_pool_watch_poll(&w, 1e6, &err), 0);
	sl_ctl_pool_watch_free(&w);
	/* a trace with no GPU at any step is refused with what to do */
	replace_file(path, ",Timestamp,A100-40_us-central1-a\n0,0,0\n1,6,0\n");
	memset(&err, 0, sizeof(err));
	int rc = sl_ctl_pool_watch_init(&w, NULL, path, 1.0, &cat, 0.0, &err);
	assert_true(rc < 0);
	assert_non_null(strstr(err.msg, "trace.csv"));
	sl_ctl_pool_watch_free(&w);
	/* an unknown GPU column is refused naming the file */
	replace_file(path, ",Timestamp,B300_us-central1-a\n0,0,1\n");
	memset(&err, 0, sizeof(err));
	assert_true(sl_ctl_pool_watch_init(&w, NULL, path, 1.0, &cat, 0.0, &err) < 0);
	assert_non_null(strstr(err.msg, "trace.csv"));
	sl_ctl_pool_watch_free(&w);
}

static void event_log_records(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof(path), "%s/events.jsonl", dir);
	struct sl_ctl_events ev;
	struct sl_err err = {0};
	double start = sl_now_s();
	assert_int_equal(sl_ctl_events_open(&ev, path, NULL, start, &err), 0);
	sl_ctl_event(&ev, "start", json_pack("{s:s, s:I}", "model", "gpt2-tiny", "steps",
					      (json_int_t)240));
	for (int i = 0; i < SL_CTL_RECENT_EVENTS + 5; i++)
		sl_ctl_event(&ev, "checkpoint", json_pack("{s:i, s:I}", "generation", 1, "step",
							   (json_int_t)(10 * (i + 1))));
	sl_ctl_event(&ev, "done", NULL);
	/* in memory: only the newest SL_CTL_RECENT_EVENTS, oldest first */
	assert_int_equal(json_array_size(ev.recent), SL_CTL_RECENT_EVENTS);
	json_t *last = json_array_get(ev.recent, SL_CTL_RECENT_EVENTS - 1);
	assert_string_equal(json_string_value(json_object_get(last, "event")), "done");
	/* on disk at once (flushed), before the log is closed: every event, one JSON object a line,
	 * common keys first, then the fields */
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[4096];
	int n = 0;
	double previous_t = -1;
	while (fgets(line, sizeof(line), f)) {
		json_error_t jerr;
		json_t *e = json_loads(line, 0, &jerr);
		assert_non_null(e);
		assert_string_equal(json_string_value(json_object_get(e, "schema")),
				    "sailor.control.event/1");
		double t = json_number_value(json_object_get(e, "t_s"));
		assert_true(t >= previous_t && t < 60);
		previous_t = t;
		assert_true(json_number_value(json_object_get(e, "time")) > 1e9);
		const char *type = json_string_value(json_object_get(e, "event"));
		assert_non_null(type);
		if (n == 0) {
			assert_string_equal(type, "start");
			assert_string_equal(json_string_value(json_object_get(e, "model")),
					    "gpt2-tiny");
			assert_int_equal(json_integer_value(json_object_get(e, "steps")), 240);
			assert_true(strstr(line, "\"schema\"") < strstr(line, "\"model\""));
		} else if (n <= SL_CTL_RECENT_EVENTS + 5) {
			assert_string_equal(type, "checkpoint");
			assert_int_equal(json_integer_value(json_object_get(e, "step")), 10 * n);
		} else {
			assert_string_equal(type, "done");
		}
		json_decref(e);
		n++;
	}
	fclose(f);
	assert_int_equal(n, SL_CTL_RECENT_EVENTS + 7);
	sl_ctl_events_close(&ev);
	/* reopened, the log continues (append), as a restarted controller does */
	assert_int_equal(sl_ctl_events_open(&ev, path, NULL, start, &err), 0);
	sl_ctl_event(&ev, "start", NULL);
	sl_ctl_events_close(&ev);
	f = fopen(path, "r");
	assert_non_null(f);
	n = 0;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	assert_int_equal(n, SL_CTL_RECENT_EVENTS + 8);
	/* a log that cannot be written is an error naming it */
	memset(&err, 0, sizeof(err));
	assert_true(sl_ctl_events_open(&ev, "/nonexistent-dir/events.jsonl", NULL, start, &err) <
		    0);
	assert_non_null(strstr(err.msg, "/nonexistent-dir/events.jsonl"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pool_file_changes_are_seen_once),
		cmocka_unit_test(bad_pool_file_keeps_the_pool_and_says_so_once),
		cmocka_unit_test(trace_is_replayed_in_scaled_time),
		cmocka_unit_test(event_log_records),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
