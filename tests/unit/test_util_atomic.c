/* Unit tests for atomic file output (util/atomic_file.h): a reader sees the old file or the whole
 * new one, and a failed or abandoned write leaves no temporary file behind. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/atomic_file.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sailor-atomic-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Entries of the folder, hidden ones included. */
static int entries(void)
{
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static void slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	size_t n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void writes_and_replaces(void **state)
{
	(void)state;
	char path[128], buf[64];
	struct sl_err err = {0};
	snprintf(path, sizeof(path), "%s/out.json", dir);
	assert_int_equal(sl_atomic_write(path, "plan", "old\n", 4, &err), 0);
	slurp(path, buf, sizeof(buf));
	assert_string_equal(buf, "old\n");
	struct sl_atomic_file af;
	assert_int_equal(sl_atomic_open(&af, path, "plan", &err), 0);
	fputs("new\n", af.f);
	/* until the commit, readers still see the old file */
	slurp(path, buf, sizeof(buf));
	assert_string_equal(buf, "old\n");
	assert_int_equal(entries(), 2);
	assert_int_equal(sl_atomic_commit(&af, &err), 0);
	slurp(path, buf, sizeof(buf));
	assert_string_equal(buf, "new\n");
	assert_int_equal(entries(), 1);
}

static void abort_keeps_the_old_file(void **state)
{
	(void)state;
	char path[128], buf[64];
	struct sl_err err = {0};
	snprintf(path, sizeof(path), "%s/keep.json", dir);
	assert_int_equal(sl_atomic_write(path, "plan", "kept\n", 5, &err), 0);
	struct sl_atomic_file af;
	assert_int_equal(sl_atomic_open(&af, path, "plan", &err), 0);
	fputs("half", af.f);
	sl_atomic_abort(&af);
	slurp(path, buf, sizeof(buf));
	assert_string_equal(buf, "kept\n");
	unlink(path);
	assert_int_equal(entries(), 1);
}

static void missing_folder_fails_cleanly(void **state)
{
	(void)state;
	char path[128];
	struct sl_err err = {0};
	snprintf(path, sizeof(path), "%s/none/x.json", dir);
	assert_int_equal(sl_atomic_write(path, "plan", "x", 1, &err), SL_ENOTFOUND);
	assert_non_null(strstr(err.msg, "cannot write plan '"));
	assert_int_equal(sl_atomic_check(path, "plan", &err), SL_ENOTFOUND);
	snprintf(path, sizeof(path), "%s/", dir);
	assert_int_equal(sl_atomic_check(path, "plan", &err), SL_EINPUT);
	assert_int_equal(sl_atomic_write("/dev/full/x", "plan", "x", 1, &err) < 0, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(writes_and_replaces),
		cmocka_unit_test(abort_keeps_the_old_file),
		cmocka_unit_test(missing_folder_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
