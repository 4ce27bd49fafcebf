/* Unit tests for the heap in huge pages (util/heap_pages.h): a reserve out of range changes
 * nothing; otherwise the heap grows by the reserve now, the growth is advised for huge pages
 * (VmFlags "hg" in /proc/self/smaps) and the blocks malloc hands out afterwards lie in it, large
 * ones too. Under a sanitizer's malloc, or with THP off in this kernel, nothing is advised, and
 * the test says so and skips that part. A held mapping threshold: after a large mapped block is
 * freed, a smaller one above the default threshold is still mapped on its own (glibc without it:
 * from the heap), each case in a child process of its own. */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/heap_pages.h"

/* whether the kernel offers transparent huge pages on request */
static int thp_on_request(void)
{
	char line[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return 0;
	int ok = fgets(line, sizeof(line), f) && !strstr(line, "[never]");
	fclose(f);
	return ok;
}

/* The VmFlags line of the mapping of /proc/self/smaps that holds address; "" if none. */
static void vm_flags_of(uintptr_t address, char *flags, size_t size)
{
	char line[512];
	int inside = 0;
	flags[0] = 0;
	FILE *f = fopen("/proc/self/smaps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			inside = address >= lo && address < hi;
		else if (inside && !strncmp(line, "VmFlags:", 8)) {
			snprintf(flags, size, "%s", line + 8);
			break;
		}
	}
	fclose(f);
}

static void reserve_out_of_range_changes_nothing(void **state)
{
	(void)state;
	assert_int_equal(sl_heap_prefer_huge_pages(0), 0);
	assert_int_equal(sl_heap_prefer_huge_pages(1 << 20), 0);
	assert_int_equal(sl_heap_prefer_huge_pages((size_t)4 << 30), 0);
}

static void heap_growth_is_advised_and_used(void **state)
{
	(void)state;
	size_t advised = sl_heap_prefer_huge_pages(SL_HEAP_PLANNER_RESERVE_BYTES);
#if defined(__SANITIZE_ADDRESS__)
	assert_int_equal(advised, 0); /* the sanitizer's malloc has no brk heap to advise */
	skip();
#endif
	if (!thp_on_request()) {
		assert_int_equal(advised, 0);
		skip();
	}
	/* all of the reserve but what lies past the last 2 MiB boundary */
	assert_true(advised >= SL_HEAP_PLANNER_RESERVE_BYTES - ((size_t)2 << 20));
	assert_true(advised <= SL_HEAP_PLANNER_RESERVE_BYTES + ((size_t)2 << 20));
	/* a large block, which malloc would otherwise map on its own, then small ones past what
	 * was left of the old heap: all in the advised heap, not in mappings of their own */
	enum { SMALL_BLOCKS = 256 }; /* 1 MiB of 4 KiB blocks */
	char *large = malloc((size_t)8 << 20), *small[SMALL_BLOCKS];
	for (int i = 0; i < SMALL_BLOCKS; i++)
		small[i] = malloc(4096);
	char *blocks[] = {large, small[SMALL_BLOCKS - 1]};
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		assert_non_null(blocks[i]);
		blocks[i][0] = 1;
		char flags[512];
		vm_flags_of((uintptr_t)blocks[i], flags, sizeof(flags));
		assert_non_null(strstr(flags, " hg"));
	}
	free(large);
	for (int i = 0; i < SMALL_BLOCKS; i++)
		free(small[i]);
}

/* In a child: optionally holds the threshold, frees an 8 MiB mapped block, then allocates 1 MiB;
 * exits 0 when that 1 MiB block is a mapping of its own (glibc counts it in hblkhd), 1 if not. */
static int second_block_mapped(int hold)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (hold && sl_heap_fix_mmap_threshold() != 0)
			_exit(2);
		char *large = malloc((size_t)8 << 20);
		if (!large)
			_exit(2);
		memset(large, 1, (size_t)8 << 20);
		free(large);
		char *next = malloc((size_t)1 << 20);
		if (!next)
			_exit(2);
		next[0] = 1;
		_exit(mallinfo2().hblkhd >= ((size_t)1 << 20) ? 0 : 1);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 2);
	return WEXITSTATUS(status) == 0;
}

static void held_threshold_keeps_transients_mapped(void **state)
{
	(void)state;
#if defined(__SANITIZE_ADDRESS__)
	skip(); /* the sanitizer's malloc has no such threshold */
#endif
	assert_false(second_block_mapped(0)); /* glibc raised its threshold to 8 MiB */
	assert_true(second_block_mapped(1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* in this order: the second changes malloc for the rest of the process */
		cmocka_unit_test(reserve_out_of_range_changes_nothing),
		cmocka_unit_test(held_threshold_keeps_transients_mapped), /* in children */
		cmocka_unit_test(heap_growth_is_advised_and_used),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
