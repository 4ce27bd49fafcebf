/* Unit tests of a generation's own step record (ctl/steps_file.h): the steps the pipe did not
 * deliver come back in step order, once each; steps seen are not repeated; a line cut short by
 * a kill, other events and blank lines are skipped; a missing file is no steps, not an error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctl/steps_file.h"

static char dir[] = "/tmp/sailor-test-steps-XXXXXX";
static char path[128];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/steps.jsonl", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return rmdir(dir);
}

static void write_file(const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The line rank 0 writes (train/progress.c) for step s. */
static void step_line(char *buf, size_t size, long long s, double loss)
{
	snprintf(buf, size, "{\"event\":\"step\",\"step\":%lld,\"loss\":%.17g,\"lr\":0.0006,"
		 "\"grad_norm\":1.5,\"step_time_s\":0.031000,\"tokens_per_s\":8258.1}\n", s, loss);
}

static void test_missing_steps_in_order(void **state)
{
	(void)state;
	char text[4096] = "", line[256];
	for (long long s = 11; s <= 16; s++) {
		step_line(line, sizeof(line), s, 5.0 - 0.1 * (double)s);
		strcat(text, line);
	}
	write_file(text);
	struct sl_ctl_seen_steps seen = {0};
	/* the pipe delivered 11, 12, 14 and 16 (not in order: the set must not care) */
	long long got[] = {16, 11, 14, 12};
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(sl_ctl_seen_steps_add(&seen, got[i]), 0);
	assert_int_equal(sl_ctl_seen_steps_newest(&seen), 16);
	json_t *missing = NULL;
	int skipped = -1;
	struct sl_err err = {0};
	assert_int_equal(sl_ctl_steps_file_missing(path, &seen, &missing, &skipped, &err), 0);
	assert_int_equal(skipped, 0);
	assert_int_equal(json_array_size(missing), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(missing, 0), "step")), 13);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(missing, 1), "step")), 15);
	/* the event is the line as written: its loss to the last bit */
	assert_true(json_real_value(json_object_get(json_array_get(missing, 1), "loss")) ==
		    5.0 - 0.1 * 15.0);
	json_decref(missing);
	/* everything seen: nothing missing */
	sl_ctl_seen_steps_add(&seen, 13);
	sl_ctl_seen_steps_add(&seen, 15);
	assert_int_equal(sl_ctl_steps_file_missing(path, &seen, &missing, NULL, &err), 0);
	assert_int_equal(json_array_size(missing), 0);
	json_decref(missing);
	/* a new generation forgets what the last one saw */
	sl_ctl_seen_steps_clear(&seen);
	assert_int_equal(sl_ctl_seen_steps_newest(&seen), -1);
	assert_int_equal(sl_ctl_steps_file_missing(path, &seen, &missing, NULL, &err), 0);
	assert_int_equal(json_array_size(missing), 6);
	json_decref(missing);
	sl_ctl_seen_steps_free(&seen);
}

static void test_bad_lines_skipped(void **state)
{
	(void)state;
	char text[4096] = "", line[256];
	step_line(line, sizeof(line), 1, 4.0);
	strcat(text, line);
	strcat(text, "\n");                                       /* blank: not counted */
	strcat(text, "{\"event\":\"checkpoint\",\"step\":1}\n");  /* another event */
	strcat(text, "{\"event\":\"step\",\"step\":\"2\",\"loss\":3.9}\n"); /* step not a number */
	step_line(line, sizeof(line), 2, 3.9);
	strcat(text, line);
	/* a step written twice (not by sailor run, but the later line wins) */
	step_line(line, sizeof(line), 2, 3.8);
	strcat(text, line);
	/* the last line cut short: rank 0 killed in the middle of its write */
	step_line(line, sizeof(line), 3, 3.7);
	line[strlen(line) / 2] = 0;
	strcat(text, line);
	write_file(text);
	struct sl_ctl_seen_steps seen = {0};
	json_t *missing = NULL;
	int skipped = 0;
	struct sl_err err = {0};
	assert_int_equal(sl_ctl_steps_file_missing(path, &seen, &missing, &skipped, &err), 0);
	assert_int_equal(skipped, 3);
	assert_int_equal(json_array_size(missing), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(missing, 0), "step")), 1);
	json_t *two = json_array_get(missing, 1);
	assert_int_equal(json_integer_value(json_object_get(two, "step")), 2);
	assert_true(json_real_value(json_object_get(two, "loss")) == 3.8);
	json_decref(missing);
	sl_ctl_seen_steps_free(&seen);
}

static void test_no_file(void **state)
{
	(void)state;
	unlink(path);
	struct sl_ctl_seen_steps seen = {0};
	json_t *missing = NULL;
	struct sl_err err = {0};
	/* a generation that ended before its first step wrote nothing */
	assert_int_equal(sl_ctl_steps_file_missing(path, &seen, &missing, NULL, &err), 0);
	assert_non_null(missing);
	assert_int_equal(json_array_size(missing), 0);
	json_decref(missing);
	/* a path that cannot be read is an error that names it */
	assert_int_equal(sl_ctl_steps_file_missing(dir, &seen, &missing, NULL, &err), SL_EIO);
	assert_null(missing);
	assert_non_null(strstr(err.msg, dir));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_steps_in_order),
		cmocka_unit_test(test_bad_lines_skipped),
		cmocka_unit_test(test_no_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
