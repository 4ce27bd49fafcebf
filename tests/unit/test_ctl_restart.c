/* Unit tests of a controller's restart on a used run directory (ctl/restart.h): steps.jsonl ends
 * up holding each step up to the checkpoint once, the missing ones taken from the newest
 * generation's own file that has them and marked recovered; steps after the checkpoint leave;
 * lines cut short are skipped; an empty run directory is left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "ctl/restart.h"

static char dir[] = "/tmp/sailor-test-restart-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void write_at(const char *rel, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void steps(char *buf, size_t size, int from, int to, double loss)
{
	size_t used = 0;
	for (int s = from; s <= to; s++)
		used += (size_t)snprintf(buf + used, size - used,
					 "{\"event\":\"step\",\"step\":%d,\"loss\":%g}\n", s, loss);
}

static void test_reconcile(void **state)
{
	(void)state;
	char path[256], buf[4096];
	snprintf(path, sizeof(path), "%s/gen-1", dir);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/gen-2", dir);
	mkdir(path, 0777);
	/* the controller's record: 1, 2, step 4 twice (a failed generation's, then again), 12, and
	 * a line cut short by the kill */
	write_at("steps.jsonl", "{\"event\":\"step\",\"step\":1,\"loss\":1,\"generation\":1}\n"
				"{\"event\":\"step\",\"step\":2,\"loss\":1,\"generation\":1}\n"
				"{\"event\":\"step\",\"step\":4,\"loss\":7,\"generation\":1}\n"
				"{\"event\":\"step\",\"step\":4,\"loss\":4,\"generation\":2}\n"
				"{\"event\":\"step\",\"step\":12,\"loss\":4,\"generation\":2}\n"
				"{\"event\":\"step\",\"st");
	steps(buf, sizeof(buf), 1, 6, 1.0);
	write_at("gen-1/steps.jsonl", buf);
	steps(buf, sizeof(buf), 3, 12, 2.0);
	write_at("gen-2/steps.jsonl", buf);
	struct sl_ctl_restart_info info;
	struct sl_err err = {0};
	assert_int_equal(sl_ctl_restart_reconcile(dir, 10, &info, &err), 0);
	assert_int_equal(info.generations, 2);
	assert_int_equal(info.newest_step, 12);
	assert_int_equal(info.steps_on_record, 10);
	assert_int_equal(info.steps_recovered, 7); /* 3, 5..10 */
	assert_int_equal(info.steps_to_rerun, 2);  /* 11, 12 */
	snprintf(path, sizeof(path), "%s/steps.jsonl", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[512];
	int expect = 1;
	while (fgets(line, sizeof(line), f)) {
		json_t *e = json_loads(line, 0, NULL);
		assert_non_null(e);
		assert_int_equal(json_integer_value(json_object_get(e, "step")), expect);
		double loss = json_number_value(json_object_get(e, "loss"));
		int recovered = json_is_true(json_object_get(e, "recovered"));
		if (expect <= 2 || expect == 4) {
			/* the controller's own line (of step 4: the last) */
			assert_false(recovered);
			assert_true(expect == 4 ? loss == 4.0 : loss == 1.0);
		} else {
			/* from the newest generation that ran it */
			assert_true(recovered);
			assert_true(loss == 2.0);
			assert_int_equal(json_integer_value(json_object_get(e, "generation")), 2);
		}
		json_decref(e);
		expect++;
	}
	fclose(f);
	assert_int_equal(expect, 11);
	/* again: nothing more to recover, nothing changes */
	assert_int_equal(sl_ctl_restart_reconcile(dir, 10, &info, &err), 0);
	assert_int_equal(info.steps_on_record, 10);
	assert_int_equal(info.steps_recovered, 0);
	assert_int_equal(info.steps_to_rerun, 2);
}

static void test_no_checkpoint_and_empty_dir(void **state)
{
	(void)state;
	char sub[256], path[300];
	snprintf(sub, sizeof(sub), "%s/empty", dir);
	mkdir(sub, 0777);
	struct sl_ctl_restart_info info;
	struct sl_err err = {0};
	assert_int_equal(sl_ctl_restart_reconcile(sub, 5, &info, &err), 0);
	assert_int_equal(info.generations, 0);
	assert_int_equal(info.steps_on_record, 0);
	snprintf(path, sizeof(path), "%s/steps.jsonl", sub);
	assert_int_equal(access(path, F_OK), -1); /* nothing written */
	/* no checkpoint: every step runs again, the record empties */
	write_at("empty/steps.jsonl", "{\"event\":\"step\",\"step\":1,\"loss\":1}\n");
	assert_int_equal(sl_ctl_restart_reconcile(sub, -1, &info, &err), 0);
	assert_int_equal(info.steps_to_rerun, 1);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reconcile),
		cmocka_unit_test(test_no_checkpoint_and_empty_dir),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
