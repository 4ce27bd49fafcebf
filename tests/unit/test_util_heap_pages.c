/* Unit tests for the heap in huge pages (util/heap_pages.h): a reserve out of range changes
 * nothing; otherwise the heap grows by the reserve now, the growth is advised for huge pages
 * (VmFlags "hg" in /proc/self/smaps) and the blocks malloc hands out afterwards lie in it, large
 * ones too. Under a sanitizer's malloc, or with THP off in this kernel, nothing is advised, and
 * the test says so and skips that part. Freed heap pages given back: after a transient of the
 * heap is freed, resident memory falls by its size when they are given back (glibc without it:
 * not at all), each case in a child process of its own. */
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

/* Resident memory of this process, in KiB (VmRSS of /proc/self/status). */
static long resident_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kib = atol(line + 6);
	if (f)
		fclose(f);
	return kib;
}

/* Writes a byte of every page of block: resident. Through a volatile pointer: a memset of a
 * block that is only freed afterwards is a store the compiler may leave out. */
static void touch_pages(char *block, size_t bytes)
{
	for (size_t at = 0; at < bytes; at += 4096)
		((volatile char *)block)[at] = 1;
}

/* In a child: the pattern of an island rank's gradient sync (a mapped transient freed, which
 * raises glibc's threshold; then one of about that size from the heap, written and freed),
 * then optionally gives the free pages back; exits 0 when resident memory fell by at least
 * 2 MiB from before the give-back, 1 if not (2: the child could not run the case). */
static int freed_heap_pages_given_back(int give_back)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const size_t mapped = (size_t)4 << 20, heap = (size_t)3 << 20;
		char *first = malloc(mapped);
		if (!first)
			_exit(2);
		touch_pages(first, mapped);
		free(first);
		char *next = malloc(heap);
		if (!next)
			_exit(2);
		touch_pages(next, heap);
		free(next);
		if (mallinfo2().fordblks < heap)
			_exit(2); /* not served from the heap: not the case this tests */
		long before = resident_kib();
		if (give_back)
			sl_heap_give_back_free_pages();
		long after = resident_kib();
		_exit(before > 0 && after > 0 && before - after >= 2048 ? 0 : 1);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 2);
	return WEXITSTATUS(status) == 0;
}

static void free_heap_pages_are_given_back(void **state)
{
	(void)state;
#if defined(__SANITIZE_ADDRESS__)
	skip(); /* the sanitizer's malloc keeps freed blocks in quarantine */
#endif
	assert_false(freed_heap_pages_given_back(0)); /* glibc keeps them resident */
	assert_true(freed_heap_pages_given_back(1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* in this order: the second changes malloc for the rest of the process */
		cmocka_unit_test(reserve_out_of_range_changes_nothing),
		cmocka_unit_test(free_heap_pages_are_given_back), /* in children */
		cmocka_unit_test(heap_growth_is_advised_and_used),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
