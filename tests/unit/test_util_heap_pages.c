/* Unit tests for the heap in huge pages (util/heap_pages.h): a reserve out of range changes
 * nothing; otherwise the heap grows by the reserve now, the growth is advised for huge pages
 * (VmFlags "hg" in /proc/self/smaps) and the blocks malloc hands out afterwards lie in it, large
 * ones too. Under a sanitizer's malloc, or with THP off in this kernel, nothing is advised, and
 * the test says so and skips that part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* in this order: the second changes malloc for the rest of the process */
		cmocka_unit_test(reserve_out_of_range_changes_nothing),
		cmocka_unit_test(heap_growth_is_advised_and_used),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
