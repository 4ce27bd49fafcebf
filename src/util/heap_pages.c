/* How malloc's heap is laid out: see heap_pages.h. */
#include "util/heap_pages.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE_BYTES ((uintptr_t)2 << 20)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1: <asm-generic/mman-common.h>; glibc 2.36 lacks it */
#endif

size_t sl_heap_prefer_huge_pages(size_t reserve_bytes)
{
	if (reserve_bytes < HUGE_PAGE_BYTES || reserve_bytes > ((size_t)1 << 29))
		return 0;
	/* Large blocks from the heap, not each its own mapping faulted 4 KiB at a time; freed
	 * memory kept; the search's threads on the main arena, which the advice covers. A malloc
	 * that is not glibc's (a sanitizer's, valgrind's) refuses or ignores these. */
	mallopt(M_MMAP_THRESHOLD, (int)reserve_bytes);
	mallopt(M_TRIM_THRESHOLD, (int)(2 * reserve_bytes));
	mallopt(M_TOP_PAD, (int)reserve_bytes);
	mallopt(M_ARENA_MAX, 1);
	/* The growth starts on a huge page boundary, so that all of it can be huge pages: the
	 * break is moved there first. glibc's malloc takes a break moved by someone else in its
	 * stride (it frees what was left of its old top and starts a new one there). */
	uintptr_t brk_before = (uintptr_t)sbrk(0);
	if (brk_before == (uintptr_t)-1)
		return 0;
	uintptr_t start = (brk_before + HUGE_PAGE_BYTES - 1) & ~(HUGE_PAGE_BYTES - 1);
	if (start > brk_before && sbrk((intptr_t)(start - brk_before)) == (void *)-1)
		return 0;
	/* a block larger than the top of the heap makes malloc grow it, by the pad, now */
	void *grow = malloc(mallinfo2().keepcost + (64u << 10));
	free(grow);
	uintptr_t brk_after = (uintptr_t)sbrk(0);
	if (!grow || brk_after == (uintptr_t)-1 || brk_after < start + reserve_bytes)
		return 0; /* the heap did not grow by the pad: not glibc's brk heap */
	uintptr_t end = brk_after & ~(HUGE_PAGE_BYTES - 1);
	if (madvise((void *)start, end - start, MADV_HUGEPAGE))
		return 0; /* no THP in this kernel, or "never" */
	/* malloc wrote its headers into the first 2 MiB while growing, before the advice, so
	 * that one is mapped in 4 KiB pages, and it is what malloc serves first: made one huge
	 * page now (an older kernel refuses; then only it stays in small pages) */
	madvise((void *)start, HUGE_PAGE_BYTES, MADV_COLLAPSE);
	return end - start;
}

int sl_heap_give_back_free_pages(void)
{
	return malloc_trim(0);
}
