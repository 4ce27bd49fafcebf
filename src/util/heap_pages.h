/* The heap of a short process in transparent huge pages: fewer, cheaper page faults.
 *
 * Why: a planner process touches 8-10 MB of fresh heap (the parsed profiles, network and
 * catalogue, the search's tables), and each first touch of a 4 KiB page is a page fault. On a
 * virtual machine a fault can cost far more than on bare metal: 14-19 us on the build machines
 * (Firecracker guests), against 0.3 us per 4 KiB for a 2 MiB huge page, so ~2,000 faults were
 * 25-35 ms of a 110 ms `sailor plan`. docs/design/planner.md ("Start-up") has the measurements. */
#ifndef SL_UTIL_HEAP_PAGES_H
#define SL_UTIL_HEAP_PAGES_H

#include <stddef.h>

/* Makes malloc serve this process from one heap (one arena for every thread, no separate
 * mappings for large blocks, nothing given back before exit) grown now by reserve_bytes, and
 * asks the kernel for huge pages on that growth (madvise MADV_HUGEPAGE; with THP "never", or
 * under a sanitizer's or valgrind's malloc, nothing changes). For commands that run briefly and
 * exit: memory freed is kept for reuse, not returned. Call before any thread starts. Returns the
 * bytes advised, 0 when none were (a hint only: the command works the same either way). */
size_t sl_heap_prefer_huge_pages(size_t reserve_bytes);

/* The reserve plan and simulate ask for: more than any planner process's heap so far. */
#define SL_HEAP_PLANNER_RESERVE_BYTES ((size_t)64 << 20)

#endif
