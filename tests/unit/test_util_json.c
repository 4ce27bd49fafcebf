/* Unit tests for loading JSON files (util/json.h): the loader parses a copy without the whitespace
 * between tokens, which must read every file as jansson reads the file itself: the same value
 * where it is valid, and where it is not, the same error at the file's own line and column. */
#include <ftw.h>
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

#include "util/json.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sailor-json-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	fclose(f);
}

/* jansson's own reading of path, as the loader's oracle. */
static json_t *reference(const char *path, json_error_t *jerr)
{
	return json_load_file(path, JSON_REJECT_DUPLICATES, jerr);
}

/* The loader and jansson agree on text: the same value, or the same located error. */
static void agrees(const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/doc.json", dir);
	write_file(path, text);
	json_error_t jerr;
	json_t *want = reference(path, &jerr);
	struct sl_err err = {0};
	json_t *got = sl_json_load_file(path, "doc", &err);
	if (want) {
		if (!got)
			fail_msg("'%s': rejected (%s), jansson reads it", text, err.msg);
		assert_true(json_equal(got, want));
	} else {
		if (got)
			fail_msg("'%s': accepted, jansson rejects it (%s)", text, jerr.text);
		char expected[512];
		snprintf(expected, sizeof(expected), "doc '%s': line %d column %d: %s", path, jerr.line,
			 jerr.column, jerr.text);
		assert_string_equal(err.msg, expected);
		assert_int_equal(err.code, SL_EINPUT);
	}
	json_decref(want);
	json_decref(got);
}

static void valid_documents_read_the_same(void **state)
{
	(void)state;
	agrees("{\n  \"a b\" : [ 1 , -2.5e3 ,\ttrue, null ],\r\n  \"c\": \"  x\\ty \\\" }  \"\n}\n");
	agrees("  [ ]  ");
	agrees("\"only a string\"");
	agrees("[\"\\\\\", \"\\\\\\\"\", \" \"]"); /* escaped backslashes before a quote */
	agrees("{\"nested\": {\"deep\": [[ 1 ], [ 2, [ 3 ] ] ]}}");
}

/* Whitespace that separates two tokens must keep them apart: removed, "1 2" would read 12. */
static void malformed_documents_fail_where_jansson_says(void **state)
{
	(void)state;
	agrees("[1 2]");
	agrees("[tr ue]");
	agrees("{\"a\": 1\n\n   2}");
	agrees("[\"a\"  \"b\"]");
	agrees("[1,\n  2,\n]");
	agrees("{\"a\": 1,\n \"a\": 2}"); /* a duplicate key */
	agrees("[\"unterminated  \n");
	agrees("\n\n   ");
	agrees("{\"a\": - 1}");
	agrees("[1.\n5]");
}

static int shipped_files;

static int compare_shipped(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	size_t n = strlen(path);
	if (type != FTW_F || n < 6 || strcmp(path + n - 5, ".json"))
		return 0;
	json_error_t jerr;
	json_t *want = reference(path, &jerr);
	struct sl_err err = {0};
	json_t *got = sl_json_load_file(path, "shipped", &err);
	int same = want ? got && json_equal(got, want) : !got;
	json_decref(want);
	json_decref(got);
	if (!same)
		fail_msg("%s: the loader and jansson differ", path);
	shipped_files++;
	return 0;
}

/* Every JSON file the repository ships (5 MB in some 550 files) reads as jansson reads it. */
static void shipped_files_read_the_same(void **state)
{
	(void)state;
	shipped_files = 0;
	assert_int_equal(nftw("data", compare_shipped, 16, FTW_PHYS), 0);
	assert_true(shipped_files >= 500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valid_documents_read_the_same),
		cmocka_unit_test(malformed_documents_fail_where_jansson_says),
		cmocka_unit_test(shipped_files_read_the_same),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
