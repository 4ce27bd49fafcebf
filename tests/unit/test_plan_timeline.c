/* Unit tests for timelines (plan/timeline.h): spans past the cap are counted, not kept; the
 * file is the sailor.timeline/1 format (Chrome trace events), times in microseconds from the
 * origin, one named process per rank, names from our files escaped. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "cluster/catalogue.h"
#include "plan/timeline.h"

static void spans_past_the_cap_are_counted_not_kept(void **state)
{
	(void)state;
	struct sl_timeline tl = {0};
	for (long i = 0; i < SL_TIMELINE_MAX_SPANS + 5; i++)
		sl_timeline_add(&tl, 0, 1, SL_INSTR_FORWARD, (int)i, (double)i, (double)i + 0.5, 0.1);
	assert_int_equal(tl.count, SL_TIMELINE_MAX_SPANS);
	assert_int_equal(tl.dropped, 5);
	assert_int_equal(tl.spans[SL_TIMELINE_MAX_SPANS - 1].microbatch, SL_TIMELINE_MAX_SPANS - 1);
	assert_true(sl_timeline_first_start_s(&tl) == 0.0);
	sl_timeline_free(&tl);
	assert_null(tl.spans);
	assert_int_equal(tl.count + tl.cap + tl.dropped, 0);
}

static void kinds_have_names(void **state)
{
	(void)state;
	assert_string_equal(sl_timeline_kind_name(SL_INSTR_FORWARD), "forward");
	assert_string_equal(sl_timeline_kind_name(SL_INSTR_RECV_GRADIENT), "recv-gradient");
	assert_string_equal(sl_timeline_kind_name(SL_TL_WAIT_SENDS), "wait-sends");
	assert_string_equal(sl_timeline_kind_name(SL_TL_GRAD_SYNC), "grad-sync");
	assert_string_equal(sl_timeline_kind_name(SL_TL_SCALARS), "loss-and-norm");
	assert_string_equal(sl_timeline_kind_name(SL_TL_UPDATE), "update");
	assert_string_equal(sl_timeline_kind_name(SL_TL_KIND_COUNT), "?");
	assert_string_equal(sl_timeline_kind_name(-1), "?");
}

static void the_file_is_chrome_trace_events_with_sailors_fields(void **state)
{
	(void)state;
	struct sl_catalogue cat;
	memset(&cat, 0, sizeof(cat));
	cat.gpu_count = 1;
	strcpy(cat.gpus[0].name, "cpu-fast");
	cat.zone_count = 1;
	strcpy(cat.zones[0].name, "us-central1-a");
	struct sl_role roles[2] = {{.rank = 0, .stage = 0, .tp = 1, .host = -1},
				   {.rank = 1, .stage = 1, .tp = 1, .host = -1}};
	struct sl_role_table table = {.world_size = 2, .num_stages = 2, .num_pipelines = 1,
				      .roles = roles};
	struct sl_timeline tl = {0};
	sl_timeline_add(&tl, 1, 3, SL_INSTR_RECV_ACTIVATION, 0, 100.002, 100.005, 0.0001);
	sl_timeline_add(&tl, 0, 3, SL_INSTR_FORWARD, 0, 100.001, 100.003, 0.0015);
	sl_timeline_add(&tl, 0, 3, SL_TL_UPDATE, -1, 100.010, 100.011, -1); /* CPU not known */
	char path[] = "/tmp/sailor-timeline-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	struct sl_timeline_meta meta = {.source = "run", .plan_path = "a \"quoted\" plan.json",
					.model = "gpt2-tiny", .cat = &cat,
					.origin_s = sl_timeline_first_start_s(&tl)};
	struct sl_err err = {0};
	assert_int_equal(sl_timeline_write(&tl, &table, &meta, path, &err), 0);
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr);
	unlink(path);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "schema")), "sailor.timeline/1");
	assert_string_equal(json_string_value(json_object_get(doc, "plan")),
			    "a \"quoted\" plan.json");
	assert_int_equal(json_integer_value(json_object_get(doc, "world_size")), 2);
	json_t *ev = json_object_get(doc, "traceEvents");
	assert_int_equal(json_array_size(ev), 5); /* two process names, three spans */
	json_t *name1 = json_object_get(json_array_get(ev, 1), "args");
	assert_string_equal(json_string_value(json_object_get(name1, "name")),
			    "rank 1: stage 1 pipeline 0 tp 0/1, cpu-fast, us-central1-a");
	/* the forward: from the origin (the earliest start), 2 ms, 1.5 ms of CPU */
	json_t *fwd = json_array_get(ev, 3);
	assert_string_equal(json_string_value(json_object_get(fwd, "name")), "forward");
	assert_string_equal(json_string_value(json_object_get(fwd, "ph")), "X");
	assert_true(fabs(json_number_value(json_object_get(fwd, "ts"))) < 1e-3);
	assert_true(fabs(json_number_value(json_object_get(fwd, "dur")) - 2000) < 1e-2);
	json_t *args = json_object_get(fwd, "args");
	assert_int_equal(json_integer_value(json_object_get(args, "step")), 3);
	assert_true(fabs(json_number_value(json_object_get(args, "cpu_us")) - 1500) < 1e-2);
	json_t *recv = json_array_get(ev, 2);
	assert_true(fabs(json_number_value(json_object_get(recv, "ts")) - 1000) < 1e-2);
	/* a span whose CPU is not known has none */
	json_t *update = json_object_get(json_array_get(ev, 4), "args");
	assert_null(json_object_get(update, "cpu_us"));
	assert_int_equal(json_integer_value(json_object_get(update, "microbatch")), -1);
	json_decref(doc);
	sl_timeline_free(&tl);
}

static void a_folder_that_does_not_exist_is_named(void **state)
{
	(void)state;
	struct sl_catalogue cat;
	memset(&cat, 0, sizeof(cat));
	struct sl_role_table table = {0};
	struct sl_timeline tl = {0};
	struct sl_timeline_meta meta = {.source = "simulate", .plan_path = "p", .model = "m",
					.cat = &cat};
	struct sl_err err = {0};
	assert_int_not_equal(sl_timeline_write(&tl, &table, &meta, "/nonexistent-dir/t.json", &err),
			     0);
	assert_non_null(strstr(err.msg, "timeline '/nonexistent-dir/t.json'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spans_past_the_cap_are_counted_not_kept),
		cmocka_unit_test(kinds_have_names),
		cmocka_unit_test(the_file_is_chrome_trace_events_with_sailors_fields),
		cmocka_unit_test(a_folder_that_does_not_exist_is_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
